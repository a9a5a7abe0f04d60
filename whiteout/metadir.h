/* The metadata directory ".stackfs" of each rw branch: header (format
 * version, flags, branch UUID), registry (stable filesystem and branch
 * ids), inomap (allocated inode numbers), lowers (the branch list of the
 * last mount), lock, work/ (staging) and index/ (hard links of copied-up
 * inodes). Byte layouts: whiteout/ondisk.h and docs/format.md "On-disk format".
 *
 * It is in the directory that holds it, named by an fd called at_fd
 * below: the branch root, or the workdir of an overlay-style mount
 * (metaloc.c finds which; sfs_metaloc_at gives the fd).
 *
 * Every function returns 0 or -errno; those taking err/errlen leave a
 * one-line message there on failure (without the branch path: the
 * caller names the branch). */
#ifndef SFS_METADIR_H
#define SFS_METADIR_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "xattr/records.h"

#define SFS_METADIR_NAME  ".stackfs"
#define SFS_META_HEADER   "header"
#define SFS_META_REGISTRY "registry"
#define SFS_META_INOMAP   "inomap"
#define SFS_META_LOWERS   "lowers"
#define SFS_META_LOCK     "lock"
#define SFS_META_WORK     "work"
#define SFS_META_INDEX    "index"
#define SFS_META_XNAMES   "exportnames"

#define SFS_META_VERSION  1u           /* the format this code writes */
#define SFS_META_F_OVERLAY 0x1u        /* header flag: overlay whiteouts */
/* header flag: a mount with -o sync=volatile is using the branch, or
 * one did and did not end cleanly (what it wrote may be lost or
 * partial after a power cut): a mount refuses the branch unless told
 * (stackfs/copyup/sync.c). A flag, not a file, so that a stackfs older than
 * it refuses the branch too (an unknown flag). */
#define SFS_META_F_VOLATILE 0x2u
/* header flag: the union's records in the branch's tree (origin,
 * redirect, device, and its overlay marks with whiteout=overlay) are
 * user.* attributes, written by a process without trusted.* ones
 * (xattr/records.h: a user's mount, a user namespace's root). A process
 * with trusted.* attributes refuses the branch rather than follow, or
 * silently drop, records anyone who may write the branch can forge;
 * one without adopts a branch whose header lacks it (it could read no
 * trusted.* record there anyway). */
#define SFS_META_F_USERXATTR 0x4u

/* Allocated union inode numbers: top 8 bits all ones, the low 56 bits a
 * sequence number from 1, never reused (see sfs_meta_ino_alloc). */
#define SFS_INO_ALLOC_BASE 0xFF00000000000000ull
#define SFS_INO_ALLOC_MASK 0x00FFFFFFFFFFFFFFull

/* Registry record kinds. Ids count from 1 per kind, never reused. */
enum sfs_reg_kind { SFS_REG_FS = 1, SFS_REG_BRANCH = 2 };

#define SFS_HANDLE_MAX 128             /* = MAX_HANDLE_SZ */

enum sfs_meta_state {
	SFS_META_ABSENT,   /* no .stackfs (or an empty one left by an
			    * interrupted creation) */
	SFS_META_CURRENT,  /* a valid header of version SFS_META_VERSION */
	SFS_META_OLD,      /* version 0: .stackfs with work/, no header */
};

/* One registry entry in memory. */
struct sfs_reg_entry {
	uint32_t kind;                 /* enum sfs_reg_kind */
	uint32_t id;
	uint8_t fs_uuid[16];
	int32_t handle_type;           /* kind 2 only */
	uint16_t handle_bytes;
	uint8_t handle[SFS_HANDLE_MAX];
};

/* The registry in memory, in file order. */
struct sfs_reg_table {
	struct sfs_reg_entry *v;
	size_t n, cap;
	uint32_t next_id[3];           /* next id per kind ([0] unused) */
};

/* One inomap entry in memory. */
struct sfs_ino_entry {
	struct sfs_ino_entry *next;    /* hash chain */
	uint32_t fs_id;
	uint64_t ino;                  /* real inode number */
	uint64_t union_ino;            /* allocated number */
};

/* The inomap in memory: a hash table keyed by (fs_id, ino). */
struct sfs_ino_table {
	struct sfs_ino_entry **tab;
	size_t size;                   /* buckets, a power of two (or 0) */
	size_t count;                  /* entries */
	uint64_t nrec;                 /* records in the file, tombstones too */
};

