/* Lookup across branches. The rules, in branch order from the highest:
 *  - a whiteout of the name (either format) ends the search: ENOENT;
 *  - the first entry found wins; a non-directory stands alone;
 *  - a directory merges with the directories of the same name below it,
 *    until one is opaque or a non-directory is met (which stays hidden).
 * Whiteouts are only looked for where there are branches below to hide. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stackfs/stackfs.h"

bool sfs_name_reserved(const struct sfs_node *parent, const char *name)
{
	if (sfs_wh_reserved_name(name))
		return true;
	return parent == sfs_node_root() && strcmp(name, SFS_META_NAME) == 0;
}

/* State of one resolution, filled layer by layer. */
struct resolve {
	struct sfs_layer found[64];
	unsigned n;
	struct stat top, id;
	char *redirect;           /* the lower layers are elsewhere */
	const struct sfs_snap *snap;
	uint32_t nlink;           /* the link count to show, or 0 */
	bool indexed;
	bool dir_origin;          /* the top directory is a copy-up */
};

static void resolve_drop(struct resolve *r)
{
	for (unsigned i = 0; i < r->n; i++)
		close(r->found[i].fd);
	r->n = 0;
}

/* A directory with layers below: opaque stops, a redirect sends the
 * search elsewhere. 1 to go on below, 0 to stop, or -errno. */
static int resolve_marks(struct resolve *r, int fd)
{
	struct sfs_dirmark m;
	int ret = sfs_dirmark_read(fd, &m);

	if (ret < 0)
		return ret;
	if (r->n == 1)
		r->dir_origin = m.has_origin;
	if (m.opaque) {
		sfs_dirmark_free(&m);
		return 0;
	}
	r->redirect = m.redirect;
	return r->redirect ? 0 : 1;
}

/* Looks at one layer. Returns 1 to go on to the layer below, 0 to stop,
 * or -errno. */
static int resolve_layer(struct resolve *r, const struct sfs_layer *dl,
			 const char *name, bool below)
{
	struct stat st;
	int fd = sfs_do_open(dl->fd, name, O_PATH, 0), ret;

	if (fd == -ENOENT || fd == -ENOTDIR) {
		if (!below)
			return 0;
		ret = sfs_wh_has_aufs(dl->fd, name);
		return ret < 0 ? ret : !ret;
	}
	/* a mount point inside the branch is never entered (NOTES.md) */
	if (fd == -EXDEV)
		sfs_log_mountpoint(r->snap, dl, name);
	if (fd < 0)
		return fd;
	ret = sfs_do_fstat(fd, &st);
	if (ret < 0 || sfs_wh_is_dev_whiteout(fd, "", &st) ||
	    (r->n > 0 && !S_ISDIR(st.st_mode)) ||
	    r->n == sizeof(r->found) / sizeof(r->found[0])) {
		close(fd);
		return ret < 0 ? ret : 0;
	}
	if (r->n == 0)
		r->top = r->id = st;
	r->found[r->n].fd = fd;
	r->found[r->n].bidx = dl->bidx;
	r->n++;
	/* A directory of a branch with branches below it may have been
	 * renamed there with its lower layers elsewhere (a redirect), even
	 * where its parent has no layers below. */
	if (!S_ISDIR(st.st_mode) || dl->bidx + 1 >= r->snap->n)
		return 0;
	ret = resolve_marks(r, fd);
	return below ? ret : ret < 0 ? ret : 0;
}

/* A copy with several links that is in the index: its count of names
 * includes the lower ones not copied up (as far as it can be known). */
static void resolve_linked_copy(struct resolve *r, const struct sfs_snap *s,
				int dirfd, const char *name)
{
	struct stat st;
	int fd = sfs_index_open(s, r->id.st_dev, r->id.st_ino);

	if (fd < 0)
		return;
	if (sfs_do_fstat(fd, &st) == 0 && st.st_ino == r->top.st_ino)
		r->nlink = sfs_origin_nlink(s, dirfd, name);
	close(fd);
}

/* A copy whose origin is gone (the lower file was replaced offline) is
 * its own inode; the index link it may still have (until fsck removes
 * it) is no name of the view, so it is not counted. */
