/* Branches: parsing the BRANCHES spec, validating it, and the immutable
 * snapshot of the branch set that every request works on. */
#ifndef SFS_BRANCH_H
#define SFS_BRANCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "union/branch_spec.h"
#include "whiteout/metadir.h"

struct sfs_meta;

/* What the entries of one branch directory in successive snapshots
 * share: its metadata dir (opened once: it holds the lock) and the count
 * of files open on it. */
struct sfs_branch_shared {
	atomic_uint refs;
	atomic_uint open_files;   /* files of the view open on it */
	struct sfs_meta *meta;    /* rw branches, once opened, else NULL */
	/* where its metadata dir is (whiteout/metaloc.c): found when the
	 * branch is first rw (located), kept while any snapshot has it */
	struct sfs_metaloc loc;
	bool located;
	/* the root opened for reading, which open_by_handle_at needs to
	 * name the filesystem (an O_PATH fd will not do): opened at the
	 * first handle to open, -1 until then (layer.c) */
	atomic_int handle_fd;
};


/* One opened branch. Refcounted so that a snapshot can be replaced while
 * requests of the old one are still in flight. */
struct sfs_branch {
	atomic_uint refs;
	char *path;               /* canonical absolute path */
	enum sfs_branch_mode mode;
	int root_fd;              /* O_PATH|O_DIRECTORY of the branch root */
	struct sfs_meta *meta;    /* its metadata dir (rw branches), or NULL */
	struct sfs_branch_shared *shared;
	int work_fd;              /* meta's staging dir (owned by meta), or -1 */
	dev_t dev;                /* st_dev of the root */
	ino_t ino;                /* st_ino of the root */
	uint8_t fs_uuid[16];      /* UUID of its filesystem */
	uint32_t fs_id;           /* stable id of its filesystem (registry) */
	uint32_t id;              /* stable id of the branch (registry) */
	uint8_t fh_kind;          /* nfs_export=on: its file handles (export.c) */
	unsigned lacks;           /* what its filesystem cannot do (branch_caps.h) */
	bool caps_known;          /* lacks probed (a kept branch keeps them) */
};

/* An immutable, refcounted view of the branch set, highest priority
 * first. Requests take a reference, never a lock. */
struct sfs_snap {
	atomic_uint refs;
	unsigned gen;             /* bumped on every branch change */
	unsigned n;
	int top_rw;               /* index of the highest rw branch, -1 if none */
	unsigned data_from;       /* the first data-only branch, n if none */
	struct sfs_meta *reg;     /* the registry of ids (of a rw branch kept
				   * across changes), or NULL */
	bool pin_fds;             /* a branch's handles reopen nothing for
				   * sure (FUSE): node fds are never closed */
	struct sfs_branch *b[];
};

/* branch_ids.c: the ids of s's branches and filesystems, from the
 * registry of its highest rw branch (s->reg), or by order without one.
 * 0, or -errno with a message in err. */
int sfs_snap_ids(struct sfs_snap *s, char *err, size_t errlen);
/* The same for a snapshot changed from old: old's registry and ids kept
 * when it still has that rw branch. */
int sfs_snap_change_ids(struct sfs_snap *s, const struct sfs_snap *old);
/* Records of the branches below each other rw branch in its registry. */
void sfs_snap_register_below(struct sfs_snap *s);
/* Names the branch roots for the seam's traces and logs. */
void sfs_snap_register_roots(const struct sfs_snap *s);

/* A change of the branch set of a live mount. */
enum sfs_change_op { SFS_CHANGE_ADD, SFS_CHANGE_REMOVE, SFS_CHANGE_MODE };
struct sfs_change {
	enum sfs_change_op op;
	const char *path;         /* ADD: the new branch */
	unsigned index;           /* ADD: its position; else the branch's */
	enum sfs_branch_mode mode;/* ADD, MODE */
};

/* A new snapshot: old with the change applied, checked as at mount time
 * (missing, duplicated, nested, the mount point, a read-only filesystem
 * under rw, a metadata dir that cannot be used), metadata dirs of new rw
 * branches opened, ids from the registry. Nothing changes on failure. */
int sfs_snap_change(const struct sfs_snap *old, const struct sfs_change *c,
		    const char *mountpoint, int whiteout_style,
		    struct sfs_snap **out, char *err, size_t errlen);

/* Opens and validates every branch (exists, is a directory, readable,
 * not duplicated, not nested in another, not under or over mountpoint,
 * rw branches on a writable filesystem, their metadata dir found (in a
 * workdir: specs[i].workdir, or the one the root records), readable and
 * not newer or corrupt). Nothing is created on disk.
 * Returns 0 or -errno with a one-line message naming the branch. */
int sfs_snap_open(const struct sfs_branch_spec *specs, size_t n,
		  const char *mountpoint, struct sfs_snap **out,
		  char *err, size_t errlen);
/* Opens (creating or, when `upgrade`, upgrading) the metadata directory
 * of every rw branch, holding its lock for the mount, and gives every
 * branch its stable ids from the registry of the highest rw branch (by
 * order of appearance when there is no rw branch). Run once validation
 * passed and the mount is made. */
int sfs_snap_prepare_meta(struct sfs_snap *s, int whiteout_style, bool upgrade,
			  char *err, size_t errlen);

struct sfs_snap *sfs_snap_get(struct sfs_snap *s);
void sfs_snap_put(struct sfs_snap *s);
void sfs_branch_put(struct sfs_branch *b);


#endif
