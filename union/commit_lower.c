/* Small steps on the lower branch's tree that placing entries and
 * applying directories share: temporary names, opening a path's parent,
 * removing a tree, putting a staged entry in place. Every call into a
 * branch goes through the seam (common/bio.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/bio.h"
#include "union/commit_int.h"

void sfs_commit_tmp_name(struct commit *c, char buf[64])
{
	snprintf(buf, 64, TMP_PREFIX "%d.%u", (int)getpid(), c->seq++);
}

/* Never crossing a mount point; without changing its atime where the
 * caller may ask so (O_NOATIME is for the owner or CAP_FOWNER). */
int sfs_commit_open_source(int dir, const char *name)
{
	const char *n = name[0] ? name : ".";
	int fd = sfs_do_open(dir, n, O_RDONLY | O_NOATIME, 0);

	return fd == -EPERM ? sfs_do_open(dir, n, O_RDONLY, 0) : fd;
}

/* Empties the directory open as fd (taken: closed here), of the mount
 * mnt, entry by entry. */
static int empty_dir(int fd, uint64_t mnt)
{
	struct dirent *e;
	uint64_t m = 0;
	DIR *d = NULL;
	int ret = sfs_do_statx(fd, NULL, &m);

	if (ret == 0 && m != mnt)
		ret = -EXDEV;
	if (ret == 0 && !(d = fdopendir(fd)))
		ret = -errno;
	if (!d) {
		close(fd);
		return ret;
	}
	while (ret == 0 && (errno = 0, e = readdir(d))) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			ret = sfs_commit_remove_tree(fd, e->d_name, mnt);
	}
	if (ret == 0 && errno)
		ret = -errno;
	closedir(d);
	return ret;
}

int sfs_commit_remove_tree(int dirfd, const char *name, uint64_t mnt)
{
	struct stat st;
	int fd, ret;

	/* the first call on the name does not cross a mount point */
	ret = sfs_do_stat(dirfd, name, &st);
	if (ret < 0)
		return ret == -ENOENT ? 0 : ret;
	if (!S_ISDIR(st.st_mode))
		return sfs_do_unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	fd = sfs_do_open(dirfd, name, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fd;
	ret = empty_dir(fd, mnt);
	if (ret == 0 && sfs_do_unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		ret = -errno;
	return ret;
}

/* One component at a time from the lower branch's root, following no
 * symlink (sfs_jnl_open_path). */
int sfs_commit_open_parent(struct commit *c, const char *path, const char **base)
{
	const char *slash = strrchr(path, '/');
	char *dir = strndup(path, slash ? (size_t)(slash - path) : 0);
	int fd;

	*base = slash ? slash + 1 : path;
	if (!dir)
		return -ENOMEM;
	fd = sfs_jnl_open_path(c->u.b[1].root_fd, dir);
	free(dir);
	return fd;
}

/* Over a non-directory in one step; a directory there is removed first. */
int sfs_commit_put_in_place(struct commit *c, int ddir, const char *tmp, const char *name)
{
	struct stat st;
	int ret;

	if (sfs_do_stat(ddir, name, &st) == 0 && S_ISDIR(st.st_mode)) {
		ret = sfs_commit_remove_tree(ddir, name, c->u.b[1].mnt_id);
		if (ret < 0)
			return ret;
	}
	if (sfs_do_renameat2(ddir, tmp, ddir, name, 0) < 0)
		return -errno;
	return 0;
}
