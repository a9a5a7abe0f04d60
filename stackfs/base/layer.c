/* Layers seen from outside a request: the path of a layer inside its
 * branch, an inode reopened by the file handle an origin record holds,
 * and the open-files limit that bounds the fds the layers hold. Names
 * are turned into fds by the branch seam alone (common/bio.c). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "stackfs/stackfs.h"

void sfs_fd_path(int fd, char buf[static 32])
{
	snprintf(buf, 32, "/proc/self/fd/%d", fd);
}

/* The daemon holds an O_PATH fd per layer of each cached inode, so the
 * kernel's inode cache, not the default limit of a shell, must bound it:
 * as root the hard limit goes up to fs.nr_open, then the soft limit to
 * the hard one. */
int sfs_raise_nofile(void)
{
	struct rlimit rl;
	unsigned long nr_open = 0;
	FILE *f = fopen("/proc/sys/fs/nr_open", "re");

	if (f) {
		if (fscanf(f, "%lu", &nr_open) != 1)
			nr_open = 0;
		fclose(f);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -errno;
	if (nr_open > rl.rlim_max) {
		struct rlimit up = { .rlim_cur = nr_open, .rlim_max = nr_open };

		if (setrlimit(RLIMIT_NOFILE, &up) == 0)
			return 0;
	}
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -errno;
	return 0;
}

/* O_PATH fd of the handle on the filesystem of mfd (opened for reading).
 * A handle that holds an inode number (FUSE's) is no handle the kernel
 * knows: -EOPNOTSUPP. */
static int open_handle_at(int mfd, int type, const void *handle, unsigned bytes)
{
	struct file_handle *fh;
	int fd = -ENOMEM;

	if (type == SFS_HANDLE_NUMBER)
		return -EOPNOTSUPP;
	fh = malloc(sizeof(*fh) + bytes);
	if (fh) {
		fh->handle_bytes = bytes;
		fh->handle_type = type;
		memcpy(fh->f_handle, handle, bytes);
		fd = sfs_do_open_by_handle(mfd, fh, O_PATH | O_CLOEXEC);
	}
	free(fh);
	return fd;
}

/* Only for inodes named by our own origin records, on a branch's
 * filesystem: the handle was made by us from an entry of that branch. */
int sfs_open_handle(int mount_fd, int type, const void *handle, unsigned bytes)
{
	/* open_by_handle_at takes no O_PATH fd for the filesystem */
	int mfd = sfs_do_reopen_dir(mount_fd, O_RDONLY), fd;

	if (mfd < 0)
		return mfd;
	fd = open_handle_at(mfd, type, handle, bytes);
	close(mfd);
	return fd;
}

/* The branch root opened for reading, kept for the branch's life: a
 * reopen of every layer of a stack by handle (fdcache.c) opened and
 * closed it for each layer. The first thread to store it wins. */
static int branch_handle_fd(const struct sfs_branch *b)
{
	int fd = atomic_load_explicit(&b->shared->handle_fd, memory_order_acquire), want = -1;

	if (fd >= 0)
		return fd;
	fd = sfs_do_reopen_dir(b->root_fd, O_RDONLY);
	if (fd < 0)
		return fd;
	if (!atomic_compare_exchange_strong(&b->shared->handle_fd, &want, fd)) {
		close(fd);
		fd = want;
	}
	return fd;
}

int sfs_branch_open_handle(const struct sfs_branch *b, int type, const void *handle, unsigned bytes)
{
	int mfd = branch_handle_fd(b);

	return mfd < 0 ? mfd : open_handle_at(mfd, type, handle, bytes);
}

int sfs_layer_path(const struct sfs_snap *s, const struct sfs_layer *l,
		   char *buf, size_t len)
{
	const char *root = s->b[l->bidx]->path;
	size_t rl = strlen(root);
	char p[32], *full = malloc(PATH_MAX);
	ssize_t n;
	int ret = 0;

	if (!full)
		return -ENOMEM;
	sfs_fd_path(l->fd, p);
	n = readlink(p, full, PATH_MAX - 1);
	if (n < 0) {
		ret = -errno;
		goto out;
	}
	full[n] = '\0';
	if (strcmp(root, "/") == 0)
		rl = 0;
	/* the entry must still be beneath its branch root, and not deleted */
	if (strncmp(full, root, rl) != 0 || (full[rl] != '/' && full[rl] != '\0') ||
	    strstr(full, " (deleted)")) {
		ret = -ESTALE;
		goto out;
	}
	if (snprintf(buf, len, "%s", full[rl] ? full + rl : "/") >= (int)len)
		ret = -ENAMETOOLONG;
out:
	free(full);
	return ret;
}
