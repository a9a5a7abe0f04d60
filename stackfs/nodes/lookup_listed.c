/* Entries of a READDIRPLUS reply answered from one statx each, without
 * opening them (issue 20: a cold walk opened an O_PATH fd per entry and
 * fstat'ed it, and the fd budget then closed most of those fds again).
 *
 * Only where the union's rules (union/resolve.c) can say nothing but
 * "this entry, as it is": a non-directory found in one layer of its
 * directory, with nothing in the layers above it (neither the name nor
 * its whiteout: what the directory's name index says of its read-only
 * layers, a statx of each other layer), whose branch has no rw role
 * below it (no origin, no hard-link index) and, for a regular file with
 * a branch below, no kernel metacopy mark; no whiteout, no mount point.
 * Everything else is looked up as before.
 *
 * Such a node gets a pending stack: its layer's branch, no fd. At the
 * node's first use (sfs_node_stack_open) its name is resolved again in
 * its parent by the full rules, and the result is taken only if it is
 * still the inode the kernel was given (same device, inode number and
 * type); else the use fails with ESTALE, and the kernel looks the name
 * up again (docs/nodes.md "Listed entries"). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stackfs/ops/ops.h"
#include "union/names.h"
#include "union/resolve.h"
#include "whiteout/metacopy.h"
#include "whiteout/whiteout.h"

/* Whether the rules could find more than the entry itself for a
 * non-directory name of layer l: a kernel metacopy (a regular file with
 * a branch below that carries the mark, asked by name), an origin (a rw
 * branch with branches below), the hard-link index (several links, a rw
 * branch above). */
/* Whether layer l is of a rw branch with branches below: an entry found
 * there may be a copy whose origin gives its identity. */
static bool rw_above(const struct sfs_stack *dst, const struct sfs_layer *l)
{
	return l->bidx + 1 < dst->snap->n && dst->snap->b[l->bidx]->mode == SFS_BRANCH_RW;
}

static bool rules_may_add(const struct sfs_stack *dst, const struct sfs_layer *l,
			  const char *name, const struct stat *st)
{
	const struct sfs_snap *s = dst->snap;
	unsigned b = l->bidx;

	if (rw_above(dst, l))
		return true;
	if (st->st_nlink > 1 && s->top_rw >= 0 && (int)b > s->top_rw)
		return true;
	return b + 1 < s->n && S_ISREG(st->st_mode) && sfs_metacopy_marked_at(l->fd, name) != 0;
}

/* An entry of layer directory l the rules do not show or must look at
 * closer: a whiteout of either kind (an xattr one is an empty regular
 * file). */
static bool not_plain(const struct sfs_stack *dst, const struct sfs_layer *l,
		      const struct stat *st)
{
	if (S_ISCHR(st->st_mode) && st->st_rdev == 0)
		return true;
	return S_ISREG(st->st_mode) && st->st_size == 0 && sfs_layer_xwhiteouts(dst->snap, l);
}

/* Whether the mount lets entries go unopened: not where node ids are
 * file handles (nfs_export reads each entry's generation) or where the
 * branches are watched (-o coherent watches what the stacks hold). */
static bool mount_allows(void)
{
	return !sfs_export && !sfs_m.opts.coherent;
}

/* Layer i of dst for name (hit: its run in the index ix, or ix NULL): 1
 * when it holds neither the name nor its whiteout, 0 with *st when it
 * holds the name, -ENOENT when the last layer holds nothing (gone since
 * the listing), or -EAGAIN and other -errno (look it up in full). */
static int look_layer(const struct sfs_stack *dst, unsigned i, const struct sfs_unames *ix,
		      struct sfs_unames_hit hit, const char *name, struct stat *st)
{
	const struct sfs_layer *l = &dst->l[i];
	bool covered = ix && sfs_unames_covers(ix, l->bidx);
	int ret;

	if (covered && !sfs_unames_may_hold(ix, hit, l->bidx))
		return 1;
	if (covered && sfs_unames_may_whiteout(ix, hit, l->bidx))
		return -EAGAIN;
	/* what the last layer holds is there, and is for the full lookup
	 * (a directory made through the view: no statx wasted per entry) */
	if (i + 1 == dst->n && rw_above(dst, l))
		return -EAGAIN;
	ret = sfs_do_statx_at(l->fd, name, st);
	if (ret != -ENOENT)
		return ret;
	if (covered)
		return -EAGAIN; /* listed, gone since: the rules decide */
	if (i + 1 == dst->n)
		return -ENOENT;
	ret = sfs_wh_has_aufs(l->fd, name);
	return ret == 0 ? 1 : -EAGAIN;
}

