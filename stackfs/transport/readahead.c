/* Readahead of the union's files. The kernel gives every FUSE mount the
 * default 128 KiB window, so a sequential read of a lower file is one
 * READ round trip per 128 KiB. A FUSE server cannot raise the window in
 * its INIT reply (the kernel keeps the smaller of the two), only lower
 * it; the window is the mount's backing device setting in sysfs, which
 * root may write. Measured (docs/performance.md "Readahead window 512 KiB"): 512 KiB cuts the
 * daemon's context switches of a 1 GiB read by four; 1 MiB replies do not
 * fit a pipe of the default pipe-max-size, so libfuse copies them instead
 * of splicing, which costs more than the saved round trips. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "stackfs/ops/ops.h"
#include "common/runtime.h"

/* Writes KIB to the read_ahead_kb of the mount's backing device. Must run
 * before the INIT reply is sent (the kernel then keeps the smaller of
 * this and the reply's max_readahead, see sfs_readahead_want). */
int sfs_readahead_set(const char *mountpoint, unsigned kib)
{
	unsigned major, minor;
	char path[64], val[16];
	int fd, len, ret = sfs_runtime_find_mount(mountpoint, &major, &minor, NULL, 0);

	if (ret < 0)
		return ret;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", major, minor);
	len = snprintf(val, sizeof(val), "%u\n", kib);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = write(fd, val, (size_t)len) == len ? 0 : -errno;
	close(fd);
	return ret;
}

/* The INIT reply's max_readahead: at least the window asked for, so
 * that the kernel's min() keeps it. */
void sfs_readahead_want(struct fuse_conn_info *conn, unsigned kib)
{
	if (kib && conn->max_readahead < kib * 1024u)
		conn->max_readahead = kib * 1024u;
}
