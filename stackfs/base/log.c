/* Logging. Where lines go is -o log=: syslog (the default in the
 * background), stderr (the default in the foreground) or a FILE. Lines
 * name the operation, branch, path and errno where they have one. The
 * last errors and warnings are also kept in a ring, which `stackfs
 * status` shows: the log may be somewhere the user cannot read or has not
 * found. Until sfs_log_setup, lines go to stderr (the command line's
 * errors are the user's to see); after it, until the daemon is in the
 * background, errors go to stderr too. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "common/escape.h"
#include "stackfs/stackfs.h"

static enum sfs_log_to log_to = SFS_LOG_TO_STDERR;
static int log_fd = -1;           /* the FILE of log=, O_APPEND */
static int debug;
/* The daemon serves in the background: its stderr is /dev/null. Until
 * then errors are shown on the terminal too (they are about the mount
 * being made: libfuse's "mount failed" among them), wherever the log
 * goes; a warning that the user must see says so itself (branch.c). */
static bool detached;

/* The ring of the last errors and warnings (status: last_error lines). */
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sfs_log_entry ring[SFS_LOG_RING];
static unsigned ring_next, ring_count;

static const char *level_name(int level)
{
	return level <= SFS_LOG_ERR ? "error" : level == SFS_LOG_WARN ? "warning" :
	       level <= SFS_LOG_INFO ? "info" : "debug";
}

/* ---- the FILE of -o log= ------------------------------------------- */

/* The directory of the log file, opened without following a symlink
 * anywhere on its path: a user who may write a directory on it could
 * otherwise point it elsewhere. Owned by root or the daemon's user, and
 * writable by no one else unless sticky (where other users cannot rename
 * or remove our file). O_PATH fd or -errno with err set. */
static int open_log_dir(const char *dir, char *err, size_t errlen)
{
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	struct stat st;
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, dir, &how, sizeof(how)), ret = 0;

	if (fd < 0) {
		ret = -errno;
		sfs_msg_fit(err, errlen, "%s: %s", dir, ret == -ELOOP ?
			    "a symlink on the path (give the path without symlinks)" : strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st) < 0)
		ret = -errno;
	else if (st.st_uid != 0 && st.st_uid != geteuid())
		ret = -EPERM;
	else if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
		ret = -EPERM;
	if (ret) {
		sfs_msg_fit(err, errlen, "%s: %s", dir, ret != -EPERM ? strerror(-ret) :
			    st.st_uid != 0 && st.st_uid != geteuid() ?
			    "owned by another user, who could replace the log file" :
			    "writable by other users, who could replace the log file "
			    "(choose a directory only root can write)");
		close(fd);
		return ret;
	}
	return fd;
}

/* The file in dir_fd: not a symlink (O_NOFOLLOW), created 0600 when
 * missing, else a regular file of the daemon's user with one link (a
 * second name may be another user's hard link to a file of root's). A
 * FIFO would block the open: O_NONBLOCK, then refused as not regular. */
static int open_log_in(int dir_fd, const char *path, const char *base, char *err,
		       size_t errlen)
{
	int fd = openat(dir_fd, base, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC |
			O_NOCTTY | O_NONBLOCK, 0600);
	const char *why = NULL;
	struct stat st;

	if (fd < 0) {
		int ret = -errno;

		/* ENXIO: a FIFO nobody reads (O_NONBLOCK) */
		sfs_msg_fit(err, errlen, "%s: %s", path, ret == -ELOOP ?
			    "a symlink (give the file itself)" : ret == -ENXIO ?
			    "not a regular file" : strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st) < 0)
		why = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (st.st_uid != geteuid())
		why = "owned by another user";
	else if (st.st_nlink != 1)
		why = "has other hard links (one may be another file's name)";
	if (why) {
		sfs_msg_fit(err, errlen, "%s: %s", path, why);
		close(fd);
		return -EPERM;
	}
	return fd;
}

int sfs_log_open_file(const char *path, char *err, size_t errlen)
{
	char *dir = strdup(path), *slash;
	int dir_fd, fd;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (!slash || !slash[1]) {
		/* opts.c refuses these: a relative path, a directory */
		snprintf(err, errlen, "%s: not an absolute path of a file", path);
		free(dir);
		return -EINVAL;
	}
	*slash = '\0';
	dir_fd = open_log_dir(dir[0] ? dir : "/", err, errlen);
	fd = dir_fd < 0 ? dir_fd : open_log_in(dir_fd, path, slash + 1, err, errlen);
	if (dir_fd >= 0)
		close(dir_fd);
	free(dir);
	if (fd < 0)
		return fd;
	if (log_fd >= 0)
		close(log_fd);
	log_fd = fd;
	return 0;
}

