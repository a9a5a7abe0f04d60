/* Namespace operations: mkdir, mknod, symlink, link, unlink and rmdir
 * (rename: rename.c; lookup and forget: lookup.c). New entries go into
 * the highest rw branch; removing a name that branches below still hold
 * leaves a whiteout. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bio.h"
#include "stackfs/ops/ops.h"
#include "xattr/xattr.h"

/* The kernel sends modes unmasked (POSIX ACLs are on) and the caller's
 * umask beside them: the branch applies it, unless the parent has a
 * default ACL, which then decides, as POSIX says. umask is per process,
 * so each worker thread gets its own filesystem context first. */
void sfs_umask_begin(fuse_req_t req)
{
	static __thread bool own_fs;

	if (!own_fs && unshare(CLONE_FS) == 0)
		own_fs = true;
	if (own_fs)
		umask(fuse_req_ctx(req)->umask);
}

void sfs_umask_end(void)
{
	umask(0);
}

/* Gives the entry at fd/name (AT_* flags) made in directory parentfd
 * the caller's owner. */
static int set_owner_at(int parentfd, int fd, const char *name, int flags,
			fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	/* the caller's ids are the view's: stored through uidmapping= */
	uid_t uid = sfs_idmap_to_disk(SFS_IDMAP_UID, ctx->uid);
	gid_t gid = sfs_idmap_to_disk(SFS_IDMAP_GID, ctx->gid);
	struct stat dst;

	if (uid == 0 && gid == 0)
		return 0; /* the daemon made it as root already */
	/* a set-group-ID directory gave the entry its group already */
	if (sfs_do_fstat(parentfd, &dst) == 0 && (dst.st_mode & S_ISGID))
		gid = (gid_t)-1;
	if (sfs_do_fchownat(fd, name, uid, gid, flags) < 0) {
		/* a daemon without the right to give it (rootless: an id
		 * outside its namespace's ranges) leaves it its own, as
		 * fuse-overlayfs does; root's refusals stay errors */
		if (sfs_records_user() && (errno == EPERM || errno == EINVAL))
			return 0;
		return -errno;
	}
	return 0;
}

int sfs_set_owner(int dirfd, const char *name, fuse_req_t req)
{
	return set_owner_at(dirfd, dirfd, name, AT_SYMLINK_NOFOLLOW, req);
}

int sfs_place_at(struct sfs_node *parent, const char *name, const struct sfs_branch *tb,
		 struct sfs_place *p)
{
	int ret;

	memset(p, 0, sizeof(*p));
	if (strlen(name) > 255)
		return -ENAMETOOLONG;
	if (sfs_name_reserved(parent, name))
		return -EPERM;
	if (!tb)
		return -EROFS;
	ret = sfs_dir_ensure_layer(parent, tb, &p->pst);
	if (ret < 0)
		return ret;
	p->pl = sfs_stack_in(p->pst, tb);
	p->br = sfs_layer_branch(p->pst, p->pl);
	/* a whiteout only hides something where there are layers below */
	if (p->pst->n > 1 || p->pl != &p->pst->l[0]) {
		ret = sfs_wh_find(p->pl->fd, name);
		if (ret < 0) {
			sfs_stack_put(p->pst);
			return ret;
		}
		p->wh = ret;
	}
	return 0;
}

/* A private directory in the staging area in which a new entry is made
 * as it would be in the parent: the kernel gives it the parent's group
 * and set-group-ID bit (a directory) where the parent has that bit, and
 * the parent's default ACL (which then replaces the umask). */
struct stage {
	int workfd;
	int fd;                       /* O_PATH of work/dir */
	char dir[64];
};

#define ACL_DEFAULT_XATTR "system.posix_acl_default"

static int stage_copy_acl(int from, int to)
{
	ssize_t n = sfs_xattr_get(from, "", ACL_DEFAULT_XATTR, NULL, 0);
	char *buf;
	int ret;

	if (n == -ENODATA || n == -EOPNOTSUPP || n == 0)
		return 0;
	if (n < 0)
		return (int)n;
	buf = malloc((size_t)n);
	if (!buf)
		return -ENOMEM;
	n = sfs_xattr_get(from, "", ACL_DEFAULT_XATTR, buf, (size_t)n);
	ret = n < 0 ? (int)n : sfs_xattr_set(to, "", ACL_DEFAULT_XATTR, buf, (size_t)n, 0);
	free(buf);
	return ret;
}

