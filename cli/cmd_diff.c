/* stackfs diff: what a rw branch changes relative to the branches below
 * it, like `docker diff`: "A /path", "C /path", "D /path", sorted by path
 * (union/changes.c does the walk), or as JSON, or as an OCI image layer
 * (--format=oci: diff_layer.c). Given a mount point, the highest rw
 * branch of the mount and the branches below it; given a branch
 * directory, the branches below it from --lower or from its last mount
 * (.stackfs/lowers, in the branch or its workdir: whiteout/metaloc.c). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "common/runtime.h"
#include "union/changes.h"
#include "whiteout/metadir.h"

#define PROGRESS_DELAY_NS 500000000LL   /* a tree that takes longer is big */

struct diff_out {
	const char *what;
	struct sfs_progress bar;
	unsigned problems;
};

/* ------------------------------------------------------------ output */

static void on_progress(void *arg, uint64_t n, const char *path)
{
	struct diff_out *o = arg;
	char prefix[64];

	if (!sfs_progress_due(&o->bar))
		return;
	snprintf(prefix, sizeof(prefix), "diff: %llu entries: ", (unsigned long long)n);
	sfs_progress_show(&o->bar, prefix, path);
}

static void on_problem(void *arg, const char *path, int err)
{
	struct diff_out *o = arg;

	sfs_progress_erase(&o->bar);
	fprintf(stderr, "stackfs: diff: %s: %s%s\n", path, strerror(err),
		err == EXDEV ? " (a mount point inside a branch: not looked into)" : "");
	o->problems++;
}

/* One path a line: a backslash is written "\\", a newline "\n", other
 * control characters "\xHH", so that every line is one path. */
static void print_path(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '\\')
			fputs("\\\\", f);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
}

static void print_text(const struct sfs_changes *c)
{
	for (size_t i = 0; i < c->n; i++) {
		printf("%c ", c->v[i].kind);
		print_path(stdout, c->v[i].path);
		putchar('\n');
	}
}

static void print_json(const struct sfs_changes *c)
{
	putchar('[');
	for (size_t i = 0; i < c->n; i++) {
		fputs(i ? ",\n  {\"path\": " : "\n  {\"path\": ", stdout);
		sfs_json_str(stdout, c->v[i].path);
		printf(", \"change\": \"%c\"", c->v[i].kind);
		if (c->v[i].from) {
			fputs(", \"from\": ", stdout);
			sfs_json_str(stdout, c->v[i].from);
		}
		putchar('}');
	}
	fputs(c->n ? "\n]\n" : "]\n", stdout);
}

static const struct option long_opts[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "format", required_argument, NULL, 'f' },
	{ "lower", required_argument, NULL, 'l' },
	{ "workdir", required_argument, NULL, 'w' },
	{ NULL, 0, NULL, 0 },
};

enum diff_format { FMT_TEXT, FMT_JSON, FMT_OCI };

/* --format's word; --json is --format=json. 0, or a usage error. */
static int set_format(enum diff_format *fmt, bool *given, enum diff_format f)
{
	if (*given && *fmt != f)
		return sfs_cli_usage_error(&sfs_cmd_diff, "one output format: --json and "
					   "--format=text|json|oci are given together");
	*fmt = f;
	*given = true;
	return 0;
}

static int parse_format(const char *arg, enum diff_format *fmt, bool *given)
{
	if (!strcmp(arg, "text"))
		return set_format(fmt, given, FMT_TEXT);
	if (!strcmp(arg, "json"))
		return set_format(fmt, given, FMT_JSON);
	if (!strcmp(arg, "oci"))
		return set_format(fmt, given, FMT_OCI);
	return sfs_cli_usage_error(&sfs_cmd_diff, "unknown format '%s' (text, json or oci)", arg);
}

/* What to diff: the branches, the rw one first, and the workdir holding
 * its metadata dir when it is known (--workdir, or the mount's; NULL:
 * where its root records it, else the root, whiteout/metaloc.c). */
struct pick {
	char **paths;
	size_t n;
	char *workdir;
};

static void pick_free(struct pick *p)
{
	sfs_ch_names_free(p->paths, p->n);
	free(p->workdir);
	memset(p, 0, sizeof(*p));
}

/* The branch directory's root and where its metadata dir is: 0, or
 * -errno with a message. */
static int open_branch(const char *branch, const char *workdir, int *fd,
		       struct sfs_metaloc *loc, char *err, size_t errlen)
{
	char msg[PATH_MAX + 512];
	int ret;

