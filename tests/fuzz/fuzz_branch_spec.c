/* fuzz_branch_spec: fuzz target of the BRANCHES parser
 * (sfs_branch_spec_parse, union/branch_spec.c), whose source is included
 * here so that the target builds alone with any sanitizer. README.md in
 * this directory says how to run it.
 *
 *   standalone (random-input driver, any compiler):
 *     cc -O1 -g -fsanitize=address,undefined -D_GNU_SOURCE -I. \
 *        tests/fuzz/fuzz_branch_spec.c -o fuzz_branch_spec
 *     fuzz_branch_spec [ITERATIONS [SEED]]
 *   libFuzzer (clang):
 *     clang -g -O1 -fsanitize=fuzzer,address,undefined -DSFS_LIBFUZZER \
 *        -D_GNU_SOURCE -I. tests/fuzz/fuzz_branch_spec.c -o fuzz_branch_spec
 *     fuzz_branch_spec -dict=tests/fuzz/branch_spec.dict CORPUS_DIR
 *
 * What is checked besides surviving every input:
 *  - success gives one element per unescaped ':' plus one, each with a
 *    non-empty path and mode rw, ro or data, the first rw when no mode is
 *    given, no data-only branch above another (and never the first);
 *  - failure gives -EINVAL (or -ENOMEM) and a non-empty one-line message
 *    without control characters (it is printed to a terminal);
 *  - a spec written from known paths and modes, escaped as the README
 *    says, parses back to exactly those paths and modes (round trip);
 *  - a parsed spec, escaped again, parses to the same result;
 *  - the escapes of common/escape.c (control replies, listings,
 *    messages) on the same input: no control character comes out, with
 *    SFS_ESC_BACKSLASH sfs_unescape gives the input back, a short buffer
 *    gets a prefix cut between escapes, and sfs_msg_fit keeps within its
 *    buffer, keeping the start and the end of a message it shortens.
 * Exit 0 when all passed, 1 on a failed check. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "union/branch_spec.c"
#include "common/escape.c"

/* libFuzzer learns of a failed check by a crash */
#ifdef SFS_LIBFUZZER
#define ABORT_ON_FAILURE 1
#else
#define ABORT_ON_FAILURE 0
#endif

static unsigned failures;

#define CHECK(cond, ...) do {                                           \
	if (!(cond)) {                                                  \
		fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__);                           \
		fputc('\n', stderr);                                    \
		failures++;                                             \
		if (ABORT_ON_FAILURE || getenv("SFS_FUZZ_ABORT"))       \
			abort();                                        \
	}                                                               \
} while (0)

/* s with non-printable bytes as \xHH, for failure reports (two buffers
 * in turn: one report may show two strings). */
static const char *show(const char *s, size_t n)
{
	static char bufs[2][4096];
	static unsigned turn;
	char *out = bufs[turn++ % 2];
	size_t o = 0, cap = sizeof(bufs[0]);

	for (size_t i = 0; i < n && o + 5 < cap; i++) {
		unsigned char c = (unsigned char)s[i];

		o += (size_t)snprintf(out + o, cap - o,
				      c >= 0x20 && c < 0x7f ? "%c" : "\\x%02x", c);
	}
	out[o] = '\0';
	return out;
}

/* Unescaped ':' separators plus one, as the README defines elements. */
static size_t expected_count(const char *spec)
{
	size_t n = 1;

	for (const char *p = spec; *p; p++) {
		if (*p == '\\' && p[1])
			p++;
		else if (*p == ':')
			n++;
	}
	return n;
}

/* Appends path escaped as a BRANCHES element to buf at *len. */
static void put_escaped(char *buf, size_t *len, const char *path)
{
	for (const char *p = path; *p; p++) {
		if (*p == ':' || *p == '=' || *p == '\\')
			buf[(*len)++] = '\\';
		buf[(*len)++] = *p;
	}
}

/* Writes specs back as a BRANCHES string, every mode explicit. */
static char *unparse(const struct sfs_branch_spec *v, size_t n)
{
	size_t cap = 1, len = 0;
	char *buf;

	for (size_t i = 0; i < n; i++)
		cap += 2 * strlen(v[i].path) + 7;
	buf = malloc(cap);
	if (!buf)
		abort();
	for (size_t i = 0; i < n; i++) {
		if (i)
			buf[len++] = ':';
		put_escaped(buf, &len, v[i].path);
		len += (size_t)sprintf(buf + len, "=%s", sfs_branch_mode_name(v[i].mode));
	}
	buf[len] = '\0';
	return buf;
}

static void check_message(const char *err, const char *spec, size_t len)
{
	CHECK(err[0], "no message for \"%s\"", show(spec, len));
	for (const char *p = err; *p; p++)
		CHECK((unsigned char)*p >= 0x20 && *p != 0x7f,
		      "control character in the message \"%s\"", show(err, strlen(err)));
}

