/* Resolution in the daemon: the union's rules (union/resolve.c) run on a
 * node's stack, then what only the daemon decides: a copied-up entry's
 * identity (its origin's), the hard-link index, the link count shown;
 * the result made a node (sfs_lookup_entry), and the root's stack. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stackfs/stackfs.h"
#include "union/resolve.h"
#include "whiteout/metacopy.h"

bool sfs_name_reserved(const struct sfs_node *parent, const char *name)
{
	return sfs_u_reserved(name, parent == sfs_node_root());
}

/* State of one resolution: what the rules found, and the daemon's. */
struct resolve {
	struct sfs_uentry e;
	struct stat id;
	uint32_t nlink;           /* the link count to show, or 0 */
	bool indexed;
};

/* The rules' view of a snapshot: the roots below a branch (for an
 * absolute redirect), and a mount point met, logged. */
static int roots_below(void *arg, unsigned b, struct sfs_ulayer *out, unsigned max)
{
	const struct sfs_snap *s = arg;
	unsigned k = 0;

	for (unsigned i = b + 1; i < s->n && k < max; i++) {
		out[k].fd = fcntl(s->b[i]->root_fd, F_DUPFD_CLOEXEC, 0);
		if (out[k].fd < 0) {
			while (k > 0)
				close(out[--k].fd);
			return -errno;
		}
		out[k].b = i;
		out[k++].path = NULL;
	}
	return (int)k;
}

/* A mount point inside the branch is never entered
 * (docs/trust.md "A mount point inside a branch is never entered"). */
static int met(void *arg, const struct sfs_ulayer *dl, int fd, const struct stat *st,
	       const char *name, int err)
{
	const struct sfs_layer l = { .fd = dl->fd, .bidx = dl->b };

	if (fd < 0 && err == -EXDEV)
		sfs_log_mountpoint(arg, &l, name);
	return 0;
}

/* Layers of a directory in most unions: more take an allocation. */
#define DIR_LAYERS_ON_STACK 16

/* The rules' view of dst's snapshot and dst's layers, into *dir: buf
 * (DIR_LAYERS_ON_STACK of them) or an allocation the caller frees when
 * it is not buf. 0 or -ENOMEM. */
static int view_of(const struct sfs_stack *dst, const struct sfs_unames *names,
		   struct sfs_uview *v, struct sfs_ulayer *buf, struct sfs_ulayer **dir)
{
	*v = (struct sfs_uview){ dst->snap->n, 0, dst->snap->data_from, roots_below, met,
				 dst->snap, names };
	*dir = buf;
	if (dst->n > DIR_LAYERS_ON_STACK && !(*dir = malloc(dst->n * sizeof(**dir))))
		return -ENOMEM;
	for (unsigned i = 0; i < dst->n; i++)
		(*dir)[i] = (struct sfs_ulayer){
			.fd = dst->l[i].fd, .b = dst->l[i].bidx,
			.keep_xwh = sfs_layer_keep_xwh(dst->snap, &dst->l[i])
		};
	return 0;
}

/* The rules' resolution of name in the layers of dst. */
static int rules(const struct sfs_stack *dst, const struct sfs_unames *names,
		 const char *name, struct sfs_uentry *e)
{
	struct sfs_ulayer buf[DIR_LAYERS_ON_STACK], *dir;
	struct sfs_uview v;
	int ret = view_of(dst, names, &v, buf, &dir);

	if (ret == 0)
		ret = sfs_u_resolve(&v, dir, dst->n, NULL, name, e);
	if (dir != buf)
		free(dir);
	return ret;
}

/* The link count of the origin found by name: the copy's name in the
 * layers of dst below its rw branch b, taken when it is the origin's
 * inode (a copy is placed under one of the lower names, and keeps it
 * unless renamed). For an origin no handle opens: a FUSE branch's
 * number handle (a copy-up of a hard-linked file over GlusterFS or
 * CephFS showed one link after a remount, and tar stored it twice). 0
 * when not found. */
static uint32_t origin_nlink_by_name(const struct sfs_stack *dst, unsigned b,
				     const char *name, const struct stat *id)
{
	struct stat st;

	for (unsigned i = 0; i < dst->n; i++)
		if (dst->l[i].bidx > b && sfs_do_stat(dst->l[i].fd, name, &st) == 0 &&
		    st.st_dev == id->st_dev && st.st_ino == id->st_ino)
			return (uint32_t)st.st_nlink;
	return 0;
}

/* A copy with several links that is in the index: its count of names
 * includes the lower ones not copied up (as far as it can be known; 1
 * when the lower file is not found). */
