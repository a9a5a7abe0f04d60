/* nsstress: several processes change one small name space at once, then
 * (a separate run) the tree is checked for consistency.
 *
 *   nsstress [-p PROCS] [-t SECS] [-n OPS] [-S SEED] [-w WIDTH] [-D DEPTH]
 *            [-H SECS] [-x] [-v] ROOT
 *       The run: PROCS processes (default 4) do random operations for SECS
 *       seconds (default 5) or OPS operations each (-n; the first reached
 *       ends a process), on paths of 1..DEPTH (default 3) components, each
 *       one of WIDTH (default 8) names n0..n7, under ROOT: create, write
 *       (append, truncate, at an offset), read, truncate, chmod, rename
 *       (flags 0, RENAME_NOREPLACE, RENAME_EXCHANGE; files and directories,
 *       across directories, into themselves), link, unlink, mkdir, rmdir,
 *       setxattr/removexattr (user.*), lstat, readdir, and "held": a
 *       process keeps up to 4 entries open (O_RDONLY, files and
 *       directories) across the others' removals and renames, and changes
 *       them through the fd (fchmod, fsetxattr, fstat), as a process with
 *       an open file or a cwd does; a change of a removed entry must work
 *       as on an unlinked file. The errors the
 *       operation can meet when another process changed the name space
 *       (ENOENT, EEXIST, ENOTEMPTY, EISDIR, ENOTDIR, ENODATA, EPERM for a
 *       link of a directory, EINVAL for a directory moved into itself)
 *       are counted as tolerated; every other error (EIO, EXDEV, ESTALE,
 *       EBADF, ENOMEM, ENOSPC...) and a name listed twice by one readdir is
 *       a failure, printed as one line naming the operation, the paths and
 *       the errno. A process still busy SECS + -H seconds (default 60)
 *       after the start is a hang: reported with the operation it is in,
 *       then all are killed. -x: no xattr operations. -v: every operation.
 *       -W OP=N[,OP=N...]: the weight of operations (by the names the
 *       counts show; 0 leaves one out), to aim a run at a suspect.
 *       Prints the counts per operation and errno, then
 *       "nsstress: N ops, seed S, ok" (exit 0) or "..., F FAILURES" (1).
 *
 *   nsstress -I [-S SEED] [-w WIDTH] [-D DEPTH] [-f PERCENT] ROOT
 *       Populates ROOT (directly, not through a union) with a random tree
 *       of the same name space: directories, files of records (below),
 *       user.* xattrs, and hard links; -f is the chance (default 70) that
 *       a name exists.
 *
 *   nsstress -C [-m] [-V] ROOT
 *       Checks the tree under ROOT: every directory is listed twice
 *       (getdents64 with a large and with a 128-byte buffer) and no name
 *       appears twice in either listing, both list the same names; every
 *       entry can be lstat'ed, d_type and d_ino agree with lstat; no
 *       `.wh.*` name and no `.stackfs` at the root is visible; every file
 *       can be read whole, its length is st_size and it is made of valid
 *       records or zeros (-V: contents not checked); user.* xattrs can be
 *       read; names that share an st_ino are the same file (same type and
 *       content) and no more than its st_nlink. -m prints a manifest, one
 *       line per entry in a fixed order: path|type|mode|size|ino|content
 *       hash|xattrs. Exit 0 clean, 1 problems (each printed).
 *
 * File contents are 64-byte records: "NSR1", the writer's pid (u32), a
 * sequence number (u64), the path written (44 bytes, zero-padded), an
 * FNV-1a of bytes 0..59 (u32). Writes and truncates keep sizes a multiple
 * of 64, so a torn or misplaced write shows as a bad record.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define REC 64
#define MAXERR 140
#define MAXFAILLINES 30

enum {
	OP_CREATE, OP_WRITE, OP_READ, OP_TRUNCATE, OP_CHMOD,
	OP_RENAME, OP_RENAME_NOREPLACE, OP_RENAME_EXCHANGE, OP_LINK,
	OP_UNLINK, OP_MKDIR, OP_RMDIR, OP_SETXATTR, OP_REMOVEXATTR,
	OP_STAT, OP_READDIR, OP_RMTREE, OP_HELD, OP_NR
};

static const char *op_names[OP_NR] = {
	"create", "write", "read", "truncate", "chmod",
	"rename", "rename_noreplace", "rename_exchange", "link",
	"unlink", "mkdir", "rmdir", "setxattr", "removexattr",
	"lstat", "readdir", "rm_tree", "held",
};

static unsigned weights[OP_NR] = {
	[OP_CREATE] = 10, [OP_WRITE] = 8, [OP_READ] = 6, [OP_TRUNCATE] = 3,
	[OP_CHMOD] = 3, [OP_RENAME] = 14, [OP_RENAME_NOREPLACE] = 4,
	[OP_RENAME_EXCHANGE] = 4, [OP_LINK] = 6, [OP_UNLINK] = 10,
	[OP_MKDIR] = 8, [OP_RMDIR] = 8, [OP_SETXATTR] = 5,
	[OP_REMOVEXATTR] = 3, [OP_STAT] = 4, [OP_READDIR] = 4, [OP_RMTREE] = 1,
	[OP_HELD] = 4,
};

#define E(x) (1ull << (x))
/* the errors another process's changes explain, per operation */
static const uint64_t tolerated[OP_NR] = {
	[OP_CREATE] = E(ENOENT) | E(ENOTDIR) | E(EEXIST) | E(EISDIR),
	[OP_WRITE] = E(ENOENT) | E(ENOTDIR) | E(EISDIR),
	[OP_READ] = E(ENOENT) | E(ENOTDIR) | E(EISDIR),
	[OP_TRUNCATE] = E(ENOENT) | E(ENOTDIR) | E(EISDIR),
	[OP_CHMOD] = E(ENOENT) | E(ENOTDIR),
	[OP_RENAME] = E(ENOENT) | E(ENOTDIR) | E(EISDIR) | E(EEXIST) | E(ENOTEMPTY) | E(EINVAL),
	[OP_RENAME_NOREPLACE] = E(ENOENT) | E(ENOTDIR) | E(EISDIR) | E(EEXIST) | E(ENOTEMPTY) | E(EINVAL),
	[OP_RENAME_EXCHANGE] = E(ENOENT) | E(ENOTDIR) | E(EISDIR) | E(EEXIST) | E(ENOTEMPTY) | E(EINVAL),
	[OP_LINK] = E(ENOENT) | E(ENOTDIR) | E(EEXIST) | E(EPERM),
	[OP_UNLINK] = E(ENOENT) | E(ENOTDIR) | E(EISDIR),
	[OP_MKDIR] = E(ENOENT) | E(ENOTDIR) | E(EEXIST),
	[OP_RMDIR] = E(ENOENT) | E(ENOTDIR) | E(ENOTEMPTY),
	[OP_SETXATTR] = E(ENOENT) | E(ENOTDIR) | E(EEXIST) | E(ENODATA),
	[OP_REMOVEXATTR] = E(ENOENT) | E(ENOTDIR) | E(ENODATA),
	[OP_STAT] = E(ENOENT) | E(ENOTDIR),
	[OP_READDIR] = E(ENOENT) | E(ENOTDIR),
	[OP_RMTREE] = E(ENOENT) | E(ENOTDIR) | E(EISDIR) | E(ENOTEMPTY),
	[OP_HELD] = E(ENOENT) | E(ENOTDIR), /* only the open may meet these */
};

