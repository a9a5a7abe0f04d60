/* bt: the benchmark's small tools, so that the timed part of a workload is
 * system calls, not process start-up or shell loops.
 *
 *   bt tree NDIRS NFILES SIZE DIR...   make NDIRS dirs d000.. in every DIR and
 *                                      NFILES files f00000.. spread round-robin
 *                                      over the DIRs (file i goes to DIR[i % n],
 *                                      dir i % NDIRS), SIZE bytes each
 *   bt layers NDIRS NFILES DIR...      the same tree as layers: file i in dir
 *                                      d{i / (NFILES/NDIRS)} of DIR[i % n], a
 *                                      directory made only where a file goes
 *                                      (each dir in up to NFILES/NDIRS layers)
 *   bt flat NFILES FIRST DIR           NFILES empty files e{FIRST..} in DIR
 *   bt walk DIR [nostat]               recursive walk: readdir every directory,
 *                                      fstatat(AT_SYMLINK_NOFOLLOW) every entry
 *                                      unless nostat; prints the entry count
 *   bt randread FILE COUNT JOBS SEED   JOBS processes, each COUNT preads of 4 KiB
 *                                      at random 4 KiB-aligned offsets
 *   bt gensrc DIR NFILES               a deterministic source-like tree of text
 *                                      files (about 50 files per directory)
 *   bt sparse FILE SIZE_MIB DATA_MIB   a sparse file of SIZE_MIB with DATA_MIB
 *                                      of data in 1 MiB extents spread evenly
 *   bt dense FILE SIZE_MIB             a file of SIZE_MIB of non-zero data
 *   bt whiteouts UPPER NDIRS NFILES COUNT
 *                                      COUNT aufs whiteouts (empty .wh.NAME
 *                                      files) of the files of a `bt tree NDIRS
 *                                      NFILES` lower, from file NDIRS on, in
 *                                      the UPPER dirs d000.. that exist
 *
 * Deterministic: the same arguments make the same bytes. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char *what, const char *arg)
{
	fprintf(stderr, "bt: %s %s: %s\n", what, arg ? arg : "", strerror(errno));
	exit(1);
}

static uint64_t rng_state;
static uint64_t rnd(void)	/* xorshift64* */
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static void write_all(int fd, const char *buf, size_t len, const char *path)
{
	while (len) {
		ssize_t n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("write", path);
		}
		buf += n;
		len -= (size_t)n;
	}
}

static int cmd_tree(int argc, char **argv)
{
	long ndirs = atol(argv[0]), nfiles = atol(argv[1]), size = atol(argv[2]);
	int nbr = argc - 3;
	char **br = argv + 3, path[4096], *buf = malloc(size + 1);

	for (long i = 0; i < size; i++)
		buf[i] = 'a' + i % 26;
	for (int b = 0; b < nbr; b++)
		for (long d = 0; d < ndirs; d++) {
			snprintf(path, sizeof path, "%s/d%03ld", br[b], d);
			if (mkdir(path, 0755) < 0 && errno != EEXIST)
				die("mkdir", path);
		}
	for (long i = 0; i < nfiles; i++) {
		int fd;

		snprintf(path, sizeof path, "%s/d%03ld/f%05ld", br[i % nbr], i % ndirs, i);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			die("create", path);
		if (size)
			write_all(fd, buf, size, path);
		if (close(fd) < 0)
			die("close", path);
	}
	free(buf);
	return 0;
}

static int cmd_layers(int argc, char **argv)
{
	long ndirs = atol(argv[0]), nfiles = atol(argv[1]), per = nfiles / (ndirs ? ndirs : 1);
	int nbr = argc - 2;
	char **br = argv + 2, path[4096];

	for (long i = 0; i < nfiles; i++) {
		int fd;

		snprintf(path, sizeof path, "%s/d%03ld", br[i % nbr], i / (per ? per : 1));
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			die("mkdir", path);
		snprintf(path + strlen(path), sizeof path - strlen(path), "/f%05ld", i);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || close(fd) < 0)
			die("create", path);
	}
	return 0;
}

