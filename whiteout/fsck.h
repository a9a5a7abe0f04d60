/* The checker of a branch (`stackfs fsck`): its metadata directory
 * (header, registry, inomap, lowers, work/, index/) and the union's
 * marks in its tree (whiteouts, opaque markers, redirects, origin
 * records, reserved names). Each kind of problem has an entry in the
 * problem table (problem.c): a stable name, a description, whether
 * --repair fixes it and how. */
#ifndef SFS_FSCK_H
#define SFS_FSCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sfs_problem_code {
	SFS_PR_HEADER_MISSING,
	SFS_PR_HEADER_NOT_FILE,
	SFS_PR_HEADER_SHORT,
	SFS_PR_HEADER_LONG,
	SFS_PR_HEADER_MAGIC,
	SFS_PR_HEADER_CRC,
	SFS_PR_HEADER_VERSION,
	SFS_PR_HEADER_FLAGS,
	SFS_PR_HEADER_RESERVED,
	SFS_PR_META_NOT_DIR,
	SFS_PR_META_MODE,
	SFS_PR_META_UNTRUSTED,
	SFS_PR_META_TMP,
	SFS_PR_META_UNKNOWN,
	SFS_PR_META_TOO_LARGE,
	SFS_PR_REG_MISSING,
	SFS_PR_REG_NOT_FILE,
	SFS_PR_REG_NEWER,
	SFS_PR_REG_HEAD,
	SFS_PR_REG_PARTIAL,
	SFS_PR_REG_CRC,
	SFS_PR_REG_FIELD,
	SFS_PR_REG_DUP,
	SFS_PR_INO_MISSING,
	SFS_PR_INO_NOT_FILE,
	SFS_PR_INO_NEWER,
	SFS_PR_INO_HEAD,
	SFS_PR_INO_PARTIAL,
	SFS_PR_INO_CRC,
	SFS_PR_INO_FIELD,
	SFS_PR_INO_DUP,
	SFS_PR_LOWERS_BAD,
	SFS_PR_WORKDIR_CORRUPT,
	SFS_PR_XNAMES_BAD,
	SFS_PR_LOCK_BAD,
	SFS_PR_WORK_NOT_DIR,
	SFS_PR_WORK_LEFTOVER,
	SFS_PR_INDEX_NOT_DIR,
	SFS_PR_INDEX_NAME,
	SFS_PR_INDEX_ORPHAN,
	SFS_PR_INDEX_STALE,
	SFS_PR_ORIGIN_CORRUPT,
	SFS_PR_ORIGIN_DANGLING,
	SFS_PR_LOWERNAME_CORRUPT,
	SFS_PR_WH_NOTHING,
	SFS_PR_WH_BESIDE,
	SFS_PR_WH_EMPTY_DIR,
	SFS_PR_WH_BAD_TYPE,
	SFS_PR_WH_RESERVED,
	SFS_PR_OPQ_VALUE,
	SFS_PR_OPQ_NOT_DIR,
	SFS_PR_OPQ_MARKER_TYPE,
	SFS_PR_OPQ_MARKER_DATA,
	SFS_PR_REDIRECT_BAD,
	SFS_PR_DEVICE_BAD,
	SFS_PR_METACOPY_NO_DATA,
	SFS_PR_METACOPY_TIMES_KEPT,
	SFS_PR_METACOPY_TIMES_BAD,
	SFS_PR_NESTED_META,
	SFS_PR_COMMIT_UNFINISHED,
	SFS_PR_COMMIT_CORRUPT,
	SFS_PR_COMMIT_MARKER_STALE,
	SFS_PR_COMMIT_STAGED,
	SFS_PR_COMMIT_TMP,
	SFS_PR_VOLATILE_UNCLEAN,
	SFS_PR_RECORDS_USER,
	SFS_PR_COUNT
};

/* One row of the problem table. */
struct sfs_problem_desc {
	enum sfs_problem_code code;
	const char *name;           /* stable, for --json and scripts */
	const char *description;    /* what is wrong */
	bool fixable;               /* --repair fixes it */
	const char *fix;            /* what --repair does, or why it does not */
};

/* The row of a code (never NULL for a valid code). */
const struct sfs_problem_desc *sfs_problem_desc(enum sfs_problem_code code);

/* A problem found, as reported. */
struct sfs_fsck_problem {
	enum sfs_problem_code code;
	char *path;                 /* from the branch root, "/" first */
	char *detail;               /* more about this instance, or NULL */
	bool fix_tried;             /* --repair tried to fix it */
	bool fixed;
	int fix_err;                /* -errno when the fix failed */
};

struct sfs_fsck_opts {
	const char *branch;         /* the path given, for messages */
	int root_fd;                /* O_PATH|O_DIRECTORY of the branch root */
	/* the directory holding its .stackfs: root_fd, or the workdir of an
	 * overlay-style mount (whiteout/metaloc.c finds which) */
	int meta_at_fd;
	/* the root's record of its workdir (whiteout/metaloc.c): whole (or
	 * none), damaged with the workdir given (workdir: --repair writes
	 * it), or damaged with none given (the metadata cannot be found:
	 * nothing else is checked) */
	enum { SFS_FSCK_WDREC_OK, SFS_FSCK_WDREC_GIVEN, SFS_FSCK_WDREC_LOST } workdir_record;
	const char *workdir;
	bool repair;
	/* repair what lower branches decide even when they are not the
	 * recorded ones (--force) */
	bool force;
	/* a mount holds the branch (its lock, or a daemon its root) */
	bool in_use;
	/* also read the inode of each .wh. file (WH_BAD_TYPE when it holds
	 * data); otherwise its name, the whole record, is judged alone */
	bool thorough;
	/* lower branches, highest first (--lower), or NULL: those below
	 * the branch in .stackfs/lowers */
	const char *const *lowers;
	size_t nlowers;
	/* called once per problem, after any fix was tried */
	void (*report)(void *arg, const struct sfs_fsck_problem *p);
	/* what is worth knowing but is no problem; error: an operational
	 * error (the check could not be done) */
	void (*message)(void *arg, bool error, const char *msg);
	/* called per entry of the tree; the callee rate-limits */
	void (*progress)(void *arg, uint64_t entries, const char *path);
	void *arg;
};

struct sfs_fsck_result {
	unsigned found, fixed, left;
	bool op_error;              /* something could not be checked */
	char **lowers;              /* the lower branches used (malloc'd) */
	size_t nlowers;
	bool lowers_known;
};

/* Exit bits, like e2fsck's (ORed). */
#define SFS_FSCK_FIXED  1
#define SFS_FSCK_LEFT   4
#define SFS_FSCK_OPERR  8

/* Runs every check (and fix, with repair). Returns the exit status
 * (SFS_FSCK_* ORed; 0 when clean). The caller holds the branch's lock
 * when repairing. Free r with sfs_fsck_result_free. */
int sfs_fsck_run(const struct sfs_fsck_opts *o, struct sfs_fsck_result *r);
void sfs_fsck_result_free(struct sfs_fsck_result *r);

#endif
