/* Extended attributes of real entries, by O_PATH fd, and the names the
 * union keeps for itself. Functions return a size or 0, or -errno. */
#ifndef SFS_XATTR_H
#define SFS_XATTR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The entry is `ent` beneath directory fd `fd` (never followed if a
 * symlink: the *xattrat calls of Linux 6.13, else l*xattr through the
 * /proc/self/fd magic link of the directory), or fd itself when ent is
 * "" (an O_PATH fd of a non-symlink). */
ssize_t sfs_xattr_get(int fd, const char *ent, const char *name, void *value, size_t size);
int sfs_xattr_set(int fd, const char *ent, const char *name, const void *value,
		  size_t size, int flags);
ssize_t sfs_xattr_list(int fd, const char *ent, char *list, size_t size);
int sfs_xattr_remove(int fd, const char *ent, const char *name);

/* Copies every attribute but the private ones, then mode and ACLs (not
 * for symlinks), from path src to path dst; neither final component is
 * followed. 0 or -errno (the target's refusal, e.g. -ENOTSUP, -ENOSPC). */
int sfs_xattr_copy(const char *src, const char *dst, bool symlink);
/* The same between two open fds (not O_PATH) of regular files or
 * directories. */
int sfs_xattr_copy_fd(int src_fd, int dst_fd);

/* Attributes of the union's on-disk format (whiteout and opaque markers
 * of overlayfs, our own namespace): never shown, never set through it. */
bool sfs_xattr_is_private(const char *name);
/* Drops private names from a listxattr result; returns the new length. */
size_t sfs_xattr_filter(char *list, size_t len);

#endif
