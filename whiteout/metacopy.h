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

#include "whiteout/whiteout.h"

#define SFS_OVL_METACOPY_XATTR "trusted.overlay.metacopy"
/* stackfs's own mark, written with -o whiteout=wh (NOTES.md
 * "Metadata-only copy-up"); read like the kernel's, trusted.* only. */
#define SFS_SFS_METACOPY_XATTR "trusted.stackfs.metacopy"

struct sfs_metacopy {
	bool is;                  /* a metacopy file */
	char *redirect;           /* where its data is, malloc'd, or NULL */
};

/* Reads the marks of regular file fd (an O_PATH fd): 0 with *m (is false
 * for a file that is no metacopy, or on a filesystem without xattrs), or
 * -errno. */
int sfs_metacopy_read(int fd, struct sfs_metacopy *m);
void sfs_metacopy_free(struct sfs_metacopy *m);
/* Marks fd (an O_PATH fd of a sparse copy of a lower file) a metacopy
 * in the mount's style: the kernel's mark for overlay, stackfs's for
 * wh. Empty value (the kernel's, without an fs-verity digest). 0 or
 * -errno. */
int sfs_metacopy_mark(int fd, enum sfs_whiteout_style style);
/* Ends a metacopy once its data is in the file itself: removes the mark
 * (either style's) and the redirect from fd (an O_PATH fd). 0 or -errno. */
int sfs_metacopy_clear(int fd);

#endif