/* a failure that is not an errno: a name listed twice */
#define ERR_DUP 0

struct proc_shared {
	uint64_t n[OP_NR][MAXERR + 1];  /* [op][0]: ok; [op][errno] */
	uint64_t fail[OP_NR];
	uint64_t dups;
	volatile int cur_op;            /* -1: finished */
	char cur_path[160];
	volatile uint64_t ops;
};

/* options */
static unsigned nproc = 4, width = 8, depth = 3, fill_pct = 70;
static double secs = 5;
static uint64_t max_ops, seed;
static unsigned hang_secs = 60;
static int no_xattr, verbose, opt_manifest, no_validate;
static int timed = 1;   /* -t given, or no -n */

static uint64_t rng;
static struct proc_shared *me;
static unsigned my_index;
static uint64_t my_seq;
static unsigned faillines;

/* ------------------------------------------------------------ helpers */

static uint64_t next64(void)
{
	uint64_t z = (rng += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static unsigned rnd(unsigned n)
{
	return n ? (unsigned)(next64() % n) : 0;
}

static uint32_t fnv32(const void *p, size_t len)
{
	const unsigned char *c = p;
	uint32_t h = 2166136261u;

	while (len--)
		h = (h ^ *c++) * 16777619u;
	return h;
}

static uint64_t fnv64(uint64_t h, const void *p, size_t len)
{
	const unsigned char *c = p;

	while (len--)
		h = (h ^ *c++) * 1099511628211ull;
	return h;
}

static const char *ename(int e)
{
	const char *n = e ? strerrorname_np(e) : "OK";

	return n ? n : "E?";
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned depth_of(const char *path)
{
	unsigned d = 1;

	while ((path = strchr(path, '/')))
		path++, d++;
	return d;
}

/* a path of exactly d components */
static void path_of_depth(char *buf, size_t len, unsigned d)
{
	unsigned i;
	size_t n = 0;

	for (i = 0; i < d; i++)
		n += (size_t)snprintf(buf + n, len - n, "%sn%u", i ? "/" : "", rnd(width));
}

/* a random path of 1..depth components, shallow ones more often */
static void rand_path(char *buf, size_t len, unsigned maxd)
{
	unsigned d = 1, i;
	size_t n = 0;

	while (d < maxd && rnd(100) < 55)
		d++;
	for (i = 0; i < d; i++)
		n += (size_t)snprintf(buf + n, len - n, "%sn%u", i ? "/" : "", rnd(width));
}

/* a sibling of path: same parent, a random last name */
static void sibling(char *buf, size_t len, const char *path)
{
	const char *s = strrchr(path, '/');
	int pl = s ? (int)(s - path) : 0;

	snprintf(buf, len, "%.*s%sn%u", pl, path, s ? "/" : "", rnd(width));
}

/* a path below path (to move a directory into itself) */
static void below(char *buf, size_t len, const char *path)
{
	snprintf(buf, len, "%.80s/n%u", path, rnd(width));
}

static void make_record(unsigned char *r, const char *path)
{
	uint32_t pid = (uint32_t)getpid(), h;
	uint64_t seq = ++my_seq;

	memset(r, 0, REC);
	memcpy(r, "NSR1", 4);
	memcpy(r + 4, &pid, 4);
	memcpy(r + 8, &seq, 8);
	strncpy((char *)r + 16, path, 44);
	h = fnv32(r, 60);
	memcpy(r + 60, &h, 4);
}

/* 0: a valid record or all zero */
static int bad_record(const unsigned char *r)
{
	static const unsigned char zero[REC];
	uint32_t h;

	if (!memcmp(r, zero, REC))
		return 0;
	memcpy(&h, r + 60, 4);
	return memcmp(r, "NSR1", 4) || h != fnv32(r, 60);
}

static ssize_t write_records(int fd, const char *path, unsigned nrec, off_t off, int use_pwrite)
{
	unsigned char buf[8 * REC];
	unsigned i;

	if (nrec > 8)
		nrec = 8;
	for (i = 0; i < nrec; i++)
		make_record(buf + i * REC, path);
	return use_pwrite ? pwrite(fd, buf, nrec * REC, off) : write(fd, buf, nrec * REC);
}

/* ------------------------------------------------------------ the run */

static void report(int op, int err, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (err == ERR_DUP || err > 63 || !(tolerated[op] & E(err))) {
		me->fail[op]++;
		if (err == ERR_DUP)
			me->dups++;
		else if (err <= MAXERR)
			me->n[op][err]++;
		if (faillines++ < MAXFAILLINES)
			fprintf(stderr, "nsstress[%u pid %d]: FAIL %s %s: %s%s%s\n", my_index, (int)getpid(),
				op_names[op], msg, err == ERR_DUP ? "a name listed twice" : ename(err),
				err == ERR_DUP ? "" : " - ", err == ERR_DUP ? "" : strerror(err));
		else if (faillines == MAXFAILLINES + 1)
			fprintf(stderr, "nsstress[%u]: more failures, only counted\n", my_index);
		return;
	}
	me->n[op][err]++;
	if (verbose)
		printf("[%u] %s %s: %s\n", my_index, op_names[op], msg, ename(err));
}

static void done(int op, int ret, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	int err = ret < 0 ? errno : 0;

	if (err == 0) {
		me->n[op][0]++;
		if (verbose) {
			va_start(ap, fmt);
			vsnprintf(msg, sizeof(msg), fmt, ap);
			va_end(ap);
			printf("[%u] %s %s: OK\n", my_index, op_names[op], msg);
		}
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	report(op, err, "%s", msg);
}

static int do_readdir_check(const char *path, int *dup)
{
	char buf[4096];
	char (*names)[256] = NULL;
	size_t nn = 0, cap = 0, i;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret = 0;
	long n;

	*dup = 0;
	if (fd < 0)
		return -1;
	for (;;) {
		long pos = 0;

		/* a small buffer: many calls, each resuming at an offset */
		n = syscall(SYS_getdents64, fd, buf, 512);
		if (n < 0) {
			ret = -1;
			break;
		}
		if (n == 0)
			break;
		while (pos < n) {
			struct dirent64 *d = (struct dirent64 *)(buf + pos);

			pos += d->d_reclen;
			if (nn == cap) {
				cap = cap ? cap * 2 : 64;
				names = realloc(names, cap * sizeof(*names));
				if (!names) {
					errno = ENOMEM;
					close(fd);
					return -1;
				}
			}
			snprintf(names[nn++], 256, "%s", d->d_name);
		}
	}
	for (i = 0; i < nn && !*dup; i++)
		for (size_t j = i + 1; j < nn; j++)
			if (!strcmp(names[i], names[j])) {
				*dup = 1;
				fprintf(stderr, "nsstress[%u]: readdir of %s listed \"%s\" twice\n", my_index,
					path, names[i]);
				break;
			}
	free(names);
	if (ret < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	close(fd);
	return 0;
}

/* The entries this process holds open (OP_HELD). */
#define HELD_MAX 4
static int held_fd[HELD_MAX];
static char held_path[HELD_MAX][96];
static unsigned held_n;

/* One step of OP_HELD: opens one more entry while the pool has room
 * (and now and then closes one), else changes or stats one through its
 * fd. What the fd holds may have been removed or renamed since: the
 * change must still work, on it. */
static void held_op(const char *a)
{
	static const unsigned modes[] = { 0755, 0775, 0700, 0750 };
	unsigned i, r = rnd(8);
	struct stat st;
	char val[64];
	int fd;

	if (held_n < HELD_MAX && r < 3) {
		fd = open(a, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (fd >= 0) {
			held_fd[held_n] = fd;
			snprintf(held_path[held_n++], sizeof(held_path[0]), "%s", a);
		}
		done(OP_HELD, fd < 0 ? -1 : 0, "open %s", a);
		return;
	}
	if (held_n == 0)
		return;
	i = rnd(held_n);
	fd = held_fd[i];
	if (r == 3) {
		done(OP_HELD, close(fd), "close (%s)", held_path[i]);
		held_fd[i] = held_fd[--held_n];
		memcpy(held_path[i], held_path[held_n], sizeof(held_path[0]));
	} else if (r < 6) {
		unsigned m = modes[rnd(4)];

		done(OP_HELD, fchmod(fd, m), "fchmod %o (opened as %s)", m, held_path[i]);
	} else if (r == 6 && !no_xattr) {
		snprintf(val, sizeof(val), "held %u", rnd(1000));
		done(OP_HELD, fsetxattr(fd, "user.h", val, strlen(val), 0),
		     "fsetxattr user.h (opened as %s)", held_path[i]);
	} else {
		done(OP_HELD, fstat(fd, &st), "fstat (opened as %s)", held_path[i]);
	}
}

/* rm -rf: -1 with errno at the first error (ENOENT of an entry that
 * another process removed meanwhile is not one) */
static int rm_tree(int dfd, const char *name)
{
	struct stat st;
	int fd, ret = 0;
	DIR *d;
	struct dirent *de;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0);
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				ret = -1;
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (rm_tree(fd, de->d_name) < 0 && errno != ENOENT) {
			ret = -1;
			break;
		}
	}
	if (ret < 0) {
		int e = errno;

		closedir(d);
		errno = e;
		return -1;
	}
	closedir(d);
	return unlinkat(dfd, name, AT_REMOVEDIR);
}

static void one_op(int op)
{
	char a[96], b[96], *v;
	unsigned char rbuf[4096];
	const char *xn;
	int fd, ret, dup, flags;
	unsigned mode;
	ssize_t n;

	rand_path(a, sizeof(a), depth);
	snprintf(me->cur_path, sizeof(me->cur_path), "%s", a);
	me->cur_op = op;
	switch (op) {
	case OP_CREATE:
		fd = open(a, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0) {
			done(op, -1, "%s", a);
			break;
		}
		n = write_records(fd, a, rnd(4), 0, 0);
		ret = (int)n;
		if (close(fd) < 0 && ret >= 0)
			ret = -1;
		done(op, ret < 0 ? -1 : 0, "%s", a);
		break;
	case OP_WRITE: {
		static const char *how[] = { "append", "trunc", "pwrite" };
		unsigned h = rnd(3);
		struct stat st;

		flags = O_WRONLY | O_CLOEXEC | (h == 0 ? O_APPEND : h == 1 ? O_TRUNC : 0);
		fd = open(a, flags);
		if (fd < 0) {
			done(op, -1, "%s (%s)", a, how[h]);
			break;
		}
		if (h == 2) {
			ret = fstat(fd, &st);
			if (ret == 0)
				n = write_records(fd, a, 1 + rnd(4),
						  (off_t)rnd((unsigned)(st.st_size / REC) + 2) * REC, 1);
			else
				n = -1;
		} else {
			n = write_records(fd, a, 1 + rnd(4), 0, 0);
		}
		ret = n < 0 ? -1 : 0;
		if (close(fd) < 0)
			ret = -1;
		done(op, ret, "%s (%s)", a, how[h]);
		break;
	}
	case OP_READ:
		fd = open(a, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			done(op, -1, "%s", a);
			break;
		}
		while ((n = read(fd, rbuf, sizeof(rbuf))) > 0)
			;
		ret = n < 0 ? -1 : 0;
		if (ret < 0) {
			int e = errno;

			close(fd);
			errno = e;
		} else if (close(fd) < 0) {
			ret = -1;
		}
		done(op, ret, "%s", a);
		break;
	case OP_TRUNCATE: {
		off_t sz = (off_t)rnd(10) * REC;

		done(op, truncate(a, sz), "%s to %jd", a, (intmax_t)sz);
		break;
	}
	case OP_CHMOD: {
		static const unsigned modes[] = { 0755, 0775, 0700, 0750 };

		mode = modes[rnd(4)];
		done(op, chmod(a, mode), "%s %o", a, mode);
		break;
	}
	case OP_RENAME: case OP_RENAME_NOREPLACE: case OP_RENAME_EXCHANGE: {
		unsigned r = rnd(100);
		unsigned fl = op == OP_RENAME ? 0 : op == OP_RENAME_NOREPLACE ? RENAME_NOREPLACE : RENAME_EXCHANGE;

		/* a directory never moves deeper (an exchange swaps two of the
		 * same depth), so the tree stays within the name space; only
		 * "into itself" goes deeper, and must fail */
		if (r < 35)
			sibling(b, sizeof(b), a);
		else if (r < 42 && strlen(a) < 60)
			below(b, sizeof(b), a);
		else if (fl == RENAME_EXCHANGE)
			path_of_depth(b, sizeof(b), depth_of(a));
		else
			rand_path(b, sizeof(b), depth_of(a));
		snprintf(me->cur_path, sizeof(me->cur_path), "%.70s -> %.70s", a, b);
		done(op, renameat2(AT_FDCWD, a, AT_FDCWD, b, fl), "%s -> %s", a, b);
		break;
	}
	case OP_LINK:
		if (rnd(2))
			sibling(b, sizeof(b), a);
		else
			rand_path(b, sizeof(b), depth);
		snprintf(me->cur_path, sizeof(me->cur_path), "%.70s -> %.70s", a, b);
		done(op, link(a, b), "%s -> %s", a, b);
		break;
	case OP_UNLINK:
		done(op, unlink(a), "%s", a);
		break;
	case OP_MKDIR:
		done(op, mkdir(a, 0755), "%s", a);
		break;
	case OP_RMDIR:
		done(op, rmdir(a), "%s", a);
		break;
	case OP_SETXATTR: {
		static const char *fln[] = { "0", "XATTR_CREATE", "XATTR_REPLACE" };
		char val[256];
		unsigned len = 1 + rnd(200), f = rnd(3), i;

		xn = (const char *[]){ "user.a", "user.b", "user.c" }[rnd(3)];
		for (i = 0; i < len; i++)
			val[i] = (char)('a' + rnd(26));
		done(op, lsetxattr(a, xn, val, len, f == 0 ? 0 : f == 1 ? XATTR_CREATE : XATTR_REPLACE),
		     "%s %s (%u bytes, %s)", a, xn, len, fln[f]);
		break;
	}
	case OP_REMOVEXATTR:
		xn = (const char *[]){ "user.a", "user.b", "user.c", "user.p" }[rnd(4)];
		done(op, lremovexattr(a, xn), "%s %s", a, xn);
		break;
	case OP_STAT: {
		struct stat st;

		done(op, lstat(a, &st), "%s", a);
		break;
	}
	case OP_RMTREE:
		done(op, rm_tree(AT_FDCWD, a), "%s", a);
		break;
	case OP_HELD:
		held_op(a);
		break;
	case OP_READDIR:
		v = rnd(4) ? a : (char *)".";
		ret = do_readdir_check(v, &dup);
		if (ret == 0 && dup)
			report(op, ERR_DUP, "%s", v);
		else
			done(op, ret, "%s", v);
		break;
	}
	me->ops++;
}

static int pick_op(void)
{
	unsigned total = 0, r, i;

	for (i = 0; i < OP_NR; i++)
		total += weights[i];
	r = rnd(total);
	for (i = 0; i < OP_NR; i++) {
		if (r < weights[i])
			return (int)i;
		r -= weights[i];
	}
	return OP_STAT;
}

static void child(const char *root, unsigned idx, double deadline)
{
	uint64_t k;

	my_index = idx;
	rng = seed * 1000003ull + idx * 7919ull + 1;
	if (chdir(root) < 0) {
		fprintf(stderr, "nsstress[%u]: chdir %s: %s\n", idx, root, strerror(errno));
		me->fail[OP_STAT]++;
		me->cur_op = -1;
		_exit(1);
	}
	for (k = 0; (!max_ops || k < max_ops) && (!timed || now() < deadline); k++)
		one_op(pick_op());
	me->cur_op = -1;
	fflush(stdout);
	_exit(0);
}

static int run(const char *root)
{
	struct proc_shared *sh;
	pid_t *pids = calloc(nproc, sizeof(pid_t));
	double start = now(), deadline = start + secs, limit;
	uint64_t total = 0, fails = 0, dups = 0, sum[OP_NR][MAXERR + 1], opfail[OP_NR];
	unsigned i, running, hung = 0;
	int op, e, status, crashed = 0;

	if (no_xattr)
		weights[OP_SETXATTR] = weights[OP_REMOVEXATTR] = 0;
	sh = mmap(NULL, nproc * sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || !pids) {
		perror("nsstress: mmap");
		return 2;
	}
	printf("nsstress: %s: %u processes, seed %" PRIu64 ", %u levels x %u names", root, nproc, seed,
	       depth, width);
	if (timed)
		printf(", %g s", secs);
	if (max_ops)
		printf(", %s%" PRIu64 " ops per process", timed ? "at most " : "", max_ops);
	printf("\n");
	fflush(stdout);
	for (i = 0; i < nproc; i++) {
		sh[i].cur_op = OP_STAT;
		pids[i] = fork();
		if (pids[i] < 0) {
			perror("nsstress: fork");
			return 2;
		}
		if (pids[i] == 0) {
			me = &sh[i];
			child(root, i, deadline);
		}
	}
	limit = (timed ? deadline : start + 3600) + hang_secs;
	for (running = nproc; running > 0;) {
		pid_t p = waitpid(-1, &status, WNOHANG);

		if (p > 0) {
			for (i = 0; i < nproc; i++)
				if (pids[i] == p)
					break;
			if (i < nproc) {
				pids[i] = 0;
				running--;
				if (!WIFEXITED(status) || WEXITSTATUS(status)) {
					fprintf(stderr, "nsstress: process %u ended with %s %d\n", i,
						WIFSIGNALED(status) ? "signal" : "status",
						WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
					crashed++;
				}
			}
			continue;
		}
		if (now() > limit) {
			for (i = 0; i < nproc; i++)
				if (pids[i]) {
					op = sh[i].cur_op;
					fprintf(stderr, "nsstress: FAIL: process %u (pid %d) hangs in %s %s, "
						"%g s after the end of the run\n", i, (int)pids[i],
						op >= 0 && op < OP_NR ? op_names[op] : "?", sh[i].cur_path,
						now() - deadline);
					hung++;
				}
			for (i = 0; i < nproc; i++)
				if (pids[i])
					kill(pids[i], SIGKILL);
			/* reap what can be reaped; a process stuck in the kernel stays */
			limit = now() + 10;
			while (now() < limit && waitpid(-1, &status, WNOHANG) >= 0)
				usleep(100000);
			break;
		}
		usleep(20000);
	}
	memset(sum, 0, sizeof(sum));
	memset(opfail, 0, sizeof(opfail));
	for (i = 0; i < nproc; i++) {
		for (op = 0; op < OP_NR; op++) {
			for (e = 0; e <= MAXERR; e++)
				sum[op][e] += sh[i].n[op][e];
			opfail[op] += sh[i].fail[op];
			fails += sh[i].fail[op];
		}
		dups += sh[i].dups;
		total += sh[i].ops;
	}
	printf("nsstress: %-17s %9s %9s %7s  errors\n", "operation", "total", "ok", "failed");
	for (op = 0; op < OP_NR; op++) {
		uint64_t t = 0;
		char line[512];
		size_t n = 0;

		for (e = 0; e <= MAXERR; e++)
			t += sum[op][e];
		t += op == OP_READDIR ? dups : 0;
		line[0] = 0;
		for (e = 1; e <= MAXERR; e++)
			if (sum[op][e] && n < sizeof(line) - 40)
				n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s %" PRIu64, n ? ", " : "",
						      ename(e), sum[op][e]);
		if (op == OP_READDIR && dups)
			n += (size_t)snprintf(line + n, sizeof(line) - n, "%sduplicate names %" PRIu64,
					      n ? ", " : "", dups);
		printf("nsstress: %-17s %9" PRIu64 " %9" PRIu64 " %7" PRIu64 "  %s\n", op_names[op], t,
		       sum[op][0], opfail[op], line);
	}
	fails += hung + (unsigned)crashed;
	if (fails)
		printf("nsstress: %" PRIu64 " ops, seed %" PRIu64 ", %" PRIu64 " FAILURES%s\n", total, seed,
		       fails, hung ? " (hung processes)" : "");
	else
		printf("nsstress: %" PRIu64 " ops, seed %" PRIu64 ", ok\n", total, seed);
	return fails ? 1 : 0;
}

/* ------------------------------------------------------------ populate */

static int write_file(const char *path, unsigned nrec)
{
	int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
	ssize_t n = 0;

	if (fd < 0)
		return -1;
	if (nrec)
		n = write_records(fd, path, nrec, 0, 0);
	close(fd);
	return n < 0 ? -1 : 0;
}

struct pathlist {
	char (*p)[96];
	size_t n, cap;
};

static void pl_add(struct pathlist *l, const char *p)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->p = realloc(l->p, l->cap * sizeof(*l->p));
		if (!l->p) {
			perror("nsstress");
			exit(2);
		}
	}
	snprintf(l->p[l->n++], 96, "%s", p);
}

static int populate_dir(const char *dir, unsigned level, struct pathlist *files, struct pathlist *dirs)
{
	char p[96], val[64];
	unsigned i, r;

	for (i = 0; i < width; i++) {
		if (rnd(100) >= fill_pct)
			continue;
		snprintf(p, sizeof(p), "%.80s%sn%u", dir, *dir ? "/" : "", i);
		r = rnd(100);
		if ((level < depth && r < 50) || (level == depth && r < 15)) {
			if (mkdir(p, 0755) < 0) {
				fprintf(stderr, "nsstress: mkdir %s: %s\n", p, strerror(errno));
				return -1;
			}
			pl_add(dirs, p);
			if (level < depth && populate_dir(p, level + 1, files, dirs) < 0)
				return -1;
		} else {
			if (write_file(p, rnd(7)) < 0) {
				fprintf(stderr, "nsstress: create %s: %s\n", p, strerror(errno));
				return -1;
			}
			pl_add(files, p);
		}
		if (rnd(100) < 20) {
			snprintf(val, sizeof(val), "populated %.40s", p);
			if (lsetxattr(p, "user.p", val, strlen(val), 0) < 0) {
				fprintf(stderr, "nsstress: setxattr %s: %s\n", p, strerror(errno));
				return -1;
			}
		}
	}
	return 0;
}

static int populate(const char *root)
{
	struct pathlist files = { 0 }, dirs = { 0 };
	unsigned links = 0, i, t;
	char p[96];

	rng = seed * 2654435761ull + 17;
	if (chdir(root) < 0) {
		fprintf(stderr, "nsstress: %s: %s\n", root, strerror(errno));
		return 2;
	}
	if (populate_dir("", 1, &files, &dirs) < 0)
		return 1;
	/* hard links: about one file in eight gets another name */
	for (i = 0; i < files.n / 8 + 1 && files.n; i++) {
		const char *src = files.p[rnd((unsigned)files.n)];

		for (t = 0; t < 10; t++) {
			if (dirs.n && rnd(3))
				snprintf(p, sizeof(p), "%s/n%u", dirs.p[rnd((unsigned)dirs.n)], rnd(width));
			else
				snprintf(p, sizeof(p), "n%u", rnd(width));
			if (strlen(p) > 20) /* deeper than depth */
				continue;
			if (link(src, p) == 0) {
				links++;
				break;
			}
		}
	}
	printf("nsstress: populated %s: %zu directories, %zu files, %u hard links (seed %" PRIu64 ")\n", root,
	       dirs.n, files.n, links, seed);
	free(files.p);
	free(dirs.p);
	return 0;
}

/* ------------------------------------------------------------ check */

struct ent {
	char name[256];
	uint64_t ino;
	unsigned char type;
};

struct inoent {
	uint64_t ino;
	uint64_t hash;
	mode_t type;
	nlink_t nlink;
	unsigned names;
	char first[200];
	struct inoent *next;
};

static struct inoent *inotab[4096];
static unsigned problems, entries;

static void __attribute__((format(printf, 1, 2))) problem(const char *fmt, ...)
{
	va_list ap;

	problems++;
	fprintf(stderr, "nsstress check: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int ent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->name, ((const struct ent *)b)->name);
}

static struct ent *list_dir(int dfd, const char *path, size_t bufsize, size_t *count)
{
	struct ent *v = NULL;
	size_t n = 0, cap = 0, i;
	char *buf = malloc(bufsize);
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long r;

	if (fd < 0 || !buf) {
		problem("%s: cannot open the directory to list it: %s", path, strerror(errno));
		free(buf);
		return NULL;
	}
	while ((r = syscall(SYS_getdents64, fd, buf, bufsize)) > 0) {
		long pos = 0;

		while (pos < r) {
			struct dirent64 *d = (struct dirent64 *)(buf + pos);

			pos += d->d_reclen;
			if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 32;
				v = realloc(v, cap * sizeof(*v));
				if (!v) {
					perror("nsstress");
					exit(2);
				}
			}
			snprintf(v[n].name, sizeof(v[n].name), "%s", d->d_name);
			v[n].ino = d->d_ino;
			v[n].type = d->d_type;
			n++;
		}
	}
	if (r < 0)
		problem("%s: getdents64 with a %zu-byte buffer: %s", path, bufsize, strerror(errno));
	close(fd);
	free(buf);
	if (n)
		qsort(v, n, sizeof(*v), ent_cmp);
	for (i = 1; i < n; i++)
		if (!strcmp(v[i].name, v[i - 1].name))
			problem("%s: \"%s\" listed twice (getdents64 buffer %zu bytes)", path, v[i].name, bufsize);
	*count = n;
	if (!v)
		v = calloc(1, sizeof(*v));
	return v;
}

static unsigned char dtype_of(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG: return DT_REG;
	case S_IFDIR: return DT_DIR;
	case S_IFLNK: return DT_LNK;
	case S_IFCHR: return DT_CHR;
	case S_IFBLK: return DT_BLK;
	case S_IFIFO: return DT_FIFO;
	case S_IFSOCK: return DT_SOCK;
	}
	return DT_UNKNOWN;
}

static char typechar(mode_t m)
{
	return S_ISREG(m) ? 'f' : S_ISDIR(m) ? 'd' : S_ISLNK(m) ? 'l' : '?';
}

static void note_ino(const char *path, const struct stat *st, uint64_t hash)
{
	struct inoent *e;
	unsigned b = (unsigned)(st->st_ino % 4096);

	for (e = inotab[b]; e; e = e->next)
		if (e->ino == st->st_ino)
			break;
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e) {
			perror("nsstress");
			exit(2);
		}
		e->ino = st->st_ino;
		e->hash = hash;
		e->type = st->st_mode & S_IFMT;
		e->nlink = st->st_nlink;
		snprintf(e->first, sizeof(e->first), "%.199s", path);
		e->next = inotab[b];
		inotab[b] = e;
	} else {
		if (e->type != (st->st_mode & S_IFMT) || S_ISDIR(st->st_mode))
			problem("%s and %s have the same st_ino %ju but are different %s", e->first, path,
				(uintmax_t)st->st_ino, S_ISDIR(st->st_mode) ? "directories" : "types");
		else if (e->hash != hash)
			problem("%s and %s have the same st_ino %ju (hard links) but different content", e->first,
				path, (uintmax_t)st->st_ino);
		if (st->st_nlink != e->nlink)
			problem("%s and %s have the same st_ino %ju but st_nlink %ju and %ju", e->first, path,
				(uintmax_t)st->st_ino, (uintmax_t)e->nlink, (uintmax_t)st->st_nlink);
	}
	e->names++;
}

