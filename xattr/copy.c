/* Copying extended attributes and permissions (mode and POSIX ACLs) from
 * one entry to another, with libattr's and libacl's copy functions. The
 * union's private attributes are never copied. */
#include <attr/error_context.h>
#include <attr/libattr.h>
#include <acl/libacl.h>
#include <errno.h>

#include "xattr/xattr.h"

/* Which attributes to copy: not ours, and not those libattr's policy
 * (/etc/xattr.conf) leaves to the permission copy or skips. */
static int copy_check(const char *name, struct error_context *ctx)
{
	return !sfs_xattr_is_private(name) && attr_copy_check_permissions(name, ctx);
}

int sfs_xattr_copy(const char *src, const char *dst, bool symlink)
{
	/* A source without xattr support has nothing to copy; a target that
	 * refuses an attribute the source has fails the copy (ENOTSUP...). */
	if (attr_copy_file(src, dst, copy_check, NULL) < 0)
		return errno ? -errno : -EIO;
	if (!symlink && perm_copy_file(src, dst, NULL) < 0)
		return errno ? -errno : -EIO;
	return 0;
}

int sfs_xattr_copy_fd(int src_fd, int dst_fd)
{
	/* the fds themselves: nothing is looked up by name, so a name swapped
	 * meanwhile in a directory a user can write changes nothing */
	if (attr_copy_fd(NULL, src_fd, NULL, dst_fd, copy_check, NULL) < 0)
		return errno ? -errno : -EIO;
	if (perm_copy_fd(NULL, src_fd, NULL, dst_fd, NULL) < 0)
		return errno ? -errno : -EIO;
	return 0;
}
