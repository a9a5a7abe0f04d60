/* How a name resolves through the branches of a union (resolve.h): the
 * one place the rules are written, for the daemon, diff, commit and fsck. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/bio.h"
#include "union/names.h"
#include "union/resolve.h"
#include "whiteout/metacopy.h"
#include "whiteout/metadir.h"
#include "whiteout/whiteout.h"

/* One resolution in progress. */
struct res {
	const struct sfs_uview *v;
	struct sfs_uentry *e;
	char *redirect;                /* met, not yet followed */
	unsigned redirect_b;           /* the branch it was met in */
	bool data;                     /* a metacopy's data is looked for */
	char *mc_redirect;             /* the top metacopy file's redirect */
	const char *hit_for;           /* the name hit is of (v->names) */
	struct sfs_unames_hit hit;
};

bool sfs_u_reserved(const char *name, bool at_root)
{
	return sfs_wh_reserved_name(name) || (at_root && !strcmp(name, SFS_METADIR_NAME));
}

static char *join(const char *dir, const char *name)
{
	char *s;

	if (asprintf(&s, "%s%s%s", dir, name[0] ? "/" : "", name) < 0)
		return NULL;
	return s;
}

void sfs_uentry_drop(struct sfs_uentry *e)
{
	for (unsigned i = 0; i < e->n; i++) {
		close(e->l[i].fd);
		free(e->l[i].path);
	}
	e->n = 0;
	free(e->l);
	e->l = NULL;
	e->cap = 0;
	free(e->redirect);
	free(e->lower_path);
	e->redirect = e->lower_path = NULL;
	if (e->metacopy) {
		if (e->data.fd >= 0)
			close(e->data.fd);
		free(e->data.path);
		e->data = (struct sfs_ulayer){ .fd = -1 };
		e->metacopy = false;
	}
}

/* Room in e->l for want layers. 0 or -ENOMEM. */
static int reserve(struct sfs_uentry *e, unsigned want)
{
	unsigned cap = e->cap ? e->cap : 4;
	struct sfs_ulayer *l;

	if (want <= e->cap)
		return 0;
	while (cap < want)
		cap *= 2;
	if (!(l = realloc(e->l, cap * sizeof(*l))))
		return -ENOMEM;
	e->l = l;
	e->cap = cap;
	return 0;
}

/* Takes fd as the next layer, found in branch b at dir_path/name (name
 * NULL: at dir_path itself). */
static int add(struct sfs_uentry *e, unsigned b, int fd, const char *dir_path,
	       const char *name)
{
	char *path = NULL;
	int ret = reserve(e, e->n + 1);

	if (ret == 0 && dir_path && !(path = name ? join(dir_path, name) : strdup(dir_path)))
		ret = -ENOMEM;
	if (ret < 0) {
		close(fd);
		return ret;
	}
	e->l[e->n++] = (struct sfs_ulayer){ .fd = fd, .b = b, .path = path };
	return 0;
}

/* What a directory found says about the branches below it: opaque
 * stops, a redirect sends the search elsewhere. 1 to go on below, 0 to
 * stop, or -errno. */
static int marks(struct res *r, int fd, unsigned b)
{
	struct sfs_uentry *e = r->e;
	struct sfs_dirmark m;
	int ret = sfs_dirmark_read(fd, &m);

	if (ret < 0)
		return ret;
	e->l[e->n - 1].xwh = m.xwhiteouts ? SFS_XWH_SOME : SFS_XWH_NONE;
	if (e->n == 1)
		e->has_origin = m.has_origin;
	if (m.opaque) {
		e->opaque |= e->n == 1;
		sfs_dirmark_free(&m);
		return 0;
	}
	if (!m.redirect)
		return 1;
	if (e->n == 1 && !(e->redirect = strdup(m.redirect))) {
		sfs_dirmark_free(&m);
		return -ENOMEM;
	}
	free(r->redirect);
	r->redirect = m.redirect; /* taken over */
	r->redirect_b = b;
	return 0;
}

/* What a regular file found on top says: a kernel metacopy file has its
 * data below (find_data). 0 (a non-directory stops the search), or
 * -errno. */
static int metacopy_marks(struct res *r, int fd)
{
	struct sfs_metacopy m;
	int ret = sfs_metacopy_read(fd, &m);

	if (ret < 0 || !m.is)
		return ret;
	r->e->metacopy = true;
	r->e->data = (struct sfs_ulayer){ .fd = -1 };
	r->mc_redirect = m.redirect; /* taken over */
	return 0;
}