	*fd = open(branch, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*fd < 0) {
		snprintf(err, errlen, "%s: %s", branch, strerror(errno));
		return -errno;
	}
	ret = sfs_metaloc_open(*fd, workdir, false, loc, msg, sizeof(msg));
	if (ret < 0) {
		snprintf(err, errlen, "%s: %s", branch, msg);
		close(*fd);
		*fd = -1;
	}
	return ret;
}

/* A newer format may mark changes this stackfs cannot read. */
static int check_format(const char *branch, const char *workdir, char *err, size_t errlen)
{
	enum sfs_meta_state state;
	struct sfs_metaloc loc;
	char msg[256];
	int fd, ret = open_branch(branch, workdir, &fd, &loc, err, errlen);

	if (ret < 0)
		return ret;
	ret = sfs_meta_check(sfs_metaloc_at(&loc, fd), &state, msg, sizeof(msg));
	sfs_metaloc_close(&loc);
	close(fd);
	if (ret == -EPROTONOSUPPORT) {
		snprintf(err, errlen, "%s: %s", branch, msg);
		return ret;
	}
	return 0;
}

/* The highest rw branch of the mount on target and those below it. Exit
 * code, or 0 with *p. */
static int mount_paths(const char *target, unsigned ma, unsigned mi, struct pick *p,
		       char *err, size_t errlen)
{
	struct mbranch *mb = NULL;
	size_t nmb = 0, top, n = 0;
	char **v;
	int status = SFS_EXIT_FAIL;

	if (sfs_mbranches_of_mount(target, ma, mi, &mb, &nmb, err, errlen) < 0)
		return SFS_EXIT_FAIL;
	for (top = 0; top < nmb && !mb[top].rw; top++)
		;
	if (top == nmb) {
		snprintf(err, errlen, "%s: the mount has no rw branch", target);
		goto out;
	}
	v = calloc(nmb - top, sizeof(*v));
	if (!v) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		goto out;
	}
	for (size_t i = top; i < nmb; i++) {
		v[n++] = mb[i].path;
		mb[i].path = NULL;
	}
	p->paths = v;
	p->n = n;
	p->workdir = mb[top].workdir;
	mb[top].workdir = NULL;
	status = 0;
out:
	sfs_mbranches_free(mb, nmb);
	return status;
}

/* The branches below the branch directory target in its last mount. */
static int lowers_of(const char *target, const char *workdir, char ***below,
		     size_t *nbelow, char *err, size_t errlen)
{
	struct sfs_metaloc loc;
	char msg[300];
	int fd, ret = open_branch(target, workdir, &fd, &loc, err, errlen);

	if (ret < 0)
		return SFS_EXIT_FAIL;
	ret = sfs_ch_lowers_below(fd, sfs_metaloc_at(&loc, fd), below, nbelow, msg, sizeof(msg));
	sfs_metaloc_close(&loc);
	close(fd);
	if (ret < 0) {
		snprintf(err, errlen, "%s: %s%s", target, msg, ret == -ENOENT || ret == -ESRCH ?
			 "; name the branches below it with --lower" : "");
		return SFS_EXIT_FAIL;
	}
	return 0;
}

/* The branch directory target over --lower, else over the branches below
 * it in its last mount. Exit code, or 0 with *p. */
static int dir_paths(const char *target, char **lowers, size_t nlowers, const char *workdir,
		     struct pick *p, char *err, size_t errlen)
{
	char **below = NULL, **v;
	size_t nbelow = 0, n = 0;
	bool nomem = false;

	if (!nlowers && lowers_of(target, workdir, &below, &nbelow, err, errlen))
		return SFS_EXIT_FAIL;
	v = calloc(1 + nlowers + nbelow, sizeof(*v));
	if (!v) {
		sfs_ch_names_free(below, nbelow);
		goto nomem;
	}
	v[n++] = strdup(target);
	for (size_t i = 0; i < nlowers; i++)
		v[n++] = strdup(lowers[i]);
	for (size_t i = 0; i < nbelow; i++)
		v[n++] = below[i];
	free(below);
	for (size_t i = 0; i < n; i++)
		nomem |= !v[i];
	p->paths = v;
	p->n = n;
	if (workdir && !(p->workdir = strdup(workdir)))
		nomem = true;
	if (nomem) {
		pick_free(p);
		goto nomem;
	}
	return 0;
nomem:
	snprintf(err, errlen, "%s", strerror(ENOMEM));
	return SFS_EXIT_FAIL;
}

