/* format_fuzz: unit and fuzz tests of the on-disk format library
 * (whiteout/metadir.c and the meta*.c files, fsid.c, registry.c,
 * inomap.c, origin.c, lowername.c, xnames.c), and small helpers the bats tests use to make and
 * damage metadata.
 *
 * Built standalone: the library's sources are included here, so the
 * program needs nothing but itself (and builds with any sanitizer:
 *   cc -fsanitize=address,undefined -I. tests/tools/format_fuzz.c -lpthread
 * or, with clang, as a libFuzzer target with -DSFS_LIBFUZZER
 *   clang -fsanitize=fuzzer,address -DSFS_LIBFUZZER -I. tests/tools/format_fuzz.c).
 *
 *   format_fuzz fuzz [ITERATIONS [SEED]]   parsers on random and damaged input
 *   format_fuzz selftest DIR               the API on a fresh directory DIR
 *   format_fuzz crc32c                     CRC32C of stdin, as 8 hex digits
 *   format_fuzz mkmeta [--overlay] BRANCH [LOWER...]
 *                                          a valid metadata dir (sfs_meta_open),
 *                                          ids of each branch and its filesystem
 *                                          registered, lowers = BRANCH, LOWERs
 *   format_fuzz header FILE VERSION [FLAGS] a 64-byte header with a valid CRC
 *   format_fuzz origin-set UPPER LOWER     UPPER's origin record := LOWER
 *   format_fuzz origin-get PATH            prints the record, "none" or "corrupt"
 *   format_fuzz lowername-get PATH         its lower-name record: the path,
 *                                          "none" or "corrupt"
 *   format_fuzz lowername-set PATH LOWERPATH  PATH's lower-name record := LOWERPATH
 *   format_fuzz ino-alloc BRANCH FSID INO  allocates (or finds) a number, prints it
 *   format_fuzz check BRANCH               sfs_meta_check: state or the error
 *   format_fuzz fsuuid PATH                the identity of the filesystem of PATH
 * Exit 0 on success, 1 on a failed check, 2 on a usage error. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bio.c"
#include "common/runtime.c"
#include "whiteout/crc32c.c"
#include "whiteout/metadir.c"
#include "whiteout/metafile.c"
#include "whiteout/metaheader.c"
#include "whiteout/mend.c"
#include "whiteout/metalock.c"
#include "whiteout/metalowers.c"
#include "whiteout/fsid.c"
#include "whiteout/metatrust.c"
#include "whiteout/registry.c"
#include "whiteout/inomap.c"
#include "whiteout/origin.c"
#include "whiteout/lowername.c"
#include "xattr/xattr.c"
#include "xattr/records.c"
#include "whiteout/journal.c"
#include "whiteout/xnames.c"

/* ------------------------------------------------------------ random */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
	/* splitmix64 */
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static size_t rndn(size_t n)
{
	return n ? (size_t)(rnd() % n) : 0;
}

static void rnd_bytes(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

static unsigned failures;

#define CHECK(cond, ...) do {                                           \
	if (!(cond)) {                                                  \
		fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__);                           \
		fputc('\n', stderr);                                    \
		failures++;                                             \
	}                                                               \
} while (0)

/* ------------------------------------------------------------ parsers */

/* The inomap loader (chunked reads from a file) must agree with the
 * buffer parser on any bytes. */
static void ino_load_same(const uint8_t *buf, size_t len)
{
	struct sfs_ino_table t1, t2;
	size_t keep1, keep2, flen;
	bool bad1, bad2;
	char err[256];
	int fd = memfd_create("inomap", MFD_CLOEXEC), r1, r2;

	if (fd < 0)
		return;
	if (write(fd, buf, len) == (ssize_t)len) {
		r1 = sfs_ino_parse(buf, len, &t1, &keep1, &bad1, err, sizeof(err));
		r2 = sfs_ino_load(fd, &t2, &keep2, &flen, &bad2, err, sizeof(err));
		CHECK(r1 == r2 && (r1 || (keep1 == keep2 && bad1 == bad2 && flen == len &&
					  t1.count == t2.count && t1.nrec == t2.nrec)),
		      "inomap load %d, parse %d", r2, r1);
		if (!r1)
			sfs_ino_table_free(&t1);
		if (!r2)
			sfs_ino_table_free(&t2);
	}
	close(fd);
}

/* What the exportnames parser hands on is a record the daemon may use. */
static int xname_ok(void *arg, const struct sfs_xname *x)
{
	size_t nl = strlen(x->name);

	(void)arg;
	CHECK(x->id && x->parent && nl >= 1 && nl <= 255 && !strchr(x->name, '/') &&
	      strcmp(x->name, ".") && strcmp(x->name, ".."), "exportnames record");
	return 0;
}

/* Every parser on buf; the result is not judged, only survived (and
 * whatever a success returns must be consistent). */
