/* Copying a file's data (datacopy.c): shared by the daemon's copy-up and
 * the command's commit. */
#ifndef SFS_DATACOPY_H
#define SFS_DATACOPY_H

#include <sys/types.h>

/* Copies size bytes of in to out (both open; out empty): a reflink, else
 * the data extents, then the size, then the unwritten extents. 0/-errno. */
int sfs_copy_data(int in, int out, off_t size);

#endif
