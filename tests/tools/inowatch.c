/* inowatch: the inotify events of a directory, one a line.
 *
 *   inowatch DIR SECONDS
 *
 * Watches DIR (IN_CREATE, IN_DELETE, IN_MODIFY, IN_ATTRIB, IN_MOVED_FROM,
 * IN_MOVED_TO, IN_DELETE_SELF), prints "ready" once the watch is in
 * place, then "EVENT NAME" for each event, until SECONDS have passed.
 * Output is flushed line by line. Exits 2 when the watch fails. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

static const struct { unsigned bit; const char *name; } names[] = {
	{ IN_CREATE, "IN_CREATE" }, { IN_DELETE, "IN_DELETE" },
	{ IN_MODIFY, "IN_MODIFY" }, { IN_ATTRIB, "IN_ATTRIB" },
	{ IN_MOVED_FROM, "IN_MOVED_FROM" }, { IN_MOVED_TO, "IN_MOVED_TO" },
	{ IN_DELETE_SELF, "IN_DELETE_SELF" },
};

static void print(const struct inotify_event *e)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (e->mask & names[i].bit)
			printf("%s %s\n", names[i].name, e->len ? e->name : ".");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct timespec t0, t;
	int fd, secs;

	if (argc != 3) {
		fprintf(stderr, "usage: inowatch DIR SECONDS\n");
		return 2;
	}
	secs = atoi(argv[2]);
	fd = inotify_init1(IN_CLOEXEC);
	if (fd < 0 || inotify_add_watch(fd, argv[1], IN_CREATE | IN_DELETE | IN_MODIFY |
				       IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO |
				       IN_DELETE_SELF) < 0) {
		perror(argv[1]);
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec >= secs)
			break;
		if (poll(&p, 1, 100) <= 0)
			continue;
		n = read(fd, buf, sizeof(buf));
		for (char *q = buf; n > 0 && q < buf + n;) {
			const struct inotify_event *e = (const void *)q;

			print(e);
			q += sizeof(*e) + e->len;
		}
	}
	return 0;
}
