/* Output helpers of the command: JSON strings, fields of control
 * replies, sizes for people. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/escape.h"

/* The length of the UTF-8 sequence at p (1 to 4), or 0 if it is not
 * well-formed: strict, as RFC 3629 says (no overlong forms, no UTF-16
 * surrogates, nothing past U+10FFFF), so what passes is what any JSON
 * parser takes as UTF-8. */
static int utf8_len(const unsigned char *p)
{
	unsigned char lo = 0x80, hi = 0xBF;
	int len;

	if (*p < 0x80)
		return 1;
	if (*p >= 0xC2 && *p <= 0xDF)
		len = 2;
	else if (*p >= 0xE0 && *p <= 0xEF)
		len = 3;
	else if (*p >= 0xF0 && *p <= 0xF4)
		len = 4;
	else
		return 0;
	if (*p == 0xE0)
		lo = 0xA0;
	else if (*p == 0xED)
		hi = 0x9F;
	else if (*p == 0xF0)
		lo = 0x90;
	else if (*p == 0xF4)
		hi = 0x8F;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (int i = 2; i < len; i++)
		if ((p[i] & 0xC0) != 0x80)
			return 0;
	return len;
}

/* Every JSON string of the command goes through here. Paths are bytes,
 * not text: well-formed UTF-8 passes as it is; a byte that is not part
 * of it (0x80..0xFF) becomes \udcXX, the lone surrogate Python's
 * "surrogateescape" uses, so the exact bytes come back with
 * s.encode("utf-8", "surrogateescape") and no valid name can produce the
 * same string (UTF-8 cannot encode a surrogate). Control characters and
 * DEL are \u00XX; NULL is null. */
void sfs_json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	while (*p) {
		int len = utf8_len(p);

		if (len == 0)
			fprintf(f, "\\udc%02x", *p++);
		else if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p++);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p++);
		else {
			fwrite(p, 1, (size_t)len, f);
			p += len;
		}
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

static bool all_digits(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s);
}

/* A branch line of a list or status reply, "pos\tpath\tmode\tid\tfstype
 * \tfree_bytes[\tworkdir]", split in place (a daemon before the workdir
 * field sent six). Its numbers go into JSON as they are, so a line whose
 * numbers are not plain digits is refused (-EPROTO) rather than printed
 * as something no parser takes. */
int sfs_branch_row(char *line, struct sfs_branch_row *r)
{
	char *f[7] = { 0 };

	for (int i = 0; i < 7 && line; i++) {
		f[i] = line;
		line = strchr(line, '\t');
		if (line)
			*line++ = '\0';
	}
	if (!f[5] || !all_digits(f[0]) || !all_digits(f[3]) || !all_digits(f[5]))
		return -EPROTO;
	r->pos = f[0];
	r->path = f[1];
	r->mode = f[2];
	r->id = f[3];
	r->fstype = f[4];
	r->free_bytes = f[5];
	r->workdir = f[6] && strcmp(f[6], "-") ? f[6] : NULL;
	return 0;
}

void sfs_json_branch(FILE *f, const struct sfs_branch_row *r)
{
	fprintf(f, "{\"position\":%s,\"path\":", r->pos);
	sfs_json_field(f, r->path);
	fputs(",\"mode\":", f);
	sfs_json_str(f, r->mode);
	fprintf(f, ",\"id\":%s,\"fstype\":", r->id);
	sfs_json_field(f, r->fstype);
	fprintf(f, ",\"free_bytes\":%s,\"workdir\":", r->free_bytes);
	if (r->workdir)
		sfs_json_field(f, r->workdir);
	else
		fputs("null", f);
	fputc('}', f);
}
