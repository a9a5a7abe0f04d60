/* stackfs fsck: checks a branch's metadata directory and the union's
 * marks in its tree (whiteout/fsck.c), and with --repair fixes what is
 * safe to fix. Exit status like e2fsck's, ORed: 0 clean, 1 problems
 * fixed, 4 problems left, 8 usage or operational error. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "common/runtime.h"
#include "whiteout/fsck.h"
#include "whiteout/metadir.h"

#define FSCK_EXIT_OPERR SFS_FSCK_OPERR

struct out {
	const char *branch;
	const char *workdir;       /* holding its metadata dir, or NULL */
	bool json, repair, thorough;
	/* progress line */
	struct sfs_progress bar;
	/* collected for --json */
	struct sfs_fsck_problem *probs;
	size_t nprobs;
	char **notes, **errors;
	size_t nnotes, nerrors;
};

/* ------------------------------------------------------------ output */

static void on_progress(void *arg, uint64_t entries, const char *path)
{
	struct out *o = arg;
	char prefix[64];

	if (!sfs_progress_due(&o->bar))
		return;
	snprintf(prefix, sizeof(prefix), "fsck: %llu entries checked: ",
		 (unsigned long long)entries);
	sfs_progress_show(&o->bar, prefix, path);
}

static void push(char ***v, size_t *n, const char *s)
{
	char **nv = realloc(*v, (*n + 1) * sizeof(**v));

	if (!nv)
		return;
	*v = nv;
	if (((*v)[*n] = strdup(s)))
		(*n)++;
}

static void on_message(void *arg, bool error, const char *msg)
{
	struct out *o = arg;

	sfs_progress_erase(&o->bar);
	if (error) {
		fprintf(stderr, "stackfs: fsck: %s: %s\n", o->branch, msg);
		push(&o->errors, &o->nerrors, msg);
	} else if (o->json) {
		push(&o->notes, &o->nnotes, msg);
	} else {
		printf("note: %s\n", msg);
	}
}

static void on_report(void *arg, const struct sfs_fsck_problem *p)
{
	const struct sfs_problem_desc *d = sfs_problem_desc(p->code);
	struct out *o = arg;

	sfs_progress_erase(&o->bar);
	if (o->json) {
		struct sfs_fsck_problem *v = realloc(o->probs, (o->nprobs + 1) * sizeof(*v));

		if (!v)
			return;
		o->probs = v;
		v[o->nprobs] = *p;
		v[o->nprobs].path = strdup(p->path);
		v[o->nprobs].detail = p->detail ? strdup(p->detail) : NULL;
		o->nprobs++;
		return;
	}
	printf("%s: %s%s%s%s [%s]\n", p->path, d->description,
	       p->detail ? " (" : "", p->detail ? p->detail : "", p->detail ? ")" : "",
	       d->name);
	if (p->fixed)
		printf("  fixed: %s\n", d->fix);
	else if (p->fix_tried)
		printf("  fix failed: %s\n", strerror(-p->fix_err));
	else if (d->fixable && !o->repair)
		printf("  not fixed (run with --repair): %s\n", d->fix);
	else
		printf("  not fixed: %s\n", d->fix);
	fflush(stdout);
}

static void json_strs(FILE *f, char **v, size_t n)
{
	fputc('[', f);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputs(", ", f);
		sfs_json_str(f, v[i]);
	}
	fputc(']', f);
}

static void print_json(struct out *o, const struct sfs_fsck_result *r, bool in_use,
		       int status)
{
	FILE *f = stdout;

	fputs("{\n  \"branch\": ", f);
	sfs_json_str(f, o->branch);
	fputs(",\n  \"workdir\": ", f);
	sfs_json_str(f, o->workdir);
	fprintf(f, ",\n  \"repair\": %s,\n  \"in_use\": %s,\n  \"lowers\": ",
		o->repair ? "true" : "false", in_use ? "true" : "false");
	if (r && r->lowers_known)
		json_strs(f, r->lowers, r->nlowers);
	else
		fputs("null", f);
	fputs(",\n  \"problems\": [", f);
	for (size_t i = 0; i < o->nprobs; i++) {
		const struct sfs_fsck_problem *p = &o->probs[i];
		const struct sfs_problem_desc *d = sfs_problem_desc(p->code);

		fputs(i ? ",\n    {" : "\n    {", f);
		fputs("\"code\": ", f);
		sfs_json_str(f, d->name);
		fputs(", \"path\": ", f);
		sfs_json_str(f, p->path);
		fputs(", \"description\": ", f);
		sfs_json_str(f, d->description);
		fputs(", \"detail\": ", f);
		sfs_json_str(f, p->detail);
		fprintf(f, ", \"fixable\": %s, \"fixed\": %s, \"fix\": ",
			d->fixable ? "true" : "false", p->fixed ? "true" : "false");
		sfs_json_str(f, d->fix);
		fputs(", \"fix_error\": ", f);
		sfs_json_str(f, p->fix_tried && !p->fixed ? strerror(-p->fix_err) : NULL);
		fputc('}', f);
	}
	fputs(o->nprobs ? "\n  ],\n  \"notes\": " : "],\n  \"notes\": ", f);
	json_strs(f, o->notes, o->nnotes);
	fputs(",\n  \"errors\": ", f);
	json_strs(f, o->errors, o->nerrors);
	fprintf(f, ",\n  \"found\": %u,\n  \"fixed\": %u,\n  \"left\": %u,\n  \"exit\": %d\n}\n",
		r ? r->found : 0, r ? r->fixed : 0, r ? r->left : 0, status);
	fflush(f);
}

