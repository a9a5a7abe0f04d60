/* fsx: random operations on one file, each checked against a copy of the
 * file kept in memory (the model) — in the manner of the classic fsx.
 *
 *   fsx [options] FILE
 *
 * Operations: reads and writes (pread/pwrite, also beyond the end of the
 * file), truncates that grow and shrink (ftruncate, or truncate(2) by
 * path), fallocate (mode 0, KEEP_SIZE, PUNCH_HOLE|KEEP_SIZE, ZERO_RANGE
 * with and without KEEP_SIZE), reads and writes through a shared mapping
 * (the write extends the file first, then msync MS_SYNC), copy_file_range
 * from one range of the file to another (through either descriptor),
 * lseek SEEK_DATA/SEEK_HOLE (what they skip must be zeros in the model,
 * ENXIO past the end), fsync/fdatasync,
 * dropping the cached pages (POSIX_FADV_DONTNEED, then a full compare, so
 * the data comes from the daemon again) and reopening the file (close,
 * open O_RDWR).
 *
 * After every operation the affected range is read back and compared, and
 * st_size and st_ino are checked by fstat (every descriptor) and by stat of
 * the path; every -c operations the whole file is compared. st_ino must
 * never change (copy-up keeps it).
 *
 * Options:
 *   -S SEED   seed of the random generator (default: from the clock); the
 *             same options and seed replay the same operations
 *   -N OPS    number of operations (default 10000)
 *   -l LEN    largest file size (default 262144; at least the initial size)
 *   -o LEN    largest read/write/fallocate length (default 65536)
 *   -c N      full compare every N operations (default 50; 0: never)
 *   -R N      reopen about every N operations (default 100; 0: never)
 *   -e        start from the existing FILE: its content is the model's
 *             initial content; the file is opened O_RDONLY first and
 *             O_RDWR only at the first operation that changes it (so a
 *             file in a read-only branch is copied up then)
 *   -d        keep a second, O_RDONLY descriptor open beside the O_RDWR
 *             one; reads and checks go through either at random (with -e
 *             it is the descriptor opened before the copy-up)
 *   -Z        O_DIRECT on every descriptor: reads, writes and
 *             copy_file_range ranges are aligned to 4096 bytes (offset
 *             and length), from 4096-aligned buffers
 *   -M        no mmap operations      -F  no fallocate
 *   -T        no truncate             -P  no fadvise(DONTNEED)
 *   -C        no copy_file_range      -H  no SEEK_DATA/SEEK_HOLE
 *   -w FILE   write the model (the expected content) to FILE at the end
 *   -L N      length of the operation log printed on failure (default 50)
 *   -v        print every operation     -q  print only the last line
 *
 * On a mismatch or an unexpected error: prints the failure, the first
 * differing offset (expected and actual bytes, which operation last changed
 * that byte), the last -L operations and the command line that replays the
 * run, and exits 1. Usage errors exit 2. On success the last line is
 * "fsx: N ops, seed S, ok".
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#ifndef FALLOC_FL_KEEP_SIZE
#include <linux/falloc.h>
#endif

enum {
	OP_READ,
	OP_WRITE,
	OP_MAPREAD,
	OP_MAPWRITE,
	OP_TRUNCATE,
	OP_FALLOC,
	OP_PUNCH,
	OP_ZERO,
	OP_FSYNC,
	OP_INVAL,
	OP_COPYRANGE,
	OP_SEEK,
	OP_REOPEN,
	OP_NR
};

static const char *op_names[OP_NR] = {
	"read", "write", "mapread", "mapwrite", "truncate", "fallocate",
	"punch_hole", "zero_range", "fsync", "fadvise_dontneed",
	"copy_file_range", "seek_data_hole", "reopen",
};

/* relative weights of the operations */
static unsigned weights[OP_NR] = {
	[OP_READ] = 20, [OP_WRITE] = 24, [OP_MAPREAD] = 8, [OP_MAPWRITE] = 8,
	[OP_TRUNCATE] = 8, [OP_FALLOC] = 6, [OP_PUNCH] = 6, [OP_ZERO] = 6,
	[OP_FSYNC] = 2, [OP_INVAL] = 2, [OP_COPYRANGE] = 6, [OP_SEEK] = 4,
	[OP_REOPEN] = 0,
};

struct logent {
	unsigned long n;
	int op;
	unsigned sub;   /* a variant: fallocate mode, fd used, by path... */
	off_t off;
	off_t len;
	off_t size_before, size_after;
	off_t src;      /* copy_file_range: the source offset; seek: the result */
	const char *note;
};

/* options */
static uint64_t seed;
static unsigned long nops = 10000;
static off_t maxlen = 256 * 1024;
static off_t maxop = 64 * 1024;
static unsigned long cmp_every = 50;
static unsigned long reopen_every = 100;
static int opt_existing, opt_dual, opt_direct, verbose, quiet;
/* O_DIRECT's alignment of offsets, lengths and buffers: the logical
 * block size of ext4 and XFS with 4 KiB blocks, and a page */
