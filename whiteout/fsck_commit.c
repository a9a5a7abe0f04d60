/* fsck of an unfinished commit (fsck.h, journal.h): this branch's own
 * journal (a commit from it) or its marker (a commit into it), reported
 * and, with repair, recovered as the commit would. While one is left the
 * tree is not checked: a whiteout would seem to hide nothing where the
 * commit moved the lower entry away. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "whiteout/fsck_int.h"
#include "whiteout/journal.h"
#include "whiteout/ondisk.h"

static void uuid_str(const uint8_t u[16], char out[40])
{
	for (int i = 0, k = 0; i < 16; i++)
		k += snprintf(out + k, 40 - (size_t)k, "%s%02x",
			      i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", u[i]);
}

static const char *phase_str(const struct sfs_journal *j)
{
	if (j->phase == SFS_JNL_MOVING)
		return "part way: --repair puts the moved lower directories back";
	return "the lower branch is complete: --repair finishes emptying the rw branch";
}

/* This branch as recovery reaches it. */
static struct sfs_jnl_branch self(const struct fsck *f)
{
	return (struct sfs_jnl_branch){ .root_fd = f->root_fd, .at_fd = f->meta_at };
}

/* The other branch a journal or marker names, by its path, and where
 * its .stackfs is, found as commit finds it (metaloc.c; lenient for a
 * lower branch). 0, or -errno with a message. */
static int open_other(const char *path, bool lenient, struct sfs_jnl_branch *b,
		      struct sfs_metaloc *loc, char *msg, size_t len)
{
	int ret;

	memset(loc, 0, sizeof(*loc));
	loc->wd_fd = -1;
	b->root_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (b->root_fd < 0) {
		snprintf(msg, len, "%s", strerror(errno));
		return -errno;
	}
	ret = sfs_metaloc_open(b->root_fd, NULL, lenient, loc, msg, len);
	b->at_fd = sfs_metaloc_at(loc, b->root_fd);
	return ret;
}

static void close_other(struct sfs_jnl_branch *b, struct sfs_metaloc *loc)
{
	sfs_metaloc_close(loc);
	if (b->root_fd >= 0)
		close(b->root_fd);
}

/* This branch's own journal: a commit from it into j->lower. */
static void commit_from_here(struct fsck *f, const struct sfs_journal *j)
{
	const char *path = "/" SFS_METADIR_NAME "/" SFS_META_COMMIT, *how;
	struct sfs_jnl_branch rw = self(f), lower;
	struct sfs_metaloc loc;
	struct sfs_fsck_problem *p;
	char msg[PATH_MAX + 512];
	int ok = open_other(j->lower, true, &lower, &loc, msg, sizeof(msg)) == 0, ret;

	p = sfs_fsck_found(f, SFS_PR_COMMIT_UNFINISHED, ok, path, "into %s, %s%s", j->lower,
			   phase_str(j), ok ? "" : " (the lower branch cannot be opened)");
	if (!p) {
		f->pending = true;
		goto out;
	}
	ret = sfs_jnl_recover(&rw, &lower, j, &how, msg, sizeof(msg));
	if (ret < 0) {
		sfs_fsck_msg(f, true, "%s: %s", path, msg);
		f->pending = true;
	} else {
		sfs_fsck_msg(f, false, "the unfinished commit into %s was %s", j->lower, how);
	}
	sfs_fsck_done(f, p, ret);
out:
	close_other(&lower, &loc);
}

/* Recovers, from this lower branch, the commit the marker names: with the
 * rw branch's lock (a running commit holds it). */
static int recover_from_lower(struct fsck *f, const struct sfs_jnl_branch *rw,
			      const struct sfs_journal *j)
{
	struct sfs_jnl_branch lower = self(f);
	const char *how;
	char msg[512];
	int lk = sfs_meta_lock(rw->at_fd, true), ret;

	if (lk < 0 && lk != -ENOENT) {
		sfs_fsck_msg(f, true, "%s: %s", j->lower, lk == -EBUSY ?
			     "the rw branch is in use (a commit running?)" : strerror(-lk));
		return lk;
	}
	ret = sfs_jnl_recover(rw, &lower, j, &how, msg, sizeof(msg));
	if (ret < 0)
		sfs_fsck_msg(f, true, "%s", msg);
	else
		sfs_fsck_msg(f, false, "the unfinished commit into this branch was %s", how);
	if (lk >= 0)
		close(lk);
	return ret;
}

