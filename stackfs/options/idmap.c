/* Owners between the branches and the view: fuse-overlayfs's
 * uidmapping=, gidmapping= and squash_to_* options, which container
 * engines pass so that one storage serves containers in different user
 * namespaces without chown'ing the layers.
 *
 * A mapping FROM:TO:LEN says that ids FROM..FROM+LEN-1 as stored in the
 * branches are TO..TO+LEN-1 in the view. The view shows a stored id
 * through the mapping, and stores a view id (a new entry's owner, a
 * chown) back through it. An id no range covers is the overflow id 65534
 * both ways (as fuse-overlayfs does, and as the kernel shows an unmapped
 * owner): never an id the caller did not ask for. Squashing changes only
 * what the view shows: every entry owned by that uid (gid); what is
 * stored still follows the mapping. Without any of these options both
 * directions are the identity and cost a load and a branch. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stackfs/stackfs.h"

#define OVERFLOW_ID 65534u
/* the kernel's bound on the lines of a uid_map */
#define MAX_RANGES 340

struct idrange {
	uint32_t disk, view, len;
};

struct idmap {
	struct idrange *r;
	size_t n;
	int64_t squash;           /* the id the view shows for all, or -1 */
};

static struct idmap maps[2] = { { .squash = -1 }, { .squash = -1 } };

/* Reads the next unsigned decimal of a ':'-separated list (empty
 * elements are skipped, as fuse-overlayfs's parser does: container
 * engines write a leading ':'). 1 with *v, 0 at the end, -1 when bad. */
static int next_num(const char **pp, uint64_t *v)
{
	const char *p = *pp;
	char *end;

	while (*p == ':')
		p++;
	if (!*p)
		return 0;
	if (*p < '0' || *p > '9')
		return -1;
	errno = 0;
	*v = strtoull(p, &end, 10);
	if (errno || (*end && *end != ':') || *v > UINT32_MAX)
		return -1;
	*pp = end;
	return 1;
}

static bool overlaps(uint32_t a, uint32_t alen, uint32_t b, uint32_t blen)
{
	return (uint64_t)a < (uint64_t)b + blen && (uint64_t)b < (uint64_t)a + alen;
}

/* A range that overlaps one before it on either side would make one id
 * mean two: refused. */
static int range_add(struct idmap *m, uint64_t disk, uint64_t view, uint64_t len)
{
	struct idrange *nr;

	if (len == 0 || disk + len - 1 > UINT32_MAX || view + len - 1 > UINT32_MAX)
		return -EINVAL;
	for (size_t i = 0; i < m->n; i++)
		if (overlaps(m->r[i].disk, m->r[i].len, (uint32_t)disk, (uint32_t)len) ||
		    overlaps(m->r[i].view, m->r[i].len, (uint32_t)view, (uint32_t)len))
			return -EINVAL;
	if (m->n == MAX_RANGES)
		return -E2BIG;
	nr = realloc(m->r, (m->n + 1) * sizeof(*nr));
	if (!nr)
		return -ENOMEM;
	m->r = nr;
	m->r[m->n++] = (struct idrange){ (uint32_t)disk, (uint32_t)view, (uint32_t)len };
	return 0;
}

int sfs_idmap_parse(int which, const char *list)
{
	struct idmap *m = &maps[which];
	const char *p = list;
	uint64_t v[3];
	int ret = 0, got;

	if (m->n)
		return -EEXIST;
	for (;;) {
		for (got = 0; got < 3 && (ret = next_num(&p, &v[got])) == 1; got++)
			;
		if (ret < 0 || (got > 0 && got < 3) || (got == 0 && m->n == 0))
			ret = -EINVAL;
		if (ret < 0 || got == 0)
			break;
		ret = range_add(m, v[0], v[1], v[2]);
		if (ret < 0)
			break;
	}
	if (ret < 0)
		sfs_idmap_free();
	return ret < 0 ? ret : 0;
}

int sfs_idmap_squash(int which, int64_t id)
{
	if (id < 0 || id > UINT32_MAX)
		return -EINVAL;
	maps[which].squash = id;
	return 0;
}

void sfs_idmap_squash_root(void)
{
	for (int i = 0; i < 2; i++)
		if (maps[i].squash < 0)
			maps[i].squash = 0;
}

bool sfs_idmap_active(void)
{
	return maps[0].n || maps[1].n || maps[0].squash >= 0 || maps[1].squash >= 0;
}

void sfs_idmap_free(void)
{
	for (int i = 0; i < 2; i++) {
		free(maps[i].r);
		maps[i] = (struct idmap){ .squash = -1 };
	}
}

uint32_t sfs_idmap_to_view(int which, uint32_t id)
{
	const struct idmap *m = &maps[which];

	if (m->squash >= 0)
		return (uint32_t)m->squash;
	if (!m->n)
		return id;
	for (size_t i = 0; i < m->n; i++)
		if (id - m->r[i].disk < m->r[i].len)
			return m->r[i].view + (id - m->r[i].disk);
	return OVERFLOW_ID;
}

uint32_t sfs_idmap_to_disk(int which, uint32_t id)
{
	const struct idmap *m = &maps[which];

	/* -1 is chown's "leave it": never mapped */
	if (!m->n || id == (uint32_t)-1)
		return id;
	for (size_t i = 0; i < m->n; i++)
		if (id - m->r[i].view < m->r[i].len)
			return m->r[i].disk + (id - m->r[i].view);
	return OVERFLOW_ID;
}

void sfs_idmap_stat(struct stat *st)
{
	if (!sfs_idmap_active())
		return;
	st->st_uid = sfs_idmap_to_view(SFS_IDMAP_UID, st->st_uid);
	st->st_gid = sfs_idmap_to_view(SFS_IDMAP_GID, st->st_gid);
}
