/* The hard-link index: a lower non-directory with several names (a
 * regular file, symlink, device, fifo or socket) is copied up once, into
 * the highest rw branch's .stackfs/index/ (named by its filesystem id and
 * lower inode number), and every name of it then shows that copy:
 * one copied up by name is a hard link of the index entry; one not yet
 * copied shows the index entry through its lower layer. So a write
 * through one name is seen through all, with one st_ino, also after a
 * remount. Here: the index read (lookups, the link count); an entry made
 * at copy-up is copyup/index_link.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
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

static uint32_t fs_id_of_dev(const struct sfs_snap *s, uint64_t dev)
{
	for (unsigned i = 0; i < s->n; i++)
		if ((uint64_t)s->b[i]->dev == dev)
			return s->b[i]->fs_id;
	return 0;
}

int sfs_index_at(const struct sfs_snap *s, uint64_t dev, uint64_t ino,
		 char name[SFS_INDEX_NAME_MAX])
{
	int dfd = index_dir(s);

	if (dfd < 0)
		return -ENOENT;
	sfs_index_name(name, fs_id_of_dev(s, dev), ino);
	return dfd;
}

int sfs_index_open(const struct sfs_snap *s, uint64_t dev, uint64_t ino)
{
	char name[SFS_INDEX_NAME_MAX];
	int dfd = sfs_index_at(s, dev, ino, name);

	return dfd < 0 ? dfd : sfs_do_open(dfd, name, O_PATH, 0);
}

/* The origin record of index entry dfd/name, open as fd (stat st): 1,
 * 0 when it has none. Read on fd; a symlink's by its name, which alone
 * reaches its xattrs, and then -ESTALE if the name is no longer fd's
 * inode (a stale entry replaced meanwhile). */
static int index_origin(int dfd, const char *name, int fd, const struct stat *st,
			struct sfs_origin *o)
{
	struct stat now;
	int ret;

	if (!S_ISLNK(st->st_mode))
		return sfs_origin_get(fd, "", o);
	ret = sfs_origin_get(dfd, name, o);
	if (ret >= 0 && (sfs_do_stat(dfd, name, &now) < 0 || now.st_ino != st->st_ino ||
			 now.st_dev != st->st_dev))
		return -ESTALE;
	return ret;
}

/* 1 when the index entry dfd/name, open as fd, is the copy of the lower
 * entry lower_fd: of its type, and its origin record names it (or it has
 * none to say otherwise); 0 stale. */
int sfs_index_is_copy_of(int dfd, const char *name, int fd, int lower_fd)
{
	struct stat st, lst;
	struct sfs_origin o;
	int ret = sfs_do_fstat(fd, &st);

	if (ret == 0)
		ret = sfs_do_fstat(lower_fd, &lst);
	if (ret < 0)
		return ret;
	if ((st.st_mode ^ lst.st_mode) & S_IFMT)
		return 0; /* the number reused by an entry of another type */
	ret = index_origin(dfd, name, fd, &st, &o);
	if (ret == -ESTALE)
		return 0;
	if (ret != 1) /* a damaged record names nothing: damage (-EUCLEAN) */
		return ret < 0 ? ret : 1;
	return sfs_origin_names(&o, lower_fd, "");
}

int sfs_index_open_of(const struct sfs_snap *s, int lower_fd, const struct stat *lst)
{
	char name[SFS_INDEX_NAME_MAX];
	int dfd = sfs_index_at(s, lst->st_dev, lst->st_ino, name), fd, ret;

	if (dfd < 0)
		return dfd;
	fd = sfs_do_open(dfd, name, O_PATH, 0);
	if (fd < 0)
		return fd;
	ret = sfs_index_is_copy_of(dfd, name, fd, lower_fd);
	if (ret == 1)
		return fd;
	close(fd);
	return ret < 0 ? ret : -ENOENT;
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
