/* The control server of a live mount (protocol: control.h): one thread
 * accepts, and each connection is served by a thread of its own, so a
 * slow client delays nobody else (a user opening connection after
 * connection used to queue root's requests behind seconds of deadlines).
 * Their number is bounded (control.h), with slots kept for the peers who
 * may change branches. Branch changes are serialised by change_lock, from
 * naming the branch to the kernel's invalidations, and swap the snapshot
 * atomically under the snapshot lock. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/control.h"
#include "common/escape.h"
#include "common/runtime.h"
#include "stackfs/stackfs.h"

static int listen_fd = -1;
static pthread_t server;
static char *sock_path;
/* the socket file we bound (its inode): device numbers are reused, and
 * once our mount is gone a new mount's daemon may have bound its own
 * socket at sock_path, which is not ours to remove */
static struct stat sock_st;

/* One connection being served. A slot is FREE, BUSY (its thread runs and
 * owns fd) or DONE (the thread has returned or is returning, fd closed;
 * it is joined before the slot is used again, or at stop). */
enum slot_state { SLOT_FREE, SLOT_BUSY, SLOT_DONE };

struct conn {
	pthread_t tid;
	int fd;
	bool privileged;          /* SO_PEERCRED: root or the daemon's user */
	uid_t uid;                /* SO_PEERCRED */
	enum slot_state state;
};

/* slots_lock guards slots, the counts and stopping */
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slot_done = PTHREAD_COND_INITIALIZER;
static struct conn slots[SFS_CTL_MAX_CONN];
static unsigned busy, busy_unpriv;
static bool stopping;

/* Held by a change request from finding its branch to the end of the
 * kernel's invalidations: the index found must name the same branch when
 * the change is made, as when one thread served everything. */
static pthread_mutex_t change_lock = PTHREAD_MUTEX_INITIALIZER;

/* A reply under construction. */
struct reply {
	char *buf;
	size_t len, cap;
	int err;                  /* errno to report, 0 for OK */
	char msg[512];
};

static void out(struct reply *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void out(struct reply *r, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(r->buf + r->len, r->cap - r->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n < r->cap - r->len) {
			r->len += (size_t)n;
			return;
		}
		if (r->cap >= SFS_CTL_MAX_REPLY)
			return;
		char *nb = realloc(r->buf, r->cap * 2);

		if (!nb)
			return;
		r->buf = nb;
		r->cap *= 2;
	}
}

static void fail(struct reply *r, int err, const char *msg)
{
	r->err = err;
	snprintf(r->msg, sizeof(r->msg), "%s", msg);
}

/* The filesystem type of a branch, as /proc/self/mountinfo names it. */
static void fstype_of(dev_t dev, char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	unsigned ma, mi;

	snprintf(buf, len, "?");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");

		if (sscanf(line, "%*u %*u %u:%u", &ma, &mi) == 2 &&
		    ma == major(dev) && mi == minor(dev) && sep &&
		    sscanf(sep + 3, "%63s", buf) == 1)
			break;
	}
	fclose(f);
}

static void list_branches(struct reply *r, const char *prefix)
{
	struct sfs_snap *s = sfs_snap_current();

	for (unsigned i = 0; i < s->n; i++) {
		const struct sfs_branch *b = s->b[i];
		struct statvfs sv;
		char type[64];
		unsigned long long avail = 0;

		char *path = sfs_escape_dup(b->path, SFS_ESC_BACKSLASH);
		const char *wd = b->shared->loc.workdir;
		char *wdesc = wd ? sfs_escape_dup(wd, SFS_ESC_BACKSLASH) : NULL;

		fstype_of(b->dev, type, sizeof(type));
		if (fstatvfs(b->root_fd, &sv) == 0)
			avail = (unsigned long long)sv.f_bavail * sv.f_frsize;
		if (!path || (wd && !wdesc)) {
			free(path);
			fail(r, ENOMEM, strerror(ENOMEM));
			break;
		}
		out(r, "%s%u\t%s\t%s\t%u\t%s\t%llu\t%s\n", prefix, i, path,
		    sfs_branch_mode_name(b->mode), b->id, type, avail, wdesc ? wdesc : "-");
		free(path);
		free(wdesc);
	}
	sfs_snap_put(s);
}

