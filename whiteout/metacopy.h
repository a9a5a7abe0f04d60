/* Kernel overlayfs metacopy files (mounted with metacopy=on, Fedora's
 * container storage default): a regular file of an upper layer that holds
 * only metadata — owner, mode, times, xattrs and the size — after a chmod
 * or chown; its data is a regular file of the layers below: at the same
 * path, or at the path its redirect names (an absolute path from the
 * layer roots, or a name in its parent's lower layers).
 *
 * Marked by the xattr trusted.overlay.metacopy (empty, or a format
 * version and an fs-verity digest, which are not checked here). Only the
 * trusted. namespace is read: the kernel refuses metacopy with userxattr,
 * so a user.overlay.metacopy was not written by it, and the user who
 * wrote one could point its data at a file of the branches below that he
 * may not read (it would show with his file's owner and mode). */
#ifndef SFS_METACOPY_H
#define SFS_METACOPY_H

#include <stdbool.h>
#include <time.h>

#include "whiteout/whiteout.h"

#define SFS_OVL_METACOPY_XATTR "trusted.overlay.metacopy"
/* stackfs's own mark, written with -o whiteout=wh
 * (docs/union.md "Metadata-only copy-up"); read like the kernel's, trusted.* only. */
#define SFS_SFS_METACOPY_XATTR "trusted.stackfs.metacopy"

struct sfs_metacopy {
	bool is;                  /* a metacopy file */
	char *redirect;           /* where its data is, malloc'd, or NULL */
};

/* Reads the marks of regular file fd (an O_PATH fd): 0 with *m (is false
 * for a file that is no metacopy, or on a filesystem without xattrs),
 * -EUCLEAN for a redirect that is no path (sfs_redirect_ok), or -errno. */
int sfs_metacopy_read(int fd, struct sfs_metacopy *m);
/* Whether entry name of directory dirfd may be a metacopy, asked by
 * name (one listxattrat, no open: for an entry a statx just found to be
 * a regular file and no mount point): 1 when it carries a mark or the
 * list is too long to tell, 0 when it carries none, or -errno. */
int sfs_metacopy_marked_at(int dirfd, const char *name);
void sfs_metacopy_free(struct sfs_metacopy *m);
/* Marks fd (an O_PATH fd of a sparse copy of a lower file) a metacopy
 * in the mount's style: the kernel's mark for overlay, stackfs's for
 * wh. Empty value (the kernel's, without an fs-verity digest). 0 or
 * -errno. */
int sfs_metacopy_mark(int fd, enum sfs_whiteout_style style);
/* Ends a metacopy once its data is in the file itself: removes the mark
 * (either style's) and the redirect from fd (an O_PATH fd). 0 or -errno. */
int sfs_metacopy_clear(int fd);

/* The times of a metacopy file while its data is brought in
 * (union/metacopy_fill.c): the data written in place sets the mtime, and
 * the times to put back are the file's own, so they are kept here first.
 * A fill killed midway leaves them for the next fill, and a change of
 * the file's times meanwhile updates them (sfs_metacopy_times_follow).
 * trusted.* only (private: never shown in the view, never copied).
 * Value: 25 bytes, version 1, then atime and mtime as little-endian
 * signed seconds (8 bytes) and nanoseconds (4 bytes). */
#define SFS_MCTIMES_XATTR "trusted.stackfs.mctimes"
int sfs_metacopy_times_save(int fd, const struct timespec t[2]);
/* 0 with t, -ENODATA when fd keeps none, -EUCLEAN for a damaged record
 * (wrong size, version or nanoseconds), or -errno. */
int sfs_metacopy_times_load(int fd, struct timespec t[2]);
/* Removes them (none kept is no error). */
int sfs_metacopy_times_drop(int fd);
/* After the times of fd changed: the kept times, if any, become fd's. */
int sfs_metacopy_times_follow(int fd);
/* Puts the kept times back on fd (an O_PATH fd) and drops them. */
int sfs_metacopy_times_restore(int fd);

#endif
