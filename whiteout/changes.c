/* What a rw branch changes relative to the branches below it (see
 * changes.h). The lookup is a port of the daemon's (stackfs/lookup.c) to
 * plain branch directories: in branch order from the highest, a whiteout
 * ends the search, the first entry wins, a non-directory stands alone, a
 * directory merges with the directories below until one is opaque or
 * redirected (then its lower layers are looked up at the redirect). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/bio.h"
#include "whiteout/changes.h"
#include "whiteout/metadir.h"
#include "whiteout/origin.h"
#include "whiteout/whiteout.h"
#include "xattr/xattr.h"

#define MAX_XATTR_LIST (64 * 1024)

/* ------------------------------------------------------------ helpers */

char *sfs_ch_join(const char *dir, const char *name)
{
	size_t dl = strlen(dir), nl = strlen(name);
	char *s;

	if (dl == 1 && dir[0] == '/')
		dl = 0;
	s = malloc(dl + nl + 2);
	if (!s)
		return NULL;
	memcpy(s, dir, dl);
	s[dl] = '/';
	memcpy(s + dl + 1, name, nl + 1);
	return s;
}

/* stat of an O_PATH fd (any type, a symlink itself), with the id of the
 * mount it is on. */
static int ch_stat(int fd, struct stat *st, uint64_t *mnt)
{
	return sfs_do_statx(fd, st, mnt);
}

static bool reserved_at(const char *layer_path, const char *name)
{
	if (sfs_wh_reserved_name(name))
		return true;
	return !layer_path[0] && strcmp(name, SFS_METADIR_NAME) == 0;
}

static int names_push(char ***v, size_t *n, size_t *cap, const char *s);

/* ------------------------------------------------------------ stacks */

static struct sfs_ch_stack *stack_alloc(unsigned n)
{
	struct sfs_ch_stack *st = calloc(1, sizeof(*st) + n * sizeof(st->l[0]));

	if (st)
		st->index_fd = -1;
	return st;
}

void sfs_ch_stack_free(struct sfs_ch_stack *st)
{
	if (!st)
		return;
	for (unsigned i = 0; i < st->n; i++) {
		if (st->l[i].fd >= 0)
			close(st->l[i].fd);
		free(st->l[i].path);
	}
	if (st->index_fd >= 0)
		close(st->index_fd);
	free(st->redirect);
	free(st->dpath);
	free(st);
}

int sfs_ch_stack_make(const struct sfs_ch_layer *l, unsigned n, const char *dpath,
		      struct sfs_ch_stack **out)
{
	struct sfs_ch_stack *st = stack_alloc(n);
	int ret = st ? 0 : -ENOMEM;

	for (unsigned i = 0; ret == 0 && i < n; i++) {
		st->l[i].b = l[i].b;
		st->l[i].fd = fcntl(l[i].fd, F_DUPFD_CLOEXEC, 0);
		st->l[i].path = strdup(l[i].path);
		st->n++;
		if (st->l[i].fd < 0)
			ret = -errno;
		else if (!st->l[i].path)
			ret = -ENOMEM;
	}
	if (ret == 0 && dpath && !(st->dpath = strdup(dpath)))
		ret = -ENOMEM;
	if (ret == 0 && n > 0)
		ret = ch_stat(st->l[0].fd, &st->top, NULL);
	if (ret < 0) {
		sfs_ch_stack_free(st);
		return ret;
	}
	*out = st;
	return 0;
}

int sfs_ch_stack_from(const struct sfs_ch_stack *st, unsigned from,
		      struct sfs_ch_stack **out)
{
	unsigned i = 0;

	while (i < st->n && st->l[i].b < from)
		i++;
	return sfs_ch_stack_make(st->l + i, st->n - i, st->dpath, out);
}

const struct sfs_ch_layer *sfs_ch_stack_in(const struct sfs_ch_stack *st, unsigned b)
{
	for (unsigned i = 0; st && i < st->n; i++)
		if (st->l[i].b == b)
			return &st->l[i];
	return NULL;
}

