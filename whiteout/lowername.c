/* Lower-name records (see lowername.h for the byte layout). */
#include <errno.h>
#include <string.h>
#include <sys/types.h>

#include "whiteout/lowername.h"
#include "whiteout/ondisk.h"
#include "xattr/xattr.h"

#define LOWERNAME_FIXED 4u              /* bytes before the path */

/* Whether p (n bytes) is a path the record may hold: read back, it is
 * opened beneath a branch root, so it never names "." or "..". */
static bool lowername_path_ok(const char *p, size_t n)
{
	size_t start = 0;

	if (n < 1 || n > SFS_LOWERNAME_PATH_MAX || memchr(p, '\0', n))
		return false;
	for (size_t i = 0; i <= n; i++) {
		size_t c;

		if (i < n && p[i] != '/')
			continue;
		c = i - start;
		if (c == 0 || (c == 1 && p[start] == '.') ||
		    (c == 2 && p[start] == '.' && p[start + 1] == '.'))
			return false;
		start = i + 1;
	}
	return true;
}

int sfs_lowername_encode(const char *path, uint8_t *buf, size_t len)
{
	size_t pl = strlen(path), n = LOWERNAME_FIXED + pl + 4;

	if (!lowername_path_ok(path, pl) || len < n)
		return -EINVAL;
	buf[0] = SFS_LOWERNAME_VERSION;
	buf[1] = 0;
	sfs_le_put16(buf + 2, (uint16_t)pl);
	memcpy(buf + LOWERNAME_FIXED, path, pl);
	sfs_le_put32(buf + LOWERNAME_FIXED + pl, sfs_crc32c(0, buf, LOWERNAME_FIXED + pl));
	return (int)n;
}

int sfs_lowername_decode(const void *buf, size_t len, char *path, size_t plen)
{
	const uint8_t *b = buf;
	uint16_t pl;

	if (len < 1)
		return -EUCLEAN;
	/* a later version keeps the checksum in its last four bytes */
	if (b[0] > SFS_LOWERNAME_VERSION)
		return len >= 8 && sfs_le_get32(b + len - 4) == sfs_crc32c(0, b, len - 4) ?
			0 : -EUCLEAN;
	if (b[0] != SFS_LOWERNAME_VERSION || len < LOWERNAME_FIXED + 4 || b[1])
		return -EUCLEAN;
	pl = sfs_le_get16(b + 2);
	if (len != LOWERNAME_FIXED + pl + 4u || plen <= pl ||
	    sfs_le_get32(b + LOWERNAME_FIXED + pl) != sfs_crc32c(0, b, LOWERNAME_FIXED + pl) ||
	    !lowername_path_ok((const char *)b + LOWERNAME_FIXED, pl))
		return -EUCLEAN;
	memcpy(path, b + LOWERNAME_FIXED, pl);
	path[pl] = '\0';
	return 1;
}

int sfs_lowername_set(int dirfd, const char *name, const char *path)
{
	uint8_t buf[SFS_LOWERNAME_MAX];
	int n = sfs_lowername_encode(path, buf, sizeof(buf));

	if (n < 0)
		return n;
	return sfs_xattr_set(dirfd, name, SFS_LOWERNAME_XATTR, buf, (size_t)n, 0);
}

int sfs_lowername_get(int dirfd, const char *name, char *path, size_t len)
{
	uint8_t buf[SFS_LOWERNAME_MAX + 1];
	ssize_t n = sfs_xattr_get(dirfd, name, SFS_LOWERNAME_XATTR, buf, sizeof(buf));

	if (n == -ENODATA || n == -ENOTSUP)
		return 0;
	if (n == -ERANGE)
		return -EUCLEAN; /* larger than any record we write */
	if (n < 0)
		return (int)n;
	return sfs_lowername_decode(buf, (size_t)n, path, len);
}

int sfs_lowername_remove(int dirfd, const char *name)
{
	int ret = sfs_xattr_remove(dirfd, name, SFS_LOWERNAME_XATTR);

	return ret == -ENODATA ? 0 : ret;
}