/* "log\tsyslog|stderr|PATH": where the lines of the daemon go. */
static void out_log_to(struct reply *r, const struct sfs_opts *o)
{
	char *path = o->log_to == SFS_LOG_TO_FILE ?
		     sfs_escape_dup(o->log_file, SFS_ESC_BACKSLASH) : NULL;

	if (o->log_to == SFS_LOG_TO_FILE && !path) {
		fail(r, ENOMEM, strerror(ENOMEM));
		return;
	}
	out(r, "log\t%s\n", path ? path : sfs_log_keeps_stderr() ? "stderr" : "syslog");
	free(path);
}

/* "last_error\tTIME\tLEVEL\tMESSAGE", TIME in seconds since the epoch. */
static void out_last_error(void *arg, const struct sfs_log_entry *e)
{
	struct reply *r = arg;
	char *msg = sfs_escape_dup(e->msg, SFS_ESC_BACKSLASH);

	if (!msg)
		return;
	out(r, "last_error\t%lld\t%s\t%s\n", (long long)e->time,
	    e->level <= SFS_LOG_ERR ? "error" : "warning", msg);
	free(msg);
}

static void do_status(struct reply *r)
{
	const struct sfs_opts *o = &sfs_m.opts;
	char *stats = malloc(32768);
	char *mp = sfs_escape_dup(o->mountpoint, SFS_ESC_BACKSLASH);
	unsigned budget = sfs_fdcache_budget();
	int n = stats ? sfs_stats_format(stats, 32768, sfs_fdcache_count(),
					 budget == ~0u ? 0 : budget) : -ENOMEM;

	if (mp)
		out(r, "mountpoint\t%s\nwhiteout\t%s\nformat_version\t1\ntimeout\t%g\nsync\t%s\n"
		    "fsync\t%d\npassthrough\t%s\n",
		    mp, o->whiteout == SFS_WH_OVERLAY ? "overlay" : "wh", o->timeout,
		    o->sync == SFS_SYNC_ALWAYS ? "always" :
		    o->sync == SFS_SYNC_VOLATILE ? "volatile" : "normal",
		    o->sync == SFS_SYNC_ALWAYS, sfs_pt_active() ? "on" : "off");
	else
		fail(r, ENOMEM, strerror(ENOMEM));
	out(r, "uring\t%s\n", sfs_uring_active() ? "on" : "off");
	out(r, "coherent\t%s\n", sfs_coherent_kind());
	if (sfs_coherent_on())
		out(r, "coherent_events\t%llu\ncoherent_notifications\t%llu\n"
		    "coherent_overflows\t%llu\n",
		    (unsigned long long)atomic_load(&sfs_coh_stats.events),
		    (unsigned long long)atomic_load(&sfs_coh_stats.notifications),
		    (unsigned long long)atomic_load(&sfs_coh_stats.overflows));
	if (sfs_coh_ino) {
		uint64_t watches, refused;

		sfs_cohino_counts(&watches, &refused);
		out(r, "coherent_watches\t%llu\ncoherent_watches_refused\t%llu\n",
		    (unsigned long long)watches, (unsigned long long)refused);
	}
	out_log_to(r, o);
	list_branches(r, "branch\t");
	if (n > 0)
		out(r, "%.*s", n, stats);
	sfs_log_recent(out_last_error, r);
	free(mp);
	free(stats);
}

/* A branch named by path or id in the current snapshot. */
static int find_branch(const char *what, unsigned *idx)
{
	struct sfs_snap *s = sfs_snap_current();
	char *canon = realpath(what, NULL), *end;
	unsigned long id = strtoul(what, &end, 10);
	int ret = -ENOENT;

	for (unsigned i = 0; i < s->n && ret; i++) {
		if ((canon && strcmp(s->b[i]->path, canon) == 0) ||
		    (!*end && end != what && s->b[i]->id == id)) {
			*idx = i;
			ret = 0;
		}
	}
	sfs_snap_put(s);
	free(canon);
	return ret;
}

static int parse_mode(const char *m, enum sfs_branch_mode *mode)
{
	if (!strcmp(m, "rw"))
		*mode = SFS_BRANCH_RW;
	else if (!strcmp(m, "ro"))
		*mode = SFS_BRANCH_RO;
	else
		return -EINVAL;
	return 0;
}

/* "top", "bottom" or an index from 0 (top) to the number of branches
 * (bottom): decimal digits only, so "-1" or " 1" never wrap or round. */