bool sfs_ch_same_layers(const struct sfs_ch_stack *a, const struct sfs_ch_stack *b,
			unsigned from)
{
	unsigned i = 0, j = 0;

	while (a && i < a->n && a->l[i].b < from)
		i++;
	while (b && j < b->n && b->l[j].b < from)
		j++;
	for (;;) {
		struct stat sa, sb;
		bool ea = !a || i >= a->n, eb = !b || j >= b->n;

		if (ea || eb)
			return ea && eb;
		if (a->l[i].b != b->l[j].b || ch_stat(a->l[i].fd, &sa, NULL) < 0 ||
		    ch_stat(b->l[j].fd, &sb, NULL) < 0 || sa.st_dev != sb.st_dev ||
		    sa.st_ino != sb.st_ino)
			return false;
		i++;
		j++;
	}
}

/* ------------------------------------------------------------ branches */

static int idx_cmp(const void *a, const void *b)
{
	const struct sfs_ch_index *x = a, *y = b;

	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return 0;
}

/* b[0]'s index: every entry with an origin record, sorted by lower inode
 * number. No index (never mounted, or no .stackfs) is an empty one. */
static int index_load(struct sfs_ch_union *u)
{
	int meta = sfs_do_open(u->b[0].root_fd, SFS_METADIR_NAME, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	struct dirent *e;
	DIR *d;
	int fd, ret = 0;

	if (meta < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	u->index_fd = sfs_do_open(meta, SFS_META_INDEX, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	close(meta);
	if (u->index_fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	fd = sfs_do_open(u->index_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		return ret;
	}
	while (ret == 0 && (e = readdir(d))) {
		struct sfs_origin o;
		struct sfs_ch_index *v;

		if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(v->name))
			continue;
		if (sfs_origin_get(u->index_fd, e->d_name, &o) != 1)
			continue;
		v = realloc(u->idx, (u->nidx + 1) * sizeof(*v));
		if (!v) {
			ret = -ENOMEM;
			break;
		}
		u->idx = v;
		v += u->nidx++;
		memset(v, 0, sizeof(*v));
		memcpy(v->fs_uuid, o.fs_uuid, 16);
		v->dev = o.dev;
		v->ino = o.ino;
		memcpy(v->name, e->d_name, strlen(e->d_name) + 1); /* < 32, checked above */
	}
	closedir(d);
	if (u->nidx)
		qsort(u->idx, u->nidx, sizeof(u->idx[0]), idx_cmp);
	return ret;
}

int sfs_ch_union_open(struct sfs_ch_union *u, const char *const *paths, unsigned n,
		      char *err, size_t errlen)
{
	int ret = 0;

	memset(u, 0, sizeof(*u));
	u->index_fd = -1;
	u->b = calloc(n ? n : 1, sizeof(*u->b));
	if (!u->b) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	for (unsigned i = 0; i < n; i++)
		u->b[i].root_fd = -1;
	u->n = n;
	for (unsigned i = 0; i < n; i++) {
		struct sfs_ch_branch *b = &u->b[i];
		struct stat st;

		b->path = strdup(paths[i]);
		b->root_fd = open(paths[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (!b->path) {
			ret = -ENOMEM;
		} else if (b->root_fd < 0 || ch_stat(b->root_fd, &st, &b->mnt_id) < 0) {
			ret = -errno;
			snprintf(err, errlen, "%s: %s", paths[i], strerror(errno));
			goto fail;
		}
		if (ret < 0)
			break;
		b->dev = st.st_dev;
		b->ino = st.st_ino;
		if (sfs_fs_uuid(b->root_fd, b->fs_uuid) < 0)
			memset(b->fs_uuid, 0, 16);
		for (unsigned j = 0; j < i; j++) {
			if (u->b[j].dev == b->dev && u->b[j].ino == b->ino) {
				ret = -EINVAL;
				snprintf(err, errlen, "%s: the same directory as %s", paths[i],
					 paths[j]);
				goto fail;
			}
		}
	}
	if (ret == 0 && n > 1) {
		ret = index_load(u);
		if (ret < 0) {
			snprintf(err, errlen, "%s/%s/%s: %s", paths[0], SFS_METADIR_NAME,
				 SFS_META_INDEX, strerror(-ret));
			goto fail;
		}
	}
	if (ret == 0)
		return 0;
	snprintf(err, errlen, "%s", strerror(-ret));
fail:
	sfs_ch_union_close(u);
	return ret;
}

void sfs_ch_union_close(struct sfs_ch_union *u)
{
	for (unsigned i = 0; u->b && i < u->n; i++) {
		if (u->b[i].root_fd >= 0)
			close(u->b[i].root_fd);
		free(u->b[i].path);
	}
	free(u->b);
	if (u->index_fd >= 0)
		close(u->index_fd);
	free(u->idx);
	memset(u, 0, sizeof(*u));
	u->index_fd = -1;
}

int sfs_ch_lowers_below(int root_fd, char ***paths, size_t *n, char *err, size_t errlen)
{
	struct sfs_lower *v = NULL;
	struct stat root, st;
	size_t nv = 0, cap = 0, cnt = 0, i;
	char **out = NULL;
	int ret, meta;

	*paths = NULL;
	*n = 0;
	if (fstat(root_fd, &root) < 0) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -errno;
	}
	meta = sfs_do_open(root_fd, SFS_METADIR_NAME, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (meta < 0) {
		ret = errno == ENOTDIR ? -ENOENT : -errno;
		snprintf(err, errlen, "%s/%s: %s", SFS_METADIR_NAME, SFS_META_LOWERS,
			 strerror(-ret));
		return ret;
	}
	ret = sfs_meta_read_lowers(meta, &v, &nv, err, errlen);
	close(meta);
	if (ret < 0)
		return ret;
	for (i = 0; i < nv; i++)
		if (stat(v[i].path, &st) == 0 && st.st_dev == root.st_dev &&
		    st.st_ino == root.st_ino)
			break;
	if (i == nv) {
		snprintf(err, errlen, "%s/%s does not list this branch (moved since its last mount?)",
			 SFS_METADIR_NAME, SFS_META_LOWERS);
		ret = -ESRCH;
	}
	for (i++; ret == 0 && i < nv; i++) {
		ret = names_push(&out, &cnt, &cap, v[i].path);
		if (ret < 0)
			snprintf(err, errlen, "%s", strerror(-ret));
	}
	sfs_lowers_free(v, nv);
	if (ret < 0) {
		sfs_ch_names_free(out, cnt);
		return ret;
	}
	*paths = out;
	*n = cnt;
	return 0;
}

/* ------------------------------------------------------------ lookup */

/* One resolution, filled layer by layer (as struct resolve of the
 * daemon). */
struct res {
	struct sfs_ch_union *u;
	struct sfs_ch_layer *l;
	unsigned n;
	struct stat top;
	bool opaque, redirected;
	char *redirect;           /* met, not yet followed */
	unsigned redirect_b;      /* the branch it was met in */
	char *top_redirect;       /* the redirect of the top layer */
	char *dpath;
};

static void res_drop(struct res *r)
{
	for (unsigned i = 0; i < r->n; i++) {
		close(r->l[i].fd);
		free(r->l[i].path);
	}
	free(r->l);
	free(r->redirect);
	free(r->top_redirect);
	free(r->dpath);
}

static int res_add(struct res *r, unsigned b, int fd, const char *dir_path,
		   const char *name)
{
	char *path = name ? sfs_ch_join(dir_path, name) : strdup(dir_path);

	if (!path) {
		close(fd);
		return -ENOMEM;
	}
	r->l[r->n].b = b;
	r->l[r->n].fd = fd;
	r->l[r->n].path = path;
	r->n++;
	return 0;
}

/* Looks at one layer: 1 to go on to the layer below, 0 to stop, or
 * -errno. `below`: the directory has layers below this one. */
static int res_layer(struct res *r, const struct sfs_ch_layer *dl, const char *name,
		     bool below)
{
	struct sfs_dirmark m;
	struct stat st;
	uint64_t mnt;
	/* never entering a mount point inside the branch: EXDEV there */
	int fd = sfs_do_open(dl->fd, name, O_PATH, 0), ret;

	if (fd < 0) {
		if (fd != -ENOENT && fd != -ENOTDIR)
			return fd;
		if (!below)
			return 0;
		ret = sfs_wh_has_aufs(dl->fd, name);
		return ret < 0 ? ret : !ret;
	}
	ret = ch_stat(fd, &st, &mnt);
	if (ret == 0 && mnt != r->u->b[dl->b].mnt_id)
		ret = -EXDEV; /* a mount point inside the branch */
	if (ret < 0 || sfs_wh_is_dev_whiteout(fd, "", &st) || (r->n > 0 && !S_ISDIR(st.st_mode)) ||
	    r->n >= r->u->n) {
		close(fd);
		return ret < 0 ? ret : 0;
	}
	if (r->n == 0)
		r->top = st;
	ret = res_add(r, dl->b, fd, dl->path, name);
	if (ret < 0)
		return ret;
	if (!S_ISDIR(st.st_mode) || dl->b + 1 >= r->u->n)
		return 0;
	ret = sfs_dirmark_read(fd, &m);
	if (ret < 0)
		return ret;
	if (m.opaque) {
		if (r->n == 1)
			r->opaque = true;
		sfs_dirmark_free(&m);
		return 0;
	}
	if (m.redirect) {
		r->redirect = m.redirect;
		r->redirect_b = dl->b;
		if (r->n == 1 && !(r->top_redirect = strdup(m.redirect)))
			return -ENOMEM;
		return 0;
	}
	return below ? 1 : 0;
}

static int roots_below(struct sfs_ch_union *u, unsigned b, struct sfs_ch_stack **out)
{
	struct sfs_ch_stack *st = stack_alloc(u->n);

	if (!st)
		return -ENOMEM;
	for (unsigned i = b + 1; i < u->n; i++) {
		st->l[st->n].b = i;
		st->l[st->n].path = strdup("");
		st->l[st->n].fd = fcntl(u->b[i].root_fd, F_DUPFD_CLOEXEC, 0);
		st->n++;
		if (st->l[st->n - 1].fd < 0 || !st->l[st->n - 1].path) {
			sfs_ch_stack_free(st);
			return -ENOMEM;
		}
	}
	if (u->split && !(st->dpath = strdup(""))) {
		sfs_ch_stack_free(st);
		return -ENOMEM;
	}
	if (st->n)
		ch_stat(st->l[0].fd, &st->top, NULL);
	*out = st;
	return 0;
}

/* The layers at an absolute redirect: a lookup of the path, component by
 * component, in the union of the branches below branch b. */
static int res_abs(struct res *r, unsigned b, const char *path)
{
	struct sfs_ch_stack *st = NULL, *next;
	char *copy = strdup(path), *save = NULL, *c;
	int ret = copy ? roots_below(r->u, b, &st) : -ENOMEM;

	for (c = ret ? NULL : strtok_r(copy, "/", &save); c && ret == 0;
	     c = strtok_r(NULL, "/", &save)) {
		ret = sfs_ch_lookup(r->u, st, c, false, &next);
		if (ret == 0) {
			sfs_ch_stack_free(st);
			st = next;
			ret = S_ISDIR(st->top.st_mode) ? 0 : -ENOENT;
		}
	}
	for (unsigned i = 0; ret == 0 && i < st->n && r->n < r->u->n; i++) {
		int fd = fcntl(st->l[i].fd, F_DUPFD_CLOEXEC, 0);

		ret = fd < 0 ? -errno : res_add(r, st->l[i].b, fd, st->l[i].path, NULL);
	}
	if (ret == 0 && r->u->split && r->redirect_b < r->u->split && st->dpath) {
		free(r->dpath);
		r->dpath = strdup(st->dpath);
		if (!r->dpath)
			ret = -ENOMEM;
	}
	sfs_ch_stack_free(st);
	free(copy);
	return ret == -ENOENT ? 0 : ret;
}

/* Follows a redirect met at layer i of dst: an absolute one from the
 * roots of the branches below, a bare name in the layers of dst below. */
static int res_redirect(struct res *r, const struct sfs_ch_stack *dst, unsigned i)
{
	char *to = r->redirect;
	int ret = 0;

	r->redirect = NULL;
	if (r->n == 1 && r->top_redirect)
		r->redirected = true;
	if (to[0] == '/') {
		ret = res_abs(r, r->redirect_b, to);
	} else if (!strchr(to, '/')) {
		ret = 1;
		for (unsigned j = i + 1; j < dst->n && ret > 0; j++)
			ret = res_layer(r, &dst->l[j], to, j + 1 < dst->n);
		if (ret >= 0 && r->u->split && r->redirect_b < r->u->split && dst->dpath) {
			free(r->dpath);
			r->dpath = sfs_ch_join(dst->dpath, to);
			if (!r->dpath)
				ret = -ENOMEM;
		}
		/* a redirect met in there is not followed (as the daemon) */
		free(r->redirect);
		r->redirect = NULL;
	}
	free(to);
	return ret < 0 ? ret : 0;
}

static const struct sfs_ch_index *index_find(const struct sfs_ch_union *u, unsigned b,
					     uint64_t ino)
{
	struct sfs_ch_index key = { .ino = ino };
	const struct sfs_ch_index *e = bsearch(&key, u->idx, u->nidx, sizeof(key), idx_cmp);

	if (!e)
		return NULL;
	/* entries of one inode number are adjacent: go to the first */
	while (e > u->idx && e[-1].ino == ino)
		e--;
	for (; e < u->idx + u->nidx && e->ino == ino; e++) {
		static const uint8_t zero[16];

		if (memcmp(e->fs_uuid, zero, 16) ? !memcmp(e->fs_uuid, u->b[b].fs_uuid, 16)
						 : e->dev == (uint64_t)u->b[b].dev)
			return e;
	}
	return NULL;
}

/* The index entry fd is the copy of the lower entry lower_fd (as the
 * daemon decides it: sfs_origin_names). */
static bool index_is_copy_of(int fd, int lower_fd)
{
	struct sfs_origin o;

	return sfs_origin_get(fd, "", &o) == 1 && sfs_origin_names(&o, lower_fd, "") == 1;
}

int sfs_ch_lookup(struct sfs_ch_union *u, const struct sfs_ch_stack *dst,
		  const char *name, bool use_index, struct sfs_ch_stack **out)
{
	struct res r = { .u = u };
	struct sfs_ch_stack *st;
	unsigned i;
	int ret = 1;

	if (dst->n == 0 || strlen(name) > 255 || !strcmp(name, ".") || !strcmp(name, "..") ||
	    strchr(name, '/') || reserved_at(dst->l[0].path, name))
		return -ENOENT;
	r.l = calloc(u->n, sizeof(r.l[0]));
	if (!r.l)
		return -ENOMEM;
	if (u->split && dst->dpath && !(r.dpath = sfs_ch_join(dst->dpath, name))) {
		res_drop(&r);
		return -ENOMEM;
	}
	for (i = 0; i < dst->n && ret > 0; i++)
		ret = res_layer(&r, &dst->l[i], name, i + 1 < dst->n);
	if (ret >= 0 && r.redirect)
		ret = res_redirect(&r, dst, i - 1);
	if (ret >= 0 && r.n == 0)
		ret = -ENOENT;
	if (ret < 0) {
		res_drop(&r);
		return ret;
	}
	st = stack_alloc(r.n);
	if (!st) {
		res_drop(&r);
		return -ENOMEM;
	}
	memcpy(st->l, r.l, r.n * sizeof(r.l[0]));
	st->n = r.n;
	r.n = 0;
	st->top = r.top;
	st->opaque = r.opaque;
	st->redirected = r.redirected;
	st->redirect = r.top_redirect;
	r.top_redirect = NULL;
	st->dpath = r.dpath;
	r.dpath = NULL;
	res_drop(&r);
	/* a lower file with several names, copied up through another one:
	 * this name shows the copy in b[0]'s index (also when its link count
	 * is down to 1: an undone commit replaced the other names in the
	 * lower branch, and the union still shows the copy) */
	if (use_index && u->nidx && st->n == 1 && st->l[0].b > 0 &&
	    S_ISREG(st->top.st_mode)) {
		const struct sfs_ch_index *e = index_find(u, st->l[0].b, st->top.st_ino);
		struct stat ist;
		int fd = e ? sfs_do_open(u->index_fd, e->name, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0) : -1;

		/* an entry whose origin names another inode (the lower file was
		 * replaced offline by one reusing its number) is stale */
		if (fd >= 0 && ch_stat(fd, &ist, NULL) == 0 && S_ISREG(ist.st_mode) &&
		    index_is_copy_of(fd, st->l[0].fd)) {
			st->indexed = true;
			st->index_fd = fd;
			snprintf(st->index_name, sizeof(st->index_name), "%s", e->name);
			st->top = ist;
		} else if (fd >= 0) {
			close(fd);
		}
	}
	*out = st;
	return 0;
}

int sfs_ch_root(struct sfs_ch_union *u, unsigned first, struct sfs_ch_stack **out)
{
	struct sfs_ch_stack *st = stack_alloc(u->n);
	int ret = st ? 0 : -ENOMEM;

	for (unsigned i = first; ret == 0 && i < u->n; i++) {
		struct sfs_ch_layer *l = &st->l[st->n];

		l->b = i;
		l->fd = fcntl(u->b[i].root_fd, F_DUPFD_CLOEXEC, 0);
		l->path = strdup("");
		st->n++;
		if (l->fd < 0 || !l->path) {
			ret = l->fd < 0 ? -errno : -ENOMEM;
			break;
		}
		if (st->n == 1)
			ret = ch_stat(l->fd, &st->top, NULL);
		if (ret == 0 && i + 1 < u->n && sfs_wh_is_opaque(l->fd) == 1) {
			if (st->n == 1)
				st->opaque = true;
			break;
		}
	}
	if (ret == 0 && u->split && !(st->dpath = strdup("")))
		ret = -ENOMEM;
	if (ret < 0) {
		sfs_ch_stack_free(st);
		return ret;
	}
	*out = st;
	return 0;
}

/* ------------------------------------------------------------ listing */

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int names_push(char ***v, size_t *n, size_t *cap, const char *s)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 32;
		char **nv = realloc(*v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = nc;
	}
	if (!((*v)[*n] = strdup(s)))
		return -ENOMEM;
	(*n)++;
	return 0;
}

static int layer_names(const struct sfs_ch_layer *l, char ***v, size_t *n, size_t *cap)
{
	int fd = sfs_do_open(l->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *e;
	int ret = 0;

	if (!d) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		return ret;
	}
	errno = 0;
	while (ret == 0 && (e = readdir(d))) {
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    reserved_at(l->path, e->d_name))
			continue;
		if ((e->d_type == DT_CHR || e->d_type == DT_UNKNOWN) &&
		    sfs_do_stat(fd, e->d_name, &st) == 0 &&
		    sfs_wh_is_dev_whiteout(fd, e->d_name, &st))
			continue;
		ret = names_push(v, n, cap, e->d_name);
		errno = 0;
	}
	if (ret == 0 && errno)
		ret = -errno;
	closedir(d);
	return ret;
}

int sfs_ch_names(const struct sfs_ch_union *u, const struct sfs_ch_stack *dir,
		 char ***names, size_t *n)
{
	char **v = NULL;
	size_t cnt = 0, cap = 0, k = 0;
	int ret = 0;

	(void)u;
	for (unsigned i = 0; dir && ret == 0 && i < dir->n; i++)
		ret = layer_names(&dir->l[i], &v, &cnt, &cap);
	if (ret < 0) {
		sfs_ch_names_free(v, cnt);
		return ret;
	}
	if (cnt)
		qsort(v, cnt, sizeof(*v), name_cmp);
	for (size_t i = 0; i < cnt; i++) {
		if (k && !strcmp(v[k - 1], v[i]))
			free(v[i]);
		else
			v[k++] = v[i];
	}
	*names = v;
	*n = k;
	return 0;
}

void sfs_ch_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
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

	if (ch_stat(fd_a, &a, NULL) < 0 || ch_stat(fd_b, &b, NULL) < 0)
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
