/* What a commit finds before anything changes: the directories of the
 * rw branch with a redirect (their lower directories move), the names
 * of the view that show a copy in the rw branch's index (replacing one
 * name of a lower file changes the link count of the others), and the
 * count of entries for the progress line. Also the listing of a rw
 * directory both the plan and the walk read. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bio.h"
#include "union/commit_int.h"
#include "union/copy.h"

/* ------------------------------------------------------------ listing */

static int raw_cmp(const void *a, const void *b)
{
	const struct raw *x = a, *y = b;
	int r = strcmp(x->name, y->name);

	/* whiteouts of a name before the name's entry */
	return r ? r : (int)y->kind - (int)x->kind;
}

void sfs_commit_raws_free(struct raw *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

/* Adds entry e of the rw directory fd to v: an entry, or the name a
 * whiteout (aufs or overlay) is about; aufs bookkeeping, the opaque
 * marker and, at the root, the metadata directory are left out. */
static int raw_add(int fd, const struct dirent *e, bool root, struct raw **v, size_t *n,
		   size_t *cap)
{
	const char *nm = e->d_name;
	enum raw_kind k = RAW_ENTRY;
	struct stat st;

	if (!strcmp(nm, ".") || !strcmp(nm, "..") || (root && !strcmp(nm, SFS_METADIR_NAME)))
		return 0;
	if (sfs_wh_reserved_name(nm)) {
		if (!strncmp(nm, SFS_WH_PREFIX SFS_WH_PREFIX, 2 * SFS_WH_PREFIX_LEN) ||
		    !nm[SFS_WH_PREFIX_LEN])
			return 0; /* aufs bookkeeping, the opaque marker */
		nm += SFS_WH_PREFIX_LEN;
		k = RAW_WH_AUFS;
	} else if ((e->d_type == DT_CHR || e->d_type == DT_UNKNOWN) &&
		   sfs_do_stat(fd, nm, &st) == 0 && sfs_wh_is_dev_whiteout(fd, nm, &st)) {
		k = RAW_WH_OVERLAY;
	}
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 32;
		struct raw *nv = realloc(*v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = nc;
	}
	(*v)[*n].name = strdup(nm);
	(*v)[*n].kind = k;
	if (!(*v)[*n].name)
		return -ENOMEM;
	(*n)++;
	return 0;
}

int sfs_commit_raw_list(int dir_fd, bool root, struct raw **out, size_t *n)
{
	DIR *d = sfs_do_opendir(dir_fd, ".");
	struct raw *v = NULL;
	size_t cnt = 0, cap = 0;
	struct dirent *e;
	int ret = 0;

	if (!d)
		return -errno;
	while (ret == 0 && (errno = 0, e = readdir(d)))
		ret = raw_add(dirfd(d), e, root, &v, &cnt, &cap);
	if (ret == 0 && errno)
		ret = -errno;
	closedir(d);
	if (ret < 0) {
		sfs_commit_raws_free(v, cnt);
		return ret;
	}
	if (cnt)
		qsort(v, cnt, sizeof(*v), raw_cmp);
	*out = v;
	*n = cnt;
	return 0;
}

bool sfs_commit_raw_has_entry(const struct raw *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].kind == RAW_ENTRY && !strcmp(v[i].name, name))
			return true;
	return false;
}

/* ------------------------------------------------------------ moves */

struct moved *sfs_commit_moved_find(struct commit *c, const char *vpath)
{
	for (size_t i = 0; i < c->nmv; i++)
		if (!strcmp(c->mv[i].vpath, vpath))
			return &c->mv[i];
	return NULL;
}

/* Records the move a directory of the rw branch with a redirect makes:
 * p its path, vc its view stack. */
static int plan_move(struct commit *c, const char *p, const struct sfs_ch_stack *vc)
{
	struct moved *nm = realloc(c->mv, (c->nmv + 1) * sizeof(*nm));
	const struct sfs_ch_layer *b1 = sfs_ch_stack_in(vc, 1);
	int ret;

	if (!nm)
		return sfs_commit_fail(c, -ENOMEM, p, "");
	c->mv = nm;
	nm += c->nmv++;
	memset(nm, 0, sizeof(*nm));
	nm->vpath = strdup(p);
	nm->src = b1 ? strdup(b1->path) : NULL;
	ret = sfs_ch_stack_from(vc, 2, &nm->deep);
	if (ret == 0 && (!nm->vpath || (b1 && !nm->src)))
		ret = -ENOMEM;
	return ret < 0 ? sfs_commit_fail(c, ret, p, "") : 0;
}

/* name in the view's directory at vpath (stack V): its path (*p) and
 * its stack (*vc). 0, or -errno recorded (-ENOENT only when not quiet). */
static int plan_lookup(struct commit *c, const char *vpath, const struct sfs_ch_stack *V,
		       const char *name, bool quiet_enoent, char **p, struct sfs_ch_stack **vc)
{
	int ret;

	*vc = NULL;
	*p = sfs_commit_path(c, vpath, name);
	if (!*p)
		return -ENOMEM;
	ret = sfs_ch_lookup(&c->u, V, name, true, vc);
	if (ret < 0 && (ret != -ENOENT || !quiet_enoent))
		ret = sfs_commit_fail(c, ret, *p, "looking up");
	return ret;
}

static int plan_dir(struct commit *c, const char *vpath, const struct sfs_ch_stack *V);

/* A kernel overlayfs metacopy file of the rw branch (path p, view stack
 * vc) gets its data now, in place, as a write through a view would bring
 * it (union/metacopy_fill.c): the view does not change, and the file is
 * then placed below as any other, whatever the commit does meanwhile to
 * the lower file that held the data (a rename's old name deleted). */
