/* The client side of the control channel (protocol: common/control.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/control.h"
#include "common/runtime.h"

/* How long a call may take in all, in ms: STACKFS_CTL_TIMEOUT seconds
 * (for tests and slow machines), else SFS_CLI_CTL_TIMEOUT_S. A daemon
 * that stopped answering must not hang a script for ever. */
#define SFS_CLI_CTL_TIMEOUT_S 30

static int timeout_ms(long long *ms)
{
	const char *env = getenv("STACKFS_CTL_TIMEOUT");
	char *end;
	double s = SFS_CLI_CTL_TIMEOUT_S;

	if (env && *env) {
		errno = 0;
		s = strtod(env, &end);
		if (errno || *end || !isfinite(s) || s <= 0 || s > 86400)
			return -EINVAL;
	}
	*ms = (long long)(s * 1000 + 0.5);
	return 0;
}

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/* Waits for events on fd until the deadline: 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, long long deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	long long left;
	int n;

	do {
		left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, left > 60000 ? 60000 : (int)left);
	} while ((n < 0 && errno == EINTR) || (n == 0 && deadline > now_ms()));
	if (n < 0)
		return -errno;
	return n == 0 ? -ETIMEDOUT : 0;
}

/* A connect that gives up at the deadline: a daemon that does not accept
 * leaves the connection in its listen backlog, and once that is full a
 * blocking connect waits for ever. SO_SNDTIMEO bounds that wait (Unix
 * sockets take it for connect) and every write after it. */
static int set_send_timeout(int fd, long long deadline)
{
	long long left = deadline - now_ms();
	struct timeval tv;

	if (left <= 0)
		return -ETIMEDOUT;
	tv.tv_sec = left / 1000;
	tv.tv_usec = (left % 1000) * 1000;
	return setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ? -errno : 0;
}

static int connect_mount(const char *mp, long long deadline, char *err, size_t errlen)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	unsigned ma, mi;
	char type[64];
	int fd, ret = sfs_runtime_find_mount(mp, &ma, &mi, type, sizeof(type));

	if (ret == 0 && strcmp(type, "fuse.stackfs") != 0)
		ret = -EINVAL;
	if (ret < 0) {
		snprintf(err, errlen, "%s: %s", mp, ret == -EINVAL ? "not a stackfs mount" :
			 ret == -ENOENT ? "not mounted" : strerror(-ret));
		return ret;
	}
	snprintf(a.sun_path, sizeof(a.sun_path), "%s/%u:%u/%s", sfs_runtime_base_of(ma, mi), ma, mi,
		 SFS_CTL_NAME);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ret = fd < 0 ? -errno : set_send_timeout(fd, deadline);
	if (ret == 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		ret = errno == EAGAIN || errno == EINPROGRESS ? -ETIMEDOUT : -errno;
	if (fd >= 0 && ret < 0)
		close(fd);
	if (ret < 0 && ret != -ETIMEDOUT && sfs_cli_gone_msg(mp, ma, mi, err, errlen))
		return -ENOTCONN;
	if (ret < 0) {
		snprintf(err, errlen, "%s: control channel %s: %s", mp, a.sun_path, strerror(-ret));
		return ret;
	}
	return fd;
}

void sfs_cli_ctl_error(const char *cmd, const char *sub, const char *err, int ret)
{
	/* a dead daemon's message says all there is (ENOTCONN) */
	if (ret == -ENOTCONN)
		fprintf(stderr, "stackfs: %s%s%s: %s\n", cmd, sub ? " " : "", sub ? sub : "", err);
	else
		fprintf(stderr, "stackfs: %s%s%s: %s (%s)\n", cmd, sub ? " " : "", sub ? sub : "",
			err, strerror(-ret));
}

/* The mount at or above path, walked up by name (a dead mount answers
 * ENOTCONN to anything that enters it, realpath included). */
bool sfs_cli_gone_path(const char *path, int err, char *msg, size_t len)
{
	char cwd[PATH_MAX], *p = NULL, *slash;
	bool gone = false;

	if (err != ENOTCONN)
		return false;
	if (path[0] == '/' ? asprintf(&p, "%s", path) < 0 :
	    !getcwd(cwd, sizeof(cwd)) || asprintf(&p, "%s/%s", cwd, path) < 0)
		return false;
	for (;;) {
		struct sfs_mountinfo mi;

		if (sfs_runtime_find_mountinfo(p, &mi) == 0 && !strcmp(mi.fstype, "fuse.stackfs")) {
			gone = sfs_cli_gone_msg(p, mi.major, mi.minor, msg, len);
			break;
		}
		slash = strrchr(p, '/');
		if (!slash || slash == p)
			break;
		*slash = '\0';
	}
	free(p);
	return gone;
}

