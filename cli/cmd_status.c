/* stackfs status: the branches, options and counters of a live mount. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static void print_text(char *body)
{
	char *save = NULL;

	for (char *l = strtok_r(body, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(l, '\t');

		if (!tab)
			continue;
		*tab = '\0';
		printf("%-16s", l);
		/* each field as a column: tabs in paths came escaped */
		for (char *f = tab + 1, *next; f; f = next) {
			char *text;

			next = strchr(f, '\t');
			if (next)
				*next++ = '\0';
			text = sfs_text_field(f);
			printf(" %s", text ? text : f);
			free(text);
		}
		putchar('\n');
	}
}

/* Digits with at most one '.' between digits: a number JSON can take
 * as it is ("1.", ".5" or "1.2.3" would not parse). */
static bool is_json_number(const char *s)
{
	size_t a = strspn(s, "0123456789"), b;

	if (!a)
		return false;
	if (!s[a])
		return true;
	b = s[a] == '.' ? strspn(s + a + 1, "0123456789") : 0;
	return b && !s[a + 1 + b];
}

/* Branch lines become an array, errors an object, the rest keys. */
static void print_json(char *body)
{
	char *save = NULL, *branches[256];
	int nb = 0, first = 1;

	printf("{");
	for (char *l = strtok_r(body, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(l, '\t');

		if (!tab)
			continue;
		*tab++ = '\0';
		if (!strcmp(l, "branch")) {
			if (nb < 256)
				branches[nb++] = tab;
			continue;
		}
		printf("%s", first ? "" : ",");
		sfs_json_str(stdout, l);
		printf(":");
		if (is_json_number(tab))
			printf("%s", tab);
		else
			sfs_json_field(stdout, tab);
		first = 0;
	}
	printf("%s\"branches\":[", first ? "" : ",");
	for (int i = 0; i < nb; i++) {
		char *f[6] = { 0 }, *p = branches[i];

		for (int k = 0; k < 6 && p; k++) {
			f[k] = p;
			p = strchr(p, '\t');
			if (p)
				*p++ = '\0';
		}
		if (!f[5])
			continue;
		printf("%s{\"position\":%s,\"path\":", i ? "," : "", f[0]);
		sfs_json_field(stdout, f[1]);
		printf(",\"mode\":\"%s\",\"id\":%s,\"fstype\":\"%s\",\"free_bytes\":%s}", f[2], f[3], f[4], f[5]);
	}
	printf("]}\n");
}

static int run(int argc, char **argv)
{
	const char *w[] = { "status", NULL };
	const char *mp = NULL;
	bool json = false;
	char err[600], *body = NULL;
	int ret;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!mp && argv[i][0] != '-')
			mp = argv[i];
		else
			return sfs_cli_usage_error(&sfs_cmd_status, "unexpected '%s'", argv[i]);
	}
	if (!mp)
		return sfs_cli_usage_error(&sfs_cmd_status, "missing MOUNTPOINT");
	ret = sfs_ctl_call(mp, w, &body, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "stackfs: status: %s (%s)\n", err, strerror(-ret));
		return SFS_EXIT_FAIL;
	}
	if (json)
		print_json(body);
	else
		print_text(body);
	free(body);
	return SFS_EXIT_OK;
}

const struct sfs_cmd sfs_cmd_status = {
	.name = "status",
	.run = run,
	.usage = "usage: stackfs status MOUNTPOINT [--json]",
	.summary = "Show the branches, options and counters of a live mount",
	.help = "Counters: lookups, copy-ups and bytes copied, whiteouts written, open\n"
		"files, and errors returned, by errno name.\n",
};
