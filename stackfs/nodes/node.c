/* The inode table: union inodes keyed by the identity of their real entry,
 * with the kernel's lookup counts and the daemon's own references.
 *
 * Locking: the table is split into shards, each with a mutex that guards
 * its chains and the nlookup/refs counters of its nodes. A node's own
 * mutex guards its stack, parent and name. Order: never hold a shard lock
 * while taking another shard lock or a node lock; a node lock may be held
 * while taking a shard lock (sfs_node_ref of the parent). No lock is held
 * while replying to the kernel. The namespace locks (below) come before
 * all of these. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stackfs/stackfs.h"
#include "union/resolve.h"

#define SHARDS 64

struct shard {
	pthread_mutex_t lock;
	struct sfs_node **buckets;
	size_t nbuckets;
	size_t count;
};

static struct shard shards[SHARDS];
static struct sfs_node *root;

static uint64_t key_hash(uint64_t dev, uint64_t ino)
{
	uint64_t h = ino * 0x9e3779b97f4a7c15ULL ^ (dev + 0x7f4a7c159e3779b9ULL);
	return h ^ (h >> 29);
}

static struct shard *shard_of(uint64_t h)
{
	return &shards[h % SHARDS];
}

/* The parts above the table that keep something per node (the
 * listings, coherent's inotify watches): told of a node's stack and of
 * its end through hooks, so that the table never calls up into them. */
#define MAX_HOOKS 4
static const struct sfs_node_hooks *hooks[MAX_HOOKS];
static unsigned nhooks;

int sfs_nodes_hook(const struct sfs_node_hooks *h)
{
	if (nhooks == MAX_HOOKS)
		return -ENOSPC;
	hooks[nhooks++] = h;
	return 0;
}

static void hooks_stack_set(struct sfs_node *n, const struct sfs_stack *st)
{
	for (unsigned i = 0; i < nhooks; i++)
		if (hooks[i]->stack_set)
			hooks[i]->stack_set(n, st);
}

static void hooks_freed(struct sfs_node *n)
{
	for (unsigned i = 0; i < nhooks; i++)
		if (hooks[i]->freed)
			hooks[i]->freed(n);
}

/* With nfs_export=on the table is hashed by node id (the union inode
 * number), which the kernel's requests carry, so that an id is found
 * without the node's address; else by identity. */
static uint64_t node_hash(const struct sfs_node *n)
{
	return sfs_export ? key_hash(0, n->ino) : key_hash(n->key_dev, n->key_ino);
}

static void stack_free(struct sfs_stack *st)
{
	for (unsigned i = 0; i < st->n; i++)
		if (st->l[i].fd >= 0)
			close(st->l[i].fd);
	if (st->snap)
		sfs_snap_put(st->snap);
	sfs_dirnames_put(st->names);
	free(st);
}

struct sfs_stack *sfs_stack_new(struct sfs_snap *snap, unsigned n)
{
	struct sfs_stack *st = calloc(1, sizeof(*st) + n * sizeof(st->l[0]));

	if (!st)
		return NULL;
	atomic_init(&st->refs, 1);
	st->snap = sfs_snap_get(snap);
	st->n = n;
	for (unsigned i = 0; i < n; i++)
		st->l[i].fd = -1;
	return st;
}

struct sfs_stack *sfs_stack_get(struct sfs_stack *st)
{
	atomic_fetch_add_explicit(&st->refs, 1, memory_order_relaxed);
	return st;
}

void sfs_stack_put(struct sfs_stack *st)
{
	if (st && atomic_fetch_sub_explicit(&st->refs, 1, memory_order_acq_rel) == 1)
		stack_free(st);
}

const struct sfs_layer *sfs_stack_in(const struct sfs_stack *st, const struct sfs_branch *b)
{
	for (unsigned i = 0; i < st->n; i++)
		if (st->snap->b[st->l[i].bidx]->shared == b->shared)
			return &st->l[i];
	return NULL;
}

int sfs_snap_pos(const struct sfs_snap *s, const struct sfs_branch *b)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->b[i]->shared == b->shared)
			return (int)i;
	return -1;
}

