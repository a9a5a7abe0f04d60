/* Where a branch's metadata directory is (metadir.h,
 * docs/format.md "Where the metadata lives"): `.stackfs` in the branch root,
 * or, for the upper of
 * an overlay-style mount given workdir=W, W/.stackfs, so that the upper
 * stays a clean overlayfs upper and OCI layer. The root then records W
 * (the xattr SFS_WORKDIR_XATTR, written by the mount), and every tool
 * that has only the branch finds its metadata through that record. The
 * checks of a workdir are all here: a directory on the branch's mount
 * (copies staged in it are renamed into the branch), apart from it, its
 * metadata this branch's (the registry's branch 1), the branch without a
 * .stackfs of its own (one place for the records of a branch). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bio.h"
#include "whiteout/ondisk.h"
#include "xattr/xattr.h"

void sfs_metaloc_close(struct sfs_metaloc *l)
{
	if (l->wd_fd >= 0)
		close(l->wd_fd);
	free(l->workdir);
	free(l->recorded);
	l->wd_fd = -1;
	l->workdir = l->recorded = NULL;
}

/* The root's record, NUL-terminated in buf: 1, 0 when there is none,
 * -EUCLEAN when it is no absolute path, or -errno. */
static int read_record(int root_fd, char *buf, size_t len)
{
	ssize_t n = sfs_xattr_get(root_fd, "", SFS_WORKDIR_XATTR, buf, len - 1);

	if (n == -ENODATA || n == -ENOTSUP || n == -EOPNOTSUPP)
		return 0;
	if (n == -ERANGE)
		return -EUCLEAN;
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	return n > 0 && buf[0] == '/' && strlen(buf) == (size_t)n ? 1 : -EUCLEAN;
}

/* True if canonical path outer is inner or one of its ancestors. */
static bool contains(const char *outer, const char *inner)
{
	size_t len = strlen(outer);

	if (len == 1 && outer[0] == '/')
		return true;
	return !strncmp(outer, inner, len) && (inner[len] == '/' || !inner[len]);
}

