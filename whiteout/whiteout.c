/* Whiteouts: reading both formats, writing the configured one. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/bio.h"
#include "whiteout/whiteout.h"
#include "xattr/xattr.h"

int sfs_wh_device_mark(int fd, const char *ent)
{
	char v[2];
	ssize_t n = sfs_xattr_get(fd, ent, SFS_DEVICE_XATTR, v, sizeof(v));

	if (n == -ENODATA || n == -ENOTSUP)
		return 0;
	if (n == -ERANGE)
		return -EUCLEAN;
	if (n < 0)
		return (int)n;
	return n == 1 && v[0] == 'y' ? 1 : -EUCLEAN;
}

/* errno is kept: callers test it after a readdir loop. A marker that is
 * damaged or cannot be read makes no whiteout: the name shows, and its
 * lookup says why (union/resolve.c). */
bool sfs_wh_is_dev_whiteout(int fd, const char *ent, const struct stat *st)
{
	int saved = errno;
	bool wh;

	if (!sfs_wh_is_chr_whiteout(st))
		return false;
	wh = sfs_wh_device_mark(fd, ent) == 0;
	errno = saved;
	return wh;
}

/* Whether fd/ent carries one of the two names (errno kept). */
static bool has_either(int fd, const char *ent, const char *a, const char *b)
{
	int saved = errno;
	bool has = sfs_xattr_get(fd, ent, a, NULL, 0) >= 0 ||
		   sfs_xattr_get(fd, ent, b, NULL, 0) >= 0;

	errno = saved;
	return has;
}

/* Whether directory fd's xattr name holds exactly "x". */
static bool is_x(int fd, const char *name)
{
	char v[2];

	return sfs_xattr_get(fd, ".", name, v, sizeof(v)) == 1 && v[0] == 'x';
}

/* The four reads of sfs_wh_dir_has_xwhiteouts, each name asked for. */
static bool xwhiteouts_by_name(int dirfd)
{
	return is_x(dirfd, SFS_OVL_OPAQUE_XATTR) || is_x(dirfd, SFS_OVL_USER_OPAQUE_XATTR) ||
	       has_either(dirfd, ".", SFS_OVL_XWHITEOUTS_XATTR, SFS_OVL_USER_XWHITEOUTS_XATTR);
}

/* One listxattr first: a directory of a lower layer nearly always has
 * no attribute, and every layer of a merged directory is asked (its
 * listing, and each lookup of an empty file in it), so the four reads
 * that answered ENODATA cost four calls where one says "none of them".
 * A name the list holds is then read as before; a list too long for the
 * buffer (or no such call) falls back to the four reads, whose errors
 * count as "not marked": such an answer is not sure. */
bool sfs_wh_dir_xwhiteouts_read(int dirfd, bool *sure)
{
	int saved = errno;
	char list[1024];
	ssize_t n = sfs_xattr_list(dirfd, ".", list, sizeof(list));
	bool x;

	*sure = n >= 0 || n == -ENOTSUP;
	if (n == -ENOTSUP)
		x = false;
	else if (n < 0)
		x = xwhiteouts_by_name(dirfd);
	else
		x = (sfs_xattr_list_has(list, n, SFS_OVL_OPAQUE_XATTR) && is_x(dirfd, SFS_OVL_OPAQUE_XATTR)) ||
		    (sfs_xattr_list_has(list, n, SFS_OVL_USER_OPAQUE_XATTR) &&
		     is_x(dirfd, SFS_OVL_USER_OPAQUE_XATTR)) ||
		    sfs_xattr_list_has(list, n, SFS_OVL_XWHITEOUTS_XATTR) ||
		    sfs_xattr_list_has(list, n, SFS_OVL_USER_XWHITEOUTS_XATTR);
	errno = saved;
	return x;
}

bool sfs_wh_dir_has_xwhiteouts(int dirfd)
{
	bool sure;

	return sfs_wh_dir_xwhiteouts_read(dirfd, &sure);
}

