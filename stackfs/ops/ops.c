/* The one table of FUSE operations. Locks (flock, POSIX) are left to the
 * kernel, which keeps them per union inode: handing them to the daemon
 * would make every caller's POSIX lock the daemon's own. */
#include "stackfs/ops/ops.h"

const struct fuse_lowlevel_ops sfs_ops = {
	.init = sfs_op_init,
	.lookup = sfs_op_lookup,
	.forget = sfs_op_forget,
	.forget_multi = sfs_op_forget_multi,
	.getattr = sfs_op_getattr,
	.setattr = sfs_op_setattr,
	.readlink = sfs_op_readlink,
	.mknod = sfs_op_mknod,
	.mkdir = sfs_op_mkdir,
	.unlink = sfs_op_unlink,
	.rmdir = sfs_op_rmdir,
	.symlink = sfs_op_symlink,
	.rename = sfs_op_rename,
	.link = sfs_op_link,
	.open = sfs_op_open,
	.read = sfs_op_read,
	.write_buf = sfs_op_write_buf,
	.flush = sfs_op_flush,
	.release = sfs_op_release,
	.fsync = sfs_op_fsync,
	.opendir = sfs_op_opendir,
	.readdir = sfs_op_readdir,
	.readdirplus = sfs_op_readdirplus,
	.releasedir = sfs_op_releasedir,
	.fsyncdir = sfs_op_fsyncdir,
	.statfs = sfs_op_statfs,
	.setxattr = sfs_op_setxattr,
	.getxattr = sfs_op_getxattr,
	.listxattr = sfs_op_listxattr,
	.removexattr = sfs_op_removexattr,
	.create = sfs_op_create,
	.fallocate = sfs_op_fallocate,
	.lseek = sfs_op_lseek,
	.copy_file_range = sfs_op_copy_file_range,
	.ioctl = sfs_op_ioctl,
};

/* What the union asks of the kernel's FUSE layer. POSIX_ACL makes the
 * kernel decide access by ACLs too (with default_permissions) and send
 * modes unmasked, with the umask beside them (see sfs_umask_begin). */
void sfs_op_init(void *userdata, struct fuse_conn_info *conn)
{
	unsigned want = FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_SPLICE_WRITE |
			FUSE_CAP_SPLICE_MOVE | FUSE_CAP_CACHE_SYMLINKS |
			FUSE_CAP_PARALLEL_DIROPS | FUSE_CAP_READDIRPLUS |
			FUSE_CAP_READDIRPLUS_AUTO | FUSE_CAP_IOCTL_DIR |
			FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;

	if (sfs_m.opts.writeback)
		want |= FUSE_CAP_WRITEBACK_CACHE;
	/* noacl: the kernel checks mode bits only and refuses the ACL
	 * xattrs itself (xattrs.c hides them from listings) */
	if (sfs_m.opts.noacl || sfs_m.opts.noxattrs)
		want &= ~(unsigned)FUSE_CAP_POSIX_ACL;
	/* a reply through an io_uring entry is copied into the entry: no
	 * splice of READ replies into the device */
	if (sfs_uring_planned())
		want &= ~(unsigned)(FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
	conn->want |= want & conn->capable;
	sfs_readahead_want(conn, sfs_m.opts.readahead_kb);
	/* exports send lookups of "." and ".." (export_lookup.c): only
	 * where node ids outlive the daemon */
	if (sfs_export)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT & conn->capable;
	else
		conn->want &= ~(unsigned)FUSE_CAP_EXPORT_SUPPORT;
	/* The kernel clears set-user-ID and set-group-ID bits on write,
	 * truncate and chown itself then (with a setattr): the daemon writes
	 * as root, which keeps them. */
	conn->want &= ~(unsigned)FUSE_CAP_HANDLE_KILLPRIV;
	sfs_readdir_init(conn);
}
