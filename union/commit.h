/* Folding a rw branch into the branch just below it (`stackfs commit`),
 * so that the lower branch, with the branches below it, shows what the
 * union of the two showed; then emptying the rw branch (unless keep).
 * docs/diff-commit.md "diff and commit" has the rules and the order.
 *
 * Files are copied as copy-up copies them (a reflink or the data extents,
 * owner, xattrs and ACLs but not the union's private ones, mode, ns times,
 * inode flags), each built under a temporary name in its target directory
 * and renamed into place; hard links stay links. Whiteouts become
 * deletions, opaque directories replacements, redirected (moved)
 * directories a rename of the lower directory. With branches below the
 * lower one (the rw branch's .stackfs/lowers), whiteouts, opaque marks
 * and redirects are written into the lower branch where they are needed
 * to keep hiding or finding what those branches hold. A journal
 * (whiteout/journal.h) makes every step recoverable.
 *
 * The library prints nothing: it reports through the callbacks of the
 * options and the result; the command (cli/cmd_commit.c) says it. */
#ifndef SFS_UNION_COMMIT_H
#define SFS_UNION_COMMIT_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "union/changes.h"

struct sfs_commit_opts {
	const char *rw;                /* the rw branch, as given */
	const char *into;              /* the lower branch, as given */
	bool keep;                     /* leave the rw branch as it is */
	/* set (by a signal handler) to stop before the next step and undo;
	 * a stop while the rw branch is emptied finishes that. May be NULL. */
	const volatile sig_atomic_t *stop;
	/* per entry applied, of total (the callee rate-limits) */
	void (*progress)(void *arg, uint64_t done, uint64_t total, const char *path);
	/* a note worth saying (an unfinished commit resumed...) */
	void (*message)(void *arg, const char *msg);
	/* a running daemon using the directory dir as a branch, which the
	 * branch's lock does not show (a read-only branch): its pid, or 0 */
	pid_t (*in_use)(void *arg, const struct stat *dir);
	/* who holds the lock of the branch whose .stackfs is beneath at_fd
	 * (its root, or its workdir) ("the stackfs mount on MP, stackfsd pid
	 * N"), to name what to unmount: 0, or -errno. May be NULL. */
	int (*lock_holder)(void *arg, int at_fd, char *buf, size_t len);
	void *arg;
};

enum sfs_commit_outcome {
	SFS_COMMIT_DONE,               /* committed (and emptied unless keep) */
	SFS_COMMIT_USAGE,              /* refused, a usage error: msg */
	SFS_COMMIT_REFUSED,            /* refused before anything changed: msg */
	SFS_COMMIT_FAILED,             /* stopped part way: err..., left */
};

/* What a failed commit left. */
enum sfs_commit_left {
	SFS_COMMIT_LEFT_NOTHING,       /* stopped before anything was changed */
	SFS_COMMIT_LEFT_UNEMPTIED,     /* the lower branch holds the changes, the
					* rw branch was not emptied completely */
	SFS_COMMIT_LEFT_UNDONE,        /* undone: the union shows what it did */
	SFS_COMMIT_LEFT_JOURNAL,       /* the undo failed (undo_msg): the journal
					* is kept for the next commit or fsck */
};

struct sfs_commit_result {
	enum sfs_commit_outcome outcome;
	char msg[PATH_MAX + 300];      /* why it was refused */
	struct sfs_changes changes;    /* what the commit applies (diff's list) */
	bool emptied;                  /* the rw branch was emptied */
	uint64_t done, total;          /* entries applied, of total */
	/* the first error: -errno, on which path of the view, doing what */
	int err;
	char *err_path;
	const char *err_what;
	enum sfs_commit_left left;
	char undo_msg[PATH_MAX + 200];
	/* the workdir holding RW's .stackfs (its journal), or "": RW's own */
	char workdir[PATH_MAX];
};

/* Commits o->rw into o->into: checks (neither in use, formats known,
 * an unfinished commit resumed), the list of changes, the plan, the
 * journal, the changes, then the emptying. Returns r->outcome; free r
 * with sfs_commit_result_free. */
enum sfs_commit_outcome sfs_commit_run(const struct sfs_commit_opts *o,
				       struct sfs_commit_result *r);
void sfs_commit_result_free(struct sfs_commit_result *r);

#endif
