/* The branch seam (bio.h): traced, logged wrappers of every call that
 * reaches into a branch. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/fs.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/bio.h"

/* ---------------------------------------------------------------- state */

struct root {
	uint32_t id;
	char *path;
	size_t len;
};

static pthread_mutex_t roots_lock = PTHREAD_MUTEX_INITIALIZER;
static struct root *roots;
static size_t nroots;
static atomic_int trace = -1;      /* -1: not yet read from the environment */
static atomic_uint_least64_t bio_failures;

static void default_logger(int level, const char *line)
{
	(void)level;
	fprintf(stderr, "stackfs: %s\n", line);
}

static void (*logger)(int, const char *) = default_logger;

void sfs_do_set_logger(void (*log)(int level, const char *line))
{
	logger = log ? log : default_logger;
}

void sfs_do_set_trace(bool on)
{
	atomic_store(&trace, on);
}

bool sfs_do_tracing(void)
{
	int t = atomic_load(&trace);

	if (t < 0) {
		const char *e = getenv("STACKFS_TRACE");

		t = e && !strcmp(e, "1");
		atomic_store(&trace, t);
	}
	return t;
}

uint64_t sfs_do_failures(void)
{
	return atomic_load(&bio_failures);
}

int sfs_do_register(uint32_t id, const char *root)
{
	char *p = strdup(root);
	struct root *nv;
	size_t i;

	if (!p)
		return -ENOMEM;
	pthread_mutex_lock(&roots_lock);
	for (i = 0; i < nroots && roots[i].id != id; i++)
		;
	if (i == nroots) {
		nv = realloc(roots, (nroots + 1) * sizeof(*roots));
		if (!nv) {
			pthread_mutex_unlock(&roots_lock);
			free(p);
			return -ENOMEM;
		}
		roots = nv;
		nroots++;
	} else {
		free(roots[i].path);
	}
	roots[i] = (struct root){ id, p, strlen(p) };
	pthread_mutex_unlock(&roots_lock);
	return 0;
}

void sfs_do_unregister(uint32_t id)
{
	pthread_mutex_lock(&roots_lock);
	for (size_t i = 0; i < nroots; i++) {
		if (roots[i].id == id) {
			free(roots[i].path);
			roots[i] = roots[--nroots];
			break;
		}
	}
	pthread_mutex_unlock(&roots_lock);
}

/* ---------------------------------------------------------------- lines */

/* "b3 /a/b/NAME": the branch and path of dirfd/name, from the fd's
 * /proc/self/fd link and the registered roots (the longest that is a
 * prefix); the absolute path where no root matches. */
static void where(int dirfd, const char *name, char *buf, size_t len)
{
	char link[32], path[PATH_MAX] = "";
	const struct root *best = NULL;
	ssize_t n = -1;

	if (dirfd >= 0) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
		n = readlink(link, path, sizeof(path) - 1);
	}
	path[n > 0 ? n : 0] = '\0';
	pthread_mutex_lock(&roots_lock);
	for (size_t i = 0; i < nroots; i++) {
		const struct root *r = &roots[i];

		if (!strncmp(path, r->path, r->len) &&
		    (path[r->len] == '/' || !path[r->len]) && (!best || r->len > best->len))
			best = r;
	}
	if (best)
		snprintf(buf, len, "b%u %s%s%s", (unsigned)best->id,
			 path[best->len] ? path + best->len : "/",
			 name && name[0] && path[best->len] ? "/" : "", name ? name : "");
	else
		snprintf(buf, len, "%s%s%s", n > 0 ? path : "?",
			 name && name[0] ? "/" : "", name ? name : "");
	pthread_mutex_unlock(&roots_lock);
}

/* At most 10 failure lines a second; the next line says how many were
 * not written. */