static void stage_end(struct stage *sg, const char *name);

/* The private directory's owner and mode, set on its fd: its group is
 * the parent's (as the kernel gives a new entry in a set-group-ID
 * directory), its set-group-ID bit the parent's. */
static int stage_own(int fd, const struct stat *pst)
{
	mode_t mode = 0700 | (pst->st_mode & S_ISGID);
	int ret = sfs_do_fchownat(fd, "", (uid_t)-1, pst->st_gid, AT_EMPTY_PATH);

	return ret < 0 ? ret : sfs_do_fchmod(fd, mode);
}

static int stage_begin(const struct sfs_place *p, struct stage *sg)
{
	struct stat pst, st;
	int ret = sfs_do_fstat(p->pl->fd, &pst);

	sg->workfd = p->br->work_fd;
	sg->fd = -1;
	if (ret < 0)
		return ret;
	sfs_temp_name(sg->dir, "mk");
	if (sfs_do_mkdirat(sg->workfd, sg->dir, 0700) < 0)
		return -errno;
	ret = sg->fd = sfs_do_open(sg->workfd, sg->dir, O_PATH, 0);
	/* the one just made: the daemon's own, empty */
	if (ret >= 0 && (sfs_do_fstat(sg->fd, &st) < 0 || st.st_uid != geteuid() ||
			 st.st_nlink != 2))
		ret = -ESTALE;
	if (ret >= 0)
		ret = stage_own(sg->fd, &pst);
	if (ret >= 0)
		ret = stage_copy_acl(p->pl->fd, sg->fd);
	if (ret < 0)
		stage_end(sg, NULL);
	return ret < 0 ? ret : 0;
}

/* Removes the staging directory and what a failure left in it (the next
 * mount empties the staging area of what this cannot remove). */
static void stage_end(struct stage *sg, const char *name)
{
	int fd;

	if (name && sg->fd >= 0 && sfs_do_unlinkat(sg->fd, name, 0) < 0 && errno == EISDIR) {
		fd = sfs_do_open(sg->fd, name, O_PATH, 0);
		if (fd >= 0 && sfs_wh_clear_dir(fd) == 0)
			sfs_do_unlinkat(sg->fd, name, AT_REMOVEDIR);
		if (fd >= 0)
			close(fd);
	}
	if (sg->fd >= 0)
		close(sg->fd);
	sfs_do_unlinkat(sg->workfd, sg->dir, AT_REMOVEDIR);
}

/* make(), with the caller's umask, then the caller's owner. *made says
 * whether something is at dirfd/name to be removed on failure. */
static int make_owned(fuse_req_t req, int dirfd, const char *name,
		      sfs_make_fn make, void *arg, bool *made)
{
	int ret;

	if (req)
		sfs_umask_begin(req);
	ret = make(dirfd, name, arg);
	if (req)
		sfs_umask_end();
	*made = ret == 0;
	if (ret == 0 && req)
		ret = sfs_set_owner(dirfd, name, req);
	return ret;
}

/* A directory made over a whiteout hides what is below it. */
static int make_opaque(int dirfd, const char *name)
{
	struct stat st;
	int fd = sfs_do_open(dirfd, name, O_PATH, 0), ret;

	if (fd < 0)
		return fd;
	ret = sfs_do_fstat(fd, &st);
	if (ret == 0 && S_ISDIR(st.st_mode))
		ret = sfs_wh_set_opaque(fd, sfs_m.opts.whiteout);
	close(fd);
	return ret;
}

static int make_in_place(fuse_req_t req, const struct sfs_place *p,
			 const char *name, sfs_make_fn make, void *arg)
{
	bool made;
	int ret = make_owned(req, p->pl->fd, name, make, arg, &made);

	if (ret < 0 && made && sfs_do_unlinkat(p->pl->fd, name, 0) < 0 && errno == EISDIR)
		sfs_do_unlinkat(p->pl->fd, name, AT_REMOVEDIR);
	return ret;
}

