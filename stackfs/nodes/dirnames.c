/* Name indexes of directories spread over many read-only branches
 * (union/names.h), for lookups: a lookup in such a directory looks only
 * at the layers that list the name or its whiteout.
 *
 * An index is of one stack (a node's layers on one snapshot): a new
 * stack (copy-up, branch change, fds reopened) starts without one. It
 * covers read-only layers only: rw layers change through the daemon and
 * are always looked at. What it says of a read-only layer is what the
 * layer listed when it was read, and a layer changed directly (not
 * through the view) is not seen until the index is read again: it is
 * kept for a second at most, and never made with timeout=0, whose users
 * ask to see such changes at once (README: "Changes made directly in a
 * branch"). One thread reads it while the others look at every layer. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "stackfs/stackfs.h"
#include "union/names.h"

/* Fewer read-only layers than this: looking at each costs less than
 * reading their listings. */
#define NAMES_MIN_LAYERS 8
/* A directory whose layers list more names is not indexed (about 40
 * bytes a name). */
#define NAMES_MAX (256u * 1024)
#define NAMES_TTL_MS 1000

struct sfs_dirnames {
	atomic_uint refs;
	long long expires_ms;          /* CLOCK_MONOTONIC_COARSE */
	struct sfs_unames *ix;         /* NULL: too many names */
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

void sfs_dirnames_put(struct sfs_dirnames *d)
{
	if (d && atomic_fetch_sub_explicit(&d->refs, 1, memory_order_acq_rel) == 1) {
		sfs_unames_free(d->ix);
		free(d);
	}
}

const struct sfs_unames *sfs_dirnames_ix(const struct sfs_dirnames *d)
{
	return d ? d->ix : NULL;
}

/* Which layers of st to read: its read-only ones, when there are enough. */
static bool pick_layers(const struct sfs_stack *st, bool *take)
{
	unsigned k = 0;

	for (unsigned i = 0; i < st->n; i++) {
		take[i] = st->snap->b[st->l[i].bidx]->mode == SFS_BRANCH_RO;
		k += take[i];
	}
	return k >= NAMES_MIN_LAYERS;
}

/* A new sfs_dirnames holding ix (NULL: too many names), or NULL. */
static struct sfs_dirnames *names_new(struct sfs_unames *ix)
{
	struct sfs_dirnames *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->ix = ix;
	atomic_init(&d->refs, 1);
	d->expires_ms = now_ms() + NAMES_TTL_MS;
	return d;
}

/* Reads the index of st's read-only layers: a new sfs_dirnames (its ix
 * NULL when they list too many names), or NULL. */
static struct sfs_dirnames *read_names(const struct sfs_stack *st)
{
	struct sfs_ulayer *dir = calloc(st->n, sizeof(*dir));
	bool *take = calloc(st->n, sizeof(*take));
	struct sfs_unames *ix = NULL;
	int ret = dir && take ? 0 : -ENOMEM;

	sfs_count(name_index_reads, 1);
	for (unsigned i = 0; ret == 0 && i < st->n; i++)
		dir[i] = (struct sfs_ulayer){ .fd = st->l[i].fd, .b = st->l[i].bidx };
	if (ret == 0 && pick_layers(st, take))
		ret = sfs_unames_build(dir, st->n, take, st->snap->n, NAMES_MAX, &ix);
	free(dir);
	free(take);
	return ret == 0 || ret == -E2BIG ? names_new(ix) : NULL;
}

/* Under n's lock: st's index when it is n's stack and the index is
 * fresh (referenced); else NULL, with *build set when the caller is to
 * read it. */
static struct sfs_dirnames *fresh_names(struct sfs_node *n, struct sfs_stack *st, bool *build)
{
	struct sfs_dirnames *d = st->names;

