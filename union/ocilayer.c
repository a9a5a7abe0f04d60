/* Which entries the OCI layer of a rw branch holds, and in what order
 * (ocilayer.h); ocientry.c writes each. The changes (changes.c) are
 * walked as a tree, each directory of the view met once, top-down:
 *
 *  - a directory: its entry, then in it the whiteouts of what it lost
 *    (".wh.NAME", before their siblings, as the spec asks), then its
 *    entries by name (bytes), each directory's content right after it;
 *    so every parent comes before its entries and the same changes give
 *    the same archive;
 *  - a deleted name: its whiteout (a deleted directory: one whiteout);
 *  - an added or changed entry: itself, with its content; a directory
 *    that merely contains changes: its entry, then those changes;
 *  - a directory of the rw branch that hides what is below it (opaque,
 *    or a moved one, whose layers below come from its old place):
 *    ".wh..wh..opq" when the branches below have that name, then all of
 *    its content as the view shows it (OCI has no rename, and an opaque
 *    directory's changes are listed against its path below, not against
 *    what it now holds).
 *
 * The first error stops the layer. See docs/diff-commit.md "The OCI layer". */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "union/oci_int.h"

/* ------------------------------------------------------------ order */

/* Paths in walk order: by components, so '/' sorts before any byte
 * ("/a/b" before "/a b") and a directory's entries follow it together. */
static int walk_cmp(const void *a, const void *b)
{
	const unsigned char *x = (const unsigned char *)(*(struct sfs_ch_change *const *)a)->path;
	const unsigned char *y = (const unsigned char *)(*(struct sfs_ch_change *const *)b)->path;

	for (; *x == *y; x++, y++)
		if (!*x)
			return 0;
	if (!*x || !*y)
		return !*x ? -1 : 1;
	if (*x == '/' || *y == '/')
		return *x == '/' ? -1 : 1;
	return *x < *y ? -1 : 1;
}

/* The changes under one directory of the view, in walk order: each
 * group holds one entry of it (the change of the entry itself first,
 * when there is one) and the changes below that entry. */
struct group {
	char *name;                    /* the entry's name */
	struct sfs_ch_change *self;    /* its own change, or NULL */
	struct sfs_ch_change **below;  /* the changes below it */
	size_t nbelow;
};

/* The group starting at v[i] of the changes v[0..n) under the directory
 * whose path has plen bytes; returns where the next one starts. */
static size_t group_at(struct sfs_ch_change **v, size_t n, size_t i, size_t plen,
		       struct group *g)
{
	const char *name = v[i]->path + plen + 1;
	size_t nlen = strcspn(name, "/"), j = i + 1;

	while (j < n && !strncmp(v[j]->path + plen + 1, name, nlen) &&
	       (v[j]->path[plen + 1 + nlen] == '/' || !v[j]->path[plen + 1 + nlen]))
		j++;
	g->name = strndup(name, nlen);
	g->self = name[nlen] ? NULL : v[i];
	g->below = v + i + (g->self != NULL);
	g->nbelow = j - i - (g->self != NULL);
	return j;
}

/* ------------------------------------------------------------ the walk */

/* A directory of the rw branch that shows nothing of what the branches
 * below have at its path. */
static bool hides_below(const struct sfs_ch_stack *c)
{
	return S_ISDIR(c->top.st_mode) && c->n && c->l[0].b == 0 && (c->opaque || c->redirected);
}

static int layer_dir(struct sfs_oci *w, const char *vpath, const struct sfs_ch_stack *V,
		     struct sfs_ch_change **v, size_t n);

/* All the content of directory V at vpath, as the view shows it. */
static int layer_all(struct sfs_oci *w, const char *vpath, const struct sfs_ch_stack *V)
{
	char **names = NULL;
	size_t n = 0;
	int ret = sfs_ch_names(w->u, V, &names, &n);

	if (ret < 0)
		sfs_oci_fail(w, vpath, ret, NULL);
	for (size_t i = 0; ret == 0 && i < n; i++) {
		char *path = sfs_ch_join(vpath[0] ? vpath : "/", names[i]);
		struct sfs_ch_stack *c = NULL;

		ret = path ? sfs_ch_lookup(w->u, V, names[i], true, &c) : -ENOMEM;
		if (ret == -ENOENT) {
			ret = 0; /* a lower name the view hides */
		} else if (ret < 0) {
			sfs_oci_fail(w, path ? path : vpath, ret, NULL);
		} else {
			ret = sfs_oci_entry(w, path, V, names[i], c);
			if (ret == 0 && S_ISDIR(c->top.st_mode))
				ret = layer_all(w, path, c);
		}
		sfs_ch_stack_free(c);
		free(path);
	}
	sfs_ch_names_free(names, n);
	return ret;
}

