/* fuzz_opts: fuzz target of the daemon's command-line parser
 * (sfs_opts_parse, stackfs/options/opts.c, on libfuse's fuse_opt_parse), whose
 * source is included here. The input becomes an argv: "stackfsd" and the
 * input split at its NUL bytes. README.md in this directory says how to
 * run it.
 *
 *   standalone (random-input driver, any compiler):
 *     cc -O1 -g -fsanitize=address,undefined -D_GNU_SOURCE \
 *        -DFUSE_USE_VERSION=314 -I. $(pkg-config --cflags fuse3) \
 *        tests/fuzz/fuzz_opts.c -o fuzz_opts $(pkg-config --libs fuse3)
 *     fuzz_opts [ITERATIONS [SEED]]
 *   libFuzzer (clang): the same with -fsanitize=fuzzer,address,undefined
 *     -DSFS_LIBFUZZER; run with -dict=tests/fuzz/opts.dict CORPUS_DIR.
 *
 * What is checked besides surviving every input (no crash, no leak):
 *  - success leaves a usable result: a timeout that is a number (not NaN)
 *    and not negative, a known whiteout style, a log FILE that is an
 *    absolute path, the FUSE arguments a NULL-terminated vector ending
 *    with the options the daemon adds;
 *  - -o lowerdir=A:B,upperdir=U (the overlayfs spelling) becomes a
 *    BRANCHES spec that sfs_branch_spec_parse reads back as exactly
 *    U=rw:A=ro:B=ro, whatever '=' the paths hold.
 * The parser prints its refusals on stderr: they go to /dev/null (the
 * sanitizers write to the real stderr). Exit 0 when all passed, 1 on a
 * failed check. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stackfs/options/opts.c"
#include "stackfs/options/opts_branches.c"
#include "stackfs/options/compat.c"
#include "stackfs/options/idmap.c"
#include "stackfs/options/mountflags.c"
#include "common/optlist.c"
#include "common/foreign.c"
#include "union/branch_spec.c"
#include "union/branch_file.c"
#include "common/escape.c"
#include "xattr/records.c"

/* compat.c logs its notes once the daemon's log is open: not here */
void sfs_log(int level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

/* mountflags.c's rootless note asks whether the log is the terminal */
bool sfs_log_keeps_stderr(void)
{
	return false;
}

/* libFuzzer learns of a failed check by a crash */
#ifdef SFS_LIBFUZZER
#define ABORT_ON_FAILURE 1
#else
#define ABORT_ON_FAILURE 0
#endif

static unsigned failures;
static FILE *report;  /* the real stderr */

#define CHECK(cond, ...) do {                                           \
	if (!(cond)) {                                                  \
		fprintf(report, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
		fprintf(report, __VA_ARGS__);                           \
		fputc('\n', report);                                    \
		fflush(report);                                         \
		failures++;                                             \
		if (ABORT_ON_FAILURE || getenv("SFS_FUZZ_ABORT"))       \
			abort();                                        \
	}                                                               \
} while (0)

static void quiet_init(void)
{
	FILE *null;

	if (report)
		return;
	report = fdopen(dup(STDERR_FILENO), "w");
	null = fopen("/dev/null", "w");
	if (!report || !null)
		abort();
	stderr = null;   /* opts.c and libfuse's default logger */
}

/* argv for display: words joined by spaces, bytes escaped. */
static const char *show_argv(int argc, char **argv)
{
	static char out[8192];
	size_t o = 0;

	for (int i = 0; i < argc && o + 8 < sizeof(out); i++) {
		out[o++] = '\'';
		for (const char *p = argv[i]; *p && o + 8 < sizeof(out); p++) {
			unsigned char c = (unsigned char)*p;

			o += (size_t)snprintf(out + o, sizeof(out) - o,
					      c >= 0x20 && c < 0x7f ? "%c" : "\\x%02x", c);
		}
		out[o++] = '\'';
		out[o++] = ' ';
	}
	out[o] = '\0';
	return out;
}

/* What a clean overlay-style case must give (NULL: not such a case). */
struct expect_ovl {
	const char *upper;
	const char *lower[8];
	size_t nlower;
	const char *mountpoint;
};

/* Runs the parser on argv (argv[argc] == NULL) as main() does. */
static void parse_argv(int argc, char **argv, const struct expect_ovl *x)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct sfs_opts o;
	int ret;

	quiet_init();
	ret = sfs_opts_parse(&args, &o);
	if (ret == 0) {
		CHECK(!isnan(o.timeout) && o.timeout >= 0, "timeout %g accepted from %s",
		      o.timeout, show_argv(argc, argv));
		CHECK(o.whiteout == SFS_WH_AUFS || o.whiteout == SFS_WH_OVERLAY,
		      "whiteout style %d", (int)o.whiteout);
		CHECK(o.log_to != SFS_LOG_TO_FILE || (o.log_file && o.log_file[0] == '/'),
		      "log file \"%s\" accepted from %s", o.log_file ? o.log_file : "(null)",
		      show_argv(argc, argv));
		CHECK(args.argc >= 2 && args.argv[args.argc] == NULL &&
		      /* fsname=stackfs unless the user named the source */
		      !strncmp(args.argv[args.argc - 1], "-odefault_permissions,subtype=stackfs",
			       strlen("-odefault_permissions,subtype=stackfs")),
		      "FUSE arguments after %s", show_argv(argc, argv));
	} else {
		CHECK(ret == -EINVAL || ret == -ENOMEM, "ret %d from %s", ret,
		      show_argv(argc, argv));
	}
	if (x) {
		struct sfs_branch_spec *v = NULL;
		size_t n = 0, want = x->nlower + (x->upper != NULL);
		char err[512] = "";
		int pr = -1;

		CHECK(ret == 0 && o.branches && o.mountpoint, "overlay options refused: %s",
		      show_argv(argc, argv));
		if (ret == 0 && o.branches)
			pr = sfs_branch_spec_parse(o.branches, &v, &n, err, sizeof(err));
		CHECK(ret != 0 || pr == 0, "spec \"%s\" made from %s does not parse: %s",
		      o.branches ? o.branches : "(null)", show_argv(argc, argv), err);
		if (pr == 0) {
			CHECK(n == want, "spec \"%s\": %zu branches, expected %zu", o.branches, n, want);
			for (size_t i = 0; i < n && i < want; i++) {
				const char *p = x->upper ? (i ? x->lower[i - 1] : x->upper) : x->lower[i];
				int rw = x->upper && i == 0;

				CHECK(!strcmp(v[i].path, p) && (v[i].mode == SFS_BRANCH_RW) == rw,
				      "branch %zu of \"%s\" is \"%s\" %s, expected \"%s\" %s", i,
				      o.branches, v[i].path, v[i].mode ? "rw" : "ro", p, rw ? "rw" : "ro");
			}
			sfs_branch_spec_free(v, n);
		}
		CHECK(ret != 0 || (o.mountpoint && !strcmp(o.mountpoint, x->mountpoint)),
		      "mount point \"%s\", expected \"%s\"", o.mountpoint ? o.mountpoint : "(null)",
		      x->mountpoint);
	}
	fuse_opt_free_args(&args);
	sfs_opts_free(&o);
}

