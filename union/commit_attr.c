/* The attributes of an entry commit places in the lower branch: owner,
 * xattrs, ACLs and mode (the same code as copy-up's, sfs_meta_copy),
 * times, inode flags; and a kept directory's attributes made exactly
 * the rw branch's. Each step on the target's own fd, its type checked:
 * the lower branch's directories may be writable by a user who could
 * swap a name between two steps. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "common/bio.h"
#include "union/commit_int.h"
#include "union/copy.h"
#include "xattr/xattr.h"

/* An O_PATH fd of dir/name (name "" for dir itself) of the type of st,
 * never following a symlink: -ESTALE when another type is there (the
 * name was swapped). */
static int open_meta_fd(int dir, const char *name, const struct stat *st)
{
	struct stat now;
	int fd = sfs_do_open(dir, name[0] ? name : ".", O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (sfs_do_fstat(fd, &now) < 0 ||
	    (now.st_mode & S_IFMT) != (st->st_mode & S_IFMT)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* Gives ddir/dname the owner, xattrs, ACLs and mode of sdir/sname (not
 * its times: those go last), each step on the target's fd (a user who
 * can write the directory cannot swap the name between the steps); a
 * symlink's xattrs alone by name (no fd reaches them). */
int sfs_commit_copy_meta(int sdir, const char *sname, const struct stat *st, int ddir,
			 const char *dname)
{
	bool lnk = S_ISLNK(st->st_mode);
	int ret, sfd = open_meta_fd(sdir, sname, st), dfd = -1;

	if (sfd < 0)
		return sfd;
	dfd = open_meta_fd(ddir, dname, st);
	ret = dfd < 0 ? dfd : 0;
	if (ret == 0) {
		struct sfs_entry_ref from = { sfd, sdir, lnk ? sname : NULL };
		struct sfs_entry_ref to = { dfd, ddir, lnk ? dname : NULL };

		ret = sfs_meta_copy(&from, st, &to, false);
	}
	close(sfd);
	if (dfd >= 0)
		close(dfd);
	return ret;
}

int sfs_commit_copy_times(const struct stat *st, int ddir, const char *dname)
{
	struct timespec tv[2] = { st->st_atim, st->st_mtim };
	int fd = open_meta_fd(ddir, dname, st), ret = 0;

	if (fd < 0)
		return fd;
	if (sfs_do_utimensat(fd, "", tv, AT_EMPTY_PATH) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

int sfs_commit_copy_attrs(int sdir, const char *sname, const struct stat *st, int ddir,
			  const char *dname)
{
	int ret = sfs_commit_copy_meta(sdir, sname, st, ddir, dname);

	return ret < 0 ? ret : sfs_commit_copy_times(st, ddir, dname);
}

/* The inode flags (chattr) of a regular file or directory, set once the
 * entry is in place (an immutable one cannot be renamed). */
int sfs_commit_copy_flags(int sdir, const char *sname, int ddir, const char *dname)
{
	int in = sfs_do_open(sdir, sname[0] ? sname : ".", O_PATH, 0);
	int out = in < 0 ? in : sfs_do_open(ddir, dname[0] ? dname : ".", O_PATH, 0);
	int ret = out < 0 ? out : sfs_copy_flags(in, out);

	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return ret;
}

/* Removes the attributes of dfd (not the private ones) that sfd lacks,
 * so that a kept directory ends with exactly the rw one's. */
int sfs_commit_drop_xattrs(int sfd, int dfd)
{
	char sl[65536], dl[65536];
	ssize_t ns = sfs_xattr_list(sfd, "", sl, sizeof(sl));
	ssize_t nd = sfs_xattr_list(dfd, "", dl, sizeof(dl));
	int ret = 0;

	if (ns == -ENOTSUP || ns == -EOPNOTSUPP)
		ns = 0;
	if (nd == -ENOTSUP || nd == -EOPNOTSUPP)
		return 0;
	if (ns < 0 || nd < 0)
		return (int)(ns < 0 ? ns : nd);
	for (ssize_t i = 0; ret == 0 && i < nd; i += (ssize_t)strlen(dl + i) + 1) {
		bool found = false;

		if (sfs_xattr_is_private(dl + i))
			continue;
		for (ssize_t j = 0; !found && j < ns; j += (ssize_t)strlen(sl + j) + 1)
			found = !strcmp(sl + j, dl + i);
		if (!found) {
			ret = sfs_xattr_remove(dfd, "", dl + i);
			if (ret == -ENODATA)
				ret = 0;
		}
	}
	return ret;
}
