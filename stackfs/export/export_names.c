/* nfs_export=on: the last name of each forgotten node, so that a file
 * handle of a non-directory whose inode the kernel dropped is looked up
 * again by name (export_lookup.c), which alone applies every rule of the
 * view (whiteouts, copies, the index). A hint, never trusted: the name
 * found must give the same node id, or the handle is decoded otherwise.
 *
 * Bounded: a direct-mapped table of SLOTS entries (a new name of an id
 * that hashes to a taken slot replaces the old one), about 24 bytes and
 * a name per slot once used. Kept across restarts in the highest rw
 * branch's .stackfs/exportnames: written when the daemon ends (with the
 * names of the nodes still cached), read at mount. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stackfs/stackfs.h"
#include "whiteout/ondisk.h"

#define SLOTS (1u << 16)
#define STRIPES 64

struct slot {
	uint64_t id;      /* 0: empty */
	uint64_t parent;
	char *name;
};

static struct slot slots[SLOTS];
static pthread_mutex_t locks[STRIPES] = {
	[0 ... STRIPES - 1] = PTHREAD_MUTEX_INITIALIZER
};

static unsigned slot_of(uint64_t id)
{
	uint64_t h = id * 0x9e3779b97f4a7c15ULL;

	return (unsigned)(h >> 48) % SLOTS;
}

void sfs_xnames_put(uint64_t id, uint64_t parent, const char *name)
{
	unsigned i = slot_of(id);
	char *nm = strdup(name), *old;

	if (!nm)
		return; /* a hint lost: the handle may answer ESTALE */
	pthread_mutex_lock(&locks[i % STRIPES]);
	old = slots[i].name;
	slots[i] = (struct slot){ id, parent, nm };
	pthread_mutex_unlock(&locks[i % STRIPES]);
	free(old);
}

int sfs_xnames_get(uint64_t id, uint64_t *parent, char *name)
{
	unsigned i = slot_of(id);
	int ret = -ENOENT;

	pthread_mutex_lock(&locks[i % STRIPES]);
	if (slots[i].id == id && slots[i].name && strlen(slots[i].name) <= NAME_MAX) {
		*parent = slots[i].parent;
		strcpy(name, slots[i].name);
		ret = 0;
	}
	pthread_mutex_unlock(&locks[i % STRIPES]);
	return ret;
}

/* The metadata dir names are kept in: the highest rw branch's. */
static int meta_dir(const struct sfs_snap *s)
{
	if (s->top_rw < 0 || !s->b[s->top_rw]->meta)
		return -1;
	return s->b[s->top_rw]->meta->dir_fd;
}

static int take(void *arg, const struct sfs_xname *x)
{
	(void)arg;
	sfs_xnames_put(x->id, x->parent, x->name);
	return 0;
}

void sfs_xnames_load(const struct sfs_snap *s)
{
	char err[256];
	uint8_t *buf;
	size_t len;
	int dfd = meta_dir(s), ret;

	if (dfd < 0)
		return;
	ret = sfs_meta_read_file(dfd, SFS_META_XNAMES, SFS_XNAMES_MAX_BYTES, &buf, &len);
	if (ret == -ENOENT)
		return;
	if (ret == 0) {
		ret = sfs_xnames_parse(buf, len, take, NULL, err, sizeof(err));
		free(buf);
	} else {
		snprintf(err, sizeof(err), "%s", strerror(-ret));
	}
	/* what parsed before the damage is kept: each is checked at use */
	if (ret < 0)
		sfs_log(SFS_LOG_WARN, "%s/%s: %s: file handles of files not cached "
			"may answer ESTALE (stackfs fsck removes it)", SFS_METADIR_NAME,
			SFS_META_XNAMES, err);
}

void sfs_xnames_save(const struct sfs_snap *s)
{
	struct sfs_xname *v = malloc(SLOTS * sizeof(*v));
	int dfd = meta_dir(s), ret = v ? 0 : -ENOMEM;
	uint8_t *buf = NULL;
	size_t n = 0, len;

	if (dfd < 0) {
		free(v);
		return; /* no rw branch: handles of files live as long as the daemon */
	}
	for (unsigned i = 0; v && i < SLOTS; i++) {
		pthread_mutex_lock(&locks[i % STRIPES]);
		if (slots[i].id && slots[i].name && strlen(slots[i].name) < sizeof(v[n].name)) {
			v[n] = (struct sfs_xname){ slots[i].id, slots[i].parent, "" };
			strcpy(v[n++].name, slots[i].name);
		}
		pthread_mutex_unlock(&locks[i % STRIPES]);
	}
	if (ret == 0)
		ret = sfs_xnames_encode(v, n, &buf, &len);
	if (ret == 0)
		ret = sfs_meta_write_file(dfd, SFS_META_XNAMES, buf, len);
	if (ret < 0)
		sfs_log(SFS_LOG_WARN, "writing %s/%s: %s", SFS_METADIR_NAME,
			SFS_META_XNAMES, strerror(-ret));
	free(buf);
	free(v);
}