static bool rate_ok(unsigned long *quiet)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static time_t second;
	static unsigned lines;
	static unsigned long dropped;
	time_t now = time(NULL);
	bool ok;

	pthread_mutex_lock(&lock);
	if (now != second) {
		second = now;
		lines = 0;
	}
	ok = lines < 10;
	if (ok) {
		lines++;
		*quiet = dropped;
		dropped = 0;
	} else {
		dropped++;
	}
	pthread_mutex_unlock(&lock);
	return ok;
}

static bool in_set(int e, const int *set)
{
	for (; set && *set; set++)
		if (*set == e)
			return true;
	return false;
}

long sfs_do_note(const char *op, int fd, const char *name, const char *what, long r,
		 bool expected)
{
	char at[PATH_MAX + 64], line[PATH_MAX + 256], more[64] = "";
	unsigned long quiet = 0;
	int saved = errno;
	bool tr = sfs_do_tracing();

	if (r < 0 && !expected)
		atomic_fetch_add(&bio_failures, 1);
	if (!tr && (r >= 0 || expected || !rate_ok(&quiet))) {
		errno = saved;
		return r;
	}
	where(fd, name, at, sizeof(at));
	if (quiet)
		snprintf(more, sizeof(more), " [%lu more not logged]", quiet);
	if (r < 0)
		snprintf(line, sizeof(line), "%s%s %s%s%s: %s (%s)%s", tr ? "trace: " : "", op, at,
			 what ? " " : "", what ? what : "", strerrorname_np((int)-r) ?
			 strerrorname_np((int)-r) : "?", strerror((int)-r), more);
	else
		snprintf(line, sizeof(line), "trace: %s %s%s%s = %ld", op, at,
			 what ? " " : "", what ? what : "", r);
	logger(r < 0 && !expected ? 4 : 6, line);
	errno = saved;
	return r;
}

/* Records a call: r is its result, -1 with errno on failure. */
static long done(const char *op, int fd, const char *name, const char *what, long r,
		 const int *expected)
{
	if (r < 0)
		r = -errno;
	return sfs_do_note(op, fd, name, what, r, r < 0 && in_set((int)-r, expected));
}

/* ---------------------------------------------------------------- calls */

/* Answers that are no failure: a probe finding nothing, an exclusive
 * create finding something, a refused symlink or mount point. */
static const int open_ok[] = { ENOENT, ENOTDIR, EEXIST, ELOOP, EXDEV, EISDIR, 0 };
static const int make_ok[] = { EEXIST, ENOENT, 0 };
static const int unlink_ok[] = { ENOENT, EISDIR, ENOTEMPTY, ENOTDIR, EEXIST, 0 };
static const int rename_ok[] = { ENOENT, EEXIST, ENOTEMPTY, EISDIR, ENOTDIR, 0 };
static const int stat_ok[] = { ENOENT, ENOTDIR, 0 };
static const int handle_ok[] = { EOPNOTSUPP, EOVERFLOW, ESTALE, ENOENT, 0 };

static bool bad_name(const char *name)
{
	return !name[0] || name[0] == '/';
}

/* Tries of an openat2 that answered EXDEV: see open_how. */
#define OPEN_XDEV_TRIES 4

/* EXDEV has two causes under RESOLVE_BENEATH: a mount point on the way,
 * which answers it every time, and an entry that another thread renamed
 * out of dirfd between its lookup and the end of the walk (the kernel's
 * last check that the result is beneath dirfd), which is gone when asked
 * again: the name is then resolved where it is now, or not found. Taken
 * for a mount point, such a race made a rename through the view fail
 * with EXDEV while nsstress moved entries in other threads (3,230 of 3
 * million opens of a name another thread moved back and forth answered
 * EXDEV on Linux 6.18, without stackfs). */
static int open_how(int dirfd, const char *name, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	int fd, tries = 0;

	do
		fd = (int)syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
	while (fd < 0 && errno == EXDEV && ++tries < OPEN_XDEV_TRIES);
	return fd;
}

