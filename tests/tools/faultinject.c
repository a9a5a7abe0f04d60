/* faultinject.so: an LD_PRELOAD shim for stackfsd that counts the calls
 * which change a branch and, at the Nth call of a chosen kind, kills the
 * daemon (a crash point) or fails the call with a chosen errno.
 *
 * Dormant until armed, so what the daemon does while mounting never
 * shifts N. Environment (read when the daemon starts):
 *   SFS_FI_CTL    control file; without it the shim only forwards calls
 *   SFS_FI_LOG    trace file: one line per counted call, and what was done
 *   SFS_FI_ROOTS  colon-separated path prefixes: only calls on entries
 *                 beneath them count (the branches; not /dev/fuse, the pid
 *                 file or a socket)
 *   SFS_FI_ARM    when set, the control file is read at start as by
 *                 SIGUSR2 (for a short-lived process such as stackfs
 *                 commit, whose every call counts)
 * SIGUSR2 arms: the handler reads the control file, one line
 *   KINDS N ACTION
 * KINDS: comma-separated kinds below, or "mut" for all of them; N: which
 * call (from 1) of those kinds acts, 0 to only count; ACTION: "count",
 * "kill" (SIGKILL before the call is made), "killafter" (SIGKILL once the
 * call returned), "term" (SIGTERM before the call, which is then made:
 * a process that handles it stops at its own pace), or an errno name (ENOSPC, EIO, EDQUOT, ...: the call is
 * not made and fails with it), with a trailing "+" for every call from
 * the Nth on. Counters restart at 0; the trace gets "ARMED <line>".
 *
 * Kinds: rename link unlink open (creating, truncating or writable opens,
 * openat2 included) write (write, pwrite, writev, splice into a file,
 * copy_file_range, FICLONE) truncate fallocate xattr (set and remove,
 * setxattrat/removexattrat included) sync (fsync, fdatasync) attr (chmod,
 * chown, utimes, inode flags) mkdir symlink mknod.
 *
 * syscall(2) is interposed too: the daemon calls openat2 and the *xattrat
 * calls that way, glibc having no wrappers for them.
 *
 * SFS_FI_OPENAT2_EMULATE=1 (independent of the rest): openat2 of one
 * name component becomes openat with the same flags and mode, for
 * valgrind 3.19, which does not know openat2 (the RESOLVE_* limits are
 * lost: only for tests on trusted branches). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <linux/openat2.h>

#ifndef SYS_setxattrat
#define SYS_setxattrat 463
#define SYS_removexattrat 466
#endif

enum kind {
	K_RENAME, K_LINK, K_UNLINK, K_OPEN, K_WRITE, K_TRUNCATE, K_FALLOCATE,
	K_XATTR, K_SYNC, K_ATTR, K_MKDIR, K_SYMLINK, K_MKNOD, K_NKINDS
};

static const char *const kind_names[K_NKINDS] = {
	"rename", "link", "unlink", "open", "write", "truncate", "fallocate",
	"xattr", "sync", "attr", "mkdir", "symlink", "mknod",
};

enum action { A_COUNT, A_KILL, A_KILLAFTER, A_TERM, A_ERRNO };

/* The armed configuration. Written by the signal handler while the
 * daemon is idle (the test arms between workloads), read by any thread. */
static struct {
	atomic_uint kinds;	/* bit per enum kind; 0: not armed */
	atomic_long n;
	atomic_int action;
	atomic_int err;
	atomic_bool sticky;	/* act on every call from the Nth on */
	atomic_long seq;	/* calls counted since arming */
} cfg;

static char ctl_path[512], log_path[512];
static bool emulate_openat2;
static char roots[8][512];
static int nroots;

/* The real functions, found once (dlsym is not async-signal-safe, so the
 * handler only uses those found at load time). */
