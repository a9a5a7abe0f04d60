/* Lower-name records: where a copy's lower file was, by name, when the
 * copy was made of a hard-linked file on a FUSE branch. There the
 * origin's handle is a number that opens nothing (docs/format.md
 * "registry"), so the lower file, and with it the link count the view
 * shows for the copy's names, is found by a name: the copy's own in the
 * layers below while it keeps a lower name, else this record's.
 *
 * Stored as the xattr trusted.stackfs.lowername (user.stackfs.lowername
 * where records are in user.*: xattr/records.h) on the copy, written in
 * the staging directory with the origin record. Value v1 (little-endian,
 * 8 + len bytes):
 *   0  u8   version = 1
 *   1  u8   reserved, 0
 *   2  u16  len (1..SFS_LOWERNAME_PATH_MAX)
 *   4  u8[len] the path below the lower branch's root: components
 *           joined by '/', none empty, "." or "..", no NUL
 *   4+len u32 CRC32C of all preceding bytes
 * A later version keeps its CRC32C in its last four bytes, as origin
 * records do. It is a hint: a record whose name no longer holds the
 * origin's inode is not used, and fsck removes a damaged one. */
#ifndef SFS_LOWERNAME_H
#define SFS_LOWERNAME_H

#include <stddef.h>
#include <stdint.h>

#include "xattr/records.h"

#define SFS_LOWERNAME_XATTR sfs_rec_name(SFS_REC_LOWERNAME)
#define SFS_LOWERNAME_VERSION 1
#define SFS_LOWERNAME_PATH_MAX 4000
#define SFS_LOWERNAME_MAX (8 + SFS_LOWERNAME_PATH_MAX)

/* Writes the record of path on dirfd/name (not followed). 0 or -errno
 * (-EINVAL for a path the record cannot hold). */
int sfs_lowername_set(int dirfd, const char *name, const char *path);
/* Reads it into path (len >= SFS_LOWERNAME_PATH_MAX + 1): 1 valid, 0 none
 * or a whole record of a later version, -EUCLEAN damaged, or -errno. */
int sfs_lowername_get(int dirfd, const char *name, char *path, size_t len);
/* Removes it: 0 (also when there was none) or -errno. */
int sfs_lowername_remove(int dirfd, const char *name);

/* The byte format, for tools and tests: encode returns the length or
 * -EINVAL; decode returns 1 (path filled, NUL-terminated), 0 (a later
 * version, whole) or -EUCLEAN. */
int sfs_lowername_encode(const char *path, uint8_t *buf, size_t len);
int sfs_lowername_decode(const void *buf, size_t len, char *path, size_t plen);

#endif
