/* The progress line of long commands (fsck, diff, commit): one line on a
 * terminal's stderr, rewritten in place at most ten times a second,
 * erased before any other message and at the end; nothing when stderr is
 * not a terminal. */
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli/progress.h"

#define INTERVAL_NS 100000000LL /* at most ten updates a second */

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void sfs_progress_init(struct sfs_progress *p, long long delay_ns)
{
	memset(p, 0, sizeof(*p));
	p->tty = isatty(STDERR_FILENO);
	p->start_ns = now_ns();
	p->delay_ns = delay_ns;
}

bool sfs_progress_due(struct sfs_progress *p)
{
	long long t;

	if (!p->tty)
		return false;
	t = now_ns();
	if (t - p->start_ns < p->delay_ns || (p->shown && t - p->last_ns < INTERVAL_NS))
		return false;
	p->last_ns = t;
	return true;
}

/* The path keeps its end (the name being worked on) when the line would
 * be wider than the terminal. */
void sfs_progress_show(struct sfs_progress *p, const char *prefix, const char *path)
{
	struct winsize ws;
	int width = 80, room;
	size_t len = strlen(path);

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20)
		width = ws.ws_col;
	room = width - (int)strlen(prefix) - 1;
	if (room < 10)
		room = 10;
	if ((int)len > room)
		fprintf(stderr, "\r\033[K%s...%s", prefix, path + len - (size_t)room + 3);
	else
		fprintf(stderr, "\r\033[K%s%s", prefix, path);
	fflush(stderr);
	p->shown = true;
}

void sfs_progress_erase(struct sfs_progress *p)
{
	if (p->shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		p->shown = false;
	}
}