/* An entry that does not count: an overlay whiteout (a 0:0 device
 * without the device marker, dev_wh; or an xattr whiteout in a layer
 * directory dl marked for them), or a non-directory under a directory. */
static bool stops(const struct sfs_uentry *e, const struct sfs_ulayer *dl, int fd,
		  const struct stat *st, bool dev_wh)
{
	return dev_wh || (e->n > 0 && !S_ISDIR(st->st_mode)) ||
	       (S_ISREG(st->st_mode) && st->st_size == 0 && sfs_u_dir_xwhiteouts(dl->fd, dl->xwh, dl->keep_xwh) &&
		sfs_wh_is_xwhiteout(fd, "", st));
}

/* Whether the directory's name index (if any) says layer dl may list
 * name or its whiteout. */
static bool may_hold(struct res *r, const struct sfs_ulayer *dl, const char *name)
{
	if (!r->v->names)
		return true;
	if (!r->hit_for || strcmp(r->hit_for, name)) {
		r->hit = sfs_unames_find(r->v->names, name);
		r->hit_for = name;
	}
	return sfs_unames_may_hold(r->v->names, r->hit, dl->b);
}

/* Whether layer dl may hold name's ".wh." whiteout; after may_hold
 * (which found the name in the index). */
static bool may_whiteout(const struct res *r, const struct sfs_ulayer *dl, const char *name)
{
	return !r->v->names || !r->hit_for || strcmp(r->hit_for, name) ||
	       sfs_unames_may_whiteout(r->v->names, r->hit, dl->b);
}

/* sfs_wh_has_aufs where the index says it may answer yes. */
static int has_aufs(const struct res *r, const struct sfs_ulayer *dl, const char *name)
{
	return may_whiteout(r, dl, name) ? sfs_wh_has_aufs(dl->fd, name) : 0;
}

/* Looks at one layer: 1 to go on to the layer below, 0 to stop, or
 * -errno. below: the directory has layers below this one. */
static int look(struct res *r, const struct sfs_ulayer *dl, const char *name, bool below)
{
	const struct sfs_uview *v = r->v;
	struct stat st;
	int fd, ret, mark;

	if (!may_hold(r, dl, name))
		return below; /* as when neither opens */
	/* never entering a mount point inside the branch: EXDEV there */
	fd = sfs_do_open(dl->fd, name, O_PATH, 0);
	if (fd == -ENOENT || fd == -ENOTDIR) {
		if (!below)
			return 0;
		ret = has_aufs(r, dl, name);
		return ret < 0 ? ret : !ret;
	}
	if (fd < 0) {
		if (v->met)
			v->met(v->arg, dl, -1, NULL, name, fd);
		return fd;
	}
	ret = sfs_do_fstat(fd, &st);
	/* the device marker read once: none is a whiteout; a damaged one is
	 * neither whiteout nor device (its error) */
	mark = ret == 0 && sfs_wh_is_chr_whiteout(&st) ? sfs_wh_device_mark(fd, "") : 1;
	if (mark < 0)
		ret = mark;
	if (ret == 0 && v->met)
		ret = v->met(v->arg, dl, fd, &st, name, 0);
	if (ret < 0 || stops(r->e, dl, fd, &st, mark == 0)) {
		close(fd);
		return ret < 0 ? ret : 0;
	}
	if (r->e->n == 0)
		r->e->top = st;
	ret = add(r->e, dl->b, fd, dl->path, name);
	if (ret < 0)
		return ret;
	/* a directory of a branch with branches below may have been renamed
	 * there with its lower layers elsewhere (a redirect), even where its
	 * parent has no layers below */
	if (!S_ISDIR(st.st_mode) && r->data && r->e->n == 1 && S_ISREG(st.st_mode) &&
	    dl->b + 1 < v->n)
		return metacopy_marks(r, fd);
	if (!S_ISDIR(st.st_mode) || dl->b + 1 >= v->n)
		return 0;
	/* OCI: a ".wh.NAME" beside the directory NAME in one layer deletes
	 * what the layers below hold; NAME is this layer's alone, as if
	 * opaque (an interrupted rmdir or mkdir leaves the same pair, and
	 * means the same) */
	ret = has_aufs(r, dl, name);
	if (ret != 0) {
		r->e->opaque |= ret > 0 && r->e->n == 1;
		return ret < 0 ? ret : 0;
	}
	ret = marks(r, fd, dl->b);
	return below || ret < 0 ? ret : 0;
}

/* Keeps of the k roots in l those of branches [lo, hi), closing the
 * others; how many are kept. */
