/* cohlat: how long a change made directly in a lower branch takes to show
 * in the view of a stackfs mount (-o coherent).
 *
 *   cohlat [-n COUNT] [-t TIMEOUT_MS] LOWERDIR VIEWDIR KIND
 *     KIND: create, content, attr, delete, rename
 *     LOWERDIR is a directory of a read-only branch, VIEWDIR the same
 *     directory seen through the mount.
 *
 * Each of COUNT rounds (default 200) first makes the view cache the old
 * state (a stat, or a read of the file through an fd kept open: an open
 * would refresh it), then changes the lower branch,
 * then polls the view (every 100 us) until it shows the change. Prints
 *   KIND n=COUNT median_ms=M p99_ms=P max_ms=X
 * and exits 0; exits 1 with "KIND: round R: not seen within T ms" when a
 * change does not show within TIMEOUT_MS (default 5000): without
 * -o coherent and with a long timeout=, that is what happens. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *lo, *view;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void path(char *buf, const char *dir, const char *fmt, int i)
{
	char name[64];

	snprintf(name, sizeof(name), fmt, i);
	snprintf(buf, 4096, "%s/%s", dir, name);
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static void put(const char *p, const char *data)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || write(fd, data, strlen(data)) != (ssize_t)strlen(data) || close(fd))
		die(p);
}

/* The view's file "f", open for the whole run: an open refreshes the
 * kernel's attributes, data read through an fd kept open is what its
 * cache holds. */
static int view_fd = -1;

/* The first 16 bytes of f through the view, or "". */
static void get(const char *p, char out[17])
{
	ssize_t n;

	if (view_fd < 0 && (view_fd = open(p, O_RDONLY)) < 0)
		die(p);
	n = pread(view_fd, out, 16, 0);
	out[n > 0 ? n : 0] = '\0';
}

static int exists(const char *p)
{
	struct stat st;

	return lstat(p, &st) == 0;
}

/* Round i: caches the old state, changes the branch. Returns nothing;
 * seen() says when the view shows it. */
static void change(const char *kind, int i)
{
	char l[4096], v[4096], l2[4096], buf[17];
	struct stat st;

	if (!strcmp(kind, "create")) {
		path(l, lo, "c%d", i);
		path(v, view, "c%d", i);
		exists(v); /* a negative entry cached */
		put(l, "new\n");
	} else if (!strcmp(kind, "content")) {
		path(l, lo, "f", 0);
		path(v, view, "f", 0);
		get(v, buf);
		snprintf(buf, sizeof(buf), "%08d\n", i + 1);
		/* in place, same size: only the data says it changed */
		int fd = open(l, O_WRONLY);
		if (fd < 0 || pwrite(fd, buf, 9, 0) != 9 || close(fd))
			die(l);
	} else if (!strcmp(kind, "attr")) {
		path(l, lo, "f", 0);
		path(v, view, "f", 0);
		lstat(v, &st);
		if (chmod(l, i % 2 ? 0644 : 0600))
			die(l);
	} else if (!strcmp(kind, "delete")) {
		path(l, lo, "d%d", i);
		path(v, view, "d%d", i);
		exists(v);
		if (unlink(l))
			die(l);
	} else if (!strcmp(kind, "rename")) {
		path(l, lo, "r%d", i);
		path(l2, lo, "r%d.moved", i);
		path(v, view, "r%d", i);
		exists(v);
		path(v, view, "r%d.moved", i);
		exists(v);
		if (rename(l, l2))
			die(l);
	}
}

static int seen(const char *kind, int i)
{
	char v[4096], buf[17], want[17];
	struct stat st;

	if (!strcmp(kind, "create")) {
		path(v, view, "c%d", i);
		return exists(v);
	}
	if (!strcmp(kind, "content")) {
		path(v, view, "f", 0);
		get(v, buf);
		snprintf(want, sizeof(want), "%08d\n", i + 1);
		return !strcmp(buf, want);
	}
	if (!strcmp(kind, "attr")) {
		path(v, view, "f", 0);
		return lstat(v, &st) == 0 && (st.st_mode & 0777) == (i % 2 ? 0644u : 0600u);
	}
	if (!strcmp(kind, "delete")) {
		path(v, view, "d%d", i);
		return !exists(v) && errno == ENOENT;
	}
	path(v, view, "r%d.moved", i);
	if (!exists(v))
		return 0;
	path(v, view, "r%d", i);
	return !exists(v);
}

/* What the rounds need in the branch before any is timed. */
static void prepare(const char *kind, int count)
{
	char l[4096];

	path(l, lo, "f", 0);
	put(l, "00000000\n");
	for (int i = 0; i < count; i++) {
		if (!strcmp(kind, "delete") || !strcmp(kind, "rename")) {
			path(l, lo, !strcmp(kind, "delete") ? "d%d" : "r%d", i);
			put(l, "x\n");
		}
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int count = 200, timeout = 5000, c;
	const char *kind;
	double *lat;

	while ((c = getopt(argc, argv, "n:t:")) != -1) {
		if (c == 'n')
			count = atoi(optarg);
		else if (c == 't')
			timeout = atoi(optarg);
		else
			return 2;
	}
	if (argc - optind != 3 || count < 1) {
		fprintf(stderr, "usage: cohlat [-n COUNT] [-t TIMEOUT_MS] LOWERDIR VIEWDIR "
			"create|content|attr|delete|rename\n");
		return 2;
	}
	lo = argv[optind];
	view = argv[optind + 1];
	kind = argv[optind + 2];
	lat = calloc(count, sizeof(*lat));
	if (!lat)
		die("calloc");
	prepare(kind, count);
	/* the view caches the prepared state first (it may itself be seen
	 * late without -o coherent: waited for here, untimed) */
	usleep(200 * 1000);
	for (int i = 0; i < count; i++) {
		double t0;

		change(kind, i);
		t0 = now_ms();
		while (!seen(kind, i)) {
			if (now_ms() - t0 > timeout) {
				printf("%s: round %d: not seen within %d ms\n", kind, i, timeout);
				return 1;
			}
			usleep(100);
		}
		lat[i] = now_ms() - t0;
	}
	qsort(lat, count, sizeof(*lat), cmp);
	printf("%s n=%d median_ms=%.2f p99_ms=%.2f max_ms=%.2f\n", kind, count,
	       lat[count / 2], lat[(count * 99) / 100 < count ? (count * 99) / 100 : count - 1],
	       lat[count - 1]);
	free(lat);
	return 0;
}
