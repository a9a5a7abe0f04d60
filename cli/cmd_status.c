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

/* The lines of body, split in place (malloc'd, NULL-ended), or NULL. */
static char **split_lines(char *body)
{
	size_t n = 1, i = 0;
	char **v, *save = NULL;

	for (const char *p = body; *p; p++)
		n += *p == '\n';
	v = calloc(n + 1, sizeof(*v));
	if (!v)
		return NULL;
	for (char *l = strtok_r(body, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		v[i++] = l;
	return v;
}

/* Key lines as keys; a value that is not a plain number as a string. */
static void print_json_keys(char **lines)
{
	bool first = true;

	for (char **l = lines; *l; l++) {
		char *tab = strchr(*l, '\t');

		if (!tab || !strncmp(*l, "branch\t", 7))
			continue;
		*tab++ = '\0';
		fputs(first ? "" : ",", stdout);
		sfs_json_str(stdout, *l);
		putchar(':');
		if (is_json_number(tab))
			fputs(tab, stdout);
		else
			sfs_json_field(stdout, tab);
		first = false;
	}
	if (!first)
		putchar(',');
}

/* Every branch line, however many; a malformed one is left out with a
 * warning, and the array stays valid. */
static void print_json_branches(char **lines)
{
	bool first = true;

	fputs("\"branches\":[", stdout);
	for (char **l = lines; *l; l++) {
		struct sfs_branch_row r;

		if (strncmp(*l, "branch\t", 7))
			continue;
		if (sfs_branch_row(*l + 7, &r) < 0) {
			fprintf(stderr, "stackfs: status: malformed branch line in the reply, left out\n");
			continue;
		}
		fputs(first ? "" : ",", stdout);
		sfs_json_branch(stdout, &r);
		first = false;
	}
	putchar(']');
}

/* Branch lines become an array, the rest keys. */
static int print_json(char *body)
{
	char **lines = split_lines(body);

	if (!lines)
		return -ENOMEM;
	putchar('{');
	print_json_keys(lines);
	print_json_branches(lines);
	puts("}");
	free(lines);
	return 0;
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
	ret = 0;
	if (json)
		ret = print_json(body);
	else
		print_text(body);
	free(body);
	if (ret < 0) {
		fprintf(stderr, "stackfs: status: %s\n", strerror(-ret));
		return SFS_EXIT_FAIL;
	}
	return SFS_EXIT_OK;
}

const struct sfs_cmd sfs_cmd_status = {
	.name = "status",
	.run = run,
	.usage = "usage: stackfs status MOUNTPOINT [--json]",
	.summary = "Show the branches, options and counters of a live mount",
	.help = "Counters: lookups, copy-ups and bytes copied, whiteouts written, open\n"
		"files, the node fds held, their budget (0: none) and reopens, and\n"
		"errors returned, by errno name.\n",
};
