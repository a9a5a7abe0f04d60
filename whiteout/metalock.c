/* `lock` (docs/format.md "lock"): an empty file a mount holds flock(LOCK_EX) on for
 * its whole life, so that a second mount of the branch, fsck --repair or
 * a commit refuses while it runs. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "whiteout/ondisk.h"

int sfs_meta_lock(int at_fd, bool excl)
{
	char err[512];
	int dir_fd = sfs_meta_dir_open(at_fd, err, sizeof(err));
	int fd;

	if (dir_fd < 0)
		return dir_fd;
	fd = sfs_meta_openat(dir_fd, SFS_META_LOCK, O_RDONLY | O_NONBLOCK, 0);
	close(dir_fd);
	if (fd < 0)
		return fd;
	if (flock(fd, (excl ? LOCK_EX : LOCK_SH) | LOCK_NB) < 0) {
		int ret = errno == EWOULDBLOCK ? -EBUSY : -errno;

		close(fd);
		return ret;
	}
	return fd;
}

int sfs_meta_take_lock(struct sfs_meta *m, char *err, size_t errlen)
{
	int fd = sfs_meta_openat(m->dir_fd, SFS_META_LOCK, O_RDWR | O_CREAT, 0600);

	if (fd < 0) {
		snprintf(err, errlen, "%s/%s: %s", SFS_METADIR_NAME, SFS_META_LOCK,
			 strerror(-fd));
		return fd;
	}
	m->lock_fd = fd;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int ret = errno == EWOULDBLOCK ? -EBUSY : -errno;

		if (ret == -EBUSY)
			snprintf(err, errlen, "branch is in use by a mounted stackfs "
				 "(or by stackfs fsck --repair)");
		else
			snprintf(err, errlen, "%s/%s: flock: %s", SFS_METADIR_NAME,
				 SFS_META_LOCK, strerror(-ret));
		return ret;
	}
	return 0;
}
