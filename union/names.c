/* A directory's name index (names.h). Built as a list of (name, branch)
 * pairs from the layers' listings, sorted so that the branches of one
 * name are adjacent, with a hash table from each name to its run. A
 * ".wh.NAME" entry counts for NAME too: its key is the tail of the name
 * as read, no copy. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/bio.h"
#include "union/names.h"
#include "whiteout/whiteout.h"

struct pair {
	uint32_t key;                  /* offset of the name in names */
	uint32_t b;                    /* the branch that lists it, | PAIR_WH */
};

/* The pair is of a ".wh.NAME" the branch lists, not of NAME itself. */
#define PAIR_WH 0x80000000u

struct sfs_unames {
	unsigned nbranches;
	size_t max_names;              /* past it, adding answers -E2BIG */
	bool *covers;                  /* by branch index: read into the index */
	char *names;                   /* the names read, each NUL-terminated */
	size_t names_len, names_cap;
	struct pair *pairs;            /* sorted by name, then branch */
	size_t npairs, pairs_cap;
	uint32_t *slots;               /* 1 + the first pair of a name, 0 empty */
	size_t nslots;                 /* a power of two */
};

static uint32_t hash(const char *s)
{
	uint32_t h = 2166136261u;      /* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t c = *cap ? *cap : 64;
	void *np;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	if (!(np = realloc(*p, c * size)))
		return -ENOMEM;
	*p = np;
	*cap = c;
	return 0;
}

static int add_pair(struct sfs_unames *ix, size_t key, unsigned b)
{
	int ret = grow((void **)&ix->pairs, &ix->pairs_cap, ix->npairs + 1, sizeof(*ix->pairs));

	if (ret == 0)
		ix->pairs[ix->npairs++] = (struct pair){ (uint32_t)key, b };
	return ret;
}

/* Takes name, read from the layer of branch b: a pair for it, and one
 * for what it whites out. */
static int add_name(struct sfs_unames *ix, const char *name, unsigned b)
{
	size_t len = strlen(name) + 1, off = ix->names_len;
	int ret = grow((void **)&ix->names, &ix->names_cap, off + len, 1);

	if (ret < 0 || off + len > UINT32_MAX)
		return ret < 0 ? ret : -E2BIG;
	memcpy(ix->names + off, name, len);
	ix->names_len += len;
	ret = add_pair(ix, off, b);
	if (ret == 0 && len > SFS_WH_PREFIX_LEN + 1 && !strncmp(name, SFS_WH_PREFIX, SFS_WH_PREFIX_LEN))
		ret = add_pair(ix, off + SFS_WH_PREFIX_LEN, b | PAIR_WH);
	return ret;
}

/* Reads the listing of the directory at O_PATH fd into the index. */
static int read_layer(struct sfs_unames *ix, int fd, unsigned b)
{
	DIR *d = sfs_do_opendir(fd, ".");
	struct dirent *de;
	int ret = d ? 0 : -errno;

	while (ret == 0 && (errno = 0, de = readdir(d)))
		ret = sfs_unames_add(ix, de->d_name, b);
	if (ret == 0 && errno)
		ret = -errno;
	if (d)
		closedir(d);
	if (ret == 0)
		sfs_unames_cover(ix, b);
	return ret;
}

struct sfs_unames *sfs_unames_new(unsigned nbranches, size_t max_names)
{
	struct sfs_unames *ix = calloc(1, sizeof(*ix));

	if (ix && !(ix->covers = calloc(nbranches ? nbranches : 1, 1))) {
		free(ix);
		return NULL;
	}
	if (ix) {
		ix->nbranches = nbranches;
		ix->max_names = max_names;
	}
	return ix;
}

int sfs_unames_add(struct sfs_unames *ix, const char *name, unsigned b)
{
	if (!strcmp(name, ".") || !strcmp(name, "..") || b >= ix->nbranches || b >= PAIR_WH)
		return 0;
	return ix->npairs >= ix->max_names ? -E2BIG : add_name(ix, name, b);
}

void sfs_unames_cover(struct sfs_unames *ix, unsigned b)
{
	if (b < ix->nbranches)
		ix->covers[b] = true;
}

static int pair_cmp(const void *a, const void *b, void *names)
{
	const struct pair *x = a, *y = b;
	int c = strcmp((const char *)names + x->key, (const char *)names + y->key);

	return c ? c : (x->b > y->b) - (x->b < y->b);
}

/* Sorts the pairs, gives every pair of a name its run's first key (so
 * that a run ends where the key changes) and hashes the runs. */
static int index_pairs(struct sfs_unames *ix)
{
	size_t runs = 0, mask;

	qsort_r(ix->pairs, ix->npairs, sizeof(*ix->pairs), pair_cmp, ix->names);
	for (size_t i = 0; i < ix->npairs; i++) {
		if (i && !strcmp(ix->names + ix->pairs[i].key, ix->names + ix->pairs[i - 1].key))
			ix->pairs[i].key = ix->pairs[i - 1].key;
		else
			runs++;
	}
	for (ix->nslots = 16; ix->nslots < 2 * runs; ix->nslots *= 2)
		;
	if (!(ix->slots = calloc(ix->nslots, sizeof(*ix->slots))))
		return -ENOMEM;
	mask = ix->nslots - 1;
	for (size_t i = 0; i < ix->npairs; i++) {
		size_t s;

		if (i && ix->pairs[i].key == ix->pairs[i - 1].key)
			continue;
		for (s = hash(ix->names + ix->pairs[i].key) & mask; ix->slots[s]; s = (s + 1) & mask)
			;
		ix->slots[s] = (uint32_t)i + 1;
	}
	return 0;
}

int sfs_unames_finish(struct sfs_unames *ix)
{
	return ix->npairs > UINT32_MAX / 2 ? -E2BIG : index_pairs(ix);
}

int sfs_unames_build(const struct sfs_ulayer *dir, unsigned ndir, const bool *take,
		     unsigned nbranches, size_t max_names, struct sfs_unames **out)
{
	struct sfs_unames *ix = sfs_unames_new(nbranches, max_names);
	int ret = ix ? 0 : -ENOMEM;

	for (unsigned i = 0; ret == 0 && i < ndir; i++) {
		if (take[i] && dir[i].b < nbranches)
			ret = read_layer(ix, dir[i].fd, dir[i].b);
	}
	if (ret == 0)
		ret = sfs_unames_finish(ix);
	if (ret < 0) {
		sfs_unames_free(ix);
		return ret;
	}
	*out = ix;
	return 0;
}

void sfs_unames_free(struct sfs_unames *ix)
{
	if (!ix)
		return;
	free(ix->covers);
	free(ix->names);
	free(ix->pairs);
	free(ix->slots);
	free(ix);
}

struct sfs_unames_hit sfs_unames_find(const struct sfs_unames *ix, const char *name)
{
	size_t mask = ix->nslots - 1;
	struct sfs_unames_hit h = { 0, 0 };

	for (size_t s = hash(name) & mask; ix->slots[s]; s = (s + 1) & mask) {
		unsigned i = ix->slots[s] - 1;

		if (strcmp(ix->names + ix->pairs[i].key, name))
			continue;
		h.from = h.to = i;
		while (h.to < ix->npairs && ix->pairs[h.to].key == ix->pairs[i].key)
			h.to++;
		break;
	}
	return h;
}

bool sfs_unames_covers(const struct sfs_unames *ix, unsigned b)
{
	return b < ix->nbranches && ix->covers[b];
}

bool sfs_unames_may_hold(const struct sfs_unames *ix, struct sfs_unames_hit hit, unsigned b)
{
	if (!sfs_unames_covers(ix, b))
		return true;
	for (unsigned i = hit.from; i < hit.to; i++)
		if ((ix->pairs[i].b & ~PAIR_WH) == b)
			return true;
	return false;
}

bool sfs_unames_may_whiteout(const struct sfs_unames *ix, struct sfs_unames_hit hit, unsigned b)
{
	if (!sfs_unames_covers(ix, b))
		return true;
	for (unsigned i = hit.from; i < hit.to; i++)
		if (ix->pairs[i].b == (b | PAIR_WH))
			return true;
	return false;
}
