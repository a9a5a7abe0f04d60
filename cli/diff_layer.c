/* stackfs diff --format=oci: the changes of a rw branch as an OCI image
 * layer on standard output (union/ocilayer.c writes it). The changes
 * are listed first: when an entry cannot be read there, no layer is
 * written at all. Then the archive, with the progress line on a
 * terminal, a line on stderr for each entry left out (a socket) and one
 * for the error that stops it, after which the archive is left visibly
 * cut short and the exit status is 1. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "common/escape.h"
#include "union/ocilayer.h"

#define PROGRESS_DELAY_NS 500000000LL

static void on_progress(void *arg, uint64_t n, const char *path)
{
	struct sfs_progress *bar = arg;
	char prefix[64];

	if (!sfs_progress_due(bar))
		return;
	snprintf(prefix, sizeof(prefix), "diff: layer: %llu entries: ", (unsigned long long)n);
	sfs_progress_show(bar, prefix, path);
}

static void on_left_out(void *arg, const char *path, const char *why)
{
	sfs_progress_erase(arg);
	sfs_errmsg("diff: %s: left out of the layer: %s", path, why);
}

static void on_error(void *arg, const char *path, int err, const char *why)
{
	sfs_progress_erase(arg);
	if (!path)
		sfs_errmsg("diff: writing the layer: %s", strerror(err));
	else
		sfs_errmsg("diff: %s: %s", path, why ? why : strerror(err));
}

int sfs_diff_layer(struct sfs_ch_union *u)
{
	struct sfs_progress bar;
	struct sfs_oci_opts o = {
		.progress = on_progress, .left_out = on_left_out, .error = on_error, .arg = &bar,
	};
	struct sfs_oci_stats stats;
	struct sfs_changes ch = { 0 };
	unsigned problems = 0;
	int ret = sfs_diff_collect(u, &ch, &problems), status = SFS_EXIT_FAIL;

	if (ret < 0) {
		if (ret != -ENOMEM)
			sfs_errmsg("diff: %u entr%s could not be read (see above): no layer written",
				   problems, problems == 1 ? "y" : "ies");
		goto out;
	}
	sfs_progress_init(&bar, PROGRESS_DELAY_NS);
	ret = sfs_oci_write(u, &ch, STDOUT_FILENO, &o, &stats);
	sfs_progress_erase(&bar);
	if (ret < 0) {
		sfs_errmsg("diff: the layer is incomplete: cut short after %llu entries "
			   "(tar reports the archive truncated)",
			   (unsigned long long)(stats.entries + stats.markers));
		goto out;
	}
	status = SFS_EXIT_OK;
out:
	sfs_changes_free(&ch);
	return status;
}
