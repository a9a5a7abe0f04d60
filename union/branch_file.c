/* A branches file (-o branches=FILE): one branch a line, highest first,
 * each written as an element of BRANCHES (DIR[=MODE], '\' escaping the
 * next character) except that ':' needs no escape; empty lines and lines
 * that start with '#' are skipped. It becomes a BRANCHES spec, so one
 * parser and one set of rules take both. For unions of more branches
 * than a command line carries (an argument holds 128 KiB: 1,000 layer
 * paths of an engine's storage come near it) or that a tool writes. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/escape.h"
#include "union/branch_spec.h"

/* A file of more is no list of branches. */
#define BRANCH_FILE_MAX (16u << 20)

/* The whole of the regular file path (at most BRANCH_FILE_MAX bytes),
 * NUL-terminated, in *out, its length in *outlen. 0 or -errno with a
 * message in err. */
static int read_all(const char *path, char **out, size_t *outlen, char *err, size_t errlen)
{
	/* O_NONBLOCK: a fifo is refused below, never waited on */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	ssize_t r = 0;
	int ret = fd < 0 ? -errno : 0;

	if (ret == 0 && fstat(fd, &st) < 0)
		ret = -errno;
	if (ret == 0 && !S_ISREG(st.st_mode))
		ret = -EINVAL;
	if (ret == 0 && st.st_size > BRANCH_FILE_MAX)
		ret = -EFBIG;
	if (ret == 0 && !(buf = malloc((size_t)st.st_size + 1)))
		ret = -ENOMEM;
	while (ret == 0 && len < (size_t)st.st_size &&
	       (r = read(fd, buf + len, (size_t)st.st_size - len)) != 0)
		ret = r < 0 ? (errno == EINTR ? 0 : -errno) : (len += (size_t)r, 0);
	if (fd >= 0)
		close(fd);
	if (ret < 0) {
		free(buf);
		sfs_msg_fit(err, errlen, "branches file %s: %s", path,
			    ret == -EINVAL ? "not a regular file" :
			    ret == -EFBIG ? "larger than 16 MiB" : strerror(-ret));
		return ret;
	}
	buf[len] = '\0';
	*out = buf;
	*outlen = len;
	return 0;
}

/* Appends the line [p, end) to the spec at *dst, its ':' escaped. */
static char *add_line(char *dst, const char *p, const char *end, bool first)
{
	if (!first)
		*dst++ = ':';
	for (; p < end; p++) {
		if (*p == '\\' && p + 1 < end) {
			*dst++ = *p++;
		} else if (*p == ':') {
			*dst++ = '\\';
		}
		*dst++ = *p;
	}
	return dst;
}

int sfs_branch_file_spec(const char *path, char **spec, char *err, size_t errlen)
{
	char *text = NULL, *out = NULL, *dst;
	const char *p, *end;
	size_t len = 0, n = 0;
	int ret = read_all(path, &text, &len, err, errlen);

	if (ret < 0)
		return ret;
	if (memchr(text, '\0', len)) {
		sfs_msg_fit(err, errlen, "branches file %s: holds a NUL byte", path);
		ret = -EINVAL;
	} else if (!(out = malloc(2 * len + 1))) {
		sfs_msg_fit(err, errlen, "branches file %s: %s", path, strerror(ENOMEM));
		ret = -ENOMEM;
	}
	for (p = text, dst = out; ret == 0 && *p; p = *end ? end + 1 : end) {
		end = strchrnul(p, '\n');
		if (end > p && end[-1] == '\r')
			end--; /* CRLF */
		if (end > p && *p != '#')
			dst = add_line(dst, p, end, n++ == 0);
		if (*end == '\r')
			end++;
	}
	if (ret == 0 && n == 0) {
		sfs_msg_fit(err, errlen, "branches file %s: no branch in it", path);
		ret = -EINVAL;
	}
	free(text);
	if (ret < 0) {
		free(out);
		return ret;
	}
	*dst = '\0';
	*spec = out;
	return 0;
}