static unsigned keep_roots(struct sfs_ulayer *l, unsigned k, unsigned lo, unsigned hi)
{
	unsigned j = 0;

	for (unsigned i = 0; i < k; i++) {
		if (l[i].b >= lo && l[i].b < hi)
			l[j++] = l[i];
		else
			close(l[i].fd);
	}
	return j;
}

/* Resolves absolute path component by component in the union of the
 * branches [lo, hi) below b (whose own whiteouts, opaque directories and
 * redirects count): 0 with *out (out->n 0: nothing there), or -errno. */
static int walk_abs(const struct sfs_uview *dv, unsigned b, unsigned lo, unsigned hi,
		    const char *path, struct sfs_uentry *out)
{
	struct sfs_uview view = *dv, *v = &view;
	struct sfs_uentry *next = calloc(1, sizeof(*next));
	char *copy = strdup(path), *save = NULL, *c;
	bool dir = true;
	int k, ret = next && copy ? 0 : -ENOMEM;

	view.names = NULL; /* the index is of another directory */
	memset(out, 0, sizeof(*out));
	if (ret == 0)
		ret = reserve(out, v->n);
	if (ret == 0 && (k = v->roots_below(v->arg, b, out->l, v->n)) < 0)
		ret = k;
	if (ret == 0) {
		out->n = keep_roots(out->l, (unsigned)k, lo, hi);
		if (v->split && !(out->lower_path = strdup("")))
			ret = -ENOMEM;
	}
	for (c = ret ? NULL : strtok_r(copy, "/", &save); c && ret == 0;
	     c = strtok_r(NULL, "/", &save)) {
		if (!dir) {
			ret = -ENOENT;
			break;
		}
		ret = sfs_u_resolve(v, out->l, out->n, out->lower_path, c, next);
		sfs_uentry_drop(out);
		*out = *next;
		memset(next, 0, sizeof(*next));
		dir = ret == 0 && out->n && S_ISDIR(out->top.st_mode);
	}
	if (ret < 0)
		sfs_uentry_drop(out);
	free(next);
	free(copy);
	return ret;
}

/* The layers at an absolute redirect recorded in branch b. */
static int follow_abs(struct res *r, unsigned b, const char *path)
{
	const struct sfs_uview *v = r->v;
	struct sfs_uentry *cur = calloc(1, sizeof(*cur));
	int ret = cur ? walk_abs(v, b, 0, v->data_from, path, cur) : -ENOMEM;

	if (ret == 0 && (!cur->n || !S_ISDIR(cur->top.st_mode)))
		ret = -ENOENT;
	for (unsigned i = 0; ret == 0 && i < cur->n; i++) {
		int fd = fcntl(cur->l[i].fd, F_DUPFD_CLOEXEC, 0);

		ret = fd < 0 ? -errno : add(r->e, cur->l[i].b, fd, cur->l[i].path, NULL);
	}
	if (ret == 0 && v->split && b < v->split && cur->lower_path) {
		free(r->e->lower_path);
		r->e->lower_path = cur->lower_path;
		cur->lower_path = NULL;
	}
	if (cur)
		sfs_uentry_drop(cur);
	free(cur);
	return ret == -ENOENT ? 0 : ret;
}

static int follow(struct res *r, const struct sfs_ulayer *dir, unsigned ndir, unsigned i,
		  const char *dir_lower_path);

/* A bare-name redirect: the name in the parent's layers below layer i.
 * The directory met there may be a moved one itself, whose redirect
 * says where its own lower layers are: followed in turn, as the kernel
 * does (a chain; each link starts further down, so it ends). */
static int follow_name(struct res *r, const struct sfs_ulayer *dir, unsigned ndir, unsigned i,
		       const char *dir_lower_path, const char *to)
{
	unsigned b = r->redirect_b, j;
	int ret = 1;

	for (j = i + 1; j < ndir && ret > 0; j++)
		ret = look(r, &dir[j], to, j + 1 < ndir);
	if (ret >= 0 && r->v->split && b < r->v->split && dir_lower_path) {
		free(r->e->lower_path);
		if (!(r->e->lower_path = join(dir_lower_path, to)))
			ret = -ENOMEM;
	}
	if (ret >= 0 && r->redirect)
		return follow(r, dir, ndir, j - 1, dir_lower_path);
	free(r->redirect);
	r->redirect = NULL;
	return ret < 0 ? ret : 0;
}

/* Follows the redirect met at layer i of dir. */
static int follow(struct res *r, const struct sfs_ulayer *dir, unsigned ndir, unsigned i,
		  const char *dir_lower_path)
{
	char *to = r->redirect;
	int ret = 0;

	r->redirect = NULL;
	/* (a link of a chain, below the top, leaves it as the top's said) */
	if (r->e->n == 1 && r->e->redirect)
		r->e->redirected = true;
	if (to[0] == '/')
		ret = follow_abs(r, r->redirect_b, to);
	else if (!strchr(to, '/'))
		ret = follow_name(r, dir, ndir, i, dir_lower_path, to);
	free(to);
	return ret;
}