bool sfs_wh_is_xwhiteout(int dirfd, const char *ent, const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_size == 0 &&
	       has_either(dirfd, ent, SFS_OVL_XWHITEOUT_XATTR, SFS_OVL_USER_XWHITEOUT_XATTR);
}

int sfs_wh_mark_device(int fd, const char *ent)
{
	return sfs_xattr_set(fd, ent, SFS_DEVICE_XATTR, "y", 1, 0);
}

/* ".wh." + name, or NULL when it would not fit in NAME_MAX. */
static char *aufs_name(const char *name)
{
	size_t len = strlen(name);
	char *s;

	if (len + SFS_WH_PREFIX_LEN > 255) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	s = malloc(len + SFS_WH_PREFIX_LEN + 1);
	if (!s)
		return NULL;
	memcpy(s, SFS_WH_PREFIX, SFS_WH_PREFIX_LEN);
	memcpy(s + SFS_WH_PREFIX_LEN, name, len + 1);
	return s;
}

/* A mount point there (EXDEV) is a name there: not entered. */
static int exists_at(int dirfd, const char *name)
{
	struct stat st;
	int ret = sfs_do_stat(dirfd, name, &st);

	if (ret == 0 || ret == -EXDEV)
		return 1;
	return ret == -ENOENT || ret == -ENOTDIR ? 0 : ret;
}

int sfs_wh_has_aufs(int dirfd, const char *name)
{
	char *wh = aufs_name(name);
	int ret;

	if (!wh)
		return errno == ENAMETOOLONG ? 0 : -ENOMEM;
	ret = exists_at(dirfd, wh);
	free(wh);
	return ret;
}

