/* stackfs status: the branches, options and counters of a live mount. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "common/escape.h"

/* "last_error\tTIME\tLEVEL\tMESSAGE" as "  2026-12-03T10:11:12+0100
 * warning: MESSAGE", the message as the daemon logged it (one line). */
static void print_last_error(char *fields, bool *first)
{
	char *level = strchr(fields, '\t'), *msg = level ? strchr(level + 1, '\t') : NULL;
	char when[40];
	time_t t;
	struct tm tm;

	if (!msg)
		return;
	*level++ = '\0';
	*msg++ = '\0';
	t = (time_t)strtoll(fields, NULL, 10);
	if (!localtime_r(&t, &tm) || !strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S%z", &tm))
		snprintf(when, sizeof(when), "%s", fields);
	sfs_unescape(msg);
	if (*first)
		printf("last errors and warnings, oldest first:\n");
	*first = false;
	printf("  %s %s: %s\n", when, level, msg);
}

static void print_text(char *body)
{
	char *save = NULL;
	bool first_error = true;

	for (char *l = strtok_r(body, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(l, '\t');

		if (!tab)
			continue;
		*tab = '\0';
		if (!strcmp(l, "last_error")) {
			print_last_error(tab + 1, &first_error);
			continue;
		}
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

		if (!tab || !strncmp(*l, "branch\t", 7) || !strncmp(*l, "last_error\t", 11))
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

/* The last_error lines as an array of {"time", "level", "message"}. */
static void print_json_last_errors(char **lines)
{
	bool first = true;

	fputs("\"last_errors\":[", stdout);
	for (char **l = lines; *l; l++) {
		char *t, *level, *msg;

		if (strncmp(*l, "last_error\t", 11))
			continue;
		t = *l + 11;
		level = strchr(t, '\t');
		msg = level ? strchr(level + 1, '\t') : NULL;
		if (!msg || strspn(t, "0123456789") != (size_t)(level - t) || level == t) {
			fprintf(stderr, "stackfs: status: malformed last_error line in the reply, left out\n");
			continue;
		}
		*level++ = '\0';
		*msg++ = '\0';
		printf("%s{\"time\":%s,\"level\":", first ? "" : ",", t);
		sfs_json_str(stdout, level);
		fputs(",\"message\":", stdout);
		sfs_json_field(stdout, msg);
		putchar('}');
		first = false;
	}
	fputs("],", stdout);
}

/* Branch and last_error lines become arrays, the rest keys. */
static int print_json(char *body)
{
	char **lines = split_lines(body);

	if (!lines)
		return -ENOMEM;
	putchar('{');
	print_json_keys(lines);
	print_json_last_errors(lines);
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

	ret = sfs_cli_mp_args(&sfs_cmd_status, "", argc, argv, &json, &mp);
	if (ret)
		return ret;
	ret = sfs_ctl_call(mp, w, &body, err, sizeof(err));
	if (ret < 0) {
		sfs_cli_ctl_error("status", NULL, err, ret);
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

static const struct sfs_flag status_flags[] = {
	{ NULL, "--json", NULL, "print one JSON object on stdout\n" },
	{ 0 }
};

const struct sfs_cmd sfs_cmd_status = {
	.name = "status",
	.run = run,
	.usage = "usage: stackfs status MOUNTPOINT [--json]",
	.summary = "Show the branches, options and counters of a live mount",
	.help = "Counters: lookups, copy-ups and bytes copied, whiteouts written, open\n"
		"files, the node fds held, their budget (0: none) and reopens, and the\n"
		"requests answered with an error, by errno name: failures (error.EIO,\n"
		"error.ENOSPC...; each is logged) apart from expected answers\n"
		"(answer.ENOENT, answer.ENODATA...). Then where the daemon logs (log)\n"
		"and the last errors and warnings it logged.\n",
	.flags = status_flags,
};
