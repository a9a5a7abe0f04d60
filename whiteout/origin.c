/* Origin records (see origin.h). */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>

#include "whiteout/origin.h"

struct origin_v1 {
	uint8_t version;
	uint8_t zero[7];
	uint64_t dev;   /* little-endian */
	uint64_t ino;   /* little-endian */
};

int sfs_origin_set(int dirfd, const char *name, const struct stat *lower)
{
	struct origin_v1 r = {
		.version = 1,
		.dev = htole64((uint64_t)lower->st_dev),
		.ino = htole64((uint64_t)lower->st_ino),
	};
	char p[300];

	snprintf(p, sizeof(p), "/proc/self/fd/%d/%s", dirfd, name);
	if (lsetxattr(p, SFS_ORIGIN_XATTR, &r, sizeof(r), 0) < 0)
		return -errno;
	return 0;
}

int sfs_origin_get(int dirfd, const char *name, uint64_t *dev, uint64_t *ino)
{
	struct origin_v1 r;
	char p[300];
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/self/fd/%d/%s", dirfd, name);
	n = lgetxattr(p, SFS_ORIGIN_XATTR, &r, sizeof(r));
	if (n < 0)
		return errno == ENODATA || errno == ENOTSUP || errno == ERANGE ? 0 : -errno;
	if (n != sizeof(r) || r.version != 1)
		return 0;
	*dev = le64toh(r.dev);
	*ino = le64toh(r.ino);
	return 1;
}