#define REAL(name) static __typeof__(name) *real_##name
REAL(open); REAL(open64); REAL(openat); REAL(openat64); REAL(read); REAL(close);
REAL(write); REAL(pwrite); REAL(pwrite64); REAL(writev); REAL(pwritev);
REAL(splice); REAL(copy_file_range); REAL(ioctl); REAL(ftruncate);
REAL(ftruncate64); REAL(truncate); REAL(truncate64); REAL(fallocate);
REAL(fallocate64); REAL(rename); REAL(renameat); REAL(renameat2);
REAL(linkat); REAL(link); REAL(unlink); REAL(unlinkat); REAL(rmdir);
REAL(setxattr); REAL(lsetxattr); REAL(fsetxattr); REAL(removexattr);
REAL(lremovexattr); REAL(fremovexattr); REAL(fsync); REAL(fdatasync);
REAL(chmod); REAL(fchmod); REAL(fchmodat); REAL(fchown); REAL(fchownat);
REAL(lchown); REAL(chown); REAL(utimensat); REAL(futimens); REAL(mkdir);
REAL(mkdirat); REAL(symlink); REAL(symlinkat); REAL(mknod); REAL(mknodat);
REAL(syscall); REAL(readlink);

#define FIND(name) (real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name))

static void find_reals(void)
{
	FIND(open); FIND(open64); FIND(openat); FIND(openat64); FIND(read); FIND(close);
	FIND(write); FIND(pwrite); FIND(pwrite64); FIND(writev); FIND(pwritev);
	FIND(splice); FIND(copy_file_range); FIND(ioctl); FIND(ftruncate);
	FIND(ftruncate64); FIND(truncate); FIND(truncate64); FIND(fallocate);
	FIND(fallocate64); FIND(rename); FIND(renameat); FIND(renameat2);
	FIND(linkat); FIND(link); FIND(unlink); FIND(unlinkat); FIND(rmdir);
	FIND(setxattr); FIND(lsetxattr); FIND(fsetxattr); FIND(removexattr);
	FIND(lremovexattr); FIND(fremovexattr); FIND(fsync); FIND(fdatasync);
	FIND(chmod); FIND(fchmod); FIND(fchmodat); FIND(fchown); FIND(fchownat);
	FIND(lchown); FIND(chown); FIND(utimensat); FIND(futimens); FIND(mkdir);
	FIND(mkdirat); FIND(symlink); FIND(symlinkat); FIND(mknod); FIND(mknodat);
	FIND(syscall); FIND(readlink);
}

/* ------------------------------------------------------------ trace */

static void log_line(const char *s)
{
	int fd;

	if (!log_path[0])
		return;
	fd = real_open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	/* a lost trace line changes nothing the test checks */
	if (real_write(fd, s, strlen(s)) < 0) {
	}
	real_close(fd);
}

/* ------------------------------------------------------------ arming */

static int errno_of(const char *s)
{
	static const struct { const char *name; int err; } t[] = {
		{ "ENOSPC", ENOSPC }, { "EIO", EIO }, { "EDQUOT", EDQUOT },
		{ "EROFS", EROFS }, { "EPERM", EPERM }, { "EACCES", EACCES },
		{ "ENOMEM", ENOMEM }, { "EFBIG", EFBIG }, { "ENOTSUP", ENOTSUP },
		{ "E2BIG", E2BIG }, { "EMLINK", EMLINK }, { "ESTALE", ESTALE },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(s, t[i].name))
			return t[i].err;
	return 0;
}

