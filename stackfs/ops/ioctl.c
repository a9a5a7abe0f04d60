/* Inode flags (chattr/lsattr) and the fsxattr of XFS-style tools: the
 * kernel's FUSE layer asks for them with these four ioctls (its
 * fileattr_get/set), on files and directories alike. Any other ioctl is
 * refused with ENOTTY, as a filesystem without it would. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/bio.h"
#include "stackfs/ops/ops.h"

static bool is_set(unsigned cmd)
{
	return cmd == FS_IOC_SETFLAGS || cmd == FS_IOC_FSSETXATTR;
}

/* Whether a set makes a file append-only: a metacopy's data could not
 * be written into it afterwards, so the data comes first. */
static bool sets_append(unsigned cmd, const void *in)
{
	struct fsxattr fx;
	int fl;

	if (cmd == FS_IOC_SETFLAGS) {
		memcpy(&fl, in, sizeof(fl));
		return fl & FS_APPEND_FL;
	}
	memcpy(&fx, in, sizeof(fx));
	return fx.fsx_xflags & FS_XFLAG_APPEND;
}

/* The size of the argument the command moves. */
static size_t arg_size(unsigned cmd)
{
	if (cmd == FS_IOC_GETFLAGS || cmd == FS_IOC_SETFLAGS)
		return sizeof(int);
	if (cmd == FS_IOC_FSGETXATTR || cmd == FS_IOC_FSSETXATTR)
		return sizeof(struct fsxattr);
	return 0;
}

static int do_ioctl(struct sfs_node *n, unsigned cmd, const void *in,
		    size_t insz, void *out)
{
	struct fsxattr buf;
	struct sfs_stack *st;
	size_t sz = arg_size(cmd);
	int fd, ret = 0;

	if (!sz || (n->type != S_IFREG && n->type != S_IFDIR))
		return -ENOTTY;
	if (is_set(cmd)) {
		if (insz < sz)
			return -EINVAL;
		/* other flags change the metadata alone: a metacopy will do */
		ret = sfs_node_copy_up(n, sets_append(cmd, in) ? SFS_CU_DATA : 0, &st);
	} else {
		st = sfs_node_stack(n);
	}
	if (ret < 0)
		return ret;
	fd = sfs_do_reopen(st->l[0].fd, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	sfs_stack_put(st);
	if (fd < 0)
		return fd;
	if (is_set(cmd))
		memcpy(&buf, in, sz);
	if (ioctl(fd, cmd, &buf) < 0)
		ret = -errno;
	else if (!is_set(cmd))
		memcpy(out, &buf, sz);
	else
		ret = sfs_sync_changed(fd);
	close(fd);
	return ret;
}

void sfs_op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		  struct fuse_file_info *fi, unsigned flags, const void *in_buf,
		  size_t in_bufsz, size_t out_bufsz)
{
	struct fsxattr out;
	int ret;

	if (flags & FUSE_IOCTL_COMPAT) {
		sfs_reply_err(req, ENOSYS);
		return;
	}
	ret = do_ioctl(sfs_node_of(ino), cmd, in_buf, in_bufsz, &out);
	if (ret < 0)
		sfs_reply_err(req, -ret);
	else if (is_set(cmd))
		fuse_reply_ioctl(req, 0, NULL, 0);
	else
		fuse_reply_ioctl(req, 0, &out, arg_size(cmd) < out_bufsz ? arg_size(cmd) : out_bufsz);
}
