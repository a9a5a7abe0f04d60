/* What a directory says about the same directory in the branches below:
 * opaque (hides them) or redirected (they are at another path, after a
 * rename of a directory with lower content). Read in both formats with
 * one listxattr and one fstatat, since every lookup of a merged directory
 * asks. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/bio.h"
#include "whiteout/origin.h"
#include "whiteout/whiteout.h"
#include "xattr/records.h"
#include "xattr/xattr.h"

/* The names of dirfd's attributes, in a buffer grown as needed. */
static ssize_t list_names(int dirfd, char **buf)
{
	size_t size = 1024;
	ssize_t n;

	for (;;) {
		char *b = realloc(*buf, size);

		if (!b)
			return -ENOMEM;
		*buf = b;
		n = sfs_xattr_list(dirfd, ".", b, size);
		if (n != -ERANGE)
			break;
		size *= 4;
		if (size > (1 << 20))
			return -E2BIG;
	}
	return n == -ENOTSUP ? 0 : n;
}

/* One component of a path: not empty, not "." or "..", a name. */
static bool component_ok(const char *s, size_t len)
{
	return len && len <= 255 && !(len == 1 && s[0] == '.') &&
	       !(len == 2 && s[0] == '.' && s[1] == '.');
}

bool sfs_redirect_ok(const char *v, size_t n)
{
	const char *s = v, *end = v + n;

	if (!n || memchr(v, 0, n))
		return false;
	if (v[0] != '/')
		return !memchr(v, '/', n) && component_ok(v, n);
	/* "/a/b": components from the roots; "/" names no directory that
	 * was moved (a root is never renamed) */
	while (s < end) {
		const char *e;

		s++;
		e = memchr(s, '/', (size_t)(end - s));
		if (!e)
			e = end;
		if (!component_ok(s, (size_t)(e - s)))
			return false;
		s = e;
	}
	return true;
}

static int read_value(int dirfd, const char *name, char **out)
{
	char v[4096];
	ssize_t n = sfs_xattr_get(dirfd, ".", name, v, sizeof(v) - 1);

	if (n < 0)
		return n == -ENODATA ? 0 : (int)n;
	v[n] = '\0';
	*out = strdup(v);
	return *out ? 0 : -ENOMEM;
}

/* A redirect, validated before it is followed: one that names no path
 * ("", ".", "a/b", a NUL inside) is damage, never "none" (a directory
 * whose lower layers are elsewhere would show without them). */
static int read_redirect(int dirfd, const char *name, char **out)
{
	char v[4096];
	ssize_t n = sfs_xattr_get(dirfd, ".", name, v, sizeof(v) - 1);

	if (n == -ENODATA)
		return 0;
	if (n == -ERANGE)
		return -EUCLEAN; /* longer than any path */
	if (n < 0)
		return (int)n;
	v[n] = '\0';
	if (!sfs_redirect_ok(v, (size_t)n))
		return -EUCLEAN;
	*out = strdup(v);
	return *out ? 0 : -ENOMEM;
}

static bool is_opaque_name(const char *n)
{
	return strcmp(n, SFS_OVL_OPAQUE_XATTR) == 0 ||
	       strcmp(n, SFS_OVL_USER_OPAQUE_XATTR) == 0;
}

/* Whether user.overlay.redirect is followed: by a process whose own
 * records are user.* (a user's mount reaches only what its user may),
 * and by root when told the branches' user.overlay.* marks are meant
 * (userxattr). Otherwise anyone who may write a branch could set one on
 * a directory of hers and see, through root's view, a lower directory
 * whose path would not let her in; kernel overlayfs follows none. */
static bool user_redirects;

void sfs_dirmark_user_redirects(bool follow)
{
	user_redirects = follow;
}

static bool is_redirect_name(const char *n)
{
	return strcmp(n, SFS_REDIRECT_XATTR) == 0 ||
	       strcmp(n, SFS_OVL_REDIRECT_XATTR) == 0 ||
	       ((user_redirects || sfs_records_user()) &&
		strcmp(n, SFS_OVL_USER_REDIRECT_XATTR) == 0);
}