static void parse_all(const uint8_t *buf, size_t len)
{
	struct sfs_header h;
	struct sfs_reg_table rt;
	struct sfs_ino_table it;
	struct sfs_origin o;
	struct sfs_lower *lv;
	size_t keep, ln;
	bool last_bad;
	char err[256], lname[SFS_LOWERNAME_PATH_MAX + 1];
	uint8_t *copy = malloc(len ? len : 1);   /* exact size: ASan sees overreads */

	if (!copy)
		return;
	memcpy(copy, buf, len);
	(void)sfs_header_parse(copy, len, &h);
	if (sfs_reg_parse(copy, len, &rt, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < rt.n; i++)
			CHECK(rt.v[i].id && rt.v[i].id < rt.next_id[rt.v[i].kind], "registry id");
		sfs_reg_table_free(&rt);
	}
	if (sfs_ino_parse(copy, len, &it, &keep, &last_bad, err, sizeof(err)) == 0) {
		CHECK(keep <= len && keep % SFS_INO_REC_SIZE == 0, "inomap keep %zu of %zu", keep, len);
		sfs_ino_table_free(&it);
	}
	ino_load_same(copy, len);
	if (sfs_origin_decode(copy, len, &o) == 1)
		CHECK(o.handle_bytes <= SFS_ORIGIN_HANDLE_MAX, "origin handle bytes");
	if (sfs_lowername_decode(copy, len, lname, sizeof(lname)) == 1)
		CHECK(lname[0] && lname[0] != '/' && strlen(lname) <= SFS_LOWERNAME_PATH_MAX &&
		      !strstr(lname, "//"), "lower-name path");
	if (sfs_lowers_parse((const char *)copy, len, &lv, &ln, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < ln; i++)
			CHECK(lv[i].path[0] == '/', "lowers path");
		sfs_lowers_free(lv, ln);
	}
	(void)sfs_xnames_parse(copy, len, xname_ok, NULL, err, sizeof(err));
	free(copy);
}

/* Damages buf in place (one of several ways) and returns its new length
 * (at most cap). */
static size_t damage(uint8_t *buf, size_t len, size_t cap)
{
	switch (rndn(5)) {
	case 0:                                 /* truncate */
		return rndn(len + 1);
	case 1: {                               /* flip 1..8 bits */
		size_t k = 1 + rndn(8);

		for (size_t i = 0; i < k && len; i++)
			buf[rndn(len)] ^= (uint8_t)(1u << rndn(8));
		return len;
	}
	case 2:                                 /* overwrite a run */
		if (len) {
			size_t at = rndn(len), n = 1 + rndn(len - at);

			rnd_bytes(buf + at, n);
		}
		return len;
	case 3: {                               /* extend with garbage */
		size_t n = rndn(cap - len + 1);

		rnd_bytes(buf + len, n);
		return len + n;
	}
	default: {                              /* set a field to an extreme */
		static const uint8_t vals[] = { 0x00, 0xff, 0x7f, 0x80, 0x01 };

		if (len) {
			size_t at = rndn(len), k = 1 + rndn(8);

			memset(buf + at, vals[rndn(sizeof(vals))], k < len - at ? k : len - at);
		}
		return len;
	}
	}
}

static size_t make_header(uint8_t *buf)
{
	struct sfs_header h = { .version = 1, .flags = (uint32_t)rndn(2), .ctime = rnd() };
	struct sfs_disk_header d;

	rnd_bytes(h.uuid, 16);
	sfs_header_encode(&h, &d);
	memcpy(buf, &d, sizeof(d));
	return sizeof(d);
}

static void random_entry(struct sfs_reg_entry *e, uint32_t kind, uint32_t id)
{
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->id = id;
	rnd_bytes(e->fs_uuid, 16);
	if (kind == SFS_REG_BRANCH) {
		e->handle_type = (int32_t)rnd();
		e->handle_bytes = (uint16_t)(1 + rndn(SFS_HANDLE_MAX));
		rnd_bytes(e->handle, e->handle_bytes);
	}
}

static size_t make_registry(uint8_t **out, size_t *nrec)
{
	struct sfs_reg_table t = { .next_id = { 0, 1, 1 } };
	uint8_t *buf = NULL;
	size_t len = 0, n = rndn(6);

	for (size_t i = 0; i < n; i++) {
		struct sfs_reg_entry e;
		uint32_t kind = 1 + (uint32_t)rndn(2);

		random_entry(&e, kind, t.next_id[kind]++);
		sfs_reg_table_add(&t, &e);
	}
	if (sfs_reg_serialize(&t, &buf, &len))
		abort();
	sfs_reg_table_free(&t);
	*out = buf;
	*nrec = n;
	return len;
}

static size_t make_inomap(uint8_t *buf, size_t cap, size_t *nrec)
{
	struct sfs_disk_ino_head head;
	size_t n = rndn(cap / SFS_INO_REC_SIZE - 1);

	sfs_ino_head_encode(&head);
	memcpy(buf, &head, sizeof(head));
	for (size_t i = 0; i < n; i++) {
		struct sfs_disk_ino d;

		/* distinct pairs; some retired */
		sfs_ino_encode(rndn(8) ? 1 + (uint32_t)rndn(3) : 0, i * 7 + rndn(7), i, &d);
		memcpy(buf + SFS_INO_REC_SIZE * (i + 1), &d, sizeof(d));
	}
	*nrec = n;
	return SFS_INO_REC_SIZE * (n + 1);
}

