/* A non-directory of the view placed into the lower branch: a new copy
 * of the rw branch's entry (or of the index's copy), built under a
 * temporary name beside its target and renamed into place; another name
 * of a file placed already, as a hard link of it; or a lower file with
 * several names rewritten in place. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/bio.h"
#include "union/commit_int.h"
#include "union/copy.h"

/* ------------------------------------------------------------ hard links */

static size_t link_slot(const struct commit *c, dev_t dev, ino_t ino)
{
	size_t h = ((size_t)ino * 0x9E3779B97F4A7C15ull) ^ (size_t)dev;

	return h & (c->caplinks - 1);
}

static struct link *link_find(struct commit *c, dev_t dev, ino_t ino)
{
	if (!c->caplinks)
		return NULL;
	for (size_t i = link_slot(c, dev, ino);; i = (i + 1) & (c->caplinks - 1)) {
		struct link *l = &c->links[i];

		if (!l->path)
			return NULL;
		if (l->dev == dev && l->ino == ino)
			return l;
	}
}

/* Doubles the table (open addressing: kept at most half full). */
static int links_grow(struct commit *c)
{
	size_t ncap = c->caplinks ? c->caplinks * 2 : 256;
	struct link *old = c->links, *nv = calloc(ncap, sizeof(*nv));
	size_t ocap = c->caplinks;

	if (!nv)
		return -ENOMEM;
	c->links = nv;
	c->caplinks = ncap;
	for (size_t i = 0; i < ocap; i++) {
		if (old[i].path) {
			size_t j = link_slot(c, old[i].dev, old[i].ino);

			while (nv[j].path)
				j = (j + 1) & (ncap - 1);
			nv[j] = old[i];
		}
	}
	free(old);
	return 0;
}

static int link_add(struct commit *c, dev_t dev, ino_t ino, const char *path)
{
	if ((c->nlinks + 1) * 2 > c->caplinks && links_grow(c) < 0)
		return -ENOMEM;
	for (size_t i = link_slot(c, dev, ino);; i = (i + 1) & (c->caplinks - 1)) {
		if (!c->links[i].path) {
			c->links[i].path = strdup(path);
			if (!c->links[i].path)
				return -ENOMEM;
			c->links[i].dev = dev;
			c->links[i].ino = ino;
			c->nlinks++;
			return 0;
		}
	}
}

/* ------------------------------------------------------------ copies */

/* Whether a lower inode has a copy in the rw branch's index. */
static bool lower_indexed(const struct commit *c, ino_t ino)
{
	for (size_t i = 0; i < c->nix; i++)
		if (c->ix[i].lower_ino == ino)
			return true;
	return false;
}

/* Writes the data of in (size bytes) into ddir/name, opened with flags
 * (and mode, when it is made), and syncs it. */
static int write_copy(int in, int ddir, const char *name, int flags, mode_t mode, off_t size)
{
	int out = sfs_do_open(ddir, name, flags, mode), ret;

	if (out < 0)
		return out;
	ret = sfs_copy_data(in, out, size);
	if (ret == 0 && fdatasync(out) < 0)
		ret = -errno;
	close(out);
	return ret;
}

/* A lower file with several names whose copy is in the index gets the
 * copy's data and attributes in place, keeping its inode and all its
 * names: every name of it in the view shows the index copy until the rw
 * branch is emptied, so the write never shows; and an undone commit
 * leaves the lower names one inode, which the index still stands for
 * (replacing them by new inodes lost that: the view's hard link). */
