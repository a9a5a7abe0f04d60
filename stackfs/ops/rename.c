/* rename(2) through the view. Both ends are resolved; each end with
 * content in a lower branch is first made to live in the highest rw
 * branch (a file is copied up, a directory gets an upper copy with a
 * redirect record, in constant time), and the rename happens there,
 * leaving a whiteout where the old name still shows something below.
 * What cannot be done in one branch answers EXDEV, so that mv(1) falls
 * back to copy and unlink: a destination shown by a ro branch above the
 * highest rw one. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/bio.h"
#include "stackfs/branches/branch_caps.h"
#include "stackfs/ops/ops.h"

/* One end of a rename. */
struct rn_end {
	struct sfs_node *parent;
	struct sfs_stack *pst;            /* the parent's stack */
	const char *name;
	struct sfs_stack *st;             /* the entry's, NULL when absent */
	struct stat top, id;
	bool redirected;                  /* a directory with a redirect */
};

struct rn {
	struct rn_end src, dst;
	unsigned flags;
	struct sfs_branch *kb;            /* the branch it happens in */
	int dst_wh;                       /* SFS_WH_HAS_* at a free destination */
};

/* An EXDEV no union state explains (the kernel named an entry the daemon
 * does not know, or a copy-up left it below the rw branch): mv(1) falls
 * back to a copy without a word, so the cause is logged. */
static int rn_unexplained(const char *name, const char *why)
{
	sfs_log(SFS_LOG_WARN, "rename of \"%s\" answers EXDEV: %s", name, why);
	return -EXDEV;
}

static void rn_release(struct rn *r)
{
	if (r->src.st)
		sfs_stack_put(r->src.st);
	if (r->dst.st)
		sfs_stack_put(r->dst.st);
	sfs_stack_put(r->src.pst);
	sfs_stack_put(r->dst.pst);
}

static int end_resolve(struct rn_end *e)
{
	if (e->st)
		sfs_stack_put(e->st);
	e->st = NULL;
	return sfs_resolve(e->pst, e->name, &e->st, &e->top, &e->id);
}