unsigned char *sfs_layer_keep_xwh(const struct sfs_snap *s, const struct sfs_layer *l)
{
	if (s->b[l->bidx]->mode != SFS_BRANCH_RO)
		return NULL;
	/* the one field of a shared stack written after it was made: once,
	 * atomically, with what any thread asking would find */
	return (unsigned char *)&l->xwh;
}

bool sfs_layer_xwhiteouts(const struct sfs_snap *s, const struct sfs_layer *l)
{
	return sfs_u_dir_xwhiteouts(l->fd, SFS_XWH_UNKNOWN, sfs_layer_keep_xwh(s, l));
}

struct sfs_stack *sfs_stack_rebase(const struct sfs_stack *st, struct sfs_snap *s,
				   unsigned extra)
{
	struct sfs_stack *ns = sfs_stack_new(s, st->n + extra);
	unsigned j = 0;
	int p;

	for (unsigned i = 0; ns && i < st->n; i++) {
		p = sfs_snap_pos(s, sfs_layer_branch(st, &st->l[i]));
		if (p < 0)
			continue; /* a branch the snapshot no longer has */
		ns->l[j].bidx = (unsigned)p;
		ns->l[j].fd = fcntl(st->l[i].fd, F_DUPFD_CLOEXEC, 0);
		if (ns->l[j++].fd < 0) {
			sfs_stack_put(ns);
			return NULL;
		}
	}
	if (ns)
		ns->n = j;
	return ns;
}

int sfs_nodes_init(void)
{
	for (int i = 0; i < SHARDS; i++) {
		pthread_mutex_init(&shards[i].lock, NULL);
		shards[i].nbuckets = 64;
		shards[i].buckets = calloc(64, sizeof(struct sfs_node *));
		if (!shards[i].buckets)
			return -ENOMEM;
	}
	return 0;
}

/* Grows a shard's bucket array when chains get long; under its lock. */
static void shard_grow(struct shard *s)
{
	size_t nb = s->nbuckets * 2;
	struct sfs_node **b = calloc(nb, sizeof(*b));

	if (!b)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < s->nbuckets; i++) {
		struct sfs_node *n = s->buckets[i], *next;

		for (; n; n = next) {
			size_t k = (node_hash(n) / SHARDS) % nb;

			next = n->hnext;
			n->hnext = b[k];
			b[k] = n;
		}
	}
	free(s->buckets);
	s->buckets = b;
	s->nbuckets = nb;
}

static struct sfs_node **slot_of(struct shard *s, uint64_t h)
{
	return &s->buckets[(h / SHARDS) % s->nbuckets];
}

static void unhash(struct shard *s, struct sfs_node *n)
{
	struct sfs_node **pp = slot_of(s, node_hash(n));

	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == n) {
			*pp = n->hnext;
			s->count--;
			break;
		}
	}
	n->hnext = NULL;
}

static void node_free(struct sfs_node *n)
{
	struct sfs_node *parent = n->parent;

	if (sfs_export && parent && n->name)
		sfs_xnames_put(n->ino, sfs_node_id(parent), n->name);

	if (n->stack) {
		sfs_fdcache_del(n);
		sfs_stack_put(n->stack);
	}
	hooks_freed(n);
	free(n->name);
	sfs_saved_free(n->saved);
	pthread_mutex_destroy(&n->lock);
	free(n);
	if (parent)
		sfs_node_unref(parent);
}

/* Drops counts under the shard lock; frees the node when nothing holds
 * it any more. */
static void node_release(struct sfs_node *n, uint64_t nlookup, uint64_t refs)
{
	struct shard *s = shard_of(node_hash(n));
	bool dead;

	if (n == root)
		return;
	pthread_mutex_lock(&s->lock);
	n->nlookup -= nlookup;
	n->refs -= refs;
	dead = n->nlookup == 0 && n->refs == 0;
	if (dead)
		unhash(s, n);
	pthread_mutex_unlock(&s->lock);
	if (dead)
		node_free(n);
}

void sfs_node_forget(struct sfs_node *n, uint64_t nlookup)
{
	node_release(n, nlookup, 0);
}

void sfs_node_unref(struct sfs_node *n)
{
	node_release(n, 0, 1);
}

void sfs_node_ref(struct sfs_node *n)
{
	struct shard *s = shard_of(node_hash(n));

	if (n == root)
		return;
	pthread_mutex_lock(&s->lock);
	n->refs++;
	pthread_mutex_unlock(&s->lock);
}