#define DIO_ALIGN ((off_t)4096)
static const char *dump_path;
static unsigned loglen = 50;
static const char *path;
static char replay_cmd[4096];

/* state */
static uint64_t rng;
static unsigned char *good;     /* the model: the expected content */
static uint32_t *writer;        /* the operation that last changed each byte */
static unsigned char *tmp;      /* what was read */
static off_t fsize;             /* the model's size */
static int rwfd = -1, rofd = -1;
static ino_t ino0;
static unsigned long opno;      /* the current operation, from 1 */
static struct logent *oplog;
static unsigned long logged;
static unsigned long counts[OP_NR];
static long pagesize;
static sigjmp_buf bus_jmp;
static volatile sig_atomic_t in_map;

/* ------------------------------------------------------------ random */

static uint64_t next64(void)
{
	uint64_t z = (rng += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint64_t rnd(uint64_t n)
{
	return n ? next64() % n : 0;
}

/* ------------------------------------------------------------ log, failure */

static const char *fallocmode(unsigned m)
{
	switch (m) {
	case 0: return "mode 0";
	case FALLOC_FL_KEEP_SIZE: return "KEEP_SIZE";
	case FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE: return "PUNCH_HOLE|KEEP_SIZE";
	case FALLOC_FL_ZERO_RANGE: return "ZERO_RANGE";
	case FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE: return "ZERO_RANGE|KEEP_SIZE";
	}
	return "?";
}

static void fmt_ent(char *buf, size_t len, const struct logent *e)
{
	char var[64] = "";

	switch (e->op) {
	case OP_FALLOC: case OP_PUNCH: case OP_ZERO:
		snprintf(var, sizeof(var), " %s", fallocmode(e->sub));
		break;
	case OP_TRUNCATE:
		snprintf(var, sizeof(var), " %s", e->sub ? "by path" : "ftruncate");
		break;
	case OP_READ: case OP_MAPREAD:
		snprintf(var, sizeof(var), " fd %s", e->sub ? "ro" : "rw");
		break;
	case OP_FSYNC:
		snprintf(var, sizeof(var), " %s", e->sub ? "fdatasync" : "fsync");
		break;
	case OP_COPYRANGE:
		snprintf(var, sizeof(var), " from 0x%jx (fd %s)", (intmax_t)e->src, (e->sub & 1) ? "ro" : "rw");
		break;
	case OP_SEEK:
		snprintf(var, sizeof(var), " %s fd %s -> %jd", (e->sub & 2) ? "SEEK_HOLE" : "SEEK_DATA",
			 (e->sub & 1) ? "ro" : "rw", (intmax_t)e->src);
		break;
	}
	if (e->op == OP_SEEK)
		snprintf(buf, len, "#%lu %s at 0x%jx%s, size 0x%jx", e->n, op_names[e->op],
			 (intmax_t)e->off, var, (intmax_t)e->size_after);
	else if (e->op == OP_FSYNC || e->op == OP_INVAL || e->op == OP_REOPEN)
		snprintf(buf, len, "#%lu %s%s, size 0x%jx", e->n, op_names[e->op], var,
			 (intmax_t)e->size_after);
	else if (e->op == OP_TRUNCATE)
		snprintf(buf, len, "#%lu %s to 0x%jx%s, size 0x%jx -> 0x%jx%s%s",
			 e->n, op_names[e->op], (intmax_t)e->off, var,
			 (intmax_t)e->size_before, (intmax_t)e->size_after,
			 e->note ? "; " : "", e->note ? e->note : "");
	else
		snprintf(buf, len, "#%lu %s 0x%jx +0x%jx (to 0x%jx)%s, size 0x%jx -> 0x%jx%s%s",
			 e->n, op_names[e->op], (intmax_t)e->off, (intmax_t)e->len,
			 (intmax_t)(e->off + e->len), var,
			 (intmax_t)e->size_before, (intmax_t)e->size_after,
			 e->note ? "; " : "", e->note ? e->note : "");
}

static struct logent *log_op(int op, unsigned sub, off_t off, off_t len)
{
	struct logent *e = &oplog[logged++ % loglen];

	*e = (struct logent){ .n = opno, .op = op, .sub = sub, .off = off, .len = len,
			      .size_before = fsize, .size_after = fsize };
	return e;
}

static void log_done(struct logent *e)
{
	char buf[256];

	e->size_after = fsize;
	if (verbose) {
		fmt_ent(buf, sizeof(buf), e);
		printf("%s\n", buf);
	}
}

static void dump_model(void)
{
	FILE *f;

	if (!dump_path)
		return;
	f = fopen(dump_path, "w");
	if (!f || (fsize && fwrite(good, 1, (size_t)fsize, f) != (size_t)fsize) || fclose(f)) {
		fprintf(stderr, "fsx: cannot write the model to %s: %s\n", dump_path, strerror(errno));
		return;
	}
}

static void print_log(void)
{
	unsigned long i, first = logged > loglen ? logged - loglen : 0;
	char buf[256];

	fprintf(stderr, "fsx: the last %lu operations:\n", logged - first);
	for (i = first; i < logged; i++) {
		fmt_ent(buf, sizeof(buf), &oplog[i % loglen]);
		fprintf(stderr, "  %s\n", buf);
	}
}

static void describe_writer(off_t off)
{
	uint32_t w = writer[off];
	unsigned long i, first = logged > loglen ? logged - loglen : 0;
	char buf[256];

	if (!w) {
		fprintf(stderr, "fsx: that byte was last changed by no operation (initial content)\n");
		return;
	}
	for (i = first; i < logged; i++)
		if (oplog[i % loglen].n == w) {
			fmt_ent(buf, sizeof(buf), &oplog[i % loglen]);
			fprintf(stderr, "fsx: that byte was last changed by %s\n", buf);
			return;
		}
	fprintf(stderr, "fsx: that byte was last changed by operation #%" PRIu32 " (before the log)\n", w);
}

static void __attribute__((noreturn, format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "fsx: FAIL at operation #%lu (seed %" PRIu64 ") on %s: ", opno, seed, path);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	print_log();
	fprintf(stderr, "fsx: replay with: %s\n", replay_cmd);
	dump_model();
	exit(1);
}

static void __attribute__((noreturn)) fail_errno(const char *what)
{
	int e = errno;

	fail("%s: %s (%s)", what, strerrorname_np(e) ? strerrorname_np(e) : "?", strerror(e));
}

/* ------------------------------------------------------------ I/O */

static int dio_flag(void)
{
	return opt_direct ? O_DIRECT : 0;
}

static off_t align_down(off_t v)
{
	return opt_direct ? v & ~(DIO_ALIGN - 1) : v;
}

static off_t align_up(off_t v)
{
	return opt_direct ? (v + DIO_ALIGN - 1) & ~(DIO_ALIGN - 1) : v;
}

/* With -Z: the range widened to whole blocks, its end at most `limit`
 * (itself aligned). */
static void align_range(off_t *off, off_t *len, off_t limit)
{
	off_t end = align_up(*off + *len);

	if (end > limit)
		end = limit;
	*off = align_down(*off);
	if (end <= *off)
		end = *off + DIO_ALIGN;
	*len = end - *off;
}

static void bus_handler(int sig)
{
	if (in_map)
		siglongjmp(bus_jmp, sig);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* pread until len bytes or the end of the file; returns the count */
static off_t read_full(int fd, unsigned char *buf, off_t len, off_t off, const char *what)
{
	off_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, buf + got, (size_t)(len - got), off + got);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			fail_errno(what);
		}
		if (n == 0)
			break;
		got += n;
	}
	return got;
}

