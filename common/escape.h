/* Escaping for text that must stay on one line or in one field: control
 * replies, listings, error messages. Linked by the daemon and the command
 * (and included by the fuzz targets with the parsers that use it). */
#ifndef SFS_ESCAPE_H
#define SFS_ESCAPE_H

#include <stdarg.h>
#include <stddef.h>

/* What sfs_escape turns into \ooo besides control characters (bytes
 * below 0x20 and 0x7f), which it always escapes. */
#define SFS_ESC_BACKSLASH 1 /* '\': needed whenever the text is unescaped again */
#define SFS_ESC_SPACE     2 /* ' ': for space-separated columns, as /proc/mounts */

/* Writes src to dst with octal escapes, as /proc/mounts does (a tab is
 * \011, a newline \012); always NUL-terminates when dstlen > 0 and never
 * cuts an escape. Returns the length the whole escaped text needs, like
 * snprintf. */
size_t sfs_escape(char *dst, size_t dstlen, const char *src, int flags);

/* The same into a malloc'd string; NULL on ENOMEM. */
char *sfs_escape_dup(const char *src, int flags);

/* Undoes sfs_escape in place: each \ooo (three octal digits, not \000)
 * becomes its byte; any other backslash stays as it is. */
void sfs_unescape(char *s);

/* A one-line message for people: fmt formatted, control characters
 * escaped (a path with a newline stays on its line) and, when it does not
 * fit in dstlen, shortened in the middle with "..." so that its start
 * (what failed) and its end (why) both survive a path of any length. */
void sfs_msg_fit(char *dst, size_t dstlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void sfs_msg_vfit(char *dst, size_t dstlen, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* Prints "stackfs: MESSAGE" and a newline on stderr, the message made one
 * line and at most SFS_MSG_MAX bytes by sfs_msg_vfit. */
#define SFS_MSG_MAX 2048
void sfs_errmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
