/* The runtime directory of a live mount (see runtime.h): the daemon
 * publishes its pid under the mount's device number, the command finds the
 * mount in /proc/self/mountinfo and reads the pid back. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/bio.h"
#include "common/runtime.h"
#include "whiteout/metadir.h"
#include "xattr/records.h"

/* What sfs_runtime_publish made, for sfs_runtime_unpublish. */
static char *published_dir;
static char *published_pid;
static pid_t published_by;

static char user_base[PATH_MAX];
static pthread_once_t user_base_once = PTHREAD_ONCE_INIT;

/* A user's own runtime directory (XDG_RUNTIME_DIR: made by the login
 * manager, hers alone, 0700), else where the login manager makes it,
 * /run/user/UID, which no one else can make: never a name in a
 * directory all may write, such as /tmp, where another user could make
 * it first and receive the control connections. */
static void user_base_init(void)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (xdg && xdg[0] == '/')
		snprintf(user_base, sizeof(user_base), "%s/stackfs", xdg);
	else
		snprintf(user_base, sizeof(user_base), "/run/user/%u/stackfs", (unsigned)geteuid());
}

const char *sfs_runtime_base(void)
{
	const char *env = getenv("STACKFS_RUNTIME_DIR");

	if (env && env[0])
		return env;
	/* /run/stackfs is root's: a user's daemon, or a user namespace's
	 * root (rootless podman), cannot make it */
	if (sfs_records_privileged())
		return SFS_RUNTIME_DEFAULT;
	pthread_once(&user_base_once, user_base_init);
	return user_base;
}

const char *sfs_runtime_base_of(unsigned major, unsigned minor)
{
	const char *own = sfs_runtime_base();
	char path[PATH_MAX + 32];
	struct stat st;

	if (getenv("STACKFS_RUNTIME_DIR") || !strcmp(own, SFS_RUNTIME_DEFAULT))
		return own;
	if (snprintf(path, sizeof(path), "%s/%u:%u", own, major, minor) < (int)sizeof(path) &&
	    lstat(path, &st) == 0)
		return own;
	/* a user's command and root's mount: root's directory, which only
	 * root can write (its daemon refuses her changes itself) */
	snprintf(path, sizeof(path), "%s/%u:%u", SFS_RUNTIME_DEFAULT, major, minor);
	return lstat(path, &st) == 0 ? SFS_RUNTIME_DEFAULT : own;
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

/* One line of mountinfo, split in place: "id parent maj:min root point
 * opts [optional...] - type source superopts". 0, or -EINVAL for a
 * line without these fields. point, type and source are unescaped. */
struct mi_line {
	unsigned id, parent, major, minor;
	char *point, *type, *source;
};

static int mi_split(char *line, struct mi_line *m)
{
	char *save = NULL, *tok;
	int field = 0, seen_sep = 0;

	m->point = m->type = m->source = NULL;
	line[strcspn(line, "\n")] = '\0';
	for (tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save), field++) {
		if ((field == 0 && sscanf(tok, "%u", &m->id) != 1) ||
		    (field == 1 && sscanf(tok, "%u", &m->parent) != 1) ||
		    (field == 2 && sscanf(tok, "%u:%u", &m->major, &m->minor) != 2))
			return -EINVAL;
		if (field == 4)
			m->point = tok;
		if (field > 5 && seen_sep && m->type) {
			m->source = tok;
			break;
		}
		if (field > 5 && seen_sep)
			m->type = tok;
		if (field > 5 && !strcmp(tok, "-"))
			seen_sep = 1;
	}
	if (!m->point || !m->type)
		return -EINVAL;
	unescape_octal(m->point);
	unescape_octal(m->type);
	if (m->source)
		unescape_octal(m->source);
	return 0;
}

/* Calls fn on each line of mountinfo until it returns non-zero; that
 * value, 0 after the last line, or -errno. */
static int mi_each(int (*fn)(const struct mi_line *m, void *arg), void *arg)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	int ret = 0;

	if (!f)
		return -errno;
	while (!ret && getline(&line, &cap, f) > 0) {
		struct mi_line m;

		if (mi_split(line, &m) == 0)
			ret = fn(&m, arg);
	}
	if (!ret && ferror(f))
		ret = -EIO;
	free(line);
	fclose(f);
	return ret;
}

struct by_point {
	const char *mp;
	struct sfs_mountinfo *out;
	bool found;
};

/* the last match is the newest (top) mount: never stops early */
static int match_point(const struct mi_line *m, void *arg)
{
	struct by_point *b = arg;

	if (strcmp(m->point, b->mp))
		return 0;
	b->out->id = m->id;
	b->out->major = m->major;
	b->out->minor = m->minor;
	snprintf(b->out->fstype, sizeof(b->out->fstype), "%s", m->type);
	b->found = true;
	return 0;
}

static int find_in_mountinfo(const char *mp, struct sfs_mountinfo *out)
{
	struct by_point b = { .mp = mp, .out = out };
	int ret = mi_each(match_point, &b);

	return ret < 0 ? ret : b.found ? 0 : -ENOENT;
}