/* Takes the data of what a metacopy's name resolved to below (below, a
 * regular file): its own, or its data when it is a metacopy too. */
static void take_data(struct sfs_uentry *e, struct sfs_uentry *below)
{
	struct sfs_ulayer *from = below->metacopy ? &below->data : &below->l[0];

	e->data = *from;
	e->data_via = below->top;
	from->fd = -1;
	from->path = NULL;
}

/* A metacopy's absolute redirect in the data-only branches, each looked
 * at alone, highest first (kernel overlayfs's data-only layers): the
 * first regular file there is the data. */
static int find_in_data_branches(struct res *r, struct sfs_uentry *below, const char *to)
{
	int ret = 0;

	for (unsigned d = r->v->data_from; ret == 0 && d < r->v->n && r->e->data.fd < 0; d++) {
		sfs_uentry_drop(below);
		ret = walk_abs(r->v, r->e->l[0].b, d, d + 1, to, below);
		if (ret == 0 && below->n && S_ISREG(below->top.st_mode))
			take_data(r->e, below);
		if (ret == -ENOENT) /* a component there is no directory */
			ret = 0;
	}
	return ret;
}

/* The data of the metacopy file found at layer i of dir: the regular
 * file its name, or its redirect (absolute: from the roots of the
 * branches below its own; a bare name: in the parent's layers below),
 * resolves to. Where there is none, data.fd stays -1: its reads fail. */
static int find_data(struct res *r, const struct sfs_ulayer *dir, unsigned ndir, unsigned i,
		     const char *name)
{
	struct sfs_uentry *below = calloc(1, sizeof(*below));
	char *to = r->mc_redirect;
	int ret = below ? 0 : -ENOMEM;

	r->mc_redirect = NULL;
	if (ret == 0 && to && to[0] == '/') {
		ret = walk_abs(r->v, r->e->l[0].b, 0, r->v->data_from, to, below);
		ret = ret == -ENOENT ? 0 : ret; /* a component is no directory */
	} else if (ret == 0 && (!to || !strchr(to, '/')) && i + 1 < ndir)
		ret = sfs_u_resolve(r->v, dir + i + 1, ndir - i - 1, NULL, to ? to : name, below);
	if (ret == 0 && below->n && S_ISREG(below->top.st_mode))
		take_data(r->e, below);
	if (ret >= 0 && r->e->data.fd < 0 && to && to[0] == '/')
		ret = find_in_data_branches(r, below, to);
	if (below)
		sfs_uentry_drop(below);
	free(below);
	free(to);
	return ret == -ENOENT ? 0 : ret;
}

int sfs_u_resolve(const struct sfs_uview *v, const struct sfs_ulayer *dir, unsigned ndir,
		  const char *dir_lower_path, const char *name, struct sfs_uentry *out)
{
	struct res r = { .v = v, .e = out, .data = true };
	unsigned i;
	int ret = 1;

	memset(out, 0, sizeof(*out));
	if (v->split && dir_lower_path && !(out->lower_path = join(dir_lower_path, name)))
		return -ENOMEM;
	for (i = 0; i < ndir && ret > 0; i++)
		ret = look(&r, &dir[i], name, i + 1 < ndir);
	if (ret >= 0 && r.redirect)
		ret = follow(&r, dir, ndir, i - 1, dir_lower_path);
	if (ret >= 0 && out->metacopy)
		ret = find_data(&r, dir, ndir, i - 1, name);
	free(r.redirect);
	free(r.mc_redirect);
	if (ret < 0)
		sfs_uentry_drop(out);
	return ret < 0 ? ret : 0;
}

int sfs_u_shown_below(const struct sfs_uview *v, const struct sfs_ulayer *dir,
		      unsigned ndir, unsigned b, const char *name)
{
	struct sfs_uentry *e = calloc(1, sizeof(*e));
	struct res r = { .v = v, .e = e };
	unsigned i = 0;
	int ret = e ? 1 : -ENOMEM;

	while (i < ndir && dir[i].b <= b)
		i++;
	for (; e && i < ndir && ret > 0; i++)
		ret = look(&r, &dir[i], name, i + 1 < ndir);
	free(r.redirect);
	if (e) {
		ret = ret < 0 ? ret : e->n > 0;
		sfs_uentry_drop(e);
		free(e);
	}
	return ret;
}
