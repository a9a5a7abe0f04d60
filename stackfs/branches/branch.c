/* The branch set: validating and opening the branches of a spec, the
 * refcounted immutable snapshot every request works on, and preparing the
 * metadata directory of each rw branch. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "stackfs/branches/branch.h"
#include "stackfs/branches/branch_caps.h"
#include "common/escape.h"
#include "common/runtime.h"
#include "stackfs/stackfs.h"
#include "whiteout/journal.h"
#include "whiteout/metadir.h"

/* Messages name paths as given: sfs_msg_vfit keeps them on one line and
 * keeps the reason at the end even behind a path longer than PATH_MAX. */
static void berr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sfs_msg_vfit(err, errlen, fmt, ap);
	va_end(ap);
}

/* True if the canonical path `outer` is `inner` or one of its ancestors,
 * at a component boundary ("/a" contains "/a/b", not "/ab"). */
static int path_contains(const char *outer, const char *inner)
{
	size_t len = strlen(outer);

	if (len == 1 && outer[0] == '/')
		return 1;
	return !strncmp(outer, inner, len) &&
	       (inner[len] == '/' || inner[len] == '\0');
}

static struct sfs_branch_shared *shared_new(void)
{
	struct sfs_branch_shared *sh = calloc(1, sizeof(*sh));

	if (sh) {
		atomic_init(&sh->refs, 1);
		atomic_init(&sh->handle_fd, -1);
		sh->loc.wd_fd = -1;
	}
	return sh;
}

static void shared_put(struct sfs_branch_shared *sh)
{
	if (!sh || atomic_fetch_sub(&sh->refs, 1) != 1)
		return;
	if (sh->meta) {
		sfs_sync_branch_close(sh->meta);
		sfs_meta_close(sh->meta);
		free(sh->meta);
	}
	sfs_metaloc_close(&sh->loc);
	if (atomic_load(&sh->handle_fd) >= 0)
		close(atomic_load(&sh->handle_fd));
	free(sh);
}

/* The directory holding the branch's .stackfs: its root, or a workdir. */
static int meta_at(const struct sfs_branch *b)
{
	return sfs_metaloc_at(&b->shared->loc, b->root_fd);
}

/* ", metadata in the workdir W" after a branch's name in a message, or
 * nothing: says which .stackfs a message about one means. */
static const char *where(const struct sfs_branch *b, char *buf, size_t len)
{
	if (!b->shared->loc.workdir)
		return "";
	snprintf(buf, len, ", metadata in the workdir %s", b->shared->loc.workdir);
	return buf;
}

void sfs_branch_put(struct sfs_branch *b)
{
	if (!b || atomic_fetch_sub(&b->refs, 1) != 1)
		return;
	shared_put(b->shared);
	if (b->root_fd >= 0)
		close(b->root_fd);
	free(b->path);
	free(b);
}

struct sfs_snap *sfs_snap_get(struct sfs_snap *s)
{
	atomic_fetch_add(&s->refs, 1);
	return s;
}

void sfs_snap_put(struct sfs_snap *s)
{
	if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	for (unsigned i = 0; i < s->n; i++)
		sfs_branch_put(s->b[i]);
	free(s);
}

/* Opens one branch and checks what can be checked on it alone. `idx` is
 * the position messages name it by, as branch list numbers it (#0 the
 * highest), with the path as the user wrote it. */
static int branch_open(const struct sfs_branch_spec *spec, unsigned idx,
		       struct sfs_branch **out, char *err, size_t errlen)
{
	struct sfs_branch *b;
	struct statvfs vfs;
	struct stat st;
	int ret;

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	atomic_init(&b->refs, 1);
	b->mode = spec->mode;
	b->root_fd = b->work_fd = -1;
	b->shared = shared_new();
	if (!b->shared) {
		ret = -ENOMEM;
		goto out_put;
	}

