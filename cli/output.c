/* Output helpers of the command: JSON strings, fields of control
 * replies, sizes for people. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "stackfs/escape.h"

void sfs_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

void sfs_human_size(unsigned long long v, char *buf, size_t len)
{
	static const char units[] = "BKMGTPE";
	double d = (double)v;
	int u = 0;

	while (d >= 1024 && units[u + 1]) {
		d /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%lluB", v);
	else
		snprintf(buf, len, "%.1f%c", d, units[u]);
}

void sfs_json_field(FILE *f, const char *field)
{
	char *s = strdup(field);

	if (!s) {
		sfs_json_str(f, field);
		return;
	}
	sfs_unescape(s);
	sfs_json_str(f, s);
	free(s);
}

/* The daemon escaped control characters and backslashes; a column of
 * text escapes spaces as well, as /proc/mounts does. */
char *sfs_text_field(const char *field)
{
	char *s = strdup(field), *t;

	if (!s)
		return NULL;
	sfs_unescape(s);
	t = sfs_escape_dup(s, SFS_ESC_BACKSLASH | SFS_ESC_SPACE);
	free(s);
	return t;
}
