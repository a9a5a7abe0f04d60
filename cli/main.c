/* The `stackfs` command: dispatch to one handler per subcommand, --help,
 * --version, the mount.fuse3 form "stackfs BRANCHES MP -o OPTS" and the
 * mount-program form "stackfs -o OPTS [SOURCE] MP" (podman, buildah). */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "cli/cli.h"
#include "xattr/records.h"

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
		"       stackfs [-f] [-d] -o OPTS [SOURCE] MOUNTPOINT  (as run by podman, buildah)\n"
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

/* "stackfs -o OPTS MP", as container engines run a mount program
 * (fuse-overlayfs's command line): a first word that is one of mount's
 * own options (-o, -oOPTS, -f, -d) means `stackfs mount`. */
static bool mount_program_form(const char *arg)
{
	return !strncmp(arg, "-o", 2) || !strcmp(arg, "-f") || !strcmp(arg, "-d");
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

/* cmd with argv[0] its name: help, the check of its options, the run. */
static int run_cmd(const struct sfs_cmd *cmd, int argc, char **argv)
{
	int ret;

	if (wants_help(argc, argv)) {
		sfs_cli_cmd_help(cmd);
		return SFS_EXIT_OK;
	}
	ret = sfs_cli_check_flags(cmd, argc, argv);
	if (ret)
		return ret;
	raise_nofile();
	return cmd->run(argc, argv);
}

int main(int argc, char **argv)
{
	const struct sfs_cmd *cmd;
	const char *arg;

	if (argc < 2) {
		usage(stderr);
		return SFS_EXIT_USAGE;
	}
	/* fsck, diff and commit read the records in the namespace the
	 * daemon of the same user writes them in */
	sfs_records_init();
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
	if (cmd)
		return run_cmd(cmd, argc - 1, argv + 1);
	if (mount_program_form(arg)) {
		argv[0] = "mount";
		return run_cmd(&sfs_cmd_mount, argc, argv);
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
