/* The journal of `stackfs commit` (docs/diff-commit.md "diff and commit"
 * and docs/format.md "commit"): what a commit is doing, written before it changes anything,
 * so that a commit killed at any step can be finished or undone by the
 * next `stackfs commit` or by `stackfs fsck --repair` of either branch.
 *
 *  RW/.stackfs/commit        the journal: the lower branch (path and
 *                            identity), the phase, the staging directory
 *                            and every lower directory moved through it
 *  LOWER/.stackfs/commit-from  the marker: which rw branch has a journal
 *                            for this branch (fsck of LOWER alone finds it)
 *
 * Only the commit (holding RW's lock) and fsck --repair write them. Every
 * function returns 0 or -errno; those with err/errlen leave a one-line
 * message there. */
#ifndef SFS_JOURNAL_H
#define SFS_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define SFS_META_COMMIT      "commit"
#define SFS_META_COMMIT_FROM "commit-from"

#define SFS_JNL_STAGE_PREFIX ".wh..wh.sfs-moved."  /* + pid, in LOWER's root */
#define SFS_JNL_TMP_PREFIX   ".wh..wh.sfs-commit." /* + pid.seq, beside targets */

#define SFS_JNL_MAX_MOVES 16384u
#define SFS_JNL_PATH_MAX  4095u

/* The phases. MOVING: LOWER is being changed, RW as it was: recovery
 * puts every moved lower directory back (the union shows what it showed
 * before; what was copied into LOWER is hidden by RW). APPLIED: LOWER is
 * complete and synced: recovery empties RW (unless keep). */
enum sfs_jnl_phase { SFS_JNL_MOVING = 1, SFS_JNL_APPLIED = 2 };

#define SFS_JNL_F_KEEP      0x1u   /* --keep: RW is not emptied */
#define SFS_JNL_F_MADE_META 0x2u   /* the commit made LOWER/.stackfs */
#define SFS_JNL_KNOWN_FLAGS 0x3u

/* A lower directory a redirect moves: staged as the decimal of its index
 * in the staging directory. */
struct sfs_jnl_move {
	uint64_t ino;                  /* its inode (kept by renames) */
	char *src;                     /* its path in LOWER before, "/a/b" */
	char *dst;                     /* its path after (the view's) */
};

struct sfs_journal {
	uint32_t phase, flags, pid;
	uint8_t lower_fs_uuid[16];     /* sfs_fs_uuid of LOWER's root */
	uint64_t lower_ino;            /* LOWER's root inode */
	struct timespec rw_times[2];   /* RW root's atime, mtime before */
	char *lower;                   /* LOWER, absolute */
	char *stage;                   /* the staging directory's name */
	struct sfs_jnl_move *mv;
	size_t nmv;
};

struct sfs_jnl_mark {
	uint8_t rw_uuid[16];           /* RW's branch UUID (header), or zeros */
	uint8_t rw_fs_uuid[16];
	uint64_t rw_ino;               /* RW's root inode */
	char *rw;                      /* RW, absolute */
};

/* The bytes of a journal / marker (malloc'd) and their parsers: 0, or
 * -EUCLEAN with a message (checksum, bounds, a path not absolute or with
 * "." / ".." / empty components, a staging name not ours). */
int sfs_jnl_encode(const struct sfs_journal *j, uint8_t **buf, size_t *len);
int sfs_jnl_parse(const void *buf, size_t len, struct sfs_journal *j,
		  char *err, size_t errlen);
void sfs_jnl_free(struct sfs_journal *j);
int sfs_jmark_encode(const struct sfs_jnl_mark *m, uint8_t **buf, size_t *len);
int sfs_jmark_parse(const void *buf, size_t len, struct sfs_jnl_mark *m,
		    char *err, size_t errlen);
void sfs_jmark_free(struct sfs_jnl_mark *m);

/* Reads RW's journal (-ENOENT: none) / LOWER's marker (-ENOENT: none),
 * given the directory holding the branch's .stackfs (at_fd: its root, or
 * its workdir, metadir.h). */
int sfs_jnl_read(int at_fd, struct sfs_journal *j, char *err, size_t errlen);
int sfs_jmark_read(int at_fd, struct sfs_jnl_mark *m, char *err, size_t errlen);
/* Writes them crash-safe (tmp, fsync, rename, fsync). The marker makes
 * LOWER's .stackfs (0700) when there is none: *made says so. */
int sfs_jnl_write(int at_fd, const struct sfs_journal *j);
int sfs_jmark_write(int at_fd, const struct sfs_jnl_mark *m, bool *made);

/* Whether one changed byte makes the damaged journal (mark false) or
 * marker of the branch whole (whiteout/mend.c): 1 (*at, *was: where,
 * what it held; with apply, the file is so mended, crash-safe), 0 when
 * no single byte does (or the record is too long to try), or -errno
 * (reading it, or writing the mended file). */
int sfs_jnl_mend(int at_fd, bool mark, bool apply, size_t *at, uint8_t *was);

/* Whether a branch has an unfinished commit (a journal or a marker):
 * -EINPROGRESS with a one-line message saying what to run, else 0. */
int sfs_jnl_pending(int at_fd, char *err, size_t errlen);

/* Whether fd (a branch root) is the branch the identity names. */
bool sfs_jnl_same_branch(int fd, const uint8_t fs_uuid[16], uint64_t ino);

/* A branch as recovery reaches it: its root (the tree), and the
 * directory holding its .stackfs (the journal or the marker, work/ and
 * index/): the root, or its workdir (metadir.h, whiteout/metaloc.c). */
struct sfs_jnl_branch {
	int root_fd;
	int at_fd;
};

/* Recovery, shared by commit and fsck --repair. The caller holds RW's
 * lock. In phase MOVING every moved directory goes back where it was
 * (*done "rolled back"); in APPLIED RW is emptied unless keep (*done
 * "completed"); then the marker and the journal go. LOWER must be the
 * journal's (checked). */
int sfs_jnl_recover(const struct sfs_jnl_branch *rw, const struct sfs_jnl_branch *lower,
		    const struct sfs_journal *j, const char **done, char *err,
		    size_t errlen);
/* The end of a commit: the journal, then the marker, removed and synced
 * (the times of the directory holding LOWER's .stackfs kept when the
 * .stackfs made for the marker goes). rw NULL: the marker only. */
int sfs_jnl_finish(const struct sfs_jnl_branch *rw, const struct sfs_jnl_branch *lower,
		   const struct sfs_journal *j);
/* Empties a rw branch after a commit: everything but .stackfs, and the
 * work/ and index/ of its .stackfs (in its root or its workdir); the
 * root loses its opaque and redirect marks and gets the times given.
 * Never leaves the branch's filesystem. */
int sfs_jnl_empty_rw(const struct sfs_jnl_branch *rw, const struct timespec times[2],
		     char *err, size_t errlen);
/* Opens a directory at an absolute path beneath root one component at a
 * time, following no symlink: an O_PATH fd or -errno. */
int sfs_jnl_open_path(int root_fd, const char *path);
/* syncfs of the filesystem of a branch root (any fd of the root). */
int sfs_jnl_syncfs(int root_fd);

#endif