static void check_links(void)
{
	struct inoent *e;
	unsigned b;

	for (b = 0; b < 4096; b++)
		for (e = inotab[b]; e; e = e->next)
			if (e->type != S_IFDIR && e->names > e->nlink)
				problem("%s: st_ino %ju has %u names in the tree but st_nlink %ju", e->first,
					(uintmax_t)e->ino, e->names, (uintmax_t)e->nlink);
}

static uint64_t check_file(int dfd, const char *name, const char *path, const struct stat *st)
{
	size_t cap = (size_t)st->st_size + 65536, total = 0;
	unsigned char *buf = malloc(cap);
	uint64_t h = 14695981039346656037ull;
	ssize_t n = 0;
	size_t i;
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 || !buf) {
		problem("%s: open O_RDONLY: %s", path, strerror(errno));
		free(buf);
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while (total < cap && (n = read(fd, buf + total, cap - total)) > 0)
		total += (size_t)n;
	if (n < 0)
		problem("%s: read: %s", path, strerror(errno));
	if ((off_t)total != st->st_size)
		problem("%s: read %zu bytes, st_size is %jd", path, total, (intmax_t)st->st_size);
	if (!no_validate) {
		if (total % REC)
			problem("%s: size %zu is not a multiple of %d (a torn write)", path, total, REC);
		for (i = 0; i + REC <= total; i += REC)
			if (bad_record(buf + i)) {
				problem("%s: bad record at offset %zu", path, i);
				break;
			}
	}
	h = fnv64(h, buf, total);
	close(fd);
	free(buf);
	return h;
}