int sfs_do_open(int dirfd, const char *name, int flags, mode_t mode)
{
	if (bad_name(name)) {
		errno = EINVAL;
		return -EINVAL;
	}
	return (int)done("open", dirfd, name, NULL, open_how(dirfd, name, flags, mode), open_ok);
}

DIR *sfs_do_opendir(int dirfd, const char *name)
{
	int fd = sfs_do_open(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0), err;
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d) {
		err = errno;
		close(fd);
		errno = err;
	}
	return d;
}

/* a filesystem without O_TMPFILE (a FUSE one such as GlusterFS's client,
 * NFS before 4.2...): every caller stages under a name instead, and the
 * mount said so once (stackfs/branches/branch_caps.c) */
static const int tmpfile_ok[] = { EOPNOTSUPP, EISDIR, 0 };

int sfs_do_tmpfile(int dirfd, int flags, mode_t mode)
{
	return (int)done("tmpfile", dirfd, "", NULL,
			 openat(dirfd, ".", flags | O_TMPFILE | O_CLOEXEC, mode), tmpfile_ok);
}

int sfs_do_reopen(int fd, int flags)
{
	char p[32];

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	/* the magic link names exactly the inode held: following it cannot
	 * leave the branch, and O_NOFOLLOW would refuse the link itself */
	return (int)done("reopen", fd, "", NULL,
			 open(p, (flags & ~(O_NOFOLLOW | O_CREAT | O_EXCL)) | O_CLOEXEC), NULL);
}

int sfs_do_reopen_dir(int fd, int flags)
{
	/* "." of the directory itself: no walk through /proc (the magic
	 * link costs about twice as much here), and "." names the same
	 * directory without crossing a mount point. It needs search
	 * permission, the link only read permission: a user's daemon that
	 * may not search the directory takes the link. */
	int r = openat(fd, ".", (flags & ~(O_NOFOLLOW | O_CREAT | O_EXCL)) | O_DIRECTORY |
				O_CLOEXEC);

	if (r < 0 && errno == EACCES)
		return sfs_do_reopen(fd, flags | O_DIRECTORY);
	return (int)done("reopen", fd, "", NULL, r, NULL);
}

int sfs_do_mkdirat(int dirfd, const char *name, mode_t mode)
{
	return (int)done("mkdir", dirfd, name, NULL, mkdirat(dirfd, name, mode), make_ok);
}

int sfs_do_mknodat(int dirfd, const char *name, mode_t mode, dev_t dev)
{
	return (int)done("mknod", dirfd, name, NULL, mknodat(dirfd, name, mode, dev), make_ok);
}

int sfs_do_symlinkat(const char *target, int dirfd, const char *name)
{
	return (int)done("symlink", dirfd, name, NULL, symlinkat(target, dirfd, name), make_ok);
}

int sfs_do_linkat(int olddirfd, const char *oldname, int newdirfd, const char *newname,
		  int flags)
{
	return (int)done("link", newdirfd, newname, NULL,
			 linkat(olddirfd, oldname, newdirfd, newname, flags), make_ok);
}

int sfs_do_link_fd(int fd, int dirfd, const char *name)
{
	char p[32];
	int r = linkat(fd, "", dirfd, name, AT_EMPTY_PATH);

	/* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH (ENOENT without: a user's
	 * daemon); the magic link does not, where /proc is mounted */
	if (r < 0 && errno == ENOENT) {
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		r = linkat(AT_FDCWD, p, dirfd, name, AT_SYMLINK_FOLLOW);
	}
	return (int)done("link", dirfd, name, NULL, r, make_ok);
}

int sfs_do_unlinkat(int dirfd, const char *name, int flags)
{
	return (int)done(flags & AT_REMOVEDIR ? "rmdir" : "unlink", dirfd, name, NULL,
			 unlinkat(dirfd, name, flags), unlink_ok);
}

