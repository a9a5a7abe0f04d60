/* The byte layouts of the metadata directory's files
 * (docs/format.md, "On-disk format", is the specification; this header must
 * agree with it).
 *
 * All integers are little-endian. Every record has a fixed size, fixed-
 * width fields and its CRC32C last, covering every byte before it. Each
 * record type has compute/verify/set functions for its checksum, and a
 * decode that checks one record and converts it to host order.
 *
 * This header is the format library's internal interface (metadir.c and
 * the meta*.c files, registry.c, inomap.c, fsck*.c and the tests); the
 * daemon uses metadir.h and origin.h. */
#ifndef SFS_ONDISK_H
#define SFS_ONDISK_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "whiteout/metadir.h"

/* crc32c.c: CRC32C of buf continuing from crc (0 to start). */
uint32_t sfs_crc32c(uint32_t crc, const void *buf, size_t len);

/* Little-endian fields at any alignment (records are packed bytes). */
static inline void sfs_le_put16(uint8_t *p, uint16_t v) { v = htole16(v); memcpy(p, &v, 2); }
static inline void sfs_le_put32(uint8_t *p, uint32_t v) { v = htole32(v); memcpy(p, &v, 4); }
static inline void sfs_le_put64(uint8_t *p, uint64_t v) { v = htole64(v); memcpy(p, &v, 8); }
static inline uint16_t sfs_le_get16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return le16toh(v); }
static inline uint32_t sfs_le_get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return le32toh(v); }
static inline uint64_t sfs_le_get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return le64toh(v); }

/* Whether n bytes are all zero (reserved fields, an unset UUID). */
static inline bool sfs_all_zero(const void *buf, size_t n)
{
	const uint8_t *p = buf;

	while (n--)
		if (*p++)
			return false;
	return true;
}

/* ------------------------------------------------------------ header */

#define SFS_HDR_MAGIC_STR "STACKFS\0"
#define SFS_HDR_SIZE 64u
#define SFS_HDR_KNOWN_FLAGS (SFS_META_F_OVERLAY | SFS_META_F_VOLATILE | SFS_META_F_USERXATTR)

struct sfs_disk_header {
	uint8_t  h_magic[8];        /*  0 "STACKFS\0" */
	uint32_t h_version;         /*  8 format version, 1 */
	uint32_t h_flags;           /* 12 SFS_META_F_*; bit 0: overlay whiteouts, bit 1: volatile, bit 2: user.* records */
	uint8_t  h_uuid[16];        /* 16 branch UUID, random at creation */
	uint64_t h_ctime;           /* 32 creation time, seconds since the epoch */
	uint8_t  h_reserved[20];    /* 40 zero */
	uint32_t h_crc;             /* 60 CRC32C of bytes 0..59 */
};                                  /* 64 */

struct sfs_header {
	uint32_t version, flags;
	uint8_t uuid[16];
	uint64_t ctime;
};

enum sfs_hdr_status {
	SFS_HDR_OK,
	SFS_HDR_SHORT,              /* fewer than 64 bytes */
	SFS_HDR_LONG,               /* more than 64 bytes */
	SFS_HDR_BAD_MAGIC,          /* not "STACKFS\0" */
	SFS_HDR_NEWER,              /* version > SFS_META_VERSION */
	SFS_HDR_CRC,                /* checksum mismatch */
	SFS_HDR_VERSION,            /* version 0 in a header */
	SFS_HDR_FLAGS,              /* unknown flag bits */
	SFS_HDR_RESERVED,           /* reserved bytes not zero */
};

uint32_t sfs_header_csum_compute(const struct sfs_disk_header *d);
bool sfs_header_csum_verify(const struct sfs_disk_header *d);
void sfs_header_csum_set(struct sfs_disk_header *d);
/* Fills d from h, checksum included. */
void sfs_header_encode(const struct sfs_header *h, struct sfs_disk_header *d);
/* Checks the bytes of a header file (any length) and decodes it. The
 * fields of *h are filled as far as the bytes go, whatever the status
 * (zero beyond). */
enum sfs_hdr_status sfs_header_parse(const void *buf, size_t len,
				     struct sfs_header *h);
/* A record whose checksum fails, mended by undoing one damaged byte
 * (whiteout/mend.c): 1 and buf mended (*at, *was: where, what it held)
 * when exactly one change of one byte makes valid() true, 0 when none
 * does, -1 when more than one (buf unchanged then). */
