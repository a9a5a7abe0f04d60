/* Copying an entry's metadata — owner, extended attributes, POSIX ACLs,
 * mode, times — to another entry, the way copy-up and commit need it.
 * Every step works on the target's own fd: a name in a directory that
 * someone else can write could be swapped between two steps, and the
 * daemon would then stamp root's owner or set-ID bits on a stranger's
 * file. The one exception is the xattrs of a symlink, which no fd
 * reaches (see sfs_meta_copy). The union's private attributes and those
 * libattr's policy (/etc/xattr.conf) skips are never copied. */
#include <attr/libattr.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bio.h"
#include "xattr/records.h"
#include "xattr/xattr.h"

/* The (fd, name) pair the xattr calls take for an entry. */
static int ref_fd(const struct sfs_entry_ref *r)
{
	return r->name ? r->dir_fd : r->fd;
}

static const char *ref_name(const struct sfs_entry_ref *r)
{
	return r->name ? r->name : "";
}

/* The names of src's attributes in a malloc'd list: *len 0 and NULL when
 * it has none or its filesystem keeps none. The list may grow between
 * the calls: asked again then. */
static int list_names(const struct sfs_entry_ref *src, char **out, size_t *len)
{
	ssize_t n;
	char *buf = NULL;

	*out = NULL;
	*len = 0;
	for (int tries = 0; tries < 8; tries++) {
		n = sfs_xattr_list(ref_fd(src), ref_name(src), NULL, 0);
		if (n == -ENOTSUP || n == 0)
			return 0;
		if (n < 0)
			return (int)n;
		free(buf);
		buf = malloc((size_t)n);
		if (!buf)
			return -ENOMEM;
		n = sfs_xattr_list(ref_fd(src), ref_name(src), buf, (size_t)n);
		if (n >= 0) {
			*out = buf;
			*len = (size_t)n;
			return 0;
		}
		if (n != -ERANGE)
			break;
	}
	free(buf);
	return n < 0 ? (int)n : -EIO;
}

/* Copies one attribute: gone meanwhile from src is not an error; the
 * target's refusal is (ENOTSUP, ENOSPC, E2BIG...). */
static int copy_one(const struct sfs_entry_ref *src, const struct sfs_entry_ref *dst,
		    const char *name)
{
	ssize_t n;
	char *val = NULL;
	int ret = -EIO;

	for (int tries = 0; tries < 8; tries++) {
		n = sfs_xattr_get(ref_fd(src), ref_name(src), name, NULL, 0);
		if (n < 0) {
			ret = n == -ENODATA ? 0 : (int)n;
			break;
		}
		free(val);
		val = malloc(n ? (size_t)n : 1);
		if (!val) {
			ret = -ENOMEM;
			break;
		}
		n = sfs_xattr_get(ref_fd(src), ref_name(src), name, val, (size_t)n);
		if (n == -ERANGE)
			continue;
		ret = n == -ENODATA ? 0 : n < 0 ? (int)n :
		      sfs_xattr_set(ref_fd(dst), ref_name(dst), name, val, (size_t)n, 0);
		break;
	}
	free(val);
	return ret;
}

bool sfs_xattr_copied(const char *name, bool symlink)
{
	int action;

	if (sfs_xattr_is_private(name))
		return false;
	action = attr_copy_action(name, NULL);
	return action == 0 || (action == ATTR_ACTION_PERMISSIONS && !symlink);
}

int sfs_xattr_copy(const struct sfs_entry_ref *src, const struct sfs_entry_ref *dst,
		   bool symlink)
{
	char *names;
	size_t len;
	int ret = list_names(src, &names, &len);

	for (size_t i = 0; ret == 0 && i < len; i += strlen(names + i) + 1) {
		if (sfs_xattr_copied(names + i, symlink))
			ret = copy_one(src, dst, names + i);
	}
	free(names);
	return ret;
}

/* The owner of st given to fd. A process without trusted.* attributes
 * (records.h: a user's mount, a user namespace's root) may give only
 * the ids it has or that its namespace maps: the parts it may not
 * give (EPERM, or EINVAL for an id outside the mapped ranges) stay
 * its own, as fuse-overlayfs leaves them rootless. Root gets every
 * refusal: a copy that silently changed owner would change access. */
static int copy_owner(int fd, const struct stat *st)
{
	if (sfs_do_fchownat(fd, "", st->st_uid, st->st_gid, AT_EMPTY_PATH) == 0)
		return 0;
	if (!sfs_records_user() || (errno != EPERM && errno != EINVAL))
		return -errno;
	sfs_do_fchownat(fd, "", st->st_uid, (gid_t)-1, AT_EMPTY_PATH);
	sfs_do_fchownat(fd, "", (uid_t)-1, st->st_gid, AT_EMPTY_PATH);
	return 0;
}

int sfs_meta_copy(const struct sfs_entry_ref *src, const struct stat *st,
		  const struct sfs_entry_ref *dst, bool times)
{
	struct timespec tv[2] = { st->st_atim, st->st_mtim };
	bool lnk = S_ISLNK(st->st_mode);
	int ret = 0;

	/* chown first: it clears set-ID bits and file capabilities */
	ret = copy_owner(dst->fd, st);
	if (ret == 0)
		ret = sfs_xattr_copy(src, dst, lnk);
	/* the mode after the ACL, whose mask it must agree with */
	if (ret == 0 && !lnk)
		ret = sfs_do_fchmod(dst->fd, st->st_mode & 07777);
	if (ret == 0 && times && sfs_do_utimensat(dst->fd, "", tv, AT_EMPTY_PATH) < 0)
		ret = -errno;
	return ret;
}
