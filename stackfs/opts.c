/* The daemon's command line: BRANCHES, MOUNTPOINT, -f, -d and -o options.
 * Options of our own are taken out here; the rest go to libfuse, whose
 * fuse_session_new refuses unknown ones by name. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stackfs/stackfs.h"

enum { KEY_FG, KEY_DEBUG, KEY_HELP, KEY_VERSION, KEY_WHITEOUT };

#define OPT(t, field, v) { t, offsetof(struct sfs_opts, field), v }
static const struct fuse_opt table[] = {
	OPT("timeout=%lf", timeout, 0),
	OPT("fsync", fsync, 1),
	OPT("upgrade", upgrade, 1),
	FUSE_OPT_KEY("whiteout=", KEY_WHITEOUT),
	FUSE_OPT_KEY("-f", KEY_FG),
	FUSE_OPT_KEY("-d", KEY_DEBUG),
	FUSE_OPT_KEY("debug", KEY_DEBUG),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	FUSE_OPT_END
};

static int parse_whiteout(struct sfs_opts *o, const char *arg)
{
	const char *v = arg + strlen("whiteout=");

	if (strcmp(v, "wh") == 0 || strcmp(v, "aufs") == 0)
		o->whiteout = SFS_WH_AUFS;
	else if (strcmp(v, "overlay") == 0)
		o->whiteout = SFS_WH_OVERLAY;
	else {
		fprintf(stderr, "stackfs: bad option '%s': whiteout is wh or overlay\n", arg);
		return -1;
	}
	return 0;
}

static int positional(struct sfs_opts *o, const char *arg)
{
	char **slot = !o->branches ? &o->branches : !o->mountpoint ? &o->mountpoint : NULL;

	if (!slot) {
		fprintf(stderr, "stackfs: unexpected argument '%s'\n", arg);
		return -1;
	}
	*slot = strdup(arg);
	return *slot ? 0 : -1;
}

static int opt_proc(void *data, const char *arg, int key, struct fuse_args *out)
{
	struct sfs_opts *o = data;

	switch (key) {
	case FUSE_OPT_KEY_NONOPT:
		return positional(o, arg) < 0 ? -1 : 0;
	case KEY_FG:
		o->foreground = 1;
		return 0;
	case KEY_DEBUG:
		o->debug = o->foreground = 1;
		return 1; /* libfuse prints the requests */
	case KEY_HELP:
		o->show_help = 1;
		return 0;
	case KEY_VERSION:
		o->show_version = 1;
		return 0;
	case KEY_WHITEOUT:
		return parse_whiteout(o, arg);
	default:
		return 1;
	}
}

int sfs_opts_parse(struct fuse_args *args, struct sfs_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->timeout = 60.0;
	o->whiteout = SFS_WH_AUFS;
	if (fuse_opt_parse(args, o, table, opt_proc) < 0)
		return -EINVAL;
	if (o->timeout < 0) {
		fprintf(stderr, "stackfs: bad option 'timeout': must not be negative\n");
		return -EINVAL;
	}
	/* Permission checks are the kernel's, on the union's attributes: the
	 * daemon runs with the rights of its user and must not lend them. */
	if (fuse_opt_add_arg(args, "-odefault_permissions,subtype=stackfs,fsname=stackfs") < 0)
		return -ENOMEM;
	return 0;
}

void sfs_opts_usage(const char *prog)
{
	printf("usage: %s [-f] [-d] [-o OPTIONS] BRANCHES MOUNTPOINT\n"
	       "\n"
	       "BRANCHES is DIR[=rw|ro]:DIR[=rw|ro]..., highest priority first;\n"
	       "the first branch is rw unless told, the others ro. Write ':', '='\n"
	       "or '\\' inside a path with a backslash before it.\n"
	       "\n"
	       "stackfs options:\n"
	       "    -o whiteout=wh|overlay  whiteout format written (default wh)\n"
	       "    -o fsync                fsync every copy-up before it is placed\n"
	       "    -o upgrade              upgrade an older metadata format\n"
	       "    -o timeout=SECONDS      kernel cache timeout for entries and\n"
	       "                            attributes (default 60)\n"
	       "    -f                      stay in the foreground\n"
	       "    -d                      debug: foreground, log every request\n"
	       "\n"
	       "FUSE options:\n", prog);
	fuse_lowlevel_help();
}
