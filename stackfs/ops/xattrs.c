/* The xattr requests: pass-through to the entry's top layer; the
 * union's own attributes stay hidden and untouchable; a kernel overlayfs
 * name is stored escaped (xattr.h: sfs_xattr_stored_name). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/limits.h>

#include "stackfs/ops/ops.h"
#include "xattr/xattr.h"

/* How to name the real entry to the xattr calls: its own fd, or for a
 * symlink a directory and a name (link_at). */
struct xtarget {
	struct sfs_stack *st, *pst;
	int fd;
	char *ent;
};

/* Whether dirfd/name is the inode fd holds. */
static bool names_inode(int dirfd, const char *name, int fd)
{
	struct stat a, b;

	return sfs_do_stat(dirfd, name, &a) == 0 && sfs_do_fstat(fd, &b) == 0 &&
	       a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

/* A symlink's xattrs are reached by a directory and a name only (the
 * magic link of its fd would be followed): its parent's layer in its top
 * layer's branch and its name, or else the index entry of its identity.
 * The name may not be the node's top layer: a lower symlink with several
 * names shows its copy in the index through a name still lower, and a
 * name of the copy may have been renamed or removed since. Each is
 * checked to be that inode; neither: -ESTALE. */
static int link_at(struct sfs_node *n, struct xtarget *t)
{
	char iname[SFS_INDEX_NAME_MAX];
	const struct sfs_layer *pl;
	struct sfs_node *parent;
	int dfd;

	pthread_mutex_lock(&n->lock);
	parent = n->parent;
	t->ent = strdup(n->name);
	t->pst = sfs_node_stack(parent);
	pthread_mutex_unlock(&n->lock);
	if (!t->ent)
		return -ENOMEM;
	pl = sfs_stack_in(t->pst, sfs_layer_branch(t->st, &t->st->l[0]));
	if (pl && names_inode(pl->fd, t->ent, t->st->l[0].fd)) {
		t->fd = pl->fd;
		return 0;
	}
	dfd = sfs_index_at(t->st->snap, n->key_dev, n->key_ino, iname);
	if (dfd < 0 || !names_inode(dfd, iname, t->st->l[0].fd))
		return -ESTALE;
	free(t->ent);
	t->ent = strdup(iname);
	t->fd = dfd;
	return t->ent ? 0 : -ENOMEM;
}

static int xtarget_get(struct sfs_node *n, bool write, struct xtarget *t)
{
	int ret = 0;

	memset(t, 0, sizeof(*t));
	if (write)
		ret = sfs_node_writable(n, &t->st);
	else
		ret = sfs_node_stack_open(n, &t->st);
	if (ret < 0)
		return ret; /* (t->st, if any, goes with xtarget_put) */
	t->fd = t->st->l[0].fd;
	return n->type == S_IFLNK ? link_at(n, t) : 0;
}

static void xtarget_put(struct xtarget *t)
{
	if (t->st)
		sfs_stack_put(t->st);
	if (t->pst)
		sfs_stack_put(t->pst);
	free(t->ent);
}

/* Names the view does not have: every one with noxattrs=1, the POSIX
 * ACLs with noacl (fuse-overlayfs's options). */
static bool view_lacks(const char *name)
{
	return sfs_m.opts.noxattrs ||
	       (sfs_m.opts.noacl && (!strcmp(name, "system.posix_acl_access") ||
				     !strcmp(name, "system.posix_acl_default")));
}

/* Takes out of the list (n bytes) what view_lacks; its new length. */
static size_t drop_lacking(char *list, size_t n)
{
	size_t o = 0;

	if (!sfs_m.opts.noxattrs && !sfs_m.opts.noacl)
		return n;
	for (size_t i = 0; i < n;) {
		size_t len = strnlen(list + i, n - i) + 1;

		if (!view_lacks(list + i)) {
			memmove(list + o, list + i, len);
			o += len;
		}
		i += len;
	}
	return o;
}

static const char *xent(const struct xtarget *t)
{
	return t->ent ? t->ent : "";
}

void sfs_op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		     const char *value, size_t size, int flags)
{
	struct xtarget t = { 0 };
	char stored[XATTR_NAME_MAX + 1];
	int ret = view_lacks(name) ? -EOPNOTSUPP
		: sfs_xattr_stored_name(name, stored, sizeof(stored));

	if (ret == 0)
		ret = xtarget_get(sfs_node_of(ino), true, &t);
	if (ret == 0)
		ret = sfs_xattr_set(t.fd, xent(&t), stored, value, size, flags);
	if (ret == 0)
		ret = sfs_sync_changed(t.st->l[0].fd);
	xtarget_put(&t);
	sfs_reply_err(req, -ret);
}

void sfs_op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct xtarget t = { 0 };
	char stored[XATTR_NAME_MAX + 1];
	int ret = sfs_xattr_stored_name(name, stored, sizeof(stored));

	if (view_lacks(name))
		ret = -EOPNOTSUPP;
	else if (ret < 0) /* none such can exist */
		ret = -ENODATA;
	else
		ret = xtarget_get(sfs_node_of(ino), true, &t);
	if (ret == 0)
		ret = sfs_xattr_remove(t.fd, xent(&t), stored);
	if (ret == 0)
		ret = sfs_sync_changed(t.st->l[0].fd);
	xtarget_put(&t);
	sfs_reply_err(req, -ret);
}

void sfs_op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct xtarget t = { 0 };
	char stored[XATTR_NAME_MAX + 1];
	char *buf = size ? malloc(size) : NULL;
	ssize_t n = (size && !buf) ? -ENOMEM
		: view_lacks(name) ? -EOPNOTSUPP
		: sfs_xattr_stored_name(name, stored, sizeof(stored)) < 0 ? -ENODATA
		: xtarget_get(sfs_node_of(ino), false, &t);

	if (n == 0)
		n = sfs_xattr_get(t.fd, xent(&t), stored, buf, size);
	xtarget_put(&t);
	if (n < 0)
		sfs_reply_err(req, (int)-n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

/* The list is read whole and the private names taken out before it is
 * measured against the caller's buffer: the sizes the caller sees are
 * those of what it is shown. */
void sfs_op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct xtarget t = { 0 };
	char *buf = malloc(XATTR_LIST_MAX);
	ssize_t n = buf ? xtarget_get(sfs_node_of(ino), false, &t) : -ENOMEM;

	if (n == 0)
		n = sfs_xattr_list(t.fd, xent(&t), buf, XATTR_LIST_MAX);
	xtarget_put(&t);
	if (n >= 0)
		n = (ssize_t)drop_lacking(buf, sfs_xattr_filter(buf, (size_t)n));
	if (n < 0)
		sfs_reply_err(req, (int)-n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else if ((size_t)n > size)
		sfs_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}