struct sfs_node *sfs_node_root(void)
{
	return root;
}

/* Finds node `id` (nfs_export=on) under its shard lock; counts a
 * kernel lookup on it when `count`. */
static struct sfs_node *by_id(uint64_t id, bool count)
{
	uint64_t h = key_hash(0, id);
	struct shard *s = shard_of(h);
	struct sfs_node *n;

	pthread_mutex_lock(&s->lock);
	for (n = *slot_of(s, h); n && n->ino != id; n = n->hnext)
		;
	if (n && count)
		n->nlookup++;
	pthread_mutex_unlock(&s->lock);
	return n;
}

/* An id the kernel sends is one it holds a lookup on, so its node is in
 * the table (the kernel's decoding of a file handle, which sends ids it
 * does not hold, goes to sfs_node_by_id). */
struct sfs_node *sfs_node_of(fuse_ino_t ino)
{
	if (ino == FUSE_ROOT_ID)
		return root;
	return sfs_export ? by_id(ino, false) : (struct sfs_node *)(uintptr_t)ino;
}

fuse_ino_t sfs_node_id(struct sfs_node *n)
{
	if (n == root)
		return FUSE_ROOT_ID;
	return sfs_export ? (fuse_ino_t)n->ino : (fuse_ino_t)(uintptr_t)n;
}

struct sfs_node *sfs_node_by_id(uint64_t id)
{
	if (id == FUSE_ROOT_ID)
		return root;
	return sfs_export ? by_id(id, true) : NULL;
}

void sfs_node_count(struct sfs_node *n)
{
	struct shard *s = shard_of(node_hash(n));

	if (n == root)
		return;
	pthread_mutex_lock(&s->lock);
	n->nlookup++;
	pthread_mutex_unlock(&s->lock);
}

/* Under n's lock, which it drops and takes again: a pending stack (a
 * listed entry, lookup_listed.c) replaced by the full resolution of the
 * node's name, unless another thread did it meanwhile. The resolution
 * takes the parent's lock, never under a child's. */
static int open_pending(struct sfs_node *n)
{
	struct sfs_stack *pend = sfs_stack_get(n->stack), *st = NULL;
	struct sfs_node *parent = n->parent;
	char *name = n->name ? strdup(n->name) : NULL;
	int ret = parent && name ? 0 : -ENOMEM;

	if (ret == 0)
		sfs_node_ref(parent);
	pthread_mutex_unlock(&n->lock);
	if (ret == 0) {
		ret = sfs_listed_resolve(n, parent, name, &st);
		sfs_node_unref(parent);
	}
	free(name);
	pthread_mutex_lock(&n->lock);
	if (ret == 0 && n->stack == pend) {
		n->stack = st;
		st->used = true;
		sfs_fdcache_add(n);
		sfs_stack_put(pend); /* the node's reference */
	} else if (ret == 0) {
		sfs_stack_put(st);
	}
	sfs_stack_put(pend);
	return ret;
}

/* A closed stack is replaced by a reopened one; the closed one only the
 * node held, so it goes with the swap. */
int sfs_node_stack_open(struct sfs_node *n, struct sfs_stack **out)
{
	struct sfs_stack *st, *old = NULL;
	int ret = 0;

	pthread_mutex_lock(&n->lock);
	/* (another listing may put a pending stack back meanwhile) */
	for (int tries = 0; n->stack->pending && ret == 0 && tries < 4; tries++)
		ret = open_pending(n);
	if (n->stack->closed && !n->stack->pending) {
		ret = sfs_fdcache_reopen(n, &st);
		if (ret == 0) {
			old = n->stack;
			n->stack = st;
			sfs_fdcache_add(n);
		}
	}
	st = sfs_stack_get(n->stack);
	if (!st->used)
		st->used = true;
	pthread_mutex_unlock(&n->lock);
	if (old) {
		sfs_stack_put(old);
		sfs_fdcache_trim();
	}
	if (ret < 0)
		sfs_log(SFS_LOG_DEBUG, "cannot reopen node %llu: %s",
			(unsigned long long)n->ino, strerror(-ret));
	*out = st;
	return ret;
}

struct sfs_stack *sfs_node_stack_peek(struct sfs_node *n)
{
	struct sfs_stack *st;