static size_t make_origin(uint8_t *buf, size_t cap)
{
	struct sfs_origin o = { .version = 2, .ino = rnd(), .handle_type = (int32_t)rnd() };
	int n;

	rnd_bytes(o.fs_uuid, 16);
	o.handle_bytes = (uint16_t)rndn(SFS_ORIGIN_HANDLE_MAX + 1);
	rnd_bytes(o.handle, o.handle_bytes);
	n = sfs_origin_encode(&o, buf, cap);
	if (n < 0)
		abort();
	return (size_t)n;
}

static size_t make_lowers(uint8_t *buf, size_t cap)
{
	/* a mount writes at least its own branch (an empty file is damage) */
	size_t len = 0, n = 1 + rndn(4);
	static const char chars[] = "abc/\\\n .";

	for (size_t i = 0; i < n && len + 64 < cap; i++) {
		len += (size_t)sprintf((char *)buf + len, "%s /", rndn(2) ? "rw" : "ro");
		for (size_t k = rndn(20); k; k--) {
			char c = chars[rndn(sizeof(chars) - 1)];

			if (c == '\\' || c == '\n') {
				buf[len++] = '\\';
				buf[len++] = c == '\n' ? 'n' : '\\';
			} else {
				buf[len++] = (uint8_t)c;
			}
		}
		buf[len++] = '\n';
	}
	return len;
}

static size_t make_xnames(uint8_t *buf, size_t cap)
{
	static const char chars[] = "ab./\n";
	struct sfs_xname v[8];
	size_t n = rndn(8), len;
	uint8_t *out;

	for (size_t i = 0; i < n; i++) {
		size_t nl = 1 + rndn(12), k;

		v[i].id = rnd() | 1;
		v[i].parent = 1 + rndn(1000);
		for (k = 0; k < nl; k++)
			v[i].name[k] = chars[rndn(sizeof(chars) - 1)];
		v[i].name[k] = '\0';
		if (strchr(v[i].name, '/') || !strcmp(v[i].name, ".") || !strcmp(v[i].name, ".."))
			strcpy(v[i].name, "x");
	}
	if (sfs_xnames_encode(v, n, &out, &len) || len > cap)
		abort();
	memcpy(buf, out, len);
	free(out);
	return len;
}

/* One valid input of each kind: it must parse; one bit flipped must not
 * (CRC32C finds every single-bit error), then random damage must not
 * crash. */
static void fuzz_one(void)
{
	enum { CAP = 4096 };
	static uint8_t buf[CAP];
	struct sfs_header h;
	struct sfs_reg_table rt;
	struct sfs_ino_table it;
	struct sfs_origin o;
	struct sfs_lower *lv;
	uint8_t *reg;
	size_t len, n, nrec, keep, ln;
	bool last_bad;
	char err[256];

	/* random bytes */
	n = rndn(CAP);
	rnd_bytes(buf, n);
	parse_all(buf, n);

	/* header */
	len = make_header(buf);
	CHECK(sfs_header_parse(buf, len, &h) == SFS_HDR_OK, "valid header");
	buf[rndn(len)] ^= (uint8_t)(1u << rndn(8));
	CHECK(sfs_header_parse(buf, len, &h) != SFS_HDR_OK, "header with a flipped bit");
	parse_all(buf, damage(buf, len, CAP));

	/* registry */
	len = make_registry(&reg, &nrec);
	CHECK(sfs_reg_parse(reg, len, &rt, err, sizeof(err)) == 0, "valid registry: %s", err);
	CHECK(rt.n == nrec, "registry records %zu != %zu", rt.n, nrec);
	sfs_reg_table_free(&rt);
	reg[rndn(len)] ^= (uint8_t)(1u << rndn(8));
	CHECK(sfs_reg_parse(reg, len, &rt, err, sizeof(err)) != 0, "registry with a flipped bit");
	memcpy(buf, reg, len);
	free(reg);
	parse_all(buf, damage(buf, len, CAP));

	/* inomap */
	len = make_inomap(buf, 1024, &nrec);
	CHECK(sfs_ino_parse(buf, len, &it, &keep, &last_bad, err, sizeof(err)) == 0 &&
	      !last_bad && keep == len && it.nrec == nrec, "valid inomap: %s", err);
	sfs_ino_table_free(&it);
	{
		size_t at = rndn(len);
		int ret;

		buf[at] ^= (uint8_t)(1u << rndn(8));
		ret = sfs_ino_parse(buf, len, &it, &keep, &last_bad, err, sizeof(err));
		/* only the last record may be taken for an interrupted append */
		if (at >= len - SFS_INO_REC_SIZE && at >= SFS_INO_REC_SIZE)
			CHECK(ret == 0 && last_bad, "inomap, last record flipped");
		else
			CHECK(ret != 0, "inomap with a flipped bit at %zu", at);
		if (!ret)
			sfs_ino_table_free(&it);
	}
	parse_all(buf, damage(buf, len, CAP));

	/* origin */
	len = make_origin(buf, CAP);
	CHECK(sfs_origin_decode(buf, len, &o) == 1, "valid origin");
	buf[rndn(len)] ^= (uint8_t)(1u << rndn(8));
	CHECK(sfs_origin_decode(buf, len, &o) != 1, "origin with a flipped bit");
	parse_all(buf, damage(buf, len, CAP));

	/* lower-name records: valid ones round trip, a flipped bit and the
	 * paths the record refuses ("..", empty components) never decode */
	{
		static const char *const bad[] = { "..", "a/../b", "a//b", "/a", "a/", ".", "a/./b" };
		char lp[SFS_LOWERNAME_PATH_MAX + 1];

		len = (size_t)sfs_lowername_encode("dir/sub/f", buf, CAP);
		CHECK(sfs_lowername_decode(buf, len, lp, sizeof(lp)) == 1 && !strcmp(lp, "dir/sub/f"),
		      "valid lower name");
		buf[rndn(len)] ^= (uint8_t)(1u << rndn(8));
		CHECK(sfs_lowername_decode(buf, len, lp, sizeof(lp)) != 1, "lower name with a flipped bit");
		parse_all(buf, damage(buf, len, CAP));
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			CHECK(sfs_lowername_encode(bad[i], buf, CAP) == -EINVAL, "lower name '%s' refused", bad[i]);
	}

	/* lowers */
	len = make_lowers(buf, CAP);
	{
		int ret = sfs_lowers_parse((char *)buf, len, &lv, &ln, err, sizeof(err));

		CHECK(ret == 0, "lowers: %s", err);
		if (!ret)
			sfs_lowers_free(lv, ln);
	}
	parse_all(buf, damage(buf, len, CAP));

	/* exportnames */
	len = make_xnames(buf, CAP);
	CHECK(sfs_xnames_parse(buf, len, xname_ok, NULL, err, sizeof(err)) == 0,
	      "exportnames: %s", err);
	buf[rndn(len)] ^= (uint8_t)(1u << rndn(8));
	CHECK(sfs_xnames_parse(buf, len, NULL, NULL, err, sizeof(err)) != 0,
	      "exportnames with a flipped bit");
	parse_all(buf, damage(buf, len, CAP));
}

