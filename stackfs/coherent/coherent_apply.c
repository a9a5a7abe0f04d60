/* -o coherent: what a change in a read-only branch does to the view
 * (docs/coherent.md "Lower branches that change"). The watcher (coherent.c)
 * hands over a batch of events, each a directory of a branch (an fd) and
 * a name in it. Each is mapped to the union's cached node of that
 * directory by walking its path in the branch from the root through the
 * union's rules (a directory the kernel has no node of has nothing
 * cached below it either); the name is then resolved again by those
 * rules, so an upper entry, a whiteout or an opaque directory still
 * hides whatever appears below. What the daemon cached is refreshed at
 * once (the directory's name index, a directory's layers); what the
 * kernel cached is dropped by notifications sent after the batch, with
 * node references held but no lock. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <unistd.h>

#include "stackfs/stackfs.h"
#include "whiteout/whiteout.h"

#define NAME_EVENTS (FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO)
/* How far back a batch looks for the same notification. */
#define DEDUP_WINDOW 16

enum op_kind { OP_ENTRY, OP_INODE };

/* A notification to send: the kernel's entry parent/name dropped (a
 * removal when `child` is set), or an inode's attributes and pages. */
struct op {
	enum op_kind kind;
	struct sfs_node *node;    /* the parent, or the inode; referenced */
	struct sfs_node *child;   /* removed: the node it showed; referenced */
	char *name;
	bool gone;                /* the name no longer resolves */
};

struct batch {
	struct op *v;
	size_t n, cap;
};

/* The cached node of a branch directory and what led to it. */
struct walk {
	struct sfs_node *dir;     /* referenced */
	struct sfs_node *parent;  /* referenced; NULL for the root */
	char *name;               /* dir's name in parent */
	struct sfs_stack *fresh;  /* dir resolved now; NULL for the root */
};

static void walk_drop(struct walk *w)
{
	if (w->dir)
		sfs_node_unref(w->dir);
	if (w->parent)
		sfs_node_unref(w->parent);
	if (w->fresh)
		sfs_stack_put(w->fresh);
	free(w->name);
	*w = (struct walk){ 0 };
}

/* Adds an op, taking over the reference on node; the same op queued
 * shortly before is not repeated. */
static void op_add(struct batch *b, enum op_kind kind, struct sfs_node *node,
		   const char *name, bool gone)
{
	struct op *v;

	for (size_t i = b->n; i > 0 && i + DEDUP_WINDOW > b->n; i--) {
		struct op *o = &b->v[i - 1];

		if (o->kind == kind && o->node == node &&
		    (!name || !strcmp(o->name, name))) {
			o->gone = gone;
			sfs_node_unref(node);
			return;
		}
	}
	if (b->n == b->cap) {
		size_t nc = b->cap ? b->cap * 2 : 64;

		v = realloc(b->v, nc * sizeof(*v));
		if (!v)
			goto fail;
		b->v = v;
		b->cap = nc;
	}
	b->v[b->n] = (struct op){ kind, node, NULL, name ? strdup(name) : NULL, gone };
	if (name && !b->v[b->n].name)
		goto fail;
	b->n++;
	return;
fail:
	/* without memory: the change shows after the timeout, as without
	 * -o coherent; said, never silent */
	sfs_log(SFS_LOG_WARN, "coherent: no memory for a notification");
	sfs_node_unref(node);
}

static void op_ref_add(struct batch *b, enum op_kind kind, struct sfs_node *node,
		       const char *name, bool gone)
{
	sfs_node_ref(node);
	op_add(b, kind, node, name, gone);
}

/* The path of directory dirfd beneath the read-only branch it is in. */
static int locate(int dirfd, char *rel, size_t len)
{
	struct sfs_snap *s = sfs_snap_current();
	struct stat st;
	int ret = sfs_do_fstat(dirfd, &st) < 0 ? -errno : -ENOENT;

	for (unsigned i = 0; ret == -ENOENT && i < s->n; i++) {
		const struct sfs_layer l = { .fd = dirfd, .bidx = i };

		if (s->b[i]->mode != SFS_BRANCH_RO || s->b[i]->dev != st.st_dev)
			continue;
		ret = sfs_layer_path(s, &l, rel, len);
		if (ret == -ESTALE)
			ret = -ENOENT;
	}
	sfs_snap_put(s);
	return ret;
}

