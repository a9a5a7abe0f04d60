/* The files of the metadata directory (ondisk.h): opened beneath it
 * without following a symlink, read whole within a bound, replaced
 * crash-safely (NAME.tmp, fsync, rename, fsync of the directory),
 * removed with what is under them. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bio.h"
#include "whiteout/ondisk.h"

int sfs_meta_openat(int dir_fd, const char *name, int flags, mode_t mode)
{
	return sfs_do_open(dir_fd, name, flags, mode);
}

int sfs_meta_read_file(int dir_fd, const char *name, size_t max,
		       uint8_t **buf, size_t *len)
{
	int fd = sfs_meta_openat(dir_fd, name, O_RDONLY | O_NONBLOCK, 0);
	uint8_t *b = NULL;
	size_t n = 0, cap = 0;
	struct stat st;
	int ret = 0;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		goto out;
	}
	/* refused before a byte is read: a sparse file of a terabyte costs
	 * no disk and would cost that much memory (the loop below still
	 * bounds a file that grows meanwhile) */
	if ((uint64_t)st.st_size > max) {
		ret = -EFBIG;
		goto out;
	}
	for (;;) {
		ssize_t r;

		if (n + 1 >= cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			uint8_t *nb;

			if (ncap > max + 2)
				ncap = max + 2;
			nb = realloc(b, ncap);
			if (!nb) {
				ret = -ENOMEM;
				goto out;
			}
			b = nb;
			cap = ncap;
		}
		r = read(fd, b + n, cap - 1 - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			ret = -EFBIG;
			goto out;
		}
	}
	if (!b && !(b = malloc(1))) {
		ret = -ENOMEM;
		goto out;
	}
	b[n] = 0;
	*buf = b;
	*len = n;
	b = NULL;
out:
	free(b);
	close(fd);
	return ret;
}

int sfs_meta_fsync_dir(int dir_fd)
{
	int fd = sfs_do_open(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t r = write(fd, p, len);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

int sfs_meta_write_file(int dir_fd, const char *name, const void *buf,
			size_t len)
{
	char tmp[64];
	int fd, ret;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = sfs_meta_openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return fd;
	ret = write_all(fd, buf, len);
	if (!ret && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (ret)
		goto out_unlink;
	if (sfs_do_renameat2(dir_fd, tmp, dir_fd, name, 0) < 0) {
		ret = -errno;
		goto out_unlink;
	}
	return sfs_meta_fsync_dir(dir_fd);
out_unlink:
	sfs_do_unlinkat(dir_fd, tmp, 0);
	return ret;
}

/* Without following symlinks; any fd of the directory (O_PATH too). */
int sfs_meta_empty_dir(int fd)
{
	DIR *d = sfs_do_opendir(fd, ".");
	struct dirent *e;
	int ret = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		int r;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		r = sfs_meta_remove_tree(fd, e->d_name);
		if (r && !ret)
			ret = r;
	}
	closedir(d);
	return ret;
}

int sfs_meta_remove_tree(int dir_fd, const char *name)
{
	int fd, ret;

	if (sfs_do_unlinkat(dir_fd, name, 0) == 0)
		return 0;
	if (errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	fd = sfs_meta_openat(dir_fd, name, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fd == -ENOTDIR ? -EPERM : fd;
	ret = sfs_meta_empty_dir(fd);
	close(fd);
	if (ret)
		return ret;
	if (sfs_do_unlinkat(dir_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}
