/* Logging: to stderr in the foreground, to syslog in the background.
 * Lines name the operation, branch, path and errno where they have one. */
#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>

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