static void out_free(struct out *o)
{
	for (size_t i = 0; i < o->nprobs; i++) {
		free(o->probs[i].path);
		free(o->probs[i].detail);
	}
	free(o->probs);
	for (size_t i = 0; i < o->nnotes; i++)
		free(o->notes[i]);
	free(o->notes);
	for (size_t i = 0; i < o->nerrors; i++)
		free(o->errors[i]);
	free(o->errors);
}

/* ------------------------------------------------------------ in use */

/* A running stackfsd holding an fd of the branch root (a mount of a
 * format before the lock, or the branch used read-only): its pid, or 0. */
static pid_t daemon_holding(int root_fd)
{
	struct stat root;

	return fstat(root_fd, &root) < 0 ? 0 : sfs_cli_daemon_holding(&root);
}

/* " (the stackfs mount on MP, stackfsd pid N)": who uses the branch,
 * by its lock (locked: held) or as the stackfsd holding its root;
 * empty when that cannot be told. */
static void in_use_by(int at_fd, bool locked, pid_t holder, char *buf, size_t len)
{
	char who[PATH_MAX + 256];

	buf[0] = '\0';
	if (locked && sfs_runtime_lock_holder(at_fd, who, sizeof(who)) == 0)
		snprintf(buf, len, " (%s)", who);
	else if (holder > 0)
		snprintf(buf, len, " (stackfsd pid %d)", (int)holder);
}

/* ------------------------------------------------------------ a view */

/* When root_fd is inside a stackfs view: 1 with a message naming the rw
 * branches to check instead. The view merges the branches and hides the
 * marks fsck checks: checked as a tree it would always look clean. */
static int view_refusal(int root_fd, const char *path, char *msg, size_t len)
{
	char mp[PATH_MAX], err[256], *p = msg;
	struct mbranch *v = NULL;
	size_t n = 0, left = len;
	unsigned ma, mi;
	int ret = sfs_cli_stackfs_view(root_fd, mp, sizeof(mp)), w;

	/* a view whose daemon is gone answers ENOTCONN (the message names
	 * the mount, and fsck names the path before it: once is enough) */
	if (ret < 0 && sfs_cli_gone_path(path, -ret, msg, len)) {
		size_t pl = strlen(path);

		if (!strncmp(msg, path, pl) && !strncmp(msg + pl, ": ", 2))
			memmove(msg, msg + pl + 2, strlen(msg + pl + 2) + 1);
		return 1;
	}
	if (ret <= 0)
		return 0;
	w = snprintf(p, left, "a stackfs view (the mount on %s), not a branch: ", mp);
	p += w, left -= (size_t)w < left ? (size_t)w : left;
	if (sfs_runtime_find_mount(mp, &ma, &mi, NULL, 0) < 0 ||
	    sfs_mbranches_of_mount(mp, ma, mi, &v, &n, err, sizeof(err)) < 0) {
		snprintf(p, left, "run fsck on its rw branches (stackfs branch list %s)", mp);
		return 1;
	}
	w = snprintf(p, left, "check its rw branches instead:");
	for (size_t i = 0; i < n && (size_t)w < left; i++) {
		if (!v[i].rw)
			continue;
		p += w, left -= w;
		w = snprintf(p, left, " stackfs fsck %s;", v[i].path);
	}
	if ((size_t)w < left && p[w - 1] == ';')
		p[w - 1] = '\0';
	sfs_mbranches_free(v, n);
	return 1;
}

/* ------------------------------------------------------------ command */

static const struct option long_opts[] = {
	{ "repair", no_argument, NULL, 'r' },
	{ "json", no_argument, NULL, 'j' },
	{ "lower", required_argument, NULL, 'l' },
	{ "force", no_argument, NULL, 'f' },
	{ "workdir", required_argument, NULL, 'w' },
	{ "thorough", no_argument, NULL, 't' },
	{ NULL, 0, NULL, 0 },
};