static int cmd_fuzz(int argc, char **argv)
{
	unsigned long iters = argc > 2 ? strtoul(argv[2], NULL, 0) : 20000;
	uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 1;

	rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
	for (unsigned long i = 0; i < iters && failures < 20; i++)
		fuzz_one();
	printf("fuzz: %lu iterations, seed %llu, %u failures\n", iters,
	       (unsigned long long)seed, failures);
	return failures ? 1 : 0;
}

/* ------------------------------------------------------------ selftest */

static int open_dir(const char *path)
{
	int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		exit(1);
	}
	return fd;
}

/* The chunked inomap loader against the buffer parser, on a file of a
 * few chunks with a torn tail; and the size limit, before any read. */
static off_t inomap_size(const struct sfs_meta *m)
{
	struct stat st;

	return fstat(m->ino_fd, &st) == 0 ? st.st_size : -1;
}

/* A batch's records are gathered and written together at its end; a
 * failed write fails the end and keeps them, and the next handing out
 * of one of their numbers writes them (numbers 5 to 106 here). */
static void selftest_ino_batch(struct sfs_meta *m)
{
	off_t s0 = inomap_size(m);
	uint64_t v, w;
	int good = m->ino_fd, ro;
	bool seq = true;

	sfs_meta_ino_batch_begin();
	for (uint64_t i = 0; i < 100; i++)
		seq &= sfs_meta_ino_alloc(m, 4, i, &v) == 0 && v == (SFS_INO_ALLOC_BASE | (5 + i));
	CHECK(seq, "a batch's numbers follow each other");
	CHECK(sfs_meta_ino_alloc(m, 4, 7, &v) == 0 && v == (SFS_INO_ALLOC_BASE | 12), "found in the batch");
	CHECK(inomap_size(m) == s0, "a batch's records wait for its end");
	CHECK(sfs_meta_ino_batch_end() == 0, "batch end");
	CHECK(inomap_size(m) == s0 + 100 * (off_t)SFS_INO_REC_SIZE, "a batch's records written at its end");

	ro = openat(m->dir_fd, "inomap", O_RDONLY | O_CLOEXEC);
	CHECK(ro >= 0, "inomap read-only");
	sfs_meta_ino_batch_begin();
	CHECK(sfs_meta_ino_alloc(m, 5, 0, &v) == 0 && sfs_meta_ino_alloc(m, 5, 1, &w) == 0 &&
	      w == (SFS_INO_ALLOC_BASE | 106), "two more in a batch");
	m->ino_fd = ro; /* its write fails (EBADF) */
	CHECK(sfs_meta_ino_batch_end() == -EBADF, "a failed write fails the batch");
	m->ino_fd = good;
	close(ro);
	CHECK(inomap_size(m) == s0 + 100 * (off_t)SFS_INO_REC_SIZE, "nothing written");
	CHECK(sfs_meta_ino_alloc(m, 5, 1, &v) == 0 && v == w, "the number handed out later");
	CHECK(inomap_size(m) == s0 + 102 * (off_t)SFS_INO_REC_SIZE, "...once its records are written");
}