	b->path = realpath(spec->path, NULL);
	if (!b->path) {
		ret = -errno;
		if (ret == -ENOENT)
			berr(err, errlen, "branch #%u (\"%s\"): no such directory", idx, spec->path);
		else
			berr(err, errlen, "branch #%u (\"%s\"): %s", idx, spec->path, strerror(-ret));
		goto out_put;
	}
	b->root_fd = open(b->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (b->root_fd < 0) {
		ret = -errno;
		if (ret == -ENOTDIR)
			berr(err, errlen, "branch #%u (\"%s\"): not a directory", idx, spec->path);
		else
			berr(err, errlen, "branch #%u (\"%s\"): %s", idx, spec->path, strerror(-ret));
		goto out_put;
	}
	if (fstat(b->root_fd, &st) < 0) {
		ret = -errno;
		berr(err, errlen, "branch #%u (\"%s\"): stat: %s", idx, spec->path, strerror(-ret));
		goto out_put;
	}
	b->dev = st.st_dev;
	b->ino = st.st_ino;
	/* as the caller: a branch the user cannot list would look empty */
	if (access(b->path, R_OK | X_OK) < 0) {
		ret = -errno;
		if (ret == -EACCES)
			berr(err, errlen, "branch #%u (\"%s\"): not readable and searchable (permission denied)",
			     idx, spec->path);
		else
			berr(err, errlen, "branch #%u (\"%s\"): %s", idx, spec->path, strerror(-ret));
		goto out_put;
	}
	if (b->mode == SFS_BRANCH_RW) {
		if (fstatvfs(b->root_fd, &vfs) < 0) {
			ret = -errno;
			berr(err, errlen, "branch #%u (\"%s\"): statvfs: %s", idx, spec->path, strerror(-ret));
			goto out_put;
		}
		if (vfs.f_flag & ST_RDONLY) {
			ret = -EROFS;
			berr(err, errlen, "branch #%u (\"%s\"): rw branch on a read-only filesystem (use =ro)",
			     idx, spec->path);
			goto out_put;
		}
	}
	*out = b;
	return 0;

out_put:
	sfs_branch_put(b);
	return ret;
}

/* Checks branch i against the ones before it and against the mountpoint.
 * A mountpoint inside a branch (or a branch inside the mountpoint) would
 * make the union look up itself: processes hang for good. */
static int branch_check_set(const struct sfs_snap *s, unsigned i,
			    const struct sfs_branch_spec *specs,
			    const char *mp, const struct stat *mpst,
			    char *err, size_t errlen)
{
	const struct sfs_branch *b = s->b[i];

	for (unsigned j = 0; j < i; j++) {
		const struct sfs_branch *o = s->b[j];

		if (o->dev == b->dev && o->ino == b->ino) {
			berr(err, errlen, "branch #%u (\"%s\"): same directory as branch #%u (\"%s\")",
			     i, specs[i].path, j, specs[j].path);
			return -EINVAL;
		}
		if (path_contains(o->path, b->path) || path_contains(b->path, o->path)) {
			berr(err, errlen, "branch #%u (\"%s\"): %s branch #%u (\"%s\") (nested branches)",
			     i, specs[i].path,
			     path_contains(o->path, b->path) ? "inside" : "contains",
			     j, specs[j].path);
			return -EINVAL;
		}
	}
	if (!mp)
		return 0;
	if ((mpst && mpst->st_dev == b->dev && mpst->st_ino == b->ino) ||
	    !strcmp(mp, b->path)) {
		berr(err, errlen, "branch #%u (\"%s\"): is the mountpoint (would hang processes)",
		     i, specs[i].path);
		return -EINVAL;
	}
	if (path_contains(b->path, mp)) {
		berr(err, errlen, "branch #%u (\"%s\"): contains the mountpoint \"%s\" (would hang processes)",
		     i, specs[i].path, mp);
		return -EINVAL;
	}
	if (path_contains(mp, b->path)) {
		berr(err, errlen, "branch #%u (\"%s\"): inside the mountpoint \"%s\" (would hang processes)",
		     i, specs[i].path, mp);
		return -EINVAL;
	}
	return 0;
}

/* A daemon whose view was just unmounted still holds the branch's lock
 * while it ends, and clears a volatile flag only then. Container engines
 * unmount with umount2 and may mount the same upper again at once (a
 * commit, a diff, a start after a run): waited for, up to 10 s, rather
 * than refused as in use or as left unclean. A live mount's lock is
 * refused at once (meta_open says by whom). */
static void wait_ending_holder(int at_fd)
{
	for (int i = 0; i < 200; i++) {
		int fd = sfs_meta_lock(at_fd, true);

		if (fd >= 0)
			close(fd);
		if (fd != -EBUSY || sfs_runtime_lock_ending(at_fd) != 1)
			return;
		usleep(50 * 1000);
	}
}

/* Where a branch that is (or becomes) rw keeps its metadata dir: in the
 * workdir given (an overlay-style mount's upper), the one its root
 * records, or its root (whiteout/metaloc.c), found once. */
static int locate(struct sfs_branch *b, unsigned idx, const char *path,
		  const char *workdir, char *err, size_t errlen)
{
	char why[PATH_MAX + 512];
	int ret;

	if (b->shared->located)
		return 0;
	ret = sfs_metaloc_open(b->root_fd, workdir, false, &b->shared->loc, why, sizeof(why));
	/* a workdir given does not cover a damaged record: it may have
	 * named another one, and the mount would write over it */
	if (ret == 0 && b->shared->loc.record_damaged) {
		sfs_metaloc_close(&b->shared->loc);
		snprintf(why, sizeof(why), "its record of a workdir (%s) is corrupt: stackfs "
			 "fsck --repair --workdir DIR writes it again", SFS_WORKDIR_XATTR);
		ret = -EUCLEAN;
	}
	if (ret < 0)
		berr(err, errlen, "branch #%u (\"%s\"): %s", idx, path, why);
	b->shared->located = ret == 0;
	return ret;
}

/* 0 when the workdir w (maybe NULL) and branch k at path p are apart. */
static int apart(const char *w, unsigned k, const char *p, char *err, size_t errlen)
{
	if (!w || !(path_contains(w, p) || path_contains(p, w)))
		return 0;
	berr(err, errlen, "the workdir %s and branch #%u (\"%s\") are nested (one is "
	     "inside the other)", w, k, p);
	return -EINVAL;
}

/* A workdir apart from every branch and from the mount point: inside a
 * lower branch the view would show its metadata; the mount point inside
 * it, or it inside the mount point, would make the daemon look up its
 * own mount. Branch i against those before it (its workdir, if any, is
 * found already), both ways. */
static int workdir_check_set(const struct sfs_snap *s, unsigned i, const char *mp,
			     char *err, size_t errlen)
{
	const char *wi = s->b[i]->shared->loc.workdir;
	int ret = 0;

	for (unsigned j = 0; ret == 0 && j < i; j++) {
		ret = apart(wi, j, s->b[j]->path, err, errlen);
		if (ret == 0)
			ret = apart(s->b[j]->shared->loc.workdir, i, s->b[i]->path, err, errlen);
	}
	if (ret == 0 && wi && mp && (path_contains(wi, mp) || path_contains(mp, wi))) {
		berr(err, errlen, "the workdir %s and the mountpoint \"%s\" are nested "
		     "(would hang processes)", wi, mp);
		ret = -EINVAL;
	}
	return ret;
}

/* A rw branch's metadata dir must be one this stackfs can use: checked
 * before anything is mounted or written. */
static int meta_check(const struct sfs_branch *b, unsigned idx,
		      const struct sfs_branch_spec *spec, char *err, size_t errlen)
{
	enum sfs_meta_state state;
	char why[1024], wh[PATH_MAX + 64];
	int ret;

	wait_ending_holder(meta_at(b));
	ret = sfs_meta_check(meta_at(b), &state, why, sizeof(why));
	if (ret == 0)
		ret = sfs_sync_branch_check(meta_at(b), why, sizeof(why));
	if (ret < 0)
		berr(err, errlen, "branch #%u (\"%s\"%s): %s", idx, spec->path,
		     where(b, wh, sizeof(wh)), why);
	return ret;
}


/* The first data-only branch, or n. */
static unsigned data_from(const struct sfs_snap *s)
{
	unsigned i = 0;

	while (i < s->n && s->b[i]->mode != SFS_BRANCH_DATA)
		i++;
	return i;
}

/* A live change keeps the data-only branches last and leaves a branch
 * that shows something (the spec's rule, branch_spec.c). */
static int change_data_order(const struct sfs_snap *s, char *err, size_t errlen)
{
	unsigned d = data_from(s);

	for (unsigned i = d; i < s->n; i++) {
		if (s->b[i]->mode != SFS_BRANCH_DATA) {
			berr(err, errlen, "%s would be below the data-only branch %s "
			     "(data-only branches come last)", s->b[i]->path, s->b[d]->path);
			return -EINVAL;
		}
	}
	if (s->n && d == 0) {
		berr(err, errlen, "only data-only branches would be left");
		return -EINVAL;
	}
	return 0;
}

/* What the branch's filesystem lacks, and the way taken instead: one
 * line, a note (the mount goes on). */
static void note_caps(const struct sfs_branch *b, unsigned idx)
{
	char line[1024];

	sfs_branch_caps_line(b, sfs_m.opts.timeout, sfs_m.opts.coherent, line, sizeof(line));
	if (!line[0])
		return;
	if (!sfs_log_keeps_stderr())
		fprintf(stderr, "stackfs: note: branch #%u (\"%s\"): %s\n", idx, b->path, line);
	sfs_log(SFS_LOG_WARN, "branch #%u (\"%s\"): %s", idx, b->path, line);
}

/* A read-only branch in the middle of a commit (its marker) shows half
 * of it: refused like a rw one (sfs_meta_check says the same). The
 * marker is where the branch's metadata is: a workdir its root records
 * when that can be reached, else its root. */
static int pending_check(const struct sfs_branch *b, unsigned idx,
			 const struct sfs_branch_spec *spec, char *err, size_t errlen)
{
	struct sfs_metaloc loc;
	char why[PATH_MAX + 512];
	int ret;

	ret = sfs_metaloc_open(b->root_fd, NULL, true, &loc, why, sizeof(why));
	if (ret == 0)
		ret = sfs_jnl_pending(sfs_metaloc_at(&loc, b->root_fd), why, sizeof(why));
	if (ret < 0)
		berr(err, errlen, "branch %u (\"%s\"): %s", idx, spec->path, why);
	sfs_metaloc_close(&loc);
	return ret;
}

int sfs_snap_open(const struct sfs_branch_spec *specs, size_t n,
		  const char *mountpoint, struct sfs_snap **out,
		  char *err, size_t errlen)
{
	struct sfs_snap *s = NULL;
	struct stat mpst, *mpstp = NULL;
	char *mp = NULL;
	int ret;

	if (!n) {
		berr(err, errlen, "no branch given");
		return -EINVAL;
	}
	if (mountpoint) {
		/* a mountpoint that does not resolve is the mount's problem;
		 * still compare it as written */
		mp = realpath(mountpoint, NULL);
		if (!mp && !(mp = strdup(mountpoint)))
			return -ENOMEM;
		if (stat(mp, &mpst) == 0)
			mpstp = &mpst;
	}
	s = calloc(1, sizeof(*s) + n * sizeof(s->b[0]));
	if (!s) {
		ret = -ENOMEM;
		goto out_free;
	}
	atomic_init(&s->refs, 1);
	s->gen = 1;
	s->top_rw = -1;
	for (unsigned i = 0; i < n; i++) {
		struct sfs_branch *b;

		ret = branch_open(&specs[i], i, &s->b[i], err, errlen);
		if (ret)
			goto out_free;
		s->n = i + 1;
		ret = branch_check_set(s, i, specs, mp, mpstp, err, errlen);
		if (ret)
			goto out_free;
		b = s->b[i];
		/* after the checks: a statfs of the mount point itself would
		 * wait on this daemon */
		sfs_branch_caps_probe_fs(b);
		if (b->mode == SFS_BRANCH_RW)
			ret = locate(b, i, specs[i].path, specs[i].workdir, err, errlen);
		if (ret == 0)
			ret = workdir_check_set(s, i, mp, err, errlen);
		if (ret)
			goto out_free;
		if (b->mode == SFS_BRANCH_RW) {
			ret = meta_check(b, i, &specs[i], err, errlen);
			if (ret)
				goto out_free;
		} else {
			ret = pending_check(b, i + 1, &specs[i], err, errlen);
			if (ret)
				goto out_free;
			note_caps(b, i);
		}
		if (s->top_rw < 0 && b->mode == SFS_BRANCH_RW)
			s->top_rw = (int)i;
	}
	s->data_from = data_from(s);
	*out = s;
	s = NULL;
	ret = 0;

out_free:
	if (ret == -ENOMEM)
		berr(err, errlen, "%s", strerror(ENOMEM));
	sfs_snap_put(s);
	free(mp);
	return ret;
}

/* A rw branch root that other users can write: said at mount, on the
 * terminal and in the log (the mount goes on: such a layout is common,
 * and the metadata directory is checked on its own). The terminal line
 * is written here (sfs_log shows only errors there while the mount is
 * made), unless the log is the terminal already (-f). */
static void warn(const struct sfs_branch *b, unsigned idx, const char *msg)
{
	if (!sfs_log_keeps_stderr())
		fprintf(stderr, "stackfs: warning: branch #%u (\"%s\"): %s\n", idx, b->path, msg);
	sfs_log(SFS_LOG_WARN, "branch #%u (\"%s\"): %s", idx, b->path, msg);
}

/* Others who can write the root, or the workdir holding its metadata. */
static void warn_writers(const struct sfs_branch *b, unsigned idx)
{
	char msg[1024];

	if (sfs_root_writers(b->root_fd, false, msg, sizeof(msg)) == 1)
		warn(b, idx, msg);
	if (b->shared->loc.wd_fd >= 0 &&
	    sfs_root_writers(b->shared->loc.wd_fd, true, msg, sizeof(msg)) == 1)
		warn(b, idx, msg);
}

/* A mount given a new workdir, not the one the root recorded: the
 * metadata there (its hard-link index, allocated inode numbers) is no
 * longer used, as kernel overlayfs given a new workdir leaves its old
 * index; said, since the user may have meant the old one. (A workdir
 * moved, its metadata with it, is no new one.) */
static void warn_moved(const struct sfs_branch *b, unsigned idx)
{
	const struct sfs_metaloc *l = &b->shared->loc;
	char msg[2 * PATH_MAX + 200];

	if (!l->recorded || !l->fresh)
		return;
	snprintf(msg, sizeof(msg), "its metadata was in the workdir %s; from now on it is in "
		 "%s (what the old one holds is not used)", l->recorded, l->workdir);
	warn(b, idx, msg);
}

/* The workdir that holds the metadata, recorded on the root (metaloc.c)
 * before the metadata dir is made: a crash between the two leaves a
 * record of a workdir without one, which the next mount makes. */
static int record_workdir(const struct sfs_branch *b, char *why, size_t len)
{
	int ret = sfs_metaloc_record(&b->shared->loc, b->root_fd);

	if (ret < 0)
		snprintf(why, len, "cannot record the workdir on the branch root (%s): %s",
			 SFS_WORKDIR_XATTR, strerror(-ret));
	return ret;
}

/* whiteout=overlay on a filesystem that cannot make overlay whiteouts
 * in one step (a rename leaving one behind, or one swapped over a
 * directory): the mount writes .wh.NAME ones instead, which every mount
 * and fsck read as well, and the header records the style written. */
static int overlay_to_wh(const struct sfs_branch *b, struct sfs_meta *m, char *err,
			 size_t errlen)
{
	int ret = sfs_meta_set_style(m, SFS_WH_AUFS);

	if (ret < 0)
		berr(err, errlen, "branch \"%s\": cannot record the whiteout style: %s", b->path,
		     strerror(-ret));
	else
		sfs_m.opts.whiteout = SFS_WH_AUFS;
	return ret;
}

static int meta_open(struct sfs_branch *b, unsigned idx, int style, bool upgrade,
		     char *err, size_t errlen)
{
	char why[PATH_MAX + 512], holder[PATH_MAX + 64], wh[PATH_MAX + 64];
	int ret;

	struct sfs_meta *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	ret = record_workdir(b, why, sizeof(why));
	if (ret == 0)
		ret = sfs_meta_open(meta_at(b), style, upgrade, m, why, sizeof(why));
	if (ret == 0 && (ret = sfs_sync_branch_open(m)) < 0) {
		snprintf(why, sizeof(why), "cannot set the volatile flag: %s", strerror(-ret));
		sfs_meta_close(m);
	}
	/* in use: say by whom, so the user knows what to unmount */
	if (ret == -EBUSY && sfs_runtime_lock_holder(meta_at(b), holder, sizeof(holder)) == 0)
		berr(err, errlen, "branch #%u (\"%s\"): in use by %s", idx, b->path, holder);
	else if (ret < 0)
		berr(err, errlen, "branch #%u (\"%s\"%s): %s", idx, b->path,
		     where(b, wh, sizeof(wh)), why);
	if (ret < 0) {
		free(m);
		return ret;
	}
	b->shared->meta = b->meta = m;
	b->work_fd = m->work_fd;
	warn_writers(b, idx);
	warn_moved(b, idx);
	sfs_branch_caps_probe_rw(b, b->work_fd);
	ret = style > 0 && (b->lacks & SFS_LACKS_WHITEOUT) ? overlay_to_wh(b, m, err, errlen) : 0;
	note_caps(b, idx);
	return ret;
}

/* Records the branch list in every rw branch, for fsck and diff: the
 * branches that show names (data-only ones hold no names to judge). */
static void write_lowers(struct sfs_snap *s)
{
	struct sfs_lower *v = calloc(s->n, sizeof(*v));

	if (!v)
		return;
	sfs_snap_register_below(s);
	for (unsigned i = 0; i < s->n; i++) {
		v[i].path = s->b[i]->path;
		v[i].rw = s->b[i]->mode == SFS_BRANCH_RW;
	}
	for (unsigned i = 0; i < s->n; i++)
		if (s->b[i]->meta)
			sfs_meta_write_lowers(s->b[i]->meta, v, s->data_from);
	free(v);
}

int sfs_snap_prepare_meta(struct sfs_snap *s, int whiteout_style, bool upgrade,
			  char *err, size_t errlen)
{
	int ret = 0;

	for (unsigned i = 0; ret == 0 && i < s->n; i++)
		if (s->b[i]->mode == SFS_BRANCH_RW && !s->b[i]->meta)
			ret = meta_open(s->b[i], i, whiteout_style, upgrade, err, errlen);
	if (ret < 0)
		return ret;
	ret = sfs_snap_ids(s, err, errlen);
	if (ret == 0 && s->top_rw >= 0)
		write_lowers(s);
	if (ret == 0) {
		sfs_snap_register_roots(s);
		sfs_snap_caps(s);
	}
	return ret;
}

/* The entry of a kept branch in a new snapshot: the same object, or a
 * copy with another mode (the old snapshot keeps its own). */
static struct sfs_branch *branch_keep(struct sfs_branch *o, enum sfs_branch_mode mode)
{
	struct sfs_branch *b;

