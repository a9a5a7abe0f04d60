/* The `stackfs` command: dispatch to one handler per subcommand, --help,
 * --version, and the mount.fuse3 form "stackfs BRANCHES MP -o OPTS". */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "cli/cli.h"

static const struct sfs_cmd *const commands[] = {
	&sfs_cmd_mount,
	&sfs_cmd_umount,
	&sfs_cmd_fsck,
	&sfs_cmd_branch,
	&sfs_cmd_status,
	&sfs_cmd_diff,
	&sfs_cmd_commit,
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f,
		"usage: stackfs [--help] [--version] COMMAND [ARGS]\n"
		"       stackfs BRANCHES MOUNTPOINT [-o OPTS]  (as run by mount -t fuse.stackfs)\n"
		"\n"
		"Commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-8s %s\n", commands[i]->name, commands[i]->summary);
	fprintf(f,
		"  %-8s %s\n"
		"\n"
		"Run 'stackfs COMMAND --help' for the options of a command.\n"
		"Exit status: 0 success, 1 the operation failed, 2 usage error.\n",
		"help", "Show the help of stackfs or of a command");
}

static const struct sfs_cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++) {
		const struct sfs_cmd *c = commands[i];

		if (!strcmp(c->name, name) || (c->alias && !strcmp(c->alias, name)))
			return c;
	}
	return NULL;
}

void sfs_cli_cmd_help(const struct sfs_cmd *cmd)
{
	printf("%s\n", cmd->usage);
	if (cmd->alias)
		printf("       (also: stackfs %s)\n", cmd->alias);
	printf("\n%s\n", cmd->summary);
	if (cmd->help)
		printf("\n%s", cmd->help);
	sfs_cli_flags_help(cmd);
}

int sfs_cli_usage_error(const struct sfs_cmd *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "stackfs: %s: ", cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s\n", cmd->usage);
	return SFS_EXIT_USAGE;
}

/* "stackfs CMD ... --help": a request for help wherever it stands
 * before a "--". */
static int wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
	return 0;
}

static int cmd_help(int argc, char **argv)
{
	const struct sfs_cmd *cmd;

	if (argc < 2) {
		usage(stdout);
		return SFS_EXIT_OK;
	}
	if (argc > 2) {
		fprintf(stderr, "stackfs: help: unexpected argument '%s'\n"
			"usage: stackfs help [COMMAND]\n", argv[2]);
		return SFS_EXIT_USAGE;
	}
	cmd = find_cmd(argv[1]);
	if (!cmd) {
		fprintf(stderr, "stackfs: help: unknown command '%s'\n"
			"usage: stackfs help [COMMAND]\n", argv[1]);
		return SFS_EXIT_USAGE;
	}
	sfs_cli_cmd_help(cmd);
	return SFS_EXIT_OK;
}

/* Walks (fsck, diff, commit) hold a few fds per directory level and
 * branch: deep trees need more than the default soft limit of 1024. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int main(int argc, char **argv)
{
	const struct sfs_cmd *cmd;
	const char *arg;
	int ret;

	if (argc < 2) {
		usage(stderr);
		return SFS_EXIT_USAGE;
	}
	arg = argv[1];
	if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
		usage(stdout);
		return SFS_EXIT_OK;
	}
	if (!strcmp(arg, "--version")) {
		printf("stackfs %s\n", SFS_VERSION);
		return SFS_EXIT_OK;
	}
	if (!strcmp(arg, "help"))
		return cmd_help(argc - 1, argv + 1);
	cmd = find_cmd(arg);
	if (cmd) {
		if (wants_help(argc - 1, argv + 1)) {
			sfs_cli_cmd_help(cmd);
			return SFS_EXIT_OK;
		}
		ret = sfs_cli_check_flags(cmd, argc - 1, argv + 1);
		if (ret)
			return ret;
		raise_nofile();
		return cmd->run(argc - 1, argv + 1);
	}
	if (arg[0] == '-') {
		fprintf(stderr, "stackfs: unknown option '%s'\n", arg);
		usage(stderr);
		return SFS_EXIT_USAGE;
	}
	/* mount.fuse3 runs "stackfs BRANCHES MP -o OPTS": a source and a
	 * mountpoint. A lone unknown word is more likely a mistyped command. */
	if (argc < 3) {
		fprintf(stderr, "stackfs: unknown command '%s'\n", arg);
		usage(stderr);
		return SFS_EXIT_USAGE;
	}
	return sfs_cli_exec_daemon(argc, argv);
}