static int xname_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "name:len:hash,..." of the user.* xattrs */
static void xattrs_of(const char *path, char *out, size_t outlen)
{
	char list[4096], val[65536], *names[128], *p;
	ssize_t n, vl;
	size_t k = 0, o = 0, i;

	out[0] = 0;
	n = llistxattr(path, list, sizeof(list));
	if (n < 0) {
		problem("%s: listxattr: %s", path, strerror(errno));
		return;
	}
	for (p = list; p < list + n && k < 128; p += strlen(p) + 1)
		if (!strncmp(p, "user.", 5))
			names[k++] = p;
		else if (!strncmp(p, "trusted.stackfs.", 16) || !strncmp(p, "trusted.overlay.", 16) ||
			 !strncmp(p, "user.overlay.", 13))
			problem("%s: the union's private xattr %s is listed", path, p);
	qsort(names, k, sizeof(*names), xname_cmp);
	for (i = 0; i < k; i++) {
		vl = lgetxattr(path, names[i], val, sizeof(val));
		if (vl < 0) {
			problem("%s: getxattr %s: %s", path, names[i], strerror(errno));
			continue;
		}
		if (o < outlen)
			o += (size_t)snprintf(out + o, outlen - o, "%s%s:%zd:%08" PRIx32, i ? "," : "", names[i], vl,
					      fnv32(val, (size_t)vl));
	}
}

