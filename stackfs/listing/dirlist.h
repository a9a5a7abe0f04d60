/* The merged listing of a directory stack (dirlist.c): what readdir
 * serves, and what rename, rmdir and branch changes read to see a
 * directory's visible names. */
#ifndef SFS_DIRLIST_H
#define SFS_DIRLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct sfs_stack;

struct sfs_dirent {
	const char *name;         /* in the listing's name chunks */
	ino_t ino;                /* inode number shown (0: unknown) */
	off_t cookie;             /* the directory offset after this entry */
	unsigned char type;       /* DT_* */
};

struct sfs_dirchunk;          /* chunks holding the names */

struct sfs_dirlist {
	struct sfs_dirent *e;
	size_t n, cap;
	struct sfs_dirchunk *names;
};

/* A name's cookie: 63-bit FNV-1a, above the 1 and 2 of "." and "..". */
off_t sfs_dirlist_cookie(const char *name);
/* Appends an entry (its cookie computed). 0 or -ENOMEM. */
int sfs_dirlist_add(struct sfs_dirlist *l, const char *name, ino_t ino, unsigned char type);
/* Sorts entries from..n by cookie. */
void sfs_dirlist_sort(struct sfs_dirlist *l, size_t from);
/* Reads every layer of a directory stack into one listing: each visible
 * name once, whiteouts and reserved names left out; `.`/`..` not included. */
int sfs_dirlist_read(const struct sfs_stack *st, bool is_root,
		     struct sfs_dirlist *out);
/* The same, filling on the way the name index ix (when not NULL) with
 * the names of the layers i with take[i] (dirnames.c); *ix_ret: the
 * listing's failure, else the index's (-E2BIG: too many names). */
struct sfs_unames;
int sfs_dirlist_read_ix(const struct sfs_stack *st, bool is_root, struct sfs_dirlist *out,
			struct sfs_unames *ix, const bool *take, int *ix_ret);
void sfs_dirlist_free(struct sfs_dirlist *l);

#endif
