/* fdwalk MODE DIR N [PID]: creates (MODE create), stats (stat), or opens
 * and reads back (read) the files f0 .. f<N-1> of DIR (every 1,000th holds
 * its name, the others are empty: 300,000 files of a block each would fill
 * the image), stopping at the first error, which it names (with
 * errno). With PID, samples the number of open fds of that process every
 * 1,000 files and prints the largest: "max_fds N". Exit 0 when every file
 * was done, 1 at an error. Shell loops run a few thousand files a second;
 * this runs the 300,000 of the fd-limit test in seconds. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static long count_fds(const char *pid)
{
	char p[64];
	DIR *d;
	struct dirent *e;
	long n = 0;

	snprintf(p, sizeof(p), "/proc/%s/fd", pid);
	d = opendir(p);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static int one(const char *mode, int dfd, long i)
{
	char name[32], buf[32];
	struct stat st;
	int fd, len;

	len = snprintf(name, sizeof(name), "f%ld", i);
	if (strcmp(mode, "stat") == 0)
		return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW);
	if (strcmp(mode, "create") == 0) {
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0)
			return -1;
		if (i % 1000 == 0 && write(fd, name, len) != len) {
			close(fd);
			return -1;
		}
		return close(fd);
	}
	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = i % 1000 == 0 ? len : 0;
	if (read(fd, buf, sizeof(buf)) != len || memcmp(buf, name, len) != 0) {
		close(fd);
		errno = EILSEQ; /* wrong content */
		return -1;
	}
	return close(fd);
}

int main(int argc, char **argv)
{
	long n, i, max = 0, c;
	int dfd;

	if (argc < 4) {
		fprintf(stderr, "usage: fdwalk create|stat|read DIR N [PID]\n");
		return 2;
	}
	n = atol(argv[3]);
	dfd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		fprintf(stderr, "fdwalk: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	for (i = 0; i < n; i++) {
		if (one(argv[1], dfd, i) < 0) {
			fprintf(stderr, "fdwalk: %s f%ld: %s\n", argv[1], i, strerror(errno));
			printf("done %ld\nmax_fds %ld\n", i, max);
			return 1;
		}
		if (argc > 4 && i % 1000 == 0 && (c = count_fds(argv[4])) > max)
			max = c;
	}
	if (argc > 4 && (c = count_fds(argv[4])) > max)
		max = c;
	printf("done %ld\nmax_fds %ld\n", i, max);
	return 0;
}