static int parse_position(const char *p, unsigned *pos, struct reply *r)
{
	struct sfs_snap *s = sfs_snap_current();
	unsigned n = s->n;
	unsigned long v;
	int ret = 0;

	sfs_snap_put(s);
	if (!strcmp(p, "top")) {
		*pos = 0;
	} else if (!strcmp(p, "bottom")) {
		*pos = n;
	} else if (!*p || strspn(p, "0123456789") != strlen(p) || strlen(p) > 9) {
		sfs_msg_fit(r->msg, sizeof(r->msg), "bad position '%s' (a number, top or bottom)", p);
		ret = -EINVAL;
	} else if ((v = strtoul(p, NULL, 10)) > n) {
		sfs_msg_fit(r->msg, sizeof(r->msg), "position %lu is past the bottom (0..%u)", v, n);
		ret = -EINVAL;
	} else {
		*pos = (unsigned)v;
	}
	if (ret)
		r->err = -ret;
	return ret;
}

/* Builds the change a request asks for. */
static int parse_change(char **w, int nw, struct sfs_change *c, bool *force,
			struct reply *r)
{
	memset(c, 0, sizeof(*c));
	*force = false;
	if (!strcmp(w[0], "add") && nw == 4) {
		c->op = SFS_CHANGE_ADD;
		c->path = w[1];
		if (parse_mode(w[2], &c->mode) < 0) {
			fail(r, EINVAL, "bad mode (rw or ro)");
			return -EINVAL;
		}
		return parse_position(w[3], &c->index, r);
	}
	if ((!strcmp(w[0], "remove") || !strcmp(w[0], "mode")) && nw == 3) {
		c->op = !strcmp(w[0], "remove") ? SFS_CHANGE_REMOVE : SFS_CHANGE_MODE;
		if (find_branch(w[1], &c->index) < 0) {
			sfs_msg_fit(r->msg, sizeof(r->msg), "%s: not a branch of this mount", w[1]);
			r->err = ENOENT;
			return -ENOENT;
		}
		*force = c->op == SFS_CHANGE_REMOVE && !strcmp(w[2], "1");
		if (c->op == SFS_CHANGE_MODE && parse_mode(w[2], &c->mode) < 0) {
			fail(r, EINVAL, "bad mode (rw or ro)");
			return -EINVAL;
		}
		return 0;
	}
	fail(r, EINVAL, "unknown request");
	return -EINVAL;
}

/* The peer's uid, or (uid_t)-1 when the socket does not say. */
static uid_t peer_uid(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return (uid_t)-1;
	return cred.uid;
}

static bool may_change(uid_t uid)
{
	return uid == 0 || uid == getuid();
}

static void do_change(char **w, int nw, struct reply *r)
{
	struct sfs_change c;
	bool force;

	pthread_mutex_lock(&change_lock);
	if (parse_change(w, nw, &c, &force, r) == 0) {
		int ret = sfs_branches_change(&c, force, r->msg, sizeof(r->msg));

		if (ret < 0)
			r->err = -ret;
	}
	pthread_mutex_unlock(&change_lock);
}

static void handle(bool privileged, char **w, int nw, struct reply *r)
{
	if (nw == 1 && !strcmp(w[0], "list"))
		list_branches(r, "");
	else if (nw == 1 && !strcmp(w[0], "status"))
		do_status(r);
	else if (!privileged)
		fail(r, EPERM, "only root and the user who mounted may change branches");
	else
		do_change(w, nw, r);
}

static long long now_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec * 1000LL + now.tv_nsec / 1000000;
}

/* Milliseconds left until deadline (a now_ms() time), 0 if none. */
static int ms_left(long long deadline)
{
	long long left = deadline - now_ms();

	return left > 0 ? (int)left : 0;
}

/* Waits until fd is ready for events or the deadline passes: 0 ready,
 * -ETIMEDOUT, or -errno. */