/* One step of a walk: dir's child name, when it is a cached directory. */
static int walk_step(struct walk *w, const char *name)
{
	struct sfs_stack *st = sfs_node_stack(w->dir), *fresh;
	struct sfs_node *child = NULL;
	struct stat top, id;
	int ret = sfs_resolve(st, name, &fresh, &top, &id);

	sfs_stack_put(st);
	if (ret < 0)
		return ret;
	if (S_ISDIR(top.st_mode))
		child = sfs_node_find(&id);
	if (!child) {
		sfs_stack_put(fresh);
		return -ENOENT;
	}
	if (w->parent)
		sfs_node_unref(w->parent);
	if (w->fresh)
		sfs_stack_put(w->fresh);
	free(w->name);
	w->parent = w->dir;
	w->dir = child;
	w->fresh = fresh;
	w->name = strdup(name);
	return w->name ? 0 : -ENOMEM;
}

/* The cached node of the union directory at rel ("/a/b"). */
static int walk(const char *rel, struct walk *w)
{
	char *copy = strdup(rel), *save = NULL;
	int ret = copy ? 0 : -ENOMEM;

	*w = (struct walk){ .dir = sfs_node_root() };
	for (char *c = copy ? strtok_r(copy, "/", &save) : NULL; c && ret == 0;
	     c = strtok_r(NULL, "/", &save))
		ret = walk_step(w, c);
	free(copy);
	if (ret < 0)
		walk_drop(w);
	return ret;
}

/* The directory's own layers may have changed (its attributes, an
 * opaque mark): its stack resolved again, and the kernel's entry of it
 * dropped with everything below. The root's change may change every
 * name: all is dropped. */
static void refresh_dir(struct batch *b, struct walk *w)
{
	struct sfs_snap *s;
	struct sfs_stack *st;
	struct stat id;

	if (!w->parent) {
		s = sfs_snap_current();
		if (sfs_root_stack(s, &st, &id) == 0)
			sfs_node_set_stack(w->dir, st);
		sfs_snap_put(s);
		sfs_log(SFS_LOG_INFO, "coherent: a branch root changed: every cached entry dropped");
		sfs_coh_invalidate_all();
		return;
	}
	if (w->fresh) {
		sfs_node_set_stack(w->dir, w->fresh);
		w->fresh = NULL;
	}
	op_ref_add(b, OP_ENTRY, w->parent, w->name, false);
	op_ref_add(b, OP_INODE, w->dir, NULL, false);
}

/* A name of directory node p changed in a branch. */
static void name_changed(struct batch *b, struct sfs_node *p, const char *name, uint32_t mask)
{
	bool names = mask & NAME_EVENTS;
	struct sfs_stack *st, *fresh;
	struct sfs_node *c = NULL;
	struct stat top, id;
	int ret;

	if (names) {
		sfs_dirnames_drop(p);
		op_ref_add(b, OP_INODE, p, NULL, false); /* its listing, times, links */
	}
	st = sfs_node_stack(p);
	ret = sfs_resolve(st, name, &fresh, &top, &id);
	sfs_stack_put(st);
	if (ret == 0) {
		c = sfs_node_find(&id);
		if (c && S_ISDIR(top.st_mode))
			sfs_node_set_stack(c, fresh); /* layers added or gone */
		else
			sfs_stack_put(fresh);
	}
	if (names || ret < 0)
		op_ref_add(b, OP_ENTRY, p, name, ret == -ENOENT);
	if (c)
		op_add(b, OP_INODE, c, NULL, false);
}

/* One event, on the walk of its directory. */
static void apply_event(struct batch *b, struct walk *w, const struct sfs_coh_ev *ev)
{
	const char *name = ev->name;

	if (!name || !strcmp(name, SFS_WH_OPQ)) {
		refresh_dir(b, w);
		return;
	}
	/* an aufs whiteout changes what its name shows */
	if (!strncmp(name, SFS_WH_PREFIX, SFS_WH_PREFIX_LEN) && name[SFS_WH_PREFIX_LEN])
		name += SFS_WH_PREFIX_LEN;
	if (sfs_name_reserved(w->dir, name))
		return;
	name_changed(b, w->dir, name, ev->mask);
}

/* Whether node n's entry is gone from its branch (an entry another name
 * or branch still shows keeps its kernel inode: a removal notification
 * would mark it deleted). */
static bool entry_gone(struct sfs_node *n)
{
	struct sfs_stack *st;
	struct stat s;
	int ret = sfs_node_stack_open(n, &st);

	if (ret == 0)
		ret = sfs_do_fstat(st->l[0].fd, &s) < 0 ? -errno : 0;
	sfs_stack_put(st);
	return ret == -ESTALE || ret == -ENOENT || (ret == 0 && s.st_nlink == 0);
}

/* For the names that no longer resolve: the nodes they showed, when
 * those are gone too (a removal the kernel tells watchers of). */