/* The branch list to diff (the rw branch first) from the operand,
 * --lower and --workdir. Exit code, or 0 with *p. */
static int pick_branches(const char *target, char **lowers, size_t nlowers,
			 const char *workdir, struct pick *p, char *err, size_t errlen)
{
	unsigned ma, mi;
	char type[64];
	int ret = sfs_runtime_find_mount(target, &ma, &mi, type, sizeof(type));

	if (ret != 0 || strcmp(type, "fuse.stackfs"))
		return dir_paths(target, lowers, nlowers, workdir, p, err, errlen);
	if (nlowers || workdir) {
		snprintf(err, errlen, "%s is for a branch directory, not a mount point",
			 nlowers ? "--lower" : "--workdir");
		return SFS_EXIT_USAGE;
	}
	return mount_paths(target, ma, mi, p, err, errlen);
}

/* The options: 0, or the exit code of an error (said). */
static int parse_args(int argc, char **argv, enum diff_format *fmt, char ***lowers,
		      size_t *nlowers, const char **workdir)
{
	bool given = false;
	int c, status = 0;

	opterr = 0;
	optind = 1;
	while (status == 0 && (c = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			status = set_format(fmt, &given, FMT_JSON);
			break;
		case 'f':
			status = parse_format(optarg, fmt, &given);
			break;
		case 'w':
			*workdir = optarg;
			break;
		case 'l': {
			char **nv = realloc(*lowers, (*nlowers + 1) * sizeof(*nv));

			if (!nv) {
				fprintf(stderr, "stackfs: diff: %s\n", strerror(ENOMEM));
				status = SFS_EXIT_FAIL;
				break;
			}
			*lowers = nv;
			nv[(*nlowers)++] = optarg;
			break;
		}
		default: {
			const char *opt = argv[optind - 1];

			if (optopt == 'l' || optopt == 'w' || !strcmp(opt, "--lower") ||
			    !strcmp(opt, "--workdir"))
				status = sfs_cli_usage_error(&sfs_cmd_diff, "%s needs a directory",
							     optopt == 'w' || !strcmp(opt, "--workdir") ?
							     "--workdir" : "--lower");
			else if (optopt == 'f' || !strcmp(opt, "--format"))
				status = sfs_cli_usage_error(&sfs_cmd_diff, "--format needs text, json or oci");
			else
				status = sfs_cli_usage_error(&sfs_cmd_diff, "unknown option '%s'", opt);
		}
		}
	}
	if (status == 0 && optind == argc)
		status = sfs_cli_usage_error(&sfs_cmd_diff, "a BRANCH or MOUNTPOINT is needed");
	else if (status == 0 && optind + 1 != argc)
		status = sfs_cli_usage_error(&sfs_cmd_diff, "unexpected argument '%s'",
					     argv[optind + 1]);
	/* a tar stream is bytes for a file or a pipe, not for a terminal */
	if (status == 0 && *fmt == FMT_OCI && isatty(STDOUT_FILENO))
		status = sfs_cli_usage_error(&sfs_cmd_diff, "--format=oci writes a tar archive: "
					     "not to a terminal (redirect standard output to a "
					     "file or a pipe)");
	return status;
}

int sfs_diff_collect(struct sfs_ch_union *u, struct sfs_changes *ch, unsigned *problems)
{
	struct diff_out o = { .what = "diff" };
	struct sfs_changes_opts co = { .progress = on_progress, .problem = on_problem, .arg = &o };
	int ret;

	sfs_progress_init(&o.bar, PROGRESS_DELAY_NS);
	ret = sfs_changes_list(u, &co, ch);
	sfs_progress_erase(&o.bar);
	if (ret == -ENOMEM)
		fprintf(stderr, "stackfs: diff: %s\n", strerror(ENOMEM));
	*problems = o.problems;
	return ret;
}

/* Lists the changes of the union u: exit code. */
static int list(struct sfs_ch_union *u, bool json)
{
	struct sfs_changes ch = { 0 };
	unsigned problems = 0;
	int ret = sfs_diff_collect(u, &ch, &problems), status = 0;

	if (ret == -ENOMEM) {
		status = SFS_EXIT_FAIL;
		goto out;
	}
	if (json)
		print_json(&ch);
	else
		print_text(&ch);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "stackfs: diff: writing the output: %s\n", strerror(errno));
		status = SFS_EXIT_FAIL;
	}
	if (ret < 0) {
		fprintf(stderr, "stackfs: diff: %u entr%s could not be read (see above): "
			"the list is incomplete\n", problems, problems == 1 ? "y" : "ies");
		status = SFS_EXIT_FAIL;
	}
