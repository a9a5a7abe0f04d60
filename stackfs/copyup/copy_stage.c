/* Staging a copy (copy_up.c decides when and where): the copy is built
 * in the branch's staging directory (.stackfs/work) — data, owner,
 * xattrs, ACLs, mode, times, origin — on an fd of its own, and renamed or
 * linked into place in one step, so a crash at any point leaves either
 * the lower entry visible or the complete copy, never a partial one. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stackfs/copyup/copy_stage.h"
#include "whiteout/lowername.h"
#include "whiteout/metacopy.h"
#include "whiteout/metadir.h"
#include "xattr/xattr.h"

/* Gives the staged copy the source's owner, xattrs, ACLs, mode and
 * times, each on the copy's own fd (sfs_meta_copy). A symlink's xattrs
 * alone go by name: the copy's in work/, a directory only the daemon can
 * write (checked at every mount: whiteout/metatrust.c), the source's in
 * its lower directory (a swap there could only change which labels the
 * copy of a symlink gets). */
static int copy_meta(const struct sfs_layer *src, int sdir, const char *sname,
		     const struct stat *st, int workfd, const struct staged *s)
{
	bool lnk = S_ISLNK(st->st_mode);
	struct sfs_entry_ref from = { src->fd, sdir, lnk ? sname : NULL };
	struct sfs_entry_ref to = { s->fd, workfd, lnk ? s->tmp : NULL };

	return sfs_meta_copy(&from, st, &to, true);
}

/* An O_PATH fd of what the daemon just made at work/tmp, checked to be
 * it: of the type made, the daemon's own, with no other name. */
static int open_made(int workfd, const char *tmp, mode_t type)
{
	int fd = sfs_do_open(workfd, tmp, O_PATH, 0), ret;
	struct stat st;

	if (fd < 0)
		return fd;
	ret = sfs_do_fstat(fd, &st);
	if (ret == 0 && ((st.st_mode & S_IFMT) != type || st.st_uid != geteuid() ||
			 (!S_ISDIR(type) && st.st_nlink != 1)))
		ret = -ESTALE;
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return fd;
}


/* The data of a regular file (data: the layer holding it, src's own or
 * a metacopy's, NULL when there is none); s->fd is an O_PATH fd of the
 * new file. */
static int stage_file(const struct sfs_layer *data, const struct stat *st,
		      int workfd, struct staged *s, enum cu_data how)
{
	bool nodata = how != CU_FULL;
	int in = -1, out, ret = 0;

	out = sfs_do_tmpfile(workfd, O_WRONLY, 0600);
	if (out >= 0)
		s->tmp[0] = '\0';
	else /* no O_TMPFILE here; or an error a named file says better
	      * (a removed work/ is EPERM for O_TMPFILE, ENOENT for it) */
		out = sfs_do_open(workfd, s->tmp, O_CREAT | O_EXCL | O_WRONLY, 0600);
	if (out < 0)
		return out;
	s->fd = sfs_do_reopen(out, O_PATH);
	if (s->fd < 0)
		ret = s->fd;
	if (ret == 0 && !nodata && !data)
		ret = -EIO;
	/* a metacopy: sparse at the size, no block of its own */
	if (ret == 0 && how == CU_META && ftruncate(out, st->st_size) < 0)
		ret = -errno;
	if (ret == 0 && !nodata) {
		in = sfs_open_source(data->fd);
		ret = in < 0 ? in : sfs_copy_data(in, out, st->st_size);
	}
	/* normal and always: never placed with data not yet on the disk
	 * (a power cut would show it short or empty, hiding the lower file);
	 * an empty copy (O_TRUNC) has none, nor has a metacopy (its size and
	 * marks are journalled metadata, committed before the link placing
	 * it: docs/union.md "Metadata-only copy-up") */
	if (ret == 0 && !nodata)
		ret = sfs_sync_copy(out);
	if (in >= 0)
		close(in);
	close(out);
	return ret;
}

/* Makes a staged entry of another type than a regular file. */
static int stage_node(const struct sfs_layer *src, const struct stat *st,
		      int workfd, struct staged *s)
{
	char target[PATH_MAX + 1];
	ssize_t len;
	int r;

	if (S_ISLNK(st->st_mode)) {
		len = sfs_do_readlinkat(src->fd, "", target, sizeof(target) - 1);
		if (len < 0)
			return -errno;
		target[len] = '\0';
		r = sfs_do_symlinkat(target, workfd, s->tmp);
	} else if (S_ISDIR(st->st_mode)) {
		r = sfs_do_mkdirat(workfd, s->tmp, 0700);
	} else {
		r = sfs_do_mknodat(workfd, s->tmp, (st->st_mode & S_IFMT) | 0600, st->st_rdev);
	}
	if (r < 0)
		return -errno;
	s->fd = open_made(workfd, s->tmp, st->st_mode & S_IFMT);
	return s->fd < 0 ? s->fd : 0;
}

