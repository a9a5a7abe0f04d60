/* rename(2) through the view. Both names are resolved; the rename happens
 * in the branch of the source, which must be the highest rw branch, and
 * leaves a whiteout where the old name still shows something below.
 * Cases that need copy-up or a redirect record answer EXDEV for now, so
 * that mv(1) falls back to copy and unlink. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "stackfs/ops.h"

/* The two ends of a rename, resolved. */
struct rn {
	struct sfs_node *parent, *newparent;
	const char *name, *newname;
	unsigned flags;
	struct sfs_stack *pst, *npst;     /* parents */
	struct sfs_stack *sst, *dst;      /* source, destination (or NULL) */
	struct stat stop, sid, dtop, did;
	unsigned k;                       /* the branch it happens in */
};

static void rn_release(struct rn *r)
{
	if (r->sst)
		sfs_stack_put(r->sst);
	if (r->dst)
		sfs_stack_put(r->dst);
	sfs_stack_put(r->pst);
	sfs_stack_put(r->npst);
}

static int rn_resolve(struct rn *r)
{
	int ret;

	if (r->flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	if (sfs_name_reserved(r->parent, r->name))
		return -ENOENT;
	if (sfs_name_reserved(r->newparent, r->newname))
		return -EPERM;
	ret = sfs_resolve(r->pst, r->name, &r->sst, &r->stop, &r->sid);
	if (ret < 0)
		return ret;
	ret = sfs_resolve(r->npst, r->newname, &r->dst, &r->dtop, &r->did);
	if (ret == -ENOENT)
		return r->flags & RENAME_EXCHANGE ? -ENOENT : 0;
	return ret;
}

/* What replacing the destination requires, as rename(2) says. */
static int rn_check_dest(struct rn *r)
{
	struct sfs_dirlist l = { 0 };
	int ret = 0;

	if (!r->dst || (r->flags & RENAME_EXCHANGE))
		return 0;
	if (r->flags & RENAME_NOREPLACE)
		return -EEXIST;
	if (S_ISDIR(r->stop.st_mode) && !S_ISDIR(r->dtop.st_mode))
		return -ENOTDIR;
	if (!S_ISDIR(r->stop.st_mode) && S_ISDIR(r->dtop.st_mode))
		return -EISDIR;
	if (S_ISDIR(r->dtop.st_mode)) {
		ret = sfs_dirlist_read(r->dst, false, &l);
		if (ret == 0 && l.n > 0)
			ret = -ENOTEMPTY;
		sfs_dirlist_free(&l);
	}
	return ret;
}

/* A directory with lower content moves in constant time: its upper
 * directory (made if needed) records where the lower layers are, and
 * only the upper directory is renamed. A directory renamed before keeps
 * the record it has. */
static int rn_redirect_dir(struct rn *r)
{
	struct sfs_node *n = sfs_node_find(&r->sid);
	struct sfs_dirmark m;
	struct sfs_stack *st;
	char path[PATH_MAX];
	int ret;

	if (!n)
		return -EXDEV;
	ret = sfs_node_writable(n, &st);
	sfs_node_unref(n);
	if (ret < 0)
		return ret;
	ret = sfs_dirmark_read(st->l[0].fd, &m);
	if (ret == 0 && !m.redirect && st->n > 1) {
		ret = sfs_layer_path(st->snap, &st->l[1], path, sizeof(path));
		if (ret == 0)
			ret = sfs_redirect_set(st->l[0].fd, path, sfs_m.opts.whiteout);
	}
	sfs_dirmark_free(&m);
	sfs_stack_put(r->sst);
	r->sst = st;
	return ret;
}

/* A source with content in a lower branch is copied up first (a
 * directory gets a redirect); the rename then happens in the highest rw
 * branch. */
static int rn_copy_up_source(struct rn *r)
{
	struct sfs_node *n;
	struct sfs_stack *st;
	int ret;

	if (S_ISDIR(r->stop.st_mode)) {
		if (r->sst->n == 1 && (int)r->sst->l[0].bidx == r->sst->snap->top_rw)
			return 0;
		if (r->flags & RENAME_EXCHANGE)
			return -EXDEV;
		return rn_redirect_dir(r);
	}
	if ((int)r->sst->l[0].bidx == r->sst->snap->top_rw)
		return 0;
	n = sfs_node_find(&r->sid);
	if (!n)
		return -EXDEV; /* not known to the kernel: nothing to rename */
	ret = sfs_node_writable(n, &st);
	sfs_node_unref(n);
	if (ret < 0)
		return ret;
	sfs_stack_put(st);
	/* The copy took the name the node was last reached by; for a lower
	 * file with several hard links that may be another one. */
	sfs_stack_put(r->sst);
	r->sst = NULL;
	ret = sfs_resolve(r->pst, r->name, &r->sst, &r->stop, &r->sid);
	if (ret == 0 && (int)r->sst->l[0].bidx != r->sst->snap->top_rw)
		ret = -EXDEV;
	return ret;
}

/* Renames that stay in one branch and need no redirect. */
static int rn_check_branch(struct rn *r)
{
	r->k = r->sst->l[0].bidx;
	if ((int)r->k != r->sst->snap->top_rw)
		return -EXDEV; /* in a ro (or lower rw) branch: copy-up first */
	if (r->dst && r->dst->l[0].bidx < r->k)
		return -EXDEV;
	if ((r->flags & RENAME_EXCHANGE) && (r->dst->l[0].bidx != r->k ||
					      r->dst->n > 1 ||
					      sfs_resolve_below(r->pst, r->k, r->name) != 0 ||
					      sfs_resolve_below(r->npst, r->k, r->newname) != 0))
		return -EXDEV;
	return 0;
}

/* Points the cached node of an entry at its new name. */
static void rn_move_node(const struct stat *id, struct sfs_node *np, const char *name)
{
	struct sfs_node *n = sfs_node_find(id);

	if (n) {
		sfs_node_move(n, np, name);
		sfs_node_unref(n);
	}
}

/* Leaves a whiteout for the old name when branches below still show it,
 * in one atomic step where the format allows (RENAME_WHITEOUT). */
static int rn_do(struct rn *r, const struct sfs_layer *npl, int *rflags)
{
	const struct sfs_layer *pl = sfs_stack_in(r->pst, r->k);
	int below = sfs_resolve_below(r->pst, r->k, r->name);
	struct sfs_branch *br = r->pst->snap->b[r->k];
	int ret;

	if (below < 0)
		return below;
	if (below && sfs_m.opts.whiteout == SFS_WH_OVERLAY)
		*rflags |= RENAME_WHITEOUT;
	else if (below) {
		ret = sfs_wh_create(pl->fd, r->name, br->work_fd, SFS_WH_AUFS);
		if (ret < 0)
			return ret;
	}
	if (renameat2(pl->fd, r->name, npl->fd, r->newname, (unsigned)*rflags) < 0) {
		ret = -errno;
		if (below && !(*rflags & RENAME_WHITEOUT))
			sfs_wh_remove(pl->fd, r->name); /* the old name stays */
		return ret;
	}
	return 0;
}

static int rn_prepare_dest(struct rn *r, int npfd, bool was_whiteout)
{
	int below, ret;

	if (r->dst && S_ISDIR(r->dtop.st_mode) && r->dst->l[0].bidx == r->k &&
	    !(r->flags & RENAME_EXCHANGE)) {
		ret = sfs_wh_clear_dir(r->dst->l[0].fd);
		if (ret < 0)
			return ret;
	}
	if (!S_ISDIR(r->stop.st_mode))
		return 0;
	/* a directory landing on a name that shows (or showed) something
	 * below must hide it, as a new directory over a whiteout does */
	below = sfs_resolve_below(r->npst, r->k, r->newname);
	if (below < 0)
		return below;
	if (below || was_whiteout)
		return sfs_wh_set_opaque(r->sst->l[0].fd, sfs_m.opts.whiteout);
	(void)npfd;
	return 0;
}

static int do_rename(struct rn *r)
{
	struct sfs_stack *np = NULL;
	const struct sfs_layer *npl;
	int rflags = (int)(r->flags & (RENAME_NOREPLACE | RENAME_EXCHANGE));
	bool was_whiteout = false;
	int ret = rn_resolve(r);

	if (ret == 0)
		ret = rn_check_dest(r);
	if (ret == 0)
		ret = rn_copy_up_source(r);
	if (ret == 0)
		ret = rn_check_branch(r);
	if (ret == 0)
		ret = sfs_dir_ensure_layer(r->newparent, r->k, &np);
	if (ret < 0)
		return ret;
	npl = sfs_stack_in(np, r->k);
	if (!r->dst && np->n > 1) {
		ret = sfs_wh_remove(npl->fd, r->newname);
		was_whiteout = ret == 1;
	}
	if (ret >= 0)
		ret = rn_prepare_dest(r, npl->fd, was_whiteout);
	if (ret >= 0)
		ret = rn_do(r, npl, &rflags);
	sfs_stack_put(np);
	if (ret < 0)
		return ret;
	rn_move_node(&r->sid, r->newparent, r->newname);
	if (r->flags & RENAME_EXCHANGE)
		rn_move_node(&r->did, r->parent, r->name);
	return 0;
}

void sfs_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		   fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	struct rn r = {
		.parent = sfs_node_of(parent), .newparent = sfs_node_of(newparent),
		.name = name, .newname = newname, .flags = flags,
	};
	int ret;

	r.pst = sfs_node_stack(r.parent);
	r.npst = sfs_node_stack(r.newparent);
	ret = do_rename(&r);
	rn_release(&r);
	fuse_reply_err(req, -ret);
}