static void write_full(int fd, const unsigned char *buf, off_t len, off_t off)
{
	off_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, buf + done, (size_t)(len - done), off + done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			fail_errno("pwrite");
		}
		if (n == 0)
			fail("pwrite of 0x%jx bytes at 0x%jx wrote nothing", (intmax_t)(len - done),
			     (intmax_t)(off + done));
		done += n;
	}
}

/* the descriptor reads and checks go through: either when there are two */
static int pick_fd(unsigned *which)
{
	if (rofd >= 0 && (rwfd < 0 || rnd(2))) {
		*which = 1;
		return rofd;
	}
	*which = 0;
	return rwfd;
}

/* compares what was read (got bytes of tmp) with the model at off */
static void compare(const unsigned char *buf, off_t off, off_t len, off_t got, const char *how)
{
	off_t expect = off >= fsize ? 0 : (off + len > fsize ? fsize - off : len);
	off_t i, first = -1, last = -1, ndiff = 0, n = got < expect ? got : expect;

	for (i = 0; i < n; i++)
		if (buf[i] != good[off + i]) {
			if (first < 0)
				first = i;
			last = i;
			ndiff++;
		}
	if (first < 0 && got == expect)
		return;
	fflush(stdout);
	if (first >= 0) {
		off_t o = off + first, j;

		fprintf(stderr, "fsx: %s: first differing offset 0x%jx (%jd): expected 0x%02x, got 0x%02x; "
			"%jd bytes differ between 0x%jx and 0x%jx\n", how, (intmax_t)o, (intmax_t)o,
			good[o], buf[first], (intmax_t)ndiff, (intmax_t)o, (intmax_t)(off + last + 1));
		fprintf(stderr, "fsx: expected at 0x%jx:", (intmax_t)o);
		for (j = 0; j < 16 && first + j < n; j++)
			fprintf(stderr, " %02x", good[o + j]);
		fprintf(stderr, "\nfsx: actual   at 0x%jx:", (intmax_t)o);
		for (j = 0; j < 16 && first + j < n; j++)
			fprintf(stderr, " %02x", buf[first + j]);
		fputc('\n', stderr);
		describe_writer(o);
		fail("%s: data mismatch at offset 0x%jx (range 0x%jx +0x%jx, model size 0x%jx)", how,
		     (intmax_t)o, (intmax_t)off, (intmax_t)len, (intmax_t)fsize);
	}
	fail("%s: read 0x%jx bytes at 0x%jx, expected 0x%jx (model size 0x%jx): the file ends %s",
	     how, (intmax_t)got, (intmax_t)off, (intmax_t)expect, (intmax_t)fsize,
	     got < expect ? "early" : "late");
}

