/* Pass-through of extended attributes of real entries. An entry is named
 * by a directory fd and a name, or by its own O_PATH fd and "" (not for
 * symlinks: an O_PATH fd only reaches the inode through the
 * /proc/self/fd magic link, which the xattr calls would follow), or, for
 * a directory's own fd, by ".": a getxattrat of "." costs half the
 * magic link's walk through /proc (issue 20: every lookup in a merged
 * directory reads its marks), and "." crosses no mount point. A name is
 * never looked up across a mount point (entry_fd). */
#include <errno.h>
#include <fcntl.h>
#include <linux/types.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/bio.h"
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

static bool is_dot(const char *ent)
{
	return ent[0] == '.' && !ent[1];
}

/* A name is reached through an fd opened without crossing a mount point
 * (a getxattrat by name, or a /proc/self/fd/N/name path, would enter
 * one): *efd is that fd, to use with "" in place of (fd, ent), or -1 when
 * the entry is a symlink, which its parent and name must still reach (the
 * magic link of its fd would be followed to its target; a mount point is
 * never a symlink). 0 or -errno (-EXDEV at a mount point). */
static int entry_fd(int fd, const char *ent, int *efd)
{
	struct stat st;

	*efd = -1;
	if (!ent[0] || is_dot(ent))
		return 0;
	*efd = sfs_do_open(fd, ent, O_PATH, 0);
	if (*efd < 0)
		return *efd;
	if (sfs_do_fstat(*efd, &st) == 0 &&
	    !S_ISLNK(st.st_mode))
		return 0;
	close(*efd);
	*efd = -1;
	return 0;
}

/* "/proc/self/fd/N" or "/proc/self/fd/N/name". */
static void proc_path(int fd, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/self/fd/%d%s%s", fd, name[0] ? "/" : "", name);
}

static bool use_at(const char *name)
{
	return name[0] && !no_at_calls;
}

/* The *at call's answer, or -ENOSYS to take the /proc path instead: on
 * a kernel without the calls, and for "." in a directory the daemon may
 * not search (its magic link needs no search permission there; a
 * user's daemon can meet one). */
static long at_result(const char *ent, long r)
{
	if (r < 0 && errno == ENOSYS)
		no_at_calls = 1;
	if (r < 0 && errno == EACCES && is_dot(ent))
		return -ENOSYS;
	return r < 0 ? -errno : r;
}

static ssize_t get_at(int fd, const char *ent, const char *name, void *value, size_t size)
{
	struct sfs_xattr_args a = { .value = (uintptr_t)value, .size = (__u32)size };
	char p[300];
	long r;

	if (use_at(ent)) {
		r = at_result(ent, syscall(SYS_getxattrat, fd, ent, AT_SYMLINK_NOFOLLOW, name, &a, sizeof(a)));
		if (r != -ENOSYS)
			return r;
	}
	proc_path(fd, ent, p, sizeof(p));
	r = ent[0] ? lgetxattr(p, name, value, size) : getxattr(p, name, value, size);
	return r < 0 ? -errno : r;
}

static int set_at(int fd, const char *ent, const char *name, const void *value,
		  size_t size, int flags)
{
	struct sfs_xattr_args a = {
		.value = (uintptr_t)value, .size = (__u32)size, .flags = (__u32)flags,
	};
	char p[300];
	long r;

	if (use_at(ent)) {
		r = at_result(ent, syscall(SYS_setxattrat, fd, ent, AT_SYMLINK_NOFOLLOW, name, &a, sizeof(a)));
		if (r != -ENOSYS)
			return (int)r;
	}
	proc_path(fd, ent, p, sizeof(p));
	r = ent[0] ? lsetxattr(p, name, value, size, flags) : setxattr(p, name, value, size, flags);
	return r < 0 ? -errno : 0;
}

static ssize_t list_at(int fd, const char *ent, char *list, size_t size)
{
	char p[300];
	long r;

	if (use_at(ent)) {
		r = at_result(ent, syscall(SYS_listxattrat, fd, ent, AT_SYMLINK_NOFOLLOW, list, size));
		if (r != -ENOSYS)
			return r;
	}
	proc_path(fd, ent, p, sizeof(p));
	r = ent[0] ? llistxattr(p, list, size) : listxattr(p, list, size);
	return r < 0 ? -errno : r;
}

static int remove_at(int fd, const char *ent, const char *name)
{
	char p[300];
	long r;

	if (use_at(ent)) {
		r = at_result(ent, syscall(SYS_removexattrat, fd, ent, AT_SYMLINK_NOFOLLOW, name));
		if (r != -ENOSYS)
			return (int)r;
	}
	proc_path(fd, ent, p, sizeof(p));
	r = ent[0] ? lremovexattr(p, name) : removexattr(p, name);
	return r < 0 ? -errno : 0;
}

/* The public calls: each name first reached as entry_fd says. */
#define ENTRY_CALL(type, call_fd, call_ent)                                  \
	int efd, eret = entry_fd(fd, ent, &efd);                             \
	type r;                                                              \
	if (eret < 0)                                                        \
		return eret;                                                 \
	r = efd >= 0 ? call_fd : call_ent;                                   \
	if (efd >= 0)                                                        \
		close(efd);                                                  \
	return r