static int cmd_flat(char **argv)
{
	long n = atol(argv[0]), first = atol(argv[1]);
	char path[4096];

	for (long i = first; i < first + n; i++) {
		int fd;

		snprintf(path, sizeof path, "%s/e%06ld", argv[2], i);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || close(fd) < 0)
			die("create", path);
	}
	return 0;
}

static long walk(int dfd, const char *name, int do_stat)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	long count = 0;
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		die("open", name);
	d = fdopendir(fd);
	if (!d)
		die("fdopendir", name);
	while ((errno = 0, de = readdir(d))) {
		struct stat st;

		if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		count++;
		if (do_stat) {
			if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				die("stat", de->d_name);
			if (S_ISDIR(st.st_mode))
				count += walk(fd, de->d_name, do_stat);
		} else if (de->d_type == DT_DIR) {
			count += walk(fd, de->d_name, do_stat);
		}
	}
	if (errno)
		die("readdir", name);
	closedir(d);
	return count;
}

static int cmd_randread(char **argv)
{
	const char *file = argv[0];
	long count = atol(argv[1]), jobs = atol(argv[2]);
	uint64_t seed = strtoull(argv[3], NULL, 10);
	int fail = 0;

	for (long j = 0; j < jobs; j++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork", NULL);
		if (pid == 0) {
			char *buf;
			struct stat st;
			uint64_t blocks;
			int fd = open(file, O_RDONLY);

			if (fd < 0 || fstat(fd, &st) < 0)
				die("open", file);
			if (posix_memalign((void **)&buf, 4096, 4096))
				die("memalign", NULL);
			blocks = (uint64_t)st.st_size / 4096;
			rng_state = seed * 1000003 + (uint64_t)j + 1;
			for (long i = 0; i < count; i++) {
				off_t off = (off_t)(rnd() % blocks) * 4096;
				if (pread(fd, buf, 4096, off) != 4096)
					die("pread", file);
			}
			_exit(0);
		}
	}
	for (long j = 0; j < jobs; j++) {
		int status;

		if (wait(&status) < 0)
			die("wait", NULL);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			fail = 1;
	}
	return fail;
}

static const char *words[] = {
	"buffer", "count", "node", "entry", "branch", "inode", "lookup", "state",
	"result", "offset", "length", "flags", "error", "parent", "child", "index",
	"table", "cache", "value", "name", "path", "mode", "owner", "size",
};
#define NWORDS (sizeof words / sizeof words[0])

static int cmd_gensrc(char **argv)
{
	const char *root = argv[0];
	long nfiles = atol(argv[1]);
	char path[4096];

	rng_state = 42;
	if (mkdir(root, 0755) < 0 && errno != EEXIST)
		die("mkdir", root);
	for (long i = 0; i < nfiles; i++) {
		long dir = i / 50;
		FILE *f;
		int lines = 30 + (int)(rnd() % 200);

		snprintf(path, sizeof path, "%s/m%02ld", root, dir / 10);
		mkdir(path, 0755);
		snprintf(path, sizeof path, "%s/m%02ld/s%03ld", root, dir / 10, dir);
		mkdir(path, 0755);
		snprintf(path, sizeof path, "%s/m%02ld/s%03ld/file%05ld.%s", root, dir / 10, dir, i,
			 i % 5 ? "c" : "h");
		f = fopen(path, "w");
		if (!f)
			die("create", path);
		fprintf(f, "/* file %ld: generated by stackfs bench */\n#include <stdio.h>\n\n", i);
		for (int l = 0; l < lines; l++) {
			const char *a = words[rnd() % NWORDS], *b = words[rnd() % NWORDS];
			switch (rnd() % 6) {
			case 0: fprintf(f, "static int %s_%s_%d(int %s)\n{\n", a, b, l, b); break;
			case 1: fprintf(f, "\tif (%s->%s < %lu)\n\t\treturn -%s_%s;\n", a, b,
					(unsigned long)(rnd() % 4096), a, b); break;
			case 2: fprintf(f, "\t%s = %s_get(%s, %d); /* TODO %s */\n", a, b, a, l, b); break;
			case 3: fprintf(f, "}\n\n"); break;
			case 4: fprintf(f, "\tfor (i = 0; i < %s_max; i++)\n\t\t%s[i] += %s;\n", a, b, a); break;
			default: fprintf(f, "#define %s_%s_%ld %lu\n", a, b, i,
					 (unsigned long)(rnd() % 100000)); break;
			}
		}
		if (fclose(f))
			die("close", path);
	}
	return 0;
}

