/* A set of names for merging listings: open addressing, linear probing,
 * FNV-1a hashing; grows at half full. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stackfs/listing/nameset.h"

static size_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return (size_t)h;
}

static size_t find(const struct sfs_nameset *s, const char *name)
{
	size_t i = hash(name) & (s->cap - 1);

	while (s->slot[i] && strcmp(s->slot[i], name) != 0)
		i = (i + 1) & (s->cap - 1);
	return i;
}

size_t sfs_nameset_get(const struct sfs_nameset *s, const char *name)
{
	size_t i;

	if (s->cap == 0)
		return (size_t)-1;
	i = find(s, name);
	return s->slot[i] ? s->val[i] : (size_t)-1;
}

static int grow(struct sfs_nameset *s)
{
	struct sfs_nameset g = { .cap = s->cap ? s->cap * 2 : 64 };

	g.slot = calloc(g.cap, sizeof(*g.slot));
	g.val = calloc(g.cap, sizeof(*g.val));
	if (!g.slot || !g.val) {
		free(g.slot);
		free(g.val);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->cap; i++) {
		if (s->slot[i]) {
			size_t j = find(&g, s->slot[i]);

			g.slot[j] = s->slot[i];
			g.val[j] = s->val[i];
		}
	}
	g.n = s->n;
	free(s->slot);
	free(s->val);
	*s = g;
	return 0;
}

int sfs_nameset_put(struct sfs_nameset *s, const char *name, size_t val)
{
	size_t i;

	if ((s->n + 1) * 2 > s->cap && grow(s) < 0)
		return -ENOMEM;
	i = find(s, name);
	if (!s->slot[i]) {
		s->slot[i] = strdup(name);
		if (!s->slot[i])
			return -ENOMEM;
		s->n++;
	}
	s->val[i] = val;
	return 0;
}

void sfs_nameset_free(struct sfs_nameset *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->slot[i]);
	free(s->slot);
	free(s->val);
	memset(s, 0, sizeof(*s));
}