static int rewrite_in_place(struct commit *c, struct dctx *d, const char *name, int sdir,
			    const char *sname, const struct stat *st)
{
	int in, sfd, dfd, ret;

	in = sfs_commit_open_source(sdir, sname);
	if (in < 0)
		return in;
	ret = write_copy(in, d->T, name, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
			 0, st->st_size);
	close(in);
	if (ret < 0)
		return ret;
	sfd = sfs_do_open(sdir, sname[0] ? sname : ".", O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
	dfd = sfs_do_open(d->T, name, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
	ret = sfd < 0 || dfd < 0 ? -errno : sfs_commit_drop_xattrs(sfd, dfd);
	if (sfd >= 0)
		close(sfd);
	if (dfd >= 0)
		close(dfd);
	if (ret == 0)
		ret = sfs_commit_copy_attrs(sdir, sname, st, d->T, name);
	if (ret == 0)
		ret = sfs_commit_copy_flags(sdir, sname, d->T, name);
	return ret;
}

/* Makes ddir/tmp of the type of st: the data of in (a regular file),
 * the symlink's target, or the device. */
static int make_copy(int ddir, const char *tmp, int in, const char *target,
		     const struct stat *st)
{
	if (S_ISREG(st->st_mode))
		return write_copy(in, ddir, tmp, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC,
				  0600, st->st_size);
	if (S_ISLNK(st->st_mode))
		return sfs_do_symlinkat(target, ddir, tmp) < 0 ? -errno : 0;
	if (sfs_do_mknodat(ddir, tmp, (st->st_mode & S_IFMT) | 0600, st->st_rdev) < 0)
		return -errno;
	/* a real 0:0 device (whiteouts never come here) stays one */
	return sfs_wh_is_chr_whiteout(st) ? sfs_wh_mark_device(ddir, tmp) : 0;
}

/* A new copy of sdir/sname (st) at d->T/name: made as tmp, given its
 * attributes and times, put in place, then its inode flags (an
 * immutable file cannot be renamed). Failures are recorded. */
static int place_copy(struct commit *c, struct dctx *d, const char *name, const char *vpath,
		      const char *tmp, int sdir, const char *sname, const struct stat *st)
{
	char target[PATH_MAX + 1];
	int in = -1, ret = 0;

	/* what is read from the rw branch first: nothing is made without it */
	if (S_ISREG(st->st_mode)) {
		in = sfs_commit_open_source(sdir, sname);
		ret = in < 0 ? in : 0;
	} else if (S_ISLNK(st->st_mode)) {
		ssize_t len = sfs_do_readlinkat(sdir, sname, target, sizeof(target) - 1);

		ret = len < 0 ? -errno : 0;
		target[len < 0 ? 0 : len] = '\0';
	}
	if (ret < 0)
		return sfs_commit_fail(c, ret, vpath, "reading the rw branch");
	ret = make_copy(d->T, tmp, in, target, st);
	if (in >= 0)
		close(in);
	if (ret == 0)
		ret = sfs_commit_copy_attrs(sdir, sname, st, d->T, tmp);
	if (ret == 0)
		ret = sfs_commit_put_in_place(c, d->T, tmp, name);
	if (ret < 0) {
		sfs_do_unlinkat(d->T, tmp, 0);
		return sfs_commit_fail(c, ret, vpath, "copying");
	}
	ret = S_ISREG(st->st_mode) ? sfs_commit_copy_flags(sdir, sname, d->T, name) : 0;
	return ret < 0 ? sfs_commit_fail(c, ret, vpath, "setting the inode flags") : 0;
}

/* The first name of a file placed: the lower file it rewrites in place,
 * or a new copy; remembered when it has other names to link to it. */
static int place_first(struct commit *c, struct dctx *d, const char *name, const char *vpath,
		       const char *tmp, int sdir, const char *sname, const struct stat *st,
		       bool linked)
{
	struct stat ex;
	char *rel;
	int ret;

	if (linked && S_ISREG(st->st_mode) && sfs_do_stat(d->T, name, &ex) == 0 &&
	    S_ISREG(ex.st_mode) && ex.st_nlink > 1 && lower_indexed(c, ex.st_ino)) {
		ret = rewrite_in_place(c, d, name, sdir, sname, st);
		if (ret < 0)
			return sfs_commit_fail(c, ret, vpath, "copying");
	} else {
		ret = place_copy(c, d, name, vpath, tmp, sdir, sname, st);
		if (ret < 0)
			return ret;
	}
	if (!linked)
		return 0;
	rel = sfs_ch_join(d->vpath[0] ? d->vpath : "/", name);
	ret = rel ? link_add(c, st->st_dev, st->st_ino, rel) : -ENOMEM;
	free(rel);
	return ret < 0 ? sfs_commit_fail(c, ret, vpath, "remembering a hard link") : 0;
}

/* ------------------------------------------------------------ other names */

/* Whether d->T/name is already the inode at lower path `path`. */
static bool same_lower(struct commit *c, struct dctx *d, const char *name, const char *path)
{
	struct stat a, b;
	const char *base;
	int pfd = sfs_commit_open_parent(c, path, &base);
	bool r = pfd >= 0 && sfs_do_stat(pfd, base, &a) == 0 &&
		 sfs_do_stat(d->T, name, &b) == 0 && a.st_ino == b.st_ino &&
		 a.st_dev == b.st_dev;

	if (pfd >= 0)
		close(pfd);
	return r;
}

/* d->T/name as a hard link of the file placed at lower path `path`,
 * linked as tmp and renamed into place. */
static int place_link(struct commit *c, struct dctx *d, const char *name, const char *tmp,
		      const char *path)
{
	const char *base;
	int pfd = sfs_commit_open_parent(c, path, &base), ret;

	if (pfd < 0)
		return pfd;
	ret = sfs_do_linkat(pfd, base, d->T, tmp, 0) < 0 ? -errno : 0;
	close(pfd);
	if (ret == 0)
		ret = sfs_commit_put_in_place(c, d->T, tmp, name);
	if (ret < 0)
		sfs_do_unlinkat(d->T, tmp, 0);
	return ret;
}

/* Places the non-directory shown at d/name (the rw branch's entry, or
 * the index's copy: indexed) into the lower branch. */
int sfs_commit_place_file(struct commit *c, struct dctx *d, const char *name,
			  const char *vpath, int sdir, const char *sname, bool indexed)
{
	struct stat st;
	struct link *l;
	char tmp[64];
	bool linked;
	int ret = sfs_do_stat(sdir, sname, &st);

	if (ret < 0)
		return sfs_commit_fail(c, ret, vpath, "reading the rw branch");
	ret = sfs_commit_ensure_dir(c, d);
	if (ret < 0)
		return ret;
	sfs_commit_touch_dir(d);
	sfs_commit_tmp_name(c, tmp);
	/* an index copy may have no name left in the rw branch (nlink 1),
	 * yet stands for every name of its lower file */
	linked = st.st_nlink > 1 || indexed;
	l = linked ? link_find(c, st.st_dev, st.st_ino) : NULL;
	if (!l) {
		ret = place_first(c, d, name, vpath, tmp, sdir, sname, &st, linked);
		if (ret < 0)
			return ret;
	} else if (!same_lower(c, d, name, l->path)) {
		/* another name of a file committed already (not a name of the
		 * lower inode rewritten in place) */
		ret = place_link(c, d, name, tmp, l->path);
		if (ret < 0)
			return sfs_commit_fail(c, ret, vpath, "linking");
	}
	/* an aufs whiteout of the lower branch beside the entry: moot now */
	ret = sfs_wh_remove_aufs(d->T, name);
	return ret < 0 ? sfs_commit_fail(c, ret, vpath, "removing a whiteout") : 0;
}