/* RENAME_NOREPLACE where the filesystem has no renameat2 flags (a FUSE
 * filesystem without RENAME2, such as GlusterFS's client, answers
 * EINVAL): a non-directory is linked to the new name, which fails with
 * EEXIST if it is taken, as atomic as the flag, then unlinked from the
 * old (a crash between leaves both names: the old one is in a staging
 * directory that the next mount empties); a directory, which cannot be
 * linked, is renamed only after the new name is seen free, so one made
 * there in between is replaced if empty (rename(2)'s rule) and refused
 * with ENOTEMPTY otherwise. -1 with errno as renameat2 sets it. */
static int rename_noreplace_compat(int od, const char *on, int nd, const char *nn)
{
	struct stat st;
	int e;

	if (fstatat(od, on, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		if (linkat(od, on, nd, nn, 0) == 0) {
			if (unlinkat(od, on, 0) == 0)
				return 0;
			e = errno;
			unlinkat(nd, nn, 0);
			errno = e;
			return -1;
		}
		if (errno != EPERM && errno != EOPNOTSUPP && errno != EMLINK)
			return -1; /* EEXIST, above all */
	}
	if (fstatat(nd, nn, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		errno = EEXIST;
		return -1;
	}
	if (errno != ENOENT)
		return -1;
	return renameat(od, on, nd, nn);
}

int sfs_do_renameat2(int olddirfd, const char *oldname, int newdirfd, const char *newname,
		     unsigned flags)
{
	char to[PATH_MAX + 64], what[PATH_MAX + 70];
	int r = renameat2(olddirfd, oldname, newdirfd, newname, flags);
	int saved = errno;

	/* a filesystem without the flags: what NOREPLACE means can be kept
	 * (RENAME_EXCHANGE and RENAME_WHITEOUT cannot: their callers take
	 * another way on such a branch, branches/branch_caps.c) */
	if (r < 0 && saved == EINVAL && flags == RENAME_NOREPLACE) {
		r = rename_noreplace_compat(olddirfd, oldname, newdirfd, newname);
		saved = errno;
	}

	where(newdirfd, newname, to, sizeof(to));
	snprintf(what, sizeof(what), "-> %s", to);
	errno = saved;
	return (int)done("rename", olddirfd, oldname, what, r, rename_ok);
}

/* What a filesystem answers to renameat2 flags (a probe: no emulation,
 * and a refusal is no failure to log). */
static const int rename_probe_ok[] = { EINVAL, EPERM, EOPNOTSUPP, ENOSYS, 0 };

int sfs_do_rename_probe(int dirfd, const char *from, const char *to, unsigned flags)
{
	return (int)done("rename probe", dirfd, from, to,
			 renameat2(dirfd, from, dirfd, to, flags), rename_probe_ok);
}

int sfs_do_stat(int dirfd, const char *name, struct stat *st)
{
	int fd = sfs_do_open(dirfd, name, O_PATH, 0), r;

	if (fd < 0)
		return fd;
	r = fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
	r = (int)done("stat", dirfd, name, NULL, r, stat_ok);
	close(fd);
	return r;
}

/* Whether a call that failed with errno is asked again after EBADFD,
 * its tries-th time: at once, then after 1, 4, 16 and 64 ms (under load
 * three immediate tries all got it). errno is kept. */
static bool ebadfd_wait(int tries)
{
	struct timespec ts = { 0, 0 };

	if (errno != EBADFD || tries >= 5)
		return false;
	ts.tv_nsec = tries ? (1L << (2 * (tries - 1))) * 1000000L : 0;
	if (ts.tv_nsec)
		nanosleep(&ts, NULL);
	errno = EBADFD;
	return true;
}

int sfs_do_fstat(int fd, struct stat *st)
{
	int r = fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW), tries;

	/* GlusterFS's client answers EBADFD now and then to the fstat of an
	 * O_PATH fd of a file just linked in (a copy-up's): asked again, it
	 * answers (docs/distributed.md "What a branch's filesystem lacks") */
	for (tries = 0; r < 0 && ebadfd_wait(tries); tries++)
		r = fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
	return (int)done("stat", fd, "", NULL, r, NULL);
}

int sfs_do_fstatfs(int fd, struct statfs *sf)
{
	int r = fstatfs(fd, sf), tries;

	/* the same transient EBADFD as fstat's, above */
	for (tries = 0; r < 0 && ebadfd_wait(tries); tries++)
		r = fstatfs(fd, sf);
	return (int)done("statfs", fd, "", NULL, r, NULL);
}

int sfs_do_fchownat(int dirfd, const char *name, uid_t uid, gid_t gid, int flags)
{
	char what[48];

	snprintf(what, sizeof(what), "%d:%d", (int)uid, (int)gid);
	return (int)done("chown", dirfd, name, what, fchownat(dirfd, name, uid, gid, flags), NULL);
}

int sfs_do_fchmod(int fd, mode_t mode)
{
	char p[32], what[16];

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	snprintf(what, sizeof(what), "%04o", (unsigned)mode);
	return (int)done("chmod", fd, "", what, chmod(p, mode), NULL);
}

int sfs_do_truncate(int fd, off_t size)
{
	char p[32], what[32];
	int r = ftruncate(fd, size);

	if (r < 0 && errno == EBADF) { /* an O_PATH fd */
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		r = truncate(p, size);
	}
	snprintf(what, sizeof(what), "%lld", (long long)size);
	return (int)done("truncate", fd, "", what, r, NULL);
}

static const int clone_ok[] = { EOPNOTSUPP, EXDEV, EINVAL, ENOTTY, EBADF, 0 };
static const int range_ok[] = { EXDEV, ENOSYS, EOPNOTSUPP, EINVAL, 0 };

int sfs_do_clone(int out, int in)
{
	return (int)done("clone", out, "", NULL, ioctl(out, FICLONE, in), clone_ok);
}

ssize_t sfs_do_copy_range(int in, off_t *off_in, int out, off_t *off_out, size_t len)
{
	char what[64];

	snprintf(what, sizeof(what), "%lld+%zu", (long long)*off_out, len);
	return done("copy_range", out, "", what,
		    copy_file_range(in, off_in, out, off_out, len, 0), range_ok);
}

ssize_t sfs_do_pwrite(int fd, const void *buf, size_t len, off_t off)
{
	char what[64];

	snprintf(what, sizeof(what), "%lld+%zu", (long long)off, len);
	return done("pwrite", fd, "", what, pwrite(fd, buf, len, off), NULL);
}

int sfs_do_fallocate(int fd, int mode, off_t off, off_t len)
{
	char what[64];

	snprintf(what, sizeof(what), "%#x %lld+%lld", mode, (long long)off, (long long)len);
	return (int)done("fallocate", fd, "", what, fallocate(fd, mode, off, len), NULL);
}

int sfs_do_utimensat(int dirfd, const char *name, const struct timespec tv[2], int flags)
{
	/* glibc's utimensat refuses a NULL name: futimens is that call */
	int r = name ? utimensat(dirfd, name, tv, flags) : futimens(dirfd, tv);

	return (int)done("utimens", dirfd, name, NULL, r, NULL);
}

ssize_t sfs_do_readlinkat(int dirfd, const char *name, char *buf, size_t len)
{
	return done("readlink", dirfd, name, NULL, readlinkat(dirfd, name, buf, len), NULL);
}

int sfs_do_statx_attrs(int fd, uint64_t *attrs)
{
	struct statx x;
	int r = statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, 0, &x);

	*attrs = r == 0 ? x.stx_attributes & x.stx_attributes_mask : 0;
	return (int)done("statx", fd, "", NULL, r, NULL);
}