static void check_dir(int dfd, const char *path, int is_root)
{
	struct ent *big, *small;
	size_t nb, ns, i;
	char sub[4096], xa[2048];

	big = list_dir(dfd, path, 32768, &nb);
	small = list_dir(dfd, path, 128, &ns);
	if (!big || !small) {
		free(big);
		free(small);
		return;
	}
	if (nb != ns)
		problem("%s: %zu names with a large buffer, %zu with a small one", path, nb, ns);
	else
		for (i = 0; i < nb; i++)
			if (strcmp(big[i].name, small[i].name) || big[i].ino != small[i].ino) {
				problem("%s: the two listings differ at \"%s\" (ino %ju) / \"%s\" (ino %ju)", path,
					big[i].name, (uintmax_t)big[i].ino, small[i].name, (uintmax_t)small[i].ino);
				break;
			}
	for (i = 0; i < nb; i++) {
		const struct ent *d = &big[i];
		struct stat st;
		uint64_t h = 0;

		if (i && !strcmp(d->name, big[i - 1].name))
			continue;
		entries++;
		snprintf(sub, sizeof(sub), "%s/%s", path, d->name);
		if (!strncmp(d->name, ".wh.", 4))
			problem("%s: a whiteout name is visible", sub);
		if (is_root && !strcmp(d->name, ".stackfs"))
			problem("%s: the metadata directory is visible", sub);
		if (fstatat(dfd, d->name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			problem("%s: lstat: %s", sub, strerror(errno));
			continue;
		}
		if (d->type != DT_UNKNOWN && d->type != dtype_of(st.st_mode))
			problem("%s: d_type %u but lstat says mode 0%o", sub, d->type, st.st_mode);
		if (d->ino != st.st_ino)
			problem("%s: d_ino %ju but st_ino %ju", sub, (uintmax_t)d->ino, (uintmax_t)st.st_ino);
		if (S_ISREG(st.st_mode))
			h = check_file(dfd, d->name, sub, &st);
		else if (!S_ISDIR(st.st_mode))
			problem("%s: unexpected type (mode 0%o)", sub, st.st_mode);
		xattrs_of(sub, xa, sizeof(xa));
		note_ino(sub, &st, h);
		if (opt_manifest)
			printf("%s|%c|%04o|%jd|%ju|%016" PRIx64 "|%s\n", sub, typechar(st.st_mode),
			       st.st_mode & 07777, S_ISDIR(st.st_mode) ? (intmax_t)0 : (intmax_t)st.st_size,
			       (uintmax_t)st.st_ino, h, xa);
		if (S_ISDIR(st.st_mode)) {
			int fd = openat(dfd, d->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (fd < 0) {
				problem("%s: open the directory: %s", sub, strerror(errno));
				continue;
			}
			check_dir(fd, sub, 0);
			close(fd);
		}
	}
	free(big);
	free(small);
}

static int check(const char *root)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "nsstress: %s: %s\n", root, strerror(errno));
		return 2;
	}
	check_dir(fd, root, 1);
	close(fd);
	check_links();
	fprintf(stderr, "nsstress check: %s: %u entries, %u problems\n", root, entries, problems);
	return problems ? 1 : 0;
}

