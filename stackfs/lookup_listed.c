/* Entries of a READDIRPLUS reply answered from one statx each, without
 * opening them (issue 20: a cold walk opened an O_PATH fd per entry and
 * fstat'ed it, and the fd budget then closed most of those fds again).
 *
 * Only where the union's rules (union/resolve.c) can say nothing but
 * "this entry, as it is": a non-directory in a directory of one layer,
 * whose branch has no rw role below it (no origin, no hard-link index)
 * and, for a regular file, no branch below at all (no kernel metacopy);
 * no whiteout, no mount point. Everything else is looked up as before.
 *
 * Such a node gets a pending stack: its layer's branch, no fd. At the
 * node's first use (sfs_node_stack_open) its name is resolved again in
 * its parent by the full rules, and the result is taken only if it is
 * still the inode the kernel was given (same device, inode number and
 * type); else the use fails with ESTALE, and the kernel looks the name
 * up again (NOTES.md "Listed entries"). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stackfs/ops.h"
#include "whiteout/whiteout.h"

/* Whether the rules could find more than the entry itself for a
 * non-directory of layer l of a one-layer directory: a kernel metacopy
 * (a regular file with branches below), an origin (a rw branch with
 * branches below), the hard-link index (several links, a rw branch
 * above). */
static bool rules_may_add(const struct sfs_stack *dst, const struct stat *st)
{
	const struct sfs_snap *s = dst->snap;
	unsigned b = dst->l[0].bidx;

	if (b + 1 < s->n && (S_ISREG(st->st_mode) || s->b[b]->mode == SFS_BRANCH_RW))
		return true;
	return st->st_nlink > 1 && s->top_rw >= 0 && (int)b > s->top_rw;
}

/* An entry the rules do not show or must look at closer: a whiteout of
 * either kind (an xattr one is an empty regular file). */
static bool not_plain(int dirfd, const struct stat *st)
{
	if (S_ISCHR(st->st_mode) && st->st_rdev == 0)
		return true;
	return S_ISREG(st->st_mode) && st->st_size == 0 && sfs_wh_dir_has_xwhiteouts(dirfd);
}

/* Whether the mount lets entries go unopened: not where node ids are
 * file handles (nfs_export reads each entry's generation) or where the
 * branches are watched (-o coherent watches what the stacks hold). */
static bool mount_allows(void)
{
	return !sfs_export && !sfs_m.opts.coherent;
}

/* The stat of name in dst when it can be answered unopened: 0, -ENOENT
 * (gone since the listing), or -EAGAIN (look it up in full). */
static int stat_listed(const struct sfs_stack *dst, const char *name, struct stat *st)
{
	int ret;

	if (dst->n != 1 || dst->closed || !mount_allows())
		return -EAGAIN;
	ret = sfs_do_statx_at(dst->l[0].fd, name, st);
	if (ret == -ENOENT)
		return ret;
	if (ret < 0 || S_ISDIR(st->st_mode) || not_plain(dst->l[0].fd, st) ||
	    rules_may_add(dst, st))
		return -EAGAIN;
	return 0;
}

int sfs_lookup_listed(struct sfs_node *dir, const char *name, struct fuse_entry_param *e)
{
	struct sfs_stack *dst, *st = NULL;
	struct sfs_node *n;
	struct stat top;
	int ret;

	memset(e, 0, sizeof(*e));
	ret = sfs_node_stack_open(dir, &dst);
	if (ret == 0)
		ret = stat_listed(dst, name, &top);
	if (ret == 0 && !(st = sfs_stack_new(dst->snap, 1)))
		ret = -ENOMEM;
	if (ret == 0) {
		st->l[0].bidx = dst->l[0].bidx;
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
