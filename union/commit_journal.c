/* A commit's journal (whiteout/journal.h) from its side: the intent
 * written before the lower branch changes at all (the marker in LOWER,
 * then RW's journal listing every lower directory that will pass
 * through the staging directory), the moves into the staging
 * directory, and the end: phase APPLIED, RW emptied, journal and marker
 * removed; or, after an error or a stop, the journal's undo. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/bio.h"
#include "union/commit_int.h"

/* ------------------------------------------------------------ the moves */

static int depth_of(const char *p)
{
	int n = 0;

	for (; *p; p++)
		n += *p == '/';
	return n;
}

static int moved_cmp(const void *a, const void *b)
{
	const struct moved *x = a, *y = b;
	int dx = x->src ? depth_of(x->src) : -1, dy = y->src ? depth_of(y->src) : -1;

	return dy - dx; /* deepest first */
}

/* Whether a planned move goes through the staging directory. */
static bool is_staged_move(const struct moved *m)
{
	return m->src && strcmp(m->src, m->vpath);
}

/* Two directories of the rw branch cannot both be moves of one lower
 * directory. */
static int check_moves(struct commit *c)
{
	for (size_t i = 0; i < c->nmv; i++)
		for (size_t j = i + 1; c->mv[i].src && j < c->nmv; j++)
			if (c->mv[j].src && !strcmp(c->mv[i].src, c->mv[j].src))
				return sfs_commit_fail(c, -EUCLEAN, c->mv[j].vpath, "planning (two "
						       "directories are moves of one lower directory)");
	return 0;
}

/* The inode of the lower branch's directory at path. */
static int lower_dir_ino(struct commit *c, const char *path, uint64_t *ino)
{
	const char *base;
	struct stat st;
	int pfd = sfs_commit_open_parent(c, path, &base), ret = 0;

	if (pfd < 0)
		return pfd;
	if (sfs_do_stat(pfd, base, &st) < 0)
		ret = -errno;
	else if (!S_ISDIR(st.st_mode))
		ret = -ENOTDIR;
	else
		*ino = st.st_ino;
	close(pfd);
	return ret;
}

/* Whether LOWER has an aufs whiteout beside the directory at path: the
 * pair that makes it LOWER's alone (union/resolve.c, the OCI rule). The
 * undo removes the whiteout beside each directory it puts back, taking
 * it for the one the commit made there (whiteout/jrecover.c, unwhite):
 * one there before would be lost with it, so such a pair is refused
 * before anything changes (fsck --repair of LOWER resolves it). */
static int pair_beside(struct commit *c, const char *path)
{
	const char *base;
	int pfd = sfs_commit_open_parent(c, path, &base), ret;

	if (pfd < 0)
		return pfd;
	ret = sfs_wh_has_aufs(pfd, base);
	close(pfd);
	return ret;
}

/* ------------------------------------------------------------ the journal */

/* The identities the journal and the marker name: the lower branch's
 * (its filesystem's UUID and root inode), the rw branch's (the same and
 * its branch UUID), and the rw root's times (put back after emptying). */
static int journal_ids(struct commit *c, struct sfs_jnl_mark *mk)
{
	struct sfs_header h;
	struct stat lst, rst;
	int lfd = c->u.b[1].root_fd, rfd = c->u.b[0].root_fd, ret;

	if (fstat(lfd, &lst) < 0 || fstat(rfd, &rst) < 0)
		return -errno;
	c->jnl.lower_ino = lst.st_ino;
	c->jnl.rw_times[0] = rst.st_atim;
	c->jnl.rw_times[1] = rst.st_mtim;
	mk->rw_ino = rst.st_ino;
	if (sfs_commit_header(c->br[0].at_fd, &h) == 0)
		memcpy(mk->rw_uuid, h.uuid, 16);
	ret = sfs_fs_uuid(lfd, c->jnl.lower_fs_uuid);
	return ret < 0 ? ret : sfs_fs_uuid(rfd, mk->rw_fs_uuid);
}

/* The journal's list of moves: each lower directory's inode, old and new
 * path, in the order they are staged (their names there: 0, 1, ...). */
static int journal_moves(struct commit *c)
{
	struct sfs_journal *j = &c->jnl;

	j->mv = calloc(c->nmv ? c->nmv : 1, sizeof(*j->mv));
	if (!j->mv)
		return sfs_commit_fail(c, -ENOMEM, "/", "");
	for (size_t i = 0; i < c->nmv; i++) {
		struct moved *m = &c->mv[i];
		struct sfs_jnl_move *jm = &j->mv[j->nmv];
		int ret;

		if (!is_staged_move(m))
			continue;
		ret = lower_dir_ino(c, m->src, &jm->ino);
		if (ret < 0)
			return sfs_commit_fail(c, ret, m->src, "finding a lower directory to move");
		ret = pair_beside(c, m->src);
		if (ret < 0)
			return sfs_commit_fail(c, ret, m->src, "finding a lower directory to move");
		if (ret > 0)
			return sfs_commit_fail(c, -EUCLEAN, m->src, "planning (a whiteout beside this "
					       "lower directory: stackfs fsck --repair of the lower "
					       "branch resolves it)");
		jm->src = strdup(m->src);
		jm->dst = strdup(m->vpath);
		j->nmv++;
		if (!jm->src || !jm->dst)
			return sfs_commit_fail(c, -ENOMEM, m->src, "");
	}
	if (j->nmv > SFS_JNL_MAX_MOVES)
		return sfs_commit_fail(c, -E2BIG, "/",
				       "planning (too many moved directories for the journal)");
	return 0;
}