static void check_range(off_t off, off_t len, const char *why)
{
	unsigned which;
	int fd = pick_fd(&which);
	char how[96];
	off_t got;

	if (len <= 0)
		return;
	if (opt_direct)
		align_range(&off, &len, align_up(fsize + pagesize));
	snprintf(how, sizeof(how), "%s (pread through the %s descriptor)", why, which ? "O_RDONLY" : "O_RDWR");
	got = read_full(fd, tmp, len, off, how);
	compare(tmp, off, len, got, how);
}

static void check_stat_one(const struct stat *st, const char *how)
{
	if (st->st_size != fsize)
		fail("%s: st_size is 0x%jx, expected 0x%jx", how, (intmax_t)st->st_size, (intmax_t)fsize);
	if (st->st_ino != ino0)
		fail("%s: st_ino changed from %ju to %ju", how, (uintmax_t)ino0, (uintmax_t)st->st_ino);
}

static void check_size(void)
{
	struct stat st;

	if (rwfd >= 0) {
		if (fstat(rwfd, &st) < 0)
			fail_errno("fstat of the O_RDWR descriptor");
		check_stat_one(&st, "fstat of the O_RDWR descriptor");
	}
	if (rofd >= 0) {
		if (fstat(rofd, &st) < 0)
			fail_errno("fstat of the O_RDONLY descriptor");
		check_stat_one(&st, "fstat of the O_RDONLY descriptor");
	}
	if (stat(path, &st) < 0)
		fail_errno("stat of the path");
	check_stat_one(&st, "stat of the path");
}

static void check_all(const char *why)
{
	check_size();
	/* one page more than the model: the file must end where it does */
	check_range(0, fsize + pagesize, why);
}

/* ------------------------------------------------------------ model */

static void model_write(off_t off, const unsigned char *buf, off_t len)
{
	off_t i;

	memcpy(good + off, buf, (size_t)len);
	for (i = 0; i < len; i++)
		writer[off + i] = (uint32_t)opno;
	if (off + len > fsize)
		fsize = off + len;
}

static void model_zero(off_t off, off_t end)
{
	off_t i;

	if (end > fsize)
		end = fsize;
	for (i = off; i < end; i++) {
		good[i] = 0;
		writer[i] = (uint32_t)opno;
	}
}

static void model_truncate(off_t size)
{
	off_t i;

	if (size < fsize) {
		/* beyond the end the model is all zero */
		memset(good + size, 0, (size_t)(fsize - size));
		for (i = size; i < fsize; i++)
			writer[i] = (uint32_t)opno;
	}
	fsize = size;
}

/* the data an operation writes: the operation number and the offset, so a
 * byte in the wrong place tells who wrote it (op = byte ^ offset mod 256) */
static void fill(unsigned char *buf, off_t off, off_t len)
{
	off_t i;

	for (i = 0; i < len; i++)
		buf[i] = (unsigned char)((opno ^ (uint64_t)(off + i)) & 0xff);
	/* a few random bytes too, so equal patterns of two ops still differ */
	for (i = 0; i < len; i += 97)
		buf[i] = (unsigned char)next64();
}

/* ------------------------------------------------------------ files */

static void open_rw(const char *why)
{
	rwfd = open(path, O_RDWR | O_CLOEXEC | dio_flag());
	if (rwfd < 0)
		fail_errno(why);
}

static void open_files(int first)
{
	struct stat st;

	if (first && !opt_existing) {
		rwfd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | dio_flag(), 0644);
		if (rwfd < 0)
			fail_errno("open O_RDWR|O_CREAT|O_TRUNC");
	} else if (!opt_existing || !first) {
		open_rw("open O_RDWR");
	}
	if (opt_dual || (first && opt_existing)) {
		rofd = open(path, O_RDONLY | O_CLOEXEC | dio_flag());
		if (rofd < 0)
			fail_errno("open O_RDONLY");
	}
	if (first) {
		if (fstat(rwfd >= 0 ? rwfd : rofd, &st) < 0)
			fail_errno("fstat");
		ino0 = st.st_ino;
	}
}

/* the first change of a file opened with -e opens it O_RDWR (a copy-up) */
static void need_rw(void)
{
	if (rwfd >= 0)
		return;
	open_rw("open O_RDWR at the first change");
	if (!opt_dual) {
		close(rofd);
		rofd = -1;
	}
	check_size();
}