out:
	sfs_changes_free(&ch);
	return status;
}

static int run_diff(int argc, char **argv)
{
	struct sfs_ch_union u;
	struct pick p = { 0 };
	char **lowers = NULL, err[PATH_MAX + 700];
	const char *workdir = NULL;
	size_t nlowers = 0;
	enum diff_format fmt = FMT_TEXT;
	int status = parse_args(argc, argv, &fmt, &lowers, &nlowers, &workdir);

	if (status)
		goto out_lowers; /* said */
	status = pick_branches(argv[optind], lowers, nlowers, workdir, &p, err, sizeof(err));
	if (status == SFS_EXIT_USAGE) {
		status = sfs_cli_usage_error(&sfs_cmd_diff, "%s", err);
		goto out_lowers;
	}
	if (status == 0 && (check_format(p.paths[0], p.workdir, err, sizeof(err)) < 0 ||
			    sfs_ch_union_open(&u, (const char *const *)p.paths, (unsigned)p.n,
					      p.workdir, err, sizeof(err)) < 0))
		status = SFS_EXIT_FAIL;
	if (status) {
		fprintf(stderr, "stackfs: diff: %s\n", err);
		goto out_paths;
	}
	u.use_names = true; /* a walk that changes nothing */
	status = fmt == FMT_OCI ? sfs_diff_layer(&u) : list(&u, fmt == FMT_JSON);
	sfs_ch_union_close(&u);
out_paths:
	pick_free(&p);
out_lowers:
	free(lowers);
	return status;
}

static const struct sfs_flag diff_flags[] = {
	{ NULL, "--json", NULL, "print an array of {\"path\", \"change\"} objects (a\n"
	  "moved directory also has \"from\": its old path)\n" },
	{ NULL, "--format", "FORMAT", "text (the default), json (as --json) or oci: the\n"
	  "changes as an OCI image layer, an uncompressed tar\n"
	  "stream on standard output (never a terminal)\n" },
	{ NULL, "--lower", "DIR", "a branch below BRANCH, highest first (repeat);\n"
	  "not with a MOUNTPOINT\n" },
	{ NULL, "--workdir", "DIR", "BRANCH's metadata (.stackfs) is in DIR, the\n"
	  "workdir of an overlay-style mount; default: the\n"
	  "workdir BRANCH's root records, else BRANCH\n" },
	{ 0 }
};

const struct sfs_cmd sfs_cmd_diff = {
	.name = "diff",
	.run = run_diff,
	.usage = "usage: stackfs diff [--json] [--format FORMAT] [--lower DIR]... [--workdir DIR] "
		 "BRANCH|MOUNTPOINT",
	.summary = "List what a rw branch changes relative to the branches below it",
	.help =
		"One line per changed path, sorted by path (bytes), like docker diff:\n"
		"  A /path   added: not in the branches below\n"
		"  C /path   changed: a file of the rw branch over one below, a directory\n"
		"            whose type, mode, owner or xattrs changed, an opaque directory\n"
		"            (its content replaced) or a moved one landing on a name below\n"
		"  D /path   deleted: a whiteout hides it (a directory: only its own line)\n"
		"A moved directory shows as D of its old path and A of the new one, then\n"
		"what changed inside it relative to its old content. In a path, '\\' is\n"
		"written '\\\\', a newline '\\n', other control characters '\\xHH'.\n"
		"\n"
		"--format=oci writes the same changes as an OCI image layer (a tar\n"
		"archive): added and changed entries with their content, mode, owner,\n"
		"mtime and xattrs (ACLs included), hard links, deletions as .wh.NAME\n"
		"whiteouts, a replaced directory as DIR/.wh..wh..opq and all its\n"
		"content, a moved one as a whiteout of its old path and all its\n"
		"content at the new one. Sockets are left out (said on stderr).\n"
		"\n"
		"MOUNTPOINT: the highest rw branch of that live mount, against the\n"
		"branches below it. BRANCH: a branch directory, against the branches\n"
		"below it in its last mount (.stackfs/lowers, in BRANCH or in the\n"
		"workdir holding its metadata), or those given with --lower.\n"
		"Exit status: 0 (also when there are changes), 1 an operation error (an\n"
		"entry that could not be read: the list is printed but incomplete; the\n"
		"layer is not written, or ends cut short so that tar says so), 2 a\n"
		"usage error (--format=oci to a terminal too).\n",
	.flags = diff_flags,
};
