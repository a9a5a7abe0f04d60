/* seekdir_walk: check that telldir positions of a directory are stable.
 *
 *   seekdir_walk [-c N] [-s SEED] [-r ROUNDS] DIR
 *
 * First pass: readdir the whole directory, remembering telldir() before
 * every entry; every name must come once. Then, when -c is given, create
 * N files "seek.K" in DIR. Then ROUNDS times (default: twice the number of
 * entries) seekdir() to a random remembered position and readdir(): it
 * must return the entry that was at that position in the first pass.
 * Finally rewinddir() and read everything again: every first-pass name
 * must come exactly once, and no name twice.
 * Prints "entries N" on success; each problem as one line
 * ("DUP name", "MISMATCH pos expected got", "MISSING name") and exit 1.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ent {
	long pos;
	char *name;
};

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_ents(struct ent *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

int main(int argc, char **argv)
{
	long create = 0, rounds = -1;
	unsigned seed = 1;
	int opt, bad = 0;
	struct ent *v = NULL;
	size_t n = 0, cap = 0;
	DIR *d;
	struct dirent *de;

	while ((opt = getopt(argc, argv, "c:s:r:")) != -1) {
		switch (opt) {
		case 'c': create = strtol(optarg, NULL, 0); break;
		case 's': seed = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'r': rounds = strtol(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: seekdir_walk [-c N] [-s SEED] [-r ROUNDS] DIR\n");
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: seekdir_walk [-c N] [-s SEED] [-r ROUNDS] DIR\n");
		return 2;
	}
	d = opendir(argv[optind]);
	if (!d) {
		printf("opendir: %s\n", strerrorname_np(errno));
		return 1;
	}
	for (;;) {
		long pos = telldir(d);
		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno) {
				printf("readdir: %s\n", strerrorname_np(errno));
				free_ents(v, n);
				closedir(d);
				return 1;
			}
			break;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			v = realloc(v, cap * sizeof(*v));
		}
		v[n].pos = pos;
		v[n].name = strdup(de->d_name);
		n++;
	}
	/* every name once in the first pass */
	{
		char **names = malloc((n + 1) * sizeof(*names));
		for (size_t i = 0; i < n; i++)
			names[i] = v[i].name;
		qsort(names, n, sizeof(*names), cmpstr);
		for (size_t i = 1; i < n; i++)
			if (!strcmp(names[i], names[i - 1])) {
				printf("DUP %s\n", names[i]);
				bad = 1;
			}
		free(names);
	}
	for (long k = 0; k < create; k++) {
		char path[4096];
		int fd;
		snprintf(path, sizeof(path), "%s/seek.%ld", argv[optind], k);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0) {
			printf("create %s: %s\n", path, strerrorname_np(errno));
			free_ents(v, n);
			closedir(d);
			return 1;
		}
		close(fd);
	}
	srand(seed);
	if (rounds < 0)
		rounds = (long)n * 2;
	for (long r = 0; r < rounds && n; r++) {
		size_t i = (size_t)rand() % n;
		seekdir(d, v[i].pos);
		do {
			errno = 0;
			de = readdir(d);
		} while (de && create && !strncmp(de->d_name, "seek.", 5));
		if (!de) {
			printf("MISMATCH %ld %s %s\n", v[i].pos, v[i].name,
			       errno ? strerrorname_np(errno) : "(end)");
			bad = 1;
		} else if (strcmp(de->d_name, v[i].name)) {
			printf("MISMATCH %ld %s %s\n", v[i].pos, v[i].name, de->d_name);
			bad = 1;
		}
	}
	/* full second pass */
	rewinddir(d);
	{
		size_t m = 0, mcap = 256;
		char **seen = malloc(mcap * sizeof(*seen));
		while ((de = readdir(d))) {
			if (m == mcap) {
				mcap *= 2;
				seen = realloc(seen, mcap * sizeof(*seen));
			}
			seen[m++] = strdup(de->d_name);
		}
		qsort(seen, m, sizeof(*seen), cmpstr);
		for (size_t i = 1; i < m; i++)
			if (!strcmp(seen[i], seen[i - 1])) {
				printf("DUP %s\n", seen[i]);
				bad = 1;
			}
		for (size_t i = 0; i < n; i++)
			if (!bsearch(&v[i].name, seen, m, sizeof(*seen), cmpstr)) {
				printf("MISSING %s\n", v[i].name);
				bad = 1;
			}
		for (size_t i = 0; i < m; i++)
			free(seen[i]);
		free(seen);
	}
	closedir(d);
	free_ents(v, n);
	printf("entries %zu\n", n);
	return bad;
}