/* ------------------------------------------------------------ main */

/* -W create=0,rename=20 */
static int set_weights(char *spec)
{
	char *tok, *save = NULL, *eq, *end;
	int op;

	for (tok = strtok_r(spec, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		eq = strchr(tok, '=');
		if (!eq)
			return -1;
		*eq = 0;
		for (op = 0; op < OP_NR; op++)
			if (!strcmp(op_names[op], tok))
				break;
		if (op == OP_NR) {
			fprintf(stderr, "nsstress: -W: no operation %s\n", tok);
			return -1;
		}
		weights[op] = (unsigned)strtoul(eq + 1, &end, 0);
		if (*end || end == eq + 1)
			return -1;
	}
	for (op = 0; op < OP_NR; op++)
		if (weights[op])
			return 0;
	fprintf(stderr, "nsstress: -W: every weight is 0\n");
	return -1;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: nsstress [-p procs] [-t secs] [-n ops] [-S seed] [-w width] [-D depth] [-H secs] [-x] [-v]\n"
		"                [-W op=weight,...] ROOT\n"
		"       nsstress -I [-S seed] [-w width] [-D depth] [-f percent] ROOT\n"
		"       nsstress -C [-m] [-V] ROOT\n");
	return 2;
}

int main(int argc, char **argv)
{
	int c, mode = 0, secs_given = 0;
	struct timeval tv;
	char *end;

	gettimeofday(&tv, NULL);
	seed = ((uint64_t)tv.tv_sec * 1000003u) ^ (uint64_t)tv.tv_usec;
	while ((c = getopt(argc, argv, "p:t:n:S:w:D:H:f:W:xvICmV")) != -1) {
		errno = 0;
		switch (c) {
		case 'p': nproc = (unsigned)strtoul(optarg, &end, 0); break;
		case 't': secs = strtod(optarg, &end); secs_given = timed = 1; break;
		case 'n': max_ops = strtoull(optarg, &end, 0); if (!secs_given) timed = 0; break;
		case 'S': seed = strtoull(optarg, &end, 0); break;
		case 'w': width = (unsigned)strtoul(optarg, &end, 0); break;
		case 'D': depth = (unsigned)strtoul(optarg, &end, 0); break;
		case 'H': hang_secs = (unsigned)strtoul(optarg, &end, 0); break;
		case 'f': fill_pct = (unsigned)strtoul(optarg, &end, 0); break;
		case 'W':
			if (set_weights(optarg) < 0)
				return usage();
			continue;
		case 'x': no_xattr = 1; continue;
		case 'v': verbose = 1; continue;
		case 'I': mode = 'I'; continue;
		case 'C': mode = 'C'; continue;
		case 'm': opt_manifest = 1; continue;
		case 'V': no_validate = 1; continue;
		default: return usage();
		}
		if (errno || end == optarg || *end) {
			fprintf(stderr, "nsstress: -%c: not a number: %s\n", c, optarg);
			return usage();
		}
	}
	if (optind != argc - 1)
		return usage();
	if (nproc < 1 || nproc > 256 || width < 1 || width > 100 || depth < 1 || depth > 6) {
		fprintf(stderr, "nsstress: -p 1..256, -w 1..100, -D 1..6\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (mode == 'I')
		return populate(argv[optind]);
	if (mode == 'C')
		return check(argv[optind]);
	return run(argv[optind]);
}