struct sfs_meta {
	int dir_fd;                    /* O_PATH|O_DIRECTORY of .stackfs */
	int work_fd;                   /* O_PATH|O_DIRECTORY of work/ */
	int index_fd;                  /* O_PATH|O_DIRECTORY of index/ */
	int lock_fd;                   /* lock, flock(LOCK_EX) held while open */
	int ino_fd;                    /* inomap, O_RDWR, for appending */
	uint32_t version, flags;       /* from the header */
	uint8_t uuid[16];              /* the branch's UUID */
	uint64_t ctime;                /* creation time, seconds */

	pthread_mutex_t mu;            /* guards reg and ino */
	struct sfs_reg_table reg;
	bool reg_held;                 /* new ids wait for sfs_meta_reg_release */
	bool reg_dirty;                /* ... and some were given */
	struct sfs_ino_table ino;
	uint64_t ino_unsynced;         /* first record written but not yet
					* fdatasync'd (a batch's), or UINT64_MAX */
	/* A batch's records not yet written: those of ino_pend_first on
	 * (up to ino.nrec), written by one pwrite before any sync. */
	uint8_t *ino_pend;
	size_t ino_pend_n, ino_pend_cap; /* records */
	uint64_t ino_pend_first;
};

/* One line of `lowers`: a branch of the last mount, highest first. */
struct sfs_lower {
	char *path;                    /* absolute */
	bool rw;
};

/* ---- metaloc.c: where a branch's metadata dir is ---------------------- */

/* On a branch root whose metadata dir is in a workdir (an overlay-style
 * mount's workdir=): the workdir's absolute path, no NUL. A trusted.*
 * name (only root can write it), user.* for a mount without trusted.*
 * attributes (xattr/records.h); the view shows neither. */
#define SFS_WORKDIR_XATTR sfs_rec_name(SFS_REC_WORKDIR)   /* or user.stackfs.workdir */

struct sfs_metaloc {
	int wd_fd;                     /* O_PATH|O_DIRECTORY of the workdir
					* holding .stackfs, or -1: the root */
	char *workdir;                 /* its canonical path, or NULL */
	char *recorded;                /* a workdir given: the other one the
					* root recorded, or NULL */
	bool fresh;                    /* the workdir holds no .stackfs yet */
	/* the root's record is damaged (no absolute path): with a workdir
	 * given, it is passed over (fsck --repair writes it again) and the
	 * mount refuses it; without, the open fails with -EUCLEAN */
	bool record_damaged;
};

/* Where the metadata dir of the branch root_fd is: in the workdir given
 * (an overlay-style mount's workdir=; NULL: none given), else in the one
 * the root records, else in the root. A workdir must be a directory on
 * the branch's mount, apart from the branch; its .stackfs, if any, must
 * be this branch's (the first branch of its registry); the branch must
 * have no .stackfs of its own. 0, or -errno with a message (l closed).
 * lenient: a record that leads nowhere is no record (0, but -EUCLEAN
 * for a damaged record; a ro branch, where only a commit's marker is
 * looked for). */
int sfs_metaloc_open(int root_fd, const char *workdir, bool lenient, struct sfs_metaloc *l,
		     char *err, size_t errlen);
void sfs_metaloc_close(struct sfs_metaloc *l);
/* The fd of the directory holding .stackfs (the at_fd of this header). */
static inline int sfs_metaloc_at(const struct sfs_metaloc *l, int root_fd)
{
	return l->wd_fd >= 0 ? l->wd_fd : root_fd;
}
/* Writes the root's record of l's workdir unless it says so already
 * (a mount with workdir=), then syncs the root: 0 or -errno. */
int sfs_metaloc_record(const struct sfs_metaloc *l, int root_fd);

/* ---- metatrust.c: who may own what in the metadata dir ---------------- */

/* Why an entry of the metadata dir is not trusted. */
enum sfs_distrust_why {
	SFS_DT_OWNER = 1,              /* not owned by the daemon's euid */
	SFS_DT_MODE,                   /* writable by group or others */
	SFS_DT_SYMLINK,                /* a symlink */
	SFS_DT_XDEV,                   /* on another filesystem */
};

struct sfs_distrust {
	char what[300];                /* ".stackfs" or ".stackfs/NAME" */
	int why;                       /* enum sfs_distrust_why */
	uid_t uid;                     /* its owner */
	mode_t mode;                   /* its type and mode */
};

