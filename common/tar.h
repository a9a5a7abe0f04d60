/* A tar stream writer (tar.c): POSIX pax archives, that is ustar headers
 * with an extended header of key=value records before an entry whose
 * name, link target, size, owner or time does not fit its ustar field,
 * or that has extended attributes (SCHILY.xattr.NAME, as GNU tar and the
 * container tools write them). Nothing of stackfs's own: the union's
 * rules live in union/ocilayer.c, which uses it.
 *
 * The stream is an fd (a pipe or a file), written through a buffer. Every
 * function returns 0 or -errno; after a failed write the writer writes
 * nothing more. */
#ifndef SFS_COMMON_TAR_H
#define SFS_COMMON_TAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define SFS_TAR_BLOCK 512

/* The typeflags written. */
enum sfs_tar_type {
	SFS_TAR_REG = '0',
	SFS_TAR_HARDLINK = '1',
	SFS_TAR_SYMLINK = '2',
	SFS_TAR_CHR = '3',
	SFS_TAR_BLK = '4',
	SFS_TAR_DIR = '5',
	SFS_TAR_FIFO = '6',
};

struct sfs_tar_xattr {
	const char *name;                  /* "user.x", "system.posix_acl_access" */
	const void *value;                 /* any bytes */
	size_t len;
};

struct sfs_tar_entry {
	const char *name;                  /* as stored: "a/b", a directory "a/b/" */
	char type;                         /* enum sfs_tar_type */
	mode_t mode;                       /* the permission bits (07777) */
	uint64_t uid, gid;
	uint64_t size;                     /* bytes of data that follow (SFS_TAR_REG) */
	struct timespec mtime;
	const char *link;                  /* a symlink's target, a hard link's first name */
	unsigned devmajor, devminor;       /* SFS_TAR_CHR, SFS_TAR_BLK */
	const struct sfs_tar_xattr *xattrs; /* in the order to write them */
	size_t nxattrs;
};

struct sfs_tar {
	int fd;
	int err;                           /* the write that failed, then nothing more */
	uint64_t left;                     /* data the current entry still owes */
	uint64_t pad;                      /* zeros after it, to the block */
	uint64_t written;                  /* bytes handed to fd */
	size_t len;                        /* bytes in buf */
	unsigned char buf[1 << 16];
};

void sfs_tar_init(struct sfs_tar *t, int fd);
/* The headers of an entry (pax records first when needed). -EINVAL when
 * the previous entry's data is not all written, -EOVERFLOW for a device
 * number no header holds. */
int sfs_tar_header(struct sfs_tar *t, const struct sfs_tar_entry *e);
/* Data of the current entry; the padding follows by itself once its
 * size is reached. -EINVAL for more than the header said. */
int sfs_tar_data(struct sfs_tar *t, const void *p, size_t n);
/* The end-of-archive blocks, everything flushed: only now does the
 * stream read as a whole archive. */
int sfs_tar_finish(struct sfs_tar *t);
/* Gives up: flushes what is buffered and, when the stream stands
 * between two entries, writes the header of an entry whose data never
 * comes, so that any tar reader finds the archive truncated (a stream
 * cut between entries would read as complete to most). */
void sfs_tar_abandon(struct sfs_tar *t);

#endif
