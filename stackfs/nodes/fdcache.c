/* The budget of node fds: the O_PATH fds of the stacks that cached nodes
 * hold are closed, least recently used first, when there are more than a
 * budget derived from RLIMIT_NOFILE, and reopened from file handles at the
 * node's next use. So the daemon's fds no longer grow with the kernel's
 * inode cache (issue 13: one user's 25,000 files made every request of
 * every user fail with EMFILE).
 *
 * Only a stack that no request holds is closed: a request pins the fds it
 * uses by its reference on the stack (sfs_node_stack), and the closing is
 * done under the node's lock with the node's own reference the only one,
 * so nobody sees a stack change. A reopened stack is a new stack.
 *
 * The nodes whose stacks hold counted fds sit in arrays, sharded by node
 * address, each under its own mutex, swept CLOCK-wise (a stack's `used`
 * mark, set at every sfs_node_stack, buys it one more sweep). Lock order:
 * a node lock, then a shard lock here; a sweep holds its shard lock and
 * only tries node locks. No lock of the hot path is global. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "stackfs/stackfs.h"

#define LRU_SHARDS 16
#define BUDGET_MIN 64u

struct lru_shard {
	pthread_mutex_t lock;
	struct sfs_node **v;      /* the nodes whose stack fds are counted */
	uint32_t n, cap;
	uint32_t hand;            /* where the next sweep starts */
};

static struct lru_shard lru[LRU_SHARDS] = {
	[0 ... LRU_SHARDS - 1] = { .lock = PTHREAD_MUTEX_INITIALIZER }
};
static atomic_uint_fast64_t counted;  /* fds of the stacks in the arrays */
static atomic_uint_fast64_t trim_floor; /* no sweep below this count */
static atomic_llong trim_retry;       /* ... before this second */
static atomic_uint trim_hand;
static atomic_flag trimming = ATOMIC_FLAG_INIT;
static unsigned budget = ~0u;         /* ~0: closing off */

/* What reopens one layer: its handle and the inode it must find. The
 * layers of a stack are packed in one allocation, each record 8-aligned
 * (~48 B for a file on ext4 or XFS, in the node's sfs_saved). */
struct saved_layer {
	uint64_t dev, ino;
	int32_t type;
	uint32_t bytes;
	unsigned char h[];
};

struct sfs_saved {
	uint32_t n;
	uint32_t len;
	unsigned char rec[];      /* n saved_layer records */
};

static size_t rec_size(uint32_t bytes)
{
	return (sizeof(struct saved_layer) + bytes + 7) & ~(size_t)7;
}

static const struct saved_layer *saved_at(const struct sfs_saved *sv, unsigned i)
{
	size_t off = 0;

	while (i--)
		off += rec_size(((const struct saved_layer *)(sv->rec + off))->bytes);
	return (const struct saved_layer *)(sv->rec + off);
}

static bool can_open_handles(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d) < 0)
		return false;
	return d[CAP_DAC_READ_SEARCH / 32].effective & (1u << (CAP_DAC_READ_SEARCH % 32));
}

/* Half of what is left of the limit after a reserve: the other half is
 * for the files the callers open (an fd each, two across a copy-up), the
 * FUSE device, the control channel and copy-up's transient fds. Without
 * CAP_DAC_READ_SEARCH no handle can be opened: fds stay as before. */
