/* ptprobe: the pass-through system calls the shell tools cannot make
 * exactly (a given buffer size, a given flag, UTIME_OMIT...), for the
 * tests/8x-*.bats files. On success prints "OK" and what the call returns;
 * on failure prints the errno name (ERANGE, EOPNOTSUPP, ...) and exits 1.
 * Usage errors exit 2.
 *
 *   ptprobe utimens PATH ATIME MTIME [nofollow]
 *            each time: now | omit | SEC[.NSEC] (SEC may be negative;
 *            NSEC is the digits after the point, up to 9)
 *   ptprobe getxattr PATH NAME SIZE       prints "OK LEN" (SIZE 0: the
 *            size query)
 *   ptprobe listxattr PATH SIZE           prints "OK LEN", then the names,
 *            one a line, when SIZE > 0
 *   ptprobe setxattr PATH NAME VALUE [create|replace]
 *            VALUE: text, or @FILE for the bytes of FILE
 *   ptprobe removexattr PATH NAME
 *   ptprobe fallocate PATH MODE OFF LEN   MODE: 0 or a comma list of
 *            keep,punch,zero,collapse,insert,unshare
 *   ptprobe posix_fallocate PATH OFF LEN  glibc's posix_fallocate(3)
 *   ptprobe seek PATH                     the file as SEEK_DATA/SEEK_HOLE
 *            see it: "data START END" and "hole START END" lines
 *   ptprobe copy_range SRC DST OFF_IN OFF_OUT LEN   copy_file_range(2)
 *            until LEN bytes are copied or it returns 0; "OK COPIED"
 *   ptprobe fsxattr PATH [xflags=HEX] [extsize=N] [projid=N]
 *            FS_IOC_FSGETXATTR; with fields, changes them and
 *            FS_IOC_FSSETXATTR first (extsize=N also sets or clears
 *            FS_XFLAG_EXTSIZE). Prints "OK xflags=0xHEX extsize=N projid=N"
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#ifndef FALLOC_FL_UNSHARE_RANGE
#define FALLOC_FL_UNSHARE_RANGE 0x40
#endif

static const char *ename(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "E?";
}

static int fail_errno(int e)
{
	printf("%s\n", ename(e));
	return 1;
}

static int fail(void)
{
	return fail_errno(errno);
}

static int usage(void)
{
	fprintf(stderr, "usage: ptprobe OP ARGS... (see the source)\n");
	return 2;
}

static int parse_ll(const char *s, long long *out)
{
	char *end;

	errno = 0;
	*out = strtoll(s, &end, 0);
	return (errno || end == s || *end) ? -1 : 0;
}

/* now | omit | [-]SEC[.NSEC] */
static int parse_time(const char *s, struct timespec *ts)
{
	const char *dot = strchr(s, '.');
	char secs[64];
	long long sec;
	long ns = 0;
	int digits = 0;

	if (!strcmp(s, "now")) {
		ts->tv_sec = 0;
		ts->tv_nsec = UTIME_NOW;
		return 0;
	}
	if (!strcmp(s, "omit")) {
		ts->tv_sec = 0;
		ts->tv_nsec = UTIME_OMIT;
		return 0;
	}
	if (dot) {
		size_t n = (size_t)(dot - s);

		if (n >= sizeof(secs))
			return -1;
		memcpy(secs, s, n);
		secs[n] = 0;
		for (const char *p = dot + 1; *p; p++, digits++) {
			if (*p < '0' || *p > '9' || digits >= 9)
				return -1;
			ns = ns * 10 + (*p - '0');
		}
		for (; digits < 9; digits++)
			ns *= 10;
	} else {
		snprintf(secs, sizeof(secs), "%s", s);
	}
	if (parse_ll(secs, &sec) < 0)
		return -1;
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = ns;
	return 0;
}

static int op_utimens(int argc, char **argv)
{
	struct timespec ts[2];
	int fl = 0;

	if (argc < 3 || parse_time(argv[1], &ts[0]) < 0 || parse_time(argv[2], &ts[1]) < 0)
		return usage();
	if (argc > 3) {
		if (strcmp(argv[3], "nofollow"))
			return usage();
		fl = AT_SYMLINK_NOFOLLOW;
	}
	if (utimensat(AT_FDCWD, argv[0], ts, fl) < 0)
		return fail();
	printf("OK\n");
	return 0;
}