static unsigned kinds_of(char *s)
{
	unsigned bits = 0;
	char *save = NULL;

	for (char *k = strtok_r(s, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
		if (!strcmp(k, "mut"))
			bits |= (1u << K_NKINDS) - 1;
		for (int i = 0; i < K_NKINDS; i++)
			if (!strcmp(k, kind_names[i]))
				bits |= 1u << i;
	}
	return bits;
}

/* Parses "KINDS N ACTION" into cfg; -1 on a malformed line. Runs in the
 * signal handler: no allocation, no stdio (strtok_r and strtol are
 * re-entrant and touch only their arguments). */
static int parse_ctl(char *line)
{
	char *save = NULL, *k = strtok_r(line, " \t\n", &save);
	char *n = strtok_r(NULL, " \t\n", &save), *a = strtok_r(NULL, " \t\n", &save);
	size_t al = a ? strlen(a) : 0;
	bool sticky = al > 1 && a[al - 1] == '+';
	int act, err = 0;

	if (!k || !n || !a)
		return -1;
	if (sticky)
		a[al - 1] = '\0';
	if (!strcmp(a, "count"))
		act = A_COUNT;
	else if (!strcmp(a, "kill"))
		act = A_KILL;
	else if (!strcmp(a, "killafter"))
		act = A_KILLAFTER;
	else if (!strcmp(a, "term"))
		act = A_TERM;
	else if ((err = errno_of(a)))
		act = A_ERRNO;
	else
		return -1;
	atomic_store(&cfg.kinds, 0);
	atomic_store(&cfg.n, strtol(n, NULL, 10));
	atomic_store(&cfg.action, act);
	atomic_store(&cfg.err, err);
	atomic_store(&cfg.sticky, sticky);
	atomic_store(&cfg.seq, 0);
	atomic_store(&cfg.kinds, kinds_of(k));
	return 0;
}

/* snprintf in a handler is not async-signal-safe in general; the test
 * arms only while the daemon is idle, its main thread waiting. */
static void on_arm(int sig)
{
	char buf[256], msg[300];
	int saved = errno, fd = real_open(ctl_path, O_RDONLY | O_CLOEXEC);
	ssize_t len = fd < 0 ? -1 : real_read(fd, buf, sizeof(buf) - 1);

	(void)sig;
	if (fd >= 0)
		real_close(fd);
	buf[len < 0 ? 0 : len] = '\0';
	snprintf(msg, sizeof(msg), "ARMED %s", buf);
	if (len <= 0 || parse_ctl(buf) < 0)
		snprintf(msg, sizeof(msg), "BADCTL\n");
	else if (msg[strlen(msg) - 1] != '\n')
		strcat(msg, "\n");
	log_line(msg);
	errno = saved;
}

__attribute__((constructor)) static void fi_init(void)
{
	const char *ctl = getenv("SFS_FI_CTL"), *lg = getenv("SFS_FI_LOG");
	const char *r = getenv("SFS_FI_ROOTS");
	struct sigaction sa = { .sa_handler = on_arm, .sa_flags = SA_RESTART };

	find_reals();
	emulate_openat2 = getenv("SFS_FI_OPENAT2_EMULATE") != NULL;
	if (!ctl || !ctl[0])
		return;
	snprintf(ctl_path, sizeof(ctl_path), "%s", ctl);
	snprintf(log_path, sizeof(log_path), "%s", lg ? lg : "");
	while (r && *r && nroots < 8) {
		size_t l = strcspn(r, ":");

		snprintf(roots[nroots++], sizeof(roots[0]), "%.*s", (int)l, r);
		r += l + (r[l] == ':');
	}
	sigaction(SIGUSR2, &sa, NULL);
	if (getenv("SFS_FI_ARM"))
		on_arm(0);
}

/* ------------------------------------------------------------ matching */

/* The absolute path of dirfd/name (name may be empty, absolute or
 * /proc/self/fd/N/...), for the roots filter and the trace. */
static void path_of(int dirfd, const char *name, char *out, size_t len)
{
	char link[64], base[4096] = "";
	const char *rest = name ? name : "";
	ssize_t n;

	if (rest[0] == '/' && strncmp(rest, "/proc/self/fd/", 14) != 0) {
		snprintf(out, len, "%s", rest);
		return;
	}
	if (rest[0] == '/') {
		dirfd = atoi(rest + 14);
		rest += 14 + strspn(rest + 14, "0123456789");
		rest += rest[0] == '/';
	}
	if (dirfd == AT_FDCWD)
		snprintf(link, sizeof(link), "/proc/self/cwd");
	else
		snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
	n = real_readlink(link, base, sizeof(base) - 1);
	base[n < 0 ? 0 : n] = '\0';
	snprintf(out, len, "%s%s%s", base, rest[0] ? "/" : "", rest);
}

static bool under_roots(const char *p)
{
	for (int i = 0; i < nroots; i++) {
		size_t l = strlen(roots[i]);

		if (!strncmp(p, roots[i], l) && (p[l] == '/' || p[l] == '\0' || p[l] == ' '))
			return true;
	}
	return nroots == 0;
}

/* What the caller does with a call: go on (0), or fail it with errno
 * (-1). Kills the process where asked. *after is set when the kill comes
 * once the call returned. */
static int check(enum kind k, const char *fn, int dirfd, const char *name,
		 int dirfd2, const char *name2, bool *after)
{
	char p[4096], p2[4096] = "", line[9000];
	unsigned kinds = atomic_load(&cfg.kinds);
	long seq, n;
	int act, err;

	*after = false;
	if (!(kinds & (1u << k)))
		return 0;
	path_of(dirfd, name, p, sizeof(p));
	if (name2)
		path_of(dirfd2, name2, p2, sizeof(p2));
	if (!under_roots(p) && !(name2 && under_roots(p2)))
		return 0;
	seq = atomic_fetch_add(&cfg.seq, 1) + 1;
	n = atomic_load(&cfg.n);
	act = atomic_load(&cfg.action);
	err = atomic_load(&cfg.err);
	snprintf(line, sizeof(line), "%ld %s %s %s%s%s\n", seq, kind_names[k], fn, p,
		 name2 ? " -> " : "", p2);
	log_line(line);
	if (n <= 0 || act == A_COUNT || (seq != n && !(atomic_load(&cfg.sticky) && seq > n)))
		return 0;
	if (act == A_KILL) {
		snprintf(line, sizeof(line), "KILL %ld\n", seq);
		log_line(line);
		kill(getpid(), SIGKILL);
	}
	if (act == A_KILLAFTER) {
		*after = true;
		return 0;
	}
	if (act == A_TERM) {
		snprintf(line, sizeof(line), "TERM %ld\n", seq);
		log_line(line);
		kill(getpid(), SIGTERM);
		return 0;
	}
	snprintf(line, sizeof(line), "FAIL %ld %d\n", seq, err);
	log_line(line);
	errno = err;
	return -1;
}

static void after_call(bool after, long seq_hint)
{
	char line[64];

	if (!after)
		return;
	snprintf(line, sizeof(line), "KILLAFTER %ld\n", seq_hint);
	log_line(line);
	kill(getpid(), SIGKILL);
}

/* An fd-based call: its entry is the fd itself. */
#define FD_CALL(k, fd, call)                                                  \
	do {                                                                  \
		bool after_;                                                  \
		int e_;                                                       \
		if (check(k, __func__, fd, "", -1, NULL, &after_) < 0)        \
			return -1;                                            \
		__typeof__(call) r_ = call;                                   \
		e_ = errno;                                                   \
		after_call(after_, atomic_load(&cfg.seq));                   \
		errno = e_;                                                   \
		return r_;                                                    \
	} while (0)

/* A name-based call: dirfd/name, and a second name for renames and links. */
#define AT_CALL2(k, d1, n1, d2, n2, call)                                     \
	do {                                                                  \
		bool after_;                                                  \
		int e_;                                                       \
		if (check(k, __func__, d1, n1, d2, n2, &after_) < 0)          \
			return -1;                                            \
		__typeof__(call) r_ = call;                                   \
		e_ = errno;                                                   \
		after_call(after_, atomic_load(&cfg.seq));                   \
		errno = e_;                                                   \
		return r_;                                                    \
	} while (0)
#define AT_CALL(k, d, n, call) AT_CALL2(k, d, n, -1, NULL, call)

/* ------------------------------------------------------------ wrappers */

/* O_TMPFILE includes O_DIRECTORY: test all its bits, or every opendir
 * would count. */
static bool has_mode(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

static bool open_changes(int flags)
{
	return has_mode(flags) || (flags & O_TRUNC) || (flags & O_ACCMODE) != O_RDONLY;
}

static mode_t open_mode(int flags, va_list ap)
{
	return has_mode(flags) ? va_arg(ap, mode_t) : 0;
}

#define OPEN_BODY(dirfd, path, flags, call)                                   \
	do {                                                                  \
		if (!open_changes(flags))                                     \
			return call;                                          \
		AT_CALL(K_OPEN, dirfd, path, call);                           \
	} while (0)

int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t m;

	va_start(ap, flags);
	m = open_mode(flags, ap);
	va_end(ap);
	OPEN_BODY(AT_FDCWD, path, flags, real_open(path, flags, m));
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t m;

	va_start(ap, flags);
	m = open_mode(flags, ap);
	va_end(ap);
	OPEN_BODY(AT_FDCWD, path, flags, real_open64(path, flags, m));
}

int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t m;

	va_start(ap, flags);
	m = open_mode(flags, ap);
	va_end(ap);
	OPEN_BODY(dirfd, path, flags, real_openat(dirfd, path, flags, m));
}

