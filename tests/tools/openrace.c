/* openrace: sfs_do_open (common/bio.c) of a name that another thread
 * keeps renaming out of its directory and back. The kernel's walk under
 * RESOLVE_BENEATH answers EXDEV when the entry it found left the
 * directory before the walk ended; the seam must tell that from a mount
 * point, which answers EXDEV every time.
 *
 *   openrace DIR OPENS
 *
 * Makes DIR/a/f and DIR/b, opens a/f OPENS times while a/f moves to b/f
 * and back, and prints "opens N found F enoent E exdev X other O". Exit 0
 * when no open answered EXDEV or another error, 1 when one did, 2 on a
 * usage or setup error. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bio.c"

static int dir_a, dir_b;
static atomic_bool stop;

static void *mover(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		renameat(dir_a, "f", dir_b, "f");
		renameat(dir_b, "f", dir_a, "f");
	}
	return NULL;
}

static int setup(const char *dir)
{
	int root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC), fd;

	if (root < 0 || (mkdirat(root, "a", 0755) < 0 && errno != EEXIST) ||
	    (mkdirat(root, "b", 0755) < 0 && errno != EEXIST))
		return -1;
	dir_a = openat(root, "a", O_PATH | O_DIRECTORY | O_CLOEXEC);
	dir_b = openat(root, "b", O_PATH | O_DIRECTORY | O_CLOEXEC);
	fd = openat(root, "a/f", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	close(root);
	if (fd < 0 || dir_a < 0 || dir_b < 0)
		return -1;
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc == 3 ? atol(argv[2]) : 0, found = 0, noent = 0, xdev = 0, other = 0;
	pthread_t t;

	if (n <= 0 || setup(argv[1]) < 0) {
		fprintf(stderr, "usage: openrace DIR OPENS (DIR writable)\n");
		return 2;
	}
	if (pthread_create(&t, NULL, mover, NULL) != 0)
		return 2;
	for (long i = 0; i < n; i++) {
		int fd = sfs_do_open(dir_a, "f", O_PATH, 0);

		if (fd >= 0) {
			found++;
			close(fd);
		} else if (fd == -ENOENT) {
			noent++;
		} else if (fd == -EXDEV) {
			xdev++;
		} else {
			other++;
		}
	}
	atomic_store(&stop, true);
	pthread_join(t, NULL);
	printf("opens %ld found %ld enoent %ld exdev %ld other %ld\n", n, found, noent, xdev, other);
	return xdev || other ? 1 : 0;
}