/* Takes the staged entry away again (its fd too). */
void sfs_cu_unstage(int workfd, struct staged *s, mode_t mode)
{
	if (s->tmp[0])
		sfs_do_unlinkat(workfd, s->tmp, S_ISDIR(mode) ? AT_REMOVEDIR : 0);
	if (s->fd >= 0)
		close(s->fd);
	s->tmp[0] = '\0';
	s->fd = -1;
}

/* Whether the staging directory was removed under the mount (the branch's
 * metadata directory with it): XFS still makes an O_TMPFILE in a dead
 * directory and ext4 does not, so the check is ours, and a copy-up fails
 * with ENOENT on every filesystem rather than place a copy the records
 * around it can no longer describe. */
static int staging_alive(int workfd)
{
	struct stat st;
	int ret = sfs_do_fstat(workfd, &st);

	if (ret < 0)
		return ret;
	return st.st_nlink == 0 ? -ENOENT : 0;
}

/* Makes the staged entry: the type's own creation (a regular file's
 * data from data), then its metadata (src's). */
static int stage_entry(const struct sfs_layer *src, const struct sfs_layer *data, int sdir,
		       const char *sname, const struct stat *st, int workfd, struct staged *s,
		       enum cu_data how)
{
	int ret;

	sfs_temp_name(s->tmp, "cu");
	s->fd = -1;
	s->fresh = true;
	ret = staging_alive(workfd);
	if (ret < 0)
		return ret;
	if (S_ISREG(st->st_mode))
		ret = stage_file(data, st, workfd, s, how);
	else
		ret = stage_node(src, st, workfd, s);
	/* a 0:0 device copied up is a real one (a whiteout has no node): the
	 * copy must read as one too */
	if (ret == 0 && sfs_wh_is_chr_whiteout(st))
		ret = sfs_wh_mark_device(s->fd, "");
	if (ret == 0)
		ret = copy_meta(src, sdir, sname, st, workfd, s);
	if (ret < 0)
		sfs_cu_unstage(workfd, s, st->st_mode);
	return ret;
}

/* Whether fds a and b hold the same inode. */
static bool same_inode(int a, int b)
{
	struct stat sa, sb;

	return sfs_do_fstat(a, &sa) == 0 && sfs_do_fstat(b, &sb) == 0 &&
	       sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev;
}

/* A staged directory, renamed to parentfd/name: checked to be the one
 * staged (its name in work/ is the only way to move it), else put back
 * out of the view and -ESTALE. Only a staging area someone else could
 * write would fail this: the mount checks that none can. */
static int rename_dir(int workfd, const struct staged *s, int parentfd, const char *name)
{
	char back[64];
	int fd;

	if (sfs_do_renameat2(workfd, s->tmp, parentfd, name, RENAME_NOREPLACE) < 0)
		return -errno;
	fd = sfs_do_open(parentfd, name, O_PATH, 0);
	if (fd >= 0 && same_inode(fd, s->fd)) {
		close(fd);
		return 0;
	}
	if (fd >= 0)
		close(fd);
	sfs_temp_name(back, "stale");
	sfs_do_renameat2(parentfd, name, workfd, back, RENAME_NOREPLACE);
	sfs_log(SFS_LOG_ERR, "copy-up: the staged directory was replaced in %s/%s before it "
		"was placed: not placed", SFS_METADIR_NAME, SFS_META_WORK);
	return -ESTALE;
}

/* Puts the staged entry s at parentfd/name. A non-directory is linked
 * from its fd, then its name in work/ removed: what is placed is the
 * inode staged, whatever was done to that name. A directory, which has
 * no second name, is renamed and checked (rename_dir). The parent's times
 * are put back: the union's view of the parent has not changed. */
int sfs_cu_place(int workfd, struct staged *s, bool dir, int parentfd,
		       const char *name)
{
	struct stat pst;
	struct timespec tv[2];
	int ret = sfs_do_fstat(parentfd, &pst);

	if (ret == 0)
		ret = dir ? rename_dir(workfd, s, parentfd, name) :
			    sfs_do_link_fd(s->fd, parentfd, name);
	if (ret < 0)
		return ret;
	if (!dir && s->tmp[0])
		sfs_do_unlinkat(workfd, s->tmp, 0); /* an unlinked leftover goes at mount */
	s->tmp[0] = '\0';
	tv[0] = pst.st_atim;
	tv[1] = pst.st_mtim;
	sfs_do_utimensat(parentfd, "", tv, AT_EMPTY_PATH); /* cosmetic: no failure */
	return 0;
}

