/* stackfs commit: folds a rw branch into the branch below it, so that the
 * lower branch alone shows what the union of the two showed; then empties
 * the rw branch (unless --keep). The work is the union library's
 * (union/commit.h); here: the options, the stop signals, the progress
 * line, what is said on stdout and stderr, --json and the exit code. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "common/runtime.h"
#include "union/commit.h"
#include "whiteout/journal.h"
#include "whiteout/metadir.h"

/* SIGINT, SIGTERM, SIGHUP: the commit stops before its next step and is
 * undone (a stop while the rw branch is being emptied finishes that). */
static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

static void on_progress(void *arg, uint64_t done, uint64_t total, const char *path)
{
	struct sfs_progress *bar = arg;
	char prefix[80];

	if (!sfs_progress_due(bar))
		return;
	snprintf(prefix, sizeof(prefix), "commit: %llu/%llu entries: ",
		 (unsigned long long)done, (unsigned long long)total);
	sfs_progress_show(bar, prefix, path[0] ? path : "/");
}

static void on_message(void *arg, const char *msg)
{
	sfs_progress_erase(arg);
	fprintf(stderr, "stackfs: commit: %s\n", msg);
}

static int on_lock_holder(void *arg, int at_fd, char *buf, size_t len)
{
	(void)arg;
	return sfs_runtime_lock_holder(at_fd, buf, len);
}

static pid_t on_in_use(void *arg, const struct stat *dir)
{
	return sfs_cli_daemon_using(dir);
}

/* ------------------------------------------------------------ output */

static void print_changes(const struct sfs_changes *ch)
{
	for (size_t i = 0; i < ch->n; i++) {
		fputs(i ? ",\n    {\"path\": " : "\n    {\"path\": ", stdout);
		sfs_json_str(stdout, ch->v[i].path);
		printf(", \"change\": \"%c\"", ch->v[i].kind);
		if (ch->v[i].from) {
			fputs(", \"from\": ", stdout);
			sfs_json_str(stdout, ch->v[i].from);
		}
		putchar('}');
	}
}

static void print_json(const struct sfs_commit_opts *o, const struct sfs_commit_result *r,
		       int status)
{
	const struct sfs_changes *ch = &r->changes;

	printf("{\n  \"branch\": ");
	sfs_json_str(stdout, o->rw);
	printf(",\n  \"into\": ");
	sfs_json_str(stdout, o->into);
	printf(",\n  \"keep\": %s,\n  \"emptied\": %s,\n  \"added\": %u,\n  \"changed\": %u,\n"
	       "  \"deleted\": %u,\n  \"changes\": [", o->keep ? "true" : "false",
	       r->emptied ? "true" : "false", ch->added, ch->changed, ch->deleted);
	print_changes(ch);
	printf("%s],\n  \"error\": ", ch->n ? "\n  " : "");
	if (r->err) {
		char msg[PATH_MAX + 200];

		snprintf(msg, sizeof(msg), "%s: %s: %s", r->err_path ? r->err_path : "",
			 r->err_what ? r->err_what : "", strerror(-r->err));
		sfs_json_str(stdout, msg);
	} else if (r->outcome == SFS_COMMIT_REFUSED && r->msg[0]) {
		sfs_json_str(stdout, r->msg);
	} else {
		fputs("null", stdout);
	}
	printf(",\n  \"exit\": %d\n}\n", status);
}

/* What a failed commit left, on stderr: never advice to delete anything
 * (what is left holds data); the journal is what to recover by. */
static void report_failure(const struct sfs_commit_opts *o, const struct sfs_commit_result *r)
{
	const char *rw = o->rw, *into = o->into;

	fprintf(stderr, "stackfs: commit: %s: %s: %s\n", r->err_path ? r->err_path : "?",
		r->err_what ? r->err_what : "", strerror(-r->err));
	switch (r->left) {
	case SFS_COMMIT_LEFT_NOTHING:
		fprintf(stderr, "stackfs: commit: stopped before anything was changed\n");
		break;
	case SFS_COMMIT_LEFT_UNEMPTIED:
		fprintf(stderr, "stackfs: commit: %s holds the changes, but %s was not emptied "
			"completely: run stackfs commit %s --into %s again (or stackfs fsck --repair "
			"%s) to finish\n", into, rw, rw, into, rw);
		break;
	case SFS_COMMIT_LEFT_JOURNAL:
		fprintf(stderr, "stackfs: commit: undoing: %s\n", r->undo_msg);
		fprintf(stderr, "stackfs: commit: stopped after %llu of %llu entries; the journal "
			"%s/%s/%s is kept: run stackfs commit %s --into %s again, or stackfs fsck "
			"--repair %s (do not remove anything by hand)\n",
			(unsigned long long)r->done, (unsigned long long)r->total,
			r->workdir[0] ? r->workdir : rw, SFS_METADIR_NAME, SFS_META_COMMIT, rw,
			into, rw);
		break;
	case SFS_COMMIT_LEFT_UNDONE:
		fprintf(stderr, "stackfs: commit: stopped after %llu of %llu entries and undone: the "
			"union of %s over %s shows what it showed before (%s holds copies of some of "
			"%s's entries, hidden by it); %s was left as it was\n",
			(unsigned long long)r->done, (unsigned long long)r->total, rw, into, into, rw,
			rw);
		break;
	}
}

