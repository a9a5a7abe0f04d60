/* The commit engine's own header (commit.h is its interface): the state
 * of one commit and what its files share, grouped by the file that
 * defines it. Nothing here is for the command. */
#ifndef SFS_UNION_COMMIT_INT_H
#define SFS_UNION_COMMIT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "union/commit.h"
#include "union/changes.h"
#include "whiteout/journal.h"
#include "whiteout/metadir.h"
#include "whiteout/ondisk.h"
#include "whiteout/whiteout.h"

#define TMP_PREFIX SFS_JNL_TMP_PREFIX     /* hidden by the union if left */
#define STAGE_PREFIX SFS_JNL_STAGE_PREFIX

/* A directory of the rw branch with a redirect: the lower directory it
 * shows moves to its path. */
struct moved {
	char *vpath;                   /* where the view shows it */
	char *src;                     /* the lower branch's directory, or NULL */
	char staged[48];               /* its name in the staging dir, "" if not moved */
	struct sfs_ch_stack *deep;     /* its layers below the lower branch */
};

/* A file of the rw branch with several names: where its first name was
 * placed in the lower branch, to link the others to. */
struct link {
	dev_t dev;
	ino_t ino;
	char *path;                    /* in the lower branch, NULL: empty slot */
};

/* A name of the view that shows a copy in the rw branch's index (a
 * lower file with several names, written through another name). */
struct indexed {
	char *vpath;
	char name[32];                 /* of the index entry */
	ino_t lower_ino;               /* the lower inode it stands for */
};

struct commit {
	const struct sfs_commit_opts *o;
	struct sfs_commit_result *r;
	const char *rw, *into;         /* as given */
	bool keep, deep;
	struct stat rs, ls;            /* the rw and the lower branch's roots */
	/* the rw [0] and the lower [1] branch as the journal and its recovery
	 * reach them: their roots and the directories holding their .stackfs
	 * (the root, or a workdir: whiteout/metaloc.c, found in loc) */
	struct sfs_jnl_branch br[2];
	struct sfs_metaloc loc[2];
	int lock_rw, lock_lo;          /* their locks, held throughout, or -1 */
	struct sfs_ch_union u;         /* b[0] rw, b[1] into, b[2..] below it */
	enum sfs_whiteout_style style; /* of marks written into the lower branch */
	int stage_fd;                  /* staging dir in the lower branch, or -1 */
	char stage_name[64];
	struct moved *mv;
	size_t nmv;
	struct link *links;
	size_t nlinks, caplinks;
	struct indexed *ix;            /* sorted by vpath */
	size_t nix;
	unsigned seq;
	struct sfs_journal jnl;        /* what RW/.stackfs/commit says */
	bool jnl_written;
	uint64_t done, total;          /* entries, for the progress */
	/* the first error */
	int err;
	char *err_path;
	const char *err_what;
};

/* One directory of the view being committed. */
struct dctx {
	struct dctx *parent;
	const char *vpath;             /* "" for the root */
	const char *name;              /* in the parent */
	struct sfs_ch_stack *V;        /* what the view merges there */
	int T;                         /* the lower branch's directory, or -1 */
	bool made;                     /* T made here for an index link */
	bool touched;                  /* T changed (its times to put back) */
	struct timespec t_times[2];    /* T's times before */
};

/* One raw entry of a rw directory: what it is. */
enum raw_kind { RAW_ENTRY, RAW_WH_AUFS, RAW_WH_OVERLAY, RAW_SKIP };

struct raw {
	char *name;                    /* the name it is about */
	enum raw_kind kind;
};

/* ---- commit.c: the driver ------------------------------------------- */

/* Records the first error: what failed, on which path (of the view), and
 * returns it. */
int sfs_commit_fail(struct commit *c, int err, const char *path, const char *what);
/* -EINTR once a stop was asked for: checked before each step. */
int sfs_commit_stopped(struct commit *c, const char *path);
/* One entry more done (vpath: of the view), then sfs_commit_stopped. */
int sfs_commit_step(struct commit *c, const char *vpath);
/* The view path of name in the view's directory dir ("" the root), or
 * NULL (-ENOMEM recorded). */
char *sfs_commit_path(struct commit *c, const char *dir, const char *name);
/* Refuses the commit before anything changed: the message in r->msg.
 * Returns -1. */