/* The intent, before anything changes: the marker in LOWER (which rw
 * branch to ask), then RW's journal, each written and fsynced. A crash
 * between the two leaves a marker without a journal: nothing happened
 * yet, commit and fsck remove it. */
static int write_journal(struct commit *c)
{
	struct sfs_jnl_mark mk = { .rw = realpath(c->rw, NULL) };
	struct sfs_journal *j = &c->jnl;
	bool made = false;
	int ret;

	j->phase = SFS_JNL_MOVING;
	j->flags = c->keep ? SFS_JNL_F_KEEP : 0;
	j->pid = (uint32_t)getpid();
	j->lower = realpath(c->into, NULL);
	j->stage = strdup(c->stage_name);
	if (!mk.rw || !j->lower || !j->stage) {
		ret = sfs_commit_fail(c, -ENOMEM, "/", "writing the journal");
		goto out;
	}
	ret = journal_ids(c, &mk);
	if (ret == 0)
		ret = journal_moves(c);
	if (ret == 0 && (ret = sfs_jmark_write(c->br[1].at_fd, &mk, &made)) < 0)
		sfs_commit_fail(c, ret, c->into,
				"writing the commit marker in the lower branch's .stackfs");
	if (made)
		j->flags |= SFS_JNL_F_MADE_META;
	if (ret == 0 && (ret = sfs_jnl_write(c->br[0].at_fd, j)) < 0)
		sfs_commit_fail(c, ret, c->rw, "writing the journal .stackfs/" SFS_META_COMMIT);
	c->jnl_written = ret == 0;
out:
	free(mk.rw);
	return ret;
}

/* ------------------------------------------------------------ staging */

static int open_stage(struct commit *c)
{
	if (sfs_do_mkdirat(c->u.b[1].root_fd, c->stage_name, 0700) < 0)
		return sfs_commit_fail(c, -errno, c->stage_name, "making the staging directory");
	c->stage_fd = sfs_do_open(c->u.b[1].root_fd, c->stage_name,
				  O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (c->stage_fd < 0)
		return sfs_commit_fail(c, -errno, c->stage_name, "opening the staging directory");
	return 0;
}

/* The lower directory of m into the staging directory, as name k. */
static int stage_move(struct commit *c, struct moved *m, size_t k)
{
	const char *base;
	int pfd = sfs_commit_open_parent(c, m->src, &base), ret = 0;

	snprintf(m->staged, sizeof(m->staged), "%zu", k);
	if (pfd < 0 || sfs_do_renameat2(pfd, base, c->stage_fd, m->staged, 0) < 0) {
		ret = sfs_commit_fail(c, pfd < 0 ? pfd : -errno, m->src,
				      "moving a lower directory aside");
		m->staged[0] = '\0';
	}
	if (pfd >= 0)
		close(pfd);
	return ret;
}

/* Deepest first, so that none is deleted or moved with its parent
 * before it reaches its place. The journal lists them all before the
 * first moves. */
int sfs_commit_stage(struct commit *c)
{
	size_t k = 0;
	int ret;

	if (c->nmv)
		qsort(c->mv, c->nmv, sizeof(c->mv[0]), moved_cmp);
	ret = check_moves(c);
	if (ret < 0)
		return ret;
	snprintf(c->stage_name, sizeof(c->stage_name), STAGE_PREFIX "%d", (int)getpid());
	ret = write_journal(c);
	if (ret < 0 || !c->jnl.nmv)
		return ret;
	ret = open_stage(c);
	for (size_t i = 0; ret == 0 && i < c->nmv; i++) {
		if (!is_staged_move(&c->mv[i]))
			continue;
		ret = sfs_commit_stopped(c, c->mv[i].src);
		if (ret == 0)
			ret = stage_move(c, &c->mv[i], k++);
	}
	return ret;
}

/* ------------------------------------------------------------ the end */

/* The recovery puts every moved lower directory back (the union shows
 * what it showed before; what was copied into the lower branch stays,
 * hidden by the rw branch). */
int sfs_commit_undo(struct commit *c, char *msg, size_t len)
{
	const char *done;
	int ret;

	if (!c->jnl_written)
		return 0;
	if (c->stage_fd >= 0) {
		close(c->stage_fd);
		c->stage_fd = -1;
	}
	ret = sfs_jnl_recover(&c->br[0], &c->br[1], &c->jnl, &done, msg, len);
	if (ret == 0)
		c->jnl_written = false;
	return ret;
}

/* From phase APPLIED on a recovery finishes instead of undoing. */
int sfs_commit_finish(struct commit *c, bool *emptied)
{
	char msg[PATH_MAX + 200];
	int ret;

	c->jnl.phase = SFS_JNL_APPLIED;
	ret = sfs_jnl_write(c->br[0].at_fd, &c->jnl);
	if (ret < 0) {
		c->jnl.phase = SFS_JNL_MOVING; /* still undone by the journal on disk */
		return sfs_commit_fail(c, ret, c->rw, "writing the journal .stackfs/" SFS_META_COMMIT);
	}
	if (!c->keep) {
		ret = sfs_jnl_empty_rw(&c->br[0], c->jnl.rw_times, msg, sizeof(msg));
		if (ret == 0)
			ret = sfs_jnl_syncfs(c->br[0].root_fd);
		if (ret < 0)
			return sfs_commit_fail(c, ret, c->rw, "emptying the rw branch");
		*emptied = true;
	}
	ret = sfs_jnl_finish(&c->br[0], &c->br[1], &c->jnl);
	if (ret < 0)
		return sfs_commit_fail(c, ret, c->rw, "removing the journal .stackfs/" SFS_META_COMMIT);
	c->jnl_written = false;
	return 0;
}