/* Any bytes: argv[0] "stackfsd", then the input split at NULs. */
static void fuzz_bytes(const uint8_t *data, size_t size)
{
	enum { MAXARGS = 64 };
	char *buf = malloc(size + 1), *argv[MAXARGS + 2];
	int argc = 0;

	if (!buf)
		return;
	memcpy(buf, data, size);
	buf[size] = '\0';
	argv[argc++] = (char *)"stackfsd";
	for (size_t p = 0; p <= size && argc <= MAXARGS; p += strlen(buf + p) + 1)
		argv[argc++] = buf + p;
	argv[argc] = NULL;
	parse_argv(argc, argv, NULL);
	free(buf);
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

static const char *pick(const char *const *v, size_t n)
{
	return v[rndn(n)];
}
#define PICK(v) pick(v, sizeof(v) / sizeof(v[0]))

/* One option word of -o: a known name with a value, or junk. */
static size_t random_option(char *b, size_t cap)
{
	static const char *const names[] = {
		"timeout=", "whiteout=", "lowerdir=", "upperdir=", "workdir=", "fsync",
		"sync=", "volatile", "accept_unclean",
		"upgrade", "debug", "allow_other", "default_permissions", "ro", "rw",
		"max_read=", "subtype=", "fsname=", "-f", "-d", "-h", "--help", "-V",
		"timeout", "whiteout", "", "=", "fsync=1", "nosuid", "dev", "foo",
	};
	static const char *const values[] = {
		"", "0", "1", "-1", "60", "1.5", "1e999", "-1e999", "nan", "-nan", "inf",
		"0x10", " 5", "5 ", "abc", "1abc", "wh", "overlay", "aufs", "WH", "/tmp",
		"/tmp:/", "a:b", "a::b", ":", "a\\", "a\\:b", "a\\\\:b", "a=b", "\\", ",",
		"99999999999999999999", "/nonexistent", ".", "..", "normal", "always",
		"volatile",
	};
	size_t len = (size_t)snprintf(b, cap, "%s", PICK(names));

	if (len && b[len - 1] == '=')
		len += (size_t)snprintf(b + len, cap - len, "%s", PICK(values));
	while (rndn(4) == 0 && len + 2 < cap) {
		char c = (char)(1 + rndn(255));   /* junk, never NUL */

		b[len++] = rndn(2) ? c : ",\\:="[rndn(4)];
	}
	b[len] = '\0';
	return len;
}

/* A random command line built from options, operands and junk. */
static void random_case(void)
{
	enum { MAXARGS = 12, WORD = 256 };
	static char words[MAXARGS][WORD];
	static const char *const operands[] = {
		"up:lo", "/tmp", "mnt", "overlay", "-", "--", "-o", "-x", "a=rw:b",
		"", "/nonexistent/mnt", "up\\:x=ro",
	};
	char *argv[MAXARGS + 2];
	int argc = 0;
	size_t n = rndn(MAXARGS);

	argv[argc++] = (char *)"stackfsd";
	for (size_t i = 0; i < n; i++) {
		char *w = words[i];

		switch (rndn(4)) {
		case 0:   /* -o OPTS as two words */
			if (i + 1 < n) {
				snprintf(w, WORD, "-o");
				argv[argc++] = w;
				w = words[++i];
			}
			/* fall through */
		case 1: { /* OPTS, maybe several, maybe glued to -o */
			size_t len = rndn(3) ? 0 : (size_t)snprintf(w, WORD, "-o");

			do {
				len += random_option(w + len, WORD - len - 1);
				if (len + 1 < WORD - 64 && rndn(2))
					w[len++] = ',';
				else
					break;
			} while (len < WORD - 64);
			w[len] = '\0';
			break;
		}
		case 2:
			snprintf(w, WORD, "%s", PICK(operands));
			break;
		default: {
			size_t len = rndn(16);

			for (size_t k = 0; k < len; k++)
				w[k] = (char)(1 + rndn(255));
			w[len] = '\0';
			break;
		}
		}
		argv[argc++] = w;
	}
	argv[argc] = NULL;
	parse_argv(argc, argv, NULL);
}

/* A clean overlay-style command line whose result is known. */
static void overlay_case(void)
{
	static const char alpha[] = "abz/._-=";  /* '=' must be escaped on the way */
	static char paths[9][16], opt[256];
	struct expect_ovl x = { .mountpoint = "mnt" };
	char *argv[6];
	int argc = 0;
	size_t len;

	for (size_t i = 0; i < 9; i++) {
		size_t pl = 1 + rndn(sizeof(paths[i]) - 1);

		for (size_t k = 0; k < pl; k++)
			paths[i][k] = alpha[rndn(sizeof(alpha) - 1)];
		paths[i][pl] = '\0';
	}
	x.nlower = 1 + rndn(8);
	len = (size_t)snprintf(opt, sizeof(opt), "lowerdir=");
	for (size_t i = 0; i < x.nlower; i++) {
		x.lower[i] = paths[i];
		len += (size_t)snprintf(opt + len, sizeof(opt) - len, "%s%s", i ? ":" : "", paths[i]);
	}
	if (rndn(2)) {
		x.upper = paths[8];
		snprintf(opt + len, sizeof(opt) - len, ",upperdir=%s", paths[8]);
	}
	argv[argc++] = (char *)"stackfsd";
	argv[argc++] = (char *)"-o";
	argv[argc++] = opt;
	if (rndn(2))
		argv[argc++] = (char *)"overlay";   /* a SOURCE label */
	argv[argc++] = (char *)"mnt";
	argv[argc] = NULL;
	parse_argv(argc, argv, &x);
}

/* Raw bytes, as the libFuzzer target takes them: mostly "-o", option
 * characters and NULs. */
static void bytes_case(void)
{
	static const char chars[] = "-o,=:\\afot";
	uint8_t buf[128];
	size_t n = rndn(sizeof(buf));

	for (size_t i = 0; i < n; i++)
		buf[i] = rndn(4) ? (uint8_t)chars[rndn(sizeof(chars))] : (uint8_t)rnd();
	fuzz_bytes(buf, n);
}

int main(int argc, char **argv)
{
	unsigned long iters = argc > 1 ? strtoul(argv[1], NULL, 0) : 100000;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;

	rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
	for (unsigned long i = 0; i < iters && failures < 20; i++) {
		if (i % 8 == 0)
			overlay_case();
		else if (i % 8 == 1)
			bytes_case();
		else
			random_case();
	}
	printf("fuzz_opts: %lu iterations, seed %llu, %u failures\n", iters,
	       (unsigned long long)seed, failures);
	return failures ? 1 : 0;
}
#endif
