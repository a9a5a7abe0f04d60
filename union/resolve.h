/* How a name resolves through the branches of a union: the rules the
 * daemon's lookup, diff, commit and fsck share (resolve.c). In branch
 * order from the highest:
 *  - a whiteout of the name (either format) ends the search: nothing;
 *  - the first entry found wins; a non-directory stands alone;
 *  - a directory merges with the directories of the same name below it,
 *    until one is opaque or a non-directory is met (which stays hidden);
 *  - a directory with a redirect finds its lower layers elsewhere: an
 *    absolute path is looked up from the roots of the branches below the
 *    one that recorded it (with their own rules), a bare name in the
 *    layers of the parent below it (a redirect met there is not followed,
 *    as kernel overlayfs does it);
 *  - a kernel overlayfs metacopy file (whiteout/metacopy.h) shows its own
 *    metadata and the data of the regular file its name, or its redirect,
 *    resolves to in the layers below (followed again when that is a
 *    metacopy too), or for an absolute redirect, failing that, in the
 *    first data-only branch that holds a regular file there; with none
 *    there it has no data.
 * Whiteouts are looked for only where there are layers below to hide.
 * What is cached, and how identity and the hard-link index are decided,
 * stays with the callers. */
#ifndef SFS_UNION_RESOLVE_H
#define SFS_UNION_RESOLVE_H

#include <stdbool.h>
#include <sys/stat.h>

/* One layer of a directory: an O_PATH fd of it in branch b (0 the
 * highest); path: where it is in its branch ("" for the root, "/a/b"),
 * or NULL when the caller keeps no paths. */
struct sfs_ulayer {
	int fd;
	unsigned b;
	char *path;
	unsigned char xwh;             /* SFS_XWH_*, for a directory's layer */
	/* Where an answer asked later is kept (the caller's copy of a
	 * read-only layer, shared by threads: written once, atomically, with
	 * what every asker would find), or NULL. */
	unsigned char *keep_xwh;
};

/* What a layer directory's marks said of xattr whiteouts in it, read
 * with its opaque mark at its lookup (sfs_dirmark_read), so that its
 * listing and the lookups of its empty files need not ask again (issue
 * 20: each layer of a merged directory was asked at each). */
#define SFS_XWH_UNKNOWN 0u            /* not read: ask the directory */
#define SFS_XWH_NONE 1u
#define SFS_XWH_SOME 2u
/* Whether layer directory dirfd holds xattr whiteouts, xwh saying what
 * its marks said; SFS_XWH_UNKNOWN: what keep (if not NULL) holds, else
 * asks the directory and keeps a sure answer there. A directory of the
 * lowest branch has no marks read at its lookup (nothing below it to
 * stop or redirect), so without a kept answer each empty file looked up
 * in it asked again: a round trip each where the branch is on a network
 * filesystem (issue 33: 818 of them for a listing of 2,000 names). */
bool sfs_u_dir_xwhiteouts(int dirfd, unsigned xwh, unsigned char *keep);

/* The union the rules run in. */
struct sfs_uview {
	unsigned n;                    /* its branches */
	/* With split > 0, a resolution also says where the union of the
	 * branches from split down is looked up for the entry (lower_path):
	 * commit folds branch 0 into the ones below and keeps that reachable. */
	unsigned split;
	/* Branches data_from..n are data-only (n when none): nothing of them
	 * shows; a metacopy's absolute redirect is looked up in them, each
	 * alone, after the branches above them found no data. */
	unsigned data_from;
	/* The roots of the branches below b into out (fds the rules close,
	 * paths ""), for an absolute redirect: how many, or -errno. */
	int (*roots_below)(void *arg, unsigned b, struct sfs_ulayer *out, unsigned max);
	/* Called for every entry found in layer dir (its fd and stat)
	 * before it counts: 0, or -errno to refuse it (a mount point inside a
	 * branch: -EXDEV). Also told, with fd -1, of a name that could not be
	 * opened, with err (EXDEV at a mount point, to log). May be NULL. */
	int (*met)(void *arg, const struct sfs_ulayer *dir, int fd, const struct stat *st,
		   const char *name, int err);
	void *arg;
	/* The name index of the directory whose layers a call of
	 * sfs_u_resolve or sfs_u_shown_below is given (names.h), or NULL:
	 * layers it says list neither the name nor its whiteout are not
	 * looked at. Not used for the other directories the rules look
	 * into (an absolute redirect's). */
	const struct sfs_unames *names;
};

/* What a name resolves to. */
struct sfs_uentry {
	unsigned n;
	/* highest first; owned. As many as the branches where the name is a
	 * directory: no limit (a fixed 64 hid the entries of the layers
	 * past it from merged listings). */
	struct sfs_ulayer *l;
	unsigned cap;                  /* of l */
	struct stat top;               /* the first layer's */
	bool opaque;                   /* the top directory hides the branches below */
	bool has_origin;               /* the top directory carries an origin record */
	char *redirect;                /* the top directory's redirect as recorded */
	bool redirected;               /* its lower layers came from that redirect */
	char *lower_path;              /* see sfs_uview.split; NULL without */
	bool metacopy;                 /* the top is a metacopy file ... */
	struct sfs_ulayer data;        /* ... whose data is this regular file
					* (owned), fd -1 when none was found */
	struct stat data_via;          /* ... found through this entry below (the
					* one its name or redirect resolved to:
					* the data itself, or a metacopy whose
					* data it is); st_ino 0 when none */
};

/* Resolves name in the directory whose layers are dir[0..ndir) (highest
 * first; dir_lower_path: that directory's, with split). 0 with *out
 * (out->n may be 0: nothing shows), or -errno. */
int sfs_u_resolve(const struct sfs_uview *v, const struct sfs_ulayer *dir, unsigned ndir,
		  const char *dir_lower_path, const char *name, struct sfs_uentry *out);
/* Whether the layers of dir below branch b show name (a removal in b must
 * leave a whiteout): 1, 0, or -errno. */
int sfs_u_shown_below(const struct sfs_uview *v, const struct sfs_ulayer *dir,
		      unsigned ndir, unsigned b, const char *name);
/* Closes and frees what *e holds; e->n becomes 0 (e is zeroed: a
 * struct sfs_uentry is zeroed before its first use, and is moved by
 * assignment, which takes over l). */
void sfs_uentry_drop(struct sfs_uentry *e);

/* Names the union never shows: whiteout and marker names of both
 * formats, and (at_root) the metadata directory. */
bool sfs_u_reserved(const char *name, bool at_root);

/* ---- listing.c: what a name read from a layer directory is ----------- */

enum sfs_u_kind {
	SFS_U_SKIP,                    /* never shown: ".", "..", the metadata
					* dir at the root, aufs bookkeeping
					* (.wh..wh.*), a name gone meanwhile */
	SFS_U_WHITEOUT,                /* hides *hides in the layers below */
	SFS_U_ENTRY,                   /* an entry (a mount point too: listed,
					* its lookup refused) */
};
/* How the layer directory being read is: */
#define SFS_U_AT_ROOT 1u              /* a branch root (its metadata dir hidden) */
#define SFS_U_XWHITEOUTS 2u           /* marked to hold xattr whiteouts
				       * (sfs_wh_dir_has_xwhiteouts) */
/* What name, read from the directory dirfd of a layer with d_type type,
 * is to a merged listing; *hides is set for a whiteout (a pointer into
 * name). -errno when it cannot be told. */
int sfs_u_dirent(int dirfd, const char *name, unsigned char type, unsigned dirflags,
		 const char **hides);

#endif
