/* stackfs commit: folds a rw branch into the branch below it, so that the
 * lower branch alone shows what the union of the two showed; then empties
 * the rw branch (unless --keep).
 *
 * Files are copied as copy-up copies them (a reflink or the data extents,
 * owner, xattrs and ACLs but not the union's private ones, mode, ns times,
 * inode flags), each built under a temporary name in its target directory
 * and renamed into place; hard links stay links. Whiteouts become
 * deletions, opaque directories replacements, redirected (moved)
 * directories a rename of the lower directory. With branches below the
 * lower one (its last mount's .stackfs/lowers), whiteouts, opaque marks
 * and redirects are written into the lower branch where they are needed
 * to keep hiding or finding what those branches hold.
 *
 * Order: checks (nothing in use, formats known), the list of changes
 * (whiteout/changes.c), a plan of the moved directories, the moves into
 * a staging directory of the lower branch, then the tree of the rw branch
 * top-down, syncfs, and the emptying of the rw branch. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "stackfs/datacopy.h"
#include "stackfs/runtime.h"
#include "whiteout/beneath.h"
#include "whiteout/changes.h"
#include "whiteout/journal.h"
#include "whiteout/metadir.h"
#include "whiteout/ondisk.h"
#include "whiteout/whiteout.h"
#include "xattr/xattr.h"

#define TMP_PREFIX SFS_JNL_TMP_PREFIX     /* hidden by the union if left */
#define STAGE_PREFIX SFS_JNL_STAGE_PREFIX

/* SIGINT, SIGTERM, SIGHUP: the commit stops before its next step and is
 * undone (a stop while the rw branch is being emptied finishes that). */
static volatile sig_atomic_t stop_signal;

/* A directory of the rw branch with a redirect: the lower directory it
 * shows moves to its path. */
struct moved {
	char *vpath;                   /* where the view shows it */
	char *src;                     /* the lower branch's directory, or NULL */
	char staged[48];               /* its name in the staging dir, "" if not moved */
	struct sfs_ch_stack *deep;     /* its layers below the lower branch */
};

/* A file of the rw branch with several names: where its first name was
 * placed in the lower branch, to link the others to. */
struct link {
	dev_t dev;
	ino_t ino;
	char *path;                    /* in the lower branch, NULL: empty slot */
};

/* A name of the view that shows a copy in the rw branch's index (a
 * lower file with several names, written through another name). */
struct indexed {
	char *vpath;
	char name[32];                 /* of the index entry */
	ino_t lower_ino;               /* the lower inode it stands for */
};

struct commit {
	const char *rw, *into;
	bool keep, json, deep;
	struct sfs_ch_union u;         /* b[0] rw, b[1] into, b[2..] below it */
	enum sfs_whiteout_style style; /* of marks written into the lower branch */
	int stage_fd;                  /* staging dir in the lower branch, or -1 */
	char stage_name[64];
	struct moved *mv;
	size_t nmv;
	struct link *links;
	size_t nlinks, caplinks;
	struct indexed *ix;            /* sorted by vpath */
	size_t nix;
	unsigned seq;
	struct sfs_journal jnl;        /* what RW/.stackfs/commit says */
	bool jnl_written;
	/* progress */
	uint64_t done, total;
	struct sfs_progress bar;
	/* the first error */
	int err;
	char *err_path;
	const char *err_what;
};

/* ------------------------------------------------------------ output */

static void progress(struct commit *c, const char *path)
{
	char prefix[80];

	c->done++;
	if (!sfs_progress_due(&c->bar))
		return;
	snprintf(prefix, sizeof(prefix), "commit: %llu/%llu entries: ",
		 (unsigned long long)c->done, (unsigned long long)c->total);
	sfs_progress_show(&c->bar, prefix, path[0] ? path : "/");
}

/* Records the first error: what failed, on which path (of the view), and
 * returns it. */
static int fail(struct commit *c, int err, const char *path, const char *what)
{
	if (!c->err) {
		c->err = err;
		c->err_path = strdup(path && path[0] ? path : "/");
		c->err_what = what;
	}
	return err;
}

/* -EINTR once a stop signal came: checked before each step. */
static int stopped(struct commit *c, const char *path)
{
	return stop_signal ? fail(c, -EINTR, path, "stopped by a signal") : 0;
}

static void on_stop(int sig)
{
	stop_signal = sig;
}

/* ------------------------------------------------------------ helpers */

static void proc_path(char *buf, size_t len, int dirfd, const char *name)
{
	snprintf(buf, len, "/proc/self/fd/%d/%s", dirfd, name[0] ? name : ".");
}

static void tmp_name(struct commit *c, char buf[64])
{
	snprintf(buf, 64, TMP_PREFIX "%d.%u", (int)getpid(), c->seq++);
}

static int mnt_of(int fd, uint64_t *mnt)
{
	struct statx x;

	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &x) < 0)
		return -errno;
	*mnt = x.stx_mnt_id;
	return 0;
}

/* Removes dirfd/name and everything under it, never leaving the mount
 * mnt (a mount point inside a branch: -EXDEV) nor following a symlink. */
