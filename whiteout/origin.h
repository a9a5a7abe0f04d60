/* Origin records: a copied-up entry remembers the identity of the lower
 * entry it came from, so the union inode (st_ino, the kernel's inode and
 * every open descriptor) stays the same across copy-up.
 *
 * Stored as the xattr trusted.stackfs.origin (user.stackfs.origin in a
 * process without trusted.* attributes: xattr/records.h) on the copy, written in the
 * staging directory before the copy is renamed into place.
 * Value v2 (little-endian, 36 + handle_bytes bytes):
 *   0  u8   version = 2
 *   1  u8   reserved, 0
 *   2  u16  handle_bytes (0..128)
 *   4  i32  handle_type (name_to_handle_at; 0 with handle_bytes 0 when
 *           the lower filesystem has no file handles)
 *   8  u8[16] UUID of the lower entry's filesystem
 *   24 u64  st_ino of the lower entry
 *   32 u8[handle_bytes] the file handle
 *   32+handle_bytes u32 CRC32C of all preceding bytes
 * Version 1 (24 bytes: u8 version = 1, u8[7] zero, u64 st_dev, u64
 * st_ino) is still read: version 1, fs_uuid zero, no handle, dev set. */
#ifndef SFS_ORIGIN_H
#define SFS_ORIGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xattr/records.h"

/* trusted.stackfs.origin, or user.stackfs.origin (xattr/records.h) */
#define SFS_ORIGIN_XATTR sfs_rec_name(SFS_REC_ORIGIN)
#define SFS_ORIGIN_VERSION 2
#define SFS_ORIGIN_HANDLE_MAX 128
#define SFS_ORIGIN_MAX (36 + SFS_ORIGIN_HANDLE_MAX)

struct sfs_origin {
	uint8_t version;               /* 2, or 1 for an old record */
	uint8_t fs_uuid[16];
	uint64_t ino;
	uint64_t dev;                  /* version 1 only, else 0 */
	int32_t handle_type;
	uint16_t handle_bytes;
	uint8_t handle[SFS_ORIGIN_HANDLE_MAX];
};

/* Writes the record on dirfd/name (not followed; dirfd may be O_PATH).
 * 0 or -errno (-EINVAL if handle_bytes is too large). */
int sfs_origin_set(int dirfd, const char *name, const struct sfs_origin *o);
/* Reads the record of dirfd/name (not followed): 1 valid (filled),
 * 0 none or a whole record of a later version (its checksum holds),
 * -EUCLEAN damaged, or -errno. */
int sfs_origin_get(int dirfd, const char *name, struct sfs_origin *o);
/* Fills *o from the lower entry dirfd/name (not followed; name "" for
 * dirfd itself): its file handle and st_ino, with the given filesystem
 * UUID. A filesystem without file handles gives handle_bytes 0. */
int sfs_origin_of(int dirfd, const char *name, const uint8_t fs_uuid[16],
		  struct sfs_origin *o);
/* Whether the record names the entry dirfd/name (not followed; "" for
 * dirfd itself): 1 yes (same inode number and file handle; the number
 * alone for a record without a handle), 0 another inode (one that
 * reuses the number has another generation in its handle), or -errno.
 * No open_by_handle_at: one name_to_handle_at. */
int sfs_origin_names(const struct sfs_origin *o, int dirfd, const char *name);
/* Whether one changed byte makes the damaged record of dirfd/name whole
 * (whiteout/mend.c): 1 (*at, *was: where, what it held), 0 when no
 * single byte does, or -errno; with apply, the record is so mended. */
int sfs_origin_mend(int dirfd, const char *name, bool apply, size_t *at, uint8_t *was);
/* Removes the record: 0 (also when there was none) or -errno. */
int sfs_origin_remove(int dirfd, const char *name);

/* The byte format, for tools and tests: encode returns the length
 * (<= SFS_ORIGIN_MAX) or -EINVAL; decode returns 1, 0 (a later version,
 * whole: a version above 2 keeps its CRC32C in its last four bytes) or
 * -EUCLEAN. */
int sfs_origin_encode(const struct sfs_origin *o, uint8_t *buf, size_t len);
int sfs_origin_decode(const void *buf, size_t len, struct sfs_origin *o);

#endif