typedef bool (*sfs_mend_valid_fn)(const uint8_t *buf, size_t len, void *arg);
int sfs_mend_byte(uint8_t *buf, size_t len, sfs_mend_valid_fn valid, void *arg,
		  size_t *at, uint8_t *was);
/* The header so mended (valid: a header this stackfs reads, not newer). */
int sfs_header_mend(uint8_t buf[SFS_HDR_SIZE], size_t *at, uint8_t *was);
/* The errno of a status (0, -EUCLEAN or -EPROTONOSUPPORT) and a one-line
 * message for it. */
int sfs_header_explain(enum sfs_hdr_status st, const struct sfs_header *h,
		       size_t len, char *err, size_t errlen);

/* ------------------------------------------------------------ registry */

#define SFS_REG_MAGIC "SFSREG\0\0"
#define SFS_REG_VERSION 1u
#define SFS_REG_REC_SIZE 168u
/* Id records beyond this make the file corrupt; an id is never given
 * past it (ENOSPC). A mount registers two per branch at most. */
#define SFS_REG_MAX_RECORDS 65536u
#define SFS_REG_MAX_BYTES ((size_t)SFS_REG_REC_SIZE * (SFS_REG_MAX_RECORDS + 1))

/* The first record of the file. */
struct sfs_disk_reg_head {
	uint8_t  rh_magic[8];       /*   0 "SFSREG\0\0" */
	uint32_t rh_version;        /*   8 1 */
	uint32_t rh_rec_size;       /*  12 168, the size of every record */
	uint32_t rh_next_fs_id;     /*  16 next id of kind 1 (>= 1) */
	uint32_t rh_next_branch_id; /*  20 next id of kind 2 (>= 1) */
	uint8_t  rh_reserved[140];  /*  24 zero */
	uint32_t rh_crc;            /* 164 CRC32C of bytes 0..163 */
};                                  /* 168 */

struct sfs_disk_reg {
	uint32_t r_kind;            /*   0 1 filesystem, 2 branch */
	uint32_t r_id;              /*   4 id within the kind, >= 1 */
	uint8_t  r_fs_uuid[16];     /*   8 UUID of the filesystem */
	int32_t  r_handle_type;     /*  24 kind 2: file handle type of the root */
	uint16_t r_handle_bytes;    /*  28 kind 2: 1..128; kind 1: 0 */
	uint16_t r_reserved;        /*  30 zero */
	uint8_t  r_handle[128];     /*  32 handle, zero-padded */
	uint32_t r_reserved2;       /* 160 zero */
	uint32_t r_crc;             /* 164 CRC32C of bytes 0..163 */
};                                  /* 168 */

enum sfs_rec_status {
	SFS_REC_OK,
	SFS_REC_CRC,                /* checksum mismatch */
	SFS_REC_FIELD,              /* a field out of range, reserved not zero */
	SFS_REC_MAGIC,              /* file header: bad magic */
	SFS_REC_NEWER,              /* file header: newer version */
};
const char *sfs_rec_status_str(enum sfs_rec_status st);

uint32_t sfs_reg_head_csum_compute(const struct sfs_disk_reg_head *d);
bool sfs_reg_head_csum_verify(const struct sfs_disk_reg_head *d);
void sfs_reg_head_csum_set(struct sfs_disk_reg_head *d);
uint32_t sfs_reg_csum_compute(const struct sfs_disk_reg *d);
bool sfs_reg_csum_verify(const struct sfs_disk_reg *d);
void sfs_reg_csum_set(struct sfs_disk_reg *d);

/* next_id[1], next_id[2] from / into a file header record. */
enum sfs_rec_status sfs_reg_head_decode(const struct sfs_disk_reg_head *d,
					uint32_t next_id[3]);
void sfs_reg_head_encode(const uint32_t next_id[3], struct sfs_disk_reg_head *d);
enum sfs_rec_status sfs_reg_decode(const struct sfs_disk_reg *d,
				   struct sfs_reg_entry *e);
void sfs_reg_encode(const struct sfs_reg_entry *e, struct sfs_disk_reg *d);

/* The registry file's bytes into a table (which must be zeroed or freed
 * before): 0, or -EUCLEAN with a message naming the first bad record
 * (records count from 1 after the file header). Duplicate ids or
 * identities are errors. */
int sfs_reg_parse(const void *buf, size_t len, struct sfs_reg_table *t,
		  char *err, size_t errlen);
