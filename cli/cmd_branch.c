/* stackfs branch list|add|remove|mode: the branches of a live mount,
 * through the daemon's control channel. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "common/runtime.h"
#include "union/changes.h"

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
		sfs_cli_ctl_error("branch", w[0], err, ret);
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

	ret = sfs_cli_mp_args(&sfs_cmd_branch, "list: ", argc, argv, &json, &mp);
	if (ret)
		return ret;
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

/* ------------------------------------------------------------ which branch */

/* The branches of the mount as `branch list` numbers them: rows of the
 * daemon's list reply (split in place in body), position order. */
struct rows {
	char *body;
	struct sfs_branch_row *r;
	size_t n;
};

static void rows_free(struct rows *t)
{
	free(t->r);
	free(t->body);
}

static int rows_fetch(const char *mp, const char *what, struct rows *t)
{
	const char *w[] = { "list", NULL };
	char *save = NULL, err[600];
	int ret = sfs_ctl_call(mp, w, &t->body, err, sizeof(err));

	t->r = NULL;
	t->n = 0;
	if (ret < 0) {
		sfs_cli_ctl_error("branch", what, err, ret);
		return SFS_EXIT_FAIL;
	}
	for (char *l = strtok_r(t->body, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		struct sfs_branch_row *v = realloc(t->r, (t->n + 1) * sizeof(*v));

		if (!v) {
			fprintf(stderr, "stackfs: branch %s: %s\n", what, strerror(ENOMEM));
			return SFS_EXIT_FAIL;
		}
		t->r = v;
		if (sfs_branch_row(l, &t->r[t->n]) == 0)
			t->n++;
	}
	return SFS_EXIT_OK;
}

static bool all_digits(const char *s)
{
	size_t d = strspn(s, "0123456789");

	return d > 0 && d <= 9 && !s[d];
}

/* "#2 (id 3) /path (rw)": a branch as messages name it */
static void describe(const struct sfs_branch_row *r, char *buf, size_t len)
{
	char *path = sfs_text_field(r->path);

	snprintf(buf, len, "#%s (id %s) %s (%s)", r->pos, r->id, path ? path : r->path, r->mode);
	free(path);
}

/* "added branch #0 (id 4) /path (ro)", from the list after the change */
static void print_added(const char *mp, const char *dir)
{
	struct rows t = { 0 };
	char who[PATH_MAX + 64], *path;
	bool found = false;

	if (rows_fetch(mp, "add", &t) == SFS_EXIT_OK) {
		for (size_t i = 0; i < t.n && !found; i++) {
			path = sfs_text_field(t.r[i].path);
			if (path && !strcmp(path, dir)) {
				describe(&t.r[i], who, sizeof(who));
				printf("added branch %s\n", who);
				found = true;
			}
			free(path);
		}
	}
	if (!found)
		printf("added branch %s\n", dir);
	rows_free(&t);
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
	if (ret == SFS_EXIT_OK)
		print_added(mp, w[1]);
	return ret;
}

/* The row of "#N" (a position), of --id N, or of a directory. A bare
 * number that is not a directory is refused: positions and ids are both
 * small numbers, and taking one for the other removed the wrong branch.
 * Exit code, or 0 with *row (NULL: a directory that is not a branch; the
 * daemon then says why). */
static int pick(const struct rows *t, const char *what, const char *which, bool by_id,
		const struct sfs_branch_row **row)
{
	struct stat st;
	char abs[PATH_MAX], *path;
	bool is_pos = which[0] == '#';
	const char *num = is_pos ? which + 1 : which;

	*row = NULL;
	if ((is_pos || by_id) && !all_digits(num))
		return sfs_cli_usage_error(&sfs_cmd_branch, "%s: bad %s '%s'", what,
					   by_id ? "id" : "position", which);
	if (!is_pos && !by_id && all_digits(which) && stat(which, &st) != 0)
		return sfs_cli_usage_error(&sfs_cmd_branch,
					   "%s: '%s' is neither a directory nor a branch: write #%s "
					   "for the branch at position %s, or --id %s for the branch "
					   "whose id is %s (see stackfs branch list)",
					   what, which, which, which, which, which);
	for (size_t i = 0; i < t->n; i++) {
		const struct sfs_branch_row *r = &t->r[i];

		if (is_pos ? !strcmp(r->pos, num) : by_id ? !strcmp(r->id, num) : false) {
			*row = r;
			return 0;
		}
		if (is_pos || by_id || !realpath(which, abs))
			continue;
		path = sfs_text_field(r->path);
		if (path && !strcmp(path, abs))
			*row = r;
		free(path);
		if (*row)
			return 0;
	}
	if (is_pos || by_id) {
		fprintf(stderr, "stackfs: branch %s: no branch %s%s (the mount has #0 to #%zu)\n",
			what, by_id ? "with id " : "", which, t->n ? t->n - 1 : 0);
		return SFS_EXIT_FAIL;
	}
	return 0;
}

/* A rw branch being removed without --force: refused while `stackfs
 * diff` of it against the branches below it in the mount lists anything
 * (union/changes.c), or when that cannot be told. */
static int unmerged_check(const char *mp, const struct sfs_branch_row *r)
{
	struct sfs_changes_opts co = { 0 };
	struct sfs_changes ch = { 0 };
	struct sfs_ch_union u;
	struct mbranch *mb = NULL;
	size_t nmb = 0, pos = strtoul(r->pos, NULL, 10);
	const char **paths = NULL;
	char err[700], who[PATH_MAX + 64];
	unsigned ma, mi;
	int ret;

	describe(r, who, sizeof(who));
	ret = sfs_runtime_find_mount(mp, &ma, &mi, NULL, 0);
	if (ret == 0)
		ret = sfs_mbranches_of_mount(mp, ma, mi, &mb, &nmb, err, sizeof(err));
	else
		snprintf(err, sizeof(err), "%s: %s", mp, strerror(-ret));
	if (ret == 0 && pos >= nmb) {
		ret = -ESTALE;
		snprintf(err, sizeof(err), "the branch list changed meanwhile");
	}
	if (ret == 0 && !(paths = calloc(nmb - pos, sizeof(*paths))))
		ret = -ENOMEM, snprintf(err, sizeof(err), "%s", strerror(ENOMEM));
	for (size_t i = pos; ret == 0 && i < nmb; i++)
		paths[i - pos] = mb[i].path;
	if (ret == 0)
		ret = sfs_ch_union_open(&u, paths, (unsigned)(nmb - pos), mb[pos].workdir, err,
						sizeof(err));
	if (ret == 0) {
		ret = sfs_changes_list(&u, &co, &ch);
		if (ret < 0)
			snprintf(err, sizeof(err), "listing its changes: %s", strerror(-ret));
		sfs_ch_union_close(&u);
	}
	if (ret < 0)
		fprintf(stderr, "stackfs: branch remove: %s: cannot tell whether it holds "
			"unmerged changes (%s): not removed; --force removes it anyway\n", who, err);
	else if (ch.n)
		fprintf(stderr, "stackfs: branch remove: %s holds %zu unmerged change%s "
			"(stackfs diff %s lists them; stackfs commit folds them into a lower "
			"branch): not removed; --force removes it anyway\n", who, ch.n,
			ch.n == 1 ? "" : "s", paths[0]);
	if (ret == 0 && ch.n)
		ret = -EBUSY;
	sfs_changes_free(&ch);
	free(paths);
	sfs_mbranches_free(mb, nmb);
	return ret < 0 ? SFS_EXIT_FAIL : SFS_EXIT_OK;
}

static int do_remove_or_mode(int argc, char **argv, bool remove)
{
	const char *mp = NULL, *which = NULL, *arg = NULL;
	const struct sfs_branch_row *row;
	char abs[PATH_MAX], who[PATH_MAX + 64], *body = NULL;
	bool force = false, by_id = false;
	struct rows t = { 0 };
	int ret;

	for (int i = 1; i < argc; i++) {
		if (remove && !strcmp(argv[i], "--force"))
			force = true;
		else if (!strcmp(argv[i], "--id") && i + 1 < argc && !which)
			by_id = true, which = argv[++i];
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
	if (!mp || !which || (!remove && !arg))
		return sfs_cli_usage_error(&sfs_cmd_branch, "%s: missing arguments", argv[0]);
	if (!remove && strcmp(arg, "rw") && strcmp(arg, "ro"))
		return sfs_cli_usage_error(&sfs_cmd_branch, "mode: bad mode '%s' (rw or ro)", arg);
	ret = rows_fetch(mp, argv[0], &t);
	if (ret == SFS_EXIT_OK)
		ret = pick(&t, argv[0], which, by_id, &row);
	if (ret != SFS_EXIT_OK)
		goto out_rows;
	if (row && remove && !force && !strcmp(row->mode, "rw")) {
		ret = unmerged_check(mp, row);
		if (ret != SFS_EXIT_OK)
			goto out_rows;
	}
	/* the daemon is told the stable id: the list may change meanwhile */
	const char *w[] = { argv[0], row ? row->id : dir_arg(which, abs),
			    remove ? (force ? "1" : "0") : arg, NULL };

	ret = call(mp, w, &body);
	if (ret == SFS_EXIT_OK && row) {
		describe(row, who, sizeof(who));
		if (remove)
			printf("removed branch %s\n", who);
		else
			printf("branch %s is now %s\n", who, arg);
	}
	free(body);
out_rows:
	rows_free(&t);
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

static const struct sfs_flag branch_flags[] = {
	{ "list", "--json", NULL, "print a JSON array on stdout\n" },
	{ "add", "--mode", "rw|ro", "the new branch's mode (default ro)\n" },
	{ "add", "--position", "N", "insert it at position N (0 = highest)\n" },
	{ "add", "--top", NULL, "make it the highest branch (the default)\n" },
	{ "add", "--bottom", NULL, "make it the lowest branch\n" },
	{ "remove", "--id", "ID", "the branch of that stable id\n" },
	{ "remove", "--force", NULL, "remove it even with open files or unmerged changes\n" },
	{ "mode", "--id", "ID", "the branch of that stable id\n" },
	{ 0 }
};

const struct sfs_cmd sfs_cmd_branch = {
	.name = "branch",
	.run = run,
	.usage = "usage: stackfs branch list MOUNTPOINT [--json]\n"
		 "       stackfs branch add MOUNTPOINT DIR [--mode rw|ro] [--position N|--top|--bottom]\n"
		 "       stackfs branch remove MOUNTPOINT DIR|#N|--id ID [--force]\n"
		 "       stackfs branch mode MOUNTPOINT DIR|#N|--id ID rw|ro",
	.summary = "List, add, remove or re-mode the branches of a live mount",
	.help = "Changes are atomic for operations in flight and take effect at once in\n"
		"the view; inode numbers of entries that stay visible do not change.\n"
		"  list     position (0 = highest), path, mode, stable id, filesystem, free space\n"
		"  add      a new branch (default: ro, at the top); checked as at mount\n"
		"  remove   refused (EBUSY) while files of the branch are open, when it is\n"
		"           the only rw branch or a rw branch with unmerged changes (stackfs\n"
		"           diff), unless --force (open files keep working on it)\n"
		"A branch is named by its directory, #N (its position in the list) or\n"
		"--id ID (its stable id); a bare number is refused. Changes print one\n"
		"line: \"removed branch #2 (id 3) /srv/up (rw)\".\n"
		"  mode     make a branch rw or ro\n"
		"Only root and the user who mounted may change branches (else EPERM).\n",
	.flags = branch_flags,
	.subcommands = true,
};
