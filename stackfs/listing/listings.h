/* The listings readdir serves, kept per directory node (listings.c). */
#ifndef SFS_LISTINGS_H
#define SFS_LISTINGS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "stackfs/listing/dirlist.h"

struct sfs_node;

struct sfs_listing {
	pthread_mutex_t lock;     /* one reader at a time */
	struct sfs_dirlist list;  /* "." and ".." first, sorted by cookie */
	bool loaded;
	/* under the table's lock: */
	const struct sfs_node *node;
	uint64_t generation;      /* of node: a reused node is another */
	unsigned refs;
	uint64_t used;            /* when last taken, for eviction */
	bool kept;                /* in the table */
};

/* The listing kept for directory n, or a new one (kept when a slot is
 * free or unused); NULL only without memory. Locked, for one request. */
struct sfs_listing *sfs_listing_get(const struct sfs_node *n);
/* Unlocks and lets go of l. done: its last entry was served, so no
 * stream needs it any more (a later request reads the directory again). */
void sfs_listing_put(struct sfs_listing *l, bool done);
/* Drops what is kept of node n (freed: its memory may be another node's). */
void sfs_listings_forget(const struct sfs_node *n);
/* sfs_listings_forget of each directory node at its end, as a node hook. */
extern const struct sfs_node_hooks sfs_listings_hooks;
/* Drops what is kept (unmount). */
void sfs_listings_clear(void);

#endif
