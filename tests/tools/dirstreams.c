/* dirstreams: many directory streams read a little at a time, in turn,
 * so that a filesystem must resume each at the offset it handed out while
 * the others come and go (stackfs keeps a bounded number of listings:
 * the others are read again at their offset).
 *
 *   dirstreams [-b BYTES] [-s STREAMS] DIR...
 *     -b BYTES    buffer size of each getdents64 call (default 64)
 *     -s STREAMS  streams opened on each DIR (default 2)
 *
 * Prints "D S NAME" for each entry returned (D the DIR's index from 0, S
 * the stream's), in the order returned; exits 1 on a failing call.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* One call on stream fd: prints its entries; 1 while more may come, 0 at
 * the end, -1 on failure. */
static int step(int fd, int d, int s, char *buf, size_t size)
{
	long n = syscall(SYS_getdents64, fd, buf, size);

	if (n < 0) {
		fprintf(stderr, "getdents64 of dir %d stream %d: %s\n", d, s, strerror(errno));
		return -1;
	}
	for (long pos = 0; pos < n;) {
		struct dirent64 *e = (struct dirent64 *)(buf + pos);

		printf("%d %d %s\n", d, s, e->d_name);
		pos += e->d_reclen;
	}
	return n > 0;
}

int main(int argc, char **argv)
{
	size_t size = 64;
	int streams = 2, opt, ndirs, live, ret = 0;

	while ((opt = getopt(argc, argv, "b:s:")) != -1) {
		if (opt == 'b')
			size = strtoul(optarg, NULL, 10);
		else if (opt == 's')
			streams = atoi(optarg);
		else
			return 2;
	}
	ndirs = argc - optind;
	if (ndirs < 1 || streams < 1 || size < 32)
		return 2;
	int *fd = calloc((size_t)ndirs * streams, sizeof(*fd));
	char *buf = malloc(size);

	if (!fd || !buf)
		return 1;
	for (int i = 0; i < ndirs * streams; i++) {
		fd[i] = open(argv[optind + i / streams], O_RDONLY | O_DIRECTORY);
		if (fd[i] < 0) {
			perror(argv[optind + i / streams]);
			return 1;
		}
	}
	live = ndirs * streams;
	while (live > 0 && ret == 0) {
		for (int i = 0; i < ndirs * streams && ret == 0; i++) {
			int r = fd[i] >= 0 ? step(fd[i], i / streams, i % streams, buf, size) : 1;

			if (r < 0)
				ret = 1;
			if (r == 0) {
				close(fd[i]);
				fd[i] = -1;
				live--;
			}
		}
	}
	free(buf);
	free(fd);
	return ret;
}