/* The file's bytes for a table: a malloc'd buffer and its length. */
int sfs_reg_serialize(const struct sfs_reg_table *t, uint8_t **buf, size_t *len);
/* Appends an entry (no id checks). */
int sfs_reg_table_add(struct sfs_reg_table *t, const struct sfs_reg_entry *e);
/* The entry of kind with that identity (fs_uuid, and the handle for
 * kind 2), or NULL. */
const struct sfs_reg_entry *sfs_reg_table_find(const struct sfs_reg_table *t,
					       const struct sfs_reg_entry *key);
void sfs_reg_table_free(struct sfs_reg_table *t);
/* Writes the table as the registry of dir_fd, crash-safe. */
int sfs_reg_store(int dir_fd, const struct sfs_reg_table *t);

/* ------------------------------------------------------------ inomap */

#define SFS_INO_MAGIC "SFSINO\0\0"
#define SFS_INO_VERSION 1u
#define SFS_INO_REC_SIZE 32u
/* Records (tombstones included) a valid inomap holds at most: 2^26, a
 * file of 2 GiB + 32 bytes. Nothing is allocated past it (ENOSPC: the
 * entry gets a number for this mount only), so only damage or a hostile
 * file is larger; it is refused before a byte is read. The file is read
 * in chunks (SFS_INO_CHUNK records): memory is the table, not the file. */
#define SFS_INO_MAX_RECORDS (1u << 26)
#define SFS_INO_MAX_BYTES ((uint64_t)SFS_INO_REC_SIZE * (SFS_INO_MAX_RECORDS + 1))
#define SFS_INO_CHUNK 32768u

struct sfs_disk_ino_head {
	uint8_t  ih_magic[8];       /*  0 "SFSINO\0\0" */
	uint32_t ih_version;        /*  8 1 */
	uint32_t ih_rec_size;       /* 12 32 */
	uint8_t  ih_reserved[12];   /* 16 zero */
	uint32_t ih_crc;            /* 28 CRC32C of bytes 0..27 */
};                                  /* 32 */

/* Record i (from 0, after the file header) holds the number
 * SFS_INO_ALLOC_BASE | (i + 1). fs_id 0 marks a retired record (a
 * tombstone: its number stays used). */
struct sfs_disk_ino {
	uint32_t i_fs_id;           /*  0 filesystem id (registry kind 1), 0 retired */
	uint32_t i_reserved;        /*  4 zero */
	uint64_t i_ino;             /*  8 real inode number (0 when retired) */
	uint64_t i_union_ino;       /* 16 the allocated number */
	uint32_t i_reserved2;       /* 24 zero */
	uint32_t i_crc;             /* 28 CRC32C of bytes 0..27 */
};                                  /* 32 */

uint32_t sfs_ino_head_csum_compute(const struct sfs_disk_ino_head *d);
bool sfs_ino_head_csum_verify(const struct sfs_disk_ino_head *d);
void sfs_ino_head_csum_set(struct sfs_disk_ino_head *d);
uint32_t sfs_ino_csum_compute(const struct sfs_disk_ino *d);
bool sfs_ino_csum_verify(const struct sfs_disk_ino *d);
void sfs_ino_csum_set(struct sfs_disk_ino *d);

enum sfs_rec_status sfs_ino_head_decode(const struct sfs_disk_ino_head *d);
void sfs_ino_head_encode(struct sfs_disk_ino_head *d);
/* Checks record number idx (from 0) and decodes it. */
enum sfs_rec_status sfs_ino_decode(const struct sfs_disk_ino *d, uint64_t idx,
				   uint32_t *fs_id, uint64_t *ino);
void sfs_ino_encode(uint32_t fs_id, uint64_t ino, uint64_t idx,
		    struct sfs_disk_ino *d);
static inline uint64_t sfs_ino_number(uint64_t idx)
{
	return SFS_INO_ALLOC_BASE | (idx + 1);
}

/* The inomap file's bytes into a table (zeroed or freed before). The
 * tail left by an interrupted append is not an error: a partial record
 * (*keep < len) is to be cut off; a bad last complete record
 * (*last_bad) is to be rewritten as a tombstone (its number was never
 * handed out, and never will be). 0, or -EUCLEAN with a message naming
 * the first bad record. A repeated (fs_id, ino) keeps the first. */
int sfs_ino_parse(const void *buf, size_t len, struct sfs_ino_table *t,
		  size_t *keep, bool *last_bad, char *err, size_t errlen);
