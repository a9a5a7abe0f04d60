/* One name beneath a directory fd, never crossing a mount point: the
 * first call on a name of a branch (the daemon's, fsck's, diff's and
 * commit's) is this openat2, which answers EXDEV at a mount point without
 * entering the mounted filesystem. Any call by name (fstatat, getxattrat,
 * name_to_handle_at, a /proc/self/fd/N/name path) would enter it: a stat
 * of a mount point is a GETATTR to its server, and a FUSE server that
 * never answers would put the caller to sleep for good. Inline, so that
 * both libraries (whiteout/, xattr/) use it whatever their link order. */
#ifndef SFS_WHITEOUT_BENEATH_H
#define SFS_WHITEOUT_BENEATH_H

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* An fd of NAME beneath DIRFD (NAME not followed if a symlink, no
 * component crossing a mount or leaving DIRFD), or -errno: -EXDEV at a
 * mount point. */
static inline int sfs_nx_open(int dirfd, const char *name, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, dirfd, name, &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
}

/* fstatat(DIRFD, NAME, AT_SYMLINK_NOFOLLOW) that does not cross: 0 or
 * -errno, -EXDEV at a mount point. */
static inline int sfs_nx_stat(int dirfd, const char *name, struct stat *st)
{
	int fd = sfs_nx_open(dirfd, name, O_PATH), ret = 0;

	if (fd < 0)
		return fd;
	if (fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

#endif
