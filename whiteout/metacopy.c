/* Kernel overlayfs metacopy files: reading their marks (metacopy.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "whiteout/metacopy.h"
#include "whiteout/whiteout.h"
#include "xattr/xattr.h"

/* The redirect a metacopy file names: a path the kernel wrote, at most
 * PATH_MAX bytes; anything longer is not one of its records. */
static int read_redirect(int fd, char **out)
{
	char *v = malloc(4097);
	ssize_t n = v ? sfs_xattr_get(fd, "", SFS_OVL_REDIRECT_XATTR, v, 4096) : -ENOMEM;

	if (n == -ENODATA || n == -ENOTSUP || n == -ERANGE || n == 0) {
		free(v);
		return n == -ERANGE ? -EIO : 0;
	}
	if (n < 0) {
		free(v);
		return (int)n;
	}
	v[n] = '\0';
	if (strlen(v) != (size_t)n) { /* a NUL inside: no path */
		free(v);
		return -EIO;
	}
	*out = v;
	return 0;
}

int sfs_metacopy_read(int fd, struct sfs_metacopy *m)
{
	ssize_t n = sfs_xattr_get(fd, "", SFS_OVL_METACOPY_XATTR, NULL, 0);

	memset(m, 0, sizeof(*m));
	if (n == -ENODATA || n == -ENOTSUP)
		return 0;
	if (n < 0)
		return (int)n;
	m->is = true;
	return read_redirect(fd, &m->redirect);
}

void sfs_metacopy_free(struct sfs_metacopy *m)
{
	free(m->redirect);
	m->redirect = NULL;
}

/* The mark goes first: a crash between the two leaves a plain file with a
 * stray redirect, which nothing reads on a non-directory; the other order
 * would leave a metacopy looking for its data at its own path. */
int sfs_metacopy_clear(int fd)
{
	int ret = sfs_xattr_remove(fd, "", SFS_OVL_METACOPY_XATTR);

	if (ret < 0 && ret != -ENODATA)
		return ret;
	ret = sfs_xattr_remove(fd, "", SFS_OVL_REDIRECT_XATTR);
	return ret == -ENODATA ? 0 : ret;
}
