/* Name indexes (names.h) of the directories a read-only walk of the
 * union looks names up in (diff, its OCI layer): with many branches, a
 * lookup otherwise tries two opens in every layer of its directory (a
 * diff of 1,000 branches made 2 million). A walk goes depth first, so
 * the indexes of the last few directories are kept: a parent's is still
 * there when the walk comes back from its children. Stacks are told
 * apart by their serial, never by address (a freed stack's address is
 * reused). Not for commit, which changes the branches as it goes. */
#include <errno.h>
#include <stdlib.h>

#include "union/model.h"
#include "union/names.h"

#define KEPT 16                        /* deeper than most walks' paths */
#define MIN_LAYERS 8                   /* fewer: opening is cheaper */
#define MAX_NAMES (1u << 20)

struct sfs_ch_names {
	struct {
		uint64_t serial;       /* 0: free */
		uint64_t used;         /* when it was last used */
		struct sfs_unames *ix; /* NULL: too many names */
	} e[KEPT];
	uint64_t clock;
};

/* The index of dst's layers, read now. NULL when it cannot be. */
static struct sfs_unames *read_index(const struct sfs_ch_union *u,
				     const struct sfs_ch_stack *dst)
{
	struct sfs_ulayer *dir = calloc(dst->n, sizeof(*dir));
	bool *take = calloc(dst->n, sizeof(*take));
	struct sfs_unames *ix = NULL;

	for (unsigned i = 0; dir && take && i < dst->n; i++) {
		dir[i] = (struct sfs_ulayer){ .fd = dst->l[i].fd, .b = dst->l[i].b };
		take[i] = true;
	}
	if (dir && take && sfs_unames_build(dir, dst->n, take, u->n, MAX_NAMES, &ix) < 0)
		ix = NULL;
	free(dir);
	free(take);
	return ix;
}

const struct sfs_unames *sfs_ch_names_of(struct sfs_ch_union *u, const struct sfs_ch_stack *dst)
{
	struct sfs_ch_names *c = u->names;
	unsigned k, old = 0;

	if (!u->use_names || dst->n < MIN_LAYERS)
		return NULL;
	if (!c && !(c = u->names = calloc(1, sizeof(*c))))
		return NULL;
	c->clock++;
	for (k = 0; k < KEPT; k++) {
		if (c->e[k].serial == dst->serial) {
			c->e[k].used = c->clock;
			return c->e[k].ix;
		}
		if (c->e[k].used < c->e[old].used)
			old = k;
	}
	sfs_unames_free(c->e[old].ix);
	c->e[old].serial = dst->serial;
	c->e[old].used = c->clock;
	c->e[old].ix = read_index(u, dst);
	return c->e[old].ix;
}

void sfs_ch_names_drop(struct sfs_ch_union *u)
{
	if (!u->names)
		return;
	for (unsigned k = 0; k < KEPT; k++)
		sfs_unames_free(u->names->e[k].ix);
	free(u->names);
	u->names = NULL;
}
