/* The union of plain branch directories, without a mount (model.c): the
 * model diff and commit work on, with the union's rules (resolve.h, the
 * daemon's too).
 *
 * The model: branches b[0..n), highest first; b[0] is the rw branch whose
 * changes are wanted, b[1..n) the branches below it. A *stack* is what a
 * lookup finds for one path: the real entries behind it, highest branch
 * first (one for a non-directory, one per merged branch for a directory),
 * each an O_PATH fd with its path inside its branch. The view is the union
 * of b[0..n) (first = 0), the lower union that of b[1..n) (first = 1).
 *
 * Every function returns 0 or -errno. Names are single components; no
 * symlink is ever followed. See docs/diff-commit.md "diff and commit". */
#ifndef SFS_UNION_MODEL_H
#define SFS_UNION_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct sfs_ch_branch {
	char *path;                    /* as given */
	int root_fd;                   /* O_PATH|O_DIRECTORY */
	dev_t dev;                     /* of the root */
	ino_t ino;
	uint64_t mnt_id;               /* of the mount it is on (statx) */
	uint8_t fs_uuid[16];           /* of its filesystem (sfs_fs_uuid) */
};

/* An entry of b[0]'s hard-link index (.stackfs/index/): the copy of a
 * lower file with several names, which every name of that lower file
 * shows (stackfs/nodes/index.c). Keyed by its origin record. */
struct sfs_ch_index {
	uint8_t fs_uuid[16];           /* the lower file's filesystem */
	uint64_t dev;                  /* or its st_dev (version 1 origin) */
	uint64_t ino;                  /* the lower file's inode number */
	char name[32];                 /* of the index entry */
};

struct sfs_ch_union {
	struct sfs_ch_branch *b;
	unsigned n;
	/* With split > 0, stacks record in dpath where the union of
	 * b[split..n) is looked up to find their layers there (commit keeps
	 * those layers reachable when it folds b[0] into b[1]). */
	unsigned split;
	int index_fd;                  /* b[0]'s .stackfs/index (in its root or
					* its workdir), or -1 */
	struct sfs_ch_index *idx;      /* its entries with an origin record */
	size_t nidx;
	/* Set by a walk that changes no branch (diff): lookups use the
	 * name indexes of their directories (model_names.c). */
	bool use_names;
	struct sfs_ch_names *names;
};

struct sfs_ch_layer {
	unsigned b;                    /* branch index */
	int fd;                        /* O_PATH of the entry */
	char *path;                    /* in the branch: "" for its root, else "/a/b" */
};

struct sfs_ch_stack {
	struct stat top;               /* what the union shows (top layer, or the index copy) */
	bool opaque;                   /* the top directory hides the branches below */
	bool redirected;               /* the top directory's lower layers came from its redirect */
	char *redirect;                /* that redirect as recorded, or NULL */
	bool indexed;                  /* a lower file shown as b[0]'s index copy */
	int index_fd;                  /* then the O_PATH fd of that copy, else -1 */
	char index_name[32];
	char *dpath;                   /* see sfs_ch_union.split; NULL without */
	bool metacopy;                 /* a kernel metacopy file (whiteout/metacopy.h) ... */
	int data_fd;                   /* ... whose data is this O_PATH fd, -1: none found */
	uint64_t serial;               /* tells stacks apart (model_names.c) */
	unsigned n;                    /* layers */
	struct sfs_ch_layer l[];
};

/* Opens the branches (paths[0] the rw one), reads b[0]'s index when
 * b[0] has branches below it, from its metadata dir: in the workdir
 * given (an overlay-style mount's), else where its root records it, else
 * in its root (whiteout/metaloc.c). On failure a message naming the
 * branch. */
int sfs_ch_union_open(struct sfs_ch_union *u, const char *const *paths, unsigned n,
		      const char *workdir, char *err, size_t errlen);
void sfs_ch_union_close(struct sfs_ch_union *u);

/* model_names.c: the name index of dst's layers with use_names (kept
 * for the last directories of a walk), else NULL; and what is kept,
 * dropped (sfs_ch_union_close does). */
struct sfs_unames;
const struct sfs_unames *sfs_ch_names_of(struct sfs_ch_union *u, const struct sfs_ch_stack *dst);
void sfs_ch_names_drop(struct sfs_ch_union *u);

/* The root of the union of b[first..n): every root down to the first
 * opaque one. */
int sfs_ch_root(struct sfs_ch_union *u, unsigned first, struct sfs_ch_stack **out);
/* Looks NAME up in directory stack dir as the daemon does: whiteouts,
 * opaque directories, redirects; with use_index, a lower file with
 * several names that b[0]'s index holds a copy of is shown as that copy.
 * -ENOENT when the union shows no such name (reserved names included),
 * -EXDEV for a mount point inside a branch (the daemon refuses those). */
int sfs_ch_lookup(struct sfs_ch_union *u, const struct sfs_ch_stack *dir,
		  const char *name, bool use_index, struct sfs_ch_stack **out);
/* The names the layers of dir hold, merged, sorted (strcmp), without
 * reserved names and whiteouts: the candidates a listing of the union
 * shows (each still to be looked up: a lower name may be hidden). */
int sfs_ch_names(const struct sfs_ch_union *u, const struct sfs_ch_stack *dir,
		 char ***names, size_t *n);
void sfs_ch_names_free(char **names, size_t n);
/* A stack of the given layers (fds duplicated), top taken from the
 * first; n may be 0 (an empty stack, top zeroed). */
int sfs_ch_stack_make(const struct sfs_ch_layer *l, unsigned n, const char *dpath,
		      struct sfs_ch_stack **out);
/* The layers of st in branches >= from, as a new stack (maybe empty). */
int sfs_ch_stack_from(const struct sfs_ch_stack *st, unsigned from,
		      struct sfs_ch_stack **out);
/* The first layer of st in branch b, or NULL. */
const struct sfs_ch_layer *sfs_ch_stack_in(const struct sfs_ch_stack *st, unsigned b);
/* Whether two stacks have the same layers in branches >= from (same
 * branches, same inodes). */
bool sfs_ch_same_layers(const struct sfs_ch_stack *a, const struct sfs_ch_stack *b,
			unsigned from);
void sfs_ch_stack_free(struct sfs_ch_stack *st);


/* The branches listed below the branch root_fd in its metadata dir's
 * `lowers` (the branch list of its last mount; the metadata dir beneath
 * at_fd, its root or its workdir), highest first, found by comparing
 * st_dev/st_ino of each listed path with the root: 0 with a malloc'd
 * array of paths (*n may be 0; free with sfs_ch_names_free), -ENOENT
 * when there is no `lowers`, -ESRCH when the branch is not in it, or
 * another -errno, each with a message. */
int sfs_ch_lowers_below(int root_fd, int at_fd, char ***paths, size_t *n, char *err,
			size_t errlen);

/* Joins a view path and a name: "/" + name under the root. malloc'd. */
char *sfs_ch_join(const char *dir, const char *name);

#endif
