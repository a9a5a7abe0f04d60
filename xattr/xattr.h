/* Extended attributes of real entries, by O_PATH fd, and the names the
 * union keeps for itself. Functions return a size or 0, or -errno. */
#ifndef SFS_XATTR_H
#define SFS_XATTR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* The entry is `ent` beneath directory fd `fd` (never followed if a
 * symlink: the *xattrat calls of Linux 6.13, else l*xattr through the
 * /proc/self/fd magic link of the directory), or fd itself when ent is
 * "" (an O_PATH fd of a non-symlink) or "." (a directory's fd: the
 * cheaper call). */
ssize_t sfs_xattr_get(int fd, const char *ent, const char *name, void *value, size_t size);
int sfs_xattr_set(int fd, const char *ent, const char *name, const void *value,
		  size_t size, int flags);
ssize_t sfs_xattr_list(int fd, const char *ent, char *list, size_t size);
/* Whether list (n bytes of names, as sfs_xattr_list gives) holds name;
 * nothing past n is read, terminated or not. */
bool sfs_xattr_list_has(const char *list, ssize_t n, const char *name);
int sfs_xattr_remove(int fd, const char *ent, const char *name);

/* An entry whose metadata is copied: fd, an fd of it (O_PATH is
 * enough); for a symlink also dir_fd and name, its directory and name,
 * because no fd reaches a symlink's xattrs (the *xattrat calls refuse
 * O_PATH fds). name NULL for every other type. */
struct sfs_entry_ref {
	int fd;
	int dir_fd;
	const char *name;
};

/* Copies every attribute but the private ones and those libattr's
 * policy skips, ACLs included (not for a symlink), from src to dst.
 * 0 or -errno (the target's refusal, e.g. -ENOTSUP, -ENOSPC). */
int sfs_xattr_copy(const struct sfs_entry_ref *src, const struct sfs_entry_ref *dst,
		   bool symlink);
/* Gives dst the owner, attributes and ACLs, mode and (with times) the
 * atime and mtime of src, whose stat is st, in an order where no step
 * undoes an earlier one. Every step on dst->fd but a symlink's xattrs. */
int sfs_meta_copy(const struct sfs_entry_ref *src, const struct stat *st,
		  const struct sfs_entry_ref *dst, bool times);

/* Whether attribute name goes with the entry when it is copied (copy-up,
 * commit, an OCI layer): not the union's own, not one libattr's policy
 * (/etc/xattr.conf) skips, such as XFS's trusted.SGI_ACL_* aliases of
 * the ACLs; the ACLs ("permissions" in that policy) too, but not for a
 * symlink, which has none. */
bool sfs_xattr_copied(const char *name, bool symlink);
/* Attributes of the union's on-disk format (whiteout and opaque markers
 * of overlayfs, our own namespace): never shown, never set through it.
 * A kernel overlayfs name with one more "overlay." level is escaped, as
 * nested overlays write them: it is the entry's own attribute, shown and
 * set through the view one level down (trusted.overlay.overlay.X is the
 * view's trusted.overlay.X), copied as it is stored. */
#define SFS_XATTR_OVL_TRUSTED "trusted.overlay."
#define SFS_XATTR_OVL_USER "user.overlay."
bool sfs_xattr_is_private(const char *name);
bool sfs_xattr_is_escaped(const char *name);
/* The name the view's attribute name is stored under in a branch: one
 * more "overlay." level for a kernel overlayfs name (so the view can hold
 * a nested overlay's marks without them counting for the union), name
 * itself otherwise. -EPERM for the union's own namespace, -ERANGE when
 * the stored name does not fit len. */
int sfs_xattr_stored_name(const char *name, char *buf, size_t len);
/* Drops private names from a listxattr result and shows escaped ones
 * unescaped; returns the new length. */
size_t sfs_xattr_filter(char *list, size_t len);

#endif