/* The options: 0, or FSCK_EXIT_OPERR after saying what is wrong. */
static int parse_args(int argc, char **argv, struct out *o, bool *force, const char ***lowers,
		      size_t *nlowers, const char **workdir)
{
	int c, status = 0;

	opterr = 0;
	optind = 1;
	while (status == 0 && (c = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			o->repair = true;
			break;
		case 'f':
			*force = true;
			break;
		case 'j':
			o->json = true;
			break;
		case 't':
			o->thorough = true;
			break;
		case 'w':
			*workdir = optarg;
			break;
		case 'l': {
			const char **v = realloc(*lowers, (*nlowers + 1) * sizeof(*v));

			if (!v) {
				fprintf(stderr, "stackfs: fsck: out of memory\n");
				status = FSCK_EXIT_OPERR;
				break;
			}
			*lowers = v;
			v[(*nlowers)++] = optarg;
			break;
		}
		default:
			if (optopt == 'l' || (optind > 1 && !strcmp(argv[optind - 1], "--lower")))
				sfs_cli_usage_error(&sfs_cmd_fsck, "--lower needs a directory");
			else if (optopt == 'w' ||
				 (optind > 1 && !strcmp(argv[optind - 1], "--workdir")))
				sfs_cli_usage_error(&sfs_cmd_fsck, "--workdir needs a directory");
			else
				sfs_cli_usage_error(&sfs_cmd_fsck, "unknown option '%s'",
						    argv[optind - 1]);
			status = FSCK_EXIT_OPERR;
		}
	}
	/* getopt_long permuted the operands to the end: options may follow
	 * the branch */
	if (status == 0 && optind + 1 != argc) {
		if (optind == argc)
			sfs_cli_usage_error(&sfs_cmd_fsck, "a BRANCH is needed");
		else
			sfs_cli_usage_error(&sfs_cmd_fsck, "unexpected argument '%s'",
					    argv[optind + 1]);
		status = FSCK_EXIT_OPERR;
	}
	o->branch = status ? NULL : argv[optind];
	return status;
}

/* In use by a mount (its lock, or a daemon holding the root): refused
 * with --repair, else said in a note. --repair keeps the lock in
 * *lock_fd (a mount holds it for its life: none can start while the
 * repair runs). at_fd holds the branch's .stackfs. 0 or FSCK_EXIT_OPERR. */
static int check_in_use(struct out *o, int root_fd, int at_fd, int *lock_fd, bool *in_use)
{
	char msg[PATH_MAX + 512], who[PATH_MAX + 300];
	pid_t holder;

	*lock_fd = sfs_meta_lock(at_fd, o->repair);
	holder = *lock_fd == -EBUSY ? 0 : daemon_holding(root_fd);
	*in_use = *lock_fd == -EBUSY || holder > 0;
	if (*in_use) {
		in_use_by(at_fd, *lock_fd == -EBUSY, holder, who, sizeof(who));
		snprintf(msg, sizeof(msg), "branch is in use by a mounted stackfs%s: %s", who,
			 o->repair ? "not repaired" : "what is found may change while fsck runs");
		on_message(o, o->repair, msg);
		if (o->repair)
			return FSCK_EXIT_OPERR;
	}
	if (*lock_fd >= 0 && !o->repair) {
		close(*lock_fd);        /* a mount may start meanwhile */
		*lock_fd = -1;
	}
	return 0;
}

/* The checks, and the summary line: the exit status. */
static int check(struct out *o, int root_fd, const struct sfs_metaloc *loc, bool force,
		 bool in_use, const char **lowers, size_t nlowers, struct sfs_fsck_result *res)
{
	struct sfs_fsck_opts fo = {
		.branch = o->branch, .root_fd = root_fd, .meta_at_fd = sfs_metaloc_at(loc, root_fd),
		.workdir_record = !loc->record_damaged ? SFS_FSCK_WDREC_OK :
				  loc->workdir ? SFS_FSCK_WDREC_GIVEN : SFS_FSCK_WDREC_LOST,
		.workdir = loc->workdir, .repair = o->repair, .force = force,
		.thorough = o->thorough, .in_use = in_use, .lowers = lowers, .nlowers = nlowers,
		.report = on_report, .message = on_message, .progress = on_progress, .arg = o,
	};
	int status = sfs_fsck_run(&fo, res);

	sfs_progress_erase(&o->bar);
	if (o->json)
		return status;
	if (!res->found && !res->op_error)
		printf("%s: clean\n", o->branch);
	else
		printf("%s: %u problem%s found, %u fixed, %u left%s\n", o->branch, res->found,
		       res->found == 1 ? "" : "s", res->fixed, res->left,
		       res->op_error ? "; some checks could not be done (see the errors)" : "");
	return status;
}

/* Where the branch's metadata dir is (--workdir, the workdir its root
 * records, or the root), said in a note when not the root. 0 or
 * FSCK_EXIT_OPERR (said). */
