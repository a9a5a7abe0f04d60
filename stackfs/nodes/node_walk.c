/* Walks over every cached node: the names for a branch change, the name
 * indexes dropped, the nodes at given places (-o coherent).
 *
 * Each node is looked at under its own lock with no shard lock held. A
 * node's lock is taken before its parent's shard lock (the parent is
 * referenced under it: copy_up.c node_where, sync.c, export_lookup.c),
 * so a walk that locked nodes under a shard lock, as these did first,
 * could wait for a node whose holder waited for that shard: a deadlock
 * of a copy-up against a branch change or a change seen below. The walk
 * takes a reference on every node first (sfs_nodes_all), then visits. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stackfs/stackfs.h"

/* Every cached node's name in its parent, for telling the kernel to drop
 * what it cached after a branch change. Copies, made under the node's
 * lock and used after it. */
int sfs_nodes_names(struct sfs_node_name **out, size_t *count)
{
	struct sfs_node_name *v = NULL;
	struct sfs_node **all = NULL;
	size_t nall = 0, n = 0;
	int ret = sfs_nodes_all(&all, &nall);

	if (ret == 0) {
		v = calloc(nall ? nall : 1, sizeof(*v));
		ret = v ? 0 : -ENOMEM;
	}
	for (size_t i = 0; v && i < nall; i++) {
		struct sfs_node *nd = all[i];

		pthread_mutex_lock(&nd->lock);
		v[n].parent = nd->parent ? sfs_node_id(nd->parent) : 0;
		v[n].self = sfs_node_id(nd);
		v[n].name = nd->name ? strdup(nd->name) : NULL;
		pthread_mutex_unlock(&nd->lock);
		if (v[n].parent && v[n].name)
			n++;
		else
			free(v[n].name);
	}
	sfs_nodes_put(all, nall); /* none taken: NULL, 0 */
	*out = v;
	*count = n;
	return ret;
}

void sfs_nodes_each(void (*fn)(struct sfs_node *n, void *arg), void *arg)
{
	struct sfs_node **all;
	size_t nall;

	if (sfs_nodes_all(&all, &nall) < 0)
		return;
	for (size_t i = 0; i < nall; i++)
		fn(all[i], arg);
	sfs_nodes_put(all, nall);
}

static int by_parent(const void *a, const void *b)
{
	const struct sfs_node_name *x = a, *y = b;

	return x->parent < y->parent ? -1 : x->parent > y->parent;
}

/* Whether nd is at one of want's places (sorted by parent); the index,
 * or -1. */
static long place_of(struct sfs_node *nd, const struct sfs_node_name *want, size_t n)
{
	struct sfs_node_name key = { 0 };
	const struct sfs_node_name *hit;
	long ret = -1;

	pthread_mutex_lock(&nd->lock);
	key.parent = nd->parent ? sfs_node_id(nd->parent) : 0;
	hit = key.parent && nd->name ? bsearch(&key, want, n, sizeof(*want), by_parent) : NULL;
	/* back to the first of that parent, then each of its names */
	while (hit && hit > want && hit[-1].parent == key.parent)
		hit--;
	for (; hit && hit < want + n && hit->parent == key.parent; hit++)
		if (!strcmp(hit->name, nd->name)) {
			ret = hit - want;
			break;
		}
	pthread_mutex_unlock(&nd->lock);
	return ret;
}

/* One pass over the table for a batch of places (coherent_apply.c):
 * sorting them keeps it one pass, not one per place. */
int sfs_nodes_at(const struct sfs_node_name *want, size_t n, struct sfs_node **found)
{
	struct sfs_node_name *w = malloc((n ? n : 1) * sizeof(*w));
	struct sfs_node **all = NULL;
	size_t nall = 0;
	int ret = w ? sfs_nodes_all(&all, &nall) : -ENOMEM;

	for (size_t i = 0; i < n; i++)
		found[i] = NULL;
	if (ret < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		w[i] = want[i];
		w[i].self = i; /* where its answer goes */
	}
	qsort(w, n, sizeof(*w), by_parent);
	for (size_t i = 0; i < nall; i++) {
		long k = place_of(all[i], w, n);

		if (k >= 0 && !found[w[k].self]) {
			sfs_node_ref(all[i]);
			found[w[k].self] = all[i];
		}
	}
	sfs_nodes_put(all, nall);
out:
	free(w);
	return ret;
}
