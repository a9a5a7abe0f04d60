/* What a rw branch changes relative to the branches below it, listed
 * like `docker diff`: A added, C changed, D deleted (changes.c), on the
 * model of the union (model.h). See docs/diff-commit.md "diff and commit". */
#ifndef SFS_UNION_CHANGES_H
#define SFS_UNION_CHANGES_H

#include "union/model.h"

/* 1 when a directory's own attributes differ between the two entries
 * (type, mode, owner, xattrs other than the union's private ones; not
 * times), 0 when equal, or -errno. */
int sfs_ch_dir_meta_differs(int fd_a, int fd_b);

/* ---------------------------------------------------------------- diff */

enum sfs_change_kind { SFS_CH_ADDED = 'A', SFS_CH_CHANGED = 'C', SFS_CH_DELETED = 'D' };

struct sfs_ch_change {
	char *path;                    /* in the view, "/" for the root */
	char kind;                     /* enum sfs_change_kind */
	char *from;                    /* a moved directory: its old path, else NULL */
	unsigned char type;            /* DT_* of the entry (of the lower one for D) */
};

struct sfs_changes {
	struct sfs_ch_change *v;
	size_t n, cap;
	uint64_t visited;              /* entries looked at */
	unsigned added, changed, deleted;
};

struct sfs_changes_opts {
	/* called for each entry looked at, and once per problem met (an
	 * entry that could not be read: the walk goes on, the result is
	 * then -EIO after everything else was listed). Both may be NULL. */
	void (*progress)(void *arg, uint64_t visited, const char *path);
	void (*problem)(void *arg, const char *path, int err);
	void *arg;
};

/* Lists what b[0] changes relative to b[1..n), sorted by path (bytes).
 * See docs/diff-commit.md "diff and commit" for what counts as a change. */
int sfs_changes_list(struct sfs_ch_union *u, const struct sfs_changes_opts *o,
		     struct sfs_changes *out);
void sfs_changes_free(struct sfs_changes *c);


#endif
