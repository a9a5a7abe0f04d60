/* The options of each command, from its table (struct sfs_flag): listed
 * by its --help, and the only ones let through to it. The commands parse
 * their options themselves (getopt_long or by hand); checking here first
 * makes their table the one list of what is accepted, so the help, the
 * man page (tests/98-docs.bats checks it against the help) and the
 * parser cannot drift apart again, as `diff --lower` and `commit --json`
 * did. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/optlist.h"

#define FLAG_COLUMN 20

static void print_flag(const struct sfs_flag *f)
{
	const char *h = f->help;
	int col = printf("  %s%s%s", f->name, f->arg ? " " : "", f->arg ? f->arg : "");

	if (col + 2 > FLAG_COLUMN) {
		putchar('\n');
		col = 0;
	}
	while (*h) {
		size_t len = strcspn(h, "\n");

		printf("%*s%.*s\n", FLAG_COLUMN - col, "", (int)len, h);
		col = 0;
		h += len + (h[len] == '\n');
	}
}

/* The flags of sub (NULL: of a command without subcommands). */
static void print_flags_of(const struct sfs_cmd *cmd, const char *sub)
{
	bool any = false;

	for (const struct sfs_flag *f = cmd->flags; f && f->name; f++) {
		if (sub ? !f->sub || strcmp(f->sub, sub) : f->sub != NULL)
			continue;
		if (!any && sub)
			printf("\nOptions of %s %s:\n", cmd->name, sub);
		else if (!any)
			printf("\nOptions:\n");
		any = true;
		print_flag(f);
	}
}

void sfs_cli_flags_help(const struct sfs_cmd *cmd)
{
	const char *done[16];
	size_t ndone = 0;

	print_flags_of(cmd, NULL);
	/* each subcommand once, in the table's order */
	for (const struct sfs_flag *f = cmd->flags; f && f->name; f++) {
		bool seen = false;

		if (!f->sub)
			continue;
		for (size_t i = 0; i < ndone; i++)
			seen |= !strcmp(done[i], f->sub);
		if (seen || ndone == sizeof(done) / sizeof(done[0]))
			continue;
		done[ndone++] = f->sub;
		print_flags_of(cmd, f->sub);
	}
	if (cmd->mount_options)
		sfs_optlist_print(stdout, SFS_OPTG_MOUNT_OPTS);
}

/* The flag arg names: "--lower", "--lower=DIR", "-o", "-oVALUE". *value
 * is set when the argument is attached. NULL when there is none. */
static const struct sfs_flag *find_flag(const struct sfs_cmd *cmd, const char *sub,
					const char *arg, bool *value)
{
	size_t len = arg[1] == '-' ? strcspn(arg, "=") : 2;

	for (const struct sfs_flag *f = cmd->flags; f && f->name; f++) {
		if ((f->sub && (!sub || strcmp(f->sub, sub))) ||
		    strlen(f->name) != len || strncmp(f->name, arg, len))
			continue;
		*value = arg[len] != '\0';
		return f;
	}
	return NULL;
}

/* "-fd": short flags run together, each one without an argument but
 * maybe the last, whose argument is then the rest ("-fo allow_other"
 * takes the next word). 1, or 0 when one is unknown; *next when the
 * next word is an argument. */
static bool short_bundle(const struct sfs_cmd *cmd, const char *sub, const char *arg,
			 bool *next)
{
	for (const char *c = arg + 1; *c; c++) {
		char one[3] = { '-', *c, '\0' };
		bool value;
		const struct sfs_flag *f = find_flag(cmd, sub, one, &value);

		if (!f)
			return false;
		if (f->arg) {
			*next = !c[1];
			return true;
		}
	}
	return true;
}

/* 0 when arg is an option of cmd (*next: the next word is its
 * argument), -ENOENT when it is none, -EINVAL when a flag without an
 * argument is given one ("--json=1"). */
static int check_one(const struct sfs_cmd *cmd, const char *sub, const char *arg,
		     const struct sfs_flag **out, bool *next)
{
	bool value = false;
	const struct sfs_flag *f = find_flag(cmd, sub, arg, &value);

	*out = f;
	*next = false;
	if (arg[1] != '-')
		return short_bundle(cmd, sub, arg, next) ? 0 : -ENOENT;
	if (!f)
		return -ENOENT;
	if (value && !f->arg)
		return -EINVAL;
	*next = f->arg && !value;
	return 0;
}

int sfs_cli_check_flags(const struct sfs_cmd *cmd, int argc, char **argv)
{
	const char *sub = cmd->subcommands && argc > 1 ? argv[1] : NULL;

	for (int i = cmd->subcommands ? 2 : 1; i < argc && strcmp(argv[i], "--"); i++) {
		const struct sfs_flag *f;
		bool next;
		int ret, rc;

		if (argv[i][0] != '-' || !argv[i][1])
			continue;
		ret = check_one(cmd, sub, argv[i], &f, &next);
		if (ret == 0) {
			i += next; /* its argument */
			continue;
		}
		rc = ret == -EINVAL ? sfs_cli_usage_error(cmd, "option '%s' takes no value", f->name) :
		     sfs_cli_usage_error(cmd, "unknown option '%s' (stackfs %s%s%s --help lists "
					 "them)", argv[i], cmd->name, sub ? " " : "", sub ? sub : "");
		return cmd->usage_exit ? cmd->usage_exit : rc;
	}
	return 0;
}

int sfs_cli_mp_args(const struct sfs_cmd *cmd, const char *what, int argc, char **argv,
		    bool *json, const char **mp)
{
	*json = false;
	*mp = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			*json = true;
		else if (!*mp && argv[i][0] != '-')
			*mp = argv[i];
		else
			return sfs_cli_usage_error(cmd, "%sunexpected '%s'", what, argv[i]);
	}
	return *mp ? 0 : sfs_cli_usage_error(cmd, "%smissing MOUNTPOINT", what);
}
