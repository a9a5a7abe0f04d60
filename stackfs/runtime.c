/* The runtime directory of a live mount (see runtime.h): the daemon
 * publishes its pid under the mount's device number, the command finds the
 * mount in /proc/self/mountinfo and reads the pid back. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stackfs/runtime.h"

/* What sfs_runtime_publish made, for sfs_runtime_unpublish. */
static char *published_dir;
static char *published_pid;
static pid_t published_by;

const char *sfs_runtime_base(void)
{
	const char *env = getenv("STACKFS_RUNTIME_DIR");

	return env && env[0] ? env : SFS_RUNTIME_DEFAULT;
}

/* Canonical form of a mountpoint, preferably without touching the
 * mountpoint itself: stat() on a FUSE mount root is a request to its
 * daemon, which hangs if the daemon is stuck, fails if it died, and
 * deadlocks if the caller is the daemon before its loop runs. So the
 * parent is resolved and the last name appended; a whole realpath() is
 * only the fallback of the caller. Returns NULL if that cannot be done. */
static char *canon_parent(const char *path)
{
	char *copy = strdup(path), *slash, *parent, *res = NULL;
	const char *base;
	size_t len;

	if (!copy)
		return NULL;
	len = strlen(copy);
	while (len > 1 && copy[len - 1] == '/')
		copy[--len] = '\0';
	slash = strrchr(copy, '/');
	base = slash ? slash + 1 : copy;
	if (!base[0] || !strcmp(base, ".") || !strcmp(base, ".."))
		goto out;
	if (slash) {
		*slash = '\0';
		parent = realpath(copy[0] ? copy : "/", NULL);
	} else {
		parent = realpath(".", NULL);
	}
	if (parent && asprintf(&res, "%s/%s", strcmp(parent, "/") ? parent : "", base) < 0)
		res = NULL;
	free(parent);
out:
	free(copy);
	return res;
}

/* Undoes the octal escapes (\040 space, \011 tab, \012 newline, \134
 * backslash) the kernel writes in mountinfo fields, in place. */
static void unescape_octal(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

/* Looks `mp` up in mountinfo; the last match is the newest (top) mount. */
static int find_in_mountinfo(const char *mp, unsigned *major, unsigned *minor,
			     char *fstype, size_t fstypelen)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		/* id parent maj:min root mountpoint opts [optional...] - type src superopts */
		char *save = NULL, *tok, *point = NULL, *type = NULL;
		unsigned maj, min;
		int field = 0, seen_sep = 0;

		line[strcspn(line, "\n")] = '\0';
		for (tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save), field++) {
			if (field == 2 && sscanf(tok, "%u:%u", &maj, &min) != 2)
				break;
			if (field == 4)
				point = tok;
			if (field > 5 && seen_sep) {
				type = tok;
				break;
			}
			if (field > 5 && !strcmp(tok, "-"))
				seen_sep = 1;
		}
		if (!point || !type)
			continue;
		unescape_octal(point);
		if (strcmp(point, mp))
			continue;
		unescape_octal(type);
		*major = maj;
		*minor = min;
		if (fstype && fstypelen)
			snprintf(fstype, fstypelen, "%s", type);
		ret = 0;
	}
	if (ferror(f))
		ret = -EIO;
	free(line);
	fclose(f);
	return ret;
}

int sfs_runtime_find_mount(const char *mountpoint, unsigned *major,
			   unsigned *minor, char *fstype, size_t fstypelen)
{
	char *canon = canon_parent(mountpoint);
	int ret = -ENOENT;

	if (canon)
		ret = find_in_mountinfo(canon, major, minor, fstype, fstypelen);
	/* the mountpoint may itself be a symlink, or end in "..": resolve
	 * it whole; if even that fails, compare it as given */
	if (ret == -ENOENT) {
		free(canon);
		canon = realpath(mountpoint, NULL);
		ret = find_in_mountinfo(canon ? canon : mountpoint, major, minor,
					fstype, fstypelen);
	}
	free(canon);
	return ret;
}

