/* The driver of a commit (commit.h): the checks, the union of the
 * branches, the list of changes (which also proves that everything can
 * be read before anything changes), then the plan, the staging, the
 * tree, the end; and after a failure, what the journal undoes. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/bio.h"
#include "union/commit_int.h"
#include "whiteout/metadir.h"

/* ------------------------------------------------------------ reporting */

int sfs_commit_fail(struct commit *c, int err, const char *path, const char *what)
{
	if (!c->err) {
		c->err = err;
		c->err_path = strdup(path && path[0] ? path : "/");
		c->err_what = what;
	}
	return err;
}

int sfs_commit_stopped(struct commit *c, const char *path)
{
	return c->o->stop && *c->o->stop ? sfs_commit_fail(c, -EINTR, path, "stopped by a signal")
					 : 0;
}

int sfs_commit_step(struct commit *c, const char *vpath)
{
	c->done++;
	if (c->o->progress)
		c->o->progress(c->o->arg, c->done, c->total, vpath);
	return sfs_commit_stopped(c, vpath);
}

char *sfs_commit_path(struct commit *c, const char *dir, const char *name)
{
	char *p = sfs_ch_join(dir[0] ? dir : "/", name);

	if (!p)
		sfs_commit_fail(c, -ENOMEM, dir, "");
	return p;
}

int sfs_commit_refuse(struct commit *c, enum sfs_commit_outcome how, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->r->msg, sizeof(c->r->msg), fmt, ap);
	va_end(ap);
	c->r->outcome = how;
	return -1;
}

/* ------------------------------------------------------------ the union */

int sfs_commit_header(int at_fd, struct sfs_header *h)
{
	uint8_t buf[128];
	int dir = sfs_do_open(at_fd, SFS_METADIR_NAME, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	int fd = dir < 0 ? -1 : sfs_do_open(dir, SFS_META_HEADER, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf));

	if (fd >= 0)
		close(fd);
	if (dir >= 0)
		close(dir);
	if (n < 0 || sfs_header_parse(buf, (size_t)n, h) != SFS_HDR_OK)
		return -1;
	return 0;
}

/* The whiteout style a branch's header records, or -1. */
static int header_style(int at_fd)
{
	struct sfs_header h;

	if (sfs_commit_header(at_fd, &h) < 0)
		return -1;
	return h.flags & SFS_META_F_OVERLAY ? SFS_WH_OVERLAY : SFS_WH_AUFS;
}

/* RW over LOWER over the branches below; the marks written into LOWER
 * in the style of LOWER's header, else RW's, else aufs. */
static int open_union(struct commit *c, char **below, size_t nbelow)
{
	const char **paths = calloc(nbelow + 2, sizeof(*paths));
	char err[PATH_MAX + 300];
	int st1, st0, ret = 0;

	if (!paths)
		return sfs_commit_refuse(c, SFS_COMMIT_REFUSED, "%s", strerror(ENOMEM));
	paths[0] = c->rw;
	paths[1] = c->into;
	for (size_t i = 0; i < nbelow; i++)
		paths[i + 2] = below[i];
	if (sfs_ch_union_open(&c->u, paths, (unsigned)nbelow + 2, c->loc[0].workdir, err,
			      sizeof(err)) < 0)
		ret = sfs_commit_refuse(c, SFS_COMMIT_REFUSED, "%s", err);
	free(paths);
	if (ret < 0)
		return ret;
	c->u.split = 2;
	c->deep = nbelow > 0;
	st1 = header_style(c->br[1].at_fd);
	st0 = header_style(c->br[0].at_fd);
	c->style = st1 >= 0 ? (enum sfs_whiteout_style)st1 :
		   st0 >= 0 ? (enum sfs_whiteout_style)st0 : SFS_WH_AUFS;
	return 0;
}