static int wait_fd(int fd, short events, long long deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	int left, n;

	do {
		left = ms_left(deadline);
		if (left == 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, left);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == 0 ? -ETIMEDOUT : 0;
}

/* Reads a request: NUL-ended words, then an empty one, all of it before
 * the deadline (a slow client must not hold the channel: see control.h). */
static int read_request(int fd, char *buf, size_t cap, char **w, int maxw, long long deadline)
{
	size_t len = 0;
	int nw = 0;

	while (len < cap) {
		int ret = wait_fd(fd, POLLIN, deadline);
		ssize_t n;

		if (ret < 0)
			return ret;
		n = recv(fd, buf + len, cap - len, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			return -EPROTO;
		len += (size_t)n;
		if (len >= 2 && buf[len - 1] == '\0' && buf[len - 2] == '\0')
			break;
	}
	if (len < 2 || buf[len - 1] || buf[len - 2])
		return -EPROTO;
	for (size_t p = 0; p < len - 1 && nw < maxw; p += strlen(buf + p) + 1)
		w[nw++] = buf + p;
	return nw > 0 ? nw : -EPROTO;
}

/* Writes all of buf before the deadline: 0, -ETIMEDOUT or -errno. */
static int send_all(int fd, const char *buf, size_t len, long long deadline)
{
	while (len) {
		int ret = wait_fd(fd, POLLOUT, deadline);
		ssize_t n;

		if (ret < 0)
			return ret;
		n = send(fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static void serve_one(int fd, bool privileged)
{
	struct reply r = { .cap = 4096 };
	char buf[SFS_CTL_MAX_REQUEST], *w[16], msg[4 * sizeof(r.msg)], head[sizeof(msg) + 64];
	int nw, n;

	r.buf = malloc(r.cap);
	nw = read_request(fd, buf, sizeof(buf), w, 16, now_ms() + SFS_CTL_REQUEST_MS);
	if (!r.buf)
		fail(&r, ENOMEM, strerror(ENOMEM));
	else if (nw == -ETIMEDOUT)
		fail(&r, ETIMEDOUT, "request not complete in time");
	else if (nw < 0)
		fail(&r, EPROTO, "malformed request");
	else
		handle(privileged, w, nw, &r);
	/* the message is made one line where it is written; this is a guard */
	sfs_escape(msg, sizeof(msg), r.msg, 0);
	if (r.err)
		n = snprintf(head, sizeof(head), "ERR %s %s\n", strerrorname_np(r.err) ?: "EIO", msg);
	else
		n = snprintf(head, sizeof(head), "OK\n");
	/* the reply gets its own time: the work above was not the client's */
	long long deadline = now_ms() + SFS_CTL_REPLY_MS;

	if (send_all(fd, head, (size_t)n, deadline) == 0 && !r.err && r.len &&
	    send_all(fd, r.buf, r.len, deadline) < 0)
		sfs_log(SFS_LOG_WARN, "control: reply not taken in time or cut short");
	free(r.buf);
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;

	serve_one(c->fd, c->privileged);
	pthread_mutex_lock(&slots_lock);
	/* closed under the lock: stop may shut down the fd of a BUSY slot */
	close(c->fd);
	c->fd = -1;
	c->state = SLOT_DONE;
	busy--;
	if (!c->privileged)
		busy_unpriv--;
	pthread_cond_broadcast(&slot_done);
	pthread_mutex_unlock(&slots_lock);
	return NULL;
}

/* Joins the threads of DONE slots (they have returned or are about to:
 * nothing is left for them but the return). Under slots_lock. */
static void reap_done(void)
{
	for (unsigned i = 0; i < SFS_CTL_MAX_CONN; i++) {
		if (slots[i].state != SLOT_DONE)
			continue;
		pthread_join(slots[i].tid, NULL);
		slots[i].state = SLOT_FREE;
	}
}

/* A connection not served: one ERR line if the socket takes it at once,
 * then closed. The client may try again. */
static void refuse(int fd, const char *why)
{
	char line[256];
	int n = snprintf(line, sizeof(line), "ERR EAGAIN %s\n", why);

	if (send(fd, line, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		sfs_log(SFS_LOG_DEBUG, "control: refusal not sent: %s", strerror(errno));
	close(fd);
}

/* Connections of unprivileged user uid being served. Under slots_lock. */
static unsigned busy_of(uid_t uid)
{
	unsigned n = 0;

	for (unsigned i = 0; i < SFS_CTL_MAX_CONN; i++)
		n += slots[i].state == SLOT_BUSY && !slots[i].privileged && slots[i].uid == uid;
	return n;
}

/* Serves fd in a thread of its own. Peers who may not change branches
 * share SFS_CTL_MAX_UNPRIV slots, each user at most SFS_CTL_MAX_PER_USER
 * of them, and are refused past that, so the other slots stay free for
 * root and the mounting user, who wait for one only when they fill them
 * themselves. */
static void dispatch(int fd, uid_t uid)
{
	bool privileged = may_change(uid);
	const char *why = NULL;
	struct conn *c = NULL;

	pthread_mutex_lock(&slots_lock);
	reap_done();
	if (!privileged && (busy_unpriv >= SFS_CTL_MAX_UNPRIV ||
			    busy_of(uid) >= SFS_CTL_MAX_PER_USER))
		why = "too many connections at once, try again";
	while (!why && busy == SFS_CTL_MAX_CONN && !stopping) {
		pthread_cond_wait(&slot_done, &slots_lock);
		reap_done();
	}
	for (unsigned i = 0; !why && !c && i < SFS_CTL_MAX_CONN; i++)
		if (slots[i].state == SLOT_FREE)
			c = &slots[i];
	if (!why && !c)
		why = "shutting down";
	if (c) {
		*c = (struct conn){ .fd = fd, .privileged = privileged, .uid = uid,
				    .state = SLOT_BUSY };
		if (pthread_create(&c->tid, NULL, conn_main, c) != 0) {
			c->state = SLOT_FREE;
			why = "cannot start a thread, try again";
		} else {
			busy++;
			busy_unpriv += !privileged;
		}
	}
	pthread_mutex_unlock(&slots_lock);
	if (why)
		refuse(fd, why);
}

/* Waits for the next connection; -errno when the server should stop. A
 * transient failure (out of fds or memory) waits a little and tries
 * again rather than ending the control channel for the mount's life. */
static int accept_one(void)
{
	for (;;) {
		int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

		if (fd >= 0)
			return fd;
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno != EMFILE && errno != ENFILE && errno != ENOBUFS && errno != ENOMEM)
			return -errno; /* shut down */
		pthread_mutex_lock(&slots_lock);
		bool stop = stopping;
		pthread_mutex_unlock(&slots_lock);
		if (stop)
			return -EINVAL;
		poll(NULL, 0, 100);
	}
}

static void *server_main(void *arg)
{
	int fd;

	while ((fd = accept_one()) >= 0)
		dispatch(fd, peer_uid(fd));
	return NULL;
}

int sfs_control_start(void)
{
	const char *dir = sfs_runtime_dir();
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int ret;

	if (!dir || asprintf(&sock_path, "%s/%s", dir, SFS_CTL_NAME) < 0 ||
	    strlen(sock_path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, sock_path);
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd < 0)
		return -errno;
	unlink(sock_path);
	/* anyone may connect (list, status); changes check the peer */
	if (bind(listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    lstat(sock_path, &sock_st) < 0 ||
	    chmod(sock_path, 0666) < 0 || listen(listen_fd, 8) < 0) {
		ret = -errno;
		close(listen_fd);
		listen_fd = -1;
		return ret;
	}
	ret = -pthread_create(&server, NULL, server_main, NULL);
	return ret;
}

/* Removes sock_path if it is still the socket we bound: a new mount's
 * daemon may have bound its own there since our mount went (seen with
 * mounts made and removed side by side: the next mount's control
 * channel vanished). What is left of the race is the instant between the
 * lstat and the unlink, not the time from our unmount to here. */
static void unlink_own_socket(void)
{
	struct stat st;

	if (lstat(sock_path, &st) == 0 && st.st_dev == sock_st.st_dev &&
	    st.st_ino == sock_st.st_ino)
		unlink(sock_path);
}

void sfs_control_stop(void)
{
	if (listen_fd < 0)
		return;
	pthread_mutex_lock(&slots_lock);
	stopping = true;
	pthread_cond_broadcast(&slot_done);
	pthread_mutex_unlock(&slots_lock);
	shutdown(listen_fd, SHUT_RDWR);
	pthread_join(server, NULL);
	/* cut the connections still served short (their reads and sends
	 * fail at once) and wait for every thread */
	pthread_mutex_lock(&slots_lock);
	for (unsigned i = 0; i < SFS_CTL_MAX_CONN; i++)
		if (slots[i].state == SLOT_BUSY)
			shutdown(slots[i].fd, SHUT_RDWR);
	while (busy)
		pthread_cond_wait(&slot_done, &slots_lock);
	reap_done();
	stopping = false;
	pthread_mutex_unlock(&slots_lock);
	close(listen_fd);
	listen_fd = -1;
	unlink_own_socket();
	free(sock_path);
	sock_path = NULL;
}