static void do_reopen(void)
{
	struct logent *e = log_op(OP_REOPEN, 0, 0, 0);
	int had_rw = rwfd >= 0;

	if (rwfd >= 0 && close(rwfd) < 0)
		fail_errno("close of the O_RDWR descriptor");
	if (rofd >= 0 && close(rofd) < 0)
		fail_errno("close of the O_RDONLY descriptor");
	rwfd = rofd = -1;
	if (had_rw)
		open_rw("reopen O_RDWR");
	if (opt_dual || !had_rw) {
		rofd = open(path, O_RDONLY | O_CLOEXEC | dio_flag());
		if (rofd < 0)
			fail_errno("reopen O_RDONLY");
	}
	log_done(e);
	check_all("full compare after reopening");
}

/* ------------------------------------------------------------ operations */

/* an offset and length inside [0, maxlen) */
static void pick_range(off_t *off, off_t *len, int within_size)
{
	if (within_size && fsize > 0)
		*off = (off_t)rnd((uint64_t)fsize);
	else
		*off = (off_t)rnd((uint64_t)maxlen);
	*len = 1 + (off_t)rnd((uint64_t)maxop);
	if (*off + *len > maxlen)
		*len = maxlen - *off;
}

static void do_read(void)
{
	off_t off, len, got;
	unsigned which;
	int fd;
	struct logent *e;

	pick_range(&off, &len, rnd(5) != 0);
	if (opt_direct)
		align_range(&off, &len, maxlen);
	fd = pick_fd(&which);
	e = log_op(OP_READ, which, off, len);
	got = read_full(fd, tmp, len, off, "pread");
	log_done(e);
	compare(tmp, off, len, got, "read");
}

static void do_write(void)
{
	off_t off, len;
	struct logent *e;

	need_rw();
	pick_range(&off, &len, rnd(5) < 2);
	if (opt_direct)
		align_range(&off, &len, maxlen);
	e = log_op(OP_WRITE, 0, off, len);
	fill(tmp, off, len);
	write_full(rwfd, tmp, len, off);
	model_write(off, tmp, len);
	log_done(e);
	check_size();
	check_range(off, len, "read back after write");
}

static void do_mapread(void)
{
	off_t off, len, pg;
	unsigned which;
	int fd, sig;
	struct logent *e;
	unsigned char *p;

	if (fsize == 0) {
		counts[OP_MAPREAD]--;
		counts[OP_READ]++;
		do_read();
		return;
	}
	pick_range(&off, &len, 1);
	if (off + len > fsize)
		len = fsize - off;
	fd = pick_fd(&which);
	e = log_op(OP_MAPREAD, which, off, len);
	pg = off & ~(off_t)(pagesize - 1);
	p = mmap(NULL, (size_t)(off + len - pg), PROT_READ, MAP_SHARED, fd, pg);
	if (p == MAP_FAILED)
		fail_errno("mmap PROT_READ");
	in_map = 1;
	if ((sig = sigsetjmp(bus_jmp, 1)) != 0) {
		in_map = 0;
		fail("signal %d (%s) reading the mapping 0x%jx +0x%jx", sig, strsignal(sig),
		     (intmax_t)off, (intmax_t)len);
	}
	memcpy(tmp, p + (off - pg), (size_t)len);
	in_map = 0;
	if (munmap(p, (size_t)(off + len - pg)) < 0)
		fail_errno("munmap");
	log_done(e);
	compare(tmp, off, len, len, "mapread");
}

static void do_mapwrite(void)
{
	off_t off, len, pg;
	int sig;
	struct logent *e;
	unsigned char *p;

	need_rw();
	pick_range(&off, &len, rnd(2));
	e = log_op(OP_MAPWRITE, 0, off, len);
	if (off + len > fsize) {
		/* a mapping cannot extend a file: grow it first */
		if (ftruncate(rwfd, off + len) < 0)
			fail_errno("ftruncate before mapwrite");
		model_truncate(off + len);
		e->note = "grown by ftruncate first";
	}
	pg = off & ~(off_t)(pagesize - 1);
	p = mmap(NULL, (size_t)(off + len - pg), PROT_READ | PROT_WRITE, MAP_SHARED, rwfd, pg);
	if (p == MAP_FAILED)
		fail_errno("mmap PROT_READ|PROT_WRITE");
	fill(tmp, off, len);
	in_map = 1;
	if ((sig = sigsetjmp(bus_jmp, 1)) != 0) {
		in_map = 0;
		fail("signal %d (%s) writing the mapping 0x%jx +0x%jx", sig, strsignal(sig),
		     (intmax_t)off, (intmax_t)len);
	}
	memcpy(p + (off - pg), tmp, (size_t)len);
	in_map = 0;
	model_write(off, tmp, len);
	if (msync(p, (size_t)(off + len - pg), MS_SYNC) < 0)
		fail_errno("msync MS_SYNC");
	if (munmap(p, (size_t)(off + len - pg)) < 0)
		fail_errno("munmap");
	log_done(e);
	check_size();
	check_range(off, len, "read back after mapwrite");
}

