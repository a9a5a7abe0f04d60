/* The listings readdir serves, kept per directory node rather than per
 * open directory: the daemon answers OPENDIR with ENOSYS, after which the
 * kernel opens and releases directories without asking it (and caches
 * their entries, FOPEN_CACHE_DIR, as the daemon asked before). Two round
 * trips fewer for every directory opened (issue 20: a stat walk of 10,100
 * entries in 101 directories spent 202 of them on OPENDIR and
 * RELEASEDIR, each 35-55 µs).
 *
 * A stream no longer has a state of its own, and needs none: a request at
 * offset 0 reads the directory again, and one at offset X continues after
 * the entry whose cookie is X in whatever listing the node holds (a name's
 * cookie is the same in every reading: readdir.c). So streams of one
 * directory can share its listing.
 *
 * Without a release to say a stream is over, a listing is dropped once
 * the empty reply that ends a stream has been served, and at most SLOTS
 * are kept, the least recently used given up first: an abandoned stream costs a re-read if it comes
 * back, never memory beyond the table. */
#include <stdlib.h>
#include <string.h>

#include "stackfs/listing/listings.h"
#include "stackfs/stackfs.h"

#define SLOTS 64

static struct {
	pthread_mutex_t lock;
	struct sfs_listing *slot[SLOTS];
	uint64_t clock;
} t = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void listing_free(struct sfs_listing *l)
{
	sfs_dirlist_free(&l->list);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

static struct sfs_listing *listing_new(const struct sfs_node *n)
{
	struct sfs_listing *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	pthread_mutex_init(&l->lock, NULL);
	l->node = n;
	l->generation = n->generation;
	return l;
}

static bool is_of(const struct sfs_listing *l, const struct sfs_node *n)
{
	return l && l->node == n && l->generation == n->generation;
}

/* The slot of n's listing (*found), or of the one to give up for it: a
 * free one, else the least recently used that nobody holds; or -1.
 * Under t.lock. */
static int find_slot(const struct sfs_node *n, bool *found)
{
	int lru = -1;

	for (int i = 0; i < SLOTS; i++) {
		if (is_of(t.slot[i], n)) {
			*found = true;
			return i;
		}
	}
	*found = false;
	for (int i = 0; i < SLOTS; i++) {
		const struct sfs_listing *l = t.slot[i];

		if (!l)
			return i;
		if (!l->refs && (lru < 0 || l->used < t.slot[lru]->used))
			lru = i;
	}
	return lru;
}

struct sfs_listing *sfs_listing_get(const struct sfs_node *n)
{
	struct sfs_listing *l = NULL, *old = NULL;
	bool found;
	int i;

	pthread_mutex_lock(&t.lock);
	i = find_slot(n, &found);
	if (found) {
		l = t.slot[i];
	} else if ((l = listing_new(n))) {
		if (i >= 0) {
			old = t.slot[i];
			t.slot[i] = l;
			l->kept = true;
		}
	}
	if (l) {
		l->refs++;
		l->used = ++t.clock;
	}
	pthread_mutex_unlock(&t.lock);
	if (old)
		listing_free(old);
	if (l)
		pthread_mutex_lock(&l->lock);
	return l;
}

/* Takes l out of the table if it is there: the caller frees it. Under
 * t.lock. */
static void unkeep(struct sfs_listing *l)
{
	for (int i = 0; l->kept && i < SLOTS; i++) {
		if (t.slot[i] == l) {
			t.slot[i] = NULL;
			l->kept = false;
		}
	}
}

void sfs_listing_put(struct sfs_listing *l, bool done)
{
	bool release;

	pthread_mutex_unlock(&l->lock);
	pthread_mutex_lock(&t.lock);
	if (done && !(l->refs > 1))
		unkeep(l);
	release = --l->refs == 0 && !l->kept;
	pthread_mutex_unlock(&t.lock);
	if (release)
		listing_free(l);
}

void sfs_listings_forget(const struct sfs_node *n)
{
	struct sfs_listing *drop[SLOTS];
	int k = 0;

	pthread_mutex_lock(&t.lock);
	for (int i = 0; i < SLOTS; i++) {
		struct sfs_listing *l = t.slot[i];

		if (!l || l->node != n)
			continue;
		unkeep(l);
		if (!l->refs) /* else its holder frees it at its put */
			drop[k++] = l;
	}
	pthread_mutex_unlock(&t.lock);
	while (k > 0)
		listing_free(drop[--k]);
}

/* A directory node's end forgets its listings. */
static void hook_freed(const struct sfs_node *n)
{
	if (n->type == S_IFDIR)
		sfs_listings_forget(n);
}

const struct sfs_node_hooks sfs_listings_hooks = { .freed = hook_freed };

void sfs_listings_clear(void)
{
	pthread_mutex_lock(&t.lock);
	for (int i = 0; i < SLOTS; i++) {
		struct sfs_listing *l = t.slot[i];

		if (l && !l->refs) {
			t.slot[i] = NULL;
			listing_free(l);
		}
	}
	pthread_mutex_unlock(&t.lock);
}