static int rn_resolve(struct rn *r)
{
	int ret;

	if (r->flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	if (sfs_name_reserved(r->src.parent, r->src.name))
		return -ENOENT;
	if (sfs_name_reserved(r->dst.parent, r->dst.name))
		return -EPERM;
	ret = end_resolve(&r->src);
	if (ret < 0)
		return ret;
	ret = end_resolve(&r->dst);
	if (ret == -ENOENT)
		return r->flags & RENAME_EXCHANGE ? -ENOENT : 0;
	return ret;
}

/* What replacing the destination requires, as rename(2) says. */
static int rn_check_dest(struct rn *r)
{
	struct sfs_dirlist l = { 0 };
	int ret = 0;

	if (!r->dst.st || (r->flags & RENAME_EXCHANGE))
		return 0;
	if (r->flags & RENAME_NOREPLACE)
		return -EEXIST;
	if (S_ISDIR(r->src.top.st_mode) && !S_ISDIR(r->dst.top.st_mode))
		return -ENOTDIR;
	if (!S_ISDIR(r->src.top.st_mode) && S_ISDIR(r->dst.top.st_mode))
		return -EISDIR;
	if (S_ISDIR(r->dst.top.st_mode)) {
		ret = sfs_dirlist_read(r->dst.st, false, &l);
		if (ret == 0 && l.n > 0)
			ret = -ENOTEMPTY;
		sfs_dirlist_free(&l);
	}
	return ret;
}

static bool end_upper_only(const struct rn_end *e)
{
	return e->st->n == 1 && (int)e->st->l[0].bidx == e->st->snap->top_rw;
}

/* A directory with lower content moves in constant time: its upper
 * directory (made if needed) records where the lower layers are, and
 * only the upper directory is renamed. One renamed before keeps its
 * record. */
static int end_redirect(struct rn_end *e, struct sfs_node *n)
{
	struct sfs_dirmark m;
	struct sfs_stack *st;
	char path[PATH_MAX];
	int ret = sfs_node_writable(n, &st);

	if (ret < 0)
		return ret;
	ret = sfs_dirmark_read(st->l[0].fd, &m);
	if (ret == 0 && !m.redirect && st->n > 1) {
		ret = sfs_layer_path(st->snap, &st->l[1], path, sizeof(path));
		if (ret == 0)
			ret = sfs_redirect_set(st->l[0].fd, path, sfs_m.opts.whiteout);
	}
	e->redirected = ret == 0 && (m.redirect || st->n > 1);
	sfs_dirmark_free(&m);
	sfs_stack_put(e->st);
	e->st = st;
	return ret;
}

/* A metacopy file (made by a chmod, or by kernel overlayfs) finds its
 * data below by its name: before it moves, its data is brought in, as
 * its first write would (docs/union.md "Metadata-only copy-up": a redirect
 * record would keep it a metacopy, at the cost of one more format). */
static int end_fill(struct rn_end *e)
{
	struct sfs_node *n = sfs_node_find(&e->id);
	struct sfs_stack *st;
	int ret;

	if (!n)
		return rn_unexplained(e->name, "its node is not known");
	ret = sfs_node_copy_up(n, SFS_CU_DATA, &st);
	sfs_node_unref(n);
	if (ret < 0)
		return ret;
	sfs_stack_put(st);
	return end_resolve(e);
}

/* Makes an end live in the highest rw branch: a directory gets its upper
 * copy, a file is copied up at this very name (a lower file with several
 * hard links may have been reached last by another, or be copied up
 * through another right now). */
static int end_up(struct rn_end *e)
{
	struct sfs_node *n;
	int ret;

	if (e->st->metacopy && (int)e->st->l[0].bidx == e->st->snap->top_rw)
		return end_fill(e);
	if (end_upper_only(e) || (!S_ISDIR(e->top.st_mode) &&
				  (int)e->st->l[0].bidx == e->st->snap->top_rw))
		return 0;
	n = sfs_node_find(&e->id);
	if (!n)
		return rn_unexplained(e->name, "its node is not known");
	if (S_ISDIR(e->top.st_mode)) {
		ret = end_redirect(e, n);
		sfs_node_unref(n);
		return ret;
	}
	ret = sfs_node_copy_up_at(n, e->parent, e->name);
	sfs_node_unref(n);
	if (ret < 0)
		return ret;
	/* the copy-up may have given the parent its upper directory */
	sfs_stack_put(e->pst);
	e->pst = sfs_node_stack(e->parent);
	ret = end_resolve(e);
	if (ret == 0 && (int)e->st->l[0].bidx != e->st->snap->top_rw)
		ret = rn_unexplained(e->name, "not in the rw branch after its copy-up");
	return ret;
}

static int rn_check_branch(struct rn *r)
{
	int dpos;

	r->kb = sfs_layer_branch(r->src.st, &r->src.st->l[0]);
	if ((int)r->src.st->l[0].bidx != r->src.st->snap->top_rw)
		return rn_unexplained(r->src.name, "not in the rw branch");
	if (!r->dst.st)
		return 0;
	/* positions compared within the destination's own snapshot */
	dpos = sfs_snap_pos(r->dst.st->snap, r->kb);
	if (dpos < 0 || r->dst.st->l[0].bidx < (unsigned)dpos)
		return -EXDEV; /* shown by a ro branch above the rw one */
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

/* A directory without a redirect landing on a name that shows (or
 * showed: a whiteout was there) something below must hide it, as a new
 * directory over a whiteout does. One with a redirect finds its lower
 * layers through it, never through the name. */
static int end_opaque_at(const struct rn_end *e, const struct rn_end *at,
			 const struct sfs_branch *kb, bool was_whiteout)
{
	int below;

	if (!S_ISDIR(e->top.st_mode) || e->redirected)
		return 0;
	below = sfs_resolve_below(at->pst, kb, at->name);
	if (below < 0)
		return below;
	return below || was_whiteout ? sfs_wh_set_opaque(e->st->l[0].fd, sfs_m.opts.whiteout) : 0;
}

/* A replaced upper directory must be empty for the branch too, but its
 * whiteouts (and an aufs opaque marker) hide lower entries for as long
 * as it is at the name. So it is first made opaque by the overlay xattr
 * (read in either style, and no entry in the way of the rename), then
 * emptied: a crash in between shows it as empty as the view had it. It
 * cannot go into the staging directory first, as rmdir's does: the name
 * would show the lower directory until the rename. (Emptied first, a
 * crash between two unlinks showed the lower entries again.) */
static int rn_empty_dst(const struct rn *r)
{
	int fd = r->dst.st->l[0].fd, ret = sfs_wh_set_opaque(fd, SFS_WH_OVERLAY);

	return ret < 0 ? ret : sfs_wh_clear_dir(fd);
}

static int rn_prepare(struct rn *r)
{
	int ret = 0;

	if (r->flags & RENAME_EXCHANGE) {
		ret = end_opaque_at(&r->src, &r->dst, r->kb, false);
		return ret < 0 ? ret : end_opaque_at(&r->dst, &r->src, r->kb, false);
	}
	if (r->dst.st && S_ISDIR(r->dst.top.st_mode) &&
	    sfs_layer_branch(r->dst.st, &r->dst.st->l[0])->shared == r->kb->shared)
		ret = rn_empty_dst(r);
	return ret < 0 ? ret : end_opaque_at(&r->src, &r->dst, r->kb, r->dst_wh != 0);
}

/* The rename over the destination's whiteouts: over an overlay device
 * an exchange (a plain rename cannot put a directory there), which
 * leaves the device at the old name, where it is the whiteout the old
 * name needs in overlay style, or else is removed. An aufs ".wh.NAME"
 * goes after the rename (the entry wins meanwhile). Removing them first
 * let a crash show the lower entry at the destination. */
static void rn_after_wh(const struct rn *r, int srcfd, const struct sfs_layer *npl,
			bool below)
{
	char wh[NAME_MAX + 1];

	if ((r->dst_wh & SFS_WH_HAS_DEV) &&
	    !(below && sfs_wh_style_for(r->src.name, sfs_m.opts.whiteout) == SFS_WH_OVERLAY))
		sfs_do_unlinkat(srcfd, r->src.name, 0);
	if ((r->dst_wh & SFS_WH_HAS_AUFS) &&
	    snprintf(wh, sizeof(wh), SFS_WH_PREFIX "%s", r->dst.name) < (int)sizeof(wh))
		sfs_do_unlinkat(npl->fd, wh, 0);
}

/* Leaves a whiteout for the old name when branches below still show it,
 * in one atomic step where the format allows (RENAME_WHITEOUT, or the
 * destination's whiteout device swapped in), else an aufs ".wh.NAME"
 * first (the entry wins over it until the rename). */
static int rn_do(struct rn *r, const struct sfs_layer *npl, unsigned rflags)
{
	const struct sfs_layer *pl = sfs_stack_in(r->src.pst, r->kb);
	struct sfs_branch *br = r->kb;
	bool ovl = sfs_wh_style_for(r->src.name, sfs_m.opts.whiteout) == SFS_WH_OVERLAY, aufs_wh, late_wh;
	int below = 0, ret;

	if (!(rflags & RENAME_EXCHANGE))
		below = sfs_resolve_below(r->src.pst, r->kb, r->src.name);
	if (below < 0)
		return below;
	aufs_wh = below && !ovl;
	if (r->dst_wh & SFS_WH_HAS_DEV)
		rflags = RENAME_EXCHANGE;
	else if (below && ovl)
		rflags |= RENAME_WHITEOUT;
	/* a name too long for ".wh.NAME" on a branch without the flag: the
	 * device is made after the rename (the lower entry shows at the old
	 * name in between, a copy rather than a move after a crash there) */
	late_wh = (rflags & RENAME_WHITEOUT) && (br->lacks & SFS_LACKS_WHITEOUT);
	if (late_wh)
		rflags &= ~(unsigned)RENAME_WHITEOUT;
	if (aufs_wh) {
		ret = sfs_wh_create(pl->fd, r->src.name, br->work_fd, SFS_WH_AUFS);
		if (ret < 0)
			return ret;
	}
	if (sfs_do_renameat2(pl->fd, r->src.name, npl->fd, r->dst.name, rflags) < 0) {
		ret = errno == EXDEV ? rn_unexplained(r->src.name, "the branch refused it") : -errno;
		if (aufs_wh)
			sfs_wh_remove(pl->fd, r->src.name); /* the old name stays */
		return ret;
	}
	if (late_wh && (ret = sfs_wh_create(pl->fd, r->src.name, br->work_fd, SFS_WH_OVERLAY)) < 0)
		sfs_log(SFS_LOG_WARN, "rename of \"%s\": its whiteout: %s (the lower entry shows)",
			r->src.name, strerror(-ret));
	rn_after_wh(r, pl->fd, npl, below);
	if (below)
		sfs_count(whiteouts, 1);
	return 0;
}

/* A copy-up may have given a parent its upper directory: the parents'
 * stacks are taken again afterwards. */
static void end_refresh_parent(struct rn_end *e)
{
	sfs_stack_put(e->pst);
	e->pst = sfs_node_stack(e->parent);
}

static int rn_up(struct rn *r)
{
	int ret = end_up(&r->src);

	if (ret == 0 && (r->flags & RENAME_EXCHANGE))
		ret = end_up(&r->dst);
	end_refresh_parent(&r->src);
	end_refresh_parent(&r->dst);
	return ret;
}

/* Both directories changed, and a moved directory (its redirect or
 * opaque mark) too: sync.c decides when they are durable. */
static int rn_sync(const struct rn *r, const struct sfs_layer *npl)
{
	const struct sfs_layer *pl = sfs_stack_in(r->src.pst, r->kb);
	int ret = sfs_sync_changed(pl->fd);

	if (ret == 0 && S_ISDIR(r->src.top.st_mode))
		ret = sfs_sync_changed(r->src.st->l[0].fd);
	return ret < 0 ? ret : sfs_sync_changed(npl->fd);
}

static int do_rename(struct rn *r)
{
	struct sfs_stack *np = NULL;
	const struct sfs_layer *npl;
	unsigned rflags = r->flags & (RENAME_NOREPLACE | RENAME_EXCHANGE);
	int ret = rn_resolve(r);

	if (ret == 0)
		ret = rn_check_dest(r);
	if (ret == 0)
		ret = rn_up(r);
	if (ret == 0)
		ret = rn_check_branch(r);
	if (ret == 0)
		ret = sfs_dir_ensure_layer(r->dst.parent, r->kb, &np);
	if (ret < 0)
		return ret;
	/* Taken after the copy-ups (each takes one). What was resolved
	 * stays true meanwhile: the kernel serialises namespace changes in
	 * these directories, and a copy-up only gives a name's entry an
	 * upper copy, which the rename replaces or moves as it would the
	 * lower one. A copy-up after it sees the name gone or replaced. */
	sfs_ns_lock2(r->src.parent, r->dst.parent);
	npl = sfs_stack_in(np, r->kb);
	if (!r->dst.st && np->n > 1) {
		ret = sfs_wh_find(npl->fd, r->dst.name);
		r->dst_wh = ret < 0 ? 0 : ret;
	}
	if (ret >= 0)
		ret = rn_prepare(r);
	if (ret >= 0)
		ret = rn_do(r, npl, rflags);
	if (ret >= 0) {
		rn_move_node(&r->src.id, r->dst.parent, r->dst.name);
		if (r->flags & RENAME_EXCHANGE)
			rn_move_node(&r->dst.id, r->src.parent, r->src.name);
	}
	sfs_ns_unlock2(r->src.parent, r->dst.parent);
	if (ret >= 0)
		ret = rn_sync(r, npl);
	sfs_stack_put(np);
	return ret < 0 ? ret : 0;
}

void sfs_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		   fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	struct rn r = {
		.src = { .parent = sfs_node_of(parent), .name = name },
		.dst = { .parent = sfs_node_of(newparent), .name = newname },
		.flags = flags,
	};
	int ret;

	r.src.pst = sfs_node_stack(r.src.parent);
	r.dst.pst = sfs_node_stack(r.dst.parent);
	ret = do_rename(&r);
	rn_release(&r);
	sfs_reply_err(req, -ret);
}