static int cmd_sparse(char **argv)
{
	long size = atol(argv[1]), data = atol(argv[2]);
	char *buf = malloc(1 << 20);
	int fd = open(argv[0], O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		die("create", argv[0]);
	memset(buf, 0x5a, 1 << 20);
	for (long i = 0; i < data; i++)
		if (pwrite(fd, buf, 1 << 20, (off_t)(i * (size / data)) << 20) != 1 << 20)
			die("pwrite", argv[0]);
	if (ftruncate(fd, (off_t)size << 20) < 0 || fsync(fd) < 0 || close(fd) < 0)
		die("finish", argv[0]);
	free(buf);
	return 0;
}

static int cmd_dense(char **argv)
{
	long size = atol(argv[1]);
	uint64_t *buf = malloc(1 << 20);
	int fd = open(argv[0], O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		die("create", argv[0]);
	rng_state = 7;
	for (long i = 0; i < size; i++) {
		for (size_t k = 0; k < (1 << 20) / sizeof *buf; k++)
			buf[k] = rnd();
		write_all(fd, (char *)buf, 1 << 20, argv[0]);
	}
	if (fsync(fd) < 0 || close(fd) < 0)
		die("finish", argv[0]);
	free(buf);
	return 0;
}

static int cmd_whiteouts(char **argv)
{
	long ndirs = atol(argv[1]), nfiles = atol(argv[2]), count = atol(argv[3]), made = 0;
	char path[4096];

	for (long i = ndirs; i < nfiles && made < count; i++) {
		struct stat st;
		int fd;

		snprintf(path, sizeof path, "%s/d%03ld", argv[0], i % ndirs);
		if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
			continue; /* a directory renamed away */
		snprintf(path, sizeof path, "%s/d%03ld/.wh.f%05ld", argv[0], i % ndirs, i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0 || close(fd) < 0)
			die("whiteout", path);
		made++;
	}
	return made == count ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc >= 6 && !strcmp(argv[1], "tree"))
		return cmd_tree(argc - 2, argv + 2);
	if (argc >= 5 && !strcmp(argv[1], "layers"))
		return cmd_layers(argc - 2, argv + 2);
	if (argc == 5 && !strcmp(argv[1], "flat"))
		return cmd_flat(argv + 2);
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "walk")) {
		long n = walk(AT_FDCWD, argv[2], !(argc == 4 && !strcmp(argv[3], "nostat")));
		printf("%ld\n", n);
		return 0;
	}
	if (argc == 6 && !strcmp(argv[1], "randread"))
		return cmd_randread(argv + 2);
	if (argc == 4 && !strcmp(argv[1], "gensrc"))
		return cmd_gensrc(argv + 2);
	if (argc == 5 && !strcmp(argv[1], "sparse"))
		return cmd_sparse(argv + 2);
	if (argc == 4 && !strcmp(argv[1], "dense"))
		return cmd_dense(argv + 2);
	if (argc == 6 && !strcmp(argv[1], "whiteouts"))
		return cmd_whiteouts(argv + 2);
	fprintf(stderr, "usage: see the comment at the top of bench/bt.c\n");
	return 2;
}