static int remove_tree(int dirfd, const char *name, uint64_t mnt)
{
	struct dirent *e;
	struct stat st;
	uint64_t m = 0;
	DIR *d;
	int fd, ret = 0;

	/* the first call on the name does not cross a mount point */
	ret = sfs_nx_stat(dirfd, name, &st);
	if (ret < 0)
		return ret == -ENOENT ? 0 : ret;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	fd = sfs_nx_open(dirfd, name, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd;
	ret = mnt_of(fd, &m);
	if (ret == 0 && m != mnt)
		ret = -EXDEV;
	d = ret ? NULL : fdopendir(fd);
	if (!d) {
		ret = ret ? ret : -errno;
		close(fd);
		return ret;
	}
	while (ret == 0 && (errno = 0, e = readdir(d))) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			ret = remove_tree(fd, e->d_name, mnt);
	}
	if (ret == 0 && errno)
		ret = -errno;
	closedir(d);
	if (ret == 0 && unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		ret = -errno;
	return ret;
}

/* Opens the directory at a path from a root, one component at a time,
 * following no symlink. */
static int open_path(int root, const char *path)
{
	char *copy = strdup(path), *save = NULL, *comp;
	int fd = fcntl(root, F_DUPFD_CLOEXEC, 0);

	if (fd < 0)
		fd = -errno;
	if (!copy) {
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	for (comp = strtok_r(copy, "/", &save); fd >= 0 && comp; comp = strtok_r(NULL, "/", &save)) {
		int next = sfs_nx_open(fd, comp, O_PATH | O_DIRECTORY);

		close(fd);
		fd = next;
	}
	free(copy);
	return fd;
}

/* Splits "/a/b/c" into the directory "/a/b" (malloc'd) and "c". */
static char *split_path(const char *path, const char **base)
{
	const char *slash = strrchr(path, '/');

	*base = slash ? slash + 1 : path;
	return strndup(path, slash ? (size_t)(slash - path) : 0);
}

/* A branch's header: 0, or -1 when it has none that is valid. */
static int read_header(int root_fd, struct sfs_header *h)
{
	uint8_t buf[128];
	int dir = openat(root_fd, SFS_METADIR_NAME, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int fd = dir < 0 ? -1 : openat(dir, SFS_META_HEADER, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
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
static int header_style(int root_fd)
{
	struct sfs_header h;

	if (read_header(root_fd, &h) < 0)
		return -1;
	return h.flags & SFS_META_F_OVERLAY ? SFS_WH_OVERLAY : SFS_WH_AUFS;
}

#define COPIED_FLAGS (FS_SYNC_FL | FS_IMMUTABLE_FL | FS_APPEND_FL | FS_NODUMP_FL | \
		      FS_NOATIME_FL | FS_DIRSYNC_FL | FS_TOPDIR_FL | FS_PROJINHERIT_FL)

/* The inode flags (chattr) of a regular file or directory, set once the
 * entry is in place (an immutable one cannot be renamed). */
static int copy_flags(int sdir, const char *sname, int ddir, const char *dname)
{
	char sp[PATH_MAX], dp[PATH_MAX];
	int in, out, flags = 0, own = 0, ret = 0;

	proc_path(sp, sizeof(sp), sdir, sname);
	proc_path(dp, sizeof(dp), ddir, dname);
	in = open(sp, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_NOATIME | O_CLOEXEC);
	if (in < 0 && errno == EPERM)
		in = open(sp, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return -errno;
	if (ioctl(in, FS_IOC_GETFLAGS, &flags) < 0)
		ret = errno == ENOTTY || errno == EOPNOTSUPP ? 0 : -errno;
	close(in);
	flags &= COPIED_FLAGS;
	if (ret < 0 || !flags)
		return ret;
	out = open(dp, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
	if (out < 0)
		return -errno;
	if (ioctl(out, FS_IOC_GETFLAGS, &own) < 0)
		ret = -errno;
	flags |= own & ~COPIED_FLAGS;
	if (ret == 0 && flags != own && ioctl(out, FS_IOC_SETFLAGS, &flags) < 0)
		ret = -errno;
	close(out);
	return ret;
}

/* ------------------------------------------------------------ attributes */

/* Removes the attributes of dst (not the private ones) that src lacks,
 * so that a kept directory ends with exactly src's. */
static int drop_extra_xattrs(int sfd, int dfd)
{
	char sl[65536], dl[65536];
	ssize_t ns = sfs_xattr_list(sfd, "", sl, sizeof(sl));
	ssize_t nd = sfs_xattr_list(dfd, "", dl, sizeof(dl));
	int ret = 0;

	if (ns == -ENOTSUP || ns == -EOPNOTSUPP)
		ns = 0;
	if (nd == -ENOTSUP || nd == -EOPNOTSUPP)
		return 0;
	if (ns < 0 || nd < 0)
		return (int)(ns < 0 ? ns : nd);
	for (ssize_t i = 0; ret == 0 && i < nd; i += (ssize_t)strlen(dl + i) + 1) {
		bool found = false;

		if (sfs_xattr_is_private(dl + i))
			continue;
		for (ssize_t j = 0; !found && j < ns; j += (ssize_t)strlen(sl + j) + 1)
			found = !strcmp(sl + j, dl + i);
		if (!found) {
			ret = sfs_xattr_remove(dfd, "", dl + i);
			if (ret == -ENODATA)
				ret = 0;
		}
	}
	return ret;
}

/* An O_PATH fd of dir/name (name "" for dir itself) of the type of st,
 * never following a symlink: -ESTALE when another type is there (the
 * name was swapped). */
static int open_meta_fd(int dir, const char *name, const struct stat *st)
{
	struct stat now;
	int fd = openat(dir, name[0] ? name : ".", O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstatat(fd, "", &now, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0 ||
	    (now.st_mode & S_IFMT) != (st->st_mode & S_IFMT)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* Gives ddir/dname the owner, xattrs, ACLs and mode of sdir/sname (not
 * its times: those go last), each step on the target's fd (a user who
 * can write the directory cannot swap the name between the steps); a
 * symlink's xattrs alone by name (no fd reaches them). */
static int copy_meta(int sdir, const char *sname, const struct stat *st, int ddir,
		     const char *dname)
{
	bool lnk = S_ISLNK(st->st_mode);
	int ret, sfd = open_meta_fd(sdir, sname, st), dfd = -1;

	if (sfd < 0)
		return sfd;
	dfd = open_meta_fd(ddir, dname, st);
	ret = dfd < 0 ? dfd : 0;
	if (ret == 0) {
		struct sfs_entry_ref from = { sfd, sdir, lnk ? sname : NULL };
		struct sfs_entry_ref to = { dfd, ddir, lnk ? dname : NULL };

		ret = sfs_meta_copy(&from, st, &to, false);
	}
	close(sfd);
	if (dfd >= 0)
		close(dfd);
	return ret;
}

static int copy_times(const struct stat *st, int ddir, const char *dname)
{
	struct timespec tv[2] = { st->st_atim, st->st_mtim };
	int fd = open_meta_fd(ddir, dname, st), ret = 0;

	if (fd < 0)
		return fd;
	if (utimensat(fd, "", tv, AT_EMPTY_PATH) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Clears the opaque and redirect marks of a directory, both formats. */
static int clear_marks(int dirfd)
{
	static const char *const names[] = {
		SFS_OVL_OPAQUE_XATTR, SFS_OVL_USER_OPAQUE_XATTR, SFS_REDIRECT_XATTR,
		SFS_OVL_REDIRECT_XATTR, SFS_OVL_USER_REDIRECT_XATTR,
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int ret = sfs_xattr_remove(dirfd, "", names[i]);

		if (ret < 0 && ret != -ENODATA && ret != -ENOTSUP && ret != -EOPNOTSUPP)
			return ret;
	}
	if (unlinkat(dirfd, SFS_WH_OPQ, 0) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

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

static int link_add(struct commit *c, dev_t dev, ino_t ino, const char *path)
{
	if ((c->nlinks + 1) * 2 > c->caplinks) {
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
	}
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

/* ------------------------------------------------------------ directories */

/* One directory of the view being committed. */
struct dctx {
	struct dctx *parent;
	const char *vpath;             /* "" for the root */
	const char *name;              /* in the parent */
	struct sfs_ch_stack *V;        /* what the view merges there */
	int T;                         /* the lower branch's directory, or -1 */
	bool made;                     /* T made here for an index link */
	bool touched;                  /* T changed (its times to put back) */
	struct timespec t_times[2];    /* T's times before */
};

static int ensure_t(struct commit *c, struct dctx *d);

/* The stack the lower branch will show at d after the commit: d's
 * directory there and the layers below the lower branch. */
static int new_stack(struct commit *c, struct dctx *d, struct sfs_ch_stack **out)
{
	struct sfs_ch_stack *deep = NULL;
	struct sfs_ch_layer *l;
	int ret = sfs_ch_stack_from(d->V, 2, &deep);

	if (ret < 0)
		return ret;
	l = calloc(deep->n + 1, sizeof(*l));
	if (!l) {
		sfs_ch_stack_free(deep);
		return -ENOMEM;
	}
	l[0].b = 1;
	l[0].fd = d->T;
	l[0].path = (char *)d->vpath;
	memcpy(l + 1, deep->l, deep->n * sizeof(*l));
	ret = sfs_ch_stack_make(l, deep->n + 1, d->V->dpath, out);
	free(l);
	sfs_ch_stack_free(deep);
	return ret;
}

/* Remembers T's times before the first change, for a directory the rw
 * branch has no copy of (its times are the lower one's). */
static void touch_t(struct dctx *d)
{
	struct stat st;

	if (d->touched || d->T < 0)
		return;
	d->touched = true;
	if (fstat(d->T, &st) == 0) {
		d->t_times[0] = st.st_atim;
		d->t_times[1] = st.st_mtim;
	} else {
		d->t_times[0].tv_nsec = d->t_times[1].tv_nsec = UTIME_OMIT;
	}
}

/* Puts ddir/name where a staged entry tmp is: over a non-directory in one
 * step; a directory there is removed first. */
static int put_in_place(struct commit *c, int ddir, const char *tmp, const char *name)
{
	struct stat st;
	int ret;

	if (sfs_nx_stat(ddir, name, &st) == 0 && S_ISDIR(st.st_mode)) {
		ret = remove_tree(ddir, name, c->u.b[1].mnt_id);
		if (ret < 0)
			return ret;
	}
	if (renameat(ddir, tmp, ddir, name) < 0)
		return -errno;
	return 0;
}

/* The lower branch's directory gets the marks that keep the branches
 * below it showing what they showed under the rw branch: `wanted`. */
static int fix_marks(struct commit *c, struct dctx *d, const char *name,
		     const struct sfs_ch_stack *wanted, int fd)
{
	struct sfs_ch_stack *ns = NULL, *got = NULL;
	int ret = 0;

	if (!c->deep)
		return 0;
	for (int round = 0; round < 2; round++) {
		ret = new_stack(c, d, &ns);
		if (ret == 0)
			ret = sfs_ch_lookup(&c->u, ns, name, false, &got);
		sfs_ch_stack_free(ns);
		ns = NULL;
		if (ret < 0)
			return ret;
		if (sfs_ch_same_layers(got, wanted, 2)) {
			sfs_ch_stack_free(got);
			return 0;
		}
		sfs_ch_stack_free(got);
		got = NULL;
		if (round)
			break;
		ret = clear_marks(fd);
		if (ret == 0 && (!wanted || wanted->n == 0 || !wanted->dpath))
			ret = sfs_wh_set_opaque(fd, c->style);
		else if (ret == 0)
			ret = sfs_redirect_set(fd, wanted->dpath[0] ? wanted->dpath : "/", c->style);
		if (ret < 0)
			return ret;
	}
	return -EUCLEAN; /* cannot be made to show the same layers */
}

/* Makes a directory in the lower branch at d->T/name with the metadata of
 * sdir/sname (st), staged under a temporary name. Returns its fd. */
static int make_dir(struct commit *c, int dt, const char *name, int sdir, const char *sname,
		    const struct stat *st)
{
	char tmp[64];
	int ret, fd;

	tmp_name(c, tmp);
	if (mkdirat(dt, tmp, 0700) < 0)
		return -errno;
	ret = copy_meta(sdir, sname, st, dt, tmp);
	if (ret == 0 && renameat2(dt, tmp, dt, name, RENAME_NOREPLACE) < 0)
		ret = -errno;
	if (ret < 0) {
		unlinkat(dt, tmp, AT_REMOVEDIR);
		return ret;
	}
	fd = openat(dt, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int ensure_t(struct commit *c, struct dctx *d)
{
	struct sfs_ch_stack *wanted = NULL;
	int ret;

	if (d->T >= 0)
		return 0;
	if (!d->parent)
		return -ENOENT;
	ret = ensure_t(c, d->parent);
	if (ret < 0)
		return ret;
	touch_t(d->parent);
	ret = make_dir(c, d->parent->T, d->name, d->V->l[0].fd, "", &d->V->top);
	if (ret < 0)
		return fail(c, ret, d->vpath, "making the directory");
	d->T = ret;
	d->made = true;
	ret = sfs_ch_stack_from(d->V, 2, &wanted);
	if (ret == 0)
		ret = fix_marks(c, d->parent, d->name, wanted, d->T);
	sfs_ch_stack_free(wanted);
	return ret < 0 ? fail(c, ret, d->vpath, "marking the directory") : 0;
}

/* ------------------------------------------------------------ entries */

/* Whether a lower inode has a copy in the rw branch's index. */
static bool lower_indexed(const struct commit *c, ino_t ino)
{
	for (size_t i = 0; i < c->nix; i++)
		if (c->ix[i].lower_ino == ino)
			return true;
	return false;
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
	char sp[PATH_MAX];
	int in, out, sfd, dfd, ret = 0;

	proc_path(sp, sizeof(sp), sdir, sname);
	in = open(sp, O_RDONLY | O_NOFOLLOW | O_NOATIME | O_CLOEXEC);
	if (in < 0 && errno == EPERM)
		in = open(sp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = openat(d->T, name, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (out < 0)
		ret = -errno;
	if (ret == 0)
		ret = sfs_copy_data(in, out, st->st_size);
	if (ret == 0 && fdatasync(out) < 0)
		ret = -errno;
	close(in);
	if (out >= 0)
		close(out);
	sfd = ret == 0 ? openat(sdir, sname[0] ? sname : ".", O_PATH | O_NOFOLLOW | O_CLOEXEC) : -1;
	dfd = ret == 0 ? openat(d->T, name, O_PATH | O_NOFOLLOW | O_CLOEXEC) : -1;
	if (ret == 0 && (sfd < 0 || dfd < 0))
		ret = -errno;
	if (ret == 0)
		ret = drop_extra_xattrs(sfd, dfd);
	if (sfd >= 0)
		close(sfd);
	if (dfd >= 0)
		close(dfd);
	if (ret == 0)
		ret = copy_meta(sdir, sname, st, d->T, name);
	if (ret == 0)
		ret = copy_times(st, d->T, name);
	if (ret == 0)
		ret = copy_flags(sdir, sname, d->T, name);
	return ret;
}

/* Whether d->T/name is already the inode at lower path `path`. */
static bool same_lower(struct commit *c, struct dctx *d, const char *name, const char *path)
{
	struct stat a, b;
	const char *base;
	char *dir = split_path(path, &base);
	int pfd = dir ? open_path(c->u.b[1].root_fd, dir) : -1;
	bool r = pfd >= 0 && fstatat(pfd, base, &a, AT_SYMLINK_NOFOLLOW) == 0 &&
		 fstatat(d->T, name, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_ino == b.st_ino &&
		 a.st_dev == b.st_dev;

	free(dir);
	if (pfd >= 0)
		close(pfd);
	return r;
}

/* Places the non-directory shown at d/name (the rw branch's entry, or
 * the index's copy) into the lower branch. */
static int place_file(struct commit *c, struct dctx *d, const char *name, const char *vpath,
		      int sdir, const char *sname, bool indexed)
{
	struct stat st;
	struct link *l;
	char tmp[64], *rel = NULL;
	int ret = 0, in = -1, out = -1;
	bool linked;

	ret = sfs_nx_stat(sdir, sname, &st);
	if (ret < 0)
		return fail(c, ret, vpath, "reading the rw branch");
	ret = ensure_t(c, d);
	if (ret < 0)
		return ret;
	touch_t(d);
	tmp_name(c, tmp);
	/* an index copy may have no name left in the rw branch (nlink 1),
	 * yet stands for every name of its lower file */
	linked = st.st_nlink > 1 || indexed;
	l = linked ? link_find(c, st.st_dev, st.st_ino) : NULL;
	if (l && same_lower(c, d, name, l->path))
		goto out_wh; /* a name of the lower inode rewritten in place */
	if (!l && linked && S_ISREG(st.st_mode)) {
		struct stat ex;

		if (fstatat(d->T, name, &ex, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(ex.st_mode) &&
		    ex.st_nlink > 1 && lower_indexed(c, ex.st_ino)) {
			ret = rewrite_in_place(c, d, name, sdir, sname, &st);
			if (ret < 0)
				return fail(c, ret, vpath, "copying");
			goto out_link;
		}
	}
	if (l) {
		/* another name of a file committed already */
		const char *base;
		char *dir = split_path(l->path, &base);
		int pfd = dir ? open_path(c->u.b[1].root_fd, dir) : -ENOMEM;

		free(dir);
		if (pfd < 0)
			return fail(c, pfd, vpath, "linking");
		ret = linkat(pfd, base, d->T, tmp, 0) < 0 ? -errno : 0;
		close(pfd);
		if (ret == 0)
			ret = put_in_place(c, d->T, tmp, name);
		if (ret < 0) {
			unlinkat(d->T, tmp, 0);
			return fail(c, ret, vpath, "linking");
		}
		goto out_wh;
	}
	if (S_ISREG(st.st_mode)) {
		char sp[PATH_MAX];

		proc_path(sp, sizeof(sp), sdir, sname);
		in = open(sp, O_RDONLY | O_NOFOLLOW | O_NOATIME | O_CLOEXEC);
		if (in < 0 && errno == EPERM)
			in = open(sp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (in < 0)
			return fail(c, -errno, vpath, "reading the rw branch");
		out = openat(d->T, tmp, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (out < 0)
			ret = -errno;
		if (ret == 0)
			ret = sfs_copy_data(in, out, st.st_size);
		if (ret == 0 && fdatasync(out) < 0)
			ret = -errno;
		close(in);
		if (out >= 0)
			close(out);
	} else if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX + 1];
		ssize_t len = readlinkat(sdir, sname, target, sizeof(target) - 1);

		if (len < 0)
			return fail(c, -errno, vpath, "reading the rw branch");
		target[len] = '\0';
		if (symlinkat(target, d->T, tmp) < 0)
			ret = -errno;
	} else if (mknodat(d->T, tmp, (st.st_mode & S_IFMT) | 0600, st.st_rdev) < 0) {
		ret = -errno;
	} else if (sfs_wh_is_chr_whiteout(&st)) {
		/* a real 0:0 device (whiteouts never come here) stays one */
		ret = sfs_wh_mark_device(d->T, tmp);
	}
	if (ret == 0)
		ret = copy_meta(sdir, sname, &st, d->T, tmp);
	if (ret == 0)
		ret = copy_times(&st, d->T, tmp);
	if (ret == 0)
		ret = put_in_place(c, d->T, tmp, name);
	if (ret < 0) {
		unlinkat(d->T, tmp, 0);
		return fail(c, ret, vpath, "copying");
	}
	if (S_ISREG(st.st_mode)) {
		ret = copy_flags(sdir, sname, d->T, name);
		if (ret < 0)
			return fail(c, ret, vpath, "setting the inode flags");
	}
out_link:
	if (linked) {
		rel = sfs_ch_join(d->vpath[0] ? d->vpath : "/", name);
		ret = rel ? link_add(c, st.st_dev, st.st_ino, rel) : -ENOMEM;
		free(rel);
		if (ret < 0)
			return fail(c, ret, vpath, "remembering a hard link");
	}
out_wh:
	/* an aufs whiteout of the lower branch beside the entry: moot now */
	{
		char wh[300];

		snprintf(wh, sizeof(wh), SFS_WH_PREFIX "%s", name);
		if (strlen(name) + SFS_WH_PREFIX_LEN <= 255 && unlinkat(d->T, wh, 0) < 0 &&
		    errno != ENOENT)
			return fail(c, -errno, vpath, "removing a whiteout");
	}
	return 0;
}

/* A whiteout of the rw branch: the lower entry goes; a whiteout stays in
 * the lower branch where a branch below it shows the name. */
static int apply_whiteout(struct commit *c, struct dctx *d, const char *name,
			  const char *vpath, enum sfs_whiteout_style style)
{
	struct sfs_ch_stack *ns = NULL, *got = NULL;
	struct stat st;
	int ret;

	if (sfs_nx_stat(d->T, name, &st) == 0) {
		if (sfs_wh_is_dev_whiteout(d->T, name, &st))
			return 0; /* the lower branch hides it already */
		touch_t(d);
		ret = remove_tree(d->T, name, c->u.b[1].mnt_id);
		if (ret < 0)
			return fail(c, ret, vpath, "deleting");
	} else if (errno != ENOENT) {
		return fail(c, -errno, vpath, "deleting");
	}
	if (!c->deep)
		return 0;
	ret = new_stack(c, d, &ns);
	if (ret == 0)
		ret = sfs_ch_lookup(&c->u, ns, name, false, &got);
	sfs_ch_stack_free(ns);
	sfs_ch_stack_free(got);
	if (ret == -ENOENT)
		return 0;
	if (ret == 0) {
		char tmp[64];

		touch_t(d);
		if (style == SFS_WH_OVERLAY) {
			tmp_name(c, tmp);
			ret = mknodat(d->T, tmp, S_IFCHR, makedev(0, 0)) < 0 ? -errno : 0;
			if (ret == 0 && renameat(d->T, tmp, d->T, name) < 0) {
				ret = -errno;
				unlinkat(d->T, tmp, 0);
			}
		} else {
			ret = sfs_wh_create(d->T, name, -1, SFS_WH_AUFS);
		}
	}
	return ret < 0 ? fail(c, ret, vpath, "writing a whiteout") : 0;
}

static struct moved *moved_find(struct commit *c, const char *vpath)
{
	for (size_t i = 0; i < c->nmv; i++)
		if (!strcmp(c->mv[i].vpath, vpath))
			return &c->mv[i];
	return NULL;
}

static int commit_dir(struct commit *c, struct dctx *d);

/* Puts the times (and inode flags) of the view's directory on the lower
 * branch's, once its content is done. */
static int finish_dir(struct commit *c, struct dctx *d, int sdir, const char *sname,
		      const struct stat *st, int ddir, const char *dname)
{
	int ret = 0;

	if (sdir >= 0)
		ret = copy_flags(sdir, sname, ddir, dname);
	if (ret == 0)
		ret = copy_times(st, ddir, dname);
	return ret < 0 ? fail(c, ret, d->vpath, "setting times") : 0;
}

/* A directory of the rw branch at d/name (view stack vc): the lower
 * branch's directory is kept, moved there, or made; gets the attributes;
 * then its content. */
static int place_dir(struct commit *c, struct dctx *d, const char *name, const char *vpath,
		     struct sfs_ch_stack *vc)
{
	const struct sfs_ch_layer *u = &vc->l[0], *b1 = sfs_ch_stack_in(vc, 1);
	struct moved *m = vc->redirected ? moved_find(c, vpath) : NULL;
	struct sfs_ch_stack *wanted = NULL, *child = NULL;
	struct dctx cd = { .parent = d, .vpath = vpath, .name = name, .T = -1 };
	struct sfs_ch_layer *l = NULL;
	struct stat st, ex;
	bool exists;
	int ret = 0, fd = -1;

	if (fstat(u->fd, &st) < 0)
		return fail(c, -errno, vpath, "reading the rw branch");
	exists = sfs_nx_stat(d->T, name, &ex) == 0;
	touch_t(d);
	if (m && m->staged[0]) {
		/* a moved directory: the lower one comes to its new place */
		if (exists)
			ret = remove_tree(d->T, name, c->u.b[1].mnt_id);
		if (ret == 0 && renameat2(c->stage_fd, m->staged, d->T, name, RENAME_NOREPLACE) < 0)
			ret = -errno;
		if (ret == 0)
			m->staged[0] = '\0';
	} else if ((m && m->src) || (!vc->opaque && !m && b1 && exists && S_ISDIR(ex.st_mode) &&
				     !strcmp(b1->path, vpath))) {
		/* the lower directory stays (merged, or moved onto itself) */
	} else {
		/* opaque (replaced), new, over a non-directory, or moved
		 * without a lower directory */
		if (exists)
			ret = remove_tree(d->T, name, c->u.b[1].mnt_id);
		if (ret == 0) {
			fd = make_dir(c, d->T, name, u->fd, "", &st);
			ret = fd < 0 ? fd : 0;
		}
	}
	if (ret == 0 && fd < 0) {
		fd = openat(d->T, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		ret = fd < 0 ? -errno : 0;
		if (ret == 0)
			ret = drop_extra_xattrs(u->fd, fd);
		if (ret == 0)
			ret = copy_meta(u->fd, "", &st, d->T, name);
	}
	if (ret < 0)
		goto out_fail;
	/* the layers below the lower branch stay what they were */
	if (m)
		ret = m->deep ? sfs_ch_stack_make(m->deep->l, m->deep->n, m->deep->dpath, &wanted)
			      : sfs_ch_stack_make(NULL, 0, NULL, &wanted);
	else
		ret = sfs_ch_stack_from(vc, 2, &wanted);
	if (ret == 0)
		ret = fix_marks(c, d, name, wanted, fd);
	if (ret < 0)
		goto out_fail;
	/* the content, through the rw directory over the new lower one */
	l = calloc(wanted->n + 2, sizeof(*l));
	if (!l) {
		ret = -ENOMEM;
		goto out_fail;
	}
	l[0] = *u;
	l[1].b = 1;
	l[1].fd = fd;
	l[1].path = (char *)vpath;
	memcpy(l + 2, wanted->l, wanted->n * sizeof(*l));
	ret = sfs_ch_stack_make(l, wanted->n + 2, wanted->dpath ? wanted->dpath : vc->dpath,
				&child);
	free(l);
	if (ret < 0)
		goto out_fail;
	cd.V = child;
	cd.T = fd;
	fd = -1;
	ret = commit_dir(c, &cd);
	if (ret == 0)
		ret = finish_dir(c, &cd, u->fd, "", &st, d->T, name);
	if (cd.T >= 0)
		close(cd.T);
	sfs_ch_stack_free(child);
	sfs_ch_stack_free(wanted);
	return ret;

out_fail:
	if (fd >= 0)
		close(fd);
	sfs_ch_stack_free(wanted);
	return fail(c, ret, vpath, "placing the directory");
}

/* One raw entry of a rw directory: what it is. */
enum raw_kind { RAW_ENTRY, RAW_WH_AUFS, RAW_WH_OVERLAY, RAW_SKIP };

struct raw {
	char *name;                    /* the name it is about */
	enum raw_kind kind;
};

static int raw_cmp(const void *a, const void *b)
{
	const struct raw *x = a, *y = b;
	int r = strcmp(x->name, y->name);

	/* whiteouts of a name before the name's entry */
	return r ? r : (int)y->kind - (int)x->kind;
}

static void raws_free(struct raw *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

/* The entries and whiteouts of a directory of the rw branch. */
static int raw_list(int dirfd, bool root, struct raw **out, size_t *n)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct raw *v = NULL;
	size_t cnt = 0, cap = 0;
	struct dirent *e;
	int ret = 0;

	if (!d) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		return ret;
	}
	while (ret == 0 && (errno = 0, e = readdir(d))) {
		const char *nm = e->d_name;
		enum raw_kind k = RAW_ENTRY;
		struct stat st;

		if (!strcmp(nm, ".") || !strcmp(nm, "..") ||
		    (root && !strcmp(nm, SFS_METADIR_NAME)))
			continue;
		if (sfs_wh_reserved_name(nm)) {
			if (!strncmp(nm, SFS_WH_PREFIX SFS_WH_PREFIX, 2 * SFS_WH_PREFIX_LEN) ||
			    !nm[SFS_WH_PREFIX_LEN])
				continue; /* aufs bookkeeping, the opaque marker */
			nm += SFS_WH_PREFIX_LEN;
			k = RAW_WH_AUFS;
		} else if ((e->d_type == DT_CHR || e->d_type == DT_UNKNOWN) &&
			   sfs_nx_stat(fd, nm, &st) == 0 &&
			   sfs_wh_is_dev_whiteout(fd, nm, &st)) {
			k = RAW_WH_OVERLAY;
		}
		if (cnt == cap) {
			size_t nc = cap ? cap * 2 : 32;
			struct raw *nv = realloc(v, nc * sizeof(*nv));

			if (!nv) {
				ret = -ENOMEM;
				break;
			}
			v = nv;
			cap = nc;
		}
		v[cnt].name = strdup(nm);
		v[cnt].kind = k;
		if (!v[cnt].name) {
			ret = -ENOMEM;
			break;
		}
		cnt++;
	}
	if (ret == 0 && errno)
		ret = -errno;
	closedir(d);
	if (ret < 0) {
		raws_free(v, cnt);
		return ret;
	}
	if (cnt)
		qsort(v, cnt, sizeof(*v), raw_cmp);
	*out = v;
	*n = cnt;
	return 0;
}

static bool raw_has_entry(const struct raw *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].kind == RAW_ENTRY && !strcmp(v[i].name, name))
			return true;
	return false;
}

static int ix_cmp(const void *a, const void *b)
{
	return strcmp(((const struct indexed *)a)->vpath, ((const struct indexed *)b)->vpath);
}

static const struct indexed *ix_find(const struct commit *c, const char *vpath)
{
	struct indexed key = { .vpath = (char *)vpath };

	return c->nix ? bsearch(&key, c->ix, c->nix, sizeof(key), ix_cmp) : NULL;
}

/* Whether a name shown as an index copy is below vpath. */
static bool ix_under(const struct commit *c, const char *vpath)
{
	size_t lo = 0, hi = c->nix, len = strlen(vpath);

	while (lo < hi) { /* the first path >= vpath */
		size_t mid = (lo + hi) / 2;

		if (strcmp(c->ix[mid].vpath, vpath) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < c->nix && !strncmp(c->ix[lo].vpath, vpath, len); lo++)
		if (c->ix[lo].vpath[len] == '/')
			return true;
	return false;
}

/* The names of d that the rw branch has no entry of but that change: a
 * lower file with several names shown as the index's copy (found by
 * plan_index before anything changed: a name replaced meanwhile changes
 * the lower file's link count). */
static int commit_lower_names(struct commit *c, struct dctx *d, const struct raw *rv,
			      size_t rn)
{
	char **names = NULL;
	size_t n = 0;
	int ret = sfs_ch_names(&c->u, d->V, &names, &n);

	if (ret < 0)
		return fail(c, ret, d->vpath, "listing");
	for (size_t i = 0; ret == 0 && i < n; i++) {
		struct sfs_ch_stack *vc = NULL;
		const struct indexed *e;
		char *vpath;

		if (rv && raw_has_entry(rv, rn, names[i]))
			continue;
		vpath = sfs_ch_join(d->vpath[0] ? d->vpath : "/", names[i]);
		if (!vpath) {
			ret = fail(c, -ENOMEM, d->vpath, "");
			break;
		}
		if ((e = ix_find(c, vpath))) {
			progress(c, vpath);
			ret = stopped(c, vpath);
			if (ret == 0)
				ret = place_file(c, d, names[i], vpath, c->u.index_fd, e->name, true);
		} else if (ix_under(c, vpath)) {
			ret = sfs_ch_lookup(&c->u, d->V, names[i], false, &vc);
			if (ret < 0)
				ret = ret == -ENOENT ? 0 : fail(c, ret, vpath, "looking up");
		}
		if (ret == 0 && vc && S_ISDIR(vc->top.st_mode) && vc->l[0].b != 0) {
			const struct sfs_ch_layer *b1 = sfs_ch_stack_in(vc, 1);
			struct dctx cd = { .parent = d, .vpath = vpath, .name = names[i], .V = vc,
					   .T = -1 };

			if (b1 && (cd.T = fcntl(b1->fd, F_DUPFD_CLOEXEC, 0)) < 0)
				ret = fail(c, -errno, vpath, "opening");
			if (ret == 0)
				ret = commit_dir(c, &cd);
			if (ret == 0 && cd.made)
				ret = finish_dir(c, &cd, vc->l[0].fd, "", &vc->top, d->T, names[i]);
			else if (ret == 0 && cd.touched &&
				 utimensat(cd.T, ".", cd.t_times, AT_SYMLINK_NOFOLLOW) < 0)
				ret = fail(c, -errno, vpath, "setting times");
			if (cd.T >= 0)
				close(cd.T);
		}
		free(vpath);
		sfs_ch_stack_free(vc);
	}
	sfs_ch_names_free(names, n);
	return ret;
}

static int commit_dir(struct commit *c, struct dctx *d)
{
	const struct sfs_ch_layer *u = d->V->n && d->V->l[0].b == 0 ? &d->V->l[0] : NULL;
	struct raw *rv = NULL;
	size_t rn = 0;
	int ret = 0;

	if (u) {
		ret = raw_list(u->fd, !d->vpath[0], &rv, &rn);
		if (ret < 0)
			return fail(c, ret, d->vpath, "listing the rw branch");
	}
	/* whiteouts first: what they delete may be where an entry goes */
	for (size_t i = 0; ret == 0 && i < rn; i++) {
		char *vpath;

		if (rv[i].kind == RAW_ENTRY || raw_has_entry(rv, rn, rv[i].name))
			continue;
		vpath = sfs_ch_join(d->vpath[0] ? d->vpath : "/", rv[i].name);
		if (!vpath)
			return fail(c, -ENOMEM, d->vpath, "");
		progress(c, vpath);
		ret = stopped(c, vpath);
		if (ret == 0)
			ret = apply_whiteout(c, d, rv[i].name, vpath,
					     rv[i].kind == RAW_WH_OVERLAY ? SFS_WH_OVERLAY : SFS_WH_AUFS);
		free(vpath);
	}
	for (size_t i = 0; ret == 0 && i < rn; i++) {
		struct sfs_ch_stack *vc = NULL;
		char *vpath;

		if (rv[i].kind != RAW_ENTRY)
			continue;
		vpath = sfs_ch_join(d->vpath[0] ? d->vpath : "/", rv[i].name);
		if (!vpath) {
			ret = fail(c, -ENOMEM, d->vpath, "");
			break;
		}
		progress(c, vpath);
		ret = stopped(c, vpath);
		if (ret == 0)
			ret = sfs_ch_lookup(&c->u, d->V, rv[i].name, true, &vc);
		if (ret == 0 && vc->l[0].b != 0)
			ret = -ESTALE; /* the rw branch changed meanwhile */
		if (ret < 0)
			ret = fail(c, ret, vpath, "looking up");
		else if (S_ISDIR(vc->top.st_mode))
			ret = place_dir(c, d, rv[i].name, vpath, vc);
		else
			ret = place_file(c, d, rv[i].name, vpath, u->fd, rv[i].name, false);
		sfs_ch_stack_free(vc);
		free(vpath);
	}
	if (ret == 0 && c->nix && (!d->vpath[0] || ix_under(c, d->vpath)))
		ret = commit_lower_names(c, d, rv, rn);
	raws_free(rv, rn);
	return ret;
}

/* ------------------------------------------------------------ the plan */

/* Finds the directories of the rw branch with a redirect, before
 * anything changes, and counts the entries (for the progress line). */
static int plan_dir(struct commit *c, const char *vpath, const struct sfs_ch_stack *V)
{
	struct raw *rv = NULL;
	size_t rn = 0;
	int ret = raw_list(V->l[0].fd, !vpath[0], &rv, &rn);

	if (ret < 0)
		return fail(c, ret, vpath, "listing the rw branch");
	for (size_t i = 0; ret == 0 && i < rn; i++) {
		struct sfs_ch_stack *vc = NULL;
		char *p;

		c->total++;
		if (rv[i].kind != RAW_ENTRY)
			continue;
		p = sfs_ch_join(vpath[0] ? vpath : "/", rv[i].name);
		if (!p) {
			ret = fail(c, -ENOMEM, vpath, "");
			break;
		}
		ret = sfs_ch_lookup(&c->u, V, rv[i].name, true, &vc);
		if (ret < 0) {
			ret = fail(c, ret, p, "looking up");
		} else if (S_ISDIR(vc->top.st_mode) && vc->l[0].b == 0) {
			if (vc->redirected) {
				struct moved *nm = realloc(c->mv, (c->nmv + 1) * sizeof(*nm));
				const struct sfs_ch_layer *b1 = sfs_ch_stack_in(vc, 1);

				if (!nm) {
					ret = fail(c, -ENOMEM, p, "");
				} else {
					c->mv = nm;
					nm += c->nmv++;
					memset(nm, 0, sizeof(*nm));
					nm->vpath = strdup(p);
					nm->src = b1 ? strdup(b1->path) : NULL;
					ret = sfs_ch_stack_from(vc, 2, &nm->deep);
					if (ret == 0 && (!nm->vpath || (b1 && !nm->src)))
						ret = -ENOMEM;
					if (ret < 0)
						fail(c, ret, p, "");
				}
			}
			if (ret == 0)
				ret = plan_dir(c, p, vc);
		}
		sfs_ch_stack_free(vc);
		free(p);
	}
	raws_free(rv, rn);
	return ret;
}

/* Every name of the view that shows a copy in the rw branch's index. */
static int plan_index(struct commit *c, const char *vpath, const struct sfs_ch_stack *V)
{
	char **names = NULL;
	size_t n = 0;
	int ret = sfs_ch_names(&c->u, V, &names, &n);

	if (ret < 0)
		return fail(c, ret, vpath, "listing");
	for (size_t i = 0; ret == 0 && i < n; i++) {
		struct sfs_ch_stack *vc = NULL;
		char *p = sfs_ch_join(vpath[0] ? vpath : "/", names[i]);

		if (!p) {
			ret = fail(c, -ENOMEM, vpath, "");
			break;
		}
		ret = sfs_ch_lookup(&c->u, V, names[i], true, &vc);
		if (ret == -ENOENT) {
			ret = 0;
		} else if (ret < 0) {
			ret = fail(c, ret, p, "looking up");
		} else if (vc->indexed && vc->l[0].b != 0) {
			struct indexed *nv = realloc(c->ix, (c->nix + 1) * sizeof(*nv));

			if (!nv) {
				ret = fail(c, -ENOMEM, p, "");
			} else {
				c->ix = nv;
				nv[c->nix].vpath = p;
				snprintf(nv[c->nix].name, sizeof(nv[c->nix].name), "%s", vc->index_name);
				/* FSID-INODE, hex (NOTES: work/ and index/) */
				nv[c->nix].lower_ino = vc->l[0].b == 1 && strlen(vc->index_name) > 9 ?
					(ino_t)strtoull(vc->index_name + 9, NULL, 16) : 0;
				c->nix++;
				p = NULL;
			}
		} else if (S_ISDIR(vc->top.st_mode)) {
			ret = plan_index(c, p, vc);
		}
		sfs_ch_stack_free(vc);
		free(p);
	}
	sfs_ch_names_free(names, n);
	return ret;
}

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
	if (read_header(rfd, &h) == 0)
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
		return fail(c, -ENOMEM, "/", "");
	for (size_t i = 0; i < c->nmv; i++) {
		struct moved *m = &c->mv[i];
		struct sfs_jnl_move *jm = &j->mv[j->nmv];
		const char *base;
		char *dir;
		struct stat st;
		int pfd, ret = 0;

		if (!is_staged_move(m))
			continue;
		dir = split_path(m->src, &base);
		pfd = dir ? open_path(c->u.b[1].root_fd, dir) : -ENOMEM;
		free(dir);
		if (pfd >= 0 && fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
			ret = -errno;
		else if (pfd >= 0 && !S_ISDIR(st.st_mode))
			ret = -ENOTDIR;
		if (pfd >= 0)
			close(pfd);
		if (pfd < 0 || ret < 0)
			return fail(c, pfd < 0 ? pfd : ret, m->src, "finding a lower directory to move");
		jm->ino = st.st_ino;
		jm->src = strdup(m->src);
		jm->dst = strdup(m->vpath);
		j->nmv++;
		if (!jm->src || !jm->dst)
			return fail(c, -ENOMEM, m->src, "");
	}
	if (j->nmv > SFS_JNL_MAX_MOVES)
		return fail(c, -E2BIG, "/", "planning (too many moved directories for the journal)");
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
		free(mk.rw);
		return fail(c, -ENOMEM, "/", "writing the journal");
	}
	ret = journal_ids(c, &mk);
	if (ret == 0)
		ret = journal_moves(c);
	if (ret == 0 && (ret = sfs_jmark_write(c->u.b[1].root_fd, &mk, &made)) < 0)
		fail(c, ret, c->into, "writing the commit marker in the lower branch's .stackfs");
	if (made)
		j->flags |= SFS_JNL_F_MADE_META;
	if (ret == 0 && (ret = sfs_jnl_write(c->u.b[0].root_fd, j)) < 0)
		fail(c, ret, c->rw, "writing the journal .stackfs/" SFS_META_COMMIT);
	c->jnl_written = ret == 0;
	free(mk.rw);
	return ret;
}

/* Moves every lower directory that a redirect moves into the staging
 * directory, deepest first, so that none is deleted or moved with its
 * parent before it reaches its place. The journal lists them all before
 * the first moves. */
static int stage_moves(struct commit *c)
{
	size_t k = 0;
	int ret = 0;

	if (c->nmv)
		qsort(c->mv, c->nmv, sizeof(c->mv[0]), moved_cmp);
	for (size_t i = 0; i < c->nmv; i++)
		for (size_t j = i + 1; c->mv[i].src && j < c->nmv; j++)
			if (c->mv[j].src && !strcmp(c->mv[i].src, c->mv[j].src))
				return fail(c, -EUCLEAN, c->mv[j].vpath,
					    "planning (two directories are moves of one lower directory)");
	snprintf(c->stage_name, sizeof(c->stage_name), STAGE_PREFIX "%d", (int)getpid());
	ret = write_journal(c);
	if (ret < 0 || !c->jnl.nmv)
		return ret;
	if (mkdirat(c->u.b[1].root_fd, c->stage_name, 0700) < 0)
		return fail(c, -errno, c->stage_name, "making the staging directory");
	c->stage_fd = openat(c->u.b[1].root_fd, c->stage_name,
			     O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (c->stage_fd < 0)
		return fail(c, -errno, c->stage_name, "opening the staging directory");
	for (size_t i = 0; ret == 0 && i < c->nmv; i++) {
		struct moved *m = &c->mv[i];
		const char *base;
		char *dir;
		int pfd;

		if (!is_staged_move(m))
			continue;
		ret = stopped(c, m->src);
		if (ret < 0)
			break;
		dir = split_path(m->src, &base);
		pfd = dir ? open_path(c->u.b[1].root_fd, dir) : -ENOMEM;
		free(dir);
		snprintf(m->staged, sizeof(m->staged), "%zu", k++);
		if (pfd < 0 || renameat(pfd, base, c->stage_fd, m->staged) < 0) {
			ret = fail(c, pfd < 0 ? pfd : -errno, m->src, "moving a lower directory aside");
			m->staged[0] = '\0';
		}
		if (pfd >= 0)
			close(pfd);
	}
	return ret;
}

/* After an error or a stop: the journal's recovery puts every moved
 * lower directory back (the union shows what it showed before; what was
 * copied into the lower branch stays, hidden by the rw branch). */
static int undo(struct commit *c, char *msg, size_t len)
{
	const char *done;
	int ret;

	if (!c->jnl_written)
		return 0;
	if (c->stage_fd >= 0) {
		close(c->stage_fd);
		c->stage_fd = -1;
	}
	ret = sfs_jnl_recover(c->u.b[0].root_fd, c->u.b[1].root_fd, &c->jnl, &done, msg, len);
	if (ret == 0)
		c->jnl_written = false;
	return ret;
}

/* ------------------------------------------------------------ in use */

/* Whether a path names the directory st. */
static bool same_dir(const char *path, const struct stat *st)
{
	struct stat s;

	return stat(path, &s) == 0 && s.st_dev == st->st_dev && s.st_ino == st->st_ino;
}

/* A running stackfsd whose branches include dir: by the command lines of
 * the mounts published under the runtime directory, and by the fds every
 * stackfsd holds (a branch added live, or given by a relative path).
 * Its pid, or 0. */
static pid_t daemon_using(const struct stat *dir)
{
	const char *base = sfs_runtime_base();
	struct dirent *e;
	pid_t found = 0;
	DIR *d = opendir(base);

	while (d && !found && (e = readdir(d))) {
		char p[PATH_MAX], buf[32], err[256];
		struct mbranch *v = NULL;
		size_t n = 0;
		ssize_t k;
		pid_t pid;
		int fd;

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s/pid", base, e->d_name);
		fd = open(p, O_RDONLY | O_CLOEXEC);
		k = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
		if (fd >= 0)
			close(fd);
		if (k <= 0)
			continue;
		buf[k] = '\0';
		pid = (pid_t)atoi(buf);
		if (pid <= 0 || (kill(pid, 0) < 0 && errno == ESRCH))
			continue;
		if (sfs_diff_daemon_branches(pid, &v, &n, err, sizeof(err)) < 0)
			continue;
		for (size_t i = 0; i < n && !found; i++)
			if (same_dir(v[i].path, dir))
				found = pid;
		sfs_diff_mbranches_free(v, n);
	}
	if (d)
		closedir(d);
	if (found)
		return found;
	d = opendir("/proc");
	while (d && !found && (e = readdir(d))) {
		char p[600], exe[PATH_MAX];
		const char *b;
		struct dirent *fe;
		struct stat st;
		DIR *fds;
		ssize_t n;

		if (e->d_name[0] < '1' || e->d_name[0] > '9' || atoi(e->d_name) == getpid())
			continue;
		snprintf(p, sizeof(p), "/proc/%s/exe", e->d_name);
		n = readlink(p, exe, sizeof(exe) - 1);
		if (n <= 0)
			continue;
		exe[n] = '\0';
		if (strstr(exe, " (deleted)"))
			*strstr(exe, " (deleted)") = '\0';
		b = strrchr(exe, '/');
		if (!b || strcmp(b + 1, "stackfsd"))
			continue;
		snprintf(p, sizeof(p), "/proc/%s/fd", e->d_name);
		fds = opendir(p);
		while (fds && (fe = readdir(fds))) {
			snprintf(p, sizeof(p), "/proc/%s/fd/%s", e->d_name, fe->d_name);
			if (fe->d_name[0] != '.' && stat(p, &st) == 0 && S_ISDIR(st.st_mode) &&
			    st.st_dev == dir->st_dev && st.st_ino == dir->st_ino) {
				found = (pid_t)atoi(e->d_name);
				break;
			}
		}
		if (fds)
			closedir(fds);
	}
	if (d)
		closedir(d);
	return found;
}

/* ------------------------------------------------------------ command */

static void print_json(const struct commit *c, const struct sfs_changes *ch, bool emptied,
		       int status, const char *early)
{
	printf("{\n  \"branch\": ");
	sfs_json_str(stdout, c->rw);
	printf(",\n  \"into\": ");
	sfs_json_str(stdout, c->into);
	printf(",\n  \"keep\": %s,\n  \"emptied\": %s,\n  \"added\": %u,\n  \"changed\": %u,\n"
	       "  \"deleted\": %u,\n  \"changes\": [", c->keep ? "true" : "false",
	       emptied ? "true" : "false", ch->added, ch->changed, ch->deleted);
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
	printf("%s],\n  \"error\": ", ch->n ? "\n  " : "");
	if (c->err) {
		char msg[PATH_MAX + 200];

		snprintf(msg, sizeof(msg), "%s: %s: %s", c->err_path ? c->err_path : "",
			 c->err_what ? c->err_what : "", strerror(-c->err));
		sfs_json_str(stdout, msg);
	} else if (early && early[0]) {
		sfs_json_str(stdout, early);
	} else {
		fputs("null", stdout);
	}
	printf(",\n  \"exit\": %d\n}\n", status);
}

static const struct option long_opts[] = {
	{ "into", required_argument, NULL, 'i' },
	{ "keep", no_argument, NULL, 'k' },
	{ "json", no_argument, NULL, 'j' },
	{ NULL, 0, NULL, 0 },
};

/* Refuses what would make a mess: exit code with a message, or 0. */
static int check_branches(struct commit *c, const struct stat *rs, const struct stat *ls,
			  char *err, size_t errlen)
{
	char *rr = realpath(c->rw, NULL), *lr = realpath(c->into, NULL);
	enum sfs_meta_state state;
	const char *names[2] = { c->rw, c->into };
	size_t l1, l2;
	int ret = 0;

	if (!rr || !lr) {
		snprintf(err, errlen, "%s: %s", rr ? c->into : c->rw, strerror(errno));
		ret = SFS_EXIT_FAIL;
		goto out;
	}
	l1 = strlen(rr);
	l2 = strlen(lr);
	if (rs->st_dev == ls->st_dev && rs->st_ino == ls->st_ino) {
		snprintf(err, errlen, "%s and %s are the same directory", c->rw, c->into);
		ret = SFS_EXIT_USAGE;
	} else if ((l1 < l2 && !strncmp(rr, lr, l1) && (lr[l1] == '/' || l1 == 1)) ||
		   (l2 < l1 && !strncmp(lr, rr, l2) && (rr[l2] == '/' || l2 == 1))) {
		snprintf(err, errlen, "%s and %s are nested in one another", c->rw, c->into);
		ret = SFS_EXIT_FAIL;
	}
	for (int i = 0; ret == 0 && i < 2; i++) {
		char msg[300];
		int fd = open(names[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		int r = fd < 0 ? -errno : sfs_meta_check(fd, &state, msg, sizeof(msg));
		uint32_t flags = 0;

		if (fd < 0)
			snprintf(msg, sizeof(msg), "%s", strerror(-r));
		/* what a crashed volatile mount left may be partial: folding it
		 * into the lower branch would make that permanent */
		if (r == 0 && sfs_meta_read_flags(fd, &flags) == 0 &&
		    (flags & SFS_META_F_VOLATILE)) {
			snprintf(msg, sizeof(msg), "a sync=volatile mount uses it or did not end "
				 "cleanly: what it wrote may be partial; once unmounted, mount it "
				 "with -o accept_unclean to keep it as it is");
			r = -EUCLEAN;
		}
		if (fd >= 0)
			close(fd);
		if (r == -EINPROGRESS)
			r = 0; /* an unfinished commit: resumed once the locks are held */
		if (r < 0) {
			snprintf(err, errlen, "%s: %s%s", names[i], msg,
				 r == -EPROTONOSUPPORT ? "" : " (see stackfs fsck)");
			ret = SFS_EXIT_FAIL;
		}
	}
out:
	free(rr);
	free(lr);
	return ret;
}

/* A staging directory without a journal (left by a stackfs before the
 * journal): it holds lower directories the rw branch's redirects look
 * for, so a new commit would not find them. */
static int check_leftovers(struct commit *c, char *err, size_t errlen)
{
	DIR *d = opendir(c->into);
	struct dirent *e;
	int ret = 0;

	while (d && !ret && (e = readdir(d))) {
		if (!strncmp(e->d_name, STAGE_PREFIX, strlen(STAGE_PREFIX))) {
			snprintf(err, errlen, "%s/%s: left by an interrupted commit without a journal: "
				 "it holds lower directories that were being moved (keep it; see "
				 "stackfs fsck %s)", c->into, e->d_name, c->into);
			ret = SFS_EXIT_FAIL;
		}
	}
	if (d)
		closedir(d);
	return ret;
}

/* A marker in LOWER without RW's journal: another rw branch's commit
 * (refused), or ours stopped between the marker and the journal (nothing
 * was changed) or after removing the journal (all was done): the marker
 * goes. */
static int resume_marker(struct commit *c, int rfd, int lfd, char *err, size_t errlen)
{
	struct sfs_jnl_mark mk;
	char msg[300];
	int ret = sfs_jmark_read(lfd, &mk, msg, sizeof(msg));

	if (ret == -ENOENT)
		return 0;
	if (ret < 0) {
		snprintf(err, errlen, "%s: %s (see stackfs fsck)", c->into, msg);
		return SFS_EXIT_FAIL;
	}
	if (!sfs_jnl_same_branch(rfd, mk.rw_fs_uuid, mk.rw_ino)) {
		snprintf(err, errlen, "%s has an unfinished commit from %s: run stackfs commit %s "
			 "--into %s again, or stackfs fsck --repair %s", c->into, mk.rw, mk.rw,
			 c->into, mk.rw);
		sfs_jmark_free(&mk);
		return SFS_EXIT_FAIL;
	}
	sfs_jmark_free(&mk);
	fprintf(stderr, "stackfs: commit: %s: the marker of a commit from %s without its "
		"journal (it stopped before changing anything, or after finishing); going on\n",
		c->into, c->rw);
	{
		struct sfs_journal none = { 0 };

		ret = sfs_jnl_finish(rfd, lfd, &none);
	}
	if (ret < 0) {
		snprintf(err, errlen, "%s/%s/%s: %s", c->into, SFS_METADIR_NAME,
			 SFS_META_COMMIT_FROM, strerror(-ret));
		return SFS_EXIT_FAIL;
	}
	return 0;
}

/* An unfinished commit of RW (its journal) is finished or undone before
 * anything new: said on stderr. */
static int resume(struct commit *c, char *err, size_t errlen)
{
	int rfd = open(c->rw, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int lfd = open(c->into, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct sfs_journal j;
	const char *done;
	char msg[512];
	int ret, status = 0;

	if (rfd < 0 || lfd < 0) {
		snprintf(err, errlen, "%s: %s", rfd < 0 ? c->rw : c->into, strerror(errno));
		status = SFS_EXIT_FAIL;
		goto out;
	}
	ret = sfs_jnl_read(rfd, &j, msg, sizeof(msg));
	if (ret == -ENOENT) {
		status = resume_marker(c, rfd, lfd, err, errlen);
		goto out;
	}
	if (ret < 0) {
		snprintf(err, errlen, "%s: %s (see stackfs fsck %s)", c->rw, msg, c->rw);
		status = SFS_EXIT_FAIL;
		goto out;
	}
	if (!sfs_jnl_same_branch(lfd, j.lower_fs_uuid, j.lower_ino)) {
		snprintf(err, errlen, "%s has an unfinished commit into %s: run stackfs commit %s "
			 "--into %s again, or stackfs fsck --repair %s", c->rw, j.lower, c->rw,
			 j.lower, c->rw);
		status = SFS_EXIT_FAIL;
		goto out_jnl;
	}
	fprintf(stderr, "stackfs: commit: %s: resuming an unfinished commit into %s (pid %u)\n",
		c->rw, c->into, j.pid);
	ret = sfs_jnl_recover(rfd, lfd, &j, &done, msg, sizeof(msg));
	if (ret < 0) {
		snprintf(err, errlen, "%s: the unfinished commit could not be recovered: %s; its "
			 "journal is kept: run stackfs commit again or stackfs fsck --repair %s",
			 c->rw, msg, c->rw);
		status = SFS_EXIT_FAIL;
		goto out_jnl;
	}
	fprintf(stderr, "stackfs: commit: the unfinished commit was %s\n", done);
out_jnl:
	sfs_jnl_free(&j);
out:
	if (rfd >= 0)
		close(rfd);
	if (lfd >= 0)
		close(lfd);
	return status;
}

/* The branches below the lower one, from the rw branch's last mount:
 * they must see the same through the lower branch afterwards. */
static int branches_below(struct commit *c, const struct stat *ls, char ***below,
			  size_t *nbelow, char *err, size_t errlen)
{
	char **v = NULL, msg[300];
	size_t n = 0;
	int fd = open(c->rw, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int ret = fd < 0 ? -errno : sfs_ch_lowers_below(fd, &v, &n, msg, sizeof(msg));

	if (fd >= 0)
		close(fd);
	*below = NULL;
	*nbelow = 0;
	if (ret == -ENOENT || ret == -ESRCH || (ret == 0 && n == 0)) {
		sfs_ch_names_free(v, n);
		return 0; /* unknown: the two branches alone */
	}
	if (ret < 0) {
		snprintf(err, errlen, "%s: %s", c->rw, fd < 0 ? strerror(-ret) : msg);
		return SFS_EXIT_FAIL;
	}
	if (!same_dir(v[0], ls)) {
		snprintf(err, errlen, "%s is not the branch just below %s in its last mount "
			 "(%s/%s/%s lists %s there)", c->into, c->rw, c->rw, SFS_METADIR_NAME,
			 SFS_META_LOWERS, v[0]);
		sfs_ch_names_free(v, n);
		return SFS_EXIT_FAIL;
	}
	free(v[0]);
	memmove(v, v + 1, (n - 1) * sizeof(*v));
	*below = v;
	*nbelow = n - 1;
	return 0;
}

static void commit_release(struct commit *c)
{
	for (size_t i = 0; i < c->nmv; i++) {
		free(c->mv[i].vpath);
		free(c->mv[i].src);
		sfs_ch_stack_free(c->mv[i].deep);
	}
	free(c->mv);
	for (size_t i = 0; i < c->caplinks; i++)
		free(c->links[i].path);
	for (size_t i = 0; i < c->nix; i++)
		free(c->ix[i].vpath);
	free(c->ix);
	free(c->links);
	if (c->stage_fd >= 0)
		close(c->stage_fd);
	free(c->err_path);
	sfs_ch_union_close(&c->u);
	sfs_jnl_free(&c->jnl);
}

/* Applies the rw branch to the lower one: 0 or -errno (c->err says
 * where). */
static int apply(struct commit *c)
{
	struct sfs_ch_stack *V = NULL;
	struct dctx root = { .vpath = "" };
	struct stat st;
	int ret = sfs_ch_root(&c->u, 0, &V), sfd;

	if (ret < 0)
		return fail(c, ret, "/", "opening the roots");
	ret = plan_dir(c, "", V);
	if (ret == 0 && c->u.nidx)
		ret = plan_index(c, "", V);
	if (c->nix)
		qsort(c->ix, c->nix, sizeof(c->ix[0]), ix_cmp);
	c->total += c->nix;
	if (ret == 0)
		ret = stage_moves(c);
	root.V = V;
	root.T = fcntl(c->u.b[1].root_fd, F_DUPFD_CLOEXEC, 0);
	if (ret == 0 && (root.T < 0 || fstat(V->l[0].fd, &st) < 0))
		ret = fail(c, -errno, "/", "opening the roots");
	if (ret == 0 && V->opaque) {
		/* the whole lower branch is replaced (but its .stackfs) */
		struct raw *rv = NULL;
		size_t rn = 0;

		ret = raw_list(root.T, true, &rv, &rn);
		for (size_t i = 0; ret == 0 && i < rn; i++) {
			char wh[300];

			if (rv[i].kind == RAW_ENTRY && !strcmp(rv[i].name, c->stage_name))
				continue;
			snprintf(wh, sizeof(wh), "%s%s", rv[i].kind == RAW_WH_AUFS ? SFS_WH_PREFIX : "",
				 rv[i].name);
			ret = remove_tree(root.T, wh, c->u.b[1].mnt_id);
		}
		raws_free(rv, rn);
		if (ret == 0 && c->deep)
			ret = sfs_wh_set_opaque(root.T, c->style);
		if (ret < 0)
			fail(c, ret, "/", "replacing the content of the lower branch");
	}
	if (ret == 0) {
		ret = drop_extra_xattrs(V->l[0].fd, root.T);
		if (ret == 0)
			ret = copy_meta(V->l[0].fd, "", &st, root.T, ".");
		if (ret < 0)
			fail(c, ret, "/", "copying the attributes of the root");
	}
	if (ret == 0)
		ret = commit_dir(c, &root);
	if (ret == 0 && c->stage_fd >= 0) {
		if (unlinkat(c->u.b[1].root_fd, c->stage_name, AT_REMOVEDIR) < 0)
			ret = fail(c, -errno, c->stage_name, "removing the staging directory");
		close(c->stage_fd);
		c->stage_fd = -1;
	}
	if (ret == 0)
		ret = finish_dir(c, &root, V->l[0].fd, "", &st, root.T, "");
	/* durable before the rw branch is emptied */
	sfd = ret == 0 ? openat(c->u.b[1].root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (ret == 0 && (sfd < 0 || syncfs(sfd) < 0))
		ret = fail(c, -errno, c->into, "syncfs");
	if (sfd >= 0)
		close(sfd);
	if (root.T >= 0)
		close(root.T);
	sfs_ch_stack_free(V);
	return ret;
}

/* Once LOWER is complete and synced: the journal says so (from then on
 * a recovery finishes instead of undoing), RW is emptied and synced,
 * then the marker and the journal go. */
static int finish_commit(struct commit *c, bool *emptied)
{
	char msg[PATH_MAX + 200];
	int ret, rfd = c->u.b[0].root_fd;

	c->jnl.phase = SFS_JNL_APPLIED;
	ret = sfs_jnl_write(rfd, &c->jnl);
	if (ret < 0) {
		c->jnl.phase = SFS_JNL_MOVING; /* still undone by the journal on disk */
		return fail(c, ret, c->rw, "writing the journal .stackfs/" SFS_META_COMMIT);
	}
	if (!c->keep) {
		ret = sfs_jnl_empty_rw(rfd, c->jnl.rw_times, msg, sizeof(msg));
		if (ret == 0) {
			int fd = openat(rfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

			if (fd < 0 || syncfs(fd) < 0)
				ret = -errno;
			if (fd >= 0)
				close(fd);
		}
		if (ret < 0)
			return fail(c, ret, c->rw, "emptying the rw branch");
		*emptied = true;
	}
	ret = sfs_jnl_finish(rfd, c->u.b[1].root_fd, &c->jnl);
	if (ret < 0)
		return fail(c, ret, c->rw, "removing the journal .stackfs/" SFS_META_COMMIT);
	c->jnl_written = false;
	return 0;
}

/* What a failed commit left, on stderr: never advice to delete anything
 * (what is left holds data); the journal is what to recover by. */
static void report_failure(struct commit *c)
{
	char msg[PATH_MAX + 200];
	int ret;

	fprintf(stderr, "stackfs: commit: %s: %s: %s\n", c->err_path ? c->err_path : "?",
		c->err_what ? c->err_what : "", strerror(-c->err));
	if (!c->jnl_written) {
		fprintf(stderr, "stackfs: commit: stopped before anything was changed\n");
		return;
	}
	if (c->jnl.phase == SFS_JNL_APPLIED) {
		fprintf(stderr, "stackfs: commit: %s holds the changes, but %s was not emptied "
			"completely: run stackfs commit %s --into %s again (or stackfs fsck --repair "
			"%s) to finish\n", c->into, c->rw, c->rw, c->into, c->rw);
		return;
	}
	ret = undo(c, msg, sizeof(msg));
	if (ret < 0) {
		fprintf(stderr, "stackfs: commit: undoing: %s\n", msg);
		fprintf(stderr, "stackfs: commit: stopped after %llu of %llu entries; the journal "
			"%s/%s/%s is kept: run stackfs commit %s --into %s again, or stackfs fsck "
			"--repair %s (do not remove anything by hand)\n",
			(unsigned long long)c->done, (unsigned long long)c->total, c->rw,
			SFS_METADIR_NAME, SFS_META_COMMIT, c->rw, c->into, c->rw);
		return;
	}
	fprintf(stderr, "stackfs: commit: stopped after %llu of %llu entries and undone: the "
		"union of %s over %s shows what it showed before (%s holds copies of some of "
		"%s's entries, hidden by it); %s was left as it was\n",
		(unsigned long long)c->done, (unsigned long long)c->total, c->rw, c->into,
		c->into, c->rw, c->rw);
}

/* An error before anything changed: on stderr, and kept for --json. */
static void efail(char *early, size_t len, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(early, len, fmt, ap);
	va_end(ap);
	n = strlen(early);
	if (n && early[n - 1] == '\n')
		early[n - 1] = '\0';
	fprintf(stderr, "stackfs: commit: %s\n", early);
}

static int run_commit(int argc, char **argv)
{
	struct commit c = { .stage_fd = -1, .style = SFS_WH_AUFS, .u.index_fd = -1 };
	struct sfs_changes ch = { 0 };
	char err[PATH_MAX + 300], **below = NULL;
	const char **paths = NULL;
	size_t nbelow = 0;
	struct stat rs, ls;
	char early[PATH_MAX + 300] = "";
	int opt, status = 0, lock_rw = -1, lock_lo = -1, ret, st1, st0;
	bool emptied = false;
	pid_t pid;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "i:kj", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'i':
			c.into = optarg;
			break;
		case 'k':
			c.keep = true;
			break;
		case 'j':
			c.json = true;
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
	if (!c.into)
		return sfs_cli_usage_error(&sfs_cmd_commit, "--into LOWERBRANCH is needed");
	c.rw = argv[optind];
	sfs_progress_init(&c.bar, 0);
	{
		struct sigaction sa = { .sa_handler = on_stop };

		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
	}

	if (stat(c.rw, &rs) < 0 || stat(c.into, &ls) < 0) {
		int e = errno;

		efail(early, sizeof(early), "%s: %s\n", stat(c.rw, &rs) ? c.rw : c.into,
			strerror(e));
		status = SFS_EXIT_FAIL;
		goto out;
	}
	if (!S_ISDIR(rs.st_mode) || !S_ISDIR(ls.st_mode)) {
		efail(early, sizeof(early), "%s: %s\n", S_ISDIR(rs.st_mode) ? c.into : c.rw,
			strerror(ENOTDIR));
		status = SFS_EXIT_FAIL;
		goto out;
	}
	status = check_branches(&c, &rs, &ls, err, sizeof(err));
	if (status == SFS_EXIT_USAGE)
		return sfs_cli_usage_error(&sfs_cmd_commit, "%s", err);
	if (status) {
		efail(early, sizeof(early), "%s\n", err);
		goto out;
	}
	/* in use: a mount holds the rw branch's lock; a mount that uses the
	 * lower branch read-only holds none: look at the running daemons */
	for (int i = 0; i < 2; i++) {
		const char *p = i ? c.into : c.rw;
		int fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC), lk;

		lk = fd < 0 ? -errno : sfs_meta_lock(fd, true);
		if (fd >= 0)
			close(fd);
		if (lk == -EBUSY) {
			efail(early, sizeof(early), "%s: branch is in use by a mounted stackfs "
				"(unmount it first)\n", p);
			status = SFS_EXIT_FAIL;
			goto out;
		}
		if (lk < 0 && lk != -ENOENT && lk != -ENOTDIR) {
			efail(early, sizeof(early), "%s/%s/%s: %s\n", p, SFS_METADIR_NAME,
				SFS_META_LOCK, strerror(-lk));
			status = SFS_EXIT_FAIL;
			goto out;
		}
		if (i)
			lock_lo = lk;
		else
			lock_rw = lk;
		pid = daemon_using(i ? &ls : &rs);
		if (pid > 0) {
			efail(early, sizeof(early), "%s: branch is in use by a mounted stackfs "
				"(stackfsd pid %d): unmount it first\n", p, (int)pid);
			status = SFS_EXIT_FAIL;
			goto out;
		}
	}
	status = resume(&c, err, sizeof(err));
	if (status == 0)
		status = check_leftovers(&c, err, sizeof(err));
	if (status) {
		efail(early, sizeof(early), "%s\n", err);
		goto out;
	}
	status = branches_below(&c, &ls, &below, &nbelow, err, sizeof(err));
	if (status) {
		efail(early, sizeof(early), "%s\n", err);
		goto out;
	}
	paths = calloc(nbelow + 2, sizeof(*paths));
	if (!paths) {
		efail(early, sizeof(early), "%s\n", strerror(ENOMEM));
		status = SFS_EXIT_FAIL;
		goto out;
	}
	paths[0] = c.rw;
	paths[1] = c.into;
	for (size_t i = 0; i < nbelow; i++)
		paths[i + 2] = below[i];
	if (sfs_ch_union_open(&c.u, paths, (unsigned)nbelow + 2, err, sizeof(err)) < 0) {
		efail(early, sizeof(early), "%s\n", err);
		status = SFS_EXIT_FAIL;
		goto out;
	}
	c.u.split = 2;
	c.deep = nbelow > 0;
	st1 = header_style(c.u.b[1].root_fd);
	st0 = header_style(c.u.b[0].root_fd);
	c.style = st1 >= 0 ? (enum sfs_whiteout_style)st1 :
		  st0 >= 0 ? (enum sfs_whiteout_style)st0 : SFS_WH_AUFS;

	/* what will change (also checks that everything can be read) */
	ret = sfs_changes_list(&c.u, NULL, &ch);
	if (ret < 0) {
		efail(early, sizeof(early), "%s: %s: nothing was changed\n", c.rw,
			ret == -EIO ? "some entries could not be read (see stackfs diff)"
				    : strerror(-ret));
		status = SFS_EXIT_FAIL;
		goto out;
	}
	ret = apply(&c);
	sfs_progress_erase(&c.bar);
	if (ret == 0)
		ret = finish_commit(&c, &emptied);
	if (ret < 0) {
		status = SFS_EXIT_FAIL;
		report_failure(&c);
	} else if (!c.json) {
		printf("%s committed into %s: %u added, %u changed, %u deleted; %s\n", c.rw, c.into,
		       ch.added, ch.changed, ch.deleted,
		       c.keep ? "the rw branch was kept (--keep)" : "the rw branch was emptied");
	}
out:
	sfs_progress_erase(&c.bar);
	if (c.json)
		print_json(&c, &ch, emptied, status, early);
	sfs_changes_free(&ch);
	commit_release(&c);
	sfs_ch_names_free(below, nbelow);
	free(paths);
	if (lock_rw >= 0)
		close(lock_rw);
	if (lock_lo >= 0)
		close(lock_lo);
	return status;
}

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
		"\n"
		"  --into DIR  the lower branch (required)\n"
		"  --keep      leave RWBRANCH as it is (else it is emptied, but .stackfs)\n"
		"  --json      print the result as one JSON object\n"
		"\n"
		"Refused while either branch is used by a mounted stackfs. A journal in\n"
		"RWBRANCH/.stackfs/commit makes it safe to interrupt: an error or SIGINT,\n"
		"SIGTERM, SIGHUP undoes it; a killed commit is finished or undone by the\n"
		"next `stackfs commit` of the same branches or by `stackfs fsck --repair`\n"
		"of either (until then neither branch mounts).\n"
		"Exit status: 0 success, 1 an error (what was done is reported), 2 usage.\n",
};
