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
		for (char *t = strchr(tab + 1, '\t'); t; t = strchr(t, '\t'))
			*t = ' ';
		printf("%-16s %s\n", l, tab + 1);
	}
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
		if (strspn(tab, "0123456789.") == strlen(tab) && *tab)
			printf("%s", tab);
		else
			sfs_json_str(stdout, tab);
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
		sfs_json_str(stdout, f[1]);
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
