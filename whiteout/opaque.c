/* Opaque directories: a directory that hides everything of the same
 * directory in the branches below it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "whiteout/whiteout.h"

static int xattr_is_y(const char *path, const char *attr)
{
	char v[2];
	ssize_t n = getxattr(path, attr, v, sizeof(v));

	if (n < 0)
		return errno == ENODATA || errno == ENOTSUP || errno == ERANGE ? 0 : -errno;
	return n == 1 && v[0] == 'y';
}

int sfs_wh_is_opaque(int dirfd)
{
	char path[32];
	struct stat st;
	int ret;

	if (fstatat(dirfd, SFS_WH_OPQ, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return 1;
	if (errno != ENOENT)
		return -errno;
	/* xattr calls take no O_PATH fd: go through the magic link, which
	 * names exactly this directory. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", dirfd);
	ret = xattr_is_y(path, SFS_OVL_OPAQUE_XATTR);
	if (ret == 0)
		ret = xattr_is_y(path, SFS_OVL_USER_OPAQUE_XATTR);
	return ret;
}

int sfs_wh_set_opaque(int dirfd, enum sfs_whiteout_style style)
{
	char path[32];
	int fd;

	if (style == SFS_WH_OVERLAY) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", dirfd);
		if (setxattr(path, SFS_OVL_OPAQUE_XATTR, "y", 1, 0) < 0)
			return -errno;
		return 0;
	}
	fd = openat(dirfd, SFS_WH_OPQ, O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}