static void stat_of_statx(const struct statx *x, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_dev = makedev(x->stx_dev_major, x->stx_dev_minor);
	st->st_ino = x->stx_ino;
	st->st_mode = x->stx_mode;
	st->st_nlink = x->stx_nlink;
	st->st_uid = x->stx_uid;
	st->st_gid = x->stx_gid;
	st->st_rdev = makedev(x->stx_rdev_major, x->stx_rdev_minor);
	st->st_size = (off_t)x->stx_size;
	st->st_blksize = (blksize_t)x->stx_blksize;
	st->st_blocks = (blkcnt_t)x->stx_blocks;
	st->st_atim = (struct timespec){ x->stx_atime.tv_sec, x->stx_atime.tv_nsec };
	st->st_mtim = (struct timespec){ x->stx_mtime.tv_sec, x->stx_mtime.tv_nsec };
	st->st_ctim = (struct timespec){ x->stx_ctime.tv_sec, x->stx_ctime.tv_nsec };
}

int sfs_do_statx(int fd, struct stat *st, uint64_t *mnt)
{
	struct statx x;
	int r = statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW,
		      STATX_BASIC_STATS | STATX_MNT_ID, &x);

	if (r == 0 && st)
		stat_of_statx(&x, st);
	if (r == 0 && mnt)
		*mnt = (x.stx_mask & STATX_MNT_ID) ? x.stx_mnt_id : 0;
	return (int)done("statx", fd, "", NULL, r, NULL);
}