int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t m;

	va_start(ap, flags);
	m = open_mode(flags, ap);
	va_end(ap);
	OPEN_BODY(dirfd, path, flags, real_openat64(dirfd, path, flags, m));
}

ssize_t write(int fd, const void *b, size_t n) { FD_CALL(K_WRITE, fd, real_write(fd, b, n)); }
ssize_t pwrite(int fd, const void *b, size_t n, off_t o) { FD_CALL(K_WRITE, fd, real_pwrite(fd, b, n, o)); }
ssize_t pwrite64(int fd, const void *b, size_t n, off64_t o) { FD_CALL(K_WRITE, fd, real_pwrite64(fd, b, n, o)); }
ssize_t writev(int fd, const struct iovec *v, int c) { FD_CALL(K_WRITE, fd, real_writev(fd, v, c)); }
ssize_t pwritev(int fd, const struct iovec *v, int c, off_t o) { FD_CALL(K_WRITE, fd, real_pwritev(fd, v, c, o)); }

ssize_t splice(int in, loff_t *oi, int out, loff_t *oo, size_t n, unsigned f)
{
	FD_CALL(K_WRITE, out, real_splice(in, oi, out, oo, n, f));
}

ssize_t copy_file_range(int in, off64_t *oi, int out, off64_t *oo, size_t n, unsigned f)
{
	FD_CALL(K_WRITE, out, real_copy_file_range(in, oi, out, oo, n, f));
}