/* This branch's marker: a commit into it from the rw branch it names. */
static void commit_into_here(struct fsck *f, const struct sfs_jnl_mark *m)
{
	const char *path = "/" SFS_METADIR_NAME "/" SFS_META_COMMIT_FROM;
	struct sfs_jnl_branch rw, lower = self(f);
	struct sfs_metaloc loc;
	struct sfs_fsck_problem *p;
	struct sfs_journal j = { 0 };
	char msg[PATH_MAX + 512], u[40];
	int ret = open_other(m->rw, false, &rw, &loc, msg, sizeof(msg));

	uuid_str(m->rw_uuid, u);
	if (rw.root_fd < 0 || !sfs_jnl_same_branch(rw.root_fd, m->rw_fs_uuid, m->rw_ino)) {
		sfs_fsck_found(f, SFS_PR_COMMIT_UNFINISHED, false, path, "from branch %s at %s, "
			       "which is not there: bring it back, then run stackfs fsck "
			       "--repair on it", u, m->rw);
		f->pending = true;
		goto out;
	}
	if (ret < 0) {
		sfs_fsck_found(f, SFS_PR_COMMIT_UNFINISHED, false, path, "from branch %s at %s, "
			       "whose metadata cannot be found: %s", u, m->rw, msg);
		f->pending = true;
		goto out;
	}
	ret = sfs_jnl_read(rw.at_fd, &j, msg, sizeof(msg));
	if (ret == -ENOENT || (ret == 0 && !sfs_jnl_same_branch(f->root_fd, j.lower_fs_uuid,
								 j.lower_ino))) {
		struct sfs_journal none = { 0 };

		p = sfs_fsck_found(f, SFS_PR_COMMIT_MARKER_STALE, true, path, "from %s", m->rw);
		if (p)
			sfs_fsck_done(f, p, sfs_jnl_finish(NULL, &lower, &none));
		else
			f->pending = true;
		goto out;
	}
	if (ret < 0) {
		sfs_fsck_found(f, SFS_PR_COMMIT_UNFINISHED, false, path, "from branch %s at %s, "
			       "whose journal cannot be read: %s", u, m->rw, msg);
		f->pending = true;
		goto out;
	}
	p = sfs_fsck_found(f, SFS_PR_COMMIT_UNFINISHED, true, path, "from branch %s at %s, %s",
			   u, m->rw, phase_str(&j));
	if (!p) {
		f->pending = true;
		goto out;
	}
	ret = recover_from_lower(f, &rw, &j);
	f->pending |= ret < 0;
	sfs_fsck_done(f, p, ret);
out:
	sfs_jnl_free(&j);
	close_other(&rw, &loc);
}

/* A journal or marker that cannot be read (msg says why): reported,
 * never acted on. */
static void unreadable(struct fsck *f, const char *path, const char *msg)
{
	sfs_fsck_found(f, SFS_PR_COMMIT_UNFINISHED, false, path, "%s", msg);
	f->pending = true;
}

/* A damaged journal (mark false) or marker: COMMIT_CORRUPT, mended when
 * one byte the checksum finds does it (then read again, as if never
 * damaged: 1), else left with the commit unfinished (0). */
static int mend_record(struct fsck *f, bool mark, const char *msg)
{
	const char *path = mark ? "/" SFS_METADIR_NAME "/" SFS_META_COMMIT_FROM
				: "/" SFS_METADIR_NAME "/" SFS_META_COMMIT;
	struct sfs_fsck_problem *p;
	size_t at;
	uint8_t was;
	int ret = sfs_jnl_mend(f->meta_at, mark, false, &at, &was);

	if (ret == 1)
		p = sfs_fsck_found(f, SFS_PR_COMMIT_CORRUPT, true, path, "%s; byte %zu is "
				   "damaged: the checksum holds with 0x%02x there", msg, at, was);
	else
		p = sfs_fsck_found(f, SFS_PR_COMMIT_CORRUPT, false, path, "%s; no single byte "
				   "mends it", msg);
	if (!p) {
		f->pending = true;
		return 0;
	}
	ret = sfs_fsck_done(f, p, sfs_jnl_mend(f->meta_at, mark, true, &at, &was) == 1 ?
			    0 : -EUCLEAN);
	f->pending |= ret < 0;
	return ret == 0;
}

/* An unfinished commit from or into this branch (journal.h). */
void sfs_fsck_check_commit(struct fsck *f)
{
	struct sfs_journal j;
	struct sfs_jnl_mark m;
	char msg[512];
	int ret = sfs_jnl_read(f->meta_at, &j, msg, sizeof(msg));

	if (ret == -EUCLEAN && mend_record(f, false, msg))
		ret = sfs_jnl_read(f->meta_at, &j, msg, sizeof(msg));
	if (ret == 0) {
		commit_from_here(f, &j);
		sfs_jnl_free(&j);
	} else if (ret != -ENOENT) {
		unreadable(f, "/" SFS_METADIR_NAME "/" SFS_META_COMMIT, msg);
	}
	ret = sfs_jmark_read(f->meta_at, &m, msg, sizeof(msg));
	if (ret == -EUCLEAN && mend_record(f, true, msg))
		ret = sfs_jmark_read(f->meta_at, &m, msg, sizeof(msg));
	if (ret == 0) {
		commit_into_here(f, &m);
		sfs_jmark_free(&m);
	} else if (ret != -ENOENT) {
		unreadable(f, "/" SFS_METADIR_NAME "/" SFS_META_COMMIT_FROM, msg);
	}
}