/* The parser on one NUL-terminated spec of len bytes. */
static void parse_one(const char *spec, size_t len)
{
	struct sfs_branch_spec *v = NULL, *w = NULL;
	size_t n = 0, m = 0;
	char err[512] = "", err2[512] = "";
	int ret = sfs_branch_spec_parse(spec, &v, &n, err, sizeof(err));

	if (ret) {
		CHECK(ret == -EINVAL || ret == -ENOMEM, "ret %d for \"%s\"", ret, show(spec, len));
		check_message(err, spec, len);
		return;
	}
	CHECK(n == expected_count(spec), "%zu elements, expected %zu, for \"%s\"",
	      n, expected_count(spec), show(spec, len));
	for (size_t i = 0; i < n; i++) {
		CHECK(v[i].path && v[i].path[0], "element %zu: empty path from \"%s\"",
		      i, show(spec, len));
		CHECK(v[i].mode == SFS_BRANCH_RW || v[i].mode == SFS_BRANCH_RO ||
		      (v[i].mode == SFS_BRANCH_DATA && i > 0),
		      "element %zu: mode %d", i, (int)v[i].mode);
		CHECK(i == 0 || v[i - 1].mode != SFS_BRANCH_DATA || v[i].mode == SFS_BRANCH_DATA,
		      "element %zu: below a data-only branch", i);
	}
	/* escaped again, it parses to the same */
	{
		char *again = unparse(v, n);

		ret = sfs_branch_spec_parse(again, &w, &m, err2, sizeof(err2));
		CHECK(ret == 0 && m == n, "re-parse of \"%s\" (from \"%s\"): %s",
		      show(again, strlen(again)), show(spec, len), err2);
		for (size_t i = 0; ret == 0 && i < n && i < m; i++)
			CHECK(!strcmp(v[i].path, w[i].path) && v[i].mode == w[i].mode,
			      "element %zu differs after a round trip of \"%s\"", i, show(spec, len));
		if (ret == 0)
			sfs_branch_spec_free(w, m);
		free(again);
	}
	sfs_branch_spec_free(v, n);
}

static void check_no_control(const char *out, const char *what, const char *in)
{
	for (const char *p = out; *p; p++)
		CHECK((unsigned char)*p >= 0x20 && *p != 0x7f, "control character in %s of \"%s\"",
		      what, show(in, strlen(in)));
}

/* sfs_escape with flags, whole and into a buffer of cut bytes. */
static void check_escape(const char *s, int flags, size_t cut)
{
	char *e = sfs_escape_dup(s, flags), *u, *small = malloc(cut + 1);
	size_t need = sfs_escape(NULL, 0, s, flags);

	if (!e || !small)
		abort();
	CHECK(need == strlen(e), "escape of \"%s\": length %zu, wrote %zu", show(s, strlen(s)),
	      need, strlen(e));
	check_no_control(e, "the escape", s);
	sfs_escape(small, cut + 1, s, flags);
	CHECK(strlen(small) <= cut && !strncmp(small, e, strlen(small)) &&
	      (strlen(small) == strlen(e) || strlen(small) + 4 > cut),
	      "escape of \"%s\" into %zu bytes: \"%s\"", show(s, strlen(s)), cut + 1, small);
	if (flags & SFS_ESC_BACKSLASH) {
		u = strdup(e);
		if (!u)
			abort();
		sfs_unescape(u);
		CHECK(!strcmp(u, s), "unescape of the escape of \"%s\" is \"%s\"",
		      show(s, strlen(s)), show(u, strlen(u)));
		free(u);
	}
	free(small);
	free(e);
}

/* sfs_msg_fit into len bytes: the escaped message whole, or its start,
 * "..." and its end, in len - 1 bytes at most. */
static void check_msg_fit(const char *s, size_t len)
{
	char *e = sfs_escape_dup(s, 0), *out = malloc(len);
	size_t el, ol, end;

	if (!e || !out)
		abort();
	sfs_msg_fit(out, len, "%s", s);
	el = strlen(e);
	ol = strlen(out);
	check_no_control(out, "the message", s);
	CHECK(ol < len, "message of %zu bytes in a buffer of %zu", ol, len);
	if (el < len) {
		CHECK(!strcmp(out, e), "message \"%s\" changed: \"%s\"", show(s, strlen(s)), out);
	} else {
		/* out is e's first h bytes, "..." and e's last bytes: at least
		 * the two thirds of the room that the end gets, less an escape
		 * and a UTF-8 tail not cut */
		int found = 0;

		for (size_t h = 0; !found && h + 3 <= ol; h++) {
			end = ol - h - 3;
			found = !strncmp(out + h, "...", 3) && !strncmp(out, e, h) &&
				!strcmp(out + h + 3, e + el - end) &&
				end + 7 >= (len - 4) - (len - 4) / 3;
		}
		CHECK(found, "message \"%s\" shortened to %zu bytes: \"%s\"", show(s, strlen(s)),
		      len, out);
	}
	free(out);
	free(e);
}