static void selftest_ino_load(int root)
{
	size_t nrec = 2 * SFS_INO_CHUNK + 5, len = SFS_INO_REC_SIZE * (nrec + 1) + 7;
	uint8_t *buf = calloc(1, len);
	struct sfs_ino_table t1, t2;
	size_t keep1, keep2, flen;
	bool bad1, bad2;
	char err[256] = "";
	int fd;

	if (!buf)
		abort();
	sfs_ino_head_encode((struct sfs_disk_ino_head *)buf);
	for (size_t i = 0; i < nrec; i++) {
		struct sfs_disk_ino d;

		sfs_ino_encode(1 + (uint32_t)(i % 3), i, i, &d);
		memcpy(buf + SFS_INO_REC_SIZE * (i + 1), &d, sizeof(d));
	}
	buf[SFS_INO_REC_SIZE * nrec + 3] ^= 1;      /* the last record torn */
	fd = openat(root, "inomap.test", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0 && write(fd, buf, len) == (ssize_t)len, "write inomap.test");
	CHECK(sfs_ino_parse(buf, len, &t1, &keep1, &bad1, err, sizeof(err)) == 0, "parse: %s", err);
	CHECK(sfs_ino_load(fd, &t2, &keep2, &flen, &bad2, err, sizeof(err)) == 0, "load: %s", err);
	CHECK(keep1 == keep2 && bad1 && bad2 && flen == len && t1.count == t2.count &&
	      t1.nrec == t2.nrec && t2.count == nrec - 1, "load = parse (%zu %zu)", t1.count, t2.count);
	sfs_ino_table_free(&t1);
	sfs_ino_table_free(&t2);
	CHECK(ftruncate(fd, (off_t)SFS_INO_MAX_BYTES + 1) == 0, "sparse inomap");
	CHECK(sfs_ino_load(fd, &t2, &keep2, &flen, &bad2, err, sizeof(err)) == -EFBIG &&
	      strstr(err, "limit"), "too large: %s", err);
	close(fd);
	unlinkat(root, "inomap.test", 0);
	free(buf);
}

