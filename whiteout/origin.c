/* Origin records (see origin.h for the byte layout). */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "common/bio.h"
#include "whiteout/ondisk.h"
#include "whiteout/origin.h"
#include "xattr/xattr.h"

#define ORIGIN_FIXED 32u                /* bytes before the handle */
#define ORIGIN_V1_SIZE 24u

int sfs_origin_encode(const struct sfs_origin *o, uint8_t *buf, size_t len)
{
	size_t n = ORIGIN_FIXED + o->handle_bytes + 4;

	if (o->handle_bytes > SFS_ORIGIN_HANDLE_MAX || len < n)
		return -EINVAL;
	buf[0] = SFS_ORIGIN_VERSION;
	buf[1] = 0;
	sfs_le_put16(buf + 2, o->handle_bytes);
	sfs_le_put32(buf + 4, (uint32_t)o->handle_type);
	memcpy(buf + 8, o->fs_uuid, 16);
	sfs_le_put64(buf + 24, o->ino);
	memcpy(buf + ORIGIN_FIXED, o->handle, o->handle_bytes);
	sfs_le_put32(buf + ORIGIN_FIXED + o->handle_bytes,
	      sfs_crc32c(0, buf, ORIGIN_FIXED + o->handle_bytes));
	return (int)n;
}

int sfs_origin_decode(const void *buf, size_t len, struct sfs_origin *o)
{
	const uint8_t *b = buf;
	uint16_t hb;

	memset(o, 0, sizeof(*o));
	if (len < 1)
		return -EUCLEAN;
	if (b[0] == 1) {
		static const uint8_t zero[7];

		if (len != ORIGIN_V1_SIZE || memcmp(b + 1, zero, sizeof(zero)))
			return -EUCLEAN;
		o->version = 1;
		o->dev = sfs_le_get64(b + 8);
		o->ino = sfs_le_get64(b + 16);
		return 1;
	}
	/* a later version keeps the checksum in the last four bytes: only
	 * a whole record is newer, a broken one is damage */
	if (b[0] > SFS_ORIGIN_VERSION)
		return len >= 8 && sfs_le_get32(b + len - 4) == sfs_crc32c(0, b, len - 4) ?
			0 : -EUCLEAN;
	if (b[0] != SFS_ORIGIN_VERSION || len < ORIGIN_FIXED + 4)
		return -EUCLEAN;
	hb = sfs_le_get16(b + 2);
	if (b[1] || hb > SFS_ORIGIN_HANDLE_MAX || len != ORIGIN_FIXED + hb + 4u)
		return -EUCLEAN;
	if (sfs_le_get32(b + ORIGIN_FIXED + hb) != sfs_crc32c(0, b, ORIGIN_FIXED + hb))
		return -EUCLEAN;
	o->version = SFS_ORIGIN_VERSION;
	o->handle_bytes = hb;
	o->handle_type = (int32_t)sfs_le_get32(b + 4);
	memcpy(o->fs_uuid, b + 8, 16);
	o->ino = sfs_le_get64(b + 24);
	memcpy(o->handle, b + ORIGIN_FIXED, hb);
	return 1;
}

/* By the xattr library, which reaches a name without crossing a mount
 * point inside the branch. */
int sfs_origin_set(int dirfd, const char *name, const struct sfs_origin *o)
{
	uint8_t buf[SFS_ORIGIN_MAX];
	int n = sfs_origin_encode(o, buf, sizeof(buf));

	if (n < 0)
		return n;
	return sfs_xattr_set(dirfd, name, SFS_ORIGIN_XATTR, buf, (size_t)n, 0);
}

int sfs_origin_get(int dirfd, const char *name, struct sfs_origin *o)
{
	uint8_t buf[SFS_ORIGIN_MAX + 1];
	ssize_t n = sfs_xattr_get(dirfd, name, SFS_ORIGIN_XATTR, buf, sizeof(buf));

	if (n == -ENODATA || n == -ENOTSUP)
		return 0;
	if (n == -ERANGE)
		return -EUCLEAN; /* larger than any record we write */
	if (n < 0)
		return (int)n;
	return sfs_origin_decode(buf, (size_t)n, o);
}

static bool origin_whole(const uint8_t *buf, size_t len, void *arg)
{
	struct sfs_origin o;

	(void)arg;
	return sfs_origin_decode(buf, len, &o) == 1 && o.version == SFS_ORIGIN_VERSION;
}

int sfs_origin_mend(int dirfd, const char *name, bool apply, size_t *at, uint8_t *was)
{
	uint8_t buf[SFS_ORIGIN_MAX + 1];
	ssize_t n = sfs_xattr_get(dirfd, name, SFS_ORIGIN_XATTR, buf, sizeof(buf));
	int ret;

	if (n < 0)
		return (int)n;
	ret = sfs_mend_byte(buf, (size_t)n, origin_whole, NULL, at, was);
	if (ret != 1 || !apply)
		return ret == 1;
	ret = sfs_xattr_set(dirfd, name, SFS_ORIGIN_XATTR, buf, (size_t)n, 0);
	return ret < 0 ? ret : 1;
}

int sfs_origin_remove(int dirfd, const char *name)
{
	int ret = sfs_xattr_remove(dirfd, name, SFS_ORIGIN_XATTR);

	return ret == -ENODATA ? 0 : ret;
}

/* The entry is opened first (not stat'ed nor named to name_to_handle_at,
 * which would cross a mount point there). */
int sfs_origin_of(int dirfd, const char *name, const uint8_t fs_uuid[16],
		  struct sfs_origin *o)
{
	unsigned hb = SFS_ORIGIN_HANDLE_MAX;
	struct stat st;
	int type, ret, fd;

	memset(o, 0, sizeof(*o));
	fd = name[0] ? sfs_do_open(dirfd, name, O_PATH, 0) : dirfd;
	if (fd < 0)
		return fd;
	ret = sfs_do_fstat(fd, &st) < 0 ? -errno
		: sfs_fs_handle(fd, "", &type, o->handle, &hb);
	if (fd != dirfd)
		close(fd);
	if (ret == 0) {
		o->handle_type = type;
		o->handle_bytes = (uint16_t)hb;
	} else if (ret != -EOPNOTSUPP && ret != -EOVERFLOW) {
		return ret;
	}
	o->version = SFS_ORIGIN_VERSION;
	memcpy(o->fs_uuid, fs_uuid, 16);
	o->ino = (uint64_t)st.st_ino;
	return 0;
}

int sfs_origin_names(const struct sfs_origin *o, int dirfd, const char *name)
{
	uint8_t handle[SFS_ORIGIN_HANDLE_MAX];
	unsigned hb = sizeof(handle);
	struct stat st;
	int type, ret;

	ret = name[0] ? sfs_do_stat(dirfd, name, &st) : sfs_do_fstat(dirfd, &st);
	if (ret < 0)
		return ret;
	if ((uint64_t)st.st_ino != o->ino)
		return 0;
	/* an old record, a filesystem without handles, or a number handle
	 * (FUSE, fsid.c: it holds the number just compared): the number is
	 * all there is to compare, and no statfs round trip is made */
	if (o->version != SFS_ORIGIN_VERSION || !o->handle_bytes ||
	    o->handle_type == SFS_HANDLE_NUMBER)
		return 1;
	/* the handle carries the inode's generation: a new inode with the
	 * same number has another one */
	ret = sfs_fs_handle(dirfd, name, &type, handle, &hb);
	if (ret)
		return ret;
	return type == o->handle_type && hb == o->handle_bytes &&
	       !memcmp(handle, o->handle, hb);
}
