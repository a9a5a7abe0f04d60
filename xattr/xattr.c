/* Pass-through of extended attributes of real entries. An entry is named
 * by a directory fd and a name, or by its own O_PATH fd and "" (not for
 * symlinks: an O_PATH fd only reaches the inode through the
 * /proc/self/fd magic link, which the xattr calls would follow). */
#include <errno.h>
#include <fcntl.h>
#include <linux/types.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "xattr/xattr.h"

#ifndef SYS_setxattrat
#define SYS_setxattrat 463
#define SYS_getxattrat 464
#define SYS_listxattrat 465
#define SYS_removexattrat 466
#endif

struct sfs_xattr_args {
	__aligned_u64 value;
	__u32 size;
	__u32 flags;
};

/* Set once the running kernel lacks the *xattrat calls (before 6.13). */
static int no_at_calls;

/* "/proc/self/fd/N" or "/proc/self/fd/N/name". */
static void proc_path(int fd, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/self/fd/%d%s%s", fd, name[0] ? "/" : "", name);
}

static bool use_at(const char *name)
{
	return name[0] && !no_at_calls;
}

static long at_result(long r)
{
	if (r < 0 && errno == ENOSYS)
		no_at_calls = 1;
	return r < 0 ? -errno : r;
}

ssize_t sfs_xattr_get(int fd, const char *ent, const char *name, void *value, size_t size)
{
	struct sfs_xattr_args a = { .value = (uintptr_t)value, .size = (__u32)size };
	char p[300];
	long r;

	if (use_at(ent)) {
		r = at_result(syscall(SYS_getxattrat, fd, ent, AT_SYMLINK_NOFOLLOW, name, &a, sizeof(a)));
		if (r != -ENOSYS)
			return r;
	}
	proc_path(fd, ent, p, sizeof(p));
	r = ent[0] ? lgetxattr(p, name, value, size) : getxattr(p, name, value, size);
	return r < 0 ? -errno : r;
}

int sfs_xattr_set(int fd, const char *ent, const char *name, const void *value,
		  size_t size, int flags)
{
	struct sfs_xattr_args a = {
		.value = (uintptr_t)value, .size = (__u32)size, .flags = (__u32)flags,
	};
	char p[300];
	long r;

	if (use_at(ent)) {
		r = at_result(syscall(SYS_setxattrat, fd, ent, AT_SYMLINK_NOFOLLOW, name, &a, sizeof(a)));
		if (r != -ENOSYS)
			return (int)r;
	}
	proc_path(fd, ent, p, sizeof(p));
	r = ent[0] ? lsetxattr(p, name, value, size, flags) : setxattr(p, name, value, size, flags);
	return r < 0 ? -errno : 0;
}

ssize_t sfs_xattr_list(int fd, const char *ent, char *list, size_t size)
{
	char p[300];
	long r;

	if (use_at(ent)) {
		r = at_result(syscall(SYS_listxattrat, fd, ent, AT_SYMLINK_NOFOLLOW, list, size));
		if (r != -ENOSYS)
			return r;
	}
	proc_path(fd, ent, p, sizeof(p));
	r = ent[0] ? llistxattr(p, list, size) : listxattr(p, list, size);
	return r < 0 ? -errno : r;
}

int sfs_xattr_remove(int fd, const char *ent, const char *name)
{
	char p[300];
	long r;

	if (use_at(ent)) {
		r = at_result(syscall(SYS_removexattrat, fd, ent, AT_SYMLINK_NOFOLLOW, name));
		if (r != -ENOSYS)
			return (int)r;
	}
	proc_path(fd, ent, p, sizeof(p));
	r = ent[0] ? lremovexattr(p, name) : removexattr(p, name);
	return r < 0 ? -errno : 0;
}

bool sfs_xattr_is_private(const char *name)
{
	return strncmp(name, "trusted.overlay.", 16) == 0 ||
	       strncmp(name, "user.overlay.", 13) == 0 ||
	       strncmp(name, "trusted.stackfs.", 16) == 0;
}

size_t sfs_xattr_filter(char *list, size_t len)
{
	size_t in = 0, out = 0;

	while (in < len) {
		size_t l = strnlen(list + in, len - in) + 1;

		if (!sfs_xattr_is_private(list + in)) {
			memmove(list + out, list + in, l);
			out += l;
		}
		in += l;
	}
	return out;
}