static int cmd_selftest(const char *dir)
{
	static const uint8_t vec[] = "123456789";
	struct sfs_meta m;
	enum sfs_meta_state st;
	uint8_t u1[16], u2[16], hb[SFS_HANDLE_MAX];
	uint32_t id, id2, bid;
	uint64_t a, b, c;
	unsigned hbytes = sizeof(hb);
	int root = open_dir(dir), ht, ret;
	char err[256] = "";

	CHECK(sfs_crc32c(0, vec, 9) == 0xE3069283u, "crc32c check value");
	CHECK(sfs_crc32c(sfs_crc32c(0, vec, 4), vec + 4, 5) == 0xE3069283u, "crc32c chained");
	selftest_ino_load(root);

	CHECK(sfs_meta_check(root, &st, err, sizeof(err)) == 0 && st == SFS_META_ABSENT,
	      "fresh dir is absent: %s", err);
	ret = sfs_meta_open(root, 1, false, &m, err, sizeof(err));
	CHECK(ret == 0, "open: %s", err);
	if (ret)
		return 1;
	CHECK(m.version == 1 && (m.flags & SFS_META_F_OVERLAY), "header fields");
	CHECK(sfs_meta_lock(root, true) == -EBUSY, "the lock is held");
	CHECK(sfs_fs_uuid(root, u1) == 0, "fs uuid");
	CHECK(sfs_meta_fs_id(&m, u1, &id) == 0 && id == 1, "first fs id %u", id);
	memset(u2, 0xab, 16);
	CHECK(sfs_meta_fs_id(&m, u2, &id2) == 0 && id2 == 2, "second fs id %u", id2);
	CHECK(sfs_meta_fs_id(&m, u1, &id) == 0 && id == 1, "fs id again %u", id);
	CHECK(sfs_fs_handle(root, "", &ht, hb, &hbytes) == 0, "root handle");
	CHECK(sfs_meta_branch_id(&m, u1, ht, hb, hbytes, &bid) == 0 && bid == 1, "branch id %u", bid);
	CHECK(sfs_meta_ino_alloc(&m, 1, 42, &a) == 0 && a == (SFS_INO_ALLOC_BASE | 1), "alloc %" PRIx64, a);
	CHECK(sfs_meta_ino_alloc(&m, 2, 42, &b) == 0 && b == (SFS_INO_ALLOC_BASE | 2), "alloc %" PRIx64, b);
	CHECK(sfs_meta_ino_alloc(&m, 1, 42, &c) == 0 && c == a, "alloc again");
	{
		struct sfs_lower lw[2] = { { (char *)"/x y\\z", true }, { (char *)"/new\nline", false } };

		CHECK(sfs_meta_write_lowers(&m, lw, 2) == 0, "write lowers");
	}
	sfs_meta_close(&m);
	sfs_meta_close(&m);  /* twice is harmless */

	CHECK(sfs_meta_check(root, &st, err, sizeof(err)) == 0 && st == SFS_META_CURRENT,
	      "current after open: %s", err);
	ret = sfs_meta_open(root, -1, false, &m, err, sizeof(err));
	CHECK(ret == 0, "reopen: %s", err);
	if (ret)
		return 1;
	CHECK(m.flags & SFS_META_F_OVERLAY, "style kept");
	CHECK(sfs_meta_fs_id(&m, u2, &id2) == 0 && id2 == 2, "fs id persisted");
	CHECK(sfs_meta_branch_id(&m, u1, ht, hb, hbytes, &bid) == 0 && bid == 1, "branch id persisted");
	CHECK(sfs_meta_ino_find(&m, 2, 42, &c) == 1 && c == b, "ino persisted");
	CHECK(sfs_meta_ino_alloc(&m, 3, 1, &c) == 0 && c == (SFS_INO_ALLOC_BASE | 3), "next number");
	{
		struct sfs_lower *v;
		size_t n;

		ret = sfs_meta_read_lowers(m.dir_fd, &v, &n, err, sizeof(err));
		CHECK(ret == 0, "read lowers: %s", err);
		if (!ret) {
			CHECK(n == 2 && !strcmp(v[0].path, "/x y\\z") && v[0].rw &&
			      !strcmp(v[1].path, "/new\nline") && !v[1].rw, "lowers round trip");
			sfs_lowers_free(v, n);
		}
	}
	/* a torn append: a partial record is cut, numbers go on */
	{
		int fd = openat(m.dir_fd, "inomap", O_WRONLY | O_APPEND);

		CHECK(fd >= 0 && write(fd, "garbage", 7) == 7, "tear the inomap");
		close(fd);
	}
	sfs_meta_close(&m);
	CHECK(sfs_meta_check(root, &st, err, sizeof(err)) == 0, "a torn tail is no error: %s", err);
	ret = sfs_meta_open(root, 0, false, &m, err, sizeof(err));
	CHECK(ret == 0, "reopen after tear: %s", err);
	if (ret)
		return 1;
	CHECK(!(m.flags & SFS_META_F_OVERLAY), "style changed to aufs");
	CHECK(sfs_meta_ino_alloc(&m, 3, 2, &c) == 0 && c == (SFS_INO_ALLOC_BASE | 4), "after tear");
	selftest_ino_batch(&m);
	sfs_meta_close(&m);
	ret = sfs_meta_open(root, 0, false, &m, err, sizeof(err));
	CHECK(ret == 0, "reopen after batches: %s", err);
	if (ret)
		return 1;
	CHECK(sfs_meta_ino_find(&m, 4, 99, &c) == 1 && c == (SFS_INO_ALLOC_BASE | 104),
	      "a batch's numbers persisted");
	CHECK(sfs_meta_ino_find(&m, 5, 1, &c) == 1 && c == (SFS_INO_ALLOC_BASE | 106),
	      "a batch written again after a failed write persisted");
	sfs_meta_close(&m);

	/* origin records */
	{
		struct sfs_origin o, g;
		int fd;

		fd = openat(root, "lowerfile", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		close(fd);
		fd = openat(root, "copy", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		close(fd);
		CHECK(symlinkat("target", root, "link") == 0, "symlink");
		CHECK(sfs_origin_of(root, "lowerfile", u1, &o) == 0 && o.handle_bytes > 0, "origin_of");
		ret = sfs_origin_set(root, "copy", &o);
		if (ret == -ENOTSUP || ret == -EPERM) {
			printf("selftest: origin xattrs not supported here (%s): skipped\n", strerror(-ret));
		} else {
			CHECK(ret == 0, "origin_set: %s", strerror(-ret));
			CHECK(sfs_origin_get(root, "copy", &g) == 1 && g.ino == o.ino &&
			      g.handle_bytes == o.handle_bytes &&
			      !memcmp(g.handle, o.handle, o.handle_bytes), "origin round trip");
			CHECK(sfs_origin_get(root, "lowerfile", &g) == 0, "no origin");
			CHECK(sfs_origin_of(root, "link", u1, &o) == 0, "origin_of a symlink");
			CHECK(sfs_origin_set(root, "link", &o) == 0, "origin on a symlink");
			CHECK(sfs_origin_get(root, "link", &g) == 1, "origin of a symlink");
			CHECK(sfs_origin_remove(root, "copy") == 0 &&
			      sfs_origin_get(root, "copy", &g) == 0, "origin removed");
			{
				char lp[SFS_LOWERNAME_PATH_MAX + 1];

				CHECK(sfs_lowername_set(root, "copy", "d/lowerfile") == 0 &&
				      sfs_lowername_get(root, "copy", lp, sizeof(lp)) == 1 &&
				      !strcmp(lp, "d/lowerfile"), "lower name round trip");
				CHECK(sfs_lowername_set(root, "copy", "../x") == -EINVAL, "lower name '..' refused");
				CHECK(sfs_lowername_remove(root, "copy") == 0 &&
				      sfs_lowername_get(root, "copy", lp, sizeof(lp)) == 0, "lower name removed");
			}
		}
	}
	close(root);
	printf("selftest: %u failures\n", failures);
	return failures ? 1 : 0;
}

/* ------------------------------------------------------------ helpers */

static int cmd_crc32c(void)
{
	uint8_t buf[65536];
	uint32_t crc = 0;
	ssize_t n;

	while ((n = read(0, buf, sizeof(buf))) > 0)
		crc = sfs_crc32c(crc, buf, (size_t)n);
	printf("%08x\n", crc);
	return n < 0;
}

static int cmd_mkmeta(int argc, char **argv)
{
	int style = 0, i = 2, root, ret;
	struct sfs_lower *lw;
	struct sfs_meta m;
	char err[256] = "";

	if (i < argc && !strcmp(argv[i], "--overlay")) {
		style = 1;
		i++;
	}
	if (i >= argc)
		return 2;
	root = open_dir(argv[i]);
	ret = sfs_meta_open(root, style, true, &m, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "%s: %s\n", argv[i], err);
		return 1;
	}
	lw = calloc((size_t)(argc - i), sizeof(*lw));
	for (int k = i; k < argc; k++) {
		uint8_t uuid[16], handle[SFS_HANDLE_MAX];
		unsigned hbytes = sizeof(handle);
		uint32_t fs_id, br_id;
		int fd, type;

		lw[k - i].path = realpath(argv[k], NULL);
		lw[k - i].rw = k == i;
		if (!lw[k - i].path) {
			fprintf(stderr, "%s: %s\n", argv[k], strerror(errno));
			return 1;
		}
		/* ids as a mount gives them: the filesystem, then the branch */
		fd = open_dir(argv[k]);
		ret = sfs_fs_uuid(fd, uuid);
		if (!ret)
			ret = sfs_meta_fs_id(&m, uuid, &fs_id);
		if (!ret)
			ret = sfs_fs_handle(fd, "", &type, handle, &hbytes);
		if (!ret)
			ret = sfs_meta_branch_id(&m, uuid, type, handle, hbytes, &br_id);
		close(fd);
		if (ret) {
			fprintf(stderr, "%s: ids: %s\n", argv[k], strerror(-ret));
			return 1;
		}
	}
	ret = sfs_meta_write_lowers(&m, lw, (size_t)(argc - i));
	for (int k = 0; k < argc - i; k++)
		free(lw[k].path);
	free(lw);
	sfs_meta_close(&m);
	close(root);
	if (ret)
		fprintf(stderr, "lowers: %s\n", strerror(-ret));
	return ret ? 1 : 0;
}

static int cmd_header(int argc, char **argv)
{
	struct sfs_header h = { .ctime = 1700000000 };
	struct sfs_disk_header d;
	FILE *f;

	if (argc < 4)
		return 2;
	h.version = (uint32_t)strtoul(argv[3], NULL, 0);
	h.flags = argc > 4 ? (uint32_t)strtoul(argv[4], NULL, 0) : 0;
	memset(h.uuid, 0x5a, 16);
	sfs_header_encode(&h, &d);
	f = fopen(argv[2], "wb");
	if (!f || fwrite(&d, sizeof(d), 1, f) != 1 || fclose(f)) {
		perror(argv[2]);
		return 1;
	}
	return 0;
}

static int split(const char *path, char **dir, char **base)
{
	char *a = strdup(path), *b = strdup(path);

	*dir = strdup(dirname(a));
	*base = strdup(basename(b));
	free(a);
	free(b);
	return open_dir(*dir);
}

static int cmd_origin_set(int argc, char **argv)
{
	char *ud, *ub, *ld, *lb;
	struct sfs_origin o;
	uint8_t uuid[16];
	int ufd, lfd, ret;

	if (argc < 4)
		return 2;
	ufd = split(argv[2], &ud, &ub);
	lfd = split(argv[3], &ld, &lb);
	ret = sfs_fs_uuid(lfd, uuid);
	if (!ret)
		ret = sfs_origin_of(lfd, lb, uuid, &o);
	if (!ret)
		ret = sfs_origin_set(ufd, ub, &o);
	if (ret)
		fprintf(stderr, "origin-set: %s\n", strerror(-ret));
	free(ud), free(ub), free(ld), free(lb);
	close(ufd);
	close(lfd);
	return ret ? 1 : 0;
}

static int cmd_lowername_set(int argc, char **argv)
{
	char *d, *b;
	int fd, ret;

	if (argc < 4)
		return 2;
	fd = split(argv[2], &d, &b);
	ret = sfs_lowername_set(fd, b, argv[3]);
	if (ret)
		fprintf(stderr, "lowername-set: %s\n", strerror(-ret));
	free(d);
	free(b);
	close(fd);
	return ret ? 1 : 0;
}

static int cmd_lowername_get(int argc, char **argv)
{
	char *d, *b, lp[SFS_LOWERNAME_PATH_MAX + 1];
	int fd, ret;

	if (argc < 3)
		return 2;
	fd = split(argv[2], &d, &b);
	ret = sfs_lowername_get(fd, b, lp, sizeof(lp));
	printf("%s\n", ret == 1 ? lp : ret == 0 ? "none" : ret == -EUCLEAN ? "corrupt" : strerror(-ret));
	free(d);
	free(b);
	close(fd);
	return ret < 0 && ret != -EUCLEAN ? 1 : 0;
}

static int cmd_origin_get(int argc, char **argv)
{
	struct sfs_origin o;
	char *d, *b;
	int fd, ret;

	if (argc < 3)
		return 2;
	fd = split(argv[2], &d, &b);
	ret = sfs_origin_get(fd, b, &o);
	if (ret == 1) {
		printf("version %u ino %" PRIu64 " handle_type %d handle_bytes %u uuid ",
		       o.version, o.ino, o.handle_type, o.handle_bytes);
		for (int i = 0; i < 16; i++)
			printf("%02x", o.fs_uuid[i]);
		printf("\n");
	} else {
		printf("%s\n", ret == 0 ? "none" : ret == -EUCLEAN ? "corrupt" : strerror(-ret));
	}
	free(d);
	free(b);
	close(fd);
	return ret < 0 && ret != -EUCLEAN;
}

static int cmd_ino_alloc(int argc, char **argv)
{
	struct sfs_meta m;
	char err[256] = "";
	uint64_t out;
	int root, ret;

	if (argc < 5)
		return 2;
	root = open_dir(argv[2]);
	ret = sfs_meta_open(root, -1, false, &m, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "%s: %s\n", argv[2], err);
		return 1;
	}
	ret = sfs_meta_ino_alloc(&m, (uint32_t)strtoul(argv[3], NULL, 0),
				 strtoull(argv[4], NULL, 0), &out);
	if (!ret)
		printf("%" PRIu64 "\n", out);
	else
		fprintf(stderr, "ino-alloc: %s\n", strerror(-ret));
	sfs_meta_close(&m);
	close(root);
	return ret ? 1 : 0;
}