void sfs_log_setup(const struct sfs_opts *o)
{
	debug = o->debug;
	log_to = o->log_to != SFS_LOG_TO_DEFAULT ? o->log_to :
		 o->foreground ? SFS_LOG_TO_STDERR : SFS_LOG_TO_SYSLOG;
	if (log_to == SFS_LOG_TO_SYSLOG)
		openlog("stackfs", LOG_PID, LOG_DAEMON);
}

bool sfs_log_keeps_stderr(void)
{
	return log_to == SFS_LOG_TO_STDERR;
}

void sfs_log_detached(void)
{
	detached = true;
}

/* ---- writing lines -------------------------------------------------- */

/* "2026-12-03T10:11:12+0100" (local time, as syslog readers show it). */
static void stamp(time_t t, char *buf, size_t len)
{
	struct tm tm;

	if (!localtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%S%z", &tm))
		snprintf(buf, len, "%lld", (long long)t);
}

/* One whole line in one write: O_APPEND keeps lines of other writers
 * (another mount logging there) whole. */
static void write_file_line(time_t t, int level, const char *msg)
{
	char ts[40], line[SFS_LOG_LINE_MAX + 96];
	int n;

	stamp(t, ts, sizeof(ts));
	n = snprintf(line, sizeof(line), "%s stackfs[%d]: %s: %s\n", ts, (int)getpid(),
		     level_name(level), msg);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line)) {
		n = (int)sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	if (write(log_fd, line, (size_t)n) < 0) {
		/* nowhere else to say it */
	}
}

static void ring_add(time_t t, int level, const char *msg)
{
	struct sfs_log_entry *e;

	pthread_mutex_lock(&ring_lock);
	e = &ring[ring_next];
	e->time = t;
	e->level = level;
	snprintf(e->msg, sizeof(e->msg), "%s", msg);
	ring_next = (ring_next + 1) % SFS_LOG_RING;
	if (ring_count < SFS_LOG_RING)
		ring_count++;
	pthread_mutex_unlock(&ring_lock);
}

void sfs_log_recent(void (*fn)(void *arg, const struct sfs_log_entry *e), void *arg)
{
	struct sfs_log_entry copy[SFS_LOG_RING];
	unsigned n, first;

	/* copied out: fn may be slow (it builds a reply) */
	pthread_mutex_lock(&ring_lock);
	n = ring_count;
	first = (ring_next + SFS_LOG_RING - n) % SFS_LOG_RING;
	for (unsigned i = 0; i < n; i++)
		copy[i] = ring[(first + i) % SFS_LOG_RING];
	pthread_mutex_unlock(&ring_lock);
	for (unsigned i = 0; i < n; i++)
		fn(arg, &copy[i]);
}

void sfs_log(int level, const char *fmt, ...)
{
	char msg[SFS_LOG_LINE_MAX];
	time_t now = time(NULL);
	va_list ap;

	if (level == SFS_LOG_DEBUG && !debug)
		return;
	/* one line wherever it goes (a path may hold a newline), a long
	 * path shortened in its middle */
	va_start(ap, fmt);
	sfs_msg_vfit(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (level <= SFS_LOG_WARN)
		ring_add(now, level, msg);
	if (log_to == SFS_LOG_TO_FILE && log_fd >= 0)
		write_file_line(now, level, msg);
	else if (log_to == SFS_LOG_TO_SYSLOG)
		syslog(level, "%s", msg);
	if (log_to == SFS_LOG_TO_STDERR || (!detached && level <= SFS_LOG_ERR))
		fprintf(stderr, "stackfs: %s\n", msg);
}

/* A request answered with a failure (not an expected answer: stats.c).
 * At most FAIL_BURST lines every FAIL_WINDOW seconds, so that a full
 * disk answering every write with ENOSPC does not flood the log; the
 * next line logged says how many were left out. */
#define FAIL_BURST 10
#define FAIL_WINDOW 10
void sfs_log_failure(const char *op, int err)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static time_t window;
	static unsigned logged, quiet;
	unsigned missed = 0;
	time_t now = time(NULL);
	bool log_it;

	pthread_mutex_lock(&lock);
	if (now - window >= FAIL_WINDOW) {
		window = now;
		logged = 0;
	}
	log_it = logged < FAIL_BURST;
	if (log_it) {
		logged++;
		missed = quiet;
		quiet = 0;
	} else {
		quiet++;
	}
	pthread_mutex_unlock(&lock);
	if (!log_it)
		return;
	if (missed)
		sfs_log(SFS_LOG_ERR, "%s: %s (%s) [%u more failures not logged before it]", op,
			strerrorname_np(err) ?: "?", strerror(err), missed);
	else
		sfs_log(SFS_LOG_ERR, "%s: %s (%s)", op, strerrorname_np(err) ?: "?", strerror(err));
}