/* Opens .stackfs beneath at_fd (O_PATH, never through a symlink or a
 * mount point) and checks that it and every entry directly in it belong
 * to the daemon's user alone (sfs_meta_trusted). The fd, or -errno with
 * a message (-ENOENT: none, no message; -EPERM: not trusted). */
int sfs_meta_dir_open(int at_fd, char *err, size_t errlen);
/* 0 when dir_fd (.stackfs of at_fd) and its entries are owned by the
 * daemon's euid, writable by no group or other, no symlink and on the
 * filesystem of at_fd (a workdir is on the branch's: metaloc.c);
 * -EPERM with the first one that is not in *d; -errno. */
int sfs_meta_trusted(int at_fd, int dir_fd, struct sfs_distrust *d);
/* Judges one entry (its lstat) against those rules: 0 or -EPERM (*d's
 * why, uid and mode set; what is the caller's). */
int sfs_meta_judge(const struct stat *st, dev_t dev, struct sfs_distrust *d);
/* "WHAT is owned by uid 1000 (alice), not by uid 0 (root) that runs
 * stackfs", and the like. */
void sfs_distrust_str(const struct sfs_distrust *d, char *buf, size_t len);
/* The mount's one-line refusal: what, why it matters, what to do. */
void sfs_distrust_explain(const struct sfs_distrust *d, char *err, size_t errlen);

/* ---- index.c: names of the hard-link index's entries ----------------- */

#define SFS_INDEX_NAME_MAX 32
/* "FFFFFFFF-IIIIIIIIIIIIIIII": filesystem id and lower inode number. */
void sfs_index_name(char buf[SFS_INDEX_NAME_MAX], uint32_t fs_id, uint64_t ino);
/* Whether s has that form. */
bool sfs_index_name_ok(const char *s);

/* Rebuilds the untrusted .stackfs of at_fd as one of the daemon's
 * user's (whiteout/metarebuild.c): records copied for the checks that
 * follow, index entries with an origin record linked, the old directory
 * kept beside under the name put in kept. 0 or -errno (-ESTALE: the
 * directory was swapped meanwhile). */
int sfs_meta_rebuild(int at_fd, char *kept, size_t keptlen);

/* 1 with a message when users other than the daemon's can write the
 * directory fd (what that lets them do), 0 when none can: the branch
 * root, or (workdir) the workdir holding its .stackfs. */
int sfs_root_writers(int fd, bool workdir, char *msg, size_t len);

/* Reads and checks the metadata dir beneath at_fd (O_PATH is enough),
 * changing nothing. 0 with *state, or -errno with a message:
 *  -EPROTONOSUPPORT "format version N is newer than this stackfs (1)"
 *  -EUCLEAN "header is corrupt (checksum mismatch)", "header truncated
 *           (N bytes)", "bad magic", "header missing", "registry record
 *           N is corrupt (checksum mismatch)", ...
 *  -ELOOP   .stackfs (or a file in it) is a symlink
 *  -ENOTDIR .stackfs is not a directory
 * A torn last record of the registry or inomap (an interrupted append)
 * is not an error: sfs_meta_open drops it. */
int sfs_meta_check(int at_fd, enum sfs_meta_state *state,
		   char *err, size_t errlen);

/* Opens the metadata dir for a mount: creates it when absent, upgrades
 * version 0 only when `upgrade` (else -EPROTO "format version 0 needs
 * an upgrade (-o upgrade)"), takes the lock (-EBUSY "branch is in use by
 * a mounted stackfs"), creates work/ and index/ when missing and
 * empties work/, loads the registry and inomap. whiteout_style is
 * 0 (aufs) or 1 (overlay): recorded in the header flags (the header is
 * rewritten if it differs); < 0 keeps what the header says (aufs for a
 * new one). Nothing is changed on disk before every check passed.
 * On failure *m is closed (all fds -1). */
int sfs_meta_open(int at_fd, int whiteout_style, bool upgrade,
		  struct sfs_meta *m, char *err, size_t errlen);
/* Records another whiteout style in the header of an open metadata dir
 * (0 aufs, 1 overlay): 0, or -errno with the header as it was. */
int sfs_meta_set_style(struct sfs_meta *m, int whiteout_style);
void sfs_meta_close(struct sfs_meta *m);

