/* cuprobe: system calls the copy-up, whiteout and rename tests need to
 * see exactly (errno names, descriptors held across a copy-up, data
 * segments, readdir inode numbers). Failures print the errno name and exit
 * 1; usage errors exit 2.
 *
 *   cuprobe rename OLD NEW [noreplace|exchange]
 *            renameat2; prints OK or the errno name (EEXIST, EXDEV...)
 *   cuprobe twofds PATH DATA
 *            opens PATH O_RDONLY, reads it whole, then opens it O_RDWR
 *            (the copy-up), writes DATA at offset 0 through the second
 *            descriptor, drops the cached pages, and reads through the first
 *            one again. Prints "before=<old content>", "after=<content read
 *            through the read-only descriptor>" and "same_ino=yes|no" (the
 *            two descriptors' fstat st_ino).
 *   cuprobe readafter PATH CMD...
 *            opens PATH O_RDONLY, runs CMD (sh -c "CMD..."), drops the
 *            cached pages of the descriptor and prints what it reads
 *            from offset 0, then "ino_before=N ino_after=N" (fstat).
 *   cuprobe segments PATH
 *            the data segments of PATH by SEEK_DATA/SEEK_HOLE, one
 *            "START END" line each, then "size N".
 *   cuprobe xchgrace DIR N
 *            for i below N: RENAME_EXCHANGE of DIR/aI and DIR/cI while a
 *            child opens DIR/d/bI (another name of aI, a lower hard link)
 *            for writing, which copies the file up through that name at
 *            the same moment. Prints "I: ERRNO" for each exchange that
 *            failed, then "F of N failed"; exits 1 if any did.
 *   cuprobe dirino DIR [BUFSIZE]
 *            lists DIR with getdents64 and a BUFSIZE-byte buffer (default
 *            80, so many calls are needed), "NAME D_INO" per entry
 *            (without . and ..).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *ename(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "E?";
}

static int fail(const char *what)
{
	int e = errno;

	if (what)
		printf("%s: ", what);
	printf("%s\n", ename(e));
	return 1;
}

static int usage(void)
{
	fprintf(stderr, "usage: cuprobe OP ARGS... (see the source)\n");
	return 2;
}

static int op_rename(int argc, char **argv)
{
	unsigned fl = 0;

	if (argc < 2 || argc > 3)
		return usage();
	if (argc == 3) {
		if (!strcmp(argv[2], "noreplace"))
			fl = RENAME_NOREPLACE;
		else if (!strcmp(argv[2], "exchange"))
			fl = RENAME_EXCHANGE;
		else
			return usage();
	}
	if (renameat2(AT_FDCWD, argv[0], AT_FDCWD, argv[1], fl) < 0)
		return fail(NULL);
	printf("OK\n");
	return 0;
}

/* Reads fd from offset 0 into buf (NUL-terminated), at most len-1 bytes. */
static ssize_t read_all(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got < len - 1) {
		ssize_t n = pread(fd, buf + got, len - 1 - got, (off_t)got);

		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	return (ssize_t)got;
}

static int op_twofds(int argc, char **argv)
{
	static char buf[1 << 16];
	struct stat s1, s2;
	size_t len;
	int fd1, fd2;

	if (argc != 2)
		return usage();
	len = strlen(argv[1]);
	fd1 = open(argv[0], O_RDONLY | O_CLOEXEC);
	if (fd1 < 0)
		return fail("open rdonly");
	if (read_all(fd1, buf, sizeof(buf)) < 0)
		return fail("read before");
	printf("before=%s\n", buf);
	fd2 = open(argv[0], O_RDWR | O_CLOEXEC);
	if (fd2 < 0)
		return fail("open rdwr");
	if (pwrite(fd2, argv[1], len, 0) != (ssize_t)len)
		return fail("pwrite");
	/* what the read-only descriptor reads next must come from the
	 * daemon, not from pages the kernel kept */
	posix_fadvise(fd1, 0, 0, POSIX_FADV_DONTNEED);
	posix_fadvise(fd2, 0, 0, POSIX_FADV_DONTNEED);
	if (read_all(fd1, buf, sizeof(buf)) < 0)
		return fail("read after");
	printf("after=%s\n", buf);
	if (fstat(fd1, &s1) < 0 || fstat(fd2, &s2) < 0)
		return fail("fstat");
	printf("same_ino=%s\n", s1.st_ino == s2.st_ino ? "yes" : "no");
	close(fd2);
	close(fd1);
	return 0;
}