struct by_dev_type {
	unsigned major, minor;
	char *fstype, *source;
	size_t len, slen;
	bool found;
};

static int match_dev(const struct mi_line *m, void *arg)
{
	struct by_dev_type *b = arg;

	if (m->major != b->major || m->minor != b->minor)
		return 0;
	snprintf(b->fstype, b->len, "%s", m->type);
	if (b->slen)
		snprintf(b->source, b->slen, "%s", m->source ? m->source : "");
	b->found = true;
	return 1;
}

int sfs_runtime_source_of(unsigned major, unsigned minor, char *fstype, size_t len,
			  char *source, size_t slen)
{
	struct by_dev_type b = { .major = major, .minor = minor, .fstype = fstype, .len = len,
				 .source = source, .slen = slen };
	int ret = mi_each(match_dev, &b);

	return ret < 0 ? ret : b.found ? 0 : -ENOENT;
}

int sfs_runtime_fstype_of(unsigned major, unsigned minor, char *fstype, size_t len)
{
	return sfs_runtime_source_of(major, minor, fstype, len, NULL, 0);
}

int sfs_runtime_find_mountinfo(const char *mountpoint, struct sfs_mountinfo *out)
{
	char *canon = canon_parent(mountpoint);
	int ret = -ENOENT;

	if (canon)
		ret = find_in_mountinfo(canon, out);
	/* the mountpoint may itself be a symlink, or end in "..": resolve
	 * it whole; if even that fails, compare it as given */
	if (ret == -ENOENT) {
		free(canon);
		canon = realpath(mountpoint, NULL);
		ret = find_in_mountinfo(canon ? canon : mountpoint, out);
	}
	free(canon);
	return ret;
}

int sfs_runtime_find_mount(const char *mountpoint, unsigned *major,
			   unsigned *minor, char *fstype, size_t fstypelen)
{
	struct sfs_mountinfo mi;
	int ret = sfs_runtime_find_mountinfo(mountpoint, &mi);

	if (ret)
		return ret;
	*major = mi.major;
	*minor = mi.minor;
	if (fstype && fstypelen)
		snprintf(fstype, fstypelen, "%s", mi.fstype);
	return 0;
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

	if (asprintf(&path, "%s/%u:%u/pid", sfs_runtime_base_of(major, minor), major, minor) < 0)
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

/* ---- who is behind a mount, a lock --------------------------------- */

/* Whether pid is a running stackfsd: its executable's name (a pid file
 * outlives a daemon killed by SIGKILL, and the pid may be reused). */
static bool is_daemon(pid_t pid)
{
	char link[64], exe[PATH_MAX], st[512], *state;
	ssize_t n;
	int fd;

	snprintf(link, sizeof(link), "/proc/%d/stat", (int)pid);
	fd = open(link, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, st, sizeof(st) - 1);
	close(fd);
	st[n > 0 ? n : 0] = '\0';
	/* a zombie has exited: "pid (comm) Z ..." */
	state = strrchr(st, ')');
	if (!state || state[1] != ' ' || state[2] == 'Z')
		return false;
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n < 0)
		return errno == EACCES || errno == EPERM; /* another user's: cannot tell */
	exe[n] = '\0';
	state = strrchr(exe, '/');
	return !strncmp(state ? state + 1 : exe, "stackfsd", 8);
}

int sfs_runtime_daemon_gone(unsigned major, unsigned minor, pid_t *pid)
{
	int ret = sfs_runtime_pid(major, minor, pid);

	if (ret < 0)
		return ret;
	return !is_daemon(*pid);
}

void sfs_runtime_remove_stale(unsigned major, unsigned minor, pid_t pid)
{
	char *dir = NULL, *file = NULL, buf[32];
	int len = snprintf(buf, sizeof(buf), "%d\n", (int)pid);

	if (asprintf(&dir, "%s/%u:%u", sfs_runtime_base_of(major, minor), major, minor) < 0)
		return;
	/* only what the dead daemon left: a new mount may have the device */
	if (asprintf(&file, "%s/pid", dir) >= 0 && file_is(file, buf, (size_t)len) &&
	    !is_daemon(pid)) {
		unlink(file);
		free(file);
		file = NULL;
		if (asprintf(&file, "%s/ctl", dir) >= 0)
			unlink(file);
		rmdir(dir);
	}
	free(file);
	free(dir);
}

struct by_dev {
	unsigned major, minor;
	char *mp;
	size_t len;
};

static int match_stackfs_dev(const struct mi_line *m, void *arg)
{
	struct by_dev *b = arg;

	if (m->major == b->major && m->minor == b->minor && !strcmp(m->type, "fuse.stackfs"))
		snprintf(b->mp, b->len, "%s", m->point);
	return 0;
}

/* The mount point of the stackfs mount daemon pid serves, from the pid
 * files of the runtime directory: 0 or -ENOENT. */