/* The workdir opened, canonical, on the branch's mount, apart from it. */
static int open_workdir(int root_fd, const char *path, struct sfs_metaloc *l,
			char *err, size_t errlen)
{
	char self[64], root[PATH_MAX];
	uint64_t rmnt, wmnt;
	struct stat st;
	ssize_t n;

	l->workdir = realpath(path, NULL);
	l->wd_fd = l->workdir ? open(l->workdir, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	if (l->wd_fd < 0) {
		snprintf(err, errlen, "workdir %s: %s", path, strerror(errno));
		return -errno;
	}
	if (sfs_do_statx(root_fd, &st, &rmnt) < 0 || sfs_do_statx(l->wd_fd, &st, &wmnt) < 0) {
		snprintf(err, errlen, "workdir %s: statx: %s", path, strerror(errno));
		return -errno;
	}
	if (rmnt != wmnt) {
		snprintf(err, errlen, "workdir %s is not on the mount of the branch: the copies "
			 "staged in it are renamed into the branch (give a workdir on the same "
			 "filesystem and mount)", path);
		return -EXDEV;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", root_fd);
	n = readlink(self, root, sizeof(root) - 1);
	if (n < 0) {
		snprintf(err, errlen, "%s: %s", self, strerror(errno));
		return -errno;
	}
	root[n] = '\0';
	if (contains(root, l->workdir) || contains(l->workdir, root)) {
		snprintf(err, errlen, "workdir %s and the branch are nested (one is inside the "
			 "other): give a workdir apart from the branch", path);
		return -EINVAL;
	}
	return 0;
}

/* 1 when e is the branch root_fd (the identity the registry keeps). */
static int is_branch(int root_fd, const struct sfs_reg_entry *e)
{
	uint8_t uuid[16], handle[SFS_HANDLE_MAX];
	unsigned hbytes = sizeof(handle);
	int htype, ret = sfs_fs_uuid(root_fd, uuid);

	if (ret == 0)
		ret = sfs_fs_handle(root_fd, "", &htype, handle, &hbytes);
	if (ret < 0)
		return ret;
	/* a FUSE branch recorded before number handles (fsid.c): its old
	 * handle and UUID cannot say, so it is not judged */
	if (htype == SFS_HANDLE_NUMBER && e->handle_type != SFS_HANDLE_NUMBER)
		return -ENODATA;
	return !memcmp(uuid, e->fs_uuid, 16) && htype == e->handle_type &&
	       hbytes == e->handle_bytes && !memcmp(handle, e->handle, hbytes);
}

/* Whether the workdir's metadata is this branch's: its registry's branch
 * 1 is the branch (the first mount with the workdir gave the upper, the
 * first branch of an overlay-style mount, the first id). A workdir with
 * no metadata yet, an untrusted or damaged one (refused or repaired by
 * the checks of the metadata itself), or a registry that lost that
 * record cannot tell: 0. */
static int check_owner(int root_fd, struct sfs_metaloc *l, char *err, size_t errlen)
{
	struct sfs_reg_table t = { 0 };
	char perr[256];
	uint8_t *buf = NULL;
	size_t len = 0;
	int dir = sfs_meta_dir_open(l->wd_fd, NULL, 0), ret = 0;

	l->fresh = dir == -ENOENT;
	if (dir < 0)
		return 0;
	if (sfs_meta_read_file(dir, SFS_META_REGISTRY, SFS_REG_MAX_BYTES, &buf, &len) == 0 &&
	    sfs_reg_parse(buf, len, &t, perr, sizeof(perr)) == 0) {
		for (size_t i = 0; i < t.n && ret == 0; i++)
			if (t.v[i].kind == SFS_REG_BRANCH && t.v[i].id == 1)
				ret = is_branch(root_fd, &t.v[i]) == 0 ? -EINVAL : 0;
	}
	if (ret)
		snprintf(err, errlen, "workdir %s holds the metadata of another branch (%s/%s "
			 "records another first branch): give each upper directory its own "
			 "workdir", l->workdir, SFS_METADIR_NAME, SFS_META_REGISTRY);
	sfs_reg_table_free(&t);
	free(buf);
	close(dir);
	return ret;
}

/* The branch's own .stackfs beside a workdir holding its metadata: two
 * places for one branch's records, and which one is right is not ours
 * to guess. */
static int check_single(int root_fd, const struct sfs_metaloc *l, bool given,
			char *err, size_t errlen)
{
	struct stat st;

	if (sfs_do_stat(root_fd, SFS_METADIR_NAME, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (given)
		snprintf(err, errlen, "it has a metadata directory of its own (%s, made by a "
			 "mount without workdir=), and with workdir= its metadata is in %s/%s: "
			 "a branch keeps its records in one place; move %s into the workdir "
			 "(when it has none) or mount without workdir=", SFS_METADIR_NAME,
			 l->workdir, SFS_METADIR_NAME, SFS_METADIR_NAME);
	else
		snprintf(err, errlen, "it has a metadata directory of its own (%s) while its "
			 "root records its metadata in the workdir %s: a branch keeps its records "
			 "in one place; remove one of them (setfattr -x %s drops the record)",
			 SFS_METADIR_NAME, l->workdir, SFS_WORKDIR_XATTR);
	return -EEXIST;
}

static int locate(int root_fd, const char *workdir, struct sfs_metaloc *l, char *err,
		  size_t errlen)
{
	char rec[PATH_MAX] = "";
	int ret = read_record(root_fd, rec, sizeof(rec));

	l->record_damaged = ret == -EUCLEAN;
	if (ret == -EUCLEAN && workdir) {
		rec[0] = '\0';
		ret = 0;
	}
	if (ret < 0) {
		snprintf(err, errlen, "its record of a workdir (%s) %s", SFS_WORKDIR_XATTR,
			 ret == -EUCLEAN ? "is no absolute path: corrupt (stackfs fsck "
			 "--repair --workdir DIR writes it again)" : strerror(-ret));
		return ret;
	}
	if (!workdir && !ret)
		return 0;
	ret = open_workdir(root_fd, workdir ? workdir : rec, l, err, errlen);
	if (ret == -ENOENT && !workdir)
		snprintf(err, errlen, "its root records its metadata in the workdir %s, which is "
			 "gone: mount it overlay-style with a workdir= (a new one starts its "
			 "metadata afresh), or drop the record (setfattr -x %s)", rec,
			 SFS_WORKDIR_XATTR);
	/* a mount given another workdir than the record names: said */
	if (ret == 0 && workdir && rec[0] && strcmp(rec, l->workdir) &&
	    !(l->recorded = strdup(rec)))
		ret = -ENOMEM;
	if (ret == 0)
		ret = check_single(root_fd, l, workdir != NULL, err, errlen);
	if (ret == 0)
		ret = check_owner(root_fd, l, err, errlen);
	return ret;
}

int sfs_metaloc_open(int root_fd, const char *workdir, bool lenient, struct sfs_metaloc *l,
		     char *err, size_t errlen)
{
	int ret;

	memset(l, 0, sizeof(*l));
	l->wd_fd = -1;
	ret = locate(root_fd, workdir, l, err, errlen);
	if (ret < 0)
		sfs_metaloc_close(l);
	/* only a commit's marker is looked for: no record that leads to it
	 * is no marker; but a damaged record may have led to one */
	return lenient && ret != -EUCLEAN ? 0 : ret;
}

int sfs_metaloc_record(const struct sfs_metaloc *l, int root_fd)
{
	char rec[PATH_MAX];
	int ret;

	if (!l->workdir || (read_record(root_fd, rec, sizeof(rec)) == 1 &&
			    !strcmp(rec, l->workdir)))
		return 0;
	ret = sfs_xattr_set(root_fd, "", SFS_WORKDIR_XATTR, l->workdir, strlen(l->workdir), 0);
	return ret < 0 ? ret : sfs_meta_fsync_dir(root_fd);
}
