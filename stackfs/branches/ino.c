/* The numbers the view shows: a union inode number (st_ino) for a real
 * entry, the st_dev of a branch filesystem named by UUID, and the
 * identity and link count of the lower entry a copy's origin record
 * names. Asked by the node table, listings and lookups alike. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bio.h"
#include "stackfs/stackfs.h"
#include "whiteout/lowername.h"
#include "whiteout/metadir.h"

/* st_ino of the view: the real inode number with the stable id of its
 * filesystem (from the registry) in the top byte, so entries of different
 * filesystems never collide and numbers survive remounts and branch
 * reordering. A number that does not fit (inode numbers of 2^56 and
 * above, more than 254 filesystems) gets an allocated number, kept in the
 * highest rw branch's inode map (top byte 0xFF, never reused). */
static const struct sfs_branch *branch_of_dev(const struct sfs_snap *snap, uint64_t dev)
{
	for (unsigned i = 0; i < snap->n; i++)
		if ((uint64_t)snap->b[i]->dev == dev)
			return snap->b[i];
	return NULL;
}

static uint64_t ino_allocated(const struct sfs_snap *snap, uint32_t fs_id, uint64_t ino)
{
	static atomic_uint_fast64_t fallback = 1;
	uint64_t out;

	if (snap->top_rw >= 0 &&
	    sfs_meta_ino_alloc(snap->b[snap->top_rw]->meta, fs_id, ino, &out) == 0)
		return out;
	/* no registry to keep it in: unique for this mount only */
	return SFS_INO_ALLOC_BASE | (SFS_INO_ALLOC_MASK >> 1) |
	       (atomic_fetch_add(&fallback, 1) & (SFS_INO_ALLOC_MASK >> 1));
}

/* The largest inode number packed as it is: 2^56 - 1. The test suite
 * lowers it (STACKFS_TEST_PACK_BITS) to reach the allocation path, which
 * real filesystems reach only with inode numbers of 2^56 and above. */
static uint64_t pack_limit(void)
{
	static uint64_t limit;
	const char *bits;

	if (!limit) {
		bits = getenv("STACKFS_TEST_PACK_BITS");
		limit = bits && atoi(bits) > 0 && atoi(bits) < 56 ?
			(1ULL << atoi(bits)) - 1 : SFS_INO_ALLOC_MASK;
	}
	return limit;
}

uint64_t sfs_ino_of(const struct sfs_snap *snap, uint64_t dev, uint64_t ino)
{
	const struct sfs_branch *b = branch_of_dev(snap, dev);
	uint32_t fs_id = b ? b->fs_id : 0;

	if (fs_id >= 1 && fs_id <= 254 && ino <= pack_limit())
		return ((uint64_t)fs_id << 56) | ino;
	return ino_allocated(snap, fs_id, ino);
}

uint64_t sfs_dev_of_uuid(const struct sfs_snap *snap, const uint8_t uuid[16])
{
	for (unsigned i = 0; i < snap->n; i++)
		if (memcmp(snap->b[i]->fs_uuid, uuid, 16) == 0)
			return snap->b[i]->dev;
	return 0;
}

/* The lower file of an origin whose handle is a number, by the name
 * its lower-name record keeps (whiteout/lowername.h), beneath each root
 * of the origin's filesystem: the one whose inode is the origin's. A
 * name that now holds another file is not it. -errno when none is. */
static int open_by_lowername(const struct sfs_snap *snap, int dirfd, const char *name,
			     const struct sfs_origin *o)
{
	char path[SFS_LOWERNAME_PATH_MAX + 1];
	struct stat st;
	int ret = sfs_lowername_get(dirfd, name, path, sizeof(path));

	if (ret != 1)
		return ret < 0 ? ret : -ENOENT;
	for (unsigned i = 0; i < snap->n; i++) {
		int fd;

		if (memcmp(snap->b[i]->fs_uuid, o->fs_uuid, 16) != 0 ||
		    (fd = sfs_do_open(snap->b[i]->root_fd, path, O_PATH, 0)) < 0)
			continue;
		if (sfs_do_fstat(fd, &st) == 0 && st.st_ino == o->ino && !S_ISDIR(st.st_mode))
			return fd;
		close(fd);
	}
	return -ENOENT;
}

/* The lower file an origin names: by its handle, or, for a number
 * handle (a FUSE branch's, which opens nothing), by its lower name. */
static int open_origin(const struct sfs_snap *snap, int dirfd, const char *name,
		       const struct sfs_origin *o)
{
	int fd = -1;

	if (o->handle_type == SFS_HANDLE_NUMBER)
		return open_by_lowername(snap, dirfd, name, o);
	for (unsigned i = 0; i < snap->n && fd < 0; i++) {
		if (memcmp(snap->b[i]->fs_uuid, o->fs_uuid, 16) == 0)
			fd = sfs_branch_open_handle(snap->b[i], o->handle_type,
						    o->handle, o->handle_bytes);
	}
	return fd;
}

uint32_t sfs_origin_nlink(const struct sfs_snap *snap, int dirfd, const char *name)
{
	struct sfs_origin o;
	struct stat st;
	uint32_t nlink = 0;
	int fd;

	if (sfs_origin_get(dirfd, name, &o) != 1 || o.version < 2 || !o.handle_bytes)
		return nlink;
	fd = open_origin(snap, dirfd, name, &o);
	if (fd >= 0 && sfs_do_fstat(fd, &st) == 0 && st.st_ino == o.ino)
		nlink = (uint32_t)st.st_nlink;
	if (fd >= 0)
		close(fd);
	return nlink;
}

int sfs_origin_identity(const struct sfs_snap *snap, int dirfd, const char *name,
			uint64_t *dev, uint64_t *ino)
{
	struct sfs_origin o;
	int ret = sfs_origin_get(dirfd, name, &o);

	if (ret != 1)
		return ret == -EUCLEAN ? ret : 0;
	*dev = o.version == 1 ? o.dev : sfs_dev_of_uuid(snap, o.fs_uuid);
	*ino = o.ino;
	if (!*dev)
		return 0;
	return sfs_origin_alive(snap, &o) ? 1 : -ESTALE;
}