static int marks_from_xattrs(int dirfd, struct sfs_dirmark *m)
{
	char *names = NULL, *val = NULL;
	ssize_t len = list_names(dirfd, &names);
	int ret = len < 0 ? (int)len : 0;

	for (ssize_t i = 0; ret == 0 && i < len; i += (ssize_t)strlen(names + i) + 1) {
		if (is_opaque_name(names + i)) {
			ret = read_value(dirfd, names + i, &val);
			m->opaque |= val && strcmp(val, "y") == 0;
			m->xwhiteouts |= val && strcmp(val, "x") == 0;
			free(val);
			val = NULL;
		} else if (is_redirect_name(names + i) && !m->redirect) {
			ret = read_redirect(dirfd, names + i, &m->redirect);
		} else if (strcmp(names + i, SFS_ORIGIN_XATTR) == 0) {
			m->has_origin = true;
		} else if (strcmp(names + i, SFS_OVL_XWHITEOUTS_XATTR) == 0 ||
			   strcmp(names + i, SFS_OVL_USER_XWHITEOUTS_XATTR) == 0) {
			m->xwhiteouts = true;
		}
	}
	free(names);
	return ret;
}

int sfs_dirmark_read(int dirfd, struct sfs_dirmark *m)
{
	struct stat st;
	int ret;

	memset(m, 0, sizeof(*m));
	/* a mount point on the marker's name (EXDEV) is a marker there */
	ret = sfs_do_stat(dirfd, SFS_WH_OPQ, &st);
	if (ret == 0 || ret == -EXDEV)
		m->opaque = true;
	else if (ret != -ENOENT)
		return ret;
	ret = marks_from_xattrs(dirfd, m);
	if (ret < 0)
		sfs_dirmark_free(m);
	return ret;
}

void sfs_dirmark_free(struct sfs_dirmark *m)
{
	free(m->redirect);
	m->redirect = NULL;
}

int sfs_wh_is_opaque(int dirfd)
{
	struct sfs_dirmark m;
	int ret = sfs_dirmark_read(dirfd, &m);

	if (ret < 0)
		return ret;
	sfs_dirmark_free(&m);
	return m.opaque;
}

int sfs_wh_set_opaque(int dirfd, enum sfs_whiteout_style style)
{
	int fd;

	if (style == SFS_WH_OVERLAY)
		return sfs_xattr_set(dirfd, "", sfs_rec_name(SFS_REC_OVL_OPAQUE), "y", 1, 0);
	fd = sfs_do_open(dirfd, SFS_WH_OPQ, O_CREAT | O_WRONLY, 0);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

int sfs_redirect_set(int dirfd, const char *path, enum sfs_whiteout_style style)
{
	/* the overlay name of the mount's namespace: kernel overlayfs reads
	 * user.overlay.* when mounted with userxattr */
	const char *name = style == SFS_WH_OVERLAY ? sfs_rec_name(SFS_REC_OVL_REDIRECT)
						   : SFS_REDIRECT_XATTR;
	return sfs_xattr_set(dirfd, "", name, path, strlen(path), 0);
}

int sfs_dirmark_clear(int dirfd)
{
	const char *const names[] = {
		SFS_OVL_OPAQUE_XATTR, SFS_OVL_USER_OPAQUE_XATTR, SFS_REDIRECT_XATTR,
		SFS_OVL_REDIRECT_XATTR, SFS_OVL_USER_REDIRECT_XATTR,
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int ret = sfs_xattr_remove(dirfd, "", names[i]);

		if (ret < 0 && ret != -ENODATA && ret != -ENOTSUP && ret != -EOPNOTSUPP)
			return ret;
	}
	if (sfs_do_unlinkat(dirfd, SFS_WH_OPQ, 0) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}
