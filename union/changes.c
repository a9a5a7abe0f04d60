/* What a rw branch changes relative to the branches below it (see
 * changes.h): the walk that lists them like `docker diff`, and what
 * counts as a change of a directory's own attributes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bio.h"
#include "union/changes.h"
#include "xattr/xattr.h"

#define MAX_XATTR_LIST (64 * 1024)

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ------------------------------------------------------------ attributes */

/* The sorted list of an entry's non-private xattr names (a NUL-separated
 * buffer) and its length. */
static ssize_t xattr_names(int fd, char **out)
{
	char *buf = NULL, **v = NULL, *res;
	size_t size = 4096, nv = 0, len = 0;
	ssize_t n;

	for (;;) {
		char *b = realloc(buf, size);

		if (!b) {
			free(buf);
			return -ENOMEM;
		}
		buf = b;
		n = sfs_xattr_list(fd, "", buf, size);
		if (n != -ERANGE || size >= MAX_XATTR_LIST * 4)
			break;
		size *= 4;
	}
	if (n == -ENOTSUP || n == -EOPNOTSUPP)
		n = 0;
	if (n < 0) {
		free(buf);
		return n;
	}
	n = (ssize_t)sfs_xattr_filter(buf, (size_t)n);
	v = calloc((size_t)n / 2 + 1, sizeof(*v));
	res = malloc((size_t)n + 1);
	if (!v || !res) {
		free(v);
		free(res);
		free(buf);
		return -ENOMEM;
	}
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
		v[nv++] = buf + i;
	qsort(v, nv, sizeof(*v), name_cmp);
	for (size_t i = 0; i < nv; i++) {
		size_t l = strlen(v[i]) + 1;

		memcpy(res + len, v[i], l);
		len += l;
	}
	free(v);
	free(buf);
	*out = res;
	return (ssize_t)len;
}

static ssize_t xattr_value(int fd, const char *name, char **out)
{
	ssize_t n = sfs_xattr_get(fd, "", name, NULL, 0);
	char *v;

	if (n < 0)
		return n;
	v = malloc((size_t)n + 1);
	if (!v)
		return -ENOMEM;
	n = sfs_xattr_get(fd, "", name, v, (size_t)n);
	if (n < 0) {
		free(v);
		return n;
	}
	*out = v;
	return n;
}

int sfs_ch_dir_meta_differs(int fd_a, int fd_b)
{
	struct stat a, b;
	char *na = NULL, *nb = NULL;
	ssize_t la, lb;
	int ret;

	if (sfs_do_statx(fd_a, &a, NULL) < 0 || sfs_do_statx(fd_b, &b, NULL) < 0)
		return -errno;
	if (a.st_mode != b.st_mode || a.st_uid != b.st_uid || a.st_gid != b.st_gid)
		return 1;
	la = xattr_names(fd_a, &na);
	lb = la < 0 ? 0 : xattr_names(fd_b, &nb);
	if (la < 0 || lb < 0) {
		free(na);
		return (int)(la < 0 ? la : lb);
	}
	ret = la != lb || memcmp(na, nb, (size_t)la);
	for (ssize_t i = 0; !ret && i < la; i += (ssize_t)strlen(na + i) + 1) {
		char *va = NULL, *vb = NULL;
		ssize_t x = xattr_value(fd_a, na + i, &va);
		ssize_t y = x < 0 ? 0 : xattr_value(fd_b, na + i, &vb);

		if (x < 0 || y < 0)
			ret = 1; /* vanished meanwhile, or unreadable: say changed */
		else
			ret = x != y || memcmp(va, vb, (size_t)x);
		free(va);
		free(vb);
	}
	free(na);
	free(nb);
	return ret;
}

/* ------------------------------------------------------------ the diff */

struct walk {
	struct sfs_ch_union *u;
	const struct sfs_changes_opts *o;
	struct sfs_changes *out;
	int err;                  /* first fatal error (ENOMEM) */
	bool problems;            /* an entry could not be read */
};

static unsigned char dtype_of(mode_t m)
{
	return (unsigned char)IFTODT(m);
}

