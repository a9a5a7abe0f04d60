/* Staging a copy: building it in the branch's staging directory
 * (.stackfs/work) from its lower entry, then putting it at its name in one
 * step (copy_stage.c). What copy_up.c, which decides when and where a node
 * is copied, uses of it. */
#ifndef SFS_COPY_STAGE_H
#define SFS_COPY_STAGE_H

#include "stackfs/stackfs.h"

/* A copy being staged: an O_PATH fd of it, which every step uses, so
 * that none looks a name up again; and its name in work/, where it has
 * one (a regular file is made nameless, O_TMPFILE, where the branch can:
 * then no name exists that anyone could swap before it is placed). */
struct staged {
	char tmp[64];                 /* "" when it has none in work/ */
	int fd;                       /* -1 when none */
	bool fresh;                   /* made by this copy-up (not the index's) */
};

/* What a regular file's copy gets of its data: all of it, none (an
 * O_TRUNC open), or none but its size (a metadata-only copy, a metacopy:
 * its data is read from below until its first write). */
enum cu_data { CU_FULL, CU_EMPTY, CU_META };

/* Stages a copy of the entry (st's top layer; sl: the layer of its
 * directory) as work/tmp, with its origin; one with several names goes
 * into the index too. Nothing is left on failure. */
int sfs_cu_stage_copy(const struct sfs_stack *st, const struct sfs_layer *sl,
		      const struct stat *src, int workfd, const char *name,
		      enum cu_data how, struct staged *s);
/* Removes what is staged: its name in work/, its fd. */
void sfs_cu_unstage(int workfd, struct staged *s, mode_t mode);
/* Puts the staged entry at parentfd/name (never over another): 0 or
 * -errno (-EEXIST: the name is taken). */
int sfs_cu_place(int workfd, struct staged *s, bool dir, int parentfd, const char *name);
/* Places an existing copy at dirfd/name: a hard link, no data copied. */
int sfs_cu_link_copy(int copyfd, int dirfd, const char *name);
/* A placed copy and its directory made durable as the sync mode says. */
int sfs_cu_sync_placed(int fd, mode_t mode, int dirfd);

#endif
