/* stackfs branch list|add|remove|mode: the branches of a live mount,
 * through the daemon's control channel. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* A malformed line (none from a daemon of this version) is left out with
 * a warning, and the JSON array stays valid. */
static void print_list(char *body, bool json)
{
	char *save = NULL, size[32];
	bool first = true;

	if (json)
		printf("[");
	else
		printf("%-4s %-40s %-4s %-4s %-8s %s\n", "POS", "PATH", "MODE", "ID", "FSTYPE", "FREE");
	for (char *l = strtok_r(body, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		struct sfs_branch_row r;

		if (sfs_branch_row(l, &r) < 0) {
			fprintf(stderr, "stackfs: branch list: malformed line in the reply, left out\n");
			continue;
		}
		if (json) {
			fputs(first ? "" : ",", stdout);
			sfs_json_branch(stdout, &r);
		} else {
			char *path = sfs_text_field(r.path);

			sfs_human_size(strtoull(r.free_bytes, NULL, 10), size, sizeof(size));
			printf("%-4s %-40s %-4s %-4s %-8s %s\n", r.pos, path ? path : r.path, r.mode,
			       r.id, r.fstype, size);
			free(path);
		}
		first = false;
	}
	if (json)
		printf("]\n");
}

static int call(const char *mp, const char *const *w, char **body)
{
	char err[600];
	int ret = sfs_ctl_call(mp, w, body, err, sizeof(err));

	if (ret < 0) {
		fprintf(stderr, "stackfs: branch %s: %s (%s)\n", w[0], err, strerror(-ret));
		return SFS_EXIT_FAIL;
	}
	return SFS_EXIT_OK;
}

static int do_list(int argc, char **argv)
{
	const char *w[] = { "list", NULL };
	bool json = false;
	const char *mp = NULL;
	char *body = NULL;
	int ret;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!mp && argv[i][0] != '-')
			mp = argv[i];
		else
			return sfs_cli_usage_error(&sfs_cmd_branch, "list: unexpected '%s'", argv[i]);
	}
	if (!mp)
		return sfs_cli_usage_error(&sfs_cmd_branch, "list: missing MOUNTPOINT");
	ret = call(mp, w, &body);
	if (ret == SFS_EXIT_OK)
		print_list(body, json);
	free(body);
	return ret;
}

/* --position: top, bottom or an index in decimal digits. Whether it is
 * past the bottom only the daemon knows (it refuses that, exit 1). */
static bool position_ok(const char *p)
{
	size_t digits = strspn(p, "0123456789");

	return !strcmp(p, "top") || !strcmp(p, "bottom") ||
	       (digits > 0 && digits <= 9 && !p[digits]);
}

/* A DIR argument goes to the daemon absolute; an id stays as it is. */
static const char *dir_arg(const char *a, char *buf)
{
	return realpath(a, buf) ? buf : a;
}

static int do_add(int argc, char **argv)
{
	const char *mp = NULL, *dir = NULL, *mode = "ro", *pos = "top";
	char abs[PATH_MAX], *body = NULL;
	int ret;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mode") && i + 1 < argc)
			mode = argv[++i];
		else if (!strcmp(argv[i], "--position") && i + 1 < argc)
			pos = argv[++i];
		else if (!strcmp(argv[i], "--top"))
			pos = "top";
		else if (!strcmp(argv[i], "--bottom"))
			pos = "bottom";
		else if (argv[i][0] == '-')
			return sfs_cli_usage_error(&sfs_cmd_branch, "add: unknown option '%s'", argv[i]);
		else if (!mp)
			mp = argv[i];
		else if (!dir)
			dir = argv[i];
		else
			return sfs_cli_usage_error(&sfs_cmd_branch, "add: unexpected '%s'", argv[i]);
	}
	if (!dir)
		return sfs_cli_usage_error(&sfs_cmd_branch, "add: missing %s", mp ? "DIR" : "MOUNTPOINT and DIR");
	if (strcmp(mode, "rw") && strcmp(mode, "ro"))
		return sfs_cli_usage_error(&sfs_cmd_branch, "add: bad mode '%s' (rw or ro)", mode);
	if (!position_ok(pos))
		return sfs_cli_usage_error(&sfs_cmd_branch,
					   "add: bad position '%s' (0 to 999999999, top or bottom)", pos);
	const char *w[] = { "add", dir_arg(dir, abs), mode, pos, NULL };

	ret = call(mp, w, &body);
	free(body);
	return ret;
}

static int do_remove_or_mode(int argc, char **argv, bool remove)
{
	const char *mp = NULL, *which = NULL, *arg = remove ? "0" : NULL;
	char abs[PATH_MAX], *body = NULL;
	int ret;

	for (int i = 1; i < argc; i++) {
		if (remove && !strcmp(argv[i], "--force"))
			arg = "1";
		else if (argv[i][0] == '-')
			return sfs_cli_usage_error(&sfs_cmd_branch, "%s: unknown option '%s'", argv[0], argv[i]);
		else if (!mp)
			mp = argv[i];
		else if (!which)
			which = argv[i];
		else if (!remove && !arg)
			arg = argv[i];
		else
			return sfs_cli_usage_error(&sfs_cmd_branch, "%s: unexpected '%s'", argv[0], argv[i]);
	}
	if (!which || !arg)
		return sfs_cli_usage_error(&sfs_cmd_branch, "%s: missing arguments", argv[0]);
	if (!remove && strcmp(arg, "rw") && strcmp(arg, "ro"))
		return sfs_cli_usage_error(&sfs_cmd_branch, "mode: bad mode '%s' (rw or ro)", arg);
	const char *w[] = { argv[0], dir_arg(which, abs), arg, NULL };

	ret = call(mp, w, &body);
	free(body);
	return ret;
}

static int run(int argc, char **argv)
{
	if (argc < 2)
		return sfs_cli_usage_error(&sfs_cmd_branch, "missing list, add, remove or mode");
	if (!strcmp(argv[1], "list"))
		return do_list(argc - 1, argv + 1);
	if (!strcmp(argv[1], "add"))
		return do_add(argc - 1, argv + 1);
	if (!strcmp(argv[1], "remove"))
		return do_remove_or_mode(argc - 1, argv + 1, true);
	if (!strcmp(argv[1], "mode"))
		return do_remove_or_mode(argc - 1, argv + 1, false);
	return sfs_cli_usage_error(&sfs_cmd_branch, "unknown subcommand '%s'", argv[1]);
}

const struct sfs_cmd sfs_cmd_branch = {
	.name = "branch",
	.run = run,
	.usage = "usage: stackfs branch list MOUNTPOINT [--json]\n"
		 "       stackfs branch add MOUNTPOINT DIR [--mode rw|ro] [--position N|--top|--bottom]\n"
		 "       stackfs branch remove MOUNTPOINT DIR|ID [--force]\n"
		 "       stackfs branch mode MOUNTPOINT DIR|ID rw|ro",
	.summary = "List, add, remove or re-mode the branches of a live mount",
	.help = "Changes are atomic for operations in flight and take effect at once in\n"
		"the view; inode numbers of entries that stay visible do not change.\n"
		"  list     position (0 = highest), path, mode, stable id, filesystem, free space\n"
		"  add      a new branch (default: ro, at the top); checked as at mount\n"
		"  remove   refused (EBUSY) while files of the branch are open or when it is\n"
		"           the only rw branch, unless --force (open files keep working on it)\n"
		"  mode     make a branch rw or ro\n"
		"Only root and the user who mounted may change branches (else EPERM).\n",
};