/* The header flags of the metadata dir beneath at_fd, read without
 * changing anything: 0, -ENOENT without a header, or -errno (a header
 * sfs_meta_check would refuse is -EUCLEAN). */
int sfs_meta_read_flags(int at_fd, uint32_t *flags);
/* Rewrites the header of an open metadata dir with these flags (only
 * SFS_HDR_KNOWN_FLAGS), crash-safely; m->flags follows. */
int sfs_meta_set_flags(struct sfs_meta *m, uint32_t flags);
/* The same, written over the header file in place (no header.tmp): for
 * a mount's end, when the branch may be being removed (-ENOENT then). */
int sfs_meta_set_flags_in_place(struct sfs_meta *m, uint32_t flags);

/* The id of a filesystem by UUID; allocates and persists a new one when
 * unknown. Thread-safe. */
int sfs_meta_fs_id(struct sfs_meta *m, const uint8_t uuid[16], uint32_t *id);
/* The id of a branch by (UUID of its filesystem, file handle of its
 * root); allocates and persists a new one when unknown. Thread-safe. */
int sfs_meta_branch_id(struct sfs_meta *m, const uint8_t uuid[16],
		       int handle_type, const void *handle,
		       unsigned handle_bytes, uint32_t *id);
/* Between these two, new ids are given but the registry is written
 * once, at the release (0 or -errno): registering a thousand branches
 * rewrote and fsynced it a thousand times (6 s). An id is used only once
 * its release succeeded. */
void sfs_meta_reg_hold(struct sfs_meta *m);
int sfs_meta_reg_release(struct sfs_meta *m);

/* An allocated, persistent, never-reused union inode number for
 * (fs_id, ino): the same one every time for the same pair. Persisted
 * (appended and fdatasync'd) before it is returned, or inside a batch
 * (below) before the batch ends. Thread-safe.
 * sfs_meta_ino_find only looks: 1 with *out, 0 when none. */
int sfs_meta_ino_alloc(struct sfs_meta *m, uint32_t fs_id, uint64_t ino,
		       uint64_t *out);
int sfs_meta_ino_find(struct sfs_meta *m, uint32_t fs_id, uint64_t ino,
		      uint64_t *out);
/* Between begin and end, this thread's allocations are persisted by one
 * fdatasync at end (0 or -errno), which must come before any of their
 * numbers is handed out (a READDIRPLUS reply). */
void sfs_meta_ino_batch_begin(void);
int sfs_meta_ino_batch_end(void);

/* Writes `lowers` (crash-safe: lowers.tmp, fsync, rename, fsync dir):
 * the branches of this mount, highest first, this branch included.
 * Paths must be absolute. */
int sfs_meta_write_lowers(struct sfs_meta *m, const struct sfs_lower *v,
			  size_t n);
/* Reads `lowers` of the metadata dir dir_fd: 0 with a malloc'd array
 * (free with sfs_lowers_free), -ENOENT when there is none, -EUCLEAN with
 * a message when a line is malformed. */
int sfs_meta_read_lowers(int dir_fd, struct sfs_lower **v, size_t *n,
			 char *err, size_t errlen);
void sfs_lowers_free(struct sfs_lower *v, size_t n);

/* Takes flock(LOCK_EX|LOCK_NB) (or LOCK_SH when !excl) on .stackfs/lock
 * beneath at_fd without creating anything: an fd to close to release
 * it, -EBUSY when a mount holds it, -ENOENT when there is no lock file. */
int sfs_meta_lock(int at_fd, bool excl);

/* The UUID of the filesystem holding fd (any fd, O_PATH too): the
 * FS_IOC_GETFSUUID ioctl, or, only when the filesystem does not support
 * it, a hash of statfs's f_fsid and f_type (docs/format.md "registry": Filesystem UUID). */
int sfs_fs_uuid(int fd, uint8_t uuid[16]);
/* The file handle of dirfd/name, not following a symlink; name "" means
 * dirfd itself. *handle_bytes is in/out (buffer size in, size out). On
 * FUSE, whose handles name the client's nodes, not inodes, it is the
 * inode number (8 bytes, little-endian) in a handle of type
 * SFS_HANDLE_NUMBER, which identifies but never opens. */
#define SFS_HANDLE_NUMBER 0x5346494e /* "SFIN" */
int sfs_fs_handle(int dirfd, const char *name, int *handle_type,
		  void *handle, unsigned *handle_bytes);

#endif
