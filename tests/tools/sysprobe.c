/* sysprobe: run one system call from the shell and print its result in a
 * form tests can assert. On success prints "OK" (plus what the operation
 * returns, on the following lines); on failure prints the errno name
 * (EEXIST, ENOSPC, ...) and exits 1. Usage errors exit 2.
 *
 *   sysprobe open PATH FLAGS [MODE [DATA]]   FLAGS: comma list of
 *            rdonly,wronly,rdwr,creat,excl,trunc,append,directory,nofollow
 *            DATA is written after opening when given
 *   sysprobe mkdir PATH [MODE]            sysprobe rmdir PATH
 *   sysprobe unlink PATH                  sysprobe link OLD NEW
 *   sysprobe symlink TARGET PATH          sysprobe readlink PATH
 *   sysprobe rename OLD NEW [noreplace|exchange]   (renameat2)
 *   sysprobe mknod PATH fifo|chr|blk|reg MODE [MAJOR MINOR]
 *   sysprobe truncate PATH LEN            sysprobe access PATH F|R|W|X|RW...
 *   sysprobe fsync PATH                   sysprobe fdatasync PATH
 *   sysprobe opendir PATH                 sysprobe statfs PATH
 *   sysprobe fill PATH [MAX_MIB]   write 1 MiB chunks until an error or
 *            MAX_MIB, then fsync and close; prints the failing step
 *            ("write: ENOSPC") or "OK <bytes>".
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static const char *ename(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "E?";
}

static int fail(void)
{
	printf("%s\n", ename(errno));
	return 1;
}

static int ok(void)
{
	printf("OK\n");
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: sysprobe OP ARGS... (see the source)\n");
	return 2;
}

static int parse_flags(const char *s, int *out)
{
	char *dup = strdup(s), *save = NULL, *tok;
	int fl = 0;

	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "rdonly")) fl |= O_RDONLY;
		else if (!strcmp(tok, "wronly")) fl |= O_WRONLY;
		else if (!strcmp(tok, "rdwr")) fl |= O_RDWR;
		else if (!strcmp(tok, "creat")) fl |= O_CREAT;
		else if (!strcmp(tok, "excl")) fl |= O_EXCL;
		else if (!strcmp(tok, "trunc")) fl |= O_TRUNC;
		else if (!strcmp(tok, "append")) fl |= O_APPEND;
		else if (!strcmp(tok, "directory")) fl |= O_DIRECTORY;
		else if (!strcmp(tok, "nofollow")) fl |= O_NOFOLLOW;
		else {
			fprintf(stderr, "sysprobe: unknown open flag %s\n", tok);
			free(dup);
			return -1;
		}
	}
	free(dup);
	*out = fl;
	return 0;
}

static mode_t parse_mode(const char *s)
{
	return (mode_t)strtoul(s, NULL, 8);
}

static int op_open(int argc, char **argv)
{
	int fl, fd;
	mode_t mode = 0644;

	if (argc < 2)
		return usage();
	if (parse_flags(argv[1], &fl) < 0)
		return 2;
	if (argc > 2)
		mode = parse_mode(argv[2]);
	fd = open(argv[0], fl | O_CLOEXEC, mode);
	if (fd < 0)
		return fail();
	if (argc > 3) {
		size_t len = strlen(argv[3]);
		ssize_t n = write(fd, argv[3], len);
		if (n < 0) {
			printf("write: ");
			return fail();
		}
		if ((size_t)n != len) {
			printf("short write %zd of %zu\n", n, len);
			return 1;
		}
	}
	if (close(fd) < 0) {
		printf("close: ");
		return fail();
	}
	return ok();
}

static int op_sync(const char *path, int data)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return fail();
	if ((data ? fdatasync(fd) : fsync(fd)) < 0)
		return fail();
	close(fd);
	return ok();
}

static int op_fill(const char *path, long max_mib)
{
	static char buf[1 << 20];
	long long total = 0;
	int fd;

	memset(buf, 'z', sizeof(buf));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		printf("open: ");
		return fail();
	}
	for (long i = 0; max_mib <= 0 || i < max_mib; i++) {
		size_t off = 0;
		while (off < sizeof(buf)) {
			ssize_t n = write(fd, buf + off, sizeof(buf) - off);
			if (n < 0) {
				printf("write: %s\n", ename(errno));
				close(fd);
				return 1;
			}
			off += (size_t)n;
			total += n;
		}
	}
	if (fsync(fd) < 0) {
		printf("fsync: %s\n", ename(errno));
		close(fd);
		return 1;
	}
	if (close(fd) < 0) {
		printf("close: %s\n", ename(errno));
		return 1;
	}
	printf("OK %lld\n", total);
	return 0;
}

static int op_access(const char *path, const char *how)
{
	int m = 0;

	for (const char *p = how; *p; p++) {
		switch (*p) {
		case 'F': m |= F_OK; break;
		case 'R': m |= R_OK; break;
		case 'W': m |= W_OK; break;
		case 'X': m |= X_OK; break;
		default: return usage();
		}
	}
	if (access(path, m) < 0)
		return fail();
	return ok();
}

static int op_mknod(int argc, char **argv)
{
	mode_t type;
	dev_t dev = 0;

	if (argc < 3)
		return usage();
	if (!strcmp(argv[1], "fifo")) type = S_IFIFO;
	else if (!strcmp(argv[1], "chr")) type = S_IFCHR;
	else if (!strcmp(argv[1], "blk")) type = S_IFBLK;
	else if (!strcmp(argv[1], "reg")) type = S_IFREG;
	else return usage();
	if (argc >= 5)
		dev = makedev(strtoul(argv[3], NULL, 0), strtoul(argv[4], NULL, 0));
	if (mknod(argv[0], type | parse_mode(argv[2]), dev) < 0)
		return fail();
	return ok();
}

int main(int argc, char **argv)
{
	const char *op;

	if (argc < 3)
		return usage();
	op = argv[1];
	argc -= 2;
	argv += 2;

	if (!strcmp(op, "open"))
		return op_open(argc, argv);
	if (!strcmp(op, "mkdir"))
		return mkdir(argv[0], argc > 1 ? parse_mode(argv[1]) : 0755) < 0 ? fail() : ok();
	if (!strcmp(op, "rmdir"))
		return rmdir(argv[0]) < 0 ? fail() : ok();
	if (!strcmp(op, "unlink"))
		return unlink(argv[0]) < 0 ? fail() : ok();
	if (!strcmp(op, "link") && argc == 2)
		return link(argv[0], argv[1]) < 0 ? fail() : ok();
	if (!strcmp(op, "symlink") && argc == 2)
		return symlink(argv[0], argv[1]) < 0 ? fail() : ok();
	if (!strcmp(op, "readlink")) {
		char buf[4096];
		ssize_t n = readlink(argv[0], buf, sizeof(buf) - 1);
		if (n < 0)
			return fail();
		buf[n] = 0;
		printf("OK\n%s\n", buf);
		return 0;
	}
	if (!strcmp(op, "rename") && argc >= 2) {
		unsigned fl = 0;
		if (argc > 2) {
			if (!strcmp(argv[2], "noreplace")) fl = RENAME_NOREPLACE;
			else if (!strcmp(argv[2], "exchange")) fl = RENAME_EXCHANGE;
			else if (strcmp(argv[2], "0")) return usage();
		}
		return renameat2(AT_FDCWD, argv[0], AT_FDCWD, argv[1], fl) < 0 ? fail() : ok();
	}
	if (!strcmp(op, "mknod"))
		return op_mknod(argc, argv);
	if (!strcmp(op, "truncate") && argc == 2)
		return truncate(argv[0], strtoll(argv[1], NULL, 0)) < 0 ? fail() : ok();
	if (!strcmp(op, "access") && argc == 2)
		return op_access(argv[0], argv[1]);
	if (!strcmp(op, "fsync"))
		return op_sync(argv[0], 0);
	if (!strcmp(op, "fdatasync"))
		return op_sync(argv[0], 1);
	if (!strcmp(op, "opendir")) {
		DIR *d = opendir(argv[0]);
		if (!d)
			return fail();
		closedir(d);
		return ok();
	}
	if (!strcmp(op, "statfs")) {
		struct statfs s;
		if (statfs(argv[0], &s) < 0)
			return fail();
		printf("OK\nbsize=%ld frsize=%ld blocks=%llu bfree=%llu bavail=%llu files=%llu ffree=%llu namelen=%ld\n",
		       (long)s.f_bsize, (long)s.f_frsize,
		       (unsigned long long)s.f_blocks, (unsigned long long)s.f_bfree,
		       (unsigned long long)s.f_bavail, (unsigned long long)s.f_files,
		       (unsigned long long)s.f_ffree, (long)s.f_namelen);
		return 0;
	}
	if (!strcmp(op, "fill"))
		return op_fill(argv[0], argc > 1 ? strtol(argv[1], NULL, 0) : 0);
	return usage();
}