static void do_truncate(void)
{
	off_t size, old = fsize, from, to;
	unsigned bypath = rnd(4) == 0;
	struct logent *e;

	need_rw();
	switch (rnd(3)) {
	case 0: size = (off_t)rnd((uint64_t)maxlen + 1); break;
	case 1: size = fsize ? (off_t)rnd((uint64_t)fsize) : 0; break; /* shrink */
	default: /* grow by up to maxop */
		size = fsize + 1 + (off_t)rnd((uint64_t)maxop);
		if (size > maxlen)
			size = maxlen;
	}
	e = log_op(OP_TRUNCATE, bypath, size, 0);
	if (bypath ? truncate(path, size) : ftruncate(rwfd, size))
		fail_errno(bypath ? "truncate(2) by path" : "ftruncate");
	model_truncate(size);
	log_done(e);
	check_size();
	/* around the old and the new end */
	from = (size < old ? size : old) - 256;
	to = (size > old ? size : old) + 256;
	if (from < 0)
		from = 0;
	check_range(from, to - from, "read back after truncate");
}

static void do_fallocate(int op)
{
	static const unsigned zmodes[] = { FALLOC_FL_ZERO_RANGE, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE };
	off_t off, len;
	unsigned mode;
	struct logent *e;

	need_rw();
	pick_range(&off, &len, rnd(3) != 0);
	switch (op) {
	case OP_FALLOC: mode = rnd(2) ? FALLOC_FL_KEEP_SIZE : 0; break;
	case OP_PUNCH: mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE; break;
	default: mode = zmodes[rnd(2)];
	}
	e = log_op(op, mode, off, len);
	if (fallocate(rwfd, (int)mode, off, len) < 0)
		fail_errno(fallocmode(mode));
	if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))
		model_zero(off, off + len);
	if (!(mode & FALLOC_FL_KEEP_SIZE) && off + len > fsize)
		model_truncate(off + len);
	log_done(e);
	check_size();
	check_range(off, len + 64, "read back after fallocate");
}

static void do_fsync(void)
{
	unsigned data = rnd(2);
	int fd = rwfd >= 0 ? rwfd : rofd;
	struct logent *e = log_op(OP_FSYNC, data, 0, 0);

	if ((data ? fdatasync(fd) : fsync(fd)) < 0)
		fail_errno(data ? "fdatasync" : "fsync");
	log_done(e);
}

static void do_inval(void)
{
	struct logent *e = log_op(OP_INVAL, 0, 0, 0);
	int err;

	if (rwfd >= 0 && (err = posix_fadvise(rwfd, 0, 0, POSIX_FADV_DONTNEED))) {
		errno = err;
		fail_errno("posix_fadvise DONTNEED");
	}
	if (rofd >= 0 && (err = posix_fadvise(rofd, 0, 0, POSIX_FADV_DONTNEED))) {
		errno = err;
		fail_errno("posix_fadvise DONTNEED");
	}
	log_done(e);
	check_all("full compare after dropping the cached pages");
}

/* copy_file_range inside the file, from a range that does not overlap the
 * destination (the kernel refuses that), through either descriptor */
static void do_copyrange(void)
{
	off_t src, dst, len, done = 0;
	unsigned which;
	int in;
	struct logent *e;

	if (fsize == 0) {
		counts[OP_COPYRANGE]--;
		counts[OP_WRITE]++;
		do_write();
		return;
	}
	need_rw();
	src = (off_t)rnd((uint64_t)fsize);
	len = 1 + (off_t)rnd((uint64_t)maxop);
	if (src + len > fsize)
		len = fsize - src;
	if (opt_direct) {
		/* whole blocks, inside the file (a partial last block
		 * would be an unaligned length) */
		src = align_down(src);
		len = align_up(len);
		if (src + len > align_down(fsize))
			len = align_down(fsize) - src;
		if (len <= 0) {
			counts[OP_COPYRANGE]--;
			counts[OP_READ]++;
			do_read();
			return;
		}
	}
	dst = align_down((off_t)rnd((uint64_t)(maxlen - len + 1)));
	if (dst < src + len && src < dst + len) {
		/* overlapping: put the destination right after the source,
		 * or before it */
		if (src + 2 * len <= maxlen)
			dst = src + len;
		else if (src >= len)
			dst = src - len;
		else {
			counts[OP_COPYRANGE]--;
			counts[OP_READ]++;
			do_read();
			return;
		}
	}
	in = pick_fd(&which);
	e = log_op(OP_COPYRANGE, which, dst, len);
	e->src = src;
	while (done < len) {
		loff_t si = src + done, di = dst + done;
		ssize_t n = copy_file_range(in, &si, rwfd, &di, (size_t)(len - done), 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			fail_errno("copy_file_range");
		}
		if (n == 0)
			fail("copy_file_range from 0x%jx to 0x%jx of 0x%jx bytes copied nothing (model size 0x%jx)",
			     (intmax_t)(src + done), (intmax_t)(dst + done), (intmax_t)(len - done),
			     (intmax_t)fsize);
		done += n;
	}
	/* the ranges do not overlap: the source is unchanged by the copy */
	memcpy(tmp, good + src, (size_t)len);
	model_write(dst, tmp, len);
	log_done(e);
	check_size();
	check_range(dst, len, "read back after copy_file_range");
}