	if (o->mode == mode) {
		atomic_fetch_add(&o->refs, 1);
		return o;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	*b = *o;
	atomic_init(&b->refs, 1);
	b->mode = mode;
	b->path = strdup(o->path);
	b->root_fd = fcntl(o->root_fd, F_DUPFD_CLOEXEC, 0);
	atomic_fetch_add(&b->shared->refs, 1);
	if (!b->path || b->root_fd < 0) {
		sfs_branch_put(b);
		return NULL;
	}
	return b;
}

/* Fills s->b with old's branches and the change applied. */
static int change_fill(struct sfs_snap *s, const struct sfs_snap *old,
		       const struct sfs_change *c, char *err, size_t errlen)
{
	struct sfs_branch_spec spec = { (char *)c->path, c->mode, NULL };
	unsigned j = 0;
	int ret = 0;

	for (unsigned i = 0; ret == 0 && i <= old->n; i++) {
		if (c->op == SFS_CHANGE_ADD && i == c->index)
			ret = branch_open(&spec, i, &s->b[j++], err, errlen);
		if (ret || i == old->n)
			break;
		if (c->op == SFS_CHANGE_REMOVE && i == c->index)
			continue;
		s->b[j] = branch_keep(old->b[i], c->op == SFS_CHANGE_MODE && i == c->index ?
						   c->mode : old->b[i]->mode);
		ret = s->b[j++] ? 0 : -ENOMEM;
	}
	s->n = j;
	return ret;
}

/* What a branch entering rw needs: a writable filesystem, a metadata dir
 * this stackfs can use (where its root records it, apart from the other
 * branches), opened. */
static int change_rw_ready(struct sfs_snap *s, unsigned idx, const char *mp, int style,
			   char *err, size_t errlen)
{
	struct sfs_branch *b = s->b[idx];
	struct sfs_branch_spec spec = { b->path, b->mode, NULL };
	struct statvfs vfs;
	int ret;

	if (b->mode == SFS_BRANCH_RW && b->shared->meta) {
		b->meta = b->shared->meta;
		b->work_fd = b->meta->work_fd;
	}
	if (b->mode != SFS_BRANCH_RW || b->meta)
		return workdir_check_set(s, idx, mp, err, errlen);
	if (fstatvfs(b->root_fd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY)) {
		berr(err, errlen, "branch #%u (\"%s\"): rw branch on a read-only filesystem (use =ro)",
		     idx, b->path);
		return -EROFS;
	}
	ret = locate(b, idx, b->path, NULL, err, errlen);
	if (ret == 0)
		ret = workdir_check_set(s, idx, mp, err, errlen);
	if (ret == 0)
		ret = meta_check(b, idx, &spec, err, errlen);
	return ret ? ret : meta_open(b, idx, style, false, err, errlen);
}

int sfs_snap_change(const struct sfs_snap *old, const struct sfs_change *c,
		    const char *mountpoint, int whiteout_style,
		    struct sfs_snap **out, char *err, size_t errlen)
{
	unsigned n = old->n + (c->op == SFS_CHANGE_ADD) - (c->op == SFS_CHANGE_REMOVE);
	struct sfs_branch_spec *specs = calloc(n + 1, sizeof(*specs));
	struct sfs_snap *s = calloc(1, sizeof(*s) + (n + 1) * sizeof(s->b[0]));
	int ret = s && specs ? change_fill(s, old, c, err, errlen) : -ENOMEM;