void sfs_fdcache_init(void)
{
	struct rlimit rl;
	uint64_t b;

	if (!can_open_handles()) {
		sfs_log(SFS_LOG_WARN, "no CAP_DAC_READ_SEARCH: node fds are not bounded");
		return;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return;
	b = rl.rlim_cur > 2 * BUDGET_MIN + 64 ? (rl.rlim_cur - 64) / 2 : BUDGET_MIN;
	budget = b > ~0u - 1 ? ~0u - 1 : (unsigned)b;
	atomic_store(&trim_floor, budget);
}

unsigned sfs_fdcache_budget(void)
{
	return budget;
}

uint64_t sfs_fdcache_count(void)
{
	return atomic_load_explicit(&counted, memory_order_relaxed);
}

static struct lru_shard *shard_of(const struct sfs_node *n)
{
	return &lru[((uintptr_t)n / sizeof(*n)) % LRU_SHARDS];
}

/* Under n's lock: its stack's fds are counted from now on. */
void sfs_fdcache_add(struct sfs_node *n)
{
	struct lru_shard *s = shard_of(n);

	/* a stack on a branch whose handles may open another inode (FUSE:
	 * the client's node ids are reused) is never closed */
	if (budget == ~0u || n == sfs_node_root() || n->stack->closed ||
	    n->stack->nohandle || n->stack->snap->pin_fds)
		return;
	pthread_mutex_lock(&s->lock);
	if (n->lru_slot == 0 && s->n == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 64;
		struct sfs_node **v = realloc(s->v, cap * sizeof(*v));

		if (v) {
			s->v = v;
			s->cap = cap;
		}
	}
	if (n->lru_slot == 0 && s->n < s->cap) {
		s->v[s->n++] = n;
		n->lru_slot = s->n;
		atomic_fetch_add_explicit(&counted, n->stack->n, memory_order_relaxed);
	}
	pthread_mutex_unlock(&s->lock);
}

/* At unmount, after the last node. */
void sfs_fdcache_destroy(void)
{
	for (unsigned i = 0; i < LRU_SHARDS; i++) {
		free(lru[i].v);
		lru[i].v = NULL;
		lru[i].n = lru[i].cap = 0;
	}
}

/* Under the shard lock. */
static void shard_remove(struct lru_shard *s, struct sfs_node *n)
{
	uint32_t i = n->lru_slot - 1;

	s->v[i] = s->v[--s->n];
	s->v[i]->lru_slot = i + 1;
	n->lru_slot = 0;
	atomic_fetch_sub_explicit(&counted, n->stack->n, memory_order_relaxed);
}

/* Under n's lock, or with n unreachable: before its stack is replaced or
 * the node freed. */
void sfs_fdcache_del(struct sfs_node *n)
{
	struct lru_shard *s = shard_of(n);

	if (budget == ~0u)
		return;
	pthread_mutex_lock(&s->lock);
	if (n->lru_slot)
		shard_remove(s, n);
	pthread_mutex_unlock(&s->lock);
}

/* Appends the handle of fd to *svp (reallocated). */
static int save_layer(struct sfs_saved **svp, int fd)
{
	struct {
		struct file_handle fh;
		unsigned char buf[MAX_HANDLE_SZ];
	} h = { .fh.handle_bytes = MAX_HANDLE_SZ };
	struct sfs_saved *sv = *svp;
	struct saved_layer *sl;
	struct stat st;
	size_t len;
	int mnt;

	if (sfs_do_name_to_handle(fd, "", &h.fh, &mnt, AT_EMPTY_PATH) < 0)
		return -errno;
	if (sfs_do_fstat(fd, &st) < 0)
		return -errno;
	len = sv->len + rec_size(h.fh.handle_bytes);
	sv = realloc(sv, sizeof(*sv) + len);
	if (!sv)
		return -ENOMEM;
	sl = (struct saved_layer *)(sv->rec + sv->len);
	sl->dev = st.st_dev;
	sl->ino = st.st_ino;
	sl->type = h.fh.handle_type;
	sl->bytes = h.fh.handle_bytes;
	memcpy(sl->h, h.fh.f_handle, sl->bytes);
	sv->len = (uint32_t)len;
	sv->n++;
	*svp = sv;
	return 0;
}

void sfs_saved_free(struct sfs_saved *sv)
{
	free(sv);
}

/* The handles of every layer, made once per stack of the node: a
 * reopened stack has the same layers. */
static struct sfs_saved *save_stack(const struct sfs_stack *st)
{
	struct sfs_saved *sv = calloc(1, sizeof(*sv));

	for (unsigned i = 0; sv && i < st->n; i++) {
		if (save_layer(&sv, st->l[i].fd) < 0) {
			free(sv);
			return NULL;
		}
	}
	return sv;
}

/* Whether n's stack can be closed now (under n's lock): only the node
 * holds it, no file of the node is open (an open file's getattr should
 * not depend on reopening an inode that may be unlinked), not the root. */
static bool closable(const struct sfs_node *n)
{
	const struct sfs_stack *st = n->stack;

	return n != sfs_node_root() && !st->closed && n->pt_files == 0 &&
	       n->pt_cached == 0 &&
	       atomic_load_explicit(&st->refs, memory_order_acquire) == 1;
}

/* Under n's lock and the shard lock: 1 closed, 0 kept, -1 never
 * closable (no handles on that filesystem: its fds stay, uncounted). */
static int close_stack(struct sfs_node *n)
{
	struct sfs_stack *st = n->stack;

	if (st->used) {
		st->used = false;
		return 0;
	}
	if (!closable(n))
		return 0;
	if (!n->saved)
		n->saved = save_stack(st);
	if (!n->saved) {
		st->nohandle = true;
		return -1;
	}
	for (unsigned i = 0; i < st->n; i++) {
		close(st->l[i].fd);
		st->l[i].fd = -1;
	}
	st->closed = true;
	return 1;
}

/* One CLOCK pass over a shard, closing up to `want` stacks. */
static uint64_t sweep(struct lru_shard *s, uint64_t want)
{
	uint64_t done = 0;
	uint32_t seen = 0, total = s->n;

	while (done < want && seen++ < total && s->n) {
		struct sfs_node *n;
		int r = 0;

		if (s->hand >= s->n)
			s->hand = 0;
		n = s->v[s->hand];
		if (pthread_mutex_trylock(&n->lock) == 0) {
			r = close_stack(n);
			if (r != 0) {
				/* uncounted by the stack's own n, before closing */
				shard_remove(s, n);
				done += r > 0 ? n->stack->n : 0;
			}
			pthread_mutex_unlock(&n->lock);
		}
		if (r == 0)
			s->hand++;
	}
	return done;
}

static long long now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec;
}

