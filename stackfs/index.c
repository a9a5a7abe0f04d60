/* The hard-link index: a lower file with several names is copied up once,
 * into the highest rw branch's .stackfs/index/ (named by its filesystem
 * id and lower inode number), and every name of it then shows that copy:
 * one copied up by name is a hard link of the index entry; one not yet
 * copied shows the index entry through its lower layer. So a write
 * through one name is seen through all, with one st_ino, also after a
 * remount. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "stackfs/stackfs.h"
#include "whiteout/metadir.h"

/* The index of the mount: the highest rw branch's, or -1. */
static int index_dir(const struct sfs_snap *s)
{
	if (s->top_rw < 0 || !s->b[s->top_rw]->meta)
		return -1;
	return s->b[s->top_rw]->meta->index_fd;
}

void sfs_index_name(char buf[32], uint32_t fs_id, uint64_t ino)
{
	snprintf(buf, 32, "%08x-%016llx", fs_id, (unsigned long long)ino);
}

static uint32_t fs_id_of_dev(const struct sfs_snap *s, uint64_t dev)
{
	for (unsigned i = 0; i < s->n; i++)
		if ((uint64_t)s->b[i]->dev == dev)
			return s->b[i]->fs_id;
	return 0;
}

int sfs_index_open(const struct sfs_snap *s, uint64_t dev, uint64_t ino)
{
	int dfd = index_dir(s);
	char name[32];

	if (dfd < 0)
		return -ENOENT;
	sfs_index_name(name, fs_id_of_dev(s, dev), ino);
	return sfs_path_fd(dfd, name);
}

int sfs_index_link(const struct sfs_snap *s, uint64_t dev, uint64_t ino,
		   int workfd, const char *tmp)
{
	int dfd = index_dir(s);
	char name[32];

	if (dfd < 0)
		return 0; /* no index: the link breaks at copy-up */
	sfs_index_name(name, fs_id_of_dev(s, dev), ino);
	if (linkat(workfd, tmp, dfd, name, 0) < 0)
		return -errno;
	return 0;
}

uint32_t sfs_index_nlink(uint32_t lower, uint32_t upper)
{
	/* The copy's links are the index's, the name the copy was placed
	 * under (one of the lower names) and the names made through the
	 * view; the lower file's other names show the index entry. So:
	 * every lower name, plus the copy's names beyond the index link and
	 * the first name. Which other lower names were copied up or deleted
	 * is not known: each such name may be counted twice, never missed.
	 * A copy with no name left (a crash before it was placed, or its
	 * name removed since) still has all the lower names. */
	return upper > 2 ? lower + (upper - 2) : lower;
}
