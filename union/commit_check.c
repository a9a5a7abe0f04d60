/* What refuses a commit before anything changes, each with a message
 * saying why (and what to run): branches that are not directories, the
 * same or nested, of a format newer than this stackfs or corrupt; either
 * in use by a mounted stackfs; an unfinished commit of another pair of
 * branches; a staging directory left by a stackfs before the journal;
 * LOWER not the branch just below RW in RW's last mount. An unfinished
 * commit of these two is finished or undone first (said in a note). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "union/commit_int.h"
#include "whiteout/metadir.h"

#define REFUSED SFS_COMMIT_REFUSED

/* A note for the caller's message callback. */
static void note(struct commit *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(struct commit *c, const char *fmt, ...)
{
	char buf[PATH_MAX + 300];
	va_list ap;

	if (!c->o->message)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	c->o->message(c->o->arg, buf);
}

/* Whether a path names the directory st. */
static bool same_dir(const char *path, const struct stat *st)
{
	struct stat s;

	return stat(path, &s) == 0 && s.st_dev == st->st_dev && s.st_ino == st->st_ino;
}

/* ------------------------------------------------------------ the branches */

static int check_dirs(struct commit *c)
{
	if (stat(c->rw, &c->rs) < 0 || stat(c->into, &c->ls) < 0) {
		int e = errno;

		return sfs_commit_refuse(c, REFUSED, "%s: %s", stat(c->rw, &c->rs) ? c->rw : c->into,
					 strerror(e));
	}
	if (!S_ISDIR(c->rs.st_mode) || !S_ISDIR(c->ls.st_mode))
		return sfs_commit_refuse(c, REFUSED, "%s: %s",
					 S_ISDIR(c->rs.st_mode) ? c->into : c->rw, strerror(ENOTDIR));
	return 0;
}

/* The same directory (a usage error), or nested in one another. */
static int check_paths(struct commit *c)
{
	char *rr = realpath(c->rw, NULL), *lr = realpath(c->into, NULL);
	size_t l1, l2;
	int ret = 0;

	if (!rr || !lr) {
		ret = sfs_commit_refuse(c, REFUSED, "%s: %s", rr ? c->into : c->rw, strerror(errno));
		goto out;
	}
	l1 = strlen(rr);
	l2 = strlen(lr);
	if (c->rs.st_dev == c->ls.st_dev && c->rs.st_ino == c->ls.st_ino)
		ret = sfs_commit_refuse(c, SFS_COMMIT_USAGE, "%s and %s are the same directory",
					c->rw, c->into);
	else if ((l1 < l2 && !strncmp(rr, lr, l1) && (lr[l1] == '/' || l1 == 1)) ||
		 (l2 < l1 && !strncmp(lr, rr, l2) && (rr[l2] == '/' || l2 == 1)))
		ret = sfs_commit_refuse(c, REFUSED, "%s and %s are nested in one another",
					c->rw, c->into);
out:
	free(rr);
	free(lr);
	return ret;
}

/* The roots of both branches, and where their metadata dirs are: RW's
 * where its root records it (an overlay-style upper's workdir) or its
 * root; LOWER's likewise, a record that leads nowhere being no record
 * (as for a read-only branch of a mount, where its marker is looked
 * for the same way). */
static int locate(struct commit *c)
{
	const char *names[2] = { c->rw, c->into };

	for (int i = 0; i < 2; i++) {
		char msg[PATH_MAX + 512];

		c->br[i].root_fd = open(names[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (c->br[i].root_fd < 0)
			return sfs_commit_refuse(c, REFUSED, "%s: %s", names[i], strerror(errno));
		if (sfs_metaloc_open(c->br[i].root_fd, NULL, i == 1, &c->loc[i], msg,
				     sizeof(msg)) < 0)
			return sfs_commit_refuse(c, REFUSED, "%s: %s", names[i], msg);
		c->br[i].at_fd = sfs_metaloc_at(&c->loc[i], c->br[i].root_fd);
	}
	return 0;
}

/* Each branch's metadata directory, if any, of a known format. */
static int check_formats(struct commit *c)
{
	const char *names[2] = { c->rw, c->into };
	enum sfs_meta_state state;

	for (int i = 0; i < 2; i++) {
		char msg[300];
		int at = c->br[i].at_fd, r = sfs_meta_check(at, &state, msg, sizeof(msg));
		uint32_t flags = 0;

		/* what a crashed volatile mount left may be partial: folding it
		 * into the lower branch would make that permanent */
		if (r == 0 && sfs_meta_read_flags(at, &flags) == 0 &&
		    (flags & SFS_META_F_VOLATILE)) {
			snprintf(msg, sizeof(msg), "a sync=volatile mount uses it or did not end "
				 "cleanly: what it wrote may be partial; once unmounted, mount it "
				 "with -o accept_unclean to keep it as it is");
			r = -EUCLEAN;
		}
		if (r == -EINPROGRESS)
			r = 0; /* an unfinished commit: resumed once the locks are held */
		if (r < 0)
			return sfs_commit_refuse(c, REFUSED, "%s: %s%s", names[i], msg,
						 r == -EPROTONOSUPPORT ? "" : " (see stackfs fsck)");
	}
	return 0;
}

/* In use: a mount holds a rw branch's lock (taken here for the whole
 * commit, so that no mount starts meanwhile); a mount that uses a
 * branch read-only holds none: the running daemons are asked about. */
static int lock_branch(struct commit *c, int i)
{
	const char *p = i ? c->into : c->rw;
	int at = c->br[i].at_fd, lk = sfs_meta_lock(at, true);
	char who[PATH_MAX + 256];
	pid_t pid;

	/* held: name the mount to unmount */
	if (lk == -EBUSY && c->o->lock_holder &&
	    c->o->lock_holder(c->o->arg, at, who, sizeof(who)) == 0)
		return sfs_commit_refuse(c, REFUSED, "%s: branch is in use by a mounted "
					 "stackfs (%s): unmount it first", p, who);
	if (lk == -EBUSY)
		return sfs_commit_refuse(c, REFUSED, "%s: branch is in use by a mounted stackfs "
					 "(unmount it first)", p);
	if (lk < 0 && lk != -ENOENT && lk != -ENOTDIR)
		return sfs_commit_refuse(c, REFUSED, "%s/%s/%s: %s", p, SFS_METADIR_NAME,
					 SFS_META_LOCK, strerror(-lk));
	*(i ? &c->lock_lo : &c->lock_rw) = lk;
	pid = c->o->in_use ? c->o->in_use(c->o->arg, i ? &c->ls : &c->rs) : 0;
	if (pid > 0)
		return sfs_commit_refuse(c, REFUSED, "%s: branch is in use by a mounted stackfs "
					 "(stackfsd pid %d): unmount it first", p, (int)pid);
	return 0;
}

/* ------------------------------------------------------------ unfinished */

/* A marker in LOWER without RW's journal: another rw branch's commit
 * (refused), or ours stopped between the marker and the journal (nothing
 * was changed) or after removing the journal (all was done): the marker
 * goes. */
static int resume_marker(struct commit *c)
{
	struct sfs_journal none = { 0 };
	struct sfs_jnl_mark mk;
	char msg[300];
	int ret = sfs_jmark_read(c->br[1].at_fd, &mk, msg, sizeof(msg));

	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return sfs_commit_refuse(c, REFUSED, "%s: %s (see stackfs fsck)", c->into, msg);
	if (!sfs_jnl_same_branch(c->br[0].root_fd, mk.rw_fs_uuid, mk.rw_ino)) {
		ret = sfs_commit_refuse(c, REFUSED, "%s has an unfinished commit from %s: run "
					"stackfs commit %s --into %s again, or stackfs fsck "
					"--repair %s", c->into, mk.rw, mk.rw, c->into, mk.rw);
		goto out;
	}
	note(c, "%s: the marker of a commit from %s without its journal (it stopped before "
	     "changing anything, or after finishing); going on", c->into, c->rw);
	ret = sfs_jnl_finish(&c->br[0], &c->br[1], &none);
	if (ret < 0)
		ret = sfs_commit_refuse(c, REFUSED, "%s/%s/%s: %s", c->into, SFS_METADIR_NAME,
					SFS_META_COMMIT_FROM, strerror(-ret));
out:
	sfs_jmark_free(&mk);
	return ret;
}

/* RW's journal j: recovered when it names LOWER, else refused. */
static int resume_journal(struct commit *c, const struct sfs_journal *j)
{
	const char *done;
	char msg[512];

	if (!sfs_jnl_same_branch(c->br[1].root_fd, j->lower_fs_uuid, j->lower_ino))
		return sfs_commit_refuse(c, REFUSED, "%s has an unfinished commit into %s: run "
					 "stackfs commit %s --into %s again, or stackfs fsck "
					 "--repair %s", c->rw, j->lower, c->rw, j->lower, c->rw);
	note(c, "%s: resuming an unfinished commit into %s (pid %u)", c->rw, c->into, j->pid);
	if (sfs_jnl_recover(&c->br[0], &c->br[1], j, &done, msg, sizeof(msg)) < 0)
		return sfs_commit_refuse(c, REFUSED, "%s: the unfinished commit could not be "
					 "recovered: %s; its journal is kept: run stackfs commit "
					 "again or stackfs fsck --repair %s", c->rw, msg, c->rw);
	note(c, "the unfinished commit was %s", done);
	return 0;
}

/* An unfinished commit of RW (its journal) is finished or undone before
 * anything new. */
static int resume(struct commit *c)
{
	struct sfs_journal j;
	char msg[512];
	int ret = sfs_jnl_read(c->br[0].at_fd, &j, msg, sizeof(msg));

	if (ret == -ENOENT)
		return resume_marker(c);
	if (ret < 0)
		return sfs_commit_refuse(c, REFUSED, "%s: %s (see stackfs fsck %s)", c->rw, msg,
					 c->rw);
	ret = resume_journal(c, &j);
	sfs_jnl_free(&j);
	return ret;
}

/* A staging directory without a journal (left by a stackfs before the
 * journal): it holds lower directories the rw branch's redirects look
 * for, so a new commit would not find them. */
static int check_leftovers(struct commit *c)
{
	DIR *d = opendir(c->into);
	struct dirent *e;
	int ret = 0;

	while (d && !ret && (e = readdir(d))) {
		if (!strncmp(e->d_name, STAGE_PREFIX, strlen(STAGE_PREFIX)))
			ret = sfs_commit_refuse(c, REFUSED, "%s/%s: left by an interrupted commit "
						"without a journal: it holds lower directories that "
						"were being moved (keep it; see stackfs fsck %s)",
						c->into, e->d_name, c->into);
	}
	if (d)
		closedir(d);
	return ret;
}

int sfs_commit_check(struct commit *c)
{
	int ret = check_dirs(c);

	if (ret == 0)
		ret = check_paths(c);
	if (ret == 0)
		ret = locate(c);
	if (ret == 0)
		ret = check_formats(c);
	for (int i = 0; ret == 0 && i < 2; i++)
		ret = lock_branch(c, i);
	if (ret == 0)
		ret = resume(c);
	if (ret == 0)
		ret = check_leftovers(c);
	return ret;
}

/* ------------------------------------------------------------ below */

/* From the rw branch's .stackfs/lowers: without one (or without branches
 * below), the two branches alone. */
int sfs_commit_below(struct commit *c, char ***below, size_t *nbelow)
{
	char **v = NULL, msg[300];
	size_t n = 0;
	int ret = sfs_ch_lowers_below(c->br[0].root_fd, c->br[0].at_fd, &v, &n, msg, sizeof(msg));

	*below = NULL;
	*nbelow = 0;
	if (ret == -ENOENT || ret == -ESRCH || (ret == 0 && n == 0)) {
		ret = 0;
		goto out;
	}
	if (ret < 0) {
		ret = sfs_commit_refuse(c, REFUSED, "%s: %s", c->rw, msg);
		goto out;
	}
	if (!same_dir(v[0], &c->ls)) {
		ret = sfs_commit_refuse(c, REFUSED, "%s is not the branch just below %s in its "
					"last mount (%s/%s/%s lists %s there)", c->into, c->rw,
					c->loc[0].workdir ? c->loc[0].workdir : c->rw,
					SFS_METADIR_NAME, SFS_META_LOWERS, v[0]);
		goto out;
	}
	/* the first below RW is LOWER itself */
	free(v[0]);
	memmove(v, v + 1, (n - 1) * sizeof(*v));
	*below = v;
	*nbelow = n - 1;
	return 0;
out:
	sfs_ch_names_free(v, n);
	return ret;
}