static void find_removed(struct batch *b)
{
	struct sfs_node_name *want = NULL;
	struct sfs_node **found = NULL;
	size_t k = 0;

	for (size_t i = 0; i < b->n; i++)
		k += b->v[i].gone;
	if (!k || !(want = calloc(k, sizeof(*want))) || !(found = calloc(k, sizeof(*found))))
		goto out;
	k = 0;
	for (size_t i = 0; i < b->n; i++)
		if (b->v[i].gone)
			want[k++] = (struct sfs_node_name){ sfs_node_id(b->v[i].node), b->v[i].name, 0 };
	sfs_nodes_at(want, k, found);
	k = 0;
	for (size_t i = 0; i < b->n; i++) {
		struct sfs_node *c;

		if (!b->v[i].gone || !(c = found[k++]))
			continue;
		if (entry_gone(c))
			b->v[i].child = c;
		else
			sfs_node_unref(c);
	}
out:
	free(want);
	free(found);
}

/* The notifications, with no lock held; then the references dropped. */
static void flush(struct batch *b)
{
	struct fuse_session *se = sfs_m.se;

	for (size_t i = 0; i < b->n; i++) {
		struct op *o = &b->v[i];
		fuse_ino_t id = sfs_node_id(o->node);
		int ret = -1;

		if (se && o->kind == OP_INODE)
			fuse_lowlevel_notify_inval_inode(se, id, 0, 0);
		if (se && o->kind == OP_ENTRY && o->child)
			ret = fuse_lowlevel_notify_delete(se, id, sfs_node_id(o->child),
							  o->name, strlen(o->name));
		if (se && o->kind == OP_ENTRY && ret != 0)
			fuse_lowlevel_notify_inval_entry(se, id, o->name, strlen(o->name));
		atomic_fetch_add_explicit(&sfs_coh_stats.notifications, 1, memory_order_relaxed);
		if (o->child)
			sfs_node_unref(o->child);
		sfs_node_unref(o->node);
		free(o->name);
	}
	free(b->v);
}

void sfs_coh_apply(const struct sfs_coh_ev *ev, size_t n)
{
	char *rel = malloc(PATH_MAX), *last = NULL;
	struct batch b = { 0 };
	struct walk w = { 0 };

	for (size_t i = 0; rel && i < n; i++) {
		if (locate(ev[i].dirfd, rel, PATH_MAX) < 0)
			continue; /* not beneath a read-only branch */
		/* events come in runs of one directory: one walk each */
		if (!last || strcmp(last, rel)) {
			walk_drop(&w);
			free(last);
			last = strdup(rel);
			if (walk(rel, &w) < 0)
				w.dir = NULL; /* nothing cached there */
		}
		if (w.dir)
			apply_event(&b, &w, &ev[i]);
	}
	walk_drop(&w);
	free(last);
	free(rel);
	find_removed(&b);
	flush(&b);
}

/* Events were lost: every entry and inode the kernel caches dropped,
 * and every directory's name index. */
void sfs_coh_overflow(void)
{
	atomic_fetch_add_explicit(&sfs_coh_stats.overflows, 1, memory_order_relaxed);
	sfs_log(SFS_LOG_WARN, "coherent: events lost (queue overflow): every cached entry dropped");
	sfs_coh_invalidate_all();
}

void sfs_coh_invalidate_all(void)
{
	sfs_dirnames_drop_all();
	sfs_invalidate_all(true);
}

/* Drops the kernel's entries: every cached name (a directory's drops its
 * whole subtree, negative entries included) and the names of the root,
 * whose negative entries nothing else reaches; with inodes, every cached
 * inode's attributes and pages too (-o coherent lost events: the data of
 * any file may have changed). */
void sfs_invalidate_all(bool inodes)
{
	struct sfs_node_name *v = NULL;
	struct sfs_dirlist l = { 0 };
	struct sfs_stack *st;
	size_t n = 0;

	if (!sfs_m.se)
		return;
	if (sfs_nodes_names(&v, &n) == 0) {
		for (size_t i = 0; i < n; i++)
			fuse_lowlevel_notify_inval_entry(sfs_m.se, v[i].parent, v[i].name,
							 strlen(v[i].name));
	}
	for (size_t i = 0; inodes && i < n; i++)
		fuse_lowlevel_notify_inval_inode(sfs_m.se, v[i].self, 0, 0);
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	st = sfs_node_stack(sfs_node_root());
	if (sfs_dirlist_read(st, true, &l) == 0)
		for (size_t i = 0; i < l.n; i++)
			fuse_lowlevel_notify_inval_entry(sfs_m.se, FUSE_ROOT_ID, l.e[i].name,
							 strlen(l.e[i].name));
	sfs_dirlist_free(&l);
	sfs_stack_put(st);
	fuse_lowlevel_notify_inval_inode(sfs_m.se, FUSE_ROOT_ID, inodes ? 0 : -1, 0);
}
