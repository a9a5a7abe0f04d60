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
#include "stackfs/ops.h"
#include "whiteout/metadir.h"

double sfs_timeout = 60.0;

/* st_ino of the view: the real inode number with the stable id of its
 * filesystem (from the registry) in the top byte, so entries of different
 * filesystems never collide and numbers survive remounts and branch
 * reordering. A number that does not fit (inode numbers of 2^56 and
 * above, more than 254 filesystems) gets an allocated number, kept in the
 * highest rw branch's inode map (top byte 0xFF, never reused). */
static const struct sfs_branch *branch_of_dev(const struct sfs_snap *snap, uint64_t dev)
{
	for (unsigned i = 0; i < snap->n; i++)
		if ((uint64_t)snap->b[i]->dev == dev)
			return snap->b[i];
	return NULL;
}

static uint64_t ino_allocated(const struct sfs_snap *snap, uint32_t fs_id, uint64_t ino)
{
	static atomic_uint_fast64_t fallback = 1;
	uint64_t out;

	if (snap->top_rw >= 0 &&
	    sfs_meta_ino_alloc(snap->b[snap->top_rw]->meta, fs_id, ino, &out) == 0)
		return out;
	/* no registry to keep it in: unique for this mount only */
	return SFS_INO_ALLOC_BASE | (SFS_INO_ALLOC_MASK >> 1) |
	       (atomic_fetch_add(&fallback, 1) & (SFS_INO_ALLOC_MASK >> 1));
}

/* The largest inode number packed as it is: 2^56 - 1. The test suite
 * lowers it (STACKFS_TEST_PACK_BITS) to reach the allocation path, which
 * real filesystems reach only with inode numbers of 2^56 and above. */
static uint64_t pack_limit(void)
{
	static uint64_t limit;
	const char *bits;

	if (!limit) {
		bits = getenv("STACKFS_TEST_PACK_BITS");
		limit = bits && atoi(bits) > 0 && atoi(bits) < 56 ?
			(1ULL << atoi(bits)) - 1 : SFS_INO_ALLOC_MASK;
	}
	return limit;
}

uint64_t sfs_ino_of(const struct sfs_snap *snap, uint64_t dev, uint64_t ino)
{
	const struct sfs_branch *b = branch_of_dev(snap, dev);
	uint32_t fs_id = b ? b->fs_id : 0;

	if (fs_id >= 1 && fs_id <= 254 && ino <= pack_limit())
		return ((uint64_t)fs_id << 56) | ino;
	return ino_allocated(snap, fs_id, ino);
}

uint64_t sfs_dev_of_uuid(const struct sfs_snap *snap, const uint8_t uuid[16])
{
	for (unsigned i = 0; i < snap->n; i++)
		if (memcmp(snap->b[i]->fs_uuid, uuid, 16) == 0)
			return snap->b[i]->dev;
	return 0;
}

uint32_t sfs_origin_nlink(const struct sfs_snap *snap, int dirfd, const char *name)
{
	struct sfs_origin o;
	struct stat st;
	uint32_t nlink = 1;
	int fd = -1;

	if (sfs_origin_get(dirfd, name, &o) != 1 || o.version < 2 || !o.handle_bytes)
		return nlink;
	for (unsigned i = 0; i < snap->n && fd < 0; i++) {
		if (memcmp(snap->b[i]->fs_uuid, o.fs_uuid, 16) == 0)
			fd = sfs_branch_open_handle(snap->b[i], o.handle_type,
						    o.handle, o.handle_bytes);
	}
	if (fd >= 0 && sfs_do_fstat(fd, &st) == 0 && st.st_ino == o.ino)
		nlink = (uint32_t)st.st_nlink;
	if (fd >= 0)
		close(fd);
	return nlink;
}

int sfs_origin_identity(const struct sfs_snap *snap, int dirfd, const char *name,
			uint64_t *dev, uint64_t *ino)
{
	struct sfs_origin o;
	int ret = sfs_origin_get(dirfd, name, &o);

	if (ret != 1)
		return ret == -EUCLEAN ? ret : 0;
	*dev = o.version == 1 ? o.dev : sfs_dev_of_uuid(snap, o.fs_uuid);
	*ino = o.ino;
	if (!*dev)
		return 0;
	return sfs_origin_alive(snap, &o) ? 1 : -ESTALE;
}

void sfs_stat_fill(const struct sfs_node *n, const struct sfs_stack *st,
		   const struct stat *real, struct stat *out)
{
	struct stat data;

	*out = *real;
	out->st_ino = n->ino;
	sfs_idmap_stat(out);
	/* A merged directory's link count is not known without reading every
	 * layer; 1 tells find(1) and friends not to count on it. */
	if (S_ISDIR(real->st_mode) && st->n > 1)
		out->st_nlink = 1;
	else if (st->nlink)
		out->st_nlink = sfs_index_nlink(st->nlink, (uint32_t)real->st_nlink);
	/* a metacopy file holds no data itself: what its data takes */
	if (st->metacopy && st->n > 1 && sfs_do_fstat(st->l[1].fd, &data) == 0)
		out->st_blocks = data.st_blocks;
}

/* The kernel takes attributes of another type than its inode's for a
 * reused node id, and fails every later use of that inode with EIO. A
 * stack that came to hold another type is stale: said, never shown. */
static int same_type(const struct sfs_node *n, const struct stat *real)
{
	if ((real->st_mode & S_IFMT) == n->type)
		return 0;
	sfs_log(SFS_LOG_ERR, "node %llu: its stack holds an inode of type %o, the node's "
		"is %o: answered ESTALE", (unsigned long long)n->ino,
		(unsigned)(real->st_mode & S_IFMT) >> 12, (unsigned)n->type >> 12);
	return -ESTALE;
}

int sfs_node_getattr(struct sfs_node *n, struct stat *out)
{
	struct sfs_stack *st;
	struct stat real;
	int ret = sfs_node_stack_open(n, &st);

	if (ret == 0)
		ret = sfs_do_fstat(st->l[0].fd, &real);
	if (ret == 0)
		ret = same_type(n, &real);
	if (ret == 0)
		sfs_stat_fill(n, st, &real, out);
	sfs_stack_put(st);
	return ret;
}

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
