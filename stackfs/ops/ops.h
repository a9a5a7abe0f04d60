/* The FUSE request handlers, grouped by the file that defines them. Each
 * unpacks its request, calls into the union, and replies exactly once. */
#ifndef SFS_OPS_H
#define SFS_OPS_H

#include "stackfs/stackfs.h"

/* ops.c */
void sfs_op_init(void *userdata, struct fuse_conn_info *conn);

/* lookup.c / dir.c */
void sfs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void sfs_op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void sfs_op_forget_multi(fuse_req_t req, size_t count,
			 struct fuse_forget_data *forgets);
void sfs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void sfs_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		  mode_t mode, dev_t rdev);
void sfs_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		    const char *name);
void sfs_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		 const char *newname);
void sfs_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void sfs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void sfs_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		   fuse_ino_t newparent, const char *newname, unsigned int flags);

/* inode.c */
void sfs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void sfs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		    int to_set, struct fuse_file_info *fi);
void sfs_op_readlink(fuse_req_t req, fuse_ino_t ino);
void sfs_op_statfs(fuse_req_t req, fuse_ino_t ino);

/* file.c */
void sfs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		   mode_t mode, struct fuse_file_info *fi);
void sfs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void sfs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		 struct fuse_file_info *fi);
void sfs_op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv,
		      off_t off, struct fuse_file_info *fi);
void sfs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void sfs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void sfs_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		  struct fuse_file_info *fi);
void sfs_op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset,
		      off_t length, struct fuse_file_info *fi);
void sfs_op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		  struct fuse_file_info *fi);
void sfs_op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			    struct fuse_file_info *fi_in, fuse_ino_t ino_out,
			    off_t off_out, struct fuse_file_info *fi_out,
			    size_t len, int flags);

/* ioctl.c */
void sfs_op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		  struct fuse_file_info *fi, unsigned flags, const void *in_buf,
		  size_t in_bufsz, size_t out_bufsz);

/* readdir.c */
/* From the INIT: whether the kernel can open directories itself. */
void sfs_readdir_init(const struct fuse_conn_info *conn);
void sfs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void sfs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi);
void sfs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi);
void sfs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void sfs_op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi);

/* xattrs.c */
void sfs_op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		     const char *value, size_t size, int flags);
void sfs_op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void sfs_op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void sfs_op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

#endif