static int cmd_check(int argc, char **argv)
{
	static const char *const names[] = { "absent", "current", "old" };
	enum sfs_meta_state st;
	char err[256] = "";
	int root, ret;

	if (argc < 3)
		return 2;
	root = open_dir(argv[2]);
	ret = sfs_meta_check(root, &st, err, sizeof(err));
	close(root);
	if (ret) {
		printf("error %s: %s\n", strerrorname_np(-ret) ? strerrorname_np(-ret) : "?", err);
		return 1;
	}
	printf("%s\n", names[st]);
	return 0;
}

#ifdef SFS_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	parse_all(data, size);
	return 0;
}
#else
/* fsuuid PATH: the identity sfs_fs_uuid gives the filesystem of PATH
 * (the registry's key for it), as 32 hex digits. */
static int cmd_fsuuid(int argc, char **argv)
{
	uint8_t u[16];
	int fd = argc > 2 ? open(argv[2], O_PATH | O_CLOEXEC) : -1;
	int ret = fd < 0 ? -errno : sfs_fs_uuid(fd, u);

	if (fd >= 0)
		close(fd);
	if (ret < 0) {
		fprintf(stderr, "fsuuid %s: %s\n", argc > 2 ? argv[2] : "", strerror(-ret));
		return 1;
	}
	for (int i = 0; i < 16; i++)
		printf("%02x", u[i]);
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	if (!strcmp(cmd, "fuzz"))
		return cmd_fuzz(argc, argv);
	if (!strcmp(cmd, "selftest") && argc > 2)
		return cmd_selftest(argv[2]);
	if (!strcmp(cmd, "crc32c"))
		return cmd_crc32c();
	if (!strcmp(cmd, "mkmeta"))
		return cmd_mkmeta(argc, argv);
	if (!strcmp(cmd, "header"))
		return cmd_header(argc, argv);
	if (!strcmp(cmd, "origin-set"))
		return cmd_origin_set(argc, argv);
	if (!strcmp(cmd, "origin-get"))
		return cmd_origin_get(argc, argv);
	if (!strcmp(cmd, "lowername-get"))
		return cmd_lowername_get(argc, argv);
	if (!strcmp(cmd, "lowername-set"))
		return cmd_lowername_set(argc, argv);
	if (!strcmp(cmd, "ino-alloc"))
		return cmd_ino_alloc(argc, argv);
	if (!strcmp(cmd, "check"))
		return cmd_check(argc, argv);
	if (!strcmp(cmd, "fsuuid"))
		return cmd_fsuuid(argc, argv);
	fprintf(stderr, "usage: format_fuzz fuzz [ITERATIONS [SEED]] | selftest DIR | crc32c |\n"
		"       mkmeta [--overlay] BRANCH [LOWER...] | header FILE VERSION [FLAGS] |\n"
		"       origin-set UPPER LOWER | origin-get PATH | lowername-get PATH |\n"
		"       lowername-set PATH LOWERPATH |\n"
		"       ino-alloc BRANCH FSID INO |\n"
		"       check BRANCH | fsuuid PATH\n");
	return 2;
}
#endif
