/* The branch set: validating and opening the branches of a spec, the
 * refcounted immutable snapshot every request works on, and preparing the
 * metadata directory of each rw branch. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "stackfs/branch.h"

/* One line even when a path holds a newline: control chars become '?'. */
static void berr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	for (char *p = err; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

/* Opens name beneath dirfd without following any symlink, so a symlink
 * planted in a branch cannot send us out of it. No fallback to openat():
 * without openat2 that guarantee is gone. */
static int open_beneath(int dirfd, const char *name, int flags)
{
	struct open_how how = {
		.flags = (unsigned long long)flags | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, dirfd, name, &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
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

void sfs_branch_put(struct sfs_branch *b)
{
	if (!b || atomic_fetch_sub(&b->refs, 1) != 1)
		return;
	if (b->work_fd >= 0)
		close(b->work_fd);
	if (b->meta_fd >= 0)
		close(b->meta_fd);
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
 * 1-based for messages, which name the path as the user wrote it. */
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
	b->root_fd = b->meta_fd = b->work_fd = -1;

	b->path = realpath(spec->path, NULL);
	if (!b->path) {
		ret = -errno;
		if (ret == -ENOENT)
			berr(err, errlen, "branch %u (\"%s\"): no such directory", idx, spec->path);
		else
			berr(err, errlen, "branch %u (\"%s\"): %s", idx, spec->path, strerror(-ret));
		goto out_put;
	}
	b->root_fd = open(b->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (b->root_fd < 0) {
		ret = -errno;
		if (ret == -ENOTDIR)
			berr(err, errlen, "branch %u (\"%s\"): not a directory", idx, spec->path);
		else
			berr(err, errlen, "branch %u (\"%s\"): %s", idx, spec->path, strerror(-ret));
		goto out_put;
	}
	if (fstat(b->root_fd, &st) < 0) {
		ret = -errno;
		berr(err, errlen, "branch %u (\"%s\"): stat: %s", idx, spec->path, strerror(-ret));
		goto out_put;
	}
	b->dev = st.st_dev;
	b->ino = st.st_ino;
	/* as the caller: a branch the user cannot list would look empty */
	if (access(b->path, R_OK | X_OK) < 0) {
		ret = -errno;
		if (ret == -EACCES)
			berr(err, errlen, "branch %u (\"%s\"): not readable and searchable (permission denied)",
			     idx, spec->path);
		else
			berr(err, errlen, "branch %u (\"%s\"): %s", idx, spec->path, strerror(-ret));
		goto out_put;
	}
	if (b->mode == SFS_BRANCH_RW) {
		if (fstatvfs(b->root_fd, &vfs) < 0) {
			ret = -errno;
			berr(err, errlen, "branch %u (\"%s\"): statvfs: %s", idx, spec->path, strerror(-ret));
			goto out_put;
		}
		if (vfs.f_flag & ST_RDONLY) {
			ret = -EROFS;
			berr(err, errlen, "branch %u (\"%s\"): rw branch on a read-only filesystem (use =ro)",
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
			berr(err, errlen, "branch %u (\"%s\"): same directory as branch %u (\"%s\")",
			     i + 1, specs[i].path, j + 1, specs[j].path);
			return -EINVAL;
		}
		if (path_contains(o->path, b->path) || path_contains(b->path, o->path)) {
			berr(err, errlen, "branch %u (\"%s\"): %s branch %u (\"%s\") (nested branches)",
			     i + 1, specs[i].path,
			     path_contains(o->path, b->path) ? "inside" : "contains",
			     j + 1, specs[j].path);
			return -EINVAL;
		}
	}
	if (!mp)
		return 0;
	if ((mpst && mpst->st_dev == b->dev && mpst->st_ino == b->ino) ||
	    !strcmp(mp, b->path)) {
		berr(err, errlen, "branch %u (\"%s\"): is the mountpoint (would hang processes)",
		     i + 1, specs[i].path);
		return -EINVAL;
	}
	if (path_contains(b->path, mp)) {
		berr(err, errlen, "branch %u (\"%s\"): contains the mountpoint \"%s\" (would hang processes)",
		     i + 1, specs[i].path, mp);
		return -EINVAL;
	}
	if (path_contains(mp, b->path)) {
		berr(err, errlen, "branch %u (\"%s\"): inside the mountpoint \"%s\" (would hang processes)",
		     i + 1, specs[i].path, mp);
		return -EINVAL;
	}
	return 0;
}

int sfs_snap_open(const struct sfs_branch_spec *specs, size_t n,
		  const char *mountpoint, struct sfs_snap **out,
		  char *err, size_t errlen)
{
	struct sfs_snap *s = NULL;
	struct stat mpst, *mpstp = NULL;
	char *mp = NULL;
	unsigned nfs = 0;
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

		ret = branch_open(&specs[i], i + 1, &s->b[i], err, errlen);
		if (ret)
			goto out_free;
		s->n = i + 1;
		ret = branch_check_set(s, i, specs, mp, mpstp, err, errlen);
		if (ret)
			goto out_free;
		b = s->b[i];
		b->fsidx = nfs;
		for (unsigned j = 0; j < i; j++) {
			if (s->b[j]->dev == b->dev) {
				b->fsidx = s->b[j]->fsidx;
				break;
			}
		}
		if (b->fsidx == nfs)
			nfs++;
		if (s->top_rw < 0 && b->mode == SFS_BRANCH_RW)
			s->top_rw = (int)i;
	}
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

/* Removes everything beneath the directory dfd (an fd it takes over).
 * Leftovers of an interrupted copy-up: nothing here is followed, a
 * symlink is removed as a symlink. */
static int empty_dir(int dfd)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	int ret = 0;

	if (!d) {
		ret = -errno;
		close(dfd);
		return ret;
	}
	while ((errno = 0, de = readdir(d))) {
		const char *name = de->d_name;
		int cfd;

		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		if (de->d_type != DT_DIR && unlinkat(dirfd(d), name, 0) == 0)
			continue;
		/* a directory, or d_type unknown/stale: EISDIR says which */
		if (de->d_type != DT_DIR && errno != EISDIR) {
			ret = -errno;
			break;
		}
		cfd = open_beneath(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
		if (cfd < 0) {
			ret = cfd;
			break;
		}
		ret = empty_dir(cfd);
		if (ret)
			break;
		if (unlinkat(dirfd(d), name, AT_REMOVEDIR) < 0) {
			ret = -errno;
			break;
		}
	}
	if (!ret && errno)
		ret = -errno;
	closedir(d);
	return ret;
}

/* Makes and opens dirfd/name as a directory of ours: created 0700 if
 * missing, refused if it is a symlink or not a directory. */
static int meta_subdir(int dirfd, const char *name, const char *what,
		       unsigned idx, const char *path, char *err, size_t errlen)
{
	int fd;

	if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST) {
		fd = -errno;
		berr(err, errlen, "branch %u (\"%s\"): mkdir %s: %s", idx, path, what, strerror(-fd));
		return fd;
	}
	fd = open_beneath(dirfd, name, O_PATH | O_DIRECTORY);
	if (fd == -ELOOP)
		berr(err, errlen, "branch %u (\"%s\"): %s is a symlink, refusing it", idx, path, what);
	else if (fd == -ENOTDIR)
		berr(err, errlen, "branch %u (\"%s\"): %s is not a directory", idx, path, what);
	else if (fd < 0)
		berr(err, errlen, "branch %u (\"%s\"): open %s: %s", idx, path, what, strerror(-fd));
	return fd;
}

int sfs_snap_prepare_meta(struct sfs_snap *s, char *err, size_t errlen)
{
	const char *work = SFS_META_NAME "/" SFS_WORK_NAME;

	for (unsigned i = 0; i < s->n; i++) {
		struct sfs_branch *b = s->b[i];
		int fd, ret;

		if (b->mode != SFS_BRANCH_RW || b->work_fd >= 0)
			continue;
		if (b->meta_fd < 0) {
			fd = meta_subdir(b->root_fd, SFS_META_NAME, SFS_META_NAME,
					 i + 1, b->path, err, errlen);
			if (fd < 0)
				return fd;
			b->meta_fd = fd;
		}
		fd = meta_subdir(b->meta_fd, SFS_WORK_NAME, work, i + 1, b->path, err, errlen);
		if (fd < 0)
			return fd;
		b->work_fd = fd;
		fd = open_beneath(b->work_fd, ".", O_RDONLY | O_DIRECTORY);
		ret = fd < 0 ? fd : empty_dir(fd);
		if (ret) {
			berr(err, errlen, "branch %u (\"%s\"): emptying %s: %s",
			     i + 1, b->path, work, strerror(-ret));
			return ret;
		}
	}
	return 0;
}
