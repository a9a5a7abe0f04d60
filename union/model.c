/* The union of plain branch directories, without a mount (model.h): its
 * stacks, lookups and listings, by the union's rules (resolve.c, the
 * daemon's too), and the rw branch's hard-link index, as diff and commit
 * see them. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/bio.h"
#include "union/resolve.h"
#include "union/model.h"
#include "whiteout/metadir.h"
#include "whiteout/origin.h"
#include "whiteout/whiteout.h"
#include "xattr/xattr.h"

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
	return sfs_u_reserved(name, !layer_path[0]);
}

static int names_push(char ***v, size_t *n, size_t *cap, const char *s);

/* ------------------------------------------------------------ stacks */

static struct sfs_ch_stack *stack_alloc(unsigned n)
{
	static atomic_uint_fast64_t serials;
	struct sfs_ch_stack *st = calloc(1, sizeof(*st) + n * sizeof(st->l[0]));

	if (st) {
		st->index_fd = st->data_fd = -1;
		st->serial = atomic_fetch_add(&serials, 1) + 1;
	}
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
	if (st->data_fd >= 0)
		close(st->data_fd);
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
 * number. No index (never mounted, or no .stackfs) is an empty one.
 * at_fd: the directory holding b[0]'s .stackfs. An entry whose record is
 * damaged stops the load (-EUCLEAN, its name in bad): the lower names it
 * stands for could not be told shown or not. */
static int index_load(struct sfs_ch_union *u, int at_fd, char *bad, size_t badlen)
{
	int meta = sfs_do_open(at_fd, SFS_METADIR_NAME, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	struct dirent *e;
	DIR *d;
	int ret = 0;

	if (meta < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	u->index_fd = sfs_do_open(meta, SFS_META_INDEX, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	close(meta);
	if (u->index_fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	d = sfs_do_opendir(u->index_fd, ".");
	if (!d)
		return -errno;
	while (ret == 0 && (e = readdir(d))) {
		struct sfs_origin o;
		struct sfs_ch_index *v;

		/* another name is no entry of a lower inode (fsck: INDEX_NAME) */
		if (!sfs_index_name_ok(e->d_name))
			continue;
		ret = sfs_origin_get(u->index_fd, e->d_name, &o);
		if (ret < 0) {
			if (ret == -EUCLEAN)
				snprintf(bad, badlen, "%s", e->d_name);
			break;
		}
		if (ret == 0)
			continue;
		ret = 0;
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
		memcpy(v->name, e->d_name, strlen(e->d_name) + 1); /* 25 bytes: an index name */
	}
	closedir(d);
	if (u->nidx)
		qsort(u->idx, u->nidx, sizeof(u->idx[0]), idx_cmp);
	return ret;
}

/* b[0]'s index, from its metadata dir wherever that is (metaloc.c). */
static int rw_index(struct sfs_ch_union *u, const char *workdir, char *err, size_t errlen)
{
	struct sfs_metaloc loc;
	char why[PATH_MAX + 512], bad[NAME_MAX + 1] = "";
	int ret = sfs_metaloc_open(u->b[0].root_fd, workdir, false, &loc, why, sizeof(why));

	if (ret < 0) {
		snprintf(err, errlen, "%s: %s", u->b[0].path, why);
		return ret;
	}
	ret = index_load(u, sfs_metaloc_at(&loc, u->b[0].root_fd), bad, sizeof(bad));
	if (ret == -EUCLEAN)
		snprintf(err, errlen, "%s/%s/%s/%s: its origin record is damaged (see stackfs "
			 "fsck)", loc.workdir ? loc.workdir : u->b[0].path, SFS_METADIR_NAME,
			 SFS_META_INDEX, bad);
	else if (ret < 0)
		snprintf(err, errlen, "%s/%s/%s: %s", loc.workdir ? loc.workdir : u->b[0].path,
			 SFS_METADIR_NAME, SFS_META_INDEX, strerror(-ret));
	sfs_metaloc_close(&loc);
	return ret;
}

int sfs_ch_union_open(struct sfs_ch_union *u, const char *const *paths, unsigned n,
		      const char *workdir, char *err, size_t errlen)
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
		ret = rw_index(u, workdir, err, errlen);
		if (ret < 0)
			goto fail;
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
	sfs_ch_names_drop(u);
	memset(u, 0, sizeof(*u));
	u->index_fd = -1;
}

int sfs_ch_lowers_below(int root_fd, int at_fd, char ***paths, size_t *n, char *err,
			size_t errlen)
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
	meta = sfs_do_open(at_fd, SFS_METADIR_NAME, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (meta < 0) {
		/* a .stackfs that is no directory is damage, not "never mounted" */
		ret = errno == ENOTDIR || errno == ELOOP ? -EUCLEAN : -errno;
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

/* The union rules' view of u (union/resolve.h): the roots below a
 * branch, for an absolute redirect; an entry on another mount than its
 * branch's root is a mount point inside the branch (EXDEV). */
static int roots_below(void *arg, unsigned b, struct sfs_ulayer *out, unsigned max)
{
	const struct sfs_ch_union *u = arg;
	unsigned k = 0;

	for (unsigned i = b + 1; i < u->n && k < max; i++) {
		out[k] = (struct sfs_ulayer){
			.fd = fcntl(u->b[i].root_fd, F_DUPFD_CLOEXEC, 0), .b = i, .path = strdup(""),
		};
		if (out[k].fd < 0 || !out[k].path) {
			int ret = out[k].fd < 0 ? -errno : -ENOMEM;

			for (k++; k > 0; k--) {
				if (out[k - 1].fd >= 0)
					close(out[k - 1].fd);
				free(out[k - 1].path);
			}
			return ret;
		}
		k++;
	}
	return (int)k;
}

static int met(void *arg, const struct sfs_ulayer *dir, int fd, const struct stat *st,
	       const char *name, int err)
{
	const struct sfs_ch_union *u = arg;
	uint64_t mnt;
	int ret;

	if (fd < 0)
		return 0;
	ret = ch_stat(fd, &(struct stat){ 0 }, &mnt);
	return ret < 0 ? ret : mnt != u->b[dir->b].mnt_id ? -EXDEV : 0;
}

/* The rules' resolution of name in the layers of dst. */
static int rules(struct sfs_ch_union *u, const struct sfs_ch_stack *dst, const char *name,
		 struct sfs_uentry *e)
{
	struct sfs_uview v = { u->n, u->split, u->n, roots_below, met, u,
			       sfs_ch_names_of(u, dst) };
	struct sfs_ulayer *dir = calloc(dst->n ? dst->n : 1, sizeof(*dir));
	int ret;

	if (!dir)
		return -ENOMEM;
	for (unsigned i = 0; i < dst->n; i++)
		dir[i] = (struct sfs_ulayer){ .fd = dst->l[i].fd, .b = dst->l[i].b, .path = dst->l[i].path };
	ret = sfs_u_resolve(&v, dir, dst->n, u->split ? dst->dpath : NULL, name, e);
	free(dir);
	return ret;
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

/* The index entry name, open as fd (stat ist), is the copy of the lower
 * entry lower_fd (as the daemon decides it: sfs_origin_names). A
 * symlink's record is read by its name: no fd reaches its xattrs. */
static bool index_is_copy_of(const struct sfs_ch_union *u, const char *name, int fd,
			     const struct stat *ist, int lower_fd)
{
	bool lnk = S_ISLNK(ist->st_mode);
	struct sfs_origin o;

	return sfs_origin_get(lnk ? u->index_fd : fd, lnk ? name : "", &o) == 1 &&
	       sfs_origin_names(&o, lower_fd, "") == 1;
}

/* A lower non-directory with several names (of any type: the daemon
 * indexes each), copied up through another one: this name shows the
 * copy in b[0]'s index (also when its link count is down to 1: an
 * undone commit replaced the other names in the lower branch, and the
 * union still shows the copy). */
static void show_index(const struct sfs_ch_union *u, struct sfs_ch_stack *st)
{
	const struct sfs_ch_index *e;
	struct stat ist;
	int fd;

	if (!u->nidx || st->n != 1 || st->l[0].b == 0 || S_ISDIR(st->top.st_mode))
		return;
	e = index_find(u, st->l[0].b, st->top.st_ino);
	fd = e ? sfs_do_open(u->index_fd, e->name, O_PATH, 0) : -1;
	/* an entry whose origin names another inode (the lower file was
	 * replaced offline by one reusing its number) is stale */
	if (fd >= 0 && ch_stat(fd, &ist, NULL) == 0 &&
	    (ist.st_mode & S_IFMT) == (st->top.st_mode & S_IFMT) &&
	    index_is_copy_of(u, e->name, fd, &ist, st->l[0].fd)) {
		st->indexed = true;
		st->index_fd = fd;
		snprintf(st->index_name, sizeof(st->index_name), "%s", e->name);
		st->top = ist;
		if (st->data_fd >= 0) /* the copy has its own data */
			close(st->data_fd);
		st->data_fd = -1;
		st->metacopy = false;
	} else if (fd >= 0) {
		close(fd);
	}
}

/* A metacopy stackfs made records in its origin the lower file it was
 * made of: where its name below now shows another inode (a branch
 * reordered, a lower file replaced offline), it has no data (diff and
 * commit then refuse it, as the daemon's reads do:
 * docs/union.md "Metadata-only copy-up"), never the other file's. */
static void check_data_origin(struct sfs_ch_stack *st, const struct stat *via)
{
	struct sfs_origin o;
	struct stat ds;
	int ret = st->data_fd < 0 ? 0 : sfs_origin_get(st->l[0].fd, "", &o);
	bool ok;

	/* a damaged record cannot say the data is the file's: none, as for
	 * the daemon (whose lookup answers EUCLEAN) */
	if (ret != 1 && ret != -EUCLEAN)
		return;
	ok = ret == 1 && o.ino == (uint64_t)via->st_ino;
	/* the data is the entry below itself (no chain): its generation too */
	if (ok && o.version == SFS_ORIGIN_VERSION && o.handle_bytes &&
	    sfs_do_fstat(st->data_fd, &ds) == 0 && ds.st_ino == via->st_ino &&
	    ds.st_dev == via->st_dev)
		ok = sfs_origin_names(&o, st->data_fd, "") != 0;
	if (ok)
		return;
	close(st->data_fd);
	st->data_fd = -1;
}

int sfs_ch_lookup(struct sfs_ch_union *u, const struct sfs_ch_stack *dst,
		  const char *name, bool use_index, struct sfs_ch_stack **out)
{
	struct sfs_uentry *e;
	struct sfs_ch_stack *st;
	int ret;

	if (dst->n == 0 || strlen(name) > 255 || !strcmp(name, ".") || !strcmp(name, "..") ||
	    strchr(name, '/') || reserved_at(dst->l[0].path, name))
		return -ENOENT;
	e = calloc(1, sizeof(*e));
	ret = e ? rules(u, dst, name, e) : -ENOMEM;
	if (ret == 0 && e->n == 0)
		ret = -ENOENT;
	st = ret == 0 ? stack_alloc(e->n) : NULL;
	if (ret == 0 && !st)
		ret = -ENOMEM;
	if (ret < 0) {
		if (e)
			sfs_uentry_drop(e);
		free(e);
		return ret;
	}
	for (unsigned i = 0; i < e->n; i++)
		st->l[i] = (struct sfs_ch_layer){ e->l[i].b, e->l[i].fd, e->l[i].path };
	st->n = e->n;
	e->n = 0; /* the layers are the stack's */
	st->top = e->top;
	st->opaque = e->opaque;
	st->redirected = e->redirected;
	st->redirect = e->redirect;
	st->dpath = e->lower_path;
	e->redirect = e->lower_path = NULL;
	st->metacopy = e->metacopy;
	if (e->metacopy) {
		st->data_fd = e->data.fd;
		e->data.fd = -1;
		check_data_origin(st, &e->data_via);
	}
	sfs_uentry_drop(e);
	free(e);
	if (use_index)
		show_index(u, st);
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
	DIR *d = sfs_do_opendir(l->fd, ".");
	struct dirent *e;
	unsigned dirflags;
	int ret = 0;

	if (!d)
		return -errno;
	dirflags = (!l->path[0] ? SFS_U_AT_ROOT : 0) |
		   (sfs_wh_dir_has_xwhiteouts(l->fd) ? SFS_U_XWHITEOUTS : 0);
	errno = 0;
	while (ret == 0 && (e = readdir(d))) {
		const char *hides;
		int kind = sfs_u_dirent(dirfd(d), e->d_name, e->d_type, dirflags, &hides);

		if (kind < 0)
			ret = kind;
		else if (kind == SFS_U_ENTRY)
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