/* A directory that is itself added or changed: all of it when it hides
 * what is below, else its changes. */
static int layer_changed_dir(struct sfs_oci *w, const char *path, const struct sfs_ch_stack *c,
			     const struct group *g)
{
	int ret = 0;

	if (!hides_below(c))
		return layer_dir(w, path, c, g->below, g->nbelow);
	if (g->self->kind == SFS_CH_CHANGED) /* the branches below have the name */
		ret = sfs_oci_opaque(w, path);
	return ret ? ret : layer_all(w, path, c);
}

/* The entry of group g in directory V at vpath, and what is below it. */
static int layer_entry(struct sfs_oci *w, const char *vpath, const struct sfs_ch_stack *V,
		       const struct group *g)
{
	char *path = sfs_ch_join(vpath[0] ? vpath : "/", g->name);
	struct sfs_ch_stack *c = NULL;
	int ret = path ? sfs_ch_lookup(w->u, V, g->name, true, &c) : -ENOMEM;

	if (ret < 0) {
		/* listed a moment ago: the branch changed meanwhile */
		sfs_oci_fail(w, path ? path : vpath, ret, ret == -ENOENT ?
			     "listed as a change, no longer in the view" : NULL);
		goto out;
	}
	ret = sfs_oci_entry(w, path, V, g->name, c);
	if (ret < 0 || !S_ISDIR(c->top.st_mode))
		goto out;
	if (g->self)
		ret = layer_changed_dir(w, path, c, g);
	else /* a parent of changes */
		ret = layer_dir(w, path, c, g->below, g->nbelow);
out:
	sfs_ch_stack_free(c);
	free(path);
	return ret;
}

/* The changes v[0..n) under directory V at vpath ("" for the root):
 * first the whiteouts, then the entries. */
static int layer_dir(struct sfs_oci *w, const char *vpath, const struct sfs_ch_stack *V,
		     struct sfs_ch_change **v, size_t n)
{
	size_t plen = strlen(vpath);
	int ret = 0;

	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; ret == 0 && i < n;) {
			struct group g;
			bool deleted;

			i = group_at(v, n, i, plen, &g);
			if (!g.name) {
				ret = sfs_oci_fail(w, vpath, -ENOMEM, NULL);
				break;
			}
			deleted = g.self && g.self->kind == SFS_CH_DELETED;
			if (pass == 0 && deleted)
				ret = sfs_oci_whiteout(w, vpath, g.name);
			else if (pass == 1 && !deleted)
				ret = layer_entry(w, vpath, V, &g);
			free(g.name);
		}
	}
	return ret;
}

/* The root: its own entry when it changed; all of it when it is opaque
 * over branches below. v[0..n) in walk order. */
static int layer_root(struct sfs_oci *w, struct sfs_ch_change **v, size_t n)
{
	struct sfs_ch_stack *V = NULL;
	bool changed = n && !strcmp(v[0]->path, "/");
	int ret = sfs_ch_root(w->u, 0, &V);

	if (ret < 0)
		return sfs_oci_fail(w, "/", ret, NULL);
	if (changed)
		ret = sfs_oci_entry(w, "/", NULL, "", V);
	if (ret == 0 && changed && V->opaque && w->u->n > 1) {
		ret = sfs_oci_opaque(w, "");
		if (ret == 0)
			ret = layer_all(w, "", V);
	} else if (ret == 0) {
		ret = layer_dir(w, "", V, v + changed, n - changed);
	}
	sfs_ch_stack_free(V);
	return ret;
}

int sfs_oci_write(struct sfs_ch_union *u, const struct sfs_changes *c, int fd,
		  const struct sfs_oci_opts *o, struct sfs_oci_stats *stats)
{
	struct sfs_oci *w = calloc(1, sizeof(*w));
	struct sfs_ch_change **v = calloc(c->n ? c->n : 1, sizeof(*v));
	int ret = 0;

	memset(stats, 0, sizeof(*stats));
	if (!w || !v) {
		free(w);
		free(v);
		return -ENOMEM;
	}
	w->u = u;
	w->o = o;
	w->stats = stats;
	sfs_tar_init(&w->tar, fd);
	for (size_t i = 0; i < c->n; i++)
		v[i] = &c->v[i];
	qsort(v, c->n, sizeof(*v), walk_cmp);
	ret = layer_root(w, v, c->n);
	if (ret == 0)
		ret = sfs_tar_finish(&w->tar);
	if (ret < 0) {
		sfs_oci_fail(w, NULL, ret, NULL);
		sfs_tar_abandon(&w->tar);
	}
	stats->bytes = w->tar.written;
	sfs_oci_links_free(w);
	free(v);
	free(w);
	return ret;
}