static void resolve_linked_copy(struct resolve *r, const struct sfs_stack *dst,
				int dirfd, const char *name)
{
	const struct sfs_snap *s = dst->snap;
	struct stat st;
	int fd = sfs_index_open(s, r->id.st_dev, r->id.st_ino);

	if (fd < 0)
		return;
	if (sfs_do_fstat(fd, &st) == 0 && st.st_ino == r->e.top.st_ino) {
		r->nlink = sfs_origin_nlink(s, dirfd, name);
		if (!r->nlink)
			r->nlink = origin_nlink_by_name(dst, r->e.l[0].b, name, &r->id);
		if (!r->nlink)
			r->nlink = 1;
	}
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
	if (sfs_do_fstat(fd, &st) == 0 && st.st_ino == r->e.top.st_ino && st.st_dev == r->e.top.st_dev)
		r->nlink = 1;   /* shown: the copy's links but the index one */
	close(fd);
}

/* Whether a copy may be in the index: a non-directory (of any type:
 * copy_up.c indexes each) with another link. */
static bool linked_copy(const struct stat *top)
{
	return !S_ISDIR(top->st_mode) && top->st_nlink > 1;
}

/* A metacopy the union made records in its origin the lower entry it
 * was made of; its name resolved below must still be that entry (same
 * filesystem and inode), or the data shown would be another file's: a
 * branch reordered, or a lower file replaced offline. Then it has no
 * data, and its reads fail with EIO
 * (docs/union.md "Metadata-only copy-up"). stale: the record's inode is gone.
 * */
static void check_metacopy_data(struct resolve *r, uint64_t dev, uint64_t ino, bool stale)
{
	if (!r->e.metacopy || r->e.data.fd < 0)
		return;
	if (!stale && (uint64_t)r->e.data_via.st_dev == dev &&
	    (uint64_t)r->e.data_via.st_ino == ino)
		return;
	close(r->e.data.fd);
	r->e.data.fd = -1;
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

	if ((S_ISDIR(r->e.top.st_mode) ? !r->e.has_origin : r->e.n != 1) ||
	    r->e.l[0].b + 1 >= dst->snap->n ||
	    dst->snap->b[r->e.l[0].b]->mode != SFS_BRANCH_RW)
		return 0;
	pl = sfs_stack_in(dst, dst->snap->b[r->e.l[0].b]);
	if (!pl)
		return 0;
	ret = sfs_origin_identity(dst->snap, pl->fd, name, &dev, &ino);
	if (ret == -EUCLEAN) {
		sfs_log_damaged(dst->snap, pl, name, "origin");
		return ret;
	}
	if (ret > 0 || ret == -ESTALE)
		check_metacopy_data(r, dev, ino, ret < 0);
	if (ret > 0) {
		r->id.st_dev = (dev_t)dev;
		r->id.st_ino = (ino_t)ino;
		if (linked_copy(&r->e.top))
			resolve_linked_copy(r, dst, pl->fd, name);
	} else if (ret == -ESTALE && linked_copy(&r->e.top)) {
		resolve_stale_copy(r, dst->snap, dev, ino);
	}
	return 0;
}

/* A lower non-directory with several names, copied up through another
 * name: this name shows the copy kept in the index. */
static int resolve_index(struct resolve *r, const struct sfs_stack *dst)
{
	const struct sfs_snap *s = dst->snap;
	uint32_t lower = (uint32_t)r->e.top.st_nlink;
	struct stat st;
	int fd;

	if (r->e.n != 1 || !linked_copy(&r->e.top) ||
	    s->top_rw < 0 || (int)r->e.l[0].b <= s->top_rw)
		return 0;
	fd = sfs_index_open_of(s, r->e.l[0].fd, &r->e.top);
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	if (sfs_do_fstat(fd, &st) < 0) {
		close(fd);
		return 0;
	}
	close(r->e.l[0].fd);
	r->e.l[0].fd = fd;
	r->e.top = st;
	r->nlink = lower;
	r->indexed = true;
	return 0;
}

/* A metacopy of a rw branch whose fill was killed (the daemon's or a
 * commit's) kept the times it must show aside (union/metacopy_fill.c):
 * they go back on the file the first time the view reaches it, so the
 * view never shows the time of the kill. */
static int kept_times_back(const struct sfs_stack *st, struct stat *top, const char *name)
{
	int ret;

	if (sfs_layer_branch(st, &st->l[0])->mode != SFS_BRANCH_RW)
		return 0;
	ret = sfs_metacopy_times_restore(st->l[0].fd);
	if (ret == 0)
		ret = sfs_do_fstat(st->l[0].fd, top);
	/* damaged: the file's own times may be the kill's, never shown */
	if (ret == -EUCLEAN) {
		sfs_log(SFS_LOG_ERR, "%s: the times a metacopy kept are damaged (answers EUCLEAN; "
			"stackfs fsck --repair drops them)", name);
		return ret;
	}
	if (ret < 0 && ret != -ENODATA)
		sfs_log(SFS_LOG_WARN, "cannot put back the times a metacopy kept: %s",
			strerror(-ret));
	return 0;
}

