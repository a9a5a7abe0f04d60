/* Who may own what in a metadata directory. The daemon runs as root over
 * branch roots that users may own, and it builds copies in .stackfs/work
 * before giving them their owner and set-ID bits: whoever can write there
 * can swap a staged file for their own and get it stamped root's. So the
 * directory and every entry directly in it must be the daemon's user's
 * alone — owned by it, writable by no group or other, no symlink, on the
 * branch's own filesystem — or nothing of it is used. A branch root that
 * a user owns can still rename .stackfs away and make their own; that one
 * is theirs, and refused here. Entries of index/ (hard links of copies,
 * owned by whoever owns the file) and of work/ (emptied at mount) are not
 * judged by owner. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bio.h"
#include "whiteout/metadir.h"
#include "whiteout/ondisk.h"

/* A user's name for messages: "uid N (name)" or "uid N". */
static void uid_str(uid_t uid, char *buf, size_t len)
{
	char pwbuf[1024];
	struct passwd pw, *res = NULL;

	if (getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &res) == 0 && res)
		snprintf(buf, len, "uid %u (%s)", (unsigned)uid, res->pw_name);
	else
		snprintf(buf, len, "uid %u", (unsigned)uid);
}

int sfs_meta_judge(const struct stat *st, dev_t dev, struct sfs_distrust *d)
{
	d->uid = st->st_uid;
	d->mode = st->st_mode;
	if (S_ISLNK(st->st_mode))
		d->why = SFS_DT_SYMLINK;
	else if (st->st_dev != dev)
		d->why = SFS_DT_XDEV;
	else if (st->st_uid != geteuid())
		d->why = SFS_DT_OWNER;
	else if (st->st_mode & (S_IWGRP | S_IWOTH))
		d->why = SFS_DT_MODE;
	else
		return 0;
	return -EPERM;
}

void sfs_distrust_str(const struct sfs_distrust *d, char *buf, size_t len)
{
	char who[300], me[300];

	switch (d->why) {
	case SFS_DT_SYMLINK:
		snprintf(buf, len, "%s is a symlink", d->what);
		break;
	case SFS_DT_XDEV:
		snprintf(buf, len, "%s is on another filesystem than the branch", d->what);
		break;
	case SFS_DT_OWNER:
		uid_str(d->uid, who, sizeof(who));
		uid_str(geteuid(), me, sizeof(me));
		snprintf(buf, len, "%s is owned by %s, not by %s that runs stackfs",
			 d->what, who, me);
		break;
	default:
		snprintf(buf, len, "%s is writable by %s (mode %04o)", d->what,
			 d->mode & S_IWOTH ? "others" : "its group",
			 (unsigned)(d->mode & 07777));
		break;
	}
}

/* Judges every entry of the metadata directory dir_fd: 0, or -EPERM
 * with *d (-errno when it cannot be listed). */
static int judge_entries(int dir_fd, dev_t dev, struct sfs_distrust *d)
{
	int fd = sfs_meta_openat(dir_fd, ".", O_RDONLY | O_DIRECTORY, 0), ret = 0;
	DIR *dir = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *e;
	struct stat st;

	if (!dir) {
		ret = fd < 0 ? fd : -errno;
		if (fd >= 0)
			close(fd);
		return ret;
	}
	while (ret == 0 && (e = readdir(dir))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		/* inside a directory only the daemon's user can write: the
		 * name cannot change between the listing and the stat */
		if (sfs_do_stat(dirfd(dir), e->d_name, &st) < 0) {
			ret = errno == ENOENT ? 0 : -errno;
			continue;
		}
		ret = sfs_meta_judge(&st, dev, d);
		if (ret)
			snprintf(d->what, sizeof(d->what), "%s/%s", SFS_METADIR_NAME,
				 e->d_name);
	}
	closedir(dir);
	return ret;
}

int sfs_meta_trusted(int at_fd, int dir_fd, struct sfs_distrust *d)
{
	struct stat root, st;

	memset(d, 0, sizeof(*d));
	if (sfs_do_fstat(at_fd, &root) < 0 ||
	    sfs_do_fstat(dir_fd, &st) < 0)
		return -errno;
	snprintf(d->what, sizeof(d->what), "%s", SFS_METADIR_NAME);
	if (sfs_meta_judge(&st, root.st_dev, d))
		return -EPERM;
	return judge_entries(dir_fd, root.st_dev, d);
}

int sfs_meta_dir_open(int at_fd, char *err, size_t errlen)
{
	struct sfs_distrust d;
	int fd = sfs_meta_openat(at_fd, SFS_METADIR_NAME, O_PATH | O_DIRECTORY, 0), ret;

	if (fd < 0) {
		if (fd == -ELOOP)
			snprintf(err, errlen, "%s is a symlink", SFS_METADIR_NAME);
		else if (fd == -ENOTDIR)
			snprintf(err, errlen, "%s is not a directory", SFS_METADIR_NAME);
		else if (fd == -EXDEV)
			snprintf(err, errlen, "%s is a mount point", SFS_METADIR_NAME);
		else if (fd != -ENOENT)
			snprintf(err, errlen, "%s: %s", SFS_METADIR_NAME, strerror(-fd));
		return fd;
	}
	ret = sfs_meta_trusted(at_fd, fd, &d);
	if (ret == 0)
		return fd;
	close(fd);
	if (ret == -EPERM)
		sfs_distrust_explain(&d, err, errlen);
	else
		snprintf(err, errlen, "%s: %s", SFS_METADIR_NAME, strerror(-ret));
	return ret;
}

void sfs_distrust_explain(const struct sfs_distrust *d, char *err, size_t errlen)
{
	char what[600];

	sfs_distrust_str(d, what, sizeof(what));
	snprintf(err, errlen, "%s: whoever can change the metadata directory can have "
		 "their files given another owner and set-ID bits by the daemon; refused "
		 "(`stackfs fsck --repair` rebuilds it, keeping the records it can verify)",
		 what);
}

/* Who besides the daemon's user can write a directory: its owner when
 * another user, its group, everyone. */
static void writers_str(const struct stat *st, char *buf, size_t len)
{
	char who[300];

	if (st->st_uid != geteuid()) {
		uid_str(st->st_uid, who, sizeof(who));
		snprintf(buf, len, "its owner %s", who);
	} else if (st->st_mode & S_IWOTH) {
		snprintf(buf, len, "every user (mode %04o)", (unsigned)(st->st_mode & 07777));
	} else {
		snprintf(buf, len, "group %u (mode %04o)", (unsigned)st->st_gid,
			 (unsigned)(st->st_mode & 07777));
	}
}

int sfs_root_writers(int fd, bool workdir, char *msg, size_t len)
{
	char who[400];
	struct stat st;

	if (sfs_do_fstat(fd, &st) < 0)
		return -errno;
	if (st.st_uid == geteuid() && !(st.st_mode & (S_IWGRP | S_IWOTH)))
		return 0;
	writers_str(&st, who, sizeof(who));
	if (workdir)
		snprintf(msg, len, "the workdir holding its metadata is writable by %s: they "
			 "can rename its .stackfs away (a mount then refuses the one they put "
			 "in its place)", who);
	else
		snprintf(msg, len, "the branch root is writable by %s: they can change what "
			 "the view shows of this branch at any time, behind the union's back%s",
			 who, st.st_uid != geteuid() || !(st.st_mode & S_ISVTX) ?
			 ", and rename its .stackfs away (a mount then refuses the one they "
			 "put in its place)" : "");
	return 1;
}