/* The outcome said, and the exit code. */
static int report(const struct sfs_commit_opts *o, const struct sfs_commit_result *r, bool json)
{
	const struct sfs_changes *ch = &r->changes;

	switch (r->outcome) {
	case SFS_COMMIT_USAGE:
		return sfs_cli_usage_error(&sfs_cmd_commit, "%s", r->msg);
	case SFS_COMMIT_REFUSED:
		fprintf(stderr, "stackfs: commit: %s\n", r->msg);
		break;
	case SFS_COMMIT_FAILED:
		report_failure(o, r);
		break;
	case SFS_COMMIT_DONE:
		if (!json)
			printf("%s committed into %s: %u added, %u changed, %u deleted; %s\n", o->rw,
			       o->into, ch->added, ch->changed, ch->deleted,
			       o->keep ? "the rw branch was kept (--keep)" : "the rw branch was emptied");
		break;
	}
	return r->outcome == SFS_COMMIT_DONE ? SFS_EXIT_OK : SFS_EXIT_FAIL;
}

/* ------------------------------------------------------------ command */

static const struct option long_opts[] = {
	{ "into", required_argument, NULL, 'i' },
	{ "keep", no_argument, NULL, 'k' },
	{ "json", no_argument, NULL, 'j' },
	{ NULL, 0, NULL, 0 },
};

/* The options into o: 0, or the usage error's exit code. */
static int parse_args(int argc, char **argv, struct sfs_commit_opts *o, bool *json)
{
	int opt;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'i':
			o->into = optarg;
			break;
		case 'k':
			o->keep = true;
			break;
		case 'j':
			*json = true;
			break;
		default:
			if (optopt == 'i' || (optind > 1 && !strcmp(argv[optind - 1], "--into")))
				return sfs_cli_usage_error(&sfs_cmd_commit, "--into needs a directory");
			return sfs_cli_usage_error(&sfs_cmd_commit, "unknown option '%s'",
						   argv[optind - 1]);
		}
	}
	if (optind == argc)
		return sfs_cli_usage_error(&sfs_cmd_commit, "a RWBRANCH is needed");
	if (optind + 1 < argc)
		return sfs_cli_usage_error(&sfs_cmd_commit, "unexpected argument '%s'",
					   argv[optind + 1]);
	if (!o->into)
		return sfs_cli_usage_error(&sfs_cmd_commit, "--into LOWERBRANCH is needed");
	o->rw = argv[optind];
	return 0;
}

static int run_commit(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_stop };
	struct sfs_progress bar;
	struct sfs_commit_opts o = {
		.stop = &stop_signal, .progress = on_progress, .message = on_message,
		.in_use = on_in_use, .lock_holder = on_lock_holder, .arg = &bar,
	};
	struct sfs_commit_result r;
	bool json = false;
	int status = parse_args(argc, argv, &o, &json);

	if (status)
		return status;
	sfs_progress_init(&bar, 0);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sfs_commit_run(&o, &r);
	sfs_progress_erase(&bar);
	status = report(&o, &r, json);
	if (json && r.outcome != SFS_COMMIT_USAGE)
		print_json(&o, &r, status);
	sfs_commit_result_free(&r);
	return status;
}

static const struct sfs_flag commit_flags[] = {
	{ NULL, "--into", "DIR", "the lower branch (required)\n" },
	{ NULL, "--keep", NULL, "leave RWBRANCH as it is (else it is emptied, but\n"
	  ".stackfs)\n" },
	{ NULL, "--json", NULL, "print the result as one JSON object\n" },
	{ 0 }
};

const struct sfs_cmd sfs_cmd_commit = {
	.name = "commit",
	.run = run_commit,
	.usage = "usage: stackfs commit [--keep] [--json] RWBRANCH --into LOWERBRANCH",
	.summary = "Fold a rw branch into the branch below it",
	.help =
		"Applies the changes of RWBRANCH to LOWERBRANCH, the branch just below it:\n"
		"new and changed files are copied (data with holes or as a reflink, owner,\n"
		"mode, xattrs, ACLs, ns times, inode flags; hard links stay links), each\n"
		"under a temporary name renamed into place; whiteouts become deletions,\n"
		"opaque directories replace the lower ones, moved directories move the\n"
		"lower ones. Afterwards LOWERBRANCH shows what the union of the two showed.\n"
		"With branches below LOWERBRANCH in RWBRANCH's last mount (its\n"
		".stackfs/lowers), LOWERBRANCH keeps whiteouts and marks where they are\n"
		"needed to hide or find what those branches hold.\n"
		"Refused while either branch is used by a mounted stackfs. A journal in\n"
		"RWBRANCH's .stackfs (in the workdir its root records, for the upper of an\n"
		"overlay-style mount) makes it safe to interrupt: an error or SIGINT,\n"
		"SIGTERM, SIGHUP undoes it; a killed commit is finished or undone by the\n"
		"next `stackfs commit` of the same branches or by `stackfs fsck --repair`\n"
		"of either (until then neither branch mounts).\n"
		"Exit status: 0 success, 1 an error (what was done is reported), 2 usage.\n",
	.flags = commit_flags,
};