static int create_aufs(int dirfd, const char *name)
{
	char *wh = aufs_name(name);
	int fd, ret = 0;

	if (!wh)
		return -errno;
	fd = sfs_do_open(dirfd, wh, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		ret = errno == EEXIST ? 0 : -errno;
	else
		close(fd);
	free(wh);
	return ret;
}

/* A unique name for temporary entries in the staging directory. */
static void temp_name(char buf[64], const char *what)
{
	static atomic_ulong seq;

	snprintf(buf, 64, "%s.%d.%lu", what, (int)getpid(),
		 atomic_fetch_add(&seq, 1));
}

/* Empties a directory swapped into the staging directory of its
 * whiteouts and removes it. It is out of the view already: a failure
 * leaves it to the next mount, which empties the staging directory. */
static void drop_staged_dir(int workfd, const char *tmp)
{
	int fd = sfs_do_open(workfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);

	if (fd < 0)
		return;
	if (sfs_wh_clear_dir(fd) == 0)
		sfs_do_unlinkat(workfd, tmp, AT_REMOVEDIR);
	close(fd);
}

static int create_overlay(int dirfd, const char *name, int workfd, const char *tmp)
{
	struct stat st;
	int ret = 0;

	if (sfs_do_mknodat(workfd, tmp, S_IFCHR | 0, makedev(0, 0)) < 0)
		return -errno;
	ret = sfs_do_stat(dirfd, name, &st);
	if (ret == -EXDEV) {
		sfs_do_unlinkat(workfd, tmp, 0);
		return ret; /* a mount point: nothing replaces it */
	}
	if (ret == 0 && S_ISDIR(st.st_mode)) {
		/* rename cannot put a device over a directory: swap them,
		 * then remove the directory (its whiteouts only now: they
		 * hid lower entries until the swap) from the staging area. */
		if (sfs_do_renameat2(workfd, tmp, dirfd, name, RENAME_EXCHANGE) == 0) {
			drop_staged_dir(workfd, tmp);
			return 0;
		}
		ret = -errno;
	} else {
		ret = sfs_do_renameat2(workfd, tmp, dirfd, name, 0) < 0 ? -errno : 0;
	}
	if (ret < 0)
		sfs_do_unlinkat(workfd, tmp, 0);
	return ret;
}

enum sfs_whiteout_style sfs_wh_style_for(const char *name, enum sfs_whiteout_style want)
{
	/* ".wh." and a name longer than 251 bytes do not fit in NAME_MAX:
	 * such a name can only be deleted by the other form */
	if (want == SFS_WH_AUFS && strlen(name) + SFS_WH_PREFIX_LEN > 255)
		return SFS_WH_OVERLAY;
	return want;
}

int sfs_wh_create_as(int dirfd, const char *name, int workfd, const char *tmp,
		     enum sfs_whiteout_style style)
{
	if (style == SFS_WH_OVERLAY)
		return create_overlay(dirfd, name, workfd, tmp);
	return create_aufs(dirfd, name);
}

int sfs_wh_create(int dirfd, const char *name, int workfd,
		  enum sfs_whiteout_style style)
{
	char tmp[64] = "";

	if (style == SFS_WH_OVERLAY)
		temp_name(tmp, "wh");
	return sfs_wh_create_as(dirfd, name, workfd, tmp, style);
}

int sfs_wh_remove_aufs(int dirfd, const char *name)
{
	char *wh = aufs_name(name);
	int ret = 1;

	if (!wh)
		return errno == ENAMETOOLONG ? 0 : -ENOMEM;
	if (sfs_do_unlinkat(dirfd, wh, 0) < 0)
		ret = errno == ENOENT ? 0 : -errno;
	free(wh);
	return ret;
}

int sfs_wh_remove(int dirfd, const char *name)
{
	struct stat st;
	int ret = 0, aufs;

	if (sfs_do_stat(dirfd, name, &st) == 0 &&
	    sfs_wh_is_dev_whiteout(dirfd, name, &st)) {
		if (sfs_do_unlinkat(dirfd, name, 0) < 0)
			return -errno;
		ret = 1;
	}
	aufs = sfs_wh_remove_aufs(dirfd, name);
	return aufs < 0 ? aufs : ret | aufs;
}

int sfs_wh_find(int dirfd, const char *name)
{
	struct stat st;
	int has = 0, ret;

	ret = sfs_do_stat(dirfd, name, &st);
	if (ret == 0) {
		if (sfs_wh_is_dev_whiteout(dirfd, name, &st))
			has |= SFS_WH_HAS_DEV;
	} else if (ret != -ENOENT) {
		return ret;
	}
	ret = sfs_wh_has_aufs(dirfd, name);
	if (ret < 0)
		return ret;
	return ret ? has | SFS_WH_HAS_AUFS : has;
}

int sfs_wh_replace(int fromdir, const char *from, int dirfd, const char *name,
		   int has)
{
	if (has & SFS_WH_HAS_DEV) {
		if (sfs_do_renameat2(fromdir, from, dirfd, name, RENAME_EXCHANGE) < 0)
			return -errno;
		sfs_do_unlinkat(fromdir, from, 0); /* else the next mount's cleanup */
	} else if (sfs_do_renameat2(fromdir, from, dirfd, name, RENAME_NOREPLACE) < 0) {
		return -errno;
	}
	if (!(has & SFS_WH_HAS_AUFS))
		return 0;
	/* a ".wh.NAME" left by a failure here is beside its entry, which
	 * wins (and fsck removes it) */
	sfs_wh_remove_aufs(dirfd, name);
	return 0;
}

int sfs_wh_clear_dir(int dir_fd)
{
	DIR *d = sfs_do_opendir(dir_fd, ".");
	struct dirent *e;
	struct stat st;
	int ret = 0, fd;

	if (!d)
		return -errno;
	fd = dirfd(d);
	while (ret == 0 && (e = readdir(d))) {
		if (sfs_wh_reserved_name(e->d_name) ||
		    (e->d_type == DT_CHR && sfs_do_stat(fd, e->d_name, &st) == 0 &&
		     sfs_wh_is_dev_whiteout(fd, e->d_name, &st))) {
			if (sfs_do_unlinkat(fd, e->d_name, 0) < 0 && errno != ENOENT)
				ret = -errno;
		}
	}
	closedir(d);
	return ret;
}