static int op_getxattr(int argc, char **argv)
{
	long long size;
	char *buf;
	ssize_t n;

	if (argc != 3 || parse_ll(argv[2], &size) < 0 || size < 0)
		return usage();
	buf = malloc(size ? (size_t)size : 1);
	if (!buf)
		return fail();
	n = getxattr(argv[0], argv[1], size ? buf : NULL, (size_t)size);
	free(buf);
	if (n < 0)
		return fail();
	printf("OK %zd\n", n);
	return 0;
}

static int op_listxattr(int argc, char **argv)
{
	long long size;
	char *buf;
	ssize_t n;

	if (argc != 2 || parse_ll(argv[1], &size) < 0 || size < 0)
		return usage();
	buf = malloc(size ? (size_t)size : 1);
	if (!buf)
		return fail();
	n = listxattr(argv[0], size ? buf : NULL, (size_t)size);
	if (n < 0) {
		int e = errno;

		free(buf);
		return fail_errno(e);
	}
	printf("OK %zd\n", n);
	for (ssize_t i = 0; size && i < n; i += (ssize_t)strlen(buf + i) + 1)
		printf("%s\n", buf + i);
	free(buf);
	return 0;
}

static char *read_value(const char *spec, size_t *len)
{
	FILE *f;
	char *buf;
	long sz;

	if (spec[0] != '@') {
		*len = strlen(spec);
		return strdup(spec);
	}
	f = fopen(spec + 1, "rb");
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) < 0 || (sz = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0) {
		fclose(f);
		return NULL;
	}
	buf = malloc(sz ? (size_t)sz : 1);
	if (buf && fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = (size_t)sz;
	return buf;
}

static int op_setxattr(int argc, char **argv)
{
	int fl = 0, r;
	size_t len;
	char *v;

	if (argc < 3 || argc > 4)
		return usage();
	if (argc == 4) {
		if (!strcmp(argv[3], "create"))
			fl = XATTR_CREATE;
		else if (!strcmp(argv[3], "replace"))
			fl = XATTR_REPLACE;
		else
			return usage();
	}
	v = read_value(argv[2], &len);
	if (!v) {
		fprintf(stderr, "ptprobe: cannot read the value %s: %s\n", argv[2], strerror(errno));
		return 2;
	}
	r = setxattr(argv[0], argv[1], v, len, fl);
	free(v);
	if (r < 0)
		return fail();
	printf("OK\n");
	return 0;
}

static int op_removexattr(int argc, char **argv)
{
	if (argc != 2)
		return usage();
	if (removexattr(argv[0], argv[1]) < 0)
		return fail();
	printf("OK\n");
	return 0;
}

static int parse_mode(const char *s, int *out)
{
	char *dup, *save = NULL, *tok;
	int m = 0;

	if (!strcmp(s, "0")) {
		*out = 0;
		return 0;
	}
	dup = strdup(s);
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "keep")) m |= FALLOC_FL_KEEP_SIZE;
		else if (!strcmp(tok, "punch")) m |= FALLOC_FL_PUNCH_HOLE;
		else if (!strcmp(tok, "zero")) m |= FALLOC_FL_ZERO_RANGE;
		else if (!strcmp(tok, "collapse")) m |= FALLOC_FL_COLLAPSE_RANGE;
		else if (!strcmp(tok, "insert")) m |= FALLOC_FL_INSERT_RANGE;
		else if (!strcmp(tok, "unshare")) m |= FALLOC_FL_UNSHARE_RANGE;
		else {
			free(dup);
			return -1;
		}
	}
	free(dup);
	*out = m;
	return 0;
}

static int op_fallocate(int argc, char **argv)
{
	long long off, len;
	int mode, fd;

	if (argc != 4 || parse_mode(argv[1], &mode) < 0 || parse_ll(argv[2], &off) < 0 ||
	    parse_ll(argv[3], &len) < 0)
		return usage();
	fd = open(argv[0], O_RDWR);
	if (fd < 0)
		return fail();
	if (fallocate(fd, mode, off, len) < 0)
		return fail();
	if (close(fd) < 0)
		return fail();
	printf("OK\n");
	return 0;
}

static int op_posix_fallocate(int argc, char **argv)
{
	long long off, len;
	int fd, r;

	if (argc != 3 || parse_ll(argv[1], &off) < 0 || parse_ll(argv[2], &len) < 0)
		return usage();
	fd = open(argv[0], O_RDWR);
	if (fd < 0)
		return fail();
	r = posix_fallocate(fd, off, len);
	if (r)
		return fail_errno(r);
	if (close(fd) < 0)
		return fail();
	printf("OK\n");
	return 0;
}