/* Over a whiteout, or for a caller other than root: made whole in a
 * staging directory (owner, opacity), then swapped in (renamed, where no
 * whiteout is). The view shows the whiteout, or nothing, until the
 * rename, the new entry from then on (an aufs ".wh.NAME" removed after
 * it loses to the entry). Before, the whiteout went first and a crash
 * before the entry was made, or before a new directory was opaque,
 * showed the deleted lower entry; and a crash between making an entry
 * in place and giving it its owner left it root's. */
static int make_staged(fuse_req_t req, const struct sfs_place *p,
		       const char *name, sfs_make_fn make, void *arg)
{
	struct stage sg;
	bool made;
	int ret = stage_begin(p, &sg);

	if (ret < 0)
		return ret;
	ret = make_owned(req, sg.fd, name, make, arg, &made);
	if (ret == 0 && p->wh)
		ret = make_opaque(sg.fd, name);
	if (ret == 0)
		ret = sfs_wh_replace(sg.fd, name, p->pl->fd, name, p->wh);
	stage_end(&sg, ret < 0 && made ? name : NULL);
	return ret;
}

/* Whether an entry made by the daemon (root) needs another owner. */
static bool owner_differs(fuse_req_t req)
{
	const struct fuse_ctx *ctx = req ? fuse_req_ctx(req) : NULL;

	return ctx && (sfs_idmap_to_disk(SFS_IDMAP_UID, ctx->uid) != 0 ||
		       sfs_idmap_to_disk(SFS_IDMAP_GID, ctx->gid) != 0);
}

static int place_make(fuse_req_t req, const struct sfs_place *p, const char *name,
		      sfs_make_fn make, void *arg)
{
	int ret;

	if (!p->wh && (!owner_differs(req) || p->br->work_fd < 0))
		return make_in_place(req, p, name, make, arg);
	if (p->br->work_fd >= 0)
		return make_staged(req, p, name, make, arg);
	/* no staging directory: the old order, whiteout first */
	ret = sfs_wh_remove(p->pl->fd, name);
	if (ret >= 0)
		ret = make_in_place(req, p, name, make, arg);
	if (ret == 0)
		ret = make_opaque(p->pl->fd, name);
	return ret;
}

/* A new name is durable with its directory (sync.c: the journal commits
 * the entry's inode with it). */
int sfs_place_make(fuse_req_t req, const struct sfs_place *p, const char *name,
		   sfs_make_fn make, void *arg)
{
	int ret = place_make(req, p, name, make, arg);

	return ret < 0 ? ret : sfs_sync_changed(p->pl->fd);
}

struct create_args {
	int flags;
	mode_t mode;
	int fd;                       /* the new file, opened */
};

static int create_one(int dirfd, const char *name, void *arg)
{
	struct create_args *a = arg;
	int fd = sfs_do_open(dirfd, name, a->flags | O_CREAT | O_EXCL, a->mode);

	if (fd < 0)
		return fd;
	a->fd = fd;
	return 0;
}

/* A file for a caller other than root where no whiteout is: made
 * nameless (O_TMPFILE, read-write as it requires) in the parent, given
 * its owner, then linked in under the name, so that it never shows as
 * root's and needs no staging directory. -EOPNOTSUPP where the branch
 * has no O_TMPFILE. */
static int create_linked(fuse_req_t req, const struct sfs_place *p,
			 const char *name, struct create_args *a)
{
	int flags = (a->flags & ~(O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC)) | O_TMPFILE | O_RDWR;
	int fd, ret;

	sfs_umask_begin(req);
	fd = sfs_do_tmpfile(p->pl->fd, flags, a->mode);
	ret = fd < 0 ? -errno : 0;
	sfs_umask_end();
	if (ret == -EISDIR || ret == -EINVAL)
		ret = -EOPNOTSUPP; /* a kernel or filesystem without O_TMPFILE */
	if (ret == 0)
		ret = set_owner_at(p->pl->fd, fd, "", AT_EMPTY_PATH, req);
	if (ret == 0)
		ret = sfs_do_link_fd(fd, p->pl->fd, name);
	if (ret == 0)
		ret = sfs_sync_changed(p->pl->fd);
	if (ret < 0 && fd >= 0)
		close(fd);
	if (ret == 0)
		a->fd = fd;
	return ret;
}