bool sfs_cli_gone_msg(const char *mp, unsigned ma, unsigned mi, char *err, size_t errlen)
{
	pid_t pid;

	if (sfs_runtime_daemon_gone(ma, mi, &pid) != 1)
		return false;
	snprintf(err, errlen, "%s: the stackfs daemon of this mount is gone (pid %d is not "
		 "running: it crashed or was killed); run 'stackfs umount %s' to remove the "
		 "mount, then mount it again", mp, (int)pid, mp);
	return true;
}

/* The request in one send, all of it or an error (a partial send: the
 * timeout hit mid-way). One send also means a daemon that answers and
 * closes early (a refusal) cannot leave the rest to fail with EPIPE. */
static int send_words(int fd, const char *const *w, long long deadline)
{
	char buf[SFS_CTL_MAX_REQUEST];
	size_t len = 0;
	ssize_t n;

	for (; *w; w++) {
		size_t wl = strlen(*w) + 1;

		if (len + wl >= sizeof(buf))
			return -E2BIG;
		memcpy(buf + len, *w, wl);
		len += wl;
	}
	buf[len++] = '\0';
	n = send(fd, buf, len, MSG_NOSIGNAL);
	if (n < 0)
		return errno == EAGAIN || now_ms() > deadline ? -ETIMEDOUT : -errno;
	return (size_t)n < len ? -ETIMEDOUT : 0;
}

static int read_all(int fd, char **out, size_t *len, long long deadline)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1), *nb;
	ssize_t r;
	int ret;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ret = wait_fd(fd, POLLIN, deadline);
		if (ret < 0)
			goto out_free;
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = -errno;
			goto out_free;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n < cap)
			continue;
		nb = cap < SFS_CTL_MAX_REPLY ? realloc(buf, cap * 2 + 1) : NULL;
		if (!nb) {
			ret = -EMSGSIZE;
			goto out_free;
		}
		buf = nb;
		cap *= 2;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
out_free:
	free(buf);
	return ret;
}

/* "ERR ENAME message": the errno and the message. */
static int parse_error(const char *line, char *err, size_t errlen)
{
	char name[32];
	int off = 0;

	if (sscanf(line, "ERR %31s %n", name, &off) < 1)
		return -EPROTO;
	snprintf(err, errlen, "%.*s", (int)strcspn(line + off, "\n"), line + off);
	for (int e = 1; e < 134; e++)
		if (strerrorname_np(e) && !strcmp(strerrorname_np(e), name))
			return -e;
	return -EIO;
}

int sfs_ctl_call(const char *mp, const char *const *words, char **body,
		 char *err, size_t errlen)
{
	char *reply = NULL;
	size_t len = 0;
	long long ms, deadline;
	int fd, ret = timeout_ms(&ms);

	if (ret < 0) {
		snprintf(err, errlen, "bad STACKFS_CTL_TIMEOUT '%s' (seconds, above 0)",
			 getenv("STACKFS_CTL_TIMEOUT"));
		return ret;
	}
	deadline = now_ms() + ms;
	fd = connect_mount(mp, deadline, err, errlen);
	if (fd < 0 && fd != -ETIMEDOUT)
		return fd;
	ret = fd < 0 ? fd : send_words(fd, words, deadline);
	if (ret == 0)
		ret = read_all(fd, &reply, &len, deadline);
	if (fd >= 0)
		close(fd);
	if (ret == -ETIMEDOUT) {
		snprintf(err, errlen, "%s: the daemon did not answer within %g s", mp, ms / 1000.0);
		return ret;
	}
	if (ret < 0) {
		snprintf(err, errlen, "%s: control channel: %s", mp, strerror(-ret));
		return ret;
	}
	if (strncmp(reply, "OK\n", 3) == 0) {
		memmove(reply, reply + 3, len - 2);
		*body = reply;
		return 0;
	}
	ret = parse_error(reply, err, errlen);
	if (ret == -EPROTO)
		snprintf(err, errlen, "%s: control channel: bad reply", mp);
	free(reply);
	return ret;
}