/* What a layer's marks said of xattr whiteouts, kept in the stack for a
 * read-only branch only: the daemon writes no such mark, but a rw
 * layer's marks are its to clear (a rename's), and a kept answer would
 * outlive that. */
static unsigned kept_xwh(const struct sfs_snap *s, const struct sfs_ulayer *l)
{
	return s->b[l->b]->mode == SFS_BRANCH_RO ? l->xwh : SFS_XWH_UNKNOWN;
}

int sfs_resolve(const struct sfs_stack *dst, const char *name,
		struct sfs_stack **out, struct stat *top, struct stat *idst)
{
	return sfs_resolve_in(dst, NULL, name, out, top, idst);
}

int sfs_resolve_in(const struct sfs_stack *dst, const struct sfs_unames *names,
		   const char *name, struct sfs_stack **out, struct stat *top,
		   struct stat *idst)
{
	struct resolve r = { .nlink = 0 };
	struct sfs_stack *st;
	int ret = rules(dst, names, name, &r.e);

	r.id = r.e.top;
	if (ret == 0 && r.e.n)
		ret = resolve_origin(&r, dst, name);
	if (ret == 0 && r.e.n)
		ret = resolve_index(&r, dst);
	if (ret < 0 || r.e.n == 0) {
		sfs_uentry_drop(&r.e);
		return ret < 0 ? ret : -ENOENT;
	}
	if (r.indexed && r.e.metacopy) { /* the index's copy has its data */
		close(r.e.data.fd);
		r.e.data.fd = -1;
		r.e.metacopy = false;
	}
	st = sfs_stack_new(dst->snap, r.e.n + (r.e.metacopy && r.e.data.fd >= 0));
	if (!st) {
		sfs_uentry_drop(&r.e);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < r.e.n; i++)
		st->l[i] = (struct sfs_layer){
			.fd = r.e.l[i].fd, .bidx = r.e.l[i].b, .xwh = kept_xwh(dst->snap, &r.e.l[i])
		};
	/* a metacopy file's data: its second layer */
	if (r.e.metacopy && r.e.data.fd >= 0) {
		st->l[r.e.n] = (struct sfs_layer){ .fd = r.e.data.fd, .bidx = r.e.data.b };
		r.e.data.fd = -1;
	}
	st->metacopy = r.e.metacopy;
	ret = st->metacopy ? kept_times_back(st, &r.e.top, name) : 0;
	r.e.n = 0; /* the fds are the stack's now */
	sfs_uentry_drop(&r.e);
	if (ret < 0) {
		sfs_stack_put(st);
		return ret;
	}
	st->nlink = r.nlink;
	st->indexed = r.indexed;
	*top = r.e.top;
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
	if (ret == 0) {
		struct sfs_dirnames *names = sfs_dirnames_get(parent, dst);

		ret = sfs_resolve_in(dst, sfs_dirnames_ix(names), name, &st, &top, &id);
		sfs_dirnames_put(names);
	}
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
	struct sfs_ulayer buf[DIR_LAYERS_ON_STACK], *dir;
	int pos = sfs_snap_pos(dst->snap, b);
	struct sfs_uview v;
	int ret = view_of(dst, NULL, &v, buf, &dir);

	if (ret == 0 && pos < 0)
		ret = -ESTALE; /* b is not a branch of dst's snapshot */
	if (ret == 0)
		ret = sfs_u_shown_below(&v, dir, dst->n, (unsigned)pos, name);
	if (dir != buf)
		free(dir);
	return ret;
}

/* The root's stack: every branch root, down to the first opaque one or
 * the data-only branches. */
int sfs_root_stack(struct sfs_snap *s, struct sfs_stack **out, struct stat *id)
{
	struct sfs_stack *st = sfs_stack_new(s, s->n);
	struct stat top;
	unsigned n = 0;
	int ret = st ? 0 : -ENOMEM;

	for (unsigned i = 0; ret == 0 && i < s->data_from; i++) {
		st->l[n].fd = fcntl(s->b[i]->root_fd, F_DUPFD_CLOEXEC, 0);
		st->l[n].bidx = i;
		ret = st->l[n].fd < 0 ? -errno : sfs_do_fstat(st->l[n].fd, n ? id : &top);
		if (ret < 0)
			break;
		if (n++ == 0)
			*id = top;
		if (i + 1 < s->data_from && sfs_wh_is_opaque(st->l[n - 1].fd) == 1)
			break;
	}
	if (ret < 0 && st)
		sfs_stack_put(st);
	if (ret == 0) {
		st->n = n;
		*out = st;
	}
	return ret;
}
