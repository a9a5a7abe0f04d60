/* The rw branch's tree applied to the lower branch, top-down: in each
 * directory the whiteouts first (the lower entry deleted), then the
 * entries (a directory kept, moved into place or made, then its
 * content; a non-directory placed: commit_place.c), then the names the
 * rw branch has no entry of but which show the index's copy. With
 * branches below the lower one, a directory gets the marks (opaque,
 * redirect) and a deleted name the whiteout that keep those branches
 * showing what the view showed; each checked by a lookup after. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/bio.h"
#include "union/commit_int.h"

static int commit_dir(struct commit *c, struct dctx *d);

/* ------------------------------------------------------------ stacks */

/* A stack of the layers top[0..ntop) over those of below (or none),
 * its union below looked up at dpath. */
static int stack_on(const struct sfs_ch_layer *top, unsigned ntop,
		    const struct sfs_ch_stack *below, const char *dpath,
		    struct sfs_ch_stack **out)
{
	unsigned nb = below ? below->n : 0;
	struct sfs_ch_layer *l = calloc(ntop + nb, sizeof(*l));
	int ret;

	if (!l)
		return -ENOMEM;
	memcpy(l, top, ntop * sizeof(*l));
	if (nb)
		memcpy(l + ntop, below->l, nb * sizeof(*l));
	ret = sfs_ch_stack_make(l, ntop + nb, dpath, out);
	free(l);
	return ret;
}

/* The stack the lower branch will show at d after the commit: d's
 * directory there and the layers below the lower branch. */
static int new_stack(struct dctx *d, struct sfs_ch_stack **out)
{
	struct sfs_ch_layer top = { .b = 1, .fd = d->T, .path = (char *)d->vpath };
	struct sfs_ch_stack *deep = NULL;
	int ret = sfs_ch_stack_from(d->V, 2, &deep);

	if (ret == 0)
		ret = stack_on(&top, 1, deep, d->V->dpath, out);
	sfs_ch_stack_free(deep);
	return ret;
}

/* 1 when the lower branch's d/name shows the layers `wanted` below it,
 * 0 when not, or -errno. */
static int shows_wanted(struct commit *c, struct dctx *d, const char *name,
			const struct sfs_ch_stack *wanted)
{
	struct sfs_ch_stack *ns = NULL, *got = NULL;
	int ret = new_stack(d, &ns);

	if (ret == 0)
		ret = sfs_ch_lookup(&c->u, ns, name, false, &got);
	if (ret == 0)
		ret = sfs_ch_same_layers(got, wanted, 2);
	sfs_ch_stack_free(ns);
	sfs_ch_stack_free(got);
	return ret;
}

/* The lower branch's directory fd at d/name gets the marks that keep the
 * branches below it showing what they showed under the rw branch:
 * `wanted`. */
static int fix_marks(struct commit *c, struct dctx *d, const char *name,
		     const struct sfs_ch_stack *wanted, int fd)
{
	int ret;

	if (!c->deep)
		return 0;
	ret = shows_wanted(c, d, name, wanted);
	if (ret != 0)
		return ret < 0 ? ret : 0;
	ret = sfs_dirmark_clear(fd);
	if (ret == 0 && (!wanted || wanted->n == 0 || !wanted->dpath))
		ret = sfs_wh_set_opaque(fd, c->style);
	else if (ret == 0)
		ret = sfs_redirect_set(fd, wanted->dpath[0] ? wanted->dpath : "/", c->style);
	if (ret == 0)
		ret = shows_wanted(c, d, name, wanted);
	if (ret < 0)
		return ret;
	return ret ? 0 : -EUCLEAN; /* cannot be made to show the same layers */
}

/* ------------------------------------------------------------ directories */

/* For a directory the rw branch has no copy of, its times are the lower
 * one's: put back after the changes in it. */
void sfs_commit_touch_dir(struct dctx *d)
{
	struct stat st;

	if (d->touched || d->T < 0)
		return;
	d->touched = true;
	if (fstat(d->T, &st) == 0) {
		d->t_times[0] = st.st_atim;
		d->t_times[1] = st.st_mtim;
	} else {
		d->t_times[0].tv_nsec = d->t_times[1].tv_nsec = UTIME_OMIT;
	}
}

/* Makes a directory in the lower branch at dt/name with the metadata of
 * sdir/sname (st), staged under a temporary name. Returns its fd. */
