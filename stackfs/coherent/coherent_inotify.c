/* -o coherent where fanotify cannot watch (a rootless mount: filesystem
 * marks need CAP_SYS_ADMIN): inotify
 * (docs/coherent.md "Lower branches that change"). inotify watches one
 * directory, not a filesystem, so the
 * watches follow the daemon's cache: a directory node's read-only layers
 * are watched from the time it gets a stack until it is freed or its
 * stack replaced (node.c calls in here, only while this mode is on).
 * Nodes share a watch descriptor (the kernel gives one per inode) by a
 * count. Each descriptor keeps an O_PATH fd of its directory, so an event
 * (descriptor, name) becomes the `struct sfs_coh_ev` that
 * coherent_apply.c takes from fanotify: the directory's fd and the name.
 * Watches are bounded by fs.inotify.max_user_watches; one refused is
 * logged and counted, never silent: that directory's changes show after
 * the timeout. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/fanotify.h>
#include <time.h>
#include <unistd.h>

#include "stackfs/stackfs.h"

/* What coherent_apply.c reads is fanotify's FAN_* bits: inotify's are
 * the same numbers for every event asked for. */
_Static_assert(IN_CREATE == FAN_CREATE && IN_DELETE == FAN_DELETE &&
	       IN_MOVED_FROM == FAN_MOVED_FROM && IN_MOVED_TO == FAN_MOVED_TO &&
	       IN_MODIFY == FAN_MODIFY && IN_ATTRIB == FAN_ATTRIB &&
	       IN_Q_OVERFLOW == FAN_Q_OVERFLOW && IN_ISDIR == FAN_ONDIR,
	       "inotify and fanotify bits differ");

/* Names appearing, going, moving; data and attributes of the entries and
 * of the directory itself. Not DELETE_SELF or MOVE_SELF: the parent's
 * watch reports those as a name of it (a removed directory's watch ends
 * with IN_IGNORED, handled). Only a directory (the fd names exactly that
 * inode: the /proc link is followed, never a path a user can swap). */
#define INO_MASK (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MODIFY | \
		  IN_ATTRIB | IN_ONLYDIR | IN_EXCL_UNLINK)
#define INO_BUCKETS0 256

/* A watch descriptor in use: how many node layers hold it, and an fd of
 * its directory (an event names the descriptor only). */
struct ino_wd {
	struct ino_wd *next;
	int wd;
	unsigned refs;
	int dir_fd;
};

/* The descriptors a directory node holds (those of its stack's
 * read-only layers). */
struct ino_node {
	struct ino_node *next;
	const struct sfs_node *node;
	unsigned n;
	int wd[];
};

/* A chained hash table of either kind (both start with `next`). */
struct table {
	void **b;
	size_t nb, count;
};

bool sfs_coh_ino;

static struct {
	int fd;                   /* the inotify instance, -1: off */
	pthread_mutex_t lock;     /* guards both tables and the counters */
	struct table wds, nodes;
	uint64_t refused;
	time_t warned;            /* when a refusal was last logged */
} ino = { .fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER };

static size_t hash(uintptr_t key, size_t nb)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (nb - 1);
}

static uintptr_t wd_key(const void *e)
{
	return (uintptr_t)((const struct ino_wd *)e)->wd;
}

static uintptr_t node_key(const void *e)
{
	return (uintptr_t)((const struct ino_node *)e)->node;
}

/* The `next` of an entry of either kind (its first member). */
static void **next_of(void *e)
{
	return (void **)e;
}

static int table_init(struct table *t)
{
	t->b = calloc(INO_BUCKETS0, sizeof(*t->b));
	t->nb = INO_BUCKETS0;
	t->count = 0;
	return t->b ? 0 : -ENOMEM;
}

/* Doubles the buckets when the chains grow long; without memory the
 * chains stay as they are (slower, never wrong). */
static void table_grow(struct table *t, uintptr_t (*key)(const void *))
{
	size_t nb = t->nb * 2;
	void **b = calloc(nb, sizeof(*b));

	if (!b)
		return;
	for (size_t i = 0; i < t->nb; i++) {
		for (void *e = t->b[i], *next; e; e = next) {
			size_t h = hash(key(e), nb);

			next = *next_of(e);
			*next_of(e) = b[h];
			b[h] = e;
		}
	}
	free(t->b);
	t->b = b;
	t->nb = nb;
}

