/* Origin records: a copied-up entry remembers the identity of the lower
 * entry it came from, so the union inode (st_ino, the kernel's inode and
 * every open descriptor) stays the same across copy-up.
 *
 * Stored as the xattr trusted.stackfs.origin on the copy, written in the
 * staging directory before the copy is renamed into place. Value (v1,
 * 24 bytes, little-endian): u8 version = 1, u8[7] zero, u64 st_dev,
 * u64 st_ino of the lower entry. */
#ifndef SFS_ORIGIN_H
#define SFS_ORIGIN_H

#include <stdint.h>
#include <sys/stat.h>

#define SFS_ORIGIN_XATTR "trusted.stackfs.origin"

/* Writes the record on dirfd/name (not followed). 0 or -errno. */
int sfs_origin_set(int dirfd, const char *name, const struct stat *lower);
/* Reads the record of dirfd/name (not followed): 1 with dev/ino filled,
 * 0 when there is none or it is not understood, or -errno. */
int sfs_origin_get(int dirfd, const char *name, uint64_t *dev, uint64_t *ino);

#endif