/* The same from an open inomap (any regular file fd), read in chunks of
 * SFS_INO_CHUNK records; *len is the file's size. A file larger than
 * SFS_INO_MAX_BYTES is -EFBIG before anything is read. */
int sfs_ino_load(int fd, struct sfs_ino_table *t, size_t *keep, size_t *len,
		 bool *last_bad, char *err, size_t errlen);
/* pread of exactly len bytes at off: 0, -errno, or -ENODATA at an early
 * end of file. */
int sfs_pread_full(int fd, void *buf, size_t len, off_t off);
const struct sfs_ino_entry *sfs_ino_table_find(const struct sfs_ino_table *t,
					       uint32_t fs_id, uint64_t ino);
int sfs_ino_table_add(struct sfs_ino_table *t, uint32_t fs_id, uint64_t ino,
		      uint64_t union_ino);
void sfs_ino_table_free(struct sfs_ino_table *t);
/* A new inomap file (header only) in dir_fd, crash-safe. */
int sfs_ino_create(int dir_fd);

/* ------------------------------------------------------------ lowers */

#define SFS_LOWERS_MAX (1u << 20)       /* bytes */
#define SFS_HEADER_READ_MAX 4096        /* more is reported as LONG */

/* Parses the bytes of `lowers`: lines "rw PATH" / "ro PATH", PATH
 * absolute with "\\" and "\n" escaped. 0 or -EUCLEAN with a message. */
int sfs_lowers_parse(const char *buf, size_t len, struct sfs_lower **v,
		     size_t *n, char *err, size_t errlen);

/* ------------------------------------------------------------ exportnames */

#define SFS_XNAMES_MAGIC "SFSXNAM\0"
#define SFS_XNAMES_VERSION 1u
#define SFS_XNAMES_MAX_RECORDS (1u << 16)
/* the largest file of that many records of 255-byte names */
#define SFS_XNAMES_MAX_BYTES (32u + SFS_XNAMES_MAX_RECORDS * (20u + 255u + 4u))

/* One record: node id, its parent's id, its last name. */
struct sfs_xname {
	uint64_t id;
	uint64_t parent;
	char name[256];
};

/* The bytes of a file of n records, malloc'd. */
int sfs_xnames_encode(const struct sfs_xname *v, size_t n, uint8_t **buf, size_t *len);
/* Checks the whole file and calls each (if not NULL) per record, in
 * order: 0, or -EUCLEAN with a message at the first thing wrong (each is
 * called for the records before it), -ENOMEM if each failed. */
int sfs_xnames_parse(const uint8_t *buf, size_t len,
		     int (*each)(void *arg, const struct sfs_xname *x), void *arg,
		     char *err, size_t errlen);

/* ------------------------------------------------------------ files */

/* Opens name beneath dir_fd, never following a symlink, never leaving
 * it: an fd or -errno (-ELOOP for a symlink). */
int sfs_meta_openat(int dir_fd, const char *name, int flags, mode_t mode);
/* Reads a whole file beneath dir_fd, at most max bytes (-EFBIG beyond):
 * 0 with a malloc'd buffer (NUL-terminated, not counted) and length. */
int sfs_meta_read_file(int dir_fd, const char *name, size_t max,
		       uint8_t **buf, size_t *len);
/* Replaces name in dir_fd with the bytes, crash-safe: NAME.tmp written
 * and fsynced, renamed over name, dir_fd fsynced. */
int sfs_meta_write_file(int dir_fd, const char *name, const void *buf,
			size_t len);
/* fsync of a directory given by any fd (O_PATH too). */
int sfs_meta_fsync_dir(int dir_fd);
/* Removes name in dir_fd and, for a directory, everything under it,
 * without following symlinks. */
int sfs_meta_remove_tree(int dir_fd, const char *name);
/* Empties the directory fd (any fd of it) the same way. */
int sfs_meta_empty_dir(int fd);

/* ------------------------------------------------------------ opening */

/* metalock.c: creates `lock` in m's directory and takes flock(LOCK_EX)
 * on it for the mount (m->lock_fd): -EBUSY when a mount holds it. */
int sfs_meta_take_lock(struct sfs_meta *m, char *err, size_t errlen);
/* metadir.c: a new branch UUID (random, RFC 4122 version 4). */
int sfs_meta_new_uuid(uint8_t uuid[16]);

#endif