static void table_add(struct table *t, void *e, uintptr_t (*key)(const void *))
{
	size_t h;

	if (t->count >= t->nb * 2)
		table_grow(t, key);
	h = hash(key(e), t->nb);
	*next_of(e) = t->b[h];
	t->b[h] = e;
	t->count++;
}

/* The entry of key, unlinked from the table when `take`, or NULL. */
static void *table_find(struct table *t, uintptr_t k, uintptr_t (*key)(const void *), bool take)
{
	void **p = &t->b[hash(k, t->nb)];

	for (; *p; p = next_of(*p)) {
		void *e = *p;

		if (key(e) != k)
			continue;
		if (take) {
			*p = *next_of(e);
			t->count--;
		}
		return e;
	}
	return NULL;
}

/* Under ino.lock: a refused watch, logged at most once a second (a tree
 * of many directories would flood the log), every one counted. */
static void refused(const struct sfs_branch *b, int err)
{
	time_t now = time(NULL);

	ino.refused++;
	if (now == ino.warned)
		return;
	ino.warned = now;
	sfs_log(SFS_LOG_WARN, "coherent: cannot watch a directory of %s: %s%s; changes made "
		"directly in it show after the timeout (%llu watches refused so far)",
		b->path, strerror(err), err == ENOSPC ?
		" (fs.inotify.max_user_watches reached)" : "",
		(unsigned long long)ino.refused);
}

/* Under ino.lock: one more holder of the watch of layer l's directory;
 * its descriptor, or -errno. */
static int wd_get(const struct sfs_layer *l)
{
	char path[32];
	struct ino_wd *w;
	int wd;

	sfs_fd_path(l->fd, path);
	wd = inotify_add_watch(ino.fd, path, INO_MASK);
	if (wd < 0)
		return -errno;
	w = table_find(&ino.wds, (uintptr_t)wd, wd_key, false);
	if (w) {
		w->refs++;
		return wd;
	}
	w = malloc(sizeof(*w));
	if (w)
		*w = (struct ino_wd){ .wd = wd, .refs = 1,
				      .dir_fd = fcntl(l->fd, F_DUPFD_CLOEXEC, 0) };
	if (!w || w->dir_fd < 0) {
		int ret = w ? -errno : -ENOMEM;

		free(w);
		inotify_rm_watch(ino.fd, wd);
		return ret;
	}
	table_add(&ino.wds, w, wd_key);
	return wd;
}

/* Under ino.lock: one holder fewer; the watch removed with the last. A
 * descriptor the kernel ended already (IN_IGNORED) is not found. */
static void wd_put(int wd)
{
	struct ino_wd *w = table_find(&ino.wds, (uintptr_t)wd, wd_key, false);

	if (!w || --w->refs > 0)
		return;
	table_find(&ino.wds, (uintptr_t)wd, wd_key, true);
	inotify_rm_watch(ino.fd, wd);
	close(w->dir_fd);
	free(w);
}

/* Under ino.lock: the watches of st's read-only layers, as a record for
 * node n (NULL when it has none, or without memory: then its watches
 * are given back and the refusal logged). */
static struct ino_node *watch_stack(const struct sfs_node *n, const struct sfs_stack *st)
{
	struct ino_node *r = malloc(sizeof(*r) + st->n * sizeof(r->wd[0]));

	if (!r) {
		ino.refused++;
		sfs_log(SFS_LOG_WARN, "coherent: no memory to watch a directory");
		return NULL;
	}
	*r = (struct ino_node){ .node = n };
	for (unsigned i = 0; i < st->n; i++) {
		const struct sfs_branch *b = sfs_layer_branch(st, &st->l[i]);
		int wd;

		if (b->mode != SFS_BRANCH_RO)
			continue;
		wd = wd_get(&st->l[i]);
		if (wd >= 0)
			r->wd[r->n++] = wd;
		else
			refused(b, -wd);
	}
	if (r->n == 0) {
		free(r);
		r = NULL;
	}
	return r;
}

static void node_release(struct ino_node *r)
{
	if (!r)
		return;
	for (unsigned i = 0; i < r->n; i++)
		wd_put(r->wd[i]);
	free(r);
}

void sfs_cohino_set(const struct sfs_node *n, const struct sfs_stack *st)
{
	struct ino_node *old, *r;

	if (n->type != S_IFDIR)
		return;
	pthread_mutex_lock(&ino.lock);
	if (ino.fd >= 0) {
		/* the new watches first: a directory both stacks have keeps
		 * its descriptor rather than losing it for a moment */
		r = watch_stack(n, st);
		old = table_find(&ino.nodes, (uintptr_t)n, node_key, true);
		if (r)
			table_add(&ino.nodes, r, node_key);
		node_release(old);
	}
	pthread_mutex_unlock(&ino.lock);
}

