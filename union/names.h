/* A directory's name index: which of its layers list a name (or the
 * name's ".wh." whiteout), read once, so that resolving a name in a
 * directory spread over many branches looks only at the layers that can
 * hold it, instead of two failed opens in every one (1,000 branches made
 * a lookup 2,000 system calls). A layer the index does not cover is
 * always looked at. The index is what the layers listed when it was
 * built: its user decides how long that stays true (stackfs/nodes/dirnames.c). */
#ifndef SFS_UNION_NAMES_H
#define SFS_UNION_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "union/resolve.h"

struct sfs_unames;

/* Reads the layers dir[i] (i < ndir) with take[i] of a directory, where
 * the branch indexes dir[i].b are below nbranches: *out, or -E2BIG when
 * they list more than max_names names, or another -errno. */
int sfs_unames_build(const struct sfs_ulayer *dir, unsigned ndir, const bool *take,
		     unsigned nbranches, size_t max_names, struct sfs_unames **out);
void sfs_unames_free(struct sfs_unames *ix);

/* The same index filled by a reader of the layers (a merged listing
 * reads them all anyway): a new empty one; each name the layer of branch
 * b lists ("." and ".." ignored; -E2BIG past max_names); each layer
 * marked covered once read whole; then sorted and hashed (0 or -errno).
 * A layer never marked covered is always looked at. */
struct sfs_unames *sfs_unames_new(unsigned nbranches, size_t max_names);
int sfs_unames_add(struct sfs_unames *ix, const char *name, unsigned b);
void sfs_unames_cover(struct sfs_unames *ix, unsigned b);
int sfs_unames_finish(struct sfs_unames *ix);

/* The layers of one name: an opaque position in the index. */
struct sfs_unames_hit {
	unsigned from, to;             /* its branches' range; empty: none */
};
/* Where name is listed (as itself or as ".wh." name). */
struct sfs_unames_hit sfs_unames_find(const struct sfs_unames *ix, const char *name);
/* Whether the index read the layer of branch b whole. */
bool sfs_unames_covers(const struct sfs_unames *ix, unsigned b);
/* Whether the layer in branch b may hold what hit was found for: false
 * only when the index covers b and b lists neither. */
bool sfs_unames_may_hold(const struct sfs_unames *ix, struct sfs_unames_hit hit, unsigned b);
/* Whether that layer may hold the name's ".wh." whiteout: false only
 * when the index covers b and b does not list it (the probe for it, in
 * a layer that lists the name itself, is then skipped). */
bool sfs_unames_may_whiteout(const struct sfs_unames *ix, struct sfs_unames_hit hit, unsigned b);

#endif
