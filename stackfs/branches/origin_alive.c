/* Whether a copy's origin record still names a live lower inode. A lower
 * branch changed offline may have deleted the inode and given its number
 * to a new file: the record's file handle (which carries the inode's
 * generation) then no longer opens (ESTALE), and the copy must not take
 * the new file's identity (one kernel inode for two files, one st_ino).
 *
 * open_by_handle_at may read the lower inode from disk, so the verdict is
 * cached per record (filesystem, handle, number) for the mount: branches
 * do not change behind a live mount, and a branch change (a new snapshot
 * generation) empties the cache. The cache is 4-way set-associative and
 * bounded: a miss only costs the check again. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stackfs/branches/branch_caps.h"
#include "stackfs/stackfs.h"

#define ALIVE_SLOTS 4096u          /* a power of two; about 700 KiB */
#define ALIVE_WAYS 4u              /* slots per set: direct-mapped lost a
				    * third of 2,000 records to collisions */

struct alive_slot {
	bool used, alive;
	uint8_t fs_uuid[16];
	int32_t handle_type;
	uint16_t handle_bytes;
	uint64_t ino;
	uint8_t handle[SFS_ORIGIN_HANDLE_MAX];
};

static pthread_mutex_t alive_mu = PTHREAD_MUTEX_INITIALIZER;
static struct alive_slot *alive_tab;   /* allocated at first use */
static unsigned alive_gen;

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--)
		h = (h ^ *b++) * 0x100000001b3ull;
	return h;
}

/* The first slot of the record's set. */
static size_t set_of(const struct sfs_origin *o)
{
	uint64_t h = fnv(0xcbf29ce484222325ull, o->fs_uuid, 16);

	h = fnv(h, &o->ino, sizeof(o->ino));
	h = fnv(h, o->handle, o->handle_bytes);
	return ((size_t)(h ^ (h >> 32)) & (ALIVE_SLOTS / ALIVE_WAYS - 1)) * ALIVE_WAYS;
}

static bool slot_is(const struct alive_slot *s, const struct sfs_origin *o)
{
	return s->used && s->ino == o->ino && s->handle_type == o->handle_type &&
	       s->handle_bytes == o->handle_bytes &&
	       !memcmp(s->fs_uuid, o->fs_uuid, 16) &&
	       !memcmp(s->handle, o->handle, o->handle_bytes);
}

/* 1 cached alive, 0 cached stale, -1 not cached. */
static int cache_get(unsigned gen, const struct sfs_origin *o)
{
	size_t set = set_of(o);
	int ret = -1;

	pthread_mutex_lock(&alive_mu);
	if (alive_tab && alive_gen != gen) {
		memset(alive_tab, 0, ALIVE_SLOTS * sizeof(*alive_tab));
		alive_gen = gen;
	}
	for (size_t w = 0; alive_tab && w < ALIVE_WAYS && ret < 0; w++)
		if (slot_is(&alive_tab[set + w], o))
			ret = alive_tab[set + w].alive;
	pthread_mutex_unlock(&alive_mu);
	return ret;
}

static void cache_put(unsigned gen, const struct sfs_origin *o, bool alive)
{
	static unsigned victim;
	size_t set = set_of(o), w;
	struct alive_slot *s;

	pthread_mutex_lock(&alive_mu);
	if (!alive_tab) {
		alive_tab = calloc(ALIVE_SLOTS, sizeof(*alive_tab));
		alive_gen = gen;
	}
	if (alive_tab && alive_gen == gen) {
		for (w = 0; w < ALIVE_WAYS && alive_tab[set + w].used; w++)
			;
		if (w == ALIVE_WAYS)
			w = victim++ % ALIVE_WAYS;   /* a full set: round robin */
		s = &alive_tab[set + w];
		s->used = true;
		s->alive = alive;
		memcpy(s->fs_uuid, o->fs_uuid, 16);
		s->handle_type = o->handle_type;
		s->handle_bytes = o->handle_bytes;
		s->ino = o->ino;
		memcpy(s->handle, o->handle, o->handle_bytes);
	}
	pthread_mutex_unlock(&alive_mu);
}

/* The check itself: 1 alive, 0 stale, -errno when it cannot be known. */
static int check_alive(const struct sfs_snap *snap, const struct sfs_origin *o)
{
	struct stat st;
	int fd = -ENODEV, ret;    /* no branch on its filesystem: unknown */

	for (unsigned i = 0; i < snap->n; i++) {
		if (memcmp(snap->b[i]->fs_uuid, o->fs_uuid, 16) != 0)
			continue;
		/* a FUSE handle of an older record may open another file */
		if (snap->b[i]->lacks & SFS_LACKS_INODE_HANDLES)
			return -EOPNOTSUPP;
		fd = sfs_branch_open_handle(snap->b[i], o->handle_type, o->handle, o->handle_bytes);
		break;
	}
	if (fd == -ESTALE || fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	ret = sfs_do_fstat(fd, &st);
	close(fd);
	if (ret < 0)
		return ret;
	return (uint64_t)st.st_ino == o->ino;
}

bool sfs_origin_alive(const struct sfs_snap *snap, const struct sfs_origin *o)
{
	int ret;

	/* an old record or a filesystem without handles cannot be checked:
	 * taken as it is, as before */
	if (o->version != SFS_ORIGIN_VERSION || !o->handle_bytes)
		return true;
	ret = cache_get(snap->gen, o);
	if (ret >= 0)
		return ret;
	ret = check_alive(snap, o);
	/* unknown (no CAP_DAC_READ_SEARCH, a filesystem that cannot decode
	 * handles, a record of the inode number alone): taken as alive, as
	 * before; a shortage is not cached */
	if (ret == -ENOMEM || ret == -EMFILE || ret == -ENFILE)
		return true;
	cache_put(snap->gen, o, ret != 0);
	return ret != 0;
}