int sfs_place_create(fuse_req_t req, const struct sfs_place *p, const char *name,
		     int flags, mode_t mode, int *fd)
{
	struct create_args a = { flags, mode, -1 };
	int ret = -EOPNOTSUPP;

	if (!p->wh && owner_differs(req))
		ret = create_linked(req, p, name, &a);
	if (ret == -EOPNOTSUPP)
		ret = sfs_place_make(req, p, name, create_one, &a);
	*fd = a.fd;
	return ret;
}

int sfs_place_new(struct sfs_node *parent, const char *name, struct sfs_place *p)
{
	struct sfs_stack *st = sfs_node_stack(parent);
	int ret = sfs_place_at(parent, name, sfs_snap_top_rw(st->snap), p);

	sfs_stack_put(st); /* held for the branch it names */
	return ret;
}

int sfs_entry_new(struct sfs_node *parent, const struct sfs_place *p,
		  const char *name, struct fuse_entry_param *e)
{
	struct sfs_stack *st;
	struct sfs_node *n;
	struct stat real;
	int ret, fd = sfs_do_open(p->pl->fd, name, O_PATH, 0);

	if (fd < 0)
		return fd;
	ret = sfs_do_fstat(fd, &real);
	st = ret < 0 ? NULL : sfs_stack_new(p->pst->snap, 1);
	if (!st) {
		close(fd);
		return ret < 0 ? ret : -ENOMEM;
	}
	st->l[0] = (struct sfs_layer){ .fd = fd, .bidx = p->pl->bidx };
	ret = sfs_node_lookup_insert(parent, name, st, &real, &n);
	if (ret < 0)
		return ret;
	memset(e, 0, sizeof(*e));
	st = sfs_node_stack(n);
	sfs_stat_fill(n, st, &real, &e->attr);
	sfs_stack_put(st);
	e->ino = sfs_node_id(n);
	e->generation = n->generation;
	e->attr_timeout = sfs_timeout;
	e->entry_timeout = sfs_timeout;
	return 0;
}

/* op: the handler's name, for the log of a failure */
static void reply_entry(fuse_req_t req, int ret, struct fuse_entry_param *e, const char *op)
{
	if (ret < 0)
		sfs_reply_err_op(req, -ret, op);
	else if (fuse_reply_entry(req, e) == -ENOENT)
		sfs_node_forget(sfs_node_of(e->ino), 1);
}

/* What mkdir, mknod and symlink share: place, make, own, enter. */
enum make_kind { MAKE_DIR, MAKE_NODE, MAKE_SYMLINK };

struct make_args {
	enum make_kind kind;
	mode_t mode;
	dev_t rdev;
	const char *target;
};

/* A character device 0:0 is marked as a real one before anyone can see
 * it, or it would read as an overlayfs whiteout (a crash before the mark
 * leaves a whiteout where the view showed nothing). A branch that cannot
 * hold the marker (no trusted xattrs, a daemon without CAP_SYS_ADMIN)
 * refuses it as kernel overlayfs does. */
static int make_device(int dirfd, const char *name, mode_t mode, dev_t rdev)
{
	int ret;

	if (sfs_do_mknodat(dirfd, name, mode, rdev) < 0)
		return -errno;
	if (!S_ISCHR(mode) || rdev != 0)
		return 0;
	ret = sfs_wh_mark_device(dirfd, name);
	if (ret < 0)
		sfs_do_unlinkat(dirfd, name, 0);
	return ret == -ENOTSUP || ret == -EPERM ? -EPERM : ret;
}

static int make_one(int dirfd, const char *name, void *arg)
{
	const struct make_args *a = arg;
	int r;

	if (a->kind == MAKE_NODE)
		return make_device(dirfd, name, a->mode, a->rdev);
	if (a->kind == MAKE_DIR)
		r = sfs_do_mkdirat(dirfd, name, a->mode);
	else
		r = sfs_do_symlinkat(a->target, dirfd, name);
	return r < 0 ? -errno : 0;
}

static int make_entry(fuse_req_t req, struct sfs_node *parent, const char *name,
		      enum make_kind kind, mode_t mode, dev_t rdev,
		      const char *target, struct fuse_entry_param *e)
{
	struct make_args a = { kind, mode, rdev, target };
	struct sfs_place p;
	int ret;

	sfs_ns_lock(parent);
	ret = sfs_place_new(parent, name, &p);
	if (ret == 0) {
		ret = sfs_place_make(req, &p, name, make_one, &a);
		if (ret == 0)
			ret = sfs_entry_new(parent, &p, name, e);
		sfs_stack_put(p.pst);
	}
	sfs_ns_unlock(parent);
	return ret;
}