/* A hard-linked lower file whose origin handle is a number (a FUSE
 * branch's, which opens nothing) is found again by its lower name: the
 * link count shown for a copy renamed away from every lower name comes
 * from it (whiteout/lowername.h). Without a name that fits, the copy
 * goes without: its count is then its own. Never fails the copy-up. */
static int set_lowername(const struct sfs_stack *st, const struct stat *src,
			 const struct sfs_origin *o, int dfd, const char *dname)
{
	char path[PATH_MAX];

	if (o->handle_type != SFS_HANDLE_NUMBER || src->st_nlink < 2 || S_ISDIR(src->st_mode))
		return 0;
	if (sfs_layer_path(st->snap, &st->l[0], path, sizeof(path)) < 0 || path[0] != '/' ||
	    strlen(path) > SFS_LOWERNAME_PATH_MAX)
		return 0;
	/* a hint: a copy without it is whole (only its count is short) */
	if (sfs_lowername_set(dfd, dname, path + 1) < 0)
		sfs_log(SFS_LOG_WARN, "copy-up: no lower-name record on the copy of inode %llu",
			(unsigned long long)src->st_ino);
	return 0;
}

/* Records on the staged copy which lower entry (src, the node's lower
 * layer) it came from. */
static int set_origin(const struct sfs_stack *st, const struct stat *src,
		      int workfd, const struct staged *s)
{
	bool lnk = S_ISLNK(src->st_mode);
	int dfd = lnk ? workfd : s->fd;
	const char *dname = lnk ? s->tmp : "";
	struct sfs_origin o;
	ssize_t len;
	int ret = sfs_origin_of(st->l[0].fd, "", sfs_layer_branch(st, &st->l[0])->fs_uuid, &o);

	if (ret < 0)
		return ret;
	/* A copy whose attribute names already fill what listxattr can
	 * return (64 KiB) goes without: the record would make its list
	 * unreadable. It then shows its own inode number. */
	len = sfs_xattr_list(dfd, dname, NULL, 0);
	if (len >= 0 && (size_t)len + strlen(SFS_ORIGIN_XATTR) + strlen(SFS_LOWERNAME_XATTR) + 2 >
			    XATTR_LIST_MAX) {
		sfs_log(SFS_LOG_WARN, "copy-up: no room for an origin record on the copy of "
			"inode %llu", (unsigned long long)src->st_ino);
		return 0;
	}
	ret = sfs_origin_set(dfd, dname, &o);
	return ret < 0 ? ret : set_lowername(st, src, &o, dfd, dname);
}

/* A placed copy and the directory it was placed in: durable now
 * (always), or when an fsync through the view covers them (normal). A
 * symlink or device comes with its directory (sync.c). */
int sfs_cu_sync_placed(int fd, mode_t mode, int dirfd)
{
	int ret = S_ISREG(mode) || S_ISDIR(mode) ? sfs_sync_changed(fd) : 0;

	return ret < 0 ? ret : sfs_sync_changed(dirfd);
}

/* Places an existing copy at dirfd/name: a hard link, no data copied. */
int sfs_cu_link_copy(int copyfd, int dirfd, const char *name)
{
	struct timespec tv[2];
	struct stat pst;
	int ret = sfs_do_fstat(dirfd, &pst);

	if (ret < 0)
		return ret;
	if (sfs_do_linkat(copyfd, "", dirfd, name, AT_EMPTY_PATH) < 0)
		return -errno;
	tv[0] = pst.st_atim;
	tv[1] = pst.st_mtim;
	sfs_do_utimensat(dirfd, "", tv, AT_EMPTY_PATH); /* cosmetic: no failure */
	return 0;
}

/* Stages a copy of the entry as work/tmp, with its origin; one with
 * several names goes into the index too. Nothing is left on failure. */
int sfs_cu_stage_copy(const struct sfs_stack *st, const struct sfs_layer *sl,
		      const struct stat *src, int workfd, const char *name,
		      enum cu_data how, struct staged *s)
{
	const struct sfs_layer *data = S_ISREG(src->st_mode) && how == CU_FULL ?
				       sfs_stack_data(st) : NULL;
	int ret = stage_entry(&st->l[0], data, sl->fd, name, src, workfd, s, how);

	if (ret < 0)
		return ret;
	ret = set_origin(st, src, workfd, s);
	if (ret == 0 && how == CU_META)
		ret = sfs_metacopy_mark(s->fd, sfs_m.opts.whiteout);
	if (ret == 0 && sfs_index_worthy(src))
		ret = sfs_index_link(st->snap, st->l[0].fd, src, s->fd);
	if (ret < 0)
		sfs_cu_unstage(workfd, s, src->st_mode);
	return ret;
}