static int op_seek(int argc, char **argv)
{
	struct stat st;
	off_t pos = 0;
	int fd;

	if (argc != 1)
		return usage();
	fd = open(argv[0], O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0)
		return fail();
	printf("OK\n");
	while (pos < st.st_size) {
		off_t data = lseek(fd, pos, SEEK_DATA), hole;

		if (data < 0 && errno == ENXIO) {
			printf("hole %jd %jd\n", (intmax_t)pos, (intmax_t)st.st_size);
			break;
		}
		if (data < 0)
			return fail();
		if (data > pos)
			printf("hole %jd %jd\n", (intmax_t)pos, (intmax_t)data);
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0)
			return fail();
		printf("data %jd %jd\n", (intmax_t)data, (intmax_t)hole);
		pos = hole;
	}
	close(fd);
	return 0;
}

static int op_copy_range(int argc, char **argv)
{
	long long oi, oo, len;
	long long done = 0;
	int in, out;

	if (argc != 5 || parse_ll(argv[2], &oi) < 0 || parse_ll(argv[3], &oo) < 0 ||
	    parse_ll(argv[4], &len) < 0)
		return usage();
	in = open(argv[0], O_RDONLY);
	if (in < 0)
		return fail();
	out = open(argv[1], O_WRONLY | O_CREAT, 0644);
	if (out < 0)
		return fail();
	while (done < len) {
		loff_t a = oi + done, b = oo + done;
		ssize_t n = copy_file_range(in, &a, out, &b, (size_t)(len - done), 0);

		if (n < 0)
			return fail();
		if (n == 0)
			break;
		done += n;
	}
	if (close(out) < 0)
		return fail();
	close(in);
	printf("OK %lld\n", done);
	return 0;
}

static int op_fsxattr(int argc, char **argv)
{
	struct fsxattr fa;
	bool set = false;
	int fd;

	if (argc < 1)
		return usage();
	fd = open(argv[0], O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return fail();
	if (ioctl(fd, FS_IOC_FSGETXATTR, &fa) < 0)
		return fail();
	for (int i = 1; i < argc; i++) {
		const char *eq = strchr(argv[i], '=');
		long long v;

		if (!eq || parse_ll(eq + 1, &v) < 0)
			return usage();
		if (!strncmp(argv[i], "xflags=", 7)) {
			fa.fsx_xflags = (__u32)v;
		} else if (!strncmp(argv[i], "extsize=", 8)) {
			fa.fsx_extsize = (__u32)v;
			if (v)
				fa.fsx_xflags |= FS_XFLAG_EXTSIZE;
			else
				fa.fsx_xflags &= ~(__u32)FS_XFLAG_EXTSIZE;
		} else if (!strncmp(argv[i], "projid=", 7)) {
			fa.fsx_projid = (__u32)v;
		} else {
			return usage();
		}
		set = true;
	}
	if (set && (ioctl(fd, FS_IOC_FSSETXATTR, &fa) < 0 || ioctl(fd, FS_IOC_FSGETXATTR, &fa) < 0))
		return fail();
	close(fd);
	printf("OK xflags=0x%x extsize=%u projid=%u\n", fa.fsx_xflags, fa.fsx_extsize, fa.fsx_projid);
	return 0;
}

int main(int argc, char **argv)
{
	const char *op;

	if (argc < 3)
		return usage();
	op = argv[1];
	argc -= 2;
	argv += 2;
	if (!strcmp(op, "utimens"))
		return op_utimens(argc, argv);
	if (!strcmp(op, "getxattr"))
		return op_getxattr(argc, argv);
	if (!strcmp(op, "listxattr"))
		return op_listxattr(argc, argv);
	if (!strcmp(op, "setxattr"))
		return op_setxattr(argc, argv);
	if (!strcmp(op, "removexattr"))
		return op_removexattr(argc, argv);
	if (!strcmp(op, "fallocate"))
		return op_fallocate(argc, argv);
	if (!strcmp(op, "posix_fallocate"))
		return op_posix_fallocate(argc, argv);
	if (!strcmp(op, "seek"))
		return op_seek(argc, argv);
	if (!strcmp(op, "copy_range"))
		return op_copy_range(argc, argv);
	if (!strcmp(op, "fsxattr"))
		return op_fsxattr(argc, argv);
	return usage();
}