/* SEEK_DATA and SEEK_HOLE say nothing wrong about the model: what SEEK_DATA
 * skips and where SEEK_HOLE lands are zeros; past the end, ENXIO */
static void do_seek(void)
{
	unsigned which, hole = (unsigned)rnd(2);
	int fd = pick_fd(&which);
	off_t off = (off_t)rnd((uint64_t)fsize + (uint64_t)pagesize), r, i;
	struct logent *e = log_op(OP_SEEK, which | (hole << 1), off, 0);

	r = lseek(fd, off, hole ? SEEK_HOLE : SEEK_DATA);
	e->src = r;
	log_done(e);
	if (off >= fsize) {
		if (r >= 0 || errno != ENXIO)
			fail("%s at 0x%jx, at or past the end (model size 0x%jx): %jd, %s instead of ENXIO",
			     hole ? "SEEK_HOLE" : "SEEK_DATA", (intmax_t)off, (intmax_t)fsize, (intmax_t)r,
			     r < 0 ? strerrorname_np(errno) : "success");
		return;
	}
	if (r < 0 && !(errno == ENXIO && !hole))
		fail_errno(hole ? "lseek SEEK_HOLE" : "lseek SEEK_DATA");
	if (r < 0)
		r = fsize; /* no data after off */
	if (r < off || r > fsize)
		fail("%s at 0x%jx answered 0x%jx, outside [0x%jx, 0x%jx] (the model size)",
		     hole ? "SEEK_HOLE" : "SEEK_DATA", (intmax_t)off, (intmax_t)r, (intmax_t)off, (intmax_t)fsize);
	if (hole) {
		if (r < fsize && good[r])
			fail("SEEK_HOLE at 0x%jx answered 0x%jx, where the model has data (0x%02x, written by op #%" PRIu32 ")",
			     (intmax_t)off, (intmax_t)r, good[r], writer[r]);
		return;
	}
	for (i = off; i < r; i++)
		if (good[i])
			fail("SEEK_DATA at 0x%jx answered 0x%jx, skipping data at 0x%jx (0x%02x, written by op #%" PRIu32 ")",
			     (intmax_t)off, (intmax_t)r, (intmax_t)i, good[i], writer[i]);
}

static int pick_op(void)
{
	unsigned total = 0, r, i;

	for (i = 0; i < OP_NR; i++)
		total += weights[i];
	r = (unsigned)rnd(total);
	for (i = 0; i < OP_NR; i++) {
		if (r < weights[i])
			return (int)i;
		r -= weights[i];
	}
	return OP_READ;
}

/* ------------------------------------------------------------ main */

static int usage(void)
{
	fprintf(stderr,
		"usage: fsx [-S seed] [-N ops] [-l maxlen] [-o maxop] [-c cmp_every] [-R reopen_every]\n"
		"           [-e] [-d] [-Z] [-M] [-F] [-T] [-P] [-C] [-H] [-w modelfile] [-L loglen] [-v|-q] FILE\n");
	return 2;
}

static int parse_num(const char *s, unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': *v <<= 10; end++; break;
	case 'm': case 'M': *v <<= 20; end++; break;
	}
	return *end ? -1 : 0;
}

static void make_replay(int argc, char **argv)
{
	size_t n = 0;
	int i, have_seed = 0;

	for (i = 0; i < argc; i++)
		if (!strncmp(argv[i], "-S", 2))
			have_seed = 1;
	for (i = 0; i < argc && n < sizeof(replay_cmd) - 64; i++)
		n += (size_t)snprintf(replay_cmd + n, sizeof(replay_cmd) - n, "%s'%s'", i ? " " : "", argv[i]);
	if (!have_seed && n < sizeof(replay_cmd) - 32)
		snprintf(replay_cmd + n, sizeof(replay_cmd) - n, " -S %" PRIu64, seed);
}