void sfs_cohino_drop(const struct sfs_node *n)
{
	if (n->type != S_IFDIR)
		return;
	pthread_mutex_lock(&ino.lock);
	if (ino.fd >= 0)
		node_release(table_find(&ino.nodes, (uintptr_t)n, node_key, true));
	pthread_mutex_unlock(&ino.lock);
}

int sfs_cohino_open(void)
{
	int ret;

	ino.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (ino.fd < 0)
		return -errno;
	ret = table_init(&ino.wds);
	if (ret == 0)
		ret = table_init(&ino.nodes);
	if (ret < 0) {
		sfs_cohino_close();
		return ret;
	}
	sfs_coh_ino = true;
	return 0;
}

static void hook_stack_set(const struct sfs_node *n, const struct sfs_stack *st)
{
	if (sfs_coh_ino)
		sfs_cohino_set(n, st);
}

static void hook_freed(const struct sfs_node *n)
{
	if (sfs_coh_ino)
		sfs_cohino_drop(n);
}

const struct sfs_node_hooks sfs_cohino_hooks = {
	.stack_set = hook_stack_set,
	.freed = hook_freed,
};

int sfs_cohino_fd(void)
{
	return ino.fd;
}

/* One event into ev: 1, or 0 when it names no directory watched now. */
static int parse_one(const struct inotify_event *ie, struct sfs_coh_ev *ev)
{
	struct ino_wd *w;
	int fd = -1;

	pthread_mutex_lock(&ino.lock);
	w = table_find(&ino.wds, (uintptr_t)ie->wd, wd_key, false);
	if (w)
		fd = fcntl(w->dir_fd, F_DUPFD_CLOEXEC, 0);
	pthread_mutex_unlock(&ino.lock);
	if (fd < 0)
		return 0;
	*ev = (struct sfs_coh_ev){ .mask = ie->mask, .dirfd = fd };
	if (ie->len && ie->name[0]) {
		ev->name = strndup(ie->name, ie->len);
		if (!ev->name) {
			close(fd);
			return 0;
		}
	}
	return 1;
}

/* The kernel ended a watch (its directory removed, its filesystem
 * unmounted): the descriptor forgotten; the nodes that held it find
 * nothing to give back. */
static void ignored(int wd)
{
	struct ino_wd *w;

	pthread_mutex_lock(&ino.lock);
	w = table_find(&ino.wds, (uintptr_t)wd, wd_key, true);
	if (w) {
		close(w->dir_fd);
		free(w);
	}
	pthread_mutex_unlock(&ino.lock);
}

size_t sfs_cohino_parse(const char *buf, size_t len, struct sfs_coh_ev *ev, size_t max,
			bool *overflow)
{
	size_t n = 0, off = 0;

	while (off + sizeof(struct inotify_event) <= len) {
		const struct inotify_event *ie = (const void *)(buf + off);

		off += sizeof(*ie) + ie->len;
		atomic_fetch_add_explicit(&sfs_coh_stats.events, 1, memory_order_relaxed);
		if (ie->mask & IN_Q_OVERFLOW)
			*overflow = true;
		else if (ie->mask & IN_IGNORED)
			ignored(ie->wd);
		else if (n == max)
			*overflow = true; /* more than a batch: never dropped */
		else if (parse_one(ie, &ev[n]))
			n++;
	}
	return n;
}

void sfs_cohino_counts(uint64_t *watches, uint64_t *refused_)
{
	pthread_mutex_lock(&ino.lock);
	*watches = ino.wds.count;
	*refused_ = ino.refused;
	pthread_mutex_unlock(&ino.lock);
}

static void table_free(struct table *t, void (*fn)(void *))
{
	for (size_t i = 0; t->b && i < t->nb; i++) {
		for (void *e = t->b[i], *next; e; e = next) {
			next = *next_of(e);
			fn(e);
		}
	}
	free(t->b);
	*t = (struct table){ 0 };
}

static void wd_free(void *e)
{
	close(((struct ino_wd *)e)->dir_fd);
	free(e);
}

void sfs_cohino_close(void)
{
	pthread_mutex_lock(&ino.lock);
	sfs_coh_ino = false;
	table_free(&ino.nodes, free);
	table_free(&ino.wds, wd_free);
	if (ino.fd >= 0)
		close(ino.fd);
	ino.fd = -1;
	pthread_mutex_unlock(&ino.lock);
}
