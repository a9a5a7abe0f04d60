/* dirahead.c: the subdirectories of a directory READDIRPLUS lists, read
 * ahead on an idle CPU (their entries stat'ed), bounded. */
#ifndef SFS_DIRAHEAD_H
#define SFS_DIRAHEAD_H

#include "stackfs/stackfs.h"

/* l: the listing just read of the directory whose stack is st. */
void sfs_dirahead_listed(struct sfs_stack *st, const struct sfs_dirlist *l);
/* At unmount: the thread ends, what was queued is dropped. */
void sfs_dirahead_stop(void);

#endif