/* Any bytes: cut at the first NUL, as a command line would. */
static void fuzz_bytes(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);   /* exact size: ASan sees overreads */
	size_t len;

	if (!s)
		return;
	memcpy(s, data, size);
	s[size] = '\0';
	len = strlen(s);
	parse_one(s, len);
	check_escape(s, 0, len % 37);
	check_escape(s, SFS_ESC_BACKSLASH, len % 13);
	check_escape(s, SFS_ESC_BACKSLASH | SFS_ESC_SPACE, len * 3 % 41);
	check_msg_fit(s, 16 + len % 48);
	check_msg_fit(s, 512);
	free(s);
}

#ifdef SFS_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_bytes(data, size);
	return 0;
}
#else
/* ------------------------------------------------ standalone driver */

static uint64_t rng_state;

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

/* The characters that mean something, and some that do not. */
static const char alphabet[] = ":=\\rwo/ab.\n\t \x01\x7f\xff\xc3\xa9";

/* A string made of the alphabet, tokens and random bytes. */
static size_t random_spec(char *buf, size_t cap)
{
	static const char *const tokens[] = {
		"=rw", "=ro", "=", "==", ":", "::", "\\", "\\:", "\\=", "\\\\",
		"/tmp", "..", "=rx", "=RW", "=rw ", "\\\n",
	};
	size_t len = 0, target = rndn(cap);

	while (len < target) {
		switch (rndn(3)) {
		case 0:
			buf[len++] = alphabet[rndn(sizeof(alphabet) - 1)];
			break;
		case 1: {
			const char *t = tokens[rndn(sizeof(tokens) / sizeof(tokens[0]))];
			size_t tl = strlen(t);

			if (len + tl > target)
				goto out;
			memcpy(buf + len, t, tl);
			len += tl;
			break;
		}
		default:
			buf[len] = (char)(1 + rndn(255));   /* no NUL inside */
			len++;
			break;
		}
	}
out:
	buf[len] = '\0';
	return len;
}

/* Known paths and modes, escaped: must parse back to exactly them. */
static void round_trip(void)
{
	enum { MAXN = 6, MAXP = 24 };
	struct sfs_branch_spec want[MAXN], *got = NULL;
	char paths[MAXN][MAXP + 1], spec[MAXN * (2 * MAXP + 4) + 1], err[512] = "";
	int explicit_mode[MAXN];
	size_t n = 1 + rndn(MAXN), len = 0, gn = 0;
	int ret;

	for (size_t i = 0; i < n; i++) {
		size_t pl = 1 + rndn(MAXP);

		for (size_t k = 0; k < pl; k++) {
			char c;

			do
				c = rndn(4) ? alphabet[rndn(sizeof(alphabet) - 1)] : (char)(1 + rndn(255));
			while (!c);
			paths[i][k] = c;
		}
		paths[i][pl] = '\0';
		want[i].path = paths[i];
		explicit_mode[i] = (int)rndn(3);  /* 0: none, 1: rw, 2: ro */
		want[i].mode = explicit_mode[i] == 1 ? SFS_BRANCH_RW :
			       explicit_mode[i] == 2 ? SFS_BRANCH_RO :
			       i == 0 ? SFS_BRANCH_RW : SFS_BRANCH_RO;
		if (i)
			spec[len++] = ':';
		put_escaped(spec, &len, paths[i]);
		if (explicit_mode[i]) {
			memcpy(spec + len, explicit_mode[i] == 1 ? "=rw" : "=ro", 3);
			len += 3;
		}
	}
	spec[len] = '\0';
	ret = sfs_branch_spec_parse(spec, &got, &gn, err, sizeof(err));
	CHECK(ret == 0, "valid spec \"%s\" refused: %s", show(spec, len), err);
	if (ret)
		return;
	CHECK(gn == n, "valid spec \"%s\": %zu elements, expected %zu", show(spec, len), gn, n);
	for (size_t i = 0; i < n && i < gn; i++) {
		CHECK(!strcmp(got[i].path, want[i].path), "element %zu of \"%s\": path \"%s\"",
		      i, show(spec, len), got[i].path);
		CHECK(got[i].mode == want[i].mode, "element %zu of \"%s\": mode %d",
		      i, show(spec, len), (int)got[i].mode);
	}
	sfs_branch_spec_free(got, gn);
	parse_one(spec, len);
}

int main(int argc, char **argv)
{
	unsigned long iters = argc > 1 ? strtoul(argv[1], NULL, 0) : 100000;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
	static char buf[4097];
	static const char *const fixed[] = {
		"", ":", "::", "\\", "a\\", "=", "a=", "a=rw=ro", "a=rx", "=rw",
		"a:b=ro:c", "a\\:b\\=c\\\\=ro", "a:", ":a", "a\\", "a=\\rw",
	};

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		parse_one(fixed[i], strlen(fixed[i]));
	rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
	for (unsigned long i = 0; i < iters && failures < 20; i++) {
		size_t len = random_spec(buf, i % 16 ? 64 : sizeof(buf) - 1);

		fuzz_bytes((const uint8_t *)buf, len);
		round_trip();
	}
	printf("fuzz_branch_spec: %lu iterations, seed %llu, %u failures\n", iters,
	       (unsigned long long)seed, failures);
	return failures ? 1 : 0;
}
#endif
