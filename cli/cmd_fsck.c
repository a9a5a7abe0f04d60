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
#include "stackfs/runtime.h"
#include "whiteout/fsck.h"
#include "whiteout/metadir.h"

#define FSCK_EXIT_OPERR SFS_FSCK_OPERR

struct out {
	const char *branch;
	bool json, repair;
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
	struct stat root, st;
	struct dirent *e;
	pid_t found = 0;
	DIR *proc;

	if (fstat(root_fd, &root) < 0 || !(proc = opendir("/proc")))
		return 0;
	while (!found && (e = readdir(proc))) {
		char p[600], exe[PATH_MAX];
		const char *base;
		struct dirent *fe;
		DIR *fds;
		ssize_t n;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(p, sizeof(p), "/proc/%s/exe", e->d_name);
		n = readlink(p, exe, sizeof(exe) - 1);
		if (n <= 0)
			continue;
		exe[n] = 0;
		if (strstr(exe, " (deleted)"))
			*strstr(exe, " (deleted)") = 0;
		base = strrchr(exe, '/');
		if (!base || strcmp(base + 1, "stackfsd") || atoi(e->d_name) == getpid())
			continue;
		snprintf(p, sizeof(p), "/proc/%s/fd", e->d_name);
		fds = opendir(p);
		if (!fds)
			continue;
		while ((fe = readdir(fds))) {
			snprintf(p, sizeof(p), "/proc/%s/fd/%s", e->d_name, fe->d_name);
			if (fe->d_name[0] != '.' && stat(p, &st) == 0 &&
			    st.st_dev == root.st_dev && st.st_ino == root.st_ino) {
				found = (pid_t)atoi(e->d_name);
				break;
			}
		}
		closedir(fds);
	}
	closedir(proc);
	return found;
}

/* ------------------------------------------------------------ a view */

/* When root_fd is inside a stackfs view: 1 with a message naming the rw
 * branches to check instead. The view merges the branches and hides the
 * marks fsck checks: checked as a tree it would always look clean. */