void sfs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct fuse_entry_param e;
	int ret = make_entry(req, sfs_node_of(parent), name, MAKE_DIR, mode, 0, NULL, &e);

	reply_entry(req, ret, &e, __func__);
}

/* A character device 0:0 is what overlayfs takes for a whiteout: with
 * -o whiteout=overlay (a branch kernel overlayfs is to read) it is
 * refused, as kernel overlayfs refuses it; with the aufs style it is
 * made with the device marker (docs/format-records.md "Whiteouts and opaque directories"). */
void sfs_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		  mode_t mode, dev_t rdev)
{
	struct fuse_entry_param e;
	int ret = -EPERM;

	if (!S_ISCHR(mode) || rdev != 0 || sfs_m.opts.whiteout != SFS_WH_OVERLAY)
		ret = make_entry(req, sfs_node_of(parent), name, MAKE_NODE, mode, rdev, NULL, &e);
	reply_entry(req, ret, &e, __func__);
}

void sfs_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		    const char *name)
{
	struct fuse_entry_param e;
	int ret = make_entry(req, sfs_node_of(parent), name, MAKE_SYMLINK, 0, 0, link, &e);

	reply_entry(req, ret, &e, __func__);
}

static int link_one(int dirfd, const char *name, void *arg)
{
	const int *srcfd = arg;

	return sfs_do_linkat(*srcfd, "", dirfd, name, AT_EMPTY_PATH) < 0 ? -errno : 0;
}

/* A hard link lives in the branch of its source. */
static int do_link(struct sfs_node *n, struct sfs_node *newparent,
		   const char *newname, struct fuse_entry_param *e)
{
	struct sfs_stack *st;
	struct sfs_place p;
	int ret;

	/* refuse a bad name before the copy-up leaves a trace */
	if (sfs_name_reserved(newparent, newname))
		return -EPERM;
	if (strlen(newname) > 255)
		return -ENAMETOOLONG;
	/* with its data: a metacopy's second name would look for its data
	 * below under that name */
	ret = sfs_node_copy_up(n, SFS_CU_DATA, &st);
	if (ret < 0)
		return ret;
	sfs_ns_lock(newparent); /* after the copy-up, which takes one */
	ret = sfs_place_at(newparent, newname, sfs_layer_branch(st, &st->l[0]), &p);
	if (ret == 0) {
		/* the reply names the same union inode: resolve the new
		 * name, which finds it by identity (origin included) */
		ret = sfs_place_make(NULL, &p, newname, link_one, &st->l[0].fd);
		if (ret == 0)
			ret = sfs_lookup_entry(newparent, newname, e);
		sfs_stack_put(p.pst);
	}
	sfs_ns_unlock(newparent);
	sfs_stack_put(st);
	return ret;
}

void sfs_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		 const char *newname)
{
	struct fuse_entry_param e;
	int ret = do_link(sfs_node_of(ino), sfs_node_of(newparent), newname, &e);

	reply_entry(req, ret, &e, __func__);
}

/* Removes directory dirfd/name of a rw branch: renamed into the branch's
 * staging directory first, in one step, then emptied of its whiteouts and
 * removed there. Its whiteouts hide lower entries until the directory is
 * gone from the view, so they go last (removed first, a crash between two
 * of them showed the lower entries again). What a failure after the
 * rename leaves in the staging directory is removed at the next mount. */