	if (s) {
		atomic_init(&s->refs, 1);
		s->gen = old->gen + 1;
		s->top_rw = -1;
	}
	for (unsigned i = 0; ret == 0 && i < s->n; i++) {
		specs[i].path = s->b[i]->path;
		ret = branch_check_set(s, i, specs, mountpoint, NULL, err, errlen);
		if (ret == 0 && !s->b[i]->caps_known)
			sfs_branch_caps_probe_fs(s->b[i]);
		if (ret == 0)
			ret = change_rw_ready(s, i, mountpoint, whiteout_style, err, errlen);
		if (s->top_rw < 0 && s->b[i]->mode == SFS_BRANCH_RW)
			s->top_rw = (int)i;
	}
	if (ret == 0 && (ret = change_data_order(s, err, errlen)) == 0)
		s->data_from = data_from(s);
	if (ret == 0 && s->n == 0) {
		berr(err, errlen, "no branch would be left");
		ret = -EINVAL;
	}
	if (ret == 0 && (ret = sfs_snap_change_ids(s, old)) < 0)
		berr(err, errlen, "registering branch ids: %s", strerror(-ret));
	if (ret == 0) {
		write_lowers(s);
		sfs_snap_register_roots(s);
		sfs_snap_caps(s);
		*out = s;
		s = NULL;
	}
	if (ret == -ENOMEM)
		berr(err, errlen, "%s", strerror(ENOMEM));
	sfs_snap_put(s);
	free(specs);
	return ret;
}