static int make_dir(struct commit *c, int dt, const char *name, int sdir, const char *sname,
		    const struct stat *st)
{
	char tmp[64];
	int ret, fd;

	sfs_commit_tmp_name(c, tmp);
	if (sfs_do_mkdirat(dt, tmp, 0700) < 0)
		return -errno;
	ret = sfs_commit_copy_meta(sdir, sname, st, dt, tmp);
	if (ret == 0 && sfs_do_renameat2(dt, tmp, dt, name, RENAME_NOREPLACE) < 0)
		ret = -errno;
	if (ret < 0) {
		sfs_do_unlinkat(dt, tmp, AT_REMOVEDIR);
		return ret;
	}
	fd = sfs_do_open(dt, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	return fd < 0 ? -errno : fd;
}

/* Its parents first; marked like any directory made. */
int sfs_commit_ensure_dir(struct commit *c, struct dctx *d)
{
	struct sfs_ch_stack *wanted = NULL;
	int ret;

	if (d->T >= 0)
		return 0;
	if (!d->parent)
		return -ENOENT;
	ret = sfs_commit_ensure_dir(c, d->parent);
	if (ret < 0)
		return ret;
	sfs_commit_touch_dir(d->parent);
	ret = make_dir(c, d->parent->T, d->name, d->V->l[0].fd, "", &d->V->top);
	if (ret < 0)
		return sfs_commit_fail(c, ret, d->vpath, "making the directory");
	d->T = ret;
	d->made = true;
	ret = sfs_ch_stack_from(d->V, 2, &wanted);
	if (ret == 0)
		ret = fix_marks(c, d->parent, d->name, wanted, d->T);
	sfs_ch_stack_free(wanted);
	return ret < 0 ? sfs_commit_fail(c, ret, d->vpath, "marking the directory") : 0;
}

/* Puts the times (and inode flags) of the view's directory on the lower
 * branch's, once its content is done. */
static int finish_dir(struct commit *c, struct dctx *d, int sdir, const char *sname,
		      const struct stat *st, int ddir, const char *dname)
{
	int ret = 0;

	if (sdir >= 0)
		ret = sfs_commit_copy_flags(sdir, sname, ddir, dname);
	if (ret == 0)
		ret = sfs_commit_copy_times(st, ddir, dname);
	return ret < 0 ? sfs_commit_fail(c, ret, d->vpath, "setting times") : 0;
}

/* The lower branch's directory at d/name for the rw directory vc (stat
 * st, planned move m), with exactly its attributes: the lower one kept
 * (merged, or moved onto itself), moved there from the staging
 * directory (a redirect), or made (opaque: replaced; new; over a
 * non-directory; moved without a lower directory). An O_PATH fd, or
 * -errno. */
static int lower_dir(struct commit *c, struct dctx *d, const char *name, const char *vpath,
		     const struct sfs_ch_stack *vc, struct moved *m, const struct stat *st)
{
	const struct sfs_ch_layer *u = &vc->l[0], *b1 = sfs_ch_stack_in(vc, 1);
	struct stat ex;
	bool exists = sfs_do_stat(d->T, name, &ex) == 0;
	int ret = 0, fd;

	sfs_commit_touch_dir(d);
	if (m && m->staged[0]) {
		if (exists)
			ret = sfs_commit_remove_tree(d->T, name, c->u.b[1].mnt_id);
		if (ret == 0 && sfs_do_renameat2(c->stage_fd, m->staged, d->T, name, RENAME_NOREPLACE) < 0)
			ret = -errno;
		if (ret == 0)
			m->staged[0] = '\0';
	} else if (!(m && m->src) && (vc->opaque || m || !b1 || !exists || !S_ISDIR(ex.st_mode) ||
				      strcmp(b1->path, vpath))) {
		if (exists)
			ret = sfs_commit_remove_tree(d->T, name, c->u.b[1].mnt_id);
		return ret < 0 ? ret : make_dir(c, d->T, name, u->fd, "", st);
	}
	if (ret < 0)
		return ret;
	fd = sfs_do_open(d->T, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ret = sfs_commit_drop_xattrs(u->fd, fd);
	if (ret == 0)
		ret = sfs_commit_copy_meta(u->fd, "", st, d->T, name);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return fd;
}

/* What the branches below the lower one are to show under the
 * directory: what they showed under the rw one (for a moved directory,
 * under its old path). */
static int wanted_below(const struct sfs_ch_stack *vc, const struct moved *m,
			struct sfs_ch_stack **out)
{
	if (!m)
		return sfs_ch_stack_from(vc, 2, out);
	if (m->deep)
		return sfs_ch_stack_make(m->deep->l, m->deep->n, m->deep->dpath, out);
	return sfs_ch_stack_make(NULL, 0, NULL, out);
}

/* A directory of the rw branch at d/name (view stack vc): the lower
 * branch's directory, its marks, then its content, through the rw
 * directory over the new lower one. */
static int place_dir(struct commit *c, struct dctx *d, const char *name, const char *vpath,
		     struct sfs_ch_stack *vc)
{
	struct moved *m = vc->redirected ? sfs_commit_moved_find(c, vpath) : NULL;
	struct dctx cd = { .parent = d, .vpath = vpath, .name = name, .T = -1 };
	struct sfs_ch_stack *wanted = NULL, *child = NULL;
	struct stat st;
	int ret;

	if (fstat(vc->l[0].fd, &st) < 0)
		return sfs_commit_fail(c, -errno, vpath, "reading the rw branch");
	cd.T = lower_dir(c, d, name, vpath, vc, m, &st);
	ret = cd.T < 0 ? cd.T : wanted_below(vc, m, &wanted);
	if (ret == 0)
		ret = fix_marks(c, d, name, wanted, cd.T);
	if (ret == 0) {
		struct sfs_ch_layer top[2] = {
			vc->l[0], { .b = 1, .fd = cd.T, .path = (char *)vpath },
		};

		ret = stack_on(top, 2, wanted, wanted->dpath ? wanted->dpath : vc->dpath, &child);
	}
	if (ret < 0) {
		ret = sfs_commit_fail(c, ret, vpath, "placing the directory");
		goto out;
	}
	cd.V = child;
	ret = commit_dir(c, &cd);
	if (ret == 0)
		ret = finish_dir(c, &cd, vc->l[0].fd, "", &st, d->T, name);
out:
	if (cd.T >= 0)
		close(cd.T);
	sfs_ch_stack_free(child);
	sfs_ch_stack_free(wanted);
	return ret;
}

/* ------------------------------------------------------------ entries */

/* A whiteout of the rw branch: the lower entry goes; a whiteout stays in
 * the lower branch where a branch below it shows the name. */
static int apply_whiteout(struct commit *c, struct dctx *d, const char *name,
			  const char *vpath, enum sfs_whiteout_style style)
{
	struct sfs_ch_stack *ns = NULL, *got = NULL;
	char tmp[64] = "";
	struct stat st;
	int ret;

	if (sfs_do_stat(d->T, name, &st) == 0) {
		if (sfs_wh_is_dev_whiteout(d->T, name, &st))
			return 0; /* the lower branch hides it already */
		sfs_commit_touch_dir(d);
		ret = sfs_commit_remove_tree(d->T, name, c->u.b[1].mnt_id);
		if (ret < 0)
			return sfs_commit_fail(c, ret, vpath, "deleting");
	} else if (errno != ENOENT) {
		return sfs_commit_fail(c, -errno, vpath, "deleting");
	}
	if (!c->deep)
		return 0;
	ret = new_stack(d, &ns);
	if (ret == 0)
		ret = sfs_ch_lookup(&c->u, ns, name, false, &got);
	sfs_ch_stack_free(ns);
	sfs_ch_stack_free(got);
	if (ret == -ENOENT)
		return 0;
	if (ret == 0) {
		sfs_commit_touch_dir(d);
		/* an overlay device is staged beside it, under a name the
		 * journal's recovery removes */
		if (style == SFS_WH_OVERLAY)
			sfs_commit_tmp_name(c, tmp);
		ret = sfs_wh_create_as(d->T, name, d->T, tmp, style);
	}
	return ret < 0 ? sfs_commit_fail(c, ret, vpath, "writing a whiteout") : 0;
}

/* One whiteout w of the rw directory d. */
static int commit_whiteout(struct commit *c, struct dctx *d, const struct raw *w)
{
	char *vpath = sfs_commit_path(c, d->vpath, w->name);
	int ret;

	if (!vpath)
		return -ENOMEM;
	ret = sfs_commit_step(c, vpath);
	if (ret == 0)
		ret = apply_whiteout(c, d, w->name, vpath,
				     w->kind == RAW_WH_OVERLAY ? SFS_WH_OVERLAY : SFS_WH_AUFS);
	free(vpath);
	return ret;
}

/* One entry `name` of the rw directory u, as the view shows it. */
static int commit_entry(struct commit *c, struct dctx *d, const struct sfs_ch_layer *u,
			const char *name)
{
	struct sfs_ch_stack *vc = NULL;
	char *vpath = sfs_commit_path(c, d->vpath, name);
	int ret;

	if (!vpath)
		return -ENOMEM;
	ret = sfs_commit_step(c, vpath);
	if (ret == 0)
		ret = sfs_ch_lookup(&c->u, d->V, name, true, &vc);
	if (ret == 0 && vc->l[0].b != 0)
		ret = -ESTALE; /* the rw branch changed meanwhile */
	if (ret < 0)
		ret = sfs_commit_fail(c, ret, vpath, "looking up");
	else if (S_ISDIR(vc->top.st_mode))
		ret = place_dir(c, d, name, vpath, vc);
	else
		ret = sfs_commit_place_file(c, d, name, vpath, u->fd, name, false);
	sfs_ch_stack_free(vc);
	free(vpath);
	return ret;
}

/* A lower directory of the view (vc) with index names below it: walked
 * for them; it keeps its times (or gets the view's, when made here). */
static int commit_lower_dir(struct commit *c, struct dctx *d, const char *name,
			    const char *vpath, struct sfs_ch_stack *vc)
{
	const struct sfs_ch_layer *b1 = sfs_ch_stack_in(vc, 1);
	struct dctx cd = { .parent = d, .vpath = vpath, .name = name, .V = vc, .T = -1 };
	int ret = 0;

	if (b1 && (cd.T = fcntl(b1->fd, F_DUPFD_CLOEXEC, 0)) < 0)
		ret = sfs_commit_fail(c, -errno, vpath, "opening");
	if (ret == 0)
		ret = commit_dir(c, &cd);
	if (ret == 0 && cd.made)
		ret = finish_dir(c, &cd, vc->l[0].fd, "", &vc->top, d->T, name);
	else if (ret == 0 && cd.touched &&
		 sfs_do_utimensat(cd.T, ".", cd.t_times, AT_SYMLINK_NOFOLLOW) < 0)
		ret = sfs_commit_fail(c, -errno, vpath, "setting times");
	if (cd.T >= 0)
		close(cd.T);
	return ret;
}

/* One name of d the rw branch has no entry of: the index's copy shown
 * there, or a lower directory with such names below. */
static int commit_lower_name(struct commit *c, struct dctx *d, const char *name)
{
	struct sfs_ch_stack *vc = NULL;
	const struct indexed *e;
	char *vpath = sfs_commit_path(c, d->vpath, name);
	int ret = 0;

	if (!vpath)
		return -ENOMEM;
	if ((e = sfs_commit_ix_find(c, vpath))) {
		ret = sfs_commit_step(c, vpath);
		if (ret == 0)
			ret = sfs_commit_place_file(c, d, name, vpath, c->u.index_fd, e->name, true);
	} else if (sfs_commit_ix_under(c, vpath)) {
		ret = sfs_ch_lookup(&c->u, d->V, name, false, &vc);
		if (ret < 0)
			ret = ret == -ENOENT ? 0 : sfs_commit_fail(c, ret, vpath, "looking up");
	}
	if (ret == 0 && vc && S_ISDIR(vc->top.st_mode) && vc->l[0].b != 0)
		ret = commit_lower_dir(c, d, name, vpath, vc);
	free(vpath);
	sfs_ch_stack_free(vc);
	return ret;
}

/* The names of d that the rw branch has no entry of but that change: a
 * lower file with several names shown as the index's copy (found by
 * the plan before anything changed: a name replaced meanwhile changes
 * the lower file's link count). */
static int commit_lower_names(struct commit *c, struct dctx *d, const struct raw *rv,
			      size_t rn)
{
	char **names = NULL;
	size_t n = 0;
	int ret = sfs_ch_names(&c->u, d->V, &names, &n);

	if (ret < 0)
		return sfs_commit_fail(c, ret, d->vpath, "listing");
	for (size_t i = 0; ret == 0 && i < n; i++)
		if (!rv || !sfs_commit_raw_has_entry(rv, rn, names[i]))
			ret = commit_lower_name(c, d, names[i]);
	sfs_ch_names_free(names, n);
	return ret;
}

static int commit_dir(struct commit *c, struct dctx *d)
{
	const struct sfs_ch_layer *u = d->V->n && d->V->l[0].b == 0 ? &d->V->l[0] : NULL;
	struct raw *rv = NULL;
	size_t rn = 0;
	int ret = 0;

	if (u) {
		ret = sfs_commit_raw_list(u->fd, !d->vpath[0], &rv, &rn);
		if (ret < 0)
			return sfs_commit_fail(c, ret, d->vpath, "listing the rw branch");
	}
	/* whiteouts first: what they delete may be where an entry goes */
	for (size_t i = 0; ret == 0 && i < rn; i++)
		if (rv[i].kind != RAW_ENTRY && !sfs_commit_raw_has_entry(rv, rn, rv[i].name))
			ret = commit_whiteout(c, d, &rv[i]);
	for (size_t i = 0; ret == 0 && i < rn; i++)
		if (rv[i].kind == RAW_ENTRY)
			ret = commit_entry(c, d, u, rv[i].name);
	if (ret == 0 && c->nix && (!d->vpath[0] || sfs_commit_ix_under(c, d->vpath)))
		ret = commit_lower_names(c, d, rv, rn);
	sfs_commit_raws_free(rv, rn);
	return ret;
}

/* ------------------------------------------------------------ the root */

/* An opaque root: the whole lower branch is replaced (but its .stackfs
 * and the staging directory). */
static int replace_root(struct commit *c, int T)
{
	struct raw *rv = NULL;
	size_t rn = 0;
	int ret = sfs_commit_raw_list(T, true, &rv, &rn);

	for (size_t i = 0; ret == 0 && i < rn; i++) {
		char wh[300];

		if (rv[i].kind == RAW_ENTRY && !strcmp(rv[i].name, c->stage_name))
			continue;
		snprintf(wh, sizeof(wh), "%s%s", rv[i].kind == RAW_WH_AUFS ? SFS_WH_PREFIX : "",
			 rv[i].name);
		ret = sfs_commit_remove_tree(T, wh, c->u.b[1].mnt_id);
	}
	sfs_commit_raws_free(rv, rn);
	if (ret == 0 && c->deep)
		ret = sfs_wh_set_opaque(T, c->style);
	return ret < 0 ? sfs_commit_fail(c, ret, "/", "replacing the content of the lower branch")
		       : 0;
}

/* The lower root gets exactly the rw root's attributes (st: its stat). */
static int root_attrs(struct commit *c, const struct sfs_ch_stack *V, const struct stat *st,
		      int T)
{
	int ret = sfs_commit_drop_xattrs(V->l[0].fd, T);

	if (ret == 0)
		ret = sfs_commit_copy_meta(V->l[0].fd, "", st, T, ".");
	return ret < 0 ? sfs_commit_fail(c, ret, "/", "copying the attributes of the root") : 0;
}

/* Every moved directory has reached its place: the staging directory
 * goes (empty). */
static int remove_stage(struct commit *c)
{
	int ret = 0;

	if (c->stage_fd < 0)
		return 0;
	if (sfs_do_unlinkat(c->u.b[1].root_fd, c->stage_name, AT_REMOVEDIR) < 0)
		ret = sfs_commit_fail(c, -errno, c->stage_name, "removing the staging directory");
	close(c->stage_fd);
	c->stage_fd = -1;
	return ret;
}

int sfs_commit_apply_root(struct commit *c, struct sfs_ch_stack *V)
{
	struct dctx root = { .vpath = "", .V = V };
	struct stat st;
	int ret = 0;

	root.T = fcntl(c->u.b[1].root_fd, F_DUPFD_CLOEXEC, 0);
	if (root.T < 0 || fstat(V->l[0].fd, &st) < 0)
		ret = sfs_commit_fail(c, -errno, "/", "opening the roots");
	if (ret == 0 && V->opaque)
		ret = replace_root(c, root.T);
	if (ret == 0)
		ret = root_attrs(c, V, &st, root.T);
	if (ret == 0)
		ret = commit_dir(c, &root);
	if (ret == 0)
		ret = remove_stage(c);
	if (ret == 0)
		ret = finish_dir(c, &root, V->l[0].fd, "", &st, root.T, "");
	/* durable before the rw branch is emptied */
	if (ret == 0 && (ret = sfs_jnl_syncfs(c->u.b[1].root_fd)) < 0)
		sfs_commit_fail(c, ret, c->into, "syncfs");
	if (root.T >= 0)
		close(root.T);
	return ret;
}