static int op_readafter(int argc, char **argv)
{
	static char buf[1 << 16];
	struct stat s1, s2;
	char cmd[8192] = "";
	int fd, st;

	if (argc < 2)
		return usage();
	for (int i = 1; i < argc; i++) {
		if (strlen(cmd) + strlen(argv[i]) + 2 > sizeof(cmd))
			return usage();
		strcat(cmd, argv[i]);
		strcat(cmd, i + 1 < argc ? " " : "");
	}
	fd = open(argv[0], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail("open");
	if (fstat(fd, &s1) < 0)
		return fail("fstat");
	st = system(cmd);
	if (st != 0) {
		printf("command failed: %d\n", st);
		return 1;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (read_all(fd, buf, sizeof(buf)) < 0)
		return fail("read");
	if (fstat(fd, &s2) < 0)
		return fail("fstat");
	printf("%s", buf);
	printf("ino_before=%llu ino_after=%llu\n", (unsigned long long)s1.st_ino,
	       (unsigned long long)s2.st_ino);
	close(fd);
	return 0;
}

static int op_segments(int argc, char **argv)
{
	struct stat st;
	off_t pos = 0;
	int fd;

	if (argc != 1)
		return usage();
	fd = open(argv[0], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail("open");
	if (fstat(fd, &st) < 0)
		return fail("fstat");
	while (pos < st.st_size) {
		off_t data = lseek(fd, pos, SEEK_DATA), hole;

		if (data < 0) {
			if (errno == ENXIO)
				break;
			return fail("SEEK_DATA");
		}
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0)
			return fail("SEEK_HOLE");
		printf("%lld %lld\n", (long long)data, (long long)hole);
		pos = hole;
	}
	printf("size %lld\n", (long long)st.st_size);
	close(fd);
	return 0;
}

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static int op_dirino(int argc, char **argv)
{
	size_t bufsize = 80;
	char *buf;
	int fd;

	if (argc < 1 || argc > 2)
		return usage();
	if (argc == 2)
		bufsize = strtoul(argv[1], NULL, 0);
	buf = malloc(bufsize);
	fd = open(argv[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!buf || fd < 0)
		return fail("open");
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, bufsize);

		if (n < 0)
			return fail("getdents64");
		if (n == 0)
			break;
		for (long pos = 0; pos < n;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + pos);

			pos += d->d_reclen;
			if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
				continue;
			printf("%s %llu\n", d->d_name, (unsigned long long)d->d_ino);
		}
	}
	close(fd);
	free(buf);
	return 0;
}

/* One round of xchgrace: the child's open is let go just before the
 * exchange (the pipe's close), so the two meet in the daemon. */
static int xchg_round(unsigned i)
{
	char a[32], b[32], c[32], x;
	int p[2], e = 0;
	pid_t k;

	snprintf(a, sizeof(a), "a%u", i);
	snprintf(b, sizeof(b), "d/b%u", i);
	snprintf(c, sizeof(c), "c%u", i);
	/* the three are known to the kernel (and the daemon) beforehand */
	if (access(a, F_OK) < 0 || access(b, F_OK) < 0 || access(c, F_OK) < 0 || pipe(p) < 0)
		return errno;
	k = fork();
	if (k == 0) {
		close(p[1]);
		if (read(p[0], &x, 1) < 0)
			_exit(1);
		_exit(open(b, O_WRONLY) < 0);
	}
	close(p[0]);
	close(p[1]);
	if (k < 0 || renameat2(AT_FDCWD, a, AT_FDCWD, c, RENAME_EXCHANGE) < 0)
		e = errno;
	if (k > 0)
		waitpid(k, NULL, 0);
	return e;
}

static int op_xchgrace(int argc, char **argv)
{
	unsigned n, failed = 0;

	if (argc != 2 || chdir(argv[0]) < 0)
		return argc != 2 ? usage() : fail(argv[0]);
	n = (unsigned)strtoul(argv[1], NULL, 10);
	for (unsigned i = 0; i < n; i++) {
		int e = xchg_round(i);

		if (e) {
			printf("%u: %s\n", i, ename(e));
			failed++;
		}
	}
	printf("%u of %u failed\n", failed, n);
	return failed != 0;
}

int main(int argc, char **argv)
{
	const char *op;

	if (argc < 3)
		return usage();
	op = argv[1];
	argc -= 2;
	argv += 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(op, "rename"))
		return op_rename(argc, argv);
	if (!strcmp(op, "twofds"))
		return op_twofds(argc, argv);
	if (!strcmp(op, "readafter"))
		return op_readafter(argc, argv);
	if (!strcmp(op, "segments"))
		return op_segments(argc, argv);
	if (!strcmp(op, "xchgrace"))
		return op_xchgrace(argc, argv);
	if (!strcmp(op, "dirino"))
		return op_dirino(argc, argv);
	return usage();
}
