/* The only code that turns a name into an fd inside a branch. Every walk
 * is one component beneath a directory fd of the branch, with openat2's
 * RESOLVE_BENEATH and no symlink following, so that nothing planted in a
 * branch can make the daemon reach outside it (DESIGN.md decision 2). */
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

int sfs_open_beneath(int dirfd, const char *name, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	long fd;

	/* A single component only: "..", "." and "/" never reach here from
	 * the kernel, but refuse them rather than trust that. */
	if (!name[0] || strchr(name, '/') || strcmp(name, "..") == 0)
		return -EINVAL;
	fd = syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}

int sfs_path_fd(int dirfd, const char *name)
{
	return sfs_open_beneath(dirfd, name, O_PATH, 0);
}

void sfs_fd_path(int fd, char buf[static 32])
{
	snprintf(buf, 32, "/proc/self/fd/%d", fd);
}

/* The magic link names exactly the inode we hold, so following it cannot
 * leave the branch; O_NOFOLLOW would refuse the magic link itself. */
int sfs_reopen(int pathfd, int flags)
{
	char p[32];
	int fd;

	sfs_fd_path(pathfd, p);
	fd = open(p, (flags & ~(O_NOFOLLOW | O_CREAT | O_EXCL)) | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH (ENOENT without: a user's
 * daemon); the magic link does not, where /proc is mounted. */
int sfs_link_fd(int fd, int dirfd, const char *name)
{
	char p[32];

	if (linkat(fd, "", dirfd, name, AT_EMPTY_PATH) == 0)
		return 0;
	if (errno != ENOENT)
		return -errno;
	sfs_fd_path(fd, p);
	return linkat(AT_FDCWD, p, dirfd, name, AT_SYMLINK_FOLLOW) < 0 ? -errno : 0;
}

int sfs_fstat(int fd, struct stat *st)
{
	if (fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return 0;
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

/* Only for inodes named by our own origin records, on a branch's
 * filesystem: the handle was made by us from an entry of that branch. */
int sfs_open_handle(int mount_fd, int type, const void *handle, unsigned bytes)
{
	struct file_handle *fh = malloc(sizeof(*fh) + bytes);
	/* open_by_handle_at takes no O_PATH fd for the filesystem */
	int mfd = sfs_reopen(mount_fd, O_RDONLY | O_DIRECTORY), fd = -ENOMEM;

	if (fh && mfd >= 0) {
		fh->handle_bytes = bytes;
		fh->handle_type = type;
		memcpy(fh->f_handle, handle, bytes);
		fd = open_by_handle_at(mfd, fh, O_PATH | O_CLOEXEC);
		if (fd < 0)
			fd = -errno;
	} else if (mfd < 0) {
		fd = mfd;
	}
	if (mfd >= 0)
		close(mfd);
	free(fh);
	return fd;
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