/* mkdir -p, 0755; an existing directory is fine. */
static int mkdir_p(const char *path)
{
	char *copy = strdup(path);
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	for (char *p = copy + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;

		*p = '\0';
		if (mkdir(copy, 0755) < 0 && errno != EEXIST) {
			ret = -errno;
			break;
		}
		*p = c;
		if (!c)
			break;
	}
	free(copy);
	if (!ret) {
		struct stat st;

		if (stat(path, &st) < 0)
			ret = -errno;
		else if (!S_ISDIR(st.st_mode))
			ret = -ENOTDIR;
	}
	return ret;
}

/* Writes the whole string to path atomically: a reader sees the old file
 * or the new one, never a half-written pid. */
static int write_atomic(const char *path, const char *data)
{
	char *tmp = NULL;
	size_t len = strlen(data), off = 0;
	int fd, ret = 0;

	if (asprintf(&tmp, "%s.tmp.%d", path, (int)getpid()) < 0)
		return -ENOMEM;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		ret = -errno;
		goto out_free;
	}
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			ret = -errno;
			break;
		}
		off += (size_t)w;
	}
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path) < 0)
		ret = -errno;
	if (ret)
		unlink(tmp);
out_free:
	free(tmp);
	return ret;
}

int sfs_runtime_publish(const char *mountpoint, pid_t pid)
{
	char *dir = NULL, *pidpath = NULL, buf[32];
	unsigned major, minor;
	int ret;

	ret = sfs_runtime_find_mount(mountpoint, &major, &minor, NULL, 0);
	if (ret)
		return ret;
	if (asprintf(&dir, "%s/%u:%u", sfs_runtime_base(), major, minor) < 0) {
		dir = NULL;
		return -ENOMEM;
	}
	if (asprintf(&pidpath, "%s/pid", dir) < 0) {
		pidpath = NULL;
		ret = -ENOMEM;
		goto out_free;
	}
	ret = mkdir_p(dir);
	if (ret)
		goto out_free;
	snprintf(buf, sizeof(buf), "%d\n", (int)pid);
	ret = write_atomic(pidpath, buf);
	if (ret)
		goto out_free;
	sfs_runtime_unpublish();
	published_dir = dir;
	published_pid = pidpath;
	published_by = pid;
	return 0;

out_free:
	free(pidpath);
	free(dir);
	return ret;
}

/* True if the file at path holds exactly data (a short string). */
static int file_is(const char *path, const char *data, size_t len)
{
	char buf[64];
	ssize_t got;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return 0;
	got = read(fd, buf, sizeof(buf));
	close(fd);
	return got >= 0 && (size_t)got == len && !memcmp(buf, data, len);
}

const char *sfs_runtime_dir(void)
{
	return published_dir;
}

/* The base directory stays: other mounts publish beside us, and removing
 * it would race with their mkdir. */
void sfs_runtime_unpublish(void)
{
	char buf[32];
	int len = 0;

	if (published_pid)
		len = snprintf(buf, sizeof(buf), "%d\n", (int)published_by);
	/* device numbers are reused: once our mount is gone, a new mount
	 * may have published here, and its pid file is not ours to remove */
	if (published_pid && file_is(published_pid, buf, (size_t)len))
		unlink(published_pid);
	if (published_dir)
		rmdir(published_dir);
	free(published_pid);
	free(published_dir);
	published_pid = published_dir = NULL;
	published_by = 0;
}

int sfs_runtime_pid(unsigned major, unsigned minor, pid_t *pid)
{
	char *path = NULL, buf[32], *end;
	ssize_t len;
	long val;
	int fd, ret = 0;

	if (asprintf(&path, "%s/%u:%u/pid", sfs_runtime_base(), major, minor) < 0)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	if (len < 0)
		ret = -errno;
	close(fd);
	if (ret)
		return ret;
	buf[len] = '\0';
	errno = 0;
	val = strtol(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n') || val <= 0 || val > INT_MAX)
		return -EINVAL;
	*pid = (pid_t)val;
	return 0;
}
