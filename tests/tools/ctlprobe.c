/* ctlprobe: sends raw bytes to a stackfs control socket (protocol:
 * common/control.h) and prints what comes back, for the bad-input and
 * security tests. Unlike cli/client.c it sends anything: malformed,
 * oversized or binary requests, slowly or not at all.
 *
 *   ctlprobe [OPTIONS] SOCKET REQUEST
 *
 * REQUEST, one of:
 *   words W...     a well-formed request: each word NUL-ended, then a NUL
 *   raw STRING     STRING with C escapes (\0 \n \t \\ \xHH), nothing added
 *   hex HEX        the bytes given in hex ("6c69737400" ...)
 *   random N SEED  N pseudo-random bytes (splitmix64 from SEED)
 *   fill N BYTE    N times the byte BYTE (a number, 0..255)
 *   empty          no byte at all
 * OPTIONS:
 *   --hold SECS    after sending, keep the write side open SECS seconds
 *                  (default: shut it down at once, so the server sees EOF)
 *   --trickle MS   send one byte every MS milliseconds
 *   --timeout SECS wait at most SECS for the reply (default 10)
 *
 * Output (stdout), one line each:
 *   sent N [peer closed]      bytes written (the server may stop reading)
 *   reply TEXT                the reply, escaped: printable ASCII as is,
 *                             '\n' as \n, '\\' as \\, other bytes \xHH
 *   closed                    the server closed without replying
 *   timeout                   no reply nor close within the timeout
 * Exit: 0 a reply or a close, 1 a timeout, 2 usage or connect error. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static uint64_t rng;

static uint64_t rnd(void)
{
	uint64_t z = (rng += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static int usage(void)
{
	fprintf(stderr, "usage: ctlprobe [--hold SECS] [--trickle MS] [--timeout SECS] SOCKET\n"
		"       words W... | raw STRING | hex HEX | random N SEED | fill N BYTE | empty\n");
	return 2;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Builds the request into *buf; its length, or -1 on a usage error. */
static long build(int argc, char **argv, uint8_t **buf)
{
	const char *kind = argv[0];
	size_t cap = 64, n = 0;
	uint8_t *b;

	if (!strcmp(kind, "random") || !strcmp(kind, "fill")) {
		if (argc != 3)
			return -1;
		cap = strtoul(argv[1], NULL, 0) + 1;
	} else {
		for (int i = 1; i < argc; i++)
			cap += strlen(argv[i]) + 1;
	}
	b = malloc(cap);
	if (!b)
		return -1;
	if (!strcmp(kind, "words")) {
		for (int i = 1; i < argc; i++) {
			memcpy(b + n, argv[i], strlen(argv[i]) + 1);
			n += strlen(argv[i]) + 1;
		}
		b[n++] = '\0';
	} else if (!strcmp(kind, "raw") && argc == 2) {
		for (const char *p = argv[1]; *p; p++) {
			if (*p != '\\' || !p[1]) {
				b[n++] = (uint8_t)*p;
				continue;
			}
			switch (*++p) {
			case '0': b[n++] = 0; break;
			case 'n': b[n++] = '\n'; break;
			case 't': b[n++] = '\t'; break;
			case 'x':
				if (hexval(p[1]) >= 0 && hexval(p[2]) >= 0) {
					b[n++] = (uint8_t)(hexval(p[1]) * 16 + hexval(p[2]));
					p += 2;
					break;
				}
				/* fall through */
			default: b[n++] = (uint8_t)*p; break;
			}
		}
	} else if (!strcmp(kind, "hex") && argc == 2) {
		for (const char *p = argv[1]; p[0] && p[1]; p += 2) {
			if (hexval(p[0]) < 0 || hexval(p[1]) < 0) {
				free(b);
				return -1;
			}
			b[n++] = (uint8_t)(hexval(p[0]) * 16 + hexval(p[1]));
		}
	} else if (!strcmp(kind, "random")) {
		rng = strtoull(argv[2], NULL, 0) * 0x9E3779B97F4A7C15ull + 1;
		for (n = 0; n + 1 < cap; n++)
			b[n] = (uint8_t)rnd();
	} else if (!strcmp(kind, "fill")) {
		memset(b, (int)strtoul(argv[2], NULL, 0), cap - 1);
		n = cap - 1;
	} else if (!strcmp(kind, "empty") && argc == 1) {
		n = 0;
	} else {
		free(b);
		return -1;
	}
	*buf = b;
	return (long)n;
}

static void print_escaped(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n')
			fputs("\\n", stdout);
		else if (p[i] == '\\')
			fputs("\\\\", stdout);
		else if (p[i] >= 0x20 && p[i] < 0x7f)
			putchar(p[i]);
		else
			printf("\\x%02x", p[i]);
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	double hold = 0, timeout = 10;
	long trickle_ms = -1, len;
	size_t sent = 0, got = 0;
	uint8_t *req = NULL, reply[65536];
	int i = 1, fd, closed_early = 0;
	struct timespec start, now;

	for (; i < argc && !strncmp(argv[i], "--", 2); i += 2) {
		if (i + 1 >= argc)
			return usage();
		if (!strcmp(argv[i], "--hold"))
			hold = strtod(argv[i + 1], NULL);
		else if (!strcmp(argv[i], "--trickle"))
			trickle_ms = strtol(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--timeout"))
			timeout = strtod(argv[i + 1], NULL);
		else
			return usage();
	}
	if (argc - i < 2 || strlen(argv[i]) >= sizeof(a.sun_path))
		return usage();
	len = build(argc - i - 1, argv + i + 1, &req);
	if (len < 0)
		return usage();
	signal(SIGPIPE, SIG_IGN);
	strcpy(a.sun_path, argv[i]);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		printf("connect %s: %s\n", argv[i], strerror(errno));
		return 2;
	}

	while (sent < (size_t)len) {
		size_t chunk = trickle_ms >= 0 ? 1 : (size_t)len - sent;
		ssize_t w = write(fd, req + sent, chunk);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			closed_early = 1;  /* EPIPE, ECONNRESET: it stopped reading */
			break;
		}
		sent += (size_t)w;
		if (trickle_ms > 0 && sent < (size_t)len)
			usleep((useconds_t)trickle_ms * 1000);
	}
	printf("sent %zu%s\n", sent, closed_early ? " peer closed" : "");
	fflush(stdout);
	free(req);
	if (hold > 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		/* the server may answer (and close) before the hold is over */
		poll(&p, 1, (int)(hold * 1000));
	}
	shutdown(fd, SHUT_WR);

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		double left;
		ssize_t r;

		clock_gettime(CLOCK_MONOTONIC, &now);
		left = timeout - (double)(now.tv_sec - start.tv_sec) -
		       (double)(now.tv_nsec - start.tv_nsec) / 1e9;
		if (left <= 0 || poll(&p, 1, (int)(left * 1000)) == 0) {
			if (got) {
				fputs("reply ", stdout);
				print_escaped(reply, got);
				putchar('\n');
			}
			puts("timeout");
			return 1;
		}
		r = read(fd, reply + got, sizeof(reply) - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || (got += (size_t)r) == sizeof(reply))
			break;   /* EOF, a reset, or more than we keep */
	}
	close(fd);
	if (!got) {
		puts("closed");
		return 0;
	}
	fputs("reply ", stdout);
	print_escaped(reply, got);
	putchar('\n');
	return 0;
}