static int view_refusal(int root_fd, char *msg, size_t len)
{
	char mp[PATH_MAX], err[256], *p = msg;
	struct mbranch *v = NULL;
	size_t n = 0, left = len;
	unsigned ma, mi;
	int ret = sfs_cli_stackfs_view(root_fd, mp, sizeof(mp)), w;

	if (ret <= 0)
		return 0;
	w = snprintf(p, left, "a stackfs view (the mount on %s), not a branch: ", mp);
	p += w, left -= (size_t)w < left ? (size_t)w : left;
	if (sfs_runtime_find_mount(mp, &ma, &mi, NULL, 0) < 0 ||
	    sfs_diff_mount_branches(mp, ma, mi, &v, &n, err, sizeof(err)) < 0) {
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
	sfs_diff_mbranches_free(v, n);
	return 1;
}

/* ------------------------------------------------------------ command */

static const struct option long_opts[] = {
	{ "repair", no_argument, NULL, 'r' },
	{ "json", no_argument, NULL, 'j' },
	{ "lower", required_argument, NULL, 'l' },
	{ "force", no_argument, NULL, 'f' },
	{ NULL, 0, NULL, 0 },
};

static int run_fsck(int argc, char **argv)
{
	struct sfs_fsck_result res = { 0 };
	struct out o = { 0 };
	struct sfs_fsck_opts fo = { 0 };
	const char **lowers = NULL;
	size_t nlowers = 0;
	bool in_use = false, force = false;
	int c, status, root_fd = -1, lock_fd = -1;
	pid_t holder;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "rjl:", long_opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			o.repair = true;
			break;
		case 'f':
			force = true;
			break;
		case 'j':
			o.json = true;
			break;
		case 'l': {
			const char **v = realloc(lowers, (nlowers + 1) * sizeof(*v));

			if (!v) {
				fprintf(stderr, "stackfs: fsck: out of memory\n");
				free(lowers);
				return FSCK_EXIT_OPERR;
			}
			lowers = v;
			lowers[nlowers++] = optarg;
			break;
		}
		default:
			free(lowers);
			if (optopt == 'l' || (optind > 1 && !strcmp(argv[optind - 1], "--lower")))
				sfs_cli_usage_error(&sfs_cmd_fsck, "--lower needs a directory");
			else
				sfs_cli_usage_error(&sfs_cmd_fsck, "unknown option '%s'",
						    argv[optind - 1]);
			return FSCK_EXIT_OPERR;
		}
	}
	/* getopt_long permuted the operands to the end: options may follow
	 * the branch */
	if (optind + 1 != argc) {
		free(lowers);
		if (optind == argc)
			sfs_cli_usage_error(&sfs_cmd_fsck, "a BRANCH is needed");
		else
			sfs_cli_usage_error(&sfs_cmd_fsck, "unexpected argument '%s'",
					    argv[optind + 1]);
		return FSCK_EXIT_OPERR;
	}
	o.branch = argv[optind];

	sfs_progress_init(&o.bar, 0);
	root_fd = open(o.branch, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0) {
		on_message(&o, true, strerror(errno));
		status = FSCK_EXIT_OPERR;
		goto out;
	}
	{
		char msg[PATH_MAX + 512];

		if (view_refusal(root_fd, msg, sizeof(msg))) {
			on_message(&o, true, msg);
			status = FSCK_EXIT_OPERR;
			goto out;
		}
	}
	/* a mount holds the lock for its life; --repair holds it too, so a
	 * mount cannot start while it runs */
	lock_fd = sfs_meta_lock(root_fd, o.repair);
	holder = lock_fd == -EBUSY ? 0 : daemon_holding(root_fd);
	in_use = lock_fd == -EBUSY || holder > 0;
	if (in_use && o.repair) {
		char msg[128];

		if (holder > 0)
			snprintf(msg, sizeof(msg), "branch is in use by a mounted stackfs "
				 "(stackfsd pid %d): not repaired", (int)holder);
		else
			snprintf(msg, sizeof(msg), "branch is in use by a mounted stackfs: not repaired");
		on_message(&o, true, msg);
		status = FSCK_EXIT_OPERR;
		goto out;
	}
	if (in_use)
		on_message(&o, false, "branch is in use by a mounted stackfs: what is found "
			   "may change while fsck runs");
	if (lock_fd >= 0 && !o.repair) {
		close(lock_fd);         /* a mount may start meanwhile */
		lock_fd = -1;
	}
	fo.branch = o.branch;
	fo.root_fd = root_fd;
	fo.repair = o.repair;
	fo.force = force;
	fo.in_use = in_use;
	fo.lowers = lowers;
	fo.nlowers = nlowers;
	fo.report = on_report;
	fo.message = on_message;
	fo.progress = on_progress;
	fo.arg = &o;
	status = sfs_fsck_run(&fo, &res);
	sfs_progress_erase(&o.bar);
	if (!o.json) {
		if (!res.found && !res.op_error)
			printf("%s: clean\n", o.branch);
		else
			printf("%s: %u problem%s found, %u fixed, %u left%s\n", o.branch,
			       res.found, res.found == 1 ? "" : "s", res.fixed, res.left,
			       res.op_error ? "; some checks could not be done (see the errors)" : "");
	}
out:
	if (o.json)
		print_json(&o, root_fd >= 0 ? &res : NULL, in_use, status);
	sfs_fsck_result_free(&res);
	out_free(&o);
	if (lock_fd >= 0)
		close(lock_fd);
	if (root_fd >= 0)
		close(root_fd);
	free(lowers);
	return status;
}

const struct sfs_cmd sfs_cmd_fsck = {
	.name = "fsck",
	.run = run_fsck,
	.usage = "usage: stackfs fsck [--repair [--force]] [--json] [--lower DIR]... BRANCH",
	.summary = "Check (and repair) a branch's metadata and whiteouts",
	.help =
		"Checks the metadata directory .stackfs of BRANCH (header, registry,\n"
		"inode map, staging and index directories) and, in its tree, whiteouts,\n"
		"opaque markers, redirects, origin records and reserved names.\n"
		"A stackfs mount point (a view) is refused: fsck its rw branches.\n"
		"\n"
		"  --repair     fix what is safe to fix (refused while the branch is in\n"
		"               use by a mounted stackfs)\n"
		"  --json       print the result as one JSON object on stdout\n"
		"  --lower DIR  a branch below BRANCH, highest first (repeat); default:\n"
		"               those below it in the last mount (.stackfs/lowers), each\n"
		"               checked to be the branch that was mounted (registry)\n"
		"  --force      repair what lower branches decide also when they are\n"
		"               not branches the registry records\n"
		"\n"
		"Exit status (ORed, like e2fsck): 0 clean, 1 problems fixed, 4 problems\n"
		"left, 8 usage or operational error.\n",
};