	pthread_mutex_lock(&n->lock);
	st = sfs_stack_get(n->stack);
	pthread_mutex_unlock(&n->lock);
	return st;
}

struct sfs_stack *sfs_node_stack(struct sfs_node *n)
{
	struct sfs_stack *st;

	sfs_node_stack_open(n, &st);
	return st;
}

void sfs_node_set_stack(struct sfs_node *n, struct sfs_stack *st)
{
	struct sfs_stack *old;

	pthread_mutex_lock(&n->lock);
	sfs_fdcache_del(n);
	old = n->stack;
	n->stack = st;
	st->used = true;
	/* under the lock: the watches follow the stack installed last */
	hooks_stack_set(n, st);
	sfs_saved_free(n->saved); /* other layers */
	n->saved = NULL;
	sfs_fdcache_add(n);
	pthread_mutex_unlock(&n->lock);
	sfs_stack_put(old);
	sfs_fdcache_trim();
}

/* Points n at parent/name; takes a reference on the new parent and
 * drops the one on the old. */
int sfs_node_move(struct sfs_node *n, struct sfs_node *parent, const char *name)
{
	struct sfs_node *oldp;
	char *nm;

	pthread_mutex_lock(&n->lock);
	if (n->parent == parent && n->name && strcmp(n->name, name) == 0) {
		pthread_mutex_unlock(&n->lock);
		return 0;
	}
	pthread_mutex_unlock(&n->lock);
	nm = strdup(name);
	if (!nm)
		return -ENOMEM;
	sfs_node_ref(parent);
	pthread_mutex_lock(&n->lock);
	oldp = n->parent;
	n->parent = parent;
	free(n->name);
	n->name = nm;
	pthread_mutex_unlock(&n->lock);
	if (oldp)
		sfs_node_unref(oldp);
	return 0;
}

/* gen: the identity's real generation with nfs_export=on, else 0 for
 * one from a counter (a reused address then never looks like the old
 * inode to the kernel). */
static struct sfs_node *node_new(const struct stat *idst, struct sfs_stack *st,
				 uint64_t uino, uint32_t gen)
{
	static atomic_uint_fast64_t generations;
	struct sfs_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->generation = sfs_export ? gen : atomic_fetch_add(&generations, 1) + 1;
	pthread_mutex_init(&n->lock, NULL);
	n->key_dev = idst->st_dev;
	n->key_ino = idst->st_ino;
	n->type = idst->st_mode & S_IFMT;
	n->ino = uino;
	n->stack = st;
	n->pt_backing = -1;
	return n;
}

/* Installs a fresh resolution in a node found by identity. It is the
 * truth (the old stack may name a file since replaced under the same
 * inode number), except where the node was copied up and the fresh one
 * is another hard link of the lower file: the copy stays. A pending
 * stack (a listed entry) replaces none of the same snapshot: an open or
 * closed stack holds the same inode (its fd pins it; its handle carries
 * the generation), and replacing it would only make the next use
 * resolve the name again (ls -l: a listing, then xattr reads). */
static void node_refresh(struct sfs_node *n, struct sfs_stack *st)
{
	bool keep;

	pthread_mutex_lock(&n->lock);
	keep = n->stack->snap == st->snap && n->type != S_IFDIR &&
	       (n->stack->l[0].bidx < st->l[0].bidx || st->pending);
	pthread_mutex_unlock(&n->lock);
	if (keep)
		sfs_stack_put(st);
	else
		sfs_node_set_stack(n, st);
}

/* Finds a live node of the same identity and type; with nfs_export=on,
 * the node of the same id (uino), whatever its type: an id is one node
 * of the kernel's, and a reused inode number is told apart by its
 * generation (node_reused). */
static struct sfs_node *find_locked(struct shard *s, uint64_t h,
				    const struct stat *idst, uint64_t uino)
{
	struct sfs_node *n = *slot_of(s, h);

	for (; n; n = n->hnext) {
		if (sfs_export ? n->ino == uino :
		    n->key_dev == (uint64_t)idst->st_dev &&
		    n->key_ino == (uint64_t)idst->st_ino &&
		    n->type == (idst->st_mode & S_IFMT))
			return n;
	}
	return NULL;
}

/* The hash of an identity's place in the table; with nfs_export=on,
 * its id too (else 0: it is not needed to find a node). */
