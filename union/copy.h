/* Making a copy of a file in a branch, shared by the daemon's copy-up and
 * the command's commit: its data (datacopy.c), its inode flags
 * (flags.c). Its owner, xattrs, ACLs, mode and times: xattr/copy.c. */
#ifndef SFS_UNION_COPY_H
#define SFS_UNION_COPY_H

#include <stdbool.h>
#include <sys/types.h>

/* Copies size bytes of in to out (both open; out empty): a reflink, else
 * the data extents, then the size, then the unwritten extents. 0/-errno. */
int sfs_copy_data(int in, int out, off_t size);
/* The file fd (O_PATH) opened to be copied from: O_NOATIME, so reading a
 * lower file does not change it, else (not its owner, without
 * CAP_FOWNER) plainly. An fd, or -errno. */
int sfs_open_source(int fd);
/* Gives the file or directory dst the inode flags (chattr) of src that
 * mean something for a copy (immutable and append-only included:
 * dropping them would widen access), keeping dst's own others. Any fds
 * of the two (O_PATH too). 0 or -errno. */
int sfs_copy_flags(int src, int dst);
/* Brings the data of a metacopy file fd (O_PATH), found in the regular
 * file data_fd (O_PATH), into fd itself and ends the metacopy; durable:
 * fsynced before the mark goes (metacopy_fill.c). 0 or -errno. */
int sfs_metacopy_fill(int fd, int data_fd, bool durable);

#endif