int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (req == FICLONE || req == FICLONERANGE)
		FD_CALL(K_WRITE, fd, real_ioctl(fd, req, arg));
	if (req == FS_IOC_SETFLAGS || req == FS_IOC_FSSETXATTR)
		FD_CALL(K_ATTR, fd, real_ioctl(fd, req, arg));
	return real_ioctl(fd, req, arg);
}

int ftruncate(int fd, off_t l) { FD_CALL(K_TRUNCATE, fd, real_ftruncate(fd, l)); }
int ftruncate64(int fd, off64_t l) { FD_CALL(K_TRUNCATE, fd, real_ftruncate64(fd, l)); }
int truncate(const char *p, off_t l) { AT_CALL(K_TRUNCATE, AT_FDCWD, p, real_truncate(p, l)); }
int truncate64(const char *p, off64_t l) { AT_CALL(K_TRUNCATE, AT_FDCWD, p, real_truncate64(p, l)); }
int fallocate(int fd, int m, off_t o, off_t l) { FD_CALL(K_FALLOCATE, fd, real_fallocate(fd, m, o, l)); }
int fallocate64(int fd, int m, off64_t o, off64_t l) { FD_CALL(K_FALLOCATE, fd, real_fallocate64(fd, m, o, l)); }

int rename(const char *a, const char *b) { AT_CALL2(K_RENAME, AT_FDCWD, a, AT_FDCWD, b, real_rename(a, b)); }
int renameat(int da, const char *a, int db, const char *b) { AT_CALL2(K_RENAME, da, a, db, b, real_renameat(da, a, db, b)); }
int renameat2(int da, const char *a, int db, const char *b, unsigned f)
{
	AT_CALL2(K_RENAME, da, a, db, b, real_renameat2(da, a, db, b, f));
}

int linkat(int da, const char *a, int db, const char *b, int f) { AT_CALL2(K_LINK, db, b, da, a, real_linkat(da, a, db, b, f)); }
int link(const char *a, const char *b) { AT_CALL2(K_LINK, AT_FDCWD, b, AT_FDCWD, a, real_link(a, b)); }
int unlink(const char *p) { AT_CALL(K_UNLINK, AT_FDCWD, p, real_unlink(p)); }
int unlinkat(int d, const char *p, int f) { AT_CALL(K_UNLINK, d, p, real_unlinkat(d, p, f)); }
int rmdir(const char *p) { AT_CALL(K_UNLINK, AT_FDCWD, p, real_rmdir(p)); }

