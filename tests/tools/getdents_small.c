/* getdents_small: list a directory with getdents64(2) and a tiny buffer,
 * so that the listing takes many calls and the filesystem must resume at
 * the offsets it handed out.
 *
 *   getdents_small [-b BYTES] [-c N] [-l] DIR
 *     -b BYTES  buffer size of each getdents64 call (default 64)
 *     -c N      after each call, create N empty files "new.CALL.K" in DIR
 *     -l        print "INO TYPE NAME" instead of "NAME"
 *
 * Prints one entry per line, in the order returned, then nothing else.
 * On a failing call prints "getdents64: ENAME" on stderr and exits 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static const char *tname(unsigned char t)
{
	switch (t) {
	case 1: return "fifo";
	case 2: return "chr";
	case 4: return "dir";
	case 6: return "blk";
	case 8: return "reg";
	case 10: return "lnk";
	case 12: return "sock";
	default: return "unknown";
	}
}

int main(int argc, char **argv)
{
	size_t bufsz = 64;
	long create = 0;
	int longfmt = 0, opt, fd;
	char *buf;
	long call = 0;

	while ((opt = getopt(argc, argv, "b:c:l")) != -1) {
		switch (opt) {
		case 'b': bufsz = strtoul(optarg, NULL, 0); break;
		case 'c': create = strtol(optarg, NULL, 0); break;
		case 'l': longfmt = 1; break;
		default:
			fprintf(stderr, "usage: getdents_small [-b BYTES] [-c N] [-l] DIR\n");
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: getdents_small [-b BYTES] [-c N] [-l] DIR\n");
		return 2;
	}
	fd = open(argv[optind], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "open: %s\n", strerrorname_np(errno));
		return 1;
	}
	buf = malloc(bufsz);
	if (!buf)
		return 1;
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, bufsz);
		if (n < 0) {
			fprintf(stderr, "getdents64: %s\n", strerrorname_np(errno));
			free(buf);
			return 1;
		}
		if (n == 0)
			break;
		for (long off = 0; off < n;) {
			struct linux_dirent64 *d = (void *)(buf + off);
			if (longfmt)
				printf("%llu %s %s\n", (unsigned long long)d->d_ino,
				       tname(d->d_type), d->d_name);
			else
				printf("%s\n", d->d_name);
			off += d->d_reclen;
		}
		call++;
		for (long k = 0; k < create; k++) {
			char name[64];
			int nfd;
			snprintf(name, sizeof(name), "new.%ld.%ld", call, k);
			nfd = openat(fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
			if (nfd < 0) {
				fprintf(stderr, "create %s: %s\n", name, strerrorname_np(errno));
				free(buf);
				return 1;
			}
			close(nfd);
		}
	}
	free(buf);
	close(fd);
	fflush(stdout);
	return 0;
}
