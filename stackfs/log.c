/* Logging: to stderr in the foreground, to syslog in the background.
 * Lines name the operation, branch, path and errno where they have one. */
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "stackfs/stackfs.h"

static int foreground;
static int debug;

void sfs_log_set_foreground(int fg, int dbg)
{
	foreground = fg;
	debug = dbg;
	if (!fg)
		openlog("stackfs", LOG_PID, LOG_DAEMON);
}

void sfs_log(int level, const char *fmt, ...)
{
	va_list ap;

	if (level == SFS_LOG_DEBUG && !debug)
		return;
	va_start(ap, fmt);
	if (foreground) {
		fputs("stackfs: ", stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	} else {
		vsyslog(level, fmt, ap);
	}
	va_end(ap);
}

void sfs_log_line(int level, const char *line)
{
	sfs_log(level, "%s", line);
}

/* A mount point inside a branch, met by a lookup (which answers EXDEV):
 * one line at most every 10 s, so that a find over the view or a program
 * retrying the name does not flood the log; the count says how many were
 * not logged. */
void sfs_log_mountpoint(const struct sfs_snap *s, const struct sfs_layer *dl,
			const char *name)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static time_t last;
	static unsigned long quiet;
	char path[PATH_MAX], more[64] = "";
	time_t now = time(NULL);

	pthread_mutex_lock(&lock);
	if (last && now - last < 10) {
		quiet++;
		pthread_mutex_unlock(&lock);
		return;
	}
	last = now;
	if (quiet)
		snprintf(more, sizeof(more), " [%lu more since the last line]", quiet);
	quiet = 0;
	pthread_mutex_unlock(&lock);
	if (sfs_layer_path(s, dl, path, sizeof(path)) < 0)
		snprintf(path, sizeof(path), "?");
	sfs_log(SFS_LOG_WARN, "branch %s: %s%s%s: a mount point inside the branch, not entered "
		"(lookups answer EXDEV)%s", s->b[dl->bidx]->path, path,
		strcmp(path, "/") ? "/" : "", name, more);
}