static int locate(struct out *o, int root_fd, const char *workdir, struct sfs_metaloc *loc)
{
	char msg[2 * PATH_MAX + 512];

	if (sfs_metaloc_open(root_fd, workdir, false, loc, msg, sizeof(msg)) < 0) {
		if (loc->record_damaged)
			return 0; /* WORKDIR_CORRUPT, and nothing else to check */
		on_message(o, true, msg);
		return FSCK_EXIT_OPERR;
	}
	o->workdir = loc->workdir;
	if (loc->workdir) {
		snprintf(msg, sizeof(msg), "the metadata directory is in the workdir %s: "
			 "/.stackfs below is %s/.stackfs", loc->workdir, loc->workdir);
		on_message(o, false, msg);
	}
	return 0;
}

static int run_fsck(int argc, char **argv)
{
	struct sfs_fsck_result res = { 0 };
	struct sfs_metaloc loc = { .wd_fd = -1 };
	struct out o = { 0 };
	const char **lowers = NULL, *workdir = NULL;
	size_t nlowers = 0;
	bool in_use = false, force = false;
	char msg[PATH_MAX + 512];
	int status, root_fd = -1, lock_fd = -1, at;

	status = parse_args(argc, argv, &o, &force, &lowers, &nlowers, &workdir);
	if (status)
		goto out_lowers; /* said, without --json's object */
	sfs_progress_init(&o.bar, 0);
	root_fd = open(o.branch, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0) {
		char gone[PATH_MAX + 512];
		int err = errno;

		on_message(&o, true, sfs_cli_gone_path(o.branch, err, gone, sizeof(gone)) ?
			   gone : strerror(err));
		status = FSCK_EXIT_OPERR;
		goto out;
	}
	if (view_refusal(root_fd, o.branch, msg, sizeof(msg))) {
		on_message(&o, true, msg);
		status = FSCK_EXIT_OPERR;
		goto out;
	}
	status = locate(&o, root_fd, workdir, &loc);
	at = sfs_metaloc_at(&loc, root_fd);
	if (status == 0)
		status = check_in_use(&o, root_fd, at, &lock_fd, &in_use);
	if (status == 0)
		status = check(&o, root_fd, &loc, force, in_use, lowers, nlowers, &res);
out:
	if (o.json)
		print_json(&o, root_fd >= 0 ? &res : NULL, in_use, status);
	sfs_fsck_result_free(&res);
	out_free(&o);
	if (lock_fd >= 0)
		close(lock_fd);
	sfs_metaloc_close(&loc);
	if (root_fd >= 0)
		close(root_fd);
out_lowers:
	free(lowers);
	return status;
}

static const struct sfs_flag fsck_flags[] = {
	{ NULL, "--repair", NULL, "fix what is safe to fix (refused while the branch is\n"
	  "in use by a mounted stackfs)\n" },
	{ NULL, "--force", NULL, "with --repair: repair what lower branches decide\n"
	  "also when they are not branches the registry\n"
	  "records\n" },
	{ NULL, "--json", NULL, "print the result as one JSON object on stdout\n" },
	{ NULL, "--thorough", NULL, "also read each whiteout file's inode, to report\n"
	  "one that holds data (the view hides it either way)\n" },
	{ NULL, "--lower", "DIR", "a branch below BRANCH, highest first (repeat);\n"
	  "default: those below it in the last mount\n"
	  "(.stackfs/lowers), each checked to be the branch\n"
	  "that was mounted (registry)\n" },
	{ NULL, "--workdir", "DIR", "BRANCH's metadata (.stackfs) is in DIR, the\n"
	  "workdir of an overlay-style mount; default: the\n"
	  "workdir BRANCH's root records, else BRANCH\n" },
	{ 0 }
};

const struct sfs_cmd sfs_cmd_fsck = {
	.name = "fsck",
	.run = run_fsck,
	.usage = "usage: stackfs fsck [--repair [--force]] [--json] [--thorough] [--lower DIR]... [--workdir DIR] "
		 "BRANCH",
	.summary = "Check (and repair) a branch's metadata and whiteouts",
	.help =
		"Checks the metadata directory .stackfs of BRANCH (header, registry,\n"
		"inode map, staging and index directories; in the workdir holding it\n"
		"for the upper of an overlay-style mount) and, in its tree, whiteouts,\n"
		"opaque markers, redirects, origin records and reserved names.\n"
		"A stackfs mount point (a view) is refused: fsck its rw branches.\n"
		"Exit status (ORed, like e2fsck): 0 clean, 1 problems fixed, 4 problems\n"
		"left, 8 usage or operational error.\n",
	.flags = fsck_flags,
	.usage_exit = FSCK_EXIT_OPERR,
};