static void problem(struct walk *w, const char *path, int err)
{
	w->problems = true;
	if (w->o && w->o->problem)
		w->o->problem(w->o->arg, path[0] ? path : "/", err);
}

static void emit(struct walk *w, const char *path, char kind, const char *from,
		 mode_t mode)
{
	struct sfs_changes *c = w->out;
	struct sfs_ch_change *e;

	if (w->err)
		return;
	if (c->n == c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 64;
		struct sfs_ch_change *v = realloc(c->v, nc * sizeof(*v));

		if (!v) {
			w->err = -ENOMEM;
			return;
		}
		c->v = v;
		c->cap = nc;
	}
	e = &c->v[c->n];
	e->path = strdup(path[0] ? path : "/");
	e->from = from ? strdup(from) : NULL;
	e->kind = kind;
	e->type = dtype_of(mode);
	if (!e->path || (from && !e->from)) {
		free(e->path);
		free(e->from);
		w->err = -ENOMEM;
		return;
	}
	c->n++;
	if (kind == SFS_CH_ADDED)
		c->added++;
	else if (kind == SFS_CH_CHANGED)
		c->changed++;
	else
		c->deleted++;
}

/* Where a moved directory came from, as the daemon records it: the path
 * of its highest lower layer. */
static const char *moved_from(const struct sfs_ch_stack *vc)
{
	return vc->redirected && vc->n > 1 ? vc->l[1].path : NULL;
}

/* Merges two sorted name lists into *out (the strings stay owned by a
 * and b). */
static int names_merge(char **a, size_t na, char **b, size_t nb, char ***out, size_t *n)
{
	char **v = malloc((na + nb + 1) * sizeof(*v));
	size_t i = 0, j = 0, k = 0;

	if (!v)
		return -ENOMEM;
	while (i < na || j < nb) {
		int c = i >= na ? 1 : j >= nb ? -1 : strcmp(a[i], b[j]);

		if (c <= 0)
			v[k++] = a[i++];
		else
			v[k++] = b[j++];
		if (c == 0)
			j++;
	}
	*out = v;
	*n = k;
	return 0;
}

static void diff_dir(struct walk *w, const char *vpath, const struct sfs_ch_stack *V,
		     const struct sfs_ch_stack *C);

/* One name of a directory of the view. */
static void diff_entry(struct walk *w, const char *path, const struct sfs_ch_stack *V,
		       const struct sfs_ch_stack *C, const char *name)
{
	struct sfs_ch_stack *vc = NULL, *cc = NULL, *sub = NULL;
	const struct sfs_ch_stack *child_c = NULL;
	bool vdir;
	int ret;

	w->out->visited++;
	if (w->o && w->o->progress)
		w->o->progress(w->o->arg, w->out->visited, path);
	ret = sfs_ch_lookup(w->u, V, name, true, &vc);
	if (ret < 0 && ret != -ENOENT) {
		problem(w, path, -ret);
		return;
	}
	if (C) {
		ret = sfs_ch_lookup(w->u, C, name, false, &cc);
		if (ret < 0 && ret != -ENOENT) {
			problem(w, path, -ret);
			goto out;
		}
	}
	if (!vc) {
		if (cc)
			emit(w, path, SFS_CH_DELETED, NULL, cc->top.st_mode);
		goto out;
	}
	vdir = S_ISDIR(vc->top.st_mode);
	if (vc->l[0].b != 0) {
		/* shown by the branches below: changed only when it is the
		 * index's copy of a lower file with several names */
		if (vc->indexed || !cc)
			emit(w, path, cc ? SFS_CH_CHANGED : SFS_CH_ADDED, NULL, vc->top.st_mode);
		if (vdir && w->u->nidx && (!cc || S_ISDIR(cc->top.st_mode)))
			diff_dir(w, path, vc, cc);
		goto out;
	}
	if (!vdir) {
		emit(w, path, cc ? SFS_CH_CHANGED : SFS_CH_ADDED, NULL, vc->top.st_mode);
		goto out;
	}
	/* a directory of the rw branch */
	if (vc->redirected) {
		ret = sfs_ch_stack_from(vc, 1, &sub);
		if (ret < 0) {
			problem(w, path, -ret);
			goto out;
		}
		child_c = sub->n ? sub : NULL;
	} else if (cc && S_ISDIR(cc->top.st_mode)) {
		child_c = cc;
	}
	if (!cc) {
		emit(w, path, SFS_CH_ADDED, moved_from(vc), vc->top.st_mode);
	} else if (!S_ISDIR(cc->top.st_mode) || vc->redirected || vc->opaque) {
		emit(w, path, SFS_CH_CHANGED, moved_from(vc), vc->top.st_mode);
	} else {
		ret = sfs_ch_dir_meta_differs(vc->l[0].fd, cc->l[0].fd);
		if (ret < 0)
			problem(w, path, -ret);
		else if (ret)
			emit(w, path, SFS_CH_CHANGED, NULL, vc->top.st_mode);
	}
	diff_dir(w, path, vc, child_c);
out:
	sfs_ch_stack_free(sub);
	sfs_ch_stack_free(vc);
	sfs_ch_stack_free(cc);
}