static void resolve_stale_copy(struct resolve *r, const struct sfs_snap *s,
			       uint64_t dev, uint64_t ino)
{
	struct stat st;
	int fd = sfs_index_open(s, dev, ino);

	if (fd < 0)
		return;
	if (sfs_do_fstat(fd, &st) == 0 && st.st_ino == r->top.st_ino && st.st_dev == r->top.st_dev)
		r->nlink = 1;   /* shown: the copy's links but the index one */
	close(fd);
}

/* A copied-up entry keeps the identity of its origin. Only an entry of a
 * rw branch with branches below it can be a copy, but its parent may have
 * no lower layers (a copy moved to a new directory); a directory's own
 * marks say whether it is one. */
static int resolve_origin(struct resolve *r, const struct sfs_stack *dst,
			  const char *name)
{
	const struct sfs_layer *pl;
	uint64_t dev, ino;
	int ret;

	if ((S_ISDIR(r->top.st_mode) ? !r->dir_origin : r->n != 1) ||
	    r->found[0].bidx + 1 >= dst->snap->n ||
	    dst->snap->b[r->found[0].bidx]->mode != SFS_BRANCH_RW)
		return 0;
	pl = sfs_stack_in(dst, dst->snap->b[r->found[0].bidx]);
	if (!pl)
		return 0;
	ret = sfs_origin_identity(dst->snap, pl->fd, name, &dev, &ino);
	if (ret > 0) {
		r->id.st_dev = (dev_t)dev;
		r->id.st_ino = (ino_t)ino;
		if (S_ISREG(r->top.st_mode) && r->top.st_nlink > 1)
			resolve_linked_copy(r, dst->snap, pl->fd, name);
	} else if (ret == -ESTALE && S_ISREG(r->top.st_mode) && r->top.st_nlink > 1) {
		resolve_stale_copy(r, dst->snap, dev, ino);
	}
	return 0;
}

/* A lower file with several names, copied up through another name: this
 * name shows the copy kept in the index. */
static int resolve_index(struct resolve *r, const struct sfs_stack *dst)
{
	const struct sfs_snap *s = dst->snap;
	uint32_t lower = (uint32_t)r->top.st_nlink;
	struct stat st;
	int fd;

	if (r->n != 1 || !S_ISREG(r->top.st_mode) || r->top.st_nlink < 2 ||
	    s->top_rw < 0 || (int)r->found[0].bidx <= s->top_rw)
		return 0;
	fd = sfs_index_open_of(s, r->found[0].fd, &r->top);
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	if (sfs_do_fstat(fd, &st) < 0) {
		close(fd);
		return 0;
	}
	close(r->found[0].fd);
	r->found[0].fd = fd;
	r->top = st;
	r->nlink = lower;
	r->indexed = true;
	return 0;
}

/* The stack of every branch root below branch bidx. */
static struct sfs_stack *roots_below(struct sfs_snap *s, unsigned bidx)
{
	struct sfs_stack *st = sfs_stack_new(s, s->n - bidx - 1);

	for (unsigned i = 0; st && i < st->n; i++) {
		st->l[i].bidx = bidx + 1 + i;
		st->l[i].fd = fcntl(s->b[bidx + 1 + i]->root_fd, F_DUPFD_CLOEXEC, 0);
		if (st->l[i].fd < 0) {
			sfs_stack_put(st);
			return NULL;
		}
	}
	return st;
}

/* Adds the directory layers found at an absolute redirect path in the
 * branches below branch bidx: a lookup of the path in a union of those
 * branches (whose own whiteouts, opaque directories and redirects count).
 * The identity stays the redirected directory's (its origin's, or its
 * own when it has none, as an upper directory made outside the union):
 * taking the lower one's changed it at the rename, so the kernel's node
 * was no longer found (EXDEV at the next rename) and st_ino changed. */
static int resolve_abs(struct resolve *r, struct sfs_snap *s, unsigned bidx,
		       const char *path)
{
	struct sfs_stack *st = roots_below(s, bidx), *next;
	char *copy = strdup(path), *save = NULL, *c;
	struct stat top, id;
	int ret = st && copy ? 0 : -ENOMEM;

	for (c = strtok_r(copy, "/", &save); ret == 0 && c; c = strtok_r(NULL, "/", &save)) {
		ret = sfs_resolve(st, c, &next, &top, &id);
		if (ret == 0) {
			sfs_stack_put(st);
			st = next;
			ret = S_ISDIR(top.st_mode) ? 0 : -ENOENT;
		}
	}
	for (unsigned i = 0; ret == 0 && i < st->n && r->n < 64; i++) {
		r->found[r->n].bidx = st->l[i].bidx;
		r->found[r->n].fd = fcntl(st->l[i].fd, F_DUPFD_CLOEXEC, 0);
		if (r->found[r->n].fd < 0)
			ret = -errno;
		else
			r->n++;
	}
	if (st)
		sfs_stack_put(st);
	free(copy);
	return ret == -ENOENT ? 0 : ret;
}