static int daemon_mount(pid_t pid, char *mp, size_t len)
{
	DIR *d = opendir(sfs_runtime_base());
	struct by_dev b = { .mp = mp, .len = len };
	struct dirent *e;
	pid_t p;

	mp[0] = '\0';
	if (!d)
		return -ENOENT;
	while (!mp[0] && (e = readdir(d))) {
		if (sscanf(e->d_name, "%u:%u", &b.major, &b.minor) == 2 &&
		    sfs_runtime_pid(b.major, b.minor, &p) == 0 && p == pid)
			mi_each(match_stackfs_dev, &b);
	}
	closedir(d);
	return mp[0] ? 0 : -ENOENT;
}

/* "stackfs fsck --repair /srv/up" from /proc/PID/cmdline, at most len. */
static void command_line(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, len - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0) {
		snprintf(buf, len, "?");
		return;
	}
	buf[n] = '\0';
	for (ssize_t i = 0; i < n - 1; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
}

struct mnt_dev {
	unsigned id;
	dev_t dev;
	bool found;
};

static int match_id(const struct mi_line *m, void *arg)
{
	struct mnt_dev *b = arg;

	if (m->id != b->id)
		return 0;
	b->dev = makedev(m->major, m->minor);
	b->found = true;
	return 1;
}

/* Whether one of pid's fds is the file (dev, ino): fdinfo gives each
 * fd's inode number and mount id, and mountinfo the mount's device. No
 * filesystem is asked (a stat of the fds would wait on a hung FUSE
 * server where one of them points). */
static bool pid_has_file(pid_t pid, dev_t dev, ino_t ino)
{
	char path[NAME_MAX + 64], line[128];
	struct dirent *e;
	bool found = false;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo", (int)pid);
	d = opendir(path);
	while (d && !found && (e = readdir(d))) {
		unsigned long long fino = 0;
		struct mnt_dev md = { 0 };
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fdinfo/%s", (int)pid, e->d_name);
		f = fopen(path, "re");
		while (f && fgets(line, sizeof(line), f)) {
			sscanf(line, "mnt_id: %u", &md.id);
			sscanf(line, "ino: %llu", &fino);
		}
		if (f)
			fclose(f);
		found = fino == ino && mi_each(match_id, &md) == 1 && md.dev == dev;
	}
	if (d)
		closedir(d);
	return found;
}

/* Who pid is, for a message: the mount a daemon serves, or a command. */
static void describe(pid_t pid, char *buf, size_t len)
{
	char mp[PATH_MAX], cmd[256];

	if (is_daemon(pid) && daemon_mount(pid, mp, sizeof(mp)) == 0) {
		snprintf(buf, len, "the stackfs mount on %s, stackfsd pid %d", mp, (int)pid);
		return;
	}
	command_line(pid, cmd, sizeof(cmd));
	snprintf(buf, len, "'%s' (pid %d)", cmd, (int)pid);
}

/* The lock file of a rw branch, through the branch seam. */
static int lock_stat(int at_fd, struct stat *st)
{
	int dir_fd = sfs_do_open(at_fd, SFS_METADIR_NAME, O_PATH | O_DIRECTORY, 0), ret;

	if (dir_fd < 0)
		return dir_fd;
	ret = sfs_do_stat(dir_fd, SFS_META_LOCK, st);
	close(dir_fd);
	return ret;
}

/* The pid of a process holding the lock file of a rw branch open (its
 * .stackfs beneath at_fd: its root or its workdir): > 0, 0 when none is
 * found, or -errno. */
static pid_t lock_pid(int at_fd)
{
	struct stat st;
	struct dirent *e;
	pid_t found = 0;
	DIR *proc;
	int ret = lock_stat(at_fd, &st);

	if (ret < 0)
		return ret;
	proc = opendir("/proc");
	if (!proc)
		return -errno;
	while (!found && (e = readdir(proc))) {
		pid_t pid = (pid_t)atoi(e->d_name);

		if (pid > 0 && pid != getpid() && pid_has_file(pid, st.st_dev, st.st_ino))
			found = pid;
	}
	closedir(proc);
	return found;
}

int sfs_runtime_lock_holder(int at_fd, char *buf, size_t len)
{
	pid_t pid = lock_pid(at_fd);

	if (pid <= 0)
		return pid < 0 ? pid : -ENOENT;
	describe(pid, buf, len);
	return 0;
}

int sfs_runtime_lock_ending(int at_fd)
{
	char mp[PATH_MAX];
	pid_t pid = lock_pid(at_fd);

	/* a daemon that serves no live mount is on its way out */
	return pid > 0 && is_daemon(pid) && daemon_mount(pid, mp, sizeof(mp)) < 0;
}

/* Filesystems whose content other machines change: network and cluster
 * filesystems, and the FUSE clients of distributed ones. */
static const char *const shared_types[] = {
	"nfs", "nfs4", "cifs", "smb3", "ceph", "9p", "afs", "lustre", "gfs2", "ocfs2",
	"beegfs", "gpfs", "fuse.glusterfs", "fuse.ceph-fuse", "fuse.ceph", "fuse.sshfs",
	"fuse.s3fs", "fuse.rclone", "fuse.juicefs", "fuse.moosefs", "fuse.lizardfs",
	NULL,
};

int sfs_fstype_shared(const char *fstype)
{
	for (const char *const *t = shared_types; *t; t++)
		if (!strcmp(fstype, *t))
			return 1;
	return 0;
}
