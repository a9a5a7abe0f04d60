/* The client side of the control channel (protocol: stackfs/control.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli/cli.h"
#include "stackfs/control.h"
#include "stackfs/runtime.h"

static int connect_mount(const char *mp, char *err, size_t errlen)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	unsigned ma, mi;
	char type[64];
	int fd, ret = sfs_runtime_find_mount(mp, &ma, &mi, type, sizeof(type));

	if (ret == 0 && strcmp(type, "fuse.stackfs") != 0)
		ret = -EINVAL;
	if (ret < 0) {
		snprintf(err, errlen, "%s: %s", mp, ret == -EINVAL ? "not a stackfs mount" :
			 ret == -ENOENT ? "not mounted" : strerror(-ret));
		return ret;
	}
	snprintf(a.sun_path, sizeof(a.sun_path), "%s/%u:%u/%s", sfs_runtime_base(), ma, mi,
		 SFS_CTL_NAME);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: control channel %s: %s", mp, a.sun_path, strerror(-ret));
		if (fd >= 0)
			close(fd);
		return ret;
	}
	return fd;
}

static int send_words(int fd, const char *const *w)
{
	for (; *w; w++)
		if (write(fd, *w, strlen(*w) + 1) < 0)
			return -errno;
	return write(fd, "", 1) < 0 ? -errno : 0;
}

static int read_all(int fd, char **out, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);

	while (buf) {
		ssize_t r = read(fd, buf + n, cap - n);

		if (r < 0) {
			free(buf);
			return -errno;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == cap) {
			char *nb = cap < SFS_CTL_MAX_REPLY ? realloc(buf, cap * 2 + 1) : NULL;

			if (!nb) {
				free(buf);
				return -EMSGSIZE;
			}
			buf = nb;
			cap *= 2;
		}
	}
	if (!buf)
		return -ENOMEM;
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

/* "ERR ENAME message": the errno and the message. */
static int parse_error(const char *line, char *err, size_t errlen)
{
	char name[32];
	int off = 0;

	if (sscanf(line, "ERR %31s %n", name, &off) < 1)
		return -EPROTO;
	snprintf(err, errlen, "%.*s", (int)strcspn(line + off, "\n"), line + off);
	for (int e = 1; e < 134; e++)
		if (strerrorname_np(e) && !strcmp(strerrorname_np(e), name))
			return -e;
	return -EIO;
}

int sfs_ctl_call(const char *mp, const char *const *words, char **body,
		 char *err, size_t errlen)
{
	char *reply = NULL;
	size_t len = 0;
	int fd = connect_mount(mp, err, errlen), ret;

	if (fd < 0)
		return fd;
	ret = send_words(fd, words);
	if (ret == 0)
		ret = read_all(fd, &reply, &len);
	close(fd);
	if (ret < 0) {
		snprintf(err, errlen, "%s: control channel: %s", mp, strerror(-ret));
		return ret;
	}
	if (strncmp(reply, "OK\n", 3) == 0) {
		memmove(reply, reply + 3, len - 2);
		*body = reply;
		return 0;
	}
	ret = parse_error(reply, err, errlen);
	if (ret == -EPROTO)
		snprintf(err, errlen, "%s: control channel: bad reply", mp);
	free(reply);
	return ret;
}