int setxattr(const char *p, const char *n, const void *v, size_t s, int f) { AT_CALL(K_XATTR, AT_FDCWD, p, real_setxattr(p, n, v, s, f)); }
int lsetxattr(const char *p, const char *n, const void *v, size_t s, int f) { AT_CALL(K_XATTR, AT_FDCWD, p, real_lsetxattr(p, n, v, s, f)); }
int fsetxattr(int fd, const char *n, const void *v, size_t s, int f) { FD_CALL(K_XATTR, fd, real_fsetxattr(fd, n, v, s, f)); }
int removexattr(const char *p, const char *n) { AT_CALL(K_XATTR, AT_FDCWD, p, real_removexattr(p, n)); }
int lremovexattr(const char *p, const char *n) { AT_CALL(K_XATTR, AT_FDCWD, p, real_lremovexattr(p, n)); }
int fremovexattr(int fd, const char *n) { FD_CALL(K_XATTR, fd, real_fremovexattr(fd, n)); }

int fsync(int fd) { FD_CALL(K_SYNC, fd, real_fsync(fd)); }
int fdatasync(int fd) { FD_CALL(K_SYNC, fd, real_fdatasync(fd)); }

int chmod(const char *p, mode_t m) { AT_CALL(K_ATTR, AT_FDCWD, p, real_chmod(p, m)); }
int fchmod(int fd, mode_t m) { FD_CALL(K_ATTR, fd, real_fchmod(fd, m)); }
int fchmodat(int d, const char *p, mode_t m, int f) { AT_CALL(K_ATTR, d, p, real_fchmodat(d, p, m, f)); }
int fchown(int fd, uid_t u, gid_t g) { FD_CALL(K_ATTR, fd, real_fchown(fd, u, g)); }
int fchownat(int d, const char *p, uid_t u, gid_t g, int f) { AT_CALL(K_ATTR, d, p, real_fchownat(d, p, u, g, f)); }
int lchown(const char *p, uid_t u, gid_t g) { AT_CALL(K_ATTR, AT_FDCWD, p, real_lchown(p, u, g)); }
int chown(const char *p, uid_t u, gid_t g) { AT_CALL(K_ATTR, AT_FDCWD, p, real_chown(p, u, g)); }
/* (glibc declares p nonnull; the kernel takes NULL: the fd itself) */
int utimensat(int d, const char *p, const struct timespec t[2], int f)
{
	const char *volatile name = p;

	AT_CALL(K_ATTR, d, name ? name : "", real_utimensat(d, p, t, f));
}
int futimens(int fd, const struct timespec t[2]) { FD_CALL(K_ATTR, fd, real_futimens(fd, t)); }

int mkdir(const char *p, mode_t m) { AT_CALL(K_MKDIR, AT_FDCWD, p, real_mkdir(p, m)); }
int mkdirat(int d, const char *p, mode_t m) { AT_CALL(K_MKDIR, d, p, real_mkdirat(d, p, m)); }
int symlink(const char *t, const char *p) { AT_CALL(K_SYMLINK, AT_FDCWD, p, real_symlink(t, p)); }
int symlinkat(const char *t, int d, const char *p) { AT_CALL(K_SYMLINK, d, p, real_symlinkat(t, d, p)); }
int mknod(const char *p, mode_t m, dev_t v) { AT_CALL(K_MKNOD, AT_FDCWD, p, real_mknod(p, m, v)); }
int mknodat(int d, const char *p, mode_t m, dev_t v) { AT_CALL(K_MKNOD, d, p, real_mknodat(d, p, m, v)); }

static long openat2_as_openat(int dirfd, const char *name, const struct open_how *how)
{
	if (strchr(name, '/')) {
		errno = ENOSYS;
		return -1;
	}
	return real_openat(dirfd, name, (int)how->flags, (mode_t)how->mode);
}

/* openat2 and the *xattrat calls have no glibc wrappers. */
long syscall(long nr, ...)
{
	va_list ap;
	long a[6];

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_openat2 && emulate_openat2)
		return openat2_as_openat((int)a[0], (const char *)a[1], (const struct open_how *)a[2]);
	if (nr == SYS_openat2 && a[2] &&
	    open_changes((int)((const struct open_how *)a[2])->flags))
		AT_CALL(K_OPEN, (int)a[0], (const char *)a[1],
			real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]));
	if (nr == SYS_setxattrat || nr == SYS_removexattrat)
		AT_CALL(K_XATTR, (int)a[0], (const char *)a[1],
			real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]));
	return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