/* With no lock held: when over budget, one thread closes the least
 * recently used stacks down to 7/8 of it. A sweep that cannot get there
 * (stacks pinned by requests, open files) is not retried until the count
 * has grown by another eighth, or a second has passed (the pins may be
 * gone): it would only walk the same nodes. */
void sfs_fdcache_trim(void)
{
	uint64_t c = sfs_fdcache_count(), low, floor_;

	if (budget == ~0u || c <= budget)
		return;
	if (c <= atomic_load(&trim_floor) && now_s() < atomic_load(&trim_retry))
		return;
	if (atomic_flag_test_and_set(&trimming))
		return;
	low = budget - budget / 8;
	for (unsigned v = 0; v < 2 * LRU_SHARDS; v++) {
		struct lru_shard *s = &lru[atomic_fetch_add(&trim_hand, 1) % LRU_SHARDS];
		uint64_t now = sfs_fdcache_count();

		if (now <= low)
			break;
		pthread_mutex_lock(&s->lock);
		sweep(s, (now - low + LRU_SHARDS - 1) / LRU_SHARDS + 1);
		pthread_mutex_unlock(&s->lock);
	}
	c = sfs_fdcache_count();
	floor_ = c > low ? c + budget / 8 : budget;
	atomic_store(&trim_floor, floor_ > budget ? floor_ : budget);
	atomic_store(&trim_retry, now_s() + 1);
	atomic_flag_clear(&trimming);
}

/* A branch root on the layer's filesystem: its own branch's, but an
 * indexed layer is the upper branch's copy of a lower file. */
static struct sfs_branch *branch_on(const struct sfs_snap *snap, unsigned bidx, uint64_t dev)
{
	if ((uint64_t)snap->b[bidx]->dev == dev)
		return snap->b[bidx];
	for (unsigned i = 0; i < snap->n; i++)
		if ((uint64_t)snap->b[i]->dev == dev)
			return snap->b[i];
	return snap->b[bidx];
}

/* Opens one saved layer again: by handle on the branch's filesystem, and
 * only if it is still the inode the fd was (the handle carries the
 * generation, so a reused inode number fails too) and, for a directory,
 * still beneath its branch root (what is looked up beneath it is served
 * as the branch's). A non-directory keeps the reach its pinned fd had. */
static int reopen_layer(const struct sfs_snap *snap, unsigned bidx,
			const struct saved_layer *sl, bool dir)
{
	int fd = sfs_branch_open_handle(branch_on(snap, bidx, sl->dev), sl->type,
					sl->h, sl->bytes);
	struct stat st;
	int ret;

	if (fd < 0)
		return fd;
	ret = sfs_do_fstat(fd, &st);
	if (ret == 0 && ((uint64_t)st.st_dev != sl->dev || (uint64_t)st.st_ino != sl->ino))
		ret = -ESTALE;
	if (ret == 0 && dir) {
		struct sfs_layer l = { .fd = fd, .bidx = bidx };
		char path[16];

		ret = sfs_layer_path(snap, &l, path, sizeof(path));
		ret = ret == -ENAMETOOLONG ? 0 : ret; /* only the check matters */
	}
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return fd;
}

int sfs_fdcache_reopen(struct sfs_node *n, struct sfs_stack **out)
{
	const struct sfs_stack *st = n->stack;
	bool dir = n->type == S_IFDIR;
	struct sfs_stack *ns = sfs_stack_new(st->snap, st->n);
	int ret = ns ? 0 : -ENOMEM;

	for (unsigned i = 0; ret == 0 && i < st->n; i++) {
		ns->l[i].bidx = st->l[i].bidx;
		ns->l[i].xwh = __atomic_load_n(&st->l[i].xwh, __ATOMIC_RELAXED);
		ret = reopen_layer(st->snap, st->l[i].bidx, saved_at(n->saved, i), dir);
		if (ret >= 0)
			ns->l[i].fd = ret;
		ret = ret < 0 ? ret : 0;
	}
	if (ret < 0) {
		sfs_stack_put(ns);
		return ret;
	}
	sfs_count(node_fd_reopens, 1);
	ns->nlink = st->nlink;
	ns->indexed = st->indexed;
	ns->metacopy = st->metacopy;
	*out = ns;
	return 0;
}