static ssize_t get_entry(int fd, const char *ent, const char *name, void *value, size_t size)
{
	ENTRY_CALL(ssize_t, get_at(efd, "", name, value, size),
		   get_at(fd, ent, name, value, size));
}

static int set_entry(int fd, const char *ent, const char *name, const void *value,
		     size_t size, int flags)
{
	ENTRY_CALL(int, set_at(efd, "", name, value, size, flags),
		   set_at(fd, ent, name, value, size, flags));
}

static ssize_t list_entry(int fd, const char *ent, char *list, size_t size)
{
	ENTRY_CALL(ssize_t, list_at(efd, "", list, size), list_at(fd, ent, list, size));
}

static int remove_entry(int fd, const char *ent, const char *name)
{
	ENTRY_CALL(int, remove_at(efd, "", name), remove_at(fd, ent, name));
}

/* Every call goes past the branch seam's trace and failure log
 * (common/bio.h): no attribute, the filesystem keeping none, a buffer
 * too small and a name already there or missing are answers, not
 * failures. */
static bool answer(long r)
{
	return r == -ENODATA || r == -ENOTSUP || r == -ERANGE || r == -EEXIST;
}

ssize_t sfs_xattr_get(int fd, const char *ent, const char *name, void *value, size_t size)
{
	long r = get_entry(fd, ent, name, value, size);

	return sfs_do_note("getxattr", fd, ent, name, r, answer(r));
}

int sfs_xattr_set(int fd, const char *ent, const char *name, const void *value,
		  size_t size, int flags)
{
	long r = set_entry(fd, ent, name, value, size, flags);

	return (int)sfs_do_note("setxattr", fd, ent, name, r, r == -EEXIST || r == -ENODATA);
}

ssize_t sfs_xattr_list(int fd, const char *ent, char *list, size_t size)
{
	long r = list_entry(fd, ent, list, size);

	return sfs_do_note("listxattr", fd, ent, NULL, r, answer(r));
}

bool sfs_xattr_list_has(const char *list, ssize_t n, const char *name)
{
	size_t want = strlen(name);

	for (ssize_t i = 0; i < n;) {
		size_t len = strnlen(list + i, (size_t)(n - i));

		if (len == want && !memcmp(list + i, name, len))
			return true;
		i += (ssize_t)len + 1;
	}
	return false;
}

int sfs_xattr_remove(int fd, const char *ent, const char *name)
{
	long r = remove_entry(fd, ent, name);

	return (int)sfs_do_note("removexattr", fd, ent, name, r, answer(r));
}

/* The length of the kernel overlayfs namespace name is in ("trusted.
 * overlay." or "user.overlay.", both read as the union's marks), or 0. */
static size_t ovl_prefix(const char *name)
{
	if (!strncmp(name, SFS_XATTR_OVL_TRUSTED, sizeof(SFS_XATTR_OVL_TRUSTED) - 1))
		return sizeof(SFS_XATTR_OVL_TRUSTED) - 1;
	if (!strncmp(name, SFS_XATTR_OVL_USER, sizeof(SFS_XATTR_OVL_USER) - 1))
		return sizeof(SFS_XATTR_OVL_USER) - 1;
	return 0;
}

bool sfs_xattr_is_escaped(const char *name)
{
	size_t p = ovl_prefix(name);

	return p && !strncmp(name + p, "overlay.", 8);
}

/* The union's own namespace: trusted.stackfs.* and user.stackfs.* (the
 * records of a mount without trusted.* attributes, xattr/records.h) in
 * every mount, whichever it writes: a record set through a view, or
 * copied up, would be followed by another mount of the branch. */
static bool is_ours(const char *name)
{
	return !strncmp(name, "trusted.stackfs.", 16) || !strncmp(name, "user.stackfs.", 13);
}

bool sfs_xattr_is_private(const char *name)
{
	return (ovl_prefix(name) && !sfs_xattr_is_escaped(name)) || is_ours(name);
}

int sfs_xattr_stored_name(const char *name, char *buf, size_t len)
{
	size_t p = ovl_prefix(name);

	if (is_ours(name))
		return -EPERM;
	if (snprintf(buf, len, "%.*s%s%s", (int)p, name, p ? "overlay." : "", name + p) >= (int)len)
		return -ERANGE;
	return 0;
}

size_t sfs_xattr_filter(char *list, size_t len)
{
	size_t in = 0, out = 0;

	while (in < len) {
		size_t l = strnlen(list + in, len - in) + 1, p = ovl_prefix(list + in);

		if (sfs_xattr_is_escaped(list + in)) {
			/* shown one level down: the prefix, then what follows
			 * the escape's "overlay." */
			memmove(list + out, list + in, p);
			memmove(list + out + p, list + in + p + 8, l - p - 8);
			out += l - 8;
		} else if (!sfs_xattr_is_private(list + in)) {
			memmove(list + out, list + in, l);
			out += l;
		}
		in += l;
	}
	return out;
}