static uint64_t lookup_hash(const struct stat *idst, const struct sfs_snap *snap,
			    uint64_t *uino)
{
	*uino = 0;
	if (!sfs_export)
		return key_hash(idst->st_dev, idst->st_ino);
	*uino = sfs_ino_of(snap, idst->st_dev, idst->st_ino);
	return key_hash(0, *uino);
}

/* nfs_export=on: node n, found by id, now stands for the identity idst
 * with generation gen. Another identity with the same id (a filesystem
 * id reassigned after a branch change) is refused; the same inode number
 * reused by a new inode takes the node over with its generation and
 * type: the kernel then drops its old inode (another generation), and a
 * file handle of the old one answers ESTALE. */
static int node_reused(struct sfs_node *n, const struct stat *idst, uint32_t gen)
{
	if (n->key_dev != (uint64_t)idst->st_dev || n->key_ino != (uint64_t)idst->st_ino) {
		sfs_log(SFS_LOG_ERR, "node id %llu: two identities (a filesystem id "
			"reassigned?): refused", (unsigned long long)n->ino);
		return -EIO;
	}
	pthread_mutex_lock(&n->lock);
	n->generation = gen;
	n->type = idst->st_mode & S_IFMT;
	pthread_mutex_unlock(&n->lock);
	return 0;
}

int sfs_node_lookup_insert(struct sfs_node *parent, const char *name,
			   struct sfs_stack *st, const struct stat *idst,
			   struct sfs_node **out)
{
	uint32_t gen = sfs_export ? sfs_export_gen(st, idst) : 0;
	uint64_t uino, h = lookup_hash(idst, st->snap, &uino);
	struct shard *s = shard_of(h);
	struct sfs_node *n, *fresh;
	int ret;

	fresh = node_new(idst, st, sfs_export ? uino :
			 sfs_ino_of(st->snap, idst->st_dev, idst->st_ino), gen);

	if (!fresh) {
		sfs_stack_put(st);
		return -ENOMEM;
	}
	pthread_mutex_lock(&s->lock);
	n = find_locked(s, h, idst, uino);
	if (n) {
		n->nlookup++;
	} else {
		n = fresh;
		n->nlookup = 1;
		n->refs = 1; /* held until it has its parent link, below */
		n->hnext = *slot_of(s, h);
		*slot_of(s, h) = n;
		if (++s->count > s->nbuckets * 2)
			shard_grow(s);
	}
	pthread_mutex_unlock(&s->lock);
	if (n != fresh) {
		fresh->stack = NULL;
		node_free(fresh);
		ret = sfs_export ? node_reused(n, idst, gen) : 0;
		if (ret < 0) {
			sfs_stack_put(st);
			sfs_node_forget(n, 1);
			return ret;
		}
		node_refresh(n, st);
	} else {
		pthread_mutex_lock(&n->lock);
		st->used = true;
		hooks_stack_set(n, st);
		sfs_fdcache_add(n);
		pthread_mutex_unlock(&n->lock);
		sfs_fdcache_trim();
	}
	ret = sfs_node_move(n, parent, name);
	if (n == fresh)
		sfs_node_unref(n);
	if (ret < 0) {
		sfs_node_forget(n, 1);
		return ret;
	}
	*out = n;
	return 0;
}

/* The root is never forgotten and never in the table. */
int sfs_node_root_init(struct sfs_stack *st, const struct stat *idst)
{
	root = node_new(idst, st, sfs_ino_of(st->snap, idst->st_dev, idst->st_ino), 0);
	if (root)
		hooks_stack_set(root, st);
	return root ? 0 : -ENOMEM;
}

/* At unmount: frees every node left, without following parent links
 * (their targets are freed by the same sweep). */
void sfs_nodes_destroy(void)
{
	for (int i = 0; i < SHARDS; i++) {
		for (size_t b = 0; shards[i].buckets && b < shards[i].nbuckets; b++) {
			struct sfs_node *n = shards[i].buckets[b], *next;

			for (; n; n = next) {
				next = n->hnext;
				n->parent = NULL;
				node_free(n);
			}
		}
		free(shards[i].buckets);
		shards[i].buckets = NULL;
		pthread_mutex_destroy(&shards[i].lock);
	}
	sfs_fdcache_destroy();
	if (root) {
		sfs_stack_put(root->stack);
		free(root->name);
		free(root);
		root = NULL;
	}
}