/* The layer of dst that holds name, looking only where the name index
 * (if any) says the name or its whiteout may be: its index with *st, or
 * -errno as look_layer. */
static int find_layer(struct sfs_node *dir, struct sfs_stack *dst, const char *name,
		      struct stat *st)
{
	struct sfs_dirnames *names = dst->n > 1 ? sfs_dirnames_get(dir, dst) : NULL;
	const struct sfs_unames *ix = sfs_dirnames_ix(names);
	struct sfs_unames_hit hit = ix ? sfs_unames_find(ix, name) : (struct sfs_unames_hit){ 0, 0 };
	int ret = -EAGAIN;
	unsigned i;

	for (i = 0; i < dst->n; i++) {
		ret = look_layer(dst, i, ix, hit, name, st);
		if (ret != 1)
			break;
	}
	sfs_dirnames_put(names);
	if (ret == 1)
		return -EAGAIN;
	return ret < 0 ? ret : (int)i;
}

/* The stat of name in dst when it can be answered unopened, and *bidx
 * its branch: 0, -ENOENT (gone since the listing), or -EAGAIN (look it
 * up in full). */
static int stat_listed(struct sfs_node *dir, struct sfs_stack *dst, const char *name,
		       struct stat *st, unsigned *bidx)
{
	const struct sfs_layer *l;
	int k;

	if (dst->closed || !mount_allows())
		return -EAGAIN;
	k = find_layer(dir, dst, name, st);
	if (k == -ENOENT)
		return k;
	if (k < 0)
		return -EAGAIN;
	l = &dst->l[k];
	if (S_ISDIR(st->st_mode) || not_plain(dst, l, st) || rules_may_add(dst, l, name, st))
		return -EAGAIN;
	*bidx = l->bidx;
	return 0;
}

int sfs_lookup_listed(struct sfs_node *dir, const char *name, struct fuse_entry_param *e)
{
	struct sfs_stack *dst, *st = NULL;
	struct sfs_node *n;
	struct stat top;
	unsigned bidx;
	int ret;

	memset(e, 0, sizeof(*e));
	ret = sfs_node_stack_open(dir, &dst);
	if (ret == 0)
		ret = stat_listed(dir, dst, name, &top, &bidx);
	if (ret == 0 && !(st = sfs_stack_new(dst->snap, 1)))
		ret = -ENOMEM;
	if (ret == 0) {
		st->l[0].bidx = bidx;
		st->closed = st->pending = true;
	}
	sfs_stack_put(dst);
	if (ret < 0)
		return ret;
	ret = sfs_node_lookup_insert(dir, name, st, &top, &n);
	if (ret < 0)
		return ret;
	sfs_count(lookups, 1);
	sfs_count(listed_lookups, 1);
	st = sfs_node_stack_peek(n);
	sfs_stat_fill(n, st, &top, &e->attr);
	sfs_stack_put(st);
	e->attr_timeout = sfs_timeout;
	e->entry_timeout = sfs_timeout;
	e->ino = sfs_node_id(n);
	e->generation = n->generation;
	return 0;
}

/* The identity a listed node was given: its key (the entry itself). */
static bool same_entry(const struct sfs_node *n, const struct stat *id)
{
	return (uint64_t)id->st_dev == n->key_dev && (uint64_t)id->st_ino == n->key_ino &&
	       (id->st_mode & S_IFMT) == n->type;
}

int sfs_listed_resolve(struct sfs_node *n, struct sfs_node *parent, const char *name,
		       struct sfs_stack **out)
{
	struct sfs_stack *dst, *st = NULL;
	struct stat top, id;
	int ret = sfs_node_stack_open(parent, &dst);

	if (ret == 0)
		ret = sfs_resolve(dst, name, &st, &top, &id);
	sfs_stack_put(dst);
	if (ret == 0 && !same_entry(n, &id)) {
		sfs_stack_put(st);
		ret = -ESTALE;
	}
	/* the name is gone, or another file's: the kernel's inode is stale */
	if (ret == -ENOENT || ret == -ENOTDIR)
		ret = -ESTALE;
	if (ret == 0)
		*out = st;
	return ret;
}