/* Follows a redirect met at layer i: an absolute one from the roots of
 * the branches below, a relative one (a name) in the parent's layers. */
static int resolve_redirect(struct resolve *r, const struct sfs_stack *dst,
			    unsigned i)
{
	char *to = r->redirect;
	int ret = 1;

	r->redirect = NULL;
	if (to[0] == '/')
		ret = resolve_abs(r, dst->snap, dst->l[i].bidx, to);
	else if (!strchr(to, '/'))
		for (unsigned j = i + 1; j < dst->n && ret > 0; j++)
			ret = resolve_layer(r, &dst->l[j], to, j + 1 < dst->n);
	free(to);
	return ret < 0 ? ret : 0;
}

int sfs_resolve(const struct sfs_stack *dst, const char *name,
		struct sfs_stack **out, struct stat *top, struct stat *idst)
{
	struct resolve r = { .n = 0, .snap = dst->snap };
	struct sfs_stack *st;
	unsigned i;
	int ret = 1;

	for (i = 0; i < dst->n && ret > 0; i++)
		ret = resolve_layer(&r, &dst->l[i], name, i + 1 < dst->n);
	if (ret >= 0 && r.redirect)
		ret = resolve_redirect(&r, dst, i - 1);
	if (ret >= 0)
		ret = resolve_origin(&r, dst, name);
	if (ret >= 0)
		ret = resolve_index(&r, dst);
	free(r.redirect);
	if (ret < 0 || r.n == 0) {
		resolve_drop(&r);
		return ret < 0 ? ret : -ENOENT;
	}
	st = sfs_stack_new(dst->snap, r.n);
	if (!st) {
		resolve_drop(&r);
		return -ENOMEM;
	}
	memcpy(st->l, r.found, r.n * sizeof(r.found[0]));
	st->nlink = r.nlink;
	st->indexed = r.indexed;
	*top = r.top;
	*idst = r.id;
	*out = st;
	return 0;
}

int sfs_lookup_entry(struct sfs_node *parent, const char *name,
		     struct fuse_entry_param *e)
{
	struct sfs_stack *dst, *st;
	struct stat top, id;
	struct sfs_node *n;
	int ret;

	memset(e, 0, sizeof(*e));
	e->attr_timeout = sfs_timeout;
	e->entry_timeout = sfs_timeout;
	sfs_count(lookups, 1);
	if (strlen(name) > 255)
		return -ENAMETOOLONG;
	if (sfs_name_reserved(parent, name))
		return -ENOENT;
	ret = sfs_node_stack_open(parent, &dst);
	if (ret == 0)
		ret = sfs_resolve(dst, name, &st, &top, &id);
	sfs_stack_put(dst);
	if (ret < 0)
		return ret;
	ret = sfs_node_lookup_insert(parent, name, st, &id, &n);
	if (ret < 0)
		return ret;
	st = sfs_node_stack(n);
	sfs_stat_fill(n, st, &top, &e->attr);
	sfs_stack_put(st);
	e->ino = sfs_node_id(n);
	e->generation = n->generation;
	return 0;
}

int sfs_resolve_below(const struct sfs_stack *dst, const struct sfs_branch *b,
		      const char *name)
{
	struct resolve r = { .n = 0, .snap = dst->snap };
	int pos = sfs_snap_pos(dst->snap, b), ret = 1;
	unsigned i = 0;

	if (pos < 0)
		return -ESTALE; /* b is not a branch of dst's snapshot */
	while (i < dst->n && dst->l[i].bidx <= (unsigned)pos)
		i++;
	for (; i < dst->n && ret > 0; i++)
		ret = resolve_layer(&r, &dst->l[i], name, i + 1 < dst->n);
	free(r.redirect);
	ret = ret < 0 ? ret : r.n > 0;
	resolve_drop(&r);
	return ret;
}