static int remove_dir(int dirfd, const char *name, int workfd)
{
	char tmp[64];
	int fd, ret;

	if (workfd < 0) { /* no staging directory: the old order */
		ret = sfs_do_open(dirfd, name, O_PATH, 0);
		if (ret >= 0) {
			fd = ret;
			ret = sfs_wh_clear_dir(fd);
			close(fd);
		}
		return ret < 0 ? ret : sfs_do_unlinkat(dirfd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
	}
	sfs_temp_name(tmp, "rm");
	if (sfs_do_renameat2(dirfd, name, workfd, tmp, RENAME_NOREPLACE) < 0)
		return -errno;
	fd = sfs_do_open(workfd, tmp, O_PATH, 0);
	ret = fd < 0 ? fd : sfs_wh_clear_dir(fd);
	if (fd >= 0)
		close(fd);
	if (ret == 0 && sfs_do_unlinkat(workfd, tmp, AT_REMOVEDIR) < 0)
		ret = -errno;
	if (ret < 0)
		sfs_log(SFS_LOG_WARN, "rmdir %s: left in the staging directory as %s (%s)",
			name, tmp, strerror(-ret));
	return 0;
}

/* Removes parent/name, whose resolution is est. Where branches below
 * still hold the name, a whiteout goes into the highest rw branch first,
 * so that a crash leaves the old state rather than a resurrection. */
static int remove_entry(struct sfs_node *parent, const struct sfs_stack *pst,
			const struct sfs_stack *est, const char *name, int flags)
{
	const struct sfs_branch *kb = sfs_layer_branch(est, &est->l[0]);
	const struct sfs_layer *kl = sfs_stack_in(pst, kb);
	bool rw = kb->mode == SFS_BRANCH_RW;
	int below = kl ? sfs_resolve_below(pst, kb, name) : -ESTALE;
	enum sfs_whiteout_style style;
	bool replaced = false;
	struct sfs_place p;
	int ret;

	if (below < 0)
		return below;
	if (below || !rw) {
		ret = sfs_place_new(parent, name, &p);
		if (ret < 0)
			return ret;
		style = sfs_wh_style_for(name, sfs_m.opts.whiteout);
		ret = sfs_wh_create(p.pl->fd, name, p.br->work_fd, style);
		if (ret == 0)
			sfs_count(whiteouts, 1);
		if (ret == 0)
			ret = sfs_sync_changed(p.pl->fd);
		/* an overlay-style whiteout took the entry's place already */
		replaced = p.br->shared == kb->shared && style == SFS_WH_OVERLAY;
		sfs_stack_put(p.pst);
		if (ret < 0)
			return ret;
	}
	if (!rw || replaced)
		return 0;
	if (flags & AT_REMOVEDIR)
		ret = remove_dir(kl->fd, name, kb->work_fd);
	else
		ret = sfs_do_unlinkat(kl->fd, name, 0);
	return ret < 0 ? ret : sfs_sync_changed(kl->fd);
}

/* Under the parent's namespace lock from the resolution on, so that a
 * copy-up of the entry either lands before (and is removed) or sees the
 * name gone (and stays nameless): never beside a whiteout. */
static int remove_locked(struct sfs_node *parent, const char *name, bool dir)
{
	struct sfs_stack *pst = sfs_node_stack(parent), *est = NULL;
	struct sfs_dirlist l = { 0 };
	struct stat top, id;
	int ret = sfs_name_reserved(parent, name) ? -ENOENT
		: sfs_resolve(pst, name, &est, &top, &id);

	if (ret == 0 && dir && !S_ISDIR(top.st_mode))
		ret = -ENOTDIR;
	else if (ret == 0 && !dir && S_ISDIR(top.st_mode))
		ret = -EISDIR;
	if (ret == 0 && dir) {
		ret = sfs_dirlist_read(est, false, &l);
		if (ret == 0 && l.n > 0)
			ret = -ENOTEMPTY;
		sfs_dirlist_free(&l);
	}
	if (ret == 0)
		ret = remove_entry(parent, pst, est, name, dir ? AT_REMOVEDIR : 0);
	if (est)
		sfs_stack_put(est);
	sfs_stack_put(pst);
	return ret;
}

/* An rmdir also holds the lock of directory copy-ups: a copy-up of the
 * directory (a change through a process that still holds it) then lands
 * before and is removed, or finds the name gone and stays out of the
 * view (copy_up.c), never beside the whiteout. */
static int do_remove(struct sfs_node *parent, const char *name, bool dir)
{
	int ret;

	sfs_ns_lock(parent);
	if (dir)
		sfs_dir_copyups_lock(true);
	ret = remove_locked(parent, name, dir);
	if (dir)
		sfs_dir_copyups_lock(false);
	sfs_ns_unlock(parent);
	return ret;
}

void sfs_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	sfs_reply_err(req, -do_remove(sfs_node_of(parent), name, false));
}

void sfs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	sfs_reply_err(req, -do_remove(sfs_node_of(parent), name, true));
}
