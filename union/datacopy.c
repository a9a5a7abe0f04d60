/* Copying a file's data: a reflink where the filesystem shares extents,
 * else the data extents only (holes stay holes), then the preallocated,
 * unwritten extents re-allocated, so the copy has the same allocation and
 * no zeros are written. Used by copy-up and by `stackfs commit`. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/bio.h"
#include "union/copy.h"

int sfs_open_source(int fd)
{
	int in = sfs_do_reopen(fd, O_RDONLY | O_NOATIME);

	return in == -EPERM ? sfs_do_reopen(fd, O_RDONLY) : in;
}

/* Copies [off, end) by read and write, for filesystems that cannot
 * copy_file_range between them. */
static int copy_rw(int in, int out, off_t off, off_t end)
{
	char buf[1 << 16];

	while (off < end) {
		size_t want = (size_t)(end - off) < sizeof(buf) ? (size_t)(end - off) : sizeof(buf);
		ssize_t n = pread(in, buf, want, off), w = 0;

		if (n <= 0)
			return n < 0 ? -errno : 0; /* shrank: size set after */
		while (w < n) {
			ssize_t k = sfs_do_pwrite(out, buf + w, (size_t)(n - w), off + w);

			if (k < 0)
				return -errno;
			w += k;
		}
		off += n;
	}
	return 0;
}

/* Copies [off, end) with copy_file_range, or read/write where the
 * filesystems cannot (then for the rest of the copy: *no_cfr). */
static int copy_range(int in, int out, off_t off, off_t end, bool *no_cfr)
{
	while (off < end && !*no_cfr) {
		off_t o_in = off, o_out = off;
		ssize_t n = sfs_do_copy_range(in, &o_in, out, &o_out, (size_t)(end - off));

		if (n < 0 && (errno == EXDEV || errno == ENOSYS ||
			      errno == EOPNOTSUPP || errno == EINVAL))
			*no_cfr = true;
		else if (n < 0)
			return -errno;
		else if (n == 0)
			return 0; /* the source shrank: the size is set after */
		else
			off += n;
	}
	return off < end ? copy_rw(in, out, off, end) : 0;
}

/* Allocates in the copy what is allocated but unwritten in the source
 * (fallocate'd space), as FIEMAP reports it; SEEK_DATA skips it. */
static int copy_prealloc(int in, int out)
{
	size_t n = 128;
	struct fiemap *fm = malloc(sizeof(*fm) + n * sizeof(fm->fm_extents[0]));
	uint64_t start = 0;
	int ret = fm ? 0 : -ENOMEM;
	bool last = false;

	while (ret == 0 && !last) {
		memset(fm, 0, sizeof(*fm));
		fm->fm_start = start;
		fm->fm_length = FIEMAP_MAX_OFFSET - start;
		fm->fm_extent_count = (unsigned)n;
		if (ioctl(in, FS_IOC_FIEMAP, fm) < 0) {
			ret = errno == EOPNOTSUPP || errno == ENOTTY ? 0 : -errno;
			break;
		}
		if (fm->fm_mapped_extents == 0)
			break;
		for (unsigned i = 0; ret == 0 && i < fm->fm_mapped_extents; i++) {
			struct fiemap_extent *e = &fm->fm_extents[i];

			if ((e->fe_flags & FIEMAP_EXTENT_UNWRITTEN) &&
			    sfs_do_fallocate(out, FALLOC_FL_KEEP_SIZE, (off_t)e->fe_logical,
					     (off_t)e->fe_length) < 0)
				ret = -errno;
			start = e->fe_logical + e->fe_length;
			last = e->fe_flags & FIEMAP_EXTENT_LAST;
		}
	}
	free(fm);
	return ret;
}

int sfs_copy_data(int in, int out, off_t size)
{
	bool no_cfr = false;
	off_t pos = 0;
	int ret = 0;

	/* a reflink shares the data but (XFS) not unwritten extents */
	if (sfs_do_clone(out, in) == 0)
		return copy_prealloc(in, out);
	while (ret == 0 && pos < size) {
		off_t data = lseek(in, pos, SEEK_DATA), hole;

		if (data < 0) {
			if (errno != ENXIO)
				ret = -errno;
			break; /* ENXIO: only a hole is left */
		}
		hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0)
			return -errno;
		ret = copy_range(in, out, data, hole, &no_cfr);
		pos = hole;
	}
	if (ret == 0)
		ret = sfs_do_truncate(out, size);
	if (ret == 0)
		ret = copy_prealloc(in, out);
	return ret;
}
