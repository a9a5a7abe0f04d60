/* Attributes: what stat shows through the view, and changing them. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/bio.h"
#include "whiteout/metacopy.h"
#include "stackfs/ops/ops.h"
#include "whiteout/metadir.h"

void sfs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	int ret = sfs_node_getattr(sfs_node_of(ino), &st);

	if (ret < 0)
		sfs_reply_err(req, -ret);
	else
		fuse_reply_attr(req, &st, sfs_timeout);
}

static struct timespec time_of(int set, int now_flag, int to_set,
			       const struct timespec *ts)
{
	struct timespec t = { .tv_sec = 0, .tv_nsec = UTIME_OMIT };

	if (to_set & now_flag)
		t.tv_nsec = UTIME_NOW;
	else if (to_set & set)
		t = *ts;
	return t;
}

static int set_times(int fd, int openfd, const struct stat *attr, int to_set)
{
	struct timespec tv[2];
	int r;

	tv[0] = time_of(FUSE_SET_ATTR_ATIME, FUSE_SET_ATTR_ATIME_NOW, to_set, &attr->st_atim);
	tv[1] = time_of(FUSE_SET_ATTR_MTIME, FUSE_SET_ATTR_MTIME_NOW, to_set, &attr->st_mtim);
	if (openfd >= 0)
		r = sfs_do_utimensat(openfd, NULL, tv, 0);
	else
		r = sfs_do_utimensat(fd, "", tv, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
	return r < 0 ? r : 0;
}

static int set_mode(int fd, int openfd, mode_t mode)
{
	return sfs_do_fchmod(openfd >= 0 ? openfd : fd, mode);
}

static int set_size(int fd, int openfd, off_t size)
{
	return sfs_do_truncate(openfd >= 0 ? openfd : fd, size);
}

/* The times SETATTR can set. */
#define SETATTR_TIMES (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | \
		       FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW)

/* A metacopy whose fill was killed keeps the times it must end with
 * (union/metacopy_fill.c): those just set become them. Only for a
 * metacopy (no xattr read on every utimes); the change itself is done,
 * so it is not failed for this. */
static void follow_kept_times(const struct sfs_stack *st, int to_set)
{
	int ret;

	if (!st->metacopy || !(to_set & SETATTR_TIMES))
		return;
	if ((ret = sfs_metacopy_times_follow(st->l[0].fd)) < 0)
		sfs_log(SFS_LOG_WARN, "cannot update the times a metacopy keeps: %s",
			strerror(-ret));
}

/* The changes a SETATTR can carry besides a ctime. */
#define SETATTR_CHANGES (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID | \
			 FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | \
			 FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW)

/* Applies the changes in POSIX order: mode, owner, size, times. A
 * SETATTR with none of them is a chown(f, -1, -1) (the kernel sends its
 * ATTR_CTIME alone, as FUSE_SET_ATTR_CTIME with the writeback cache, as
 * nothing without): the branch's chown of -1, -1 marks ctime as the
 * native filesystem does. */
static int setattr_layer(int fd, int openfd, const struct stat *attr, int to_set)
{
	/* the owner asked for in the view, as the branch stores it */
	uid_t uid = (to_set & FUSE_SET_ATTR_UID) ?
		    sfs_idmap_to_disk(SFS_IDMAP_UID, attr->st_uid) : (uid_t)-1;
	gid_t gid = (to_set & FUSE_SET_ATTR_GID) ?
		    sfs_idmap_to_disk(SFS_IDMAP_GID, attr->st_gid) : (gid_t)-1;
	int ret = 0;

	if (to_set & FUSE_SET_ATTR_MODE)
		ret = set_mode(fd, openfd, attr->st_mode);
	if (ret == 0 && ((to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) ||
			 !(to_set & SETATTR_CHANGES)) &&
	    sfs_do_fchownat(fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		ret = -errno;
	if (ret == 0 && (to_set & FUSE_SET_ATTR_SIZE))
		ret = set_size(fd, openfd, attr->st_size);
	if (ret == 0 && (to_set & SETATTR_TIMES))
		ret = set_times(fd, openfd, attr, to_set);
	return ret;
}

void sfs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		    int to_set, struct fuse_file_info *fi)
{
	struct sfs_node *n = sfs_node_of(ino);
	struct sfs_file *f = fi ? (struct sfs_file *)(uintptr_t)fi->fh : NULL;
	struct sfs_stack *st;
	struct stat out;
	/* a truncate changes the data: a metacopy's is brought in first */
	int ret = sfs_node_copy_up(n, (to_set & FUSE_SET_ATTR_SIZE) ? SFS_CU_DATA : 0, &st);

	if (ret == 0) {
		ret = setattr_layer(st->l[0].fd, f ? sfs_file_fd(f) : -1, attr, to_set);
		if (ret == 0)
			follow_kept_times(st, to_set);
		if (ret == 0)
			ret = sfs_sync_changed(st->l[0].fd);
		sfs_stack_put(st);
	}
	if (ret == 0)
		ret = sfs_node_getattr(n, &out);
	if (ret < 0)
		sfs_reply_err(req, -ret);
	else
		fuse_reply_attr(req, &out, sfs_timeout);
}

void sfs_op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct sfs_stack *st;
	char buf[PATH_MAX + 1];
	int err = -sfs_node_stack_open(sfs_node_of(ino), &st);
	ssize_t len = err ? -1 : sfs_do_readlinkat(st->l[0].fd, "", buf, sizeof(buf));

	err = len < 0 && !err ? errno : err;

	sfs_stack_put(st);
	if (len < 0)
		sfs_reply_err(req, err);
	else if (len == sizeof(buf))
		sfs_reply_err(req, ENAMETOOLONG);
	else {
		buf[len] = '\0';
		fuse_reply_readlink(req, buf);
	}
}

/* The filesystem new data goes to: the highest rw branch, else the top. */
void sfs_op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct sfs_snap *s = sfs_snap_current();
	int b = s->top_rw >= 0 ? s->top_rw : 0;
	struct statvfs sv;
	int ret = fstatvfs(s->b[b]->root_fd, &sv);
	int err = errno;

	sfs_snap_put(s);
	if (ret < 0)
		sfs_reply_err(req, err);
	else
		fuse_reply_statfs(req, &sv);
}