int main(int argc, char **argv)
{
	unsigned long long v = 0;
	struct sigaction sa;
	struct timeval tv;
	unsigned long i;
	int c, op;
	struct stat st;
	off_t got;

	gettimeofday(&tv, NULL);
	seed = ((uint64_t)tv.tv_sec * 1000003u) ^ (uint64_t)tv.tv_usec ^ ((uint64_t)getpid() << 20);
	while ((c = getopt(argc, argv, "S:N:l:o:c:R:edZMFTPCHw:L:vq")) != -1) {
		if (strchr("SNlocRL", c) && parse_num(optarg, &v) < 0) {
			fprintf(stderr, "fsx: -%c: not a number: %s\n", c, optarg);
			return usage();
		}
		switch (c) {
		case 'S': seed = v; break;
		case 'N': nops = (unsigned long)v; break;
		case 'l': maxlen = (off_t)v; break;
		case 'o': maxop = (off_t)v; break;
		case 'c': cmp_every = (unsigned long)v; break;
		case 'R': reopen_every = (unsigned long)v; break;
		case 'L': loglen = v ? (unsigned)v : 1; break;
		case 'e': opt_existing = 1; break;
		case 'd': opt_dual = 1; break;
		case 'Z': opt_direct = 1; break;
		case 'M': weights[OP_MAPREAD] = weights[OP_MAPWRITE] = 0; break;
		case 'F': weights[OP_FALLOC] = weights[OP_PUNCH] = weights[OP_ZERO] = 0; break;
		case 'T': weights[OP_TRUNCATE] = 0; break;
		case 'P': weights[OP_INVAL] = 0; break;
		case 'C': weights[OP_COPYRANGE] = 0; break;
		case 'H': weights[OP_SEEK] = 0; break;
		case 'w': dump_path = optarg; break;
		case 'v': verbose = 1; break;
		case 'q': quiet = 1; break;
		default: return usage();
		}
	}
	if (optind != argc - 1)
		return usage();
	path = argv[optind];
	if (maxlen < 1 || maxop < 1) {
		fprintf(stderr, "fsx: -l and -o must be at least 1\n");
		return 2;
	}
	make_replay(argc, argv);
	rng = seed;
	pagesize = sysconf(_SC_PAGESIZE);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = bus_handler;
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);

	oplog = calloc(loglen, sizeof(*oplog));
	if (opt_existing) {
		if (stat(path, &st) < 0) {
			fprintf(stderr, "fsx: %s: %s\n", path, strerror(errno));
			return 2;
		}
		if (st.st_size > maxlen)
			maxlen = st.st_size;
	}
	maxlen = align_up(maxlen);
	if (opt_direct && maxop < DIO_ALIGN)
		maxop = DIO_ALIGN;
	if (maxop > maxlen)
		maxop = maxlen;
	good = calloc((size_t)maxlen + (size_t)pagesize, 1);
	writer = calloc((size_t)maxlen + (size_t)pagesize, sizeof(*writer));
	/* aligned for O_DIRECT */
	if (posix_memalign((void **)&tmp, (size_t)DIO_ALIGN, (size_t)maxlen + 2 * (size_t)pagesize))
		tmp = NULL;
	if (!oplog || !good || !writer || !tmp) {
		fprintf(stderr, "fsx: out of memory\n");
		return 2;
	}

	open_files(1);
	if (opt_existing) {
		/* the initial content is what the file holds now */
		got = read_full(rofd, tmp, maxlen, 0, "reading the initial content");
		memcpy(good, tmp, (size_t)got);
		if (fstat(rofd, &st) < 0)
			fail_errno("fstat");
		if (got != st.st_size)
			fail("read 0x%jx bytes of the initial content, st_size says 0x%jx",
			     (intmax_t)got, (intmax_t)st.st_size);
		fsize = got;
	}
	if (!quiet)
		printf("fsx: %s, seed %" PRIu64 ", %lu ops, maxlen 0x%jx, maxop 0x%jx%s%s%s\n", path, seed,
		       nops, (intmax_t)maxlen, (intmax_t)maxop, opt_existing ? ", existing file" : "",
		       opt_dual ? ", two descriptors" : "", opt_direct ? ", O_DIRECT" : "");
	check_all("initial compare");

	for (i = 1; i <= nops; i++) {
		opno = i;
		if (reopen_every && rnd(reopen_every) == 0)
			op = OP_REOPEN;
		else
			op = pick_op();
		counts[op]++;
		switch (op) {
		case OP_READ: do_read(); break;
		case OP_WRITE: do_write(); break;
		case OP_MAPREAD: do_mapread(); break;
		case OP_MAPWRITE: do_mapwrite(); break;
		case OP_TRUNCATE: do_truncate(); break;
		case OP_FALLOC: case OP_PUNCH: case OP_ZERO: do_fallocate(op); break;
		case OP_FSYNC: do_fsync(); break;
		case OP_INVAL: do_inval(); break;
		case OP_COPYRANGE: do_copyrange(); break;
		case OP_SEEK: do_seek(); break;
		case OP_REOPEN: do_reopen(); break;
		}
		if (cmp_every && i % cmp_every == 0)
			check_all("periodic full compare");
	}
	opno = nops + 1;
	/* the end: sync, close, reopen, compare everything */
	if (rwfd >= 0 && fsync(rwfd) < 0)
		fail_errno("final fsync");
	do_reopen();
	if (rwfd >= 0)
		close(rwfd);
	if (rofd >= 0)
		close(rofd);
	dump_model();
	if (!quiet) {
		printf("fsx: counts:");
		for (c = 0; c < OP_NR; c++)
			printf(" %s %lu", op_names[c], counts[c]);
		printf("; final size 0x%jx\n", (intmax_t)fsize);
	}
	printf("fsx: %lu ops, seed %" PRIu64 ", ok\n", nops, seed);
	return 0;
}