/* One component: no "", ".", "..", nor a slash (statx would walk it). */
static bool one_component(const char *name)
{
	return name[0] && strcmp(name, ".") && strcmp(name, "..") && !strchr(name, '/');
}

int sfs_do_statx_at(int dirfd, const char *name, struct stat *st)
{
	struct statx x;
	int r;

	if (!one_component(name)) {
		errno = EINVAL;
		return -EINVAL;
	}
	/* the walk steps onto a mount point's root (only openat2 can refuse
	 * to): AT_STATX_DONT_SYNC makes its filesystem answer from its cache,
	 * so a hung server mounted there is asked nothing (FUSE, NFS; the
	 * branch's own ext4 or XFS is always in sync) */
	r = statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC,
		  STATX_BASIC_STATS, &x);
	/* a mount point's root is another filesystem's inode: refused as
	 * sfs_do_open refuses it (and where the kernel cannot tell, too) */
	if (r == 0 && (!(x.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) ||
		       (x.stx_attributes & STATX_ATTR_MOUNT_ROOT))) {
		errno = EXDEV;
		r = -1;
	}
	if (r == 0)
		stat_of_statx(&x, st);
	return (int)done("statx", dirfd, name, NULL, r, open_ok);
}

#ifndef SYS_listxattrat
#define SYS_listxattrat 465
#endif

/* No list, the filesystem keeping none, a buffer too small, no such
 * call, or the name gone since its open: answers the caller handles. */
static const int listat_ok[] = { ENOTSUP, ERANGE, ENOSYS, ENOENT, 0 };

ssize_t sfs_do_listxattrat(int dirfd, const char *name, char *list, size_t size)
{
	if (!one_component(name)) {
		errno = EINVAL;
		return -EINVAL;
	}
	return done("listxattr", dirfd, name, NULL,
		    syscall(SYS_listxattrat, dirfd, name, AT_SYMLINK_NOFOLLOW, list, size),
		    listat_ok);
}

int sfs_do_name_to_handle(int dirfd, const char *name, void *fh, int *mount_id, int flags)
{
	return (int)done("name_to_handle", dirfd, name, NULL,
			 name_to_handle_at(dirfd, name, fh, mount_id, flags), handle_ok);
}

int sfs_do_open_by_handle(int mount_fd, void *fh, int flags)
{
	return (int)done("open_by_handle", mount_fd, "", NULL,
			 open_by_handle_at(mount_fd, fh, flags), handle_ok);
}