/* Namespace locks, striped by directory node: see stackfs.h. */
#define NS_STRIPES 128
static pthread_mutex_t ns_locks[NS_STRIPES] = {
	[0 ... NS_STRIPES - 1] = PTHREAD_MUTEX_INITIALIZER
};

static unsigned ns_stripe(const struct sfs_node *dir)
{
	return (unsigned)(((uintptr_t)dir / sizeof(*dir)) % NS_STRIPES);
}

void sfs_ns_lock(struct sfs_node *dir)
{
	pthread_mutex_lock(&ns_locks[ns_stripe(dir)]);
}

void sfs_ns_unlock(struct sfs_node *dir)
{
	pthread_mutex_unlock(&ns_locks[ns_stripe(dir)]);
}

/* Two directories (a rename): in stripe order, one lock for one stripe. */
void sfs_ns_lock2(struct sfs_node *a, struct sfs_node *b)
{
	unsigned x = ns_stripe(a), y = ns_stripe(b);

	pthread_mutex_lock(&ns_locks[x < y ? x : y]);
	if (x != y)
		pthread_mutex_lock(&ns_locks[x < y ? y : x]);
}

void sfs_ns_unlock2(struct sfs_node *a, struct sfs_node *b)
{
	unsigned x = ns_stripe(a), y = ns_stripe(b);

	if (x != y)
		pthread_mutex_unlock(&ns_locks[x]);
	pthread_mutex_unlock(&ns_locks[y]);
}

struct sfs_node *sfs_node_find(const struct stat *idst)
{
	struct sfs_snap *snap = sfs_export ? sfs_snap_current() : NULL;
	uint64_t uino, h = lookup_hash(idst, snap, &uino);
	struct shard *s = shard_of(h);
	struct sfs_node *n;

	if (snap)
		sfs_snap_put(snap);
	pthread_mutex_lock(&s->lock);
	n = find_locked(s, h, idst, uino);
	if (n && sfs_export && (n->key_dev != (uint64_t)idst->st_dev ||
				n->key_ino != (uint64_t)idst->st_ino))
		n = NULL;
	if (n)
		n->refs++;
	pthread_mutex_unlock(&s->lock);
	return n;
}

/* Every cached node but the root, each referenced (give each back with
 * sfs_node_unref and free the array), for the walks of node_walk.c,
 * which look at each node under its own lock after the shard locks are
 * dropped: a node's lock is taken before a shard lock, never after. */
int sfs_nodes_all(struct sfs_node ***out, size_t *count)
{
	struct sfs_node **v = NULL, **nv;
	size_t n = 0, cap = 0;

	for (int i = 0; i < SHARDS; i++) {
		pthread_mutex_lock(&shards[i].lock);
		for (size_t b = 0; b < shards[i].nbuckets; b++)
			for (struct sfs_node *nd = shards[i].buckets[b]; nd; nd = nd->hnext) {
				if (n == cap) {
					cap = cap ? cap * 2 : 256;
					nv = realloc(v, cap * sizeof(*v));
					if (!nv) {
						pthread_mutex_unlock(&shards[i].lock);
						goto fail;
					}
					v = nv;
				}
				nd->refs++;
				v[n++] = nd;
			}
		pthread_mutex_unlock(&shards[i].lock);
	}
	*out = v;
	*count = n;
	return 0;
fail:
	sfs_nodes_put(v, n);
	return -ENOMEM;
}

void sfs_nodes_put(struct sfs_node **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sfs_node_unref(v[i]);
	free(v);
}

/* nfs_export=on, when the loop has ended (no request in flight): every
 * cached node's name, kept as a forgotten node's would be. */
void sfs_nodes_remember(void)
{
	for (int i = 0; i < SHARDS; i++) {
		pthread_mutex_lock(&shards[i].lock);
		for (size_t b = 0; b < shards[i].nbuckets; b++) {
			for (struct sfs_node *nd = shards[i].buckets[b]; nd; nd = nd->hnext) {
				if (nd->parent && nd->name)
					sfs_xnames_put(nd->ino, sfs_node_id(nd->parent), nd->name);
			}
		}
		pthread_mutex_unlock(&shards[i].lock);
	}
}
