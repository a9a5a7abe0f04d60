/* Kernel overlayfs metacopy files: reading their marks (metacopy.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/bio.h"
#include "whiteout/metacopy.h"
#include "whiteout/ondisk.h"
#include "whiteout/whiteout.h"
#include "xattr/xattr.h"

/* The redirect a metacopy file names: a path the kernel wrote (at most
 * PATH_MAX bytes, sfs_redirect_ok). One that is none (empty, longer, a
 * NUL inside, "." or "a/b") is damage, never "at its own name": the
 * data would be another file's. */
static int read_redirect(int fd, char **out)
{
	char *v = malloc(4097);
	ssize_t n = v ? sfs_xattr_get(fd, "", SFS_OVL_REDIRECT_XATTR, v, 4096) : -ENOMEM;
	int ret = 0;

	if (n == -ENODATA || n == -ENOTSUP)
		n = 0;
	else if (n == -ERANGE)
		ret = -EUCLEAN;
	else if (n < 0)
		ret = (int)n;
	else if (!sfs_redirect_ok(v, (size_t)n))
		ret = -EUCLEAN;
	if (ret == 0 && n > 0) {
		v[n] = '\0';
		*out = v;
		return 0;
	}
	free(v);
	return ret;
}

/* Whether fd carries the mark name: 1, 0, or -errno. */
static int has_mark(int fd, const char *name)
{
	ssize_t n = sfs_xattr_get(fd, "", name, NULL, 0);

	if (n == -ENODATA || n == -ENOTSUP)
		return 0;
	return n < 0 ? (int)n : 1;
}

/* Whether a list of attribute names (n: its length, or what listing it
 * answered) holds either mark: 1, 0, or -errno (-ERANGE: more names than
 * fit here). */
static int list_marks(const char *list, ssize_t n)
{
	if (n == -ENOTSUP)
		return 0;
	if (n < 0)
		return (int)n;
	return sfs_xattr_list_has(list, n, SFS_OVL_METACOPY_XATTR) ||
	       sfs_xattr_list_has(list, n, SFS_SFS_METACOPY_XATTR);
}

/* Whether fd carries either mark. One call where has_mark makes two,
 * each through the /proc/self/fd link an O_PATH fd needs (issue 20:
 * every regular file a lookup finds above another branch is asked). */
static int listed_mark(int fd)
{
	char list[1024];

	return list_marks(list, sfs_xattr_list(fd, "", list, sizeof(list)));
}

int sfs_metacopy_marked_at(int dirfd, const char *name)
{
	char list[1024];
	int n = list_marks(list, sfs_do_listxattrat(dirfd, name, list, sizeof(list)));

	return n == -ERANGE ? 1 : n;
}

int sfs_metacopy_read(int fd, struct sfs_metacopy *m)
{
	int n = listed_mark(fd);

	memset(m, 0, sizeof(*m));
	if (n == -ERANGE) {
		n = has_mark(fd, SFS_OVL_METACOPY_XATTR);
		if (n == 0) /* stackfs's own mark (-o whiteout=wh) */
			n = has_mark(fd, SFS_SFS_METACOPY_XATTR);
	}
	if (n == 0)
		return 0;
	if (n < 0)
		return n;
	m->is = true;
	return read_redirect(fd, &m->redirect);
}

void sfs_metacopy_free(struct sfs_metacopy *m)
{
	free(m->redirect);
	m->redirect = NULL;
}

int sfs_metacopy_mark(int fd, enum sfs_whiteout_style style)
{
	return sfs_xattr_set(fd, "", style == SFS_WH_OVERLAY ? SFS_OVL_METACOPY_XATTR :
			     SFS_SFS_METACOPY_XATTR, "", 0, 0);
}

/* The marks go first: a crash between leaves a plain file with a stray
 * redirect, which nothing reads on a non-directory; the other order
 * would leave a metacopy looking for its data at its own path. */
int sfs_metacopy_clear(int fd)
{
	int ret = sfs_xattr_remove(fd, "", SFS_OVL_METACOPY_XATTR);

	if (ret == 0 || ret == -ENODATA)
		ret = sfs_xattr_remove(fd, "", SFS_SFS_METACOPY_XATTR);
	if (ret < 0 && ret != -ENODATA)
		return ret;
	ret = sfs_xattr_remove(fd, "", SFS_OVL_REDIRECT_XATTR);
	return ret == -ENODATA ? 0 : ret;
}

/* ---- the times kept while the data comes in ---------------------------- */

#define MCT_VERSION 1
#define MCT_SIZE 25

int sfs_metacopy_times_save(int fd, const struct timespec t[2])
{
	uint8_t v[MCT_SIZE];

	v[0] = MCT_VERSION;
	for (int i = 0; i < 2; i++) {
		sfs_le_put64(v + 1 + 12 * i, (uint64_t)t[i].tv_sec);
		sfs_le_put32(v + 9 + 12 * i, (uint32_t)t[i].tv_nsec);
	}
	return sfs_xattr_set(fd, "", SFS_MCTIMES_XATTR, v, sizeof(v), 0);
}

int sfs_metacopy_times_load(int fd, struct timespec t[2])
{
	uint8_t v[MCT_SIZE + 1];
	ssize_t n = sfs_xattr_get(fd, "", SFS_MCTIMES_XATTR, v, sizeof(v));

	/* no checksum: the size, the version and each field validated (a
	 * record of another version is no record this stackfs wrote) */
	if (n == -ENOTSUP)
		return -ENODATA;
	if (n == -ERANGE)
		return -EUCLEAN;
	if (n < 0)
		return (int)n;
	if (n != MCT_SIZE || v[0] != MCT_VERSION)
		return -EUCLEAN;
	for (int i = 0; i < 2; i++) {
		t[i].tv_sec = (time_t)(int64_t)sfs_le_get64(v + 1 + 12 * i);
		t[i].tv_nsec = (long)sfs_le_get32(v + 9 + 12 * i);
		if (t[i].tv_nsec >= 1000000000L)
			return -EUCLEAN;
	}
	return 0;
}

int sfs_metacopy_times_drop(int fd)
{
	int ret = sfs_xattr_remove(fd, "", SFS_MCTIMES_XATTR);

	return ret == -ENODATA || ret == -ENOTSUP ? 0 : ret;
}

int sfs_metacopy_times_follow(int fd)
{
	struct timespec t[2];
	struct stat st;
	int ret = sfs_metacopy_times_load(fd, t);

	/* the times just set are those to end with, whatever the record
	 * held, damaged or not: they replace it */
	if (ret == -ENODATA)
		return 0;
	if (fstat(fd, &st) < 0)
		return -errno;
	t[0] = st.st_atim;
	t[1] = st.st_mtim;
	return sfs_metacopy_times_save(fd, t);
}

int sfs_metacopy_times_restore(int fd)
{
	struct timespec t[2];
	int ret = sfs_metacopy_times_load(fd, t);

	if (ret < 0)
		return ret;
	if (sfs_do_utimensat(fd, "", t, AT_EMPTY_PATH) < 0)
		return -errno;
	return sfs_metacopy_times_drop(fd);
}