static int plan_metacopy(struct commit *c, const char *p, const struct sfs_ch_stack *vc)
{
	int ret = vc->data_fd < 0 ? -EIO : sfs_metacopy_fill(vc->l[0].fd, vc->data_fd, true);

	return ret < 0 ? sfs_commit_fail(c, ret, p, vc->data_fd < 0 ?
			 "a metacopy file whose data is in no branch below" :
			 "bringing in a metacopy file's data") : 0;
}

/* An entry `name` of the rw directory at vpath (view stack V). */
static int plan_entry(struct commit *c, const char *vpath, const struct sfs_ch_stack *V,
		      const char *name)
{
	struct sfs_ch_stack *vc;
	char *p;
	int ret = plan_lookup(c, vpath, V, name, false, &p, &vc);

	if (ret == 0 && vc->metacopy && vc->l[0].b == 0)
		ret = plan_metacopy(c, p, vc);
	if (ret == 0 && S_ISDIR(vc->top.st_mode) && vc->l[0].b == 0) {
		if (vc->redirected)
			ret = plan_move(c, p, vc);
		if (ret == 0)
			ret = plan_dir(c, p, vc);
	}
	sfs_ch_stack_free(vc);
	free(p);
	return ret;
}

/* Finds the directories of the rw branch with a redirect and counts the
 * entries. */
static int plan_dir(struct commit *c, const char *vpath, const struct sfs_ch_stack *V)
{
	struct raw *rv = NULL;
	size_t rn = 0;
	int ret = sfs_commit_raw_list(V->l[0].fd, !vpath[0], &rv, &rn);

	if (ret < 0)
		return sfs_commit_fail(c, ret, vpath, "listing the rw branch");
	for (size_t i = 0; ret == 0 && i < rn; i++) {
		c->total++;
		if (rv[i].kind == RAW_ENTRY)
			ret = plan_entry(c, vpath, V, rv[i].name);
	}
	sfs_commit_raws_free(rv, rn);
	return ret;
}

/* ------------------------------------------------------------ index names */

static int ix_cmp(const void *a, const void *b)
{
	return strcmp(((const struct indexed *)a)->vpath, ((const struct indexed *)b)->vpath);
}

const struct indexed *sfs_commit_ix_find(const struct commit *c, const char *vpath)
{
	struct indexed key = { .vpath = (char *)vpath };

	return c->nix ? bsearch(&key, c->ix, c->nix, sizeof(key), ix_cmp) : NULL;
}

bool sfs_commit_ix_under(const struct commit *c, const char *vpath)
{
	size_t lo = 0, hi = c->nix, len = strlen(vpath);

	while (lo < hi) { /* the first path >= vpath */
		size_t mid = (lo + hi) / 2;

		if (strcmp(c->ix[mid].vpath, vpath) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < c->nix && !strncmp(c->ix[lo].vpath, vpath, len); lo++)
		if (c->ix[lo].vpath[len] == '/')
			return true;
	return false;
}

/* Records that the view's name p (taken) shows the index copy vc. */
static int add_indexed(struct commit *c, char *p, const struct sfs_ch_stack *vc)
{
	struct indexed *nv = realloc(c->ix, (c->nix + 1) * sizeof(*nv));

	if (!nv)
		return sfs_commit_fail(c, -ENOMEM, p, "");
	c->ix = nv;
	nv += c->nix++;
	nv->vpath = p;
	snprintf(nv->name, sizeof(nv->name), "%s", vc->index_name);
	/* FSID-INODE, hex (docs/format.md "work/ and index/"); the model takes no
	 * other name into its index (sfs_index_name_ok) */
	nv->lower_ino = vc->l[0].b == 1 && sfs_index_name_ok(vc->index_name) ?
		(ino_t)strtoull(vc->index_name + 9, NULL, 16) : 0;
	return 0;
}

static int plan_index(struct commit *c, const char *vpath, const struct sfs_ch_stack *V);

/* A name of the view's directory at vpath (stack V). */
static int plan_index_name(struct commit *c, const char *vpath, const struct sfs_ch_stack *V,
			   const char *name)
{
	struct sfs_ch_stack *vc;
	char *p;
	int ret = plan_lookup(c, vpath, V, name, true, &p, &vc);

	if (ret == -ENOENT) {
		ret = 0;
	} else if (ret == 0 && vc->indexed && vc->l[0].b != 0) {
		ret = add_indexed(c, p, vc);
		if (ret == 0)
			p = NULL;
	} else if (ret == 0 && S_ISDIR(vc->top.st_mode)) {
		ret = plan_index(c, p, vc);
	}
	sfs_ch_stack_free(vc);
	free(p);
	return ret;
}

/* Every name of the view that shows a copy in the rw branch's index. */
static int plan_index(struct commit *c, const char *vpath, const struct sfs_ch_stack *V)
{
	char **names = NULL;
	size_t n = 0;
	int ret = sfs_ch_names(&c->u, V, &names, &n);

	if (ret < 0)
		return sfs_commit_fail(c, ret, vpath, "listing");
	for (size_t i = 0; ret == 0 && i < n; i++)
		ret = plan_index_name(c, vpath, V, names[i]);
	sfs_ch_names_free(names, n);
	return ret;
}

int sfs_commit_plan(struct commit *c, const struct sfs_ch_stack *V)
{
	int ret = plan_dir(c, "", V);

	if (ret == 0 && c->u.nidx)
		ret = plan_index(c, "", V);
	if (c->nix)
		qsort(c->ix, c->nix, sizeof(c->ix[0]), ix_cmp);
	c->total += c->nix;
	return ret;
}