	*build = false;
	if (n->stack != st || st->closed)
		return NULL;
	if (d && d->expires_ms > now_ms()) {
		atomic_fetch_add_explicit(&d->refs, 1, memory_order_relaxed);
		return d;
	}
	if (!st->names_reading)
		*build = st->names_reading = true;
	return NULL;
}

/* Under no lock: installs what a reader read (d, or NULL when it could
 * not), ends its reading and returns d referenced for the caller. */
static struct sfs_dirnames *install(struct sfs_node *n, struct sfs_stack *st,
				    struct sfs_dirnames *d)
{
	struct sfs_dirnames *old = NULL;

	pthread_mutex_lock(&n->lock);
	st->names_reading = false;
	/* what was read may predate a change seen meanwhile (-o coherent):
	 * this lookup uses it, no other */
	if (d && st->names_dropped)
		d->expires_ms = 0;
	st->names_dropped = false;
	if (d) {
		old = st->names;
		st->names = d;
		atomic_fetch_add_explicit(&d->refs, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&n->lock);
	sfs_dirnames_put(old);
	return d;
}

struct sfs_unames *sfs_dirnames_begin(struct sfs_node *n, struct sfs_stack *st, bool **take)
{
	struct sfs_unames *ix = NULL;
	struct sfs_dirnames *d;
	bool build;

	*take = NULL;
	/* (most directories: nothing allocated, nothing locked) */
	if (sfs_timeout <= 0 || st->n < NAMES_MIN_LAYERS)
		return NULL;
	*take = calloc(st->n, sizeof(**take));
	if (!*take || !pick_layers(st, *take))
		goto none;
	pthread_mutex_lock(&n->lock);
	d = fresh_names(n, st, &build);
	pthread_mutex_unlock(&n->lock);
	sfs_dirnames_put(d);
	if (!build)
		goto none;
	ix = sfs_unames_new(st->snap->n, NAMES_MAX);
	if (ix)
		return ix;
	install(n, st, NULL);
none:
	free(*take);
	*take = NULL;
	return NULL;
}

void sfs_dirnames_end(struct sfs_node *n, struct sfs_stack *st, struct sfs_unames *ix,
		      bool *take, int ret)
{
	struct sfs_dirnames *d = NULL;

	free(take);
	if (ret == 0)
		ret = sfs_unames_finish(ix);
	if (ret < 0) {
		sfs_unames_free(ix);
		ix = NULL;
	}
	/* past NAMES_MAX names: kept without an index, as read_names does */
	if (ret == 0 || ret == -E2BIG)
		d = names_new(ix);
	if (d)
		sfs_count(name_index_listed, 1);
	if (!d)
		sfs_unames_free(ix);
	sfs_dirnames_put(install(n, st, d));
}

struct sfs_dirnames *sfs_dirnames_get(struct sfs_node *n, struct sfs_stack *st)
{
	struct sfs_dirnames *d;
	bool build;

	if (sfs_timeout <= 0 || st->n < NAMES_MIN_LAYERS)
		return NULL;
	pthread_mutex_lock(&n->lock);
	d = fresh_names(n, st, &build);
	pthread_mutex_unlock(&n->lock);
	if (!build)
		return d;
	return install(n, st, read_names(st));
}

void sfs_dirnames_drop(struct sfs_node *n)
{
	struct sfs_dirnames *d;

	pthread_mutex_lock(&n->lock);
	d = n->stack ? n->stack->names : NULL;
	if (n->stack) {
		n->stack->names = NULL;
		n->stack->names_dropped = n->stack->names_reading;
	}
	pthread_mutex_unlock(&n->lock);
	sfs_dirnames_put(d);
}

/* From sfs_nodes_each: no lock held, the node referenced. */
static void drop_one(struct sfs_node *n, void *arg)
{
	(void)arg;
	sfs_dirnames_drop(n);
}

void sfs_dirnames_drop_all(void)
{
	sfs_dirnames_drop(sfs_node_root());
	sfs_nodes_each(drop_one, NULL);
}
