/* The hard-link index at copy-up (nodes/index.c has the index and how
 * it is read): a lower entry with several names linked into it once
 * copied, a stale entry of its name replaced; and the copy an entry's
 * other names made already, which its copy-up links instead. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stackfs/stackfs.h"
#include "whiteout/metadir.h"

/* Puts the copy fd at the index name in place of a stale entry: linked
 * to a staging name in work/, renamed over it in one step. The stale
 * entry's data stays with the names the old copy was placed under; no
 * lower name shows it any more. */
static int index_replace(int dfd, const char *name, int workfd, int fd)
{
	char tmp[64];
	int ret;

	sfs_temp_name(tmp, "idx");
	ret = sfs_do_link_fd(fd, workfd, tmp);
	if (ret == 0 && sfs_do_renameat2(workfd, tmp, dfd, name, 0) < 0) {
		ret = -errno;
		sfs_do_unlinkat(workfd, tmp, 0);
	}
	return ret;
}

static int index_link(const struct sfs_snap *s, int dfd, const char *name, int lower_fd,
		      int copy_fd)
{
	int fd, ret = sfs_do_link_fd(copy_fd, dfd, name);

	if (ret != -EEXIST)
		return ret;
	/* an entry the copy-up did not use: stale, or not ours to replace */
	fd = sfs_do_open(dfd, name, O_PATH, 0);
	if (fd < 0)
		return fd == -ENOENT ? -EEXIST : fd;
	ret = sfs_index_is_copy_of(dfd, name, fd, lower_fd);
	close(fd);
	if (ret != 0)
		return ret < 0 ? ret : -EEXIST;
	sfs_log(SFS_LOG_INFO, "index entry %s was the copy of a lower file that no longer "
		"exists: replaced", name);
	return index_replace(dfd, name, s->b[s->top_rw]->work_fd, copy_fd);
}

int sfs_index_link(const struct sfs_snap *s, int lower_fd, const struct stat *lst,
		   int copy_fd)
{
	char name[SFS_INDEX_NAME_MAX];
	int dfd = sfs_index_at(s, lst->st_dev, lst->st_ino, name), ret;

	if (dfd < 0)
		return 0; /* no index: the link breaks at copy-up */
	ret = index_link(s, dfd, name, lower_fd, copy_fd);
	return ret < 0 ? ret : sfs_sync_changed(dfd);
}

/* Whether a lower entry goes into the hard-link index at copy-up: every
 * non-directory with several names (a symlink, device, fifo or socket
 * can be hard-linked too, and the node of its names is one), so that
 * all its names show the one copy. */
bool sfs_index_worthy(const struct stat *src)
{
	return !S_ISDIR(src->st_mode) && src->st_nlink > 1;
}

/* The copy a lower entry with several names already has in the index
 * (copied up through another name), as an fd to link: its own fd when
 * the name shows it already, else the index entry, else -1. */
int sfs_index_copy_of(const struct sfs_stack *st, const struct stat *src)
{
	if (st->indexed)
		return fcntl(st->l[0].fd, F_DUPFD_CLOEXEC, 0);
	if (!sfs_index_worthy(src))
		return -1;
	return sfs_index_open_of(st->snap, st->l[0].fd, src);
}