/* The names of a directory of the view (V) and of the same directory in
 * what it is compared with (C, NULL when nothing). */
static void diff_dir(struct walk *w, const char *vpath, const struct sfs_ch_stack *V,
		     const struct sfs_ch_stack *C)
{
	char **vn = NULL, **cn = NULL, **all = NULL;
	size_t nv = 0, nc = 0, n = 0;
	int ret = sfs_ch_names(w->u, V, &vn, &nv);

	if (ret == 0 && C)
		ret = sfs_ch_names(w->u, C, &cn, &nc);
	if (ret == 0)
		ret = names_merge(vn, nv, cn, nc, &all, &n);
	if (ret < 0) {
		if (ret == -ENOMEM)
			w->err = ret;
		else
			problem(w, vpath, -ret);
	}
	for (size_t i = 0; ret == 0 && !w->err && i < n; i++) {
		char *path = sfs_ch_join(vpath[0] ? vpath : "/", all[i]);

		if (!path) {
			w->err = -ENOMEM;
			break;
		}
		diff_entry(w, path, V, C, all[i]);
		free(path);
	}
	free(all);
	sfs_ch_names_free(vn, nv);
	sfs_ch_names_free(cn, nc);
}

static int change_cmp(const void *a, const void *b)
{
	return strcmp(((const struct sfs_ch_change *)a)->path, ((const struct sfs_ch_change *)b)->path);
}

int sfs_changes_list(struct sfs_ch_union *u, const struct sfs_changes_opts *o,
		     struct sfs_changes *out)
{
	struct walk w = { .u = u, .o = o, .out = out };
	struct sfs_ch_stack *V = NULL, *C = NULL, *cmp = NULL;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = sfs_ch_root(u, 0, &V);
	if (ret == 0 && u->n > 1)
		ret = sfs_ch_root(u, 1, &C);
	if (ret < 0)
		goto out;
	cmp = C;
	if (C) {
		/* the root itself: its attributes, or all below replaced */
		int d = V->opaque ? 1 : sfs_ch_dir_meta_differs(V->l[0].fd, C->l[0].fd);

		if (d < 0)
			problem(&w, "/", -d);
		else if (d)
			emit(&w, "/", SFS_CH_CHANGED, NULL, V->top.st_mode);
	}
	diff_dir(&w, "", V, cmp);
	ret = w.err;
	if (ret == 0 && w.problems)
		ret = -EIO;
	if (out->n)
		qsort(out->v, out->n, sizeof(out->v[0]), change_cmp);
out:
	sfs_ch_stack_free(V);
	sfs_ch_stack_free(C);
	if (ret == -ENOMEM) {
		sfs_changes_free(out);
		memset(out, 0, sizeof(*out));
	}
	return ret;
}

void sfs_changes_free(struct sfs_changes *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->v[i].path);
		free(c->v[i].from);
	}
	free(c->v);
	c->v = NULL;
	c->n = c->cap = 0;
}
