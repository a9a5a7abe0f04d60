/* The inode flags (chattr) a copy keeps: copy-up and commit. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/bio.h"
#include "union/copy.h"

/* The flags chattr sets that mean something for a copy. Immutable and
 * append-only are copied too: dropping them would widen access. */
#define COPIED_FLAGS (FS_SYNC_FL | FS_IMMUTABLE_FL | FS_APPEND_FL | FS_NODUMP_FL | \
		      FS_NOATIME_FL | FS_DIRSYNC_FL | FS_TOPDIR_FL | FS_PROJINHERIT_FL)

/* An fd to ask for flags: reading must not change atime, which O_NOATIME
 * gives only to the owner or a holder of CAP_FOWNER. */
static int flags_fd(int fd, bool noatime)
{
	int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY;
	int r = sfs_do_reopen(fd, flags | (noatime ? O_NOATIME : 0));

	return r == -EPERM && noatime ? sfs_do_reopen(fd, flags) : r;
}

/* Whether a failed FS_IOC_GETFLAGS of the source means "no flags here":
 * the filesystem knows no such ioctl. FUSE servers answer ioctls they do
 * not know as they please: ceph-fuse says EINVAL (as its lsattr shows),
 * and a copy-up of every file on a CephFS failed with it. */
static bool no_flags(int err)
{
	return err == ENOTTY || err == EOPNOTSUPP || err == ENOSYS || err == EINVAL;
}

int sfs_copy_flags(int src, int dst)
{
	int in = flags_fd(src, true), out = in < 0 ? -1 : flags_fd(dst, false);
	int flags = 0, own = 0, ret = in < 0 ? in : out < 0 ? out : 0;

	if (ret == 0 && ioctl(in, FS_IOC_GETFLAGS, &flags) < 0)
		ret = no_flags(errno) ? 0 : -errno;
	flags &= COPIED_FLAGS;
	/* the copy's own flags stay (ext4's extent flag: clearing it asks
	 * for a conversion to block maps) */
	if (ret == 0 && flags && ioctl(out, FS_IOC_GETFLAGS, &own) < 0)
		ret = -errno;
	flags |= own & ~COPIED_FLAGS;
	if (ret == 0 && flags != own && ioctl(out, FS_IOC_SETFLAGS, &flags) < 0)
		ret = -errno;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return ret;
}
