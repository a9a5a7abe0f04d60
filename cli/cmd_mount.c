/* stackfs mount: checks the command line and hands it to the daemon,
 * which validates the branches, mounts, and backgrounds itself once the
 * mount is live (or stays in front with -f). */
#include <errno.h>
#include <stdbool.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

int sfs_cli_exec_daemon(int argc, char **argv)
{
	char *daemon = sfs_daemon_path();

	if (!daemon) {
		fprintf(stderr, "stackfs: mount: %s\n", strerror(ENOMEM));
		return SFS_EXIT_FAIL;
	}
	argv[0] = "stackfsd";
	execv(daemon, argv);
	fprintf(stderr, "stackfs: mount: cannot run %s: %s\n", daemon, strerror(errno));
	free(daemon);
	(void)argc;
	return SFS_EXIT_FAIL;
}

/* True when an -o value gives the branches another way than BRANCHES:
 * overlay-style (lowerdir=, lowerdir+=) or from a file (branches=). */
static bool branches_in_opts(char **dargv, int dargc)
{
	static const char *const keys[] = { "lowerdir=", "lowerdir+=", "branches=" };

	for (int i = 1; i + 1 < dargc; i++) {
		const char *v = dargv[i + 1];

		if (strcmp(dargv[i], "-o"))
			continue;
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			size_t len = strlen(keys[k]);

			for (const char *p = v; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
				if (!strncmp(p, keys[k], len))
					return true;
		}
	}
	return false;
}

static int run_mount(int argc, char **argv)
{
	static const struct option none[] = { { 0 } };
	/* the daemon's argv: name, options in their order, "--", 2 operands */
	char **dargv = calloc((size_t)argc + 3, sizeof(*dargv));
	char *pos[2];
	int npos = 0, dargc = 1, opt, ret;

	if (!dargv) {
		fprintf(stderr, "stackfs: mount: %s\n", strerror(ENOMEM));
		return SFS_EXIT_FAIL;
	}
	/* "-": operands come back in place (as 1) so options may follow
	 * them, as with every FUSE filesystem; ":": we word the errors */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "-:fdo:", none, NULL)) != -1) {
		switch (opt) {
		case 1:
			if (npos == 2) {
				ret = sfs_cli_usage_error(&sfs_cmd_mount, "unexpected argument '%s'", optarg);
				goto out_free;
			}
			pos[npos++] = optarg;
			break;
		case 'f':
			dargv[dargc++] = "-f";
			break;
		case 'd':
			dargv[dargc++] = "-d";
			break;
		case 'o':
			dargv[dargc++] = "-o";
			dargv[dargc++] = optarg;
			break;
		case ':':
			ret = sfs_cli_usage_error(&sfs_cmd_mount, "option '-%c' needs an argument", optopt);
			goto out_free;
		default:
			if (optopt)
				ret = sfs_cli_usage_error(&sfs_cmd_mount, "unknown option '-%c'", optopt);
			else
				ret = sfs_cli_usage_error(&sfs_cmd_mount, "unknown option '%s'", argv[optind - 1]);
			goto out_free;
		}
	}
	/* operands after "--" */
	for (; optind < argc; optind++) {
		if (npos == 2) {
			ret = sfs_cli_usage_error(&sfs_cmd_mount, "unexpected argument '%s'", argv[optind]);
			goto out_free;
		}
		pos[npos++] = argv[optind];
	}
	/* with -o lowerdir=... or branches=FILE the mount point alone will do */
	if (npos < 2 && !(npos == 1 && branches_in_opts(dargv, dargc))) {
		ret = sfs_cli_usage_error(&sfs_cmd_mount, "missing %s",
					  npos ? "MOUNTPOINT" : "BRANCHES and MOUNTPOINT");
		goto out_free;
	}
	if (pos[0][0] == '-' || (npos == 2 && pos[1][0] == '-'))
		dargv[dargc++] = "--";
	for (int i = 0; i < npos; i++)
		dargv[dargc++] = pos[i];
	ret = sfs_cli_exec_daemon(dargc, dargv);

out_free:
	free(dargv);
	return ret;
}

static const struct sfs_flag mount_flags[] = {
	{ NULL, "-f", NULL, "stay in the foreground until unmounted\n" },
	{ NULL, "-d", NULL, "debug: stay in the foreground, log every request\n" },
	{ NULL, "-o", "OPTS", "mount options, comma separated (below); may be\n"
	  "given several times\n" },
	{ 0 }
};

const struct sfs_cmd sfs_cmd_mount = {
	.name = "mount",
	.run = run_mount,
	.usage = "usage: stackfs mount [-f] [-d] [-o OPTS]... BRANCHES MOUNTPOINT\n"
		 "       stackfs mount [-f] [-d] -o branches=FILE[,OPTS] MOUNTPOINT\n"
		 "       stackfs mount [-f] [-d] -o lowerdir=DIR[:DIR...][,upperdir=DIR] [SOURCE] MOUNTPOINT",
	.summary = "Mount the union of BRANCHES on MOUNTPOINT",
	.help =
		"BRANCHES is DIR[=MODE]:DIR[=MODE]..., highest priority first; MODE is\n"
		"rw, ro or data (the first branch defaults to rw, the others to ro; a\n"
		"data branch only holds the data of metacopy files above it, and comes\n"
		"last). Write a\n"
		"':', '=' or '\\' inside a path with a '\\' before it.\n"
		"Without -f, the command returns once the mount is live; the daemon\n"
		"logs to syslog (see -o log=).\n",
	.flags = mount_flags,
	.mount_options = true,
};