void sfs_log_line(int level, const char *line)
{
	sfs_log(level, "%s", line);
}

/* One line at most every 10 s for one kind of event met by lookups or
 * reads, so that a find over the view or a program retrying does not
 * flood the log; *more says how many were not logged since. */
struct quiet_rl {
	pthread_mutex_t lock;
	time_t last;
	unsigned long quiet;
};

static bool rl_pass(struct quiet_rl *rl, char more[64])
{
	time_t now = time(NULL);

	more[0] = '\0';
	pthread_mutex_lock(&rl->lock);
	if (rl->last && now - rl->last < 10) {
		rl->quiet++;
		pthread_mutex_unlock(&rl->lock);
		return false;
	}
	rl->last = now;
	if (rl->quiet)
		snprintf(more, 64, " [%lu more since the last line]", rl->quiet);
	rl->quiet = 0;
	pthread_mutex_unlock(&rl->lock);
	return true;
}

/* "BRANCH: PATH" of layer l, for a line. */
static void where(const struct sfs_snap *s, const struct sfs_layer *l, char *path, size_t len)
{
	if (sfs_layer_path(s, l, path, len) < 0)
		snprintf(path, len, "?");
}

/* A mount point inside a branch, met by a lookup (which answers EXDEV). */
void sfs_log_mountpoint(const struct sfs_snap *s, const struct sfs_layer *dl,
			const char *name)
{
	static struct quiet_rl rl = { .lock = PTHREAD_MUTEX_INITIALIZER };
	char path[PATH_MAX], more[64];

	if (!rl_pass(&rl, more))
		return;
	where(s, dl, path, sizeof(path));
	sfs_log(SFS_LOG_WARN, "branch %s: %s%s%s: a mount point inside the branch, not entered "
		"(lookups answer EXDEV)%s", s->b[dl->bidx]->path, path,
		strcmp(path, "/") ? "/" : "", name, more);
}

/* A metacopy file whose data is in no branch below (its reads answer
 * EIO rather than show the zeros the file itself holds). */
void sfs_log_no_data(const struct sfs_snap *s, const struct sfs_layer *l)
{
	static struct quiet_rl rl = { .lock = PTHREAD_MUTEX_INITIALIZER };
	char path[PATH_MAX], more[64];

	if (!rl_pass(&rl, more))
		return;
	where(s, l, path, sizeof(path));
	sfs_log(SFS_LOG_ERR, "branch %s: %s: a metacopy file whose data is in no branch "
		"below, or not the file it was copied from (reads answer EIO)%s",
		s->b[l->bidx]->path, path, more);
}

/* A record of the format on an entry that fails its checksum or its
 * validation (docs/format.md "On-disk format", the checksum rule): damage, so
 * the entry answers EUCLEAN rather than show as if it had none. */
void sfs_log_damaged(const struct sfs_snap *s, const struct sfs_layer *dl, const char *name,
		     const char *what)
{
	static struct quiet_rl rl = { .lock = PTHREAD_MUTEX_INITIALIZER };
	char path[PATH_MAX], more[64];

	if (!rl_pass(&rl, more))
		return;
	where(s, dl, path, sizeof(path));
	sfs_log(SFS_LOG_ERR, "branch %s: %s%s%s: its %s record is damaged (answers EUCLEAN; "
		"stackfs fsck names it, --repair mends what it can)%s", s->b[dl->bidx]->path,
		path, strcmp(path, "/") && name[0] ? "/" : "", name, what, more);
}
