/* Output helpers of the command: JSON strings, sizes for people. */
#include <stdio.h>

#include "cli/cli.h"

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
