/* Octal escapes and one-line messages (escape.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/escape.h"

static int needs_escape(unsigned char c, int flags)
{
	return c < 0x20 || c == 0x7f || (c == '\\' && (flags & SFS_ESC_BACKSLASH)) ||
	       (c == ' ' && (flags & SFS_ESC_SPACE));
}

size_t sfs_escape(char *dst, size_t dstlen, const char *src, int flags)
{
	size_t n = 0;

	for (; *src; src++) {
		unsigned char c = (unsigned char)*src;
		size_t w = needs_escape(c, flags) ? 4 : 1;

		/* stop at the first byte that does not fit whole, and stay stopped */
		if (dst && n + w < dstlen) {
			if (w == 4)
				snprintf(dst + n, 5, "\\%03o", c);
			else
				dst[n] = (char)c;
		} else if (dst && n < dstlen) {
			dst[n] = '\0';
			dst = NULL;
		}
		n += w;
	}
	if (dst && dstlen)
		dst[n < dstlen ? n : dstlen - 1] = '\0';
	return n;
}

char *sfs_escape_dup(const char *src, int flags)
{
	size_t len = sfs_escape(NULL, 0, src, flags) + 1;
	char *s = malloc(len);

	if (s)
		sfs_escape(s, len, src, flags);
	return s;
}

static int is_octal(char c)
{
	return c >= '0' && c <= '7';
}

void sfs_unescape(char *s)
{
	char *d = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && is_octal(s[2]) && is_octal(s[3]) &&
		    (s[1] != '0' || s[2] != '0' || s[3] != '0')) {
			*d++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 4;
		} else {
			*d++ = *s++;
		}
	}
	*d = '\0';
}

/* Moves a cut point off the middle of an escape ("\ooo") or of a UTF-8
 * sequence: backwards (dir -1) or forwards (dir 1). */
static size_t cut_point(const char *s, size_t len, size_t at, int dir)
{
	for (size_t back = 1; back <= 3 && back <= at; back++) {
		if (s[at - back] == '\\') {
			at = dir < 0 ? at - back : at - back + 4;
			break;
		}
	}
	/* a UTF-8 sequence has at most 3 continuation bytes: stop there, in
	 * bytes that are no UTF-8 anyway */
	for (int k = 0; k < 3 && at > 0 && at < len && ((unsigned char)s[at] & 0xc0) == 0x80; k++)
		at = dir < 0 ? at - 1 : at + 1;
	return at > len ? len : at;
}

void sfs_msg_vfit(char *dst, size_t dstlen, const char *fmt, va_list ap)
{
	char *raw = NULL, *esc;
	size_t len, head, tail;

	if (!dst || !dstlen)
		return;
	if (vasprintf(&raw, fmt, ap) < 0 || !(esc = sfs_escape_dup(raw, 0))) {
		snprintf(dst, dstlen, "(no memory for the message)");
		free(raw);
		return;
	}
	len = strlen(esc);
	if (len < dstlen || dstlen < 16) {
		snprintf(dst, dstlen, "%s", esc);
	} else {
		/* the room left after "..." and the NUL: a third for the start,
		 * the rest for the end, where the reason is */
		head = cut_point(esc, len, (dstlen - 4) / 3, -1);
		tail = cut_point(esc, len, len - (dstlen - 4 - (dstlen - 4) / 3), 1);
		snprintf(dst, dstlen, "%.*s...%s", (int)head, esc, esc + tail);
	}
	free(esc);
	free(raw);
}

void sfs_msg_fit(char *dst, size_t dstlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sfs_msg_vfit(dst, dstlen, fmt, ap);
	va_end(ap);
}

void sfs_errmsg(const char *fmt, ...)
{
	char msg[SFS_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	sfs_msg_vfit(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "stackfs: %s\n", msg);
}