int sfs_commit_refuse(struct commit *c, enum sfs_commit_outcome how, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A branch's header (its .stackfs beneath at_fd): 0, or -1 when it has
 * none that is valid. */
int sfs_commit_header(int at_fd, struct sfs_header *h);

/* ---- commit_check.c: what refuses a commit -------------------------- */

/* The branches usable (directories, not nested, formats known), neither
 * in use (both locked: c->lock_*), an unfinished commit of them resumed,
 * no staging directory without a journal. 0, or -1 refused. */
int sfs_commit_check(struct commit *c);
/* The branches below the lower one in the rw branch's last mount
 * (malloc'd, maybe none), which must show the same through it after. 0,
 * or -1 refused. */
int sfs_commit_below(struct commit *c, char ***below, size_t *nbelow);

/* ---- commit_plan.c: what is found before anything changes ----------- */

/* The moved directories, the names shown through the index, the count
 * of entries. 0 or -errno (c->err says where). */
int sfs_commit_plan(struct commit *c, const struct sfs_ch_stack *V);
/* The entries and whiteouts of a directory of the rw branch, sorted by
 * name, a name's whiteouts before its entry. */
int sfs_commit_raw_list(int dir_fd, bool root, struct raw **out, size_t *n);
void sfs_commit_raws_free(struct raw *v, size_t n);
bool sfs_commit_raw_has_entry(const struct raw *v, size_t n, const char *name);
/* The index copy shown at vpath, or NULL; whether one is below vpath. */
const struct indexed *sfs_commit_ix_find(const struct commit *c, const char *vpath);
bool sfs_commit_ix_under(const struct commit *c, const char *vpath);
/* The planned move of the directory at vpath, or NULL. */
struct moved *sfs_commit_moved_find(struct commit *c, const char *vpath);

/* ---- commit_journal.c: the journal, the staging, the end ------------ */

/* Writes the journal, then moves the lower directories that redirects
 * move into the staging directory. 0 or -errno. */
int sfs_commit_stage(struct commit *c);
/* After an error or a stop: the journal's recovery undoes. 0 or -errno
 * with a message. */
int sfs_commit_undo(struct commit *c, char *msg, size_t len);
/* Once the lower branch is complete and synced: phase APPLIED, the rw
 * branch emptied (unless keep), the journal and the marker removed. */
int sfs_commit_finish(struct commit *c, bool *emptied);

/* ---- commit_apply.c: the tree, top-down ----------------------------- */

/* Applies the rw branch (view root V) to the lower branch, then removes
 * the staging directory and syncs. 0 or -errno (c->err says where). */
int sfs_commit_apply_root(struct commit *c, struct sfs_ch_stack *V);
/* d's directory exists in the lower branch (made for an index name). */
int sfs_commit_ensure_dir(struct commit *c, struct dctx *d);
/* Remembers d's lower directory's times before its first change. */
void sfs_commit_touch_dir(struct dctx *d);

/* ---- commit_place.c: a non-directory placed in the lower branch ----- */

int sfs_commit_place_file(struct commit *c, struct dctx *d, const char *name,
			  const char *vpath, int sdir, const char *sname, bool indexed);

/* ---- commit_attr.c: a placed entry's attributes --------------------- */

/* The owner, xattrs, ACLs and mode of sdir/sname (stat st) given to
 * ddir/dname, on fds; its times; its inode flags. */
int sfs_commit_copy_meta(int sdir, const char *sname, const struct stat *st, int ddir,
			 const char *dname);
int sfs_commit_copy_times(const struct stat *st, int ddir, const char *dname);
/* Both: the attributes, then the times (that no later step changes). */
int sfs_commit_copy_attrs(int sdir, const char *sname, const struct stat *st, int ddir,
			  const char *dname);
int sfs_commit_copy_flags(int sdir, const char *sname, int ddir, const char *dname);
/* Removes the attributes of dfd that sfd lacks (not the private ones). */
int sfs_commit_drop_xattrs(int sfd, int dfd);

/* ---- commit_lower.c: small steps on the lower branch's tree --------- */

/* A temporary name for an entry being built beside its target. */
void sfs_commit_tmp_name(struct commit *c, char buf[64]);
/* dir/name opened to read its data. */
int sfs_commit_open_source(int dir, const char *name);
/* Removes dirfd/name and everything under it, never leaving the mount
 * mnt (-EXDEV) nor following a symlink. */
int sfs_commit_remove_tree(int dirfd, const char *name, uint64_t mnt);
/* The parent directory of a path of the lower branch ("/a/b": /a, an
 * O_PATH fd, or -errno) and its last component, in path. */
int sfs_commit_open_parent(struct commit *c, const char *path, const char **base);
/* Puts the staged entry ddir/tmp at ddir/name. */
int sfs_commit_put_in_place(struct commit *c, int ddir, const char *tmp, const char *name);

#endif