/* Everything before the first change: 0, or -1 refused (r->msg). */
static int prepare(struct commit *c)
{
	char **below = NULL;
	size_t nbelow = 0;
	int ret = sfs_commit_check(c);

	if (ret == 0)
		ret = sfs_commit_below(c, &below, &nbelow);
	if (ret == 0)
		ret = open_union(c, below, nbelow);
	sfs_ch_names_free(below, nbelow);
	if (ret < 0)
		return ret;
	/* what will change (also checks that everything can be read) */
	ret = sfs_changes_list(&c->u, NULL, &c->r->changes);
	if (ret < 0)
		return sfs_commit_refuse(c, SFS_COMMIT_REFUSED, "%s: %s: nothing was changed", c->rw,
					 ret == -EIO ? "some entries could not be read (see stackfs diff)"
						     : strerror(-ret));
	return 0;
}

/* ------------------------------------------------------------ the commit */

/* Applies the rw branch to the lower one: 0 or -errno (c->err says
 * where). */
static int apply(struct commit *c)
{
	struct sfs_ch_stack *V = NULL;
	int ret = sfs_ch_root(&c->u, 0, &V);

	if (ret < 0)
		return sfs_commit_fail(c, ret, "/", "opening the roots");
	ret = sfs_commit_plan(c, V);
	if (ret == 0)
		ret = sfs_commit_stage(c);
	if (ret == 0)
		ret = sfs_commit_apply_root(c, V);
	sfs_ch_stack_free(V);
	return ret;
}

/* What a failed commit leaves: never anything to delete by hand (what is
 * left holds data); the journal is what to recover by. */
static void failed(struct commit *c)
{
	struct sfs_commit_result *r = c->r;

	r->outcome = SFS_COMMIT_FAILED;
	if (!c->jnl_written)
		r->left = SFS_COMMIT_LEFT_NOTHING;
	else if (c->jnl.phase == SFS_JNL_APPLIED)
		r->left = SFS_COMMIT_LEFT_UNEMPTIED;
	else if (sfs_commit_undo(c, r->undo_msg, sizeof(r->undo_msg)) < 0)
		r->left = SFS_COMMIT_LEFT_JOURNAL;
	else
		r->left = SFS_COMMIT_LEFT_UNDONE;
}

static void release(struct commit *c)
{
	for (size_t i = 0; i < c->nmv; i++) {
		free(c->mv[i].vpath);
		free(c->mv[i].src);
		sfs_ch_stack_free(c->mv[i].deep);
	}
	free(c->mv);
	for (size_t i = 0; i < c->caplinks; i++)
		free(c->links[i].path);
	free(c->links);
	for (size_t i = 0; i < c->nix; i++)
		free(c->ix[i].vpath);
	free(c->ix);
	if (c->stage_fd >= 0)
		close(c->stage_fd);
	free(c->err_path);
	sfs_ch_union_close(&c->u);
	sfs_jnl_free(&c->jnl);
	if (c->lock_rw >= 0)
		close(c->lock_rw);
	if (c->lock_lo >= 0)
		close(c->lock_lo);
	for (int i = 0; i < 2; i++) {
		sfs_metaloc_close(&c->loc[i]);
		if (c->br[i].root_fd >= 0)
			close(c->br[i].root_fd);
	}
}

enum sfs_commit_outcome sfs_commit_run(const struct sfs_commit_opts *o,
				       struct sfs_commit_result *r)
{
	struct commit c = {
		.o = o, .r = r, .rw = o->rw, .into = o->into, .keep = o->keep,
		.lock_rw = -1, .lock_lo = -1, .stage_fd = -1, .style = SFS_WH_AUFS,
		.u.index_fd = -1, .br = { { -1, -1 }, { -1, -1 } },
		.loc = { { .wd_fd = -1 }, { .wd_fd = -1 } },
	};
	int ret;

	memset(r, 0, sizeof(*r));
	if (prepare(&c) == 0) {
		ret = apply(&c);
		if (ret == 0)
			ret = sfs_commit_finish(&c, &r->emptied);
		if (ret < 0)
			failed(&c);
	}
	r->done = c.done;
	r->total = c.total;
	r->err = c.err;
	r->err_path = c.err_path;
	r->err_what = c.err_what;
	if (c.loc[0].workdir)
		snprintf(r->workdir, sizeof(r->workdir), "%s", c.loc[0].workdir);
	c.err_path = NULL;
	release(&c);
	return r->outcome;
}

void sfs_commit_result_free(struct sfs_commit_result *r)
{
	sfs_changes_free(&r->changes);
	free(r->err_path);
	r->err_path = NULL;
}
