/* fsck of the metadata directory itself (fsck.h): its type, owner and
 * mode (an untrusted one rebuilt), its header, `lowers`, work/, index/
 * and any entry that does not belong there. The registry and the inomap
 * are fsck_records.c's. */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/bio.h"
#include "whiteout/fsck_int.h"
#include "whiteout/journal.h"
#include "whiteout/ondisk.h"
#include "xattr/xattr.h"

/* A metadata directory that is not the daemon's user's alone: rebuilt
 * with --repair, else nothing more is checked (its records, journal and
 * lowers may be anyone's: acting on them would be acting for them). 0
 * when f->meta_fd is a trusted directory to go on with. */
static int untrusted_meta(struct fsck *f, const struct sfs_distrust *d)
{
	char what[600], kept[80], path[320];
	struct sfs_fsck_problem *p;
	int ret;

	sfs_distrust_str(d, what, sizeof(what));
	snprintf(path, sizeof(path), "/%s", d->what);
	p = sfs_fsck_found(f, SFS_PR_META_UNTRUSTED, true, path, "%s", what);
	if (!p) {
		sfs_fsck_msg(f, false, "nothing else is checked while the metadata directory is "
			     "not trusted: run fsck --repair to rebuild it");
		f->stop = true;
		return -1;
	}
	close(f->meta_fd);
	ret = sfs_fsck_done(f, p, sfs_meta_rebuild(f->meta_at, kept, sizeof(kept)));
	f->meta_fd = ret < 0 ? -1 : sfs_meta_dir_open(f->meta_at, NULL, 0);
	if (f->meta_fd < 0) {
		f->stop = true;
		return -1;
	}
	sfs_fsck_msg(f, false, "the old metadata directory is kept as %s: stackfs no longer "
		     "uses it, and never acts on what it holds", kept);
	return 0;
}

/* 0 to go on with the metadata dir's content, else skip it. */
int sfs_fsck_open_meta(struct fsck *f)
{
	const char *path = "/" SFS_METADIR_NAME;
	struct sfs_fsck_problem *p;
	struct sfs_distrust d;
	struct stat st;
	int ret;

	f->meta_fd = sfs_meta_openat(f->meta_at, SFS_METADIR_NAME, O_PATH | O_DIRECTORY, 0);
	if (f->meta_fd == -ENOENT) {
		sfs_fsck_msg(f, false, "no %s: the branch was never mounted read-write",
			     SFS_METADIR_NAME);
		return -1;
	}
	if (f->meta_fd == -ELOOP || f->meta_fd == -ENOTDIR) {
		sfs_fsck_found(f, SFS_PR_META_NOT_DIR, false, path, "%s",
			       f->meta_fd == -ELOOP ? "a symlink" : "not a directory");
		return -1;
	}
	if (f->meta_fd < 0) {
		sfs_fsck_msg(f, true, "%s: %s", SFS_METADIR_NAME, strerror(-f->meta_fd));
		return -1;
	}
	ret = sfs_meta_trusted(f->meta_at, f->meta_fd, &d);
	if (ret == -EPERM)
		return untrusted_meta(f, &d);
	if (ret < 0 || sfs_do_fstat(f->meta_fd, &st) < 0) {
		sfs_fsck_msg(f, true, "%s: %s", SFS_METADIR_NAME, strerror(ret < 0 ? -ret : errno));
		return -1;
	}
	if ((st.st_mode & 07777) != 0700) {
		p = sfs_fsck_found(f, SFS_PR_META_MODE, true, path, "mode %04o",
				   st.st_mode & 07777);
		if (p)
			sfs_fsck_done(f, p, sfs_do_fchmod(f->meta_fd, 0700));
	}
	return 0;
}

/* ------------------------------------------------------------ header */

/* A header from what can be read of the old one (n bytes of buf). */
static int rewrite_header(struct fsck *f, const uint8_t *buf, size_t n,
			  const struct sfs_header *old)
{
	bool magic = n >= 8 && !memcmp(buf, SFS_HDR_MAGIC_STR, 8);
	struct sfs_disk_header d;
	struct sfs_header h = {
		.version = SFS_META_VERSION,
		.flags = magic && n >= 16 ? old->flags & SFS_HDR_KNOWN_FLAGS : 0,
		.ctime = magic && n >= 40 ? old->ctime : (uint64_t)time(NULL),
	};

	if (magic && n >= 32 && !sfs_all_zero(old->uuid, 16)) {
		memcpy(h.uuid, old->uuid, 16);
	} else {
		int ret = sfs_meta_new_uuid(h.uuid);

		if (ret < 0)
			return ret;
	}
	sfs_header_encode(&h, &d);
	return sfs_meta_write_file(f->meta_fd, SFS_META_HEADER, &d, sizeof(d));
}

/* What a metadata dir without a header holds: work/ (version 0), and
 * anything else than what an interrupted creation, upgrade or commit
 * leaves. */
static int headerless_content(struct fsck *f, bool *work, bool *other)
{
	char **v;
	size_t n;
	int ret = sfs_fsck_list_dir(f->meta_fd, &v, &n);

	for (size_t i = 0; ret == 0 && i < n; i++) {
		if (!strcmp(v[i], SFS_META_WORK))
			*work = true;
		else if (strcmp(v[i], SFS_META_LOCK) && strcmp(v[i], SFS_META_HEADER ".tmp") &&
			 strcmp(v[i], SFS_META_COMMIT_FROM) &&
			 strcmp(v[i], SFS_META_COMMIT_FROM ".tmp"))
			*other = true;
	}
	if (ret == 0)
		sfs_fsck_free_names(v, n);
	return ret;
}

/* A metadata dir without a header: version 0 (work/ only) or damage. */
static void headerless(struct fsck *f)
{
	const char *path = "/" SFS_METADIR_NAME "/" SFS_META_HEADER;
	struct sfs_fsck_problem *p;
	bool work = false, other = false;
	int ret = headerless_content(f, &work, &other);

	if (ret) {
		sfs_fsck_msg(f, true, "%s: cannot list: %s", SFS_METADIR_NAME, strerror(-ret));
		return;
	}
	if (!work && !other) {
		/* made by a commit for its marker in a branch without one */
		f->marker_only = true;
		return;
	}
	if (work && !other) {
		f->v0 = true;
		sfs_fsck_msg(f, false, "%s has format version 0 (made before format 1): "
			     "a mount with -o upgrade converts it", SFS_METADIR_NAME);
		return;
	}
	p = sfs_fsck_found(f, SFS_PR_HEADER_MISSING, true, path, NULL);
	if (p)
		sfs_fsck_done(f, p, rewrite_header(f, NULL, 0, &(struct sfs_header){ 0 }));
}

void sfs_fsck_check_header(struct fsck *f)
{
	static const enum sfs_problem_code code[] = {
		[SFS_HDR_SHORT] = SFS_PR_HEADER_SHORT,
		[SFS_HDR_LONG] = SFS_PR_HEADER_LONG,
		[SFS_HDR_BAD_MAGIC] = SFS_PR_HEADER_MAGIC,
		[SFS_HDR_CRC] = SFS_PR_HEADER_CRC,
		[SFS_HDR_VERSION] = SFS_PR_HEADER_VERSION,
		[SFS_HDR_FLAGS] = SFS_PR_HEADER_FLAGS,
		[SFS_HDR_RESERVED] = SFS_PR_HEADER_RESERVED,
	};
	const char *path = "/" SFS_METADIR_NAME "/" SFS_META_HEADER;
	uint8_t buf[SFS_HDR_SIZE] = { 0 };
	struct sfs_fsck_problem *p;
	enum sfs_hdr_status st;
	struct sfs_header h;
	struct stat sb;
	ssize_t n;
	size_t len, bad_at = 0;
	uint8_t bad_was = 0;
	bool can_fix = true, mend = false;
	int fd;

	fd = sfs_meta_openat(f->meta_fd, SFS_META_HEADER, O_RDONLY | O_NONBLOCK, 0);
	if (fd == -ENOENT) {
		headerless(f);
		return;
	}
	if (fd >= 0 && fstat(fd, &sb) < 0) {
		close(fd);
		fd = -errno;
	}
	if (fd == -ELOOP || (fd >= 0 && !S_ISREG(sb.st_mode))) {
		if (fd >= 0)
			close(fd);
		sfs_fsck_found(f, SFS_PR_HEADER_NOT_FILE, false, path, NULL);
		return;
	}
	if (fd < 0) {
		sfs_fsck_msg(f, true, "%s: %s", path + 1, strerror(-fd));
		return;
	}
	n = pread(fd, buf, sizeof(buf), 0);
	close(fd);
	if (n < 0) {
		sfs_fsck_msg(f, true, "%s: %s", path + 1, strerror(errno));
		return;
	}
	/* the parser reads at most 64 bytes; it needs the real size */
	len = (size_t)sb.st_size > (size_t)n ? (size_t)sb.st_size : (size_t)n;
	st = sfs_header_parse(buf, len, &h);
	if (st == SFS_HDR_OK && (h.flags & SFS_META_F_VOLATILE) && !f->o->in_use)
		sfs_fsck_found(f, SFS_PR_VOLATILE_UNCLEAN, false, path, NULL);
	/* its records are not in this process's namespace (xattr/records.h):
	 * judged by trusted.* ones, every origin would look missing and its
	 * index entries unused (and --repair would remove them) */
	if (st == SFS_HDR_OK && (h.flags & SFS_META_F_USERXATTR) && !sfs_records_user()) {
		sfs_fsck_found(f, SFS_PR_RECORDS_USER, false, path, NULL);
		f->stop = true;
	}
	if (st == SFS_HDR_OK)
		return;
	if (st == SFS_HDR_NEWER) {
		sfs_fsck_msg(f, true, "%s: format version %u is newer than this stackfs (%u): "
			     "not checked", path + 1, h.version, SFS_META_VERSION);
		f->stop = true;
		return;
	}
	/* one damaged byte is undone by the checksum; else a damaged
	 * header that claims another version is left alone */
	if (st == SFS_HDR_CRC && n == SFS_HDR_SIZE && len == SFS_HDR_SIZE) {
		uint8_t mended[SFS_HDR_SIZE];

		memcpy(mended, buf, sizeof(mended));
		if (sfs_header_mend(mended, &bad_at, &bad_was) == 1) {
			memcpy(buf, mended, sizeof(buf));
			sfs_header_parse(buf, len, &h);
			mend = true;
		}
	}
	if (st == SFS_HDR_CRC && !mend && h.version != SFS_META_VERSION)
		can_fix = false;
	switch (st) {
	case SFS_HDR_SHORT:
	case SFS_HDR_LONG:
		p = sfs_fsck_found(f, code[st], can_fix, path, "%zu bytes, expected %u", len,
				   SFS_HDR_SIZE);
		break;
	case SFS_HDR_CRC: {
		struct sfs_disk_header d;

		memcpy(&d, buf, sizeof(d));
		if (mend)
			p = sfs_fsck_found(f, code[st], true, path, "byte %zu is damaged: the "
					   "checksum holds with 0x%02x there, and nothing else changed",
					   bad_at, bad_was);
		else
			p = sfs_fsck_found(f, code[st], can_fix, path,
					   "stored 0x%08x, computed 0x%08x%s",
					   le32toh(d.h_crc), sfs_header_csum_compute(&d),
					   can_fix ? "" : "; its version field is not 1, so it is not "
					   "rewritten");
		break;
	}
	case SFS_HDR_FLAGS:
		p = sfs_fsck_found(f, code[st], can_fix, path, "flags 0x%x", h.flags);
		break;
	default:
		p = sfs_fsck_found(f, code[st], can_fix, path, NULL);
		break;
	}
	if (p)
		sfs_fsck_done(f, p, rewrite_header(f, buf, (size_t)n, &h));
}

/* ------------------------------------------------------------ the rest of .stackfs */

void sfs_fsck_check_lowers_file(struct fsck *f)
{
	const char *path = "/" SFS_METADIR_NAME "/" SFS_META_LOWERS;
	struct sfs_fsck_problem *p = NULL;
	struct sfs_lower *v;
	char err[256];
	uint8_t *buf;
	size_t len, n;
	int ret = sfs_meta_read_file(f->meta_fd, SFS_META_LOWERS, SFS_LOWERS_MAX, &buf, &len);

	if (ret == -ENOENT)
		return;
	if (ret == -EINVAL || ret == -ELOOP || ret == -EFBIG) {
		p = sfs_fsck_found(f, SFS_PR_LOWERS_BAD, true, path, "%s",
				   ret == -EFBIG ? "too large" : "not a regular file");
	} else if (ret) {
		sfs_fsck_msg(f, true, "%s: %s", path + 1, strerror(-ret));
		return;
	} else {
		ret = sfs_lowers_parse((const char *)buf, len, &v, &n, err, sizeof(err));
		free(buf);
		if (!ret) {
			sfs_lowers_free(v, n);
			return;
		}
		p = sfs_fsck_found(f, SFS_PR_LOWERS_BAD, true, path, "%s", err);
	}
	if (p)
		sfs_fsck_done(f, p, sfs_meta_remove_tree(f->meta_fd, SFS_META_LOWERS));
}

/* `exportnames`: hints only (the daemon checks each against the view),
 * so a file that does not parse is removed whole. */
void sfs_fsck_check_xnames_file(struct fsck *f)
{
	const char *path = "/" SFS_METADIR_NAME "/" SFS_META_XNAMES;
	struct sfs_fsck_problem *p = NULL;
	char err[256];
	uint8_t *buf;
	size_t len;
	int ret = sfs_meta_read_file(f->meta_fd, SFS_META_XNAMES, SFS_XNAMES_MAX_BYTES,
				     &buf, &len);

	if (ret == -ENOENT)
		return;
	if (ret == -EINVAL || ret == -ELOOP || ret == -EFBIG) {
		p = sfs_fsck_found(f, SFS_PR_XNAMES_BAD, true, path, "%s",
				   ret == -EFBIG ? "too large" : "not a regular file");
	} else if (ret) {
		sfs_fsck_msg(f, true, "%s: %s", path + 1, strerror(-ret));
		return;
	} else {
		ret = sfs_xnames_parse(buf, len, NULL, NULL, err, sizeof(err));
		free(buf);
		if (ret == 0)
			return;
		p = sfs_fsck_found(f, SFS_PR_XNAMES_BAD, true, path, "%s", err);
	}
	if (p)
		sfs_fsck_done(f, p, sfs_meta_remove_tree(f->meta_fd, SFS_META_XNAMES));
}

/* Opens and lists the metadata subdirectory NAME (PATH for messages).
 * Returns its fd with the names in *v, or -1 when there is nothing to
 * walk: it is missing, not a directory (reported as NOT_DIR) or
 * unreadable (reported). */
static int open_meta_listing(struct fsck *f, const char *name, const char *path,
			     enum sfs_problem_code not_dir, char ***v, size_t *n)
{
	int fd = sfs_meta_openat(f->meta_fd, name, O_PATH | O_DIRECTORY, 0);
	int ret = fd;

	if (fd >= 0)
		ret = sfs_fsck_list_dir(fd, v, n);
	if (ret == 0)
		return fd;
	if (ret == -ENOTDIR || ret == -ELOOP)
		sfs_fsck_found(f, not_dir, false, path, NULL);
	else if (ret != -ENOENT)
		sfs_fsck_msg(f, true, "%s: %s", path + 1, strerror(-ret));
	if (fd >= 0)
		close(fd);
	return -1;
}

/* Calls check() for each entry of the metadata subdirectory name (a
 * missing one has none; one that is not a directory is reported). */
static void check_subdir(struct fsck *f, const char *name, enum sfs_problem_code not_dir,
			 void (*check)(struct fsck *f, int fd, const char *name, const char *path))
{
	char path[64], **v;
	size_t n;
	int fd;

	snprintf(path, sizeof(path), "/%s/%s", SFS_METADIR_NAME, name);
	fd = open_meta_listing(f, name, path, not_dir, &v, &n);
	if (fd < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		char *p = sfs_fsck_join(path, v[i]);

		if (!p)
			break;
		check(f, fd, v[i], p);
		free(p);
	}
	sfs_fsck_free_names(v, n);
	close(fd);
}

/* The root's record of the workdir holding the metadata, damaged: only
 * the workdir given (--workdir) can say what it held. */
void sfs_fsck_check_workdir_record(struct fsck *f)
{
	const char *wd = f->o->workdir_record == SFS_FSCK_WDREC_GIVEN ? f->o->workdir : NULL;
	struct sfs_fsck_problem *p;
	int ret;

	p = sfs_fsck_found(f, SFS_PR_WORKDIR_CORRUPT, wd != NULL, "/", "%s%s%s",
			   SFS_WORKDIR_XATTR, wd ? ": written again as " : ": give --workdir DIR "
			   "(where the metadata is) to check the branch and write it again",
			   wd ? wd : "");
	if (!p)
		return;
	ret = sfs_xattr_set(f->root_fd, "", SFS_WORKDIR_XATTR, wd, strlen(wd), 0);
	sfs_fsck_done(f, p, ret < 0 ? ret : sfs_meta_fsync_dir(f->root_fd));
}

/* Anything in work/ is what an interrupted operation left. */
static void check_work_entry(struct fsck *f, int fd, const char *name, const char *path)
{
	struct sfs_fsck_problem *p = sfs_fsck_found(f, SFS_PR_WORK_LEFTOVER, true, path, NULL);

	if (p)
		sfs_fsck_done(f, p, sfs_meta_remove_tree(fd, name));
}

void sfs_fsck_check_work(struct fsck *f)
{
	check_subdir(f, SFS_META_WORK, SFS_PR_WORK_NOT_DIR, check_work_entry);
}

/* An index entry whose origin's lower inode is gone shows its data at
 * no lower name any more (the daemon ignores it; a new file reusing the
 * number would otherwise show it): its index name goes. A name the copy
 * was placed under is another link and keeps the data. */
static void check_index_origin(struct fsck *f, int dfd, const char *name, const char *path)
{
	struct sfs_fsck_problem *p;
	struct sfs_origin o;
	char why[PATH_MAX + 64];

	if (sfs_origin_get(dfd, name, &o) != 1 ||
	    sfs_fsck_origin_gone(f, &o, path, why, sizeof(why)) != 1)
		return;
	p = sfs_fsck_found(f, SFS_PR_INDEX_STALE, f->lowers_trusted, path, "%s", why);
	if (p)
		sfs_fsck_done(f, p, sfs_do_unlinkat(dfd, name, 0) < 0 ? -errno : 0);
}

static void check_index_entry(struct fsck *f, int fd, const char *name, const char *path)
{
	struct sfs_fsck_problem *p;
	struct sfs_origin o;
	struct stat st;
	int ret;

	if (sfs_do_stat(fd, name, &st) < 0) {
		if (errno != ENOENT)
			sfs_fsck_msg(f, true, "%s: %s", path + 1, strerror(errno));
	} else if (S_ISDIR(st.st_mode) || !sfs_index_name_ok(name)) {
		sfs_fsck_found(f, SFS_PR_INDEX_NAME, false, path, "%s",
			       S_ISDIR(st.st_mode) ? "a directory" : "bad name");
	} else if ((ret = sfs_origin_get(fd, name, &o)) == -EUCLEAN) {
		/* never taken for none: the copy may be all the lower names
		 * of its inode show */
		sfs_fsck_origin_damaged(f, fd, name, path, false);
	} else if (ret < 0) {
		sfs_fsck_msg(f, true, "%s: origin record: %s", path + 1, strerror(-ret));
	} else if (st.st_nlink == 1 && ret == 0) {
		/* with an origin it still serves the lower names of its
		 * inode that were not copied up (they show the copy) */
		p = sfs_fsck_found(f, SFS_PR_INDEX_ORPHAN, true, path, NULL);
		if (p)
			sfs_fsck_done(f, p, sfs_do_unlinkat(fd, name, 0) < 0 ? -errno : 0);
	} else {
		check_index_origin(f, fd, name, path);
	}
}

void sfs_fsck_check_index(struct fsck *f)
{
	check_subdir(f, SFS_META_INDEX, SFS_PR_INDEX_NOT_DIR, check_index_entry);
}

void sfs_fsck_check_meta_entries(struct fsck *f)
{
	static const char *const known[] = {
		SFS_META_HEADER, SFS_META_REGISTRY, SFS_META_INOMAP, SFS_META_LOWERS,
		SFS_META_LOCK, SFS_META_WORK, SFS_META_INDEX, SFS_META_COMMIT,
		SFS_META_COMMIT_FROM, SFS_META_XNAMES,
	};
	static const char *const tmps[] = {
		SFS_META_HEADER ".tmp", SFS_META_REGISTRY ".tmp", SFS_META_INOMAP ".tmp",
		SFS_META_LOWERS ".tmp", SFS_META_COMMIT ".tmp", SFS_META_COMMIT_FROM ".tmp",
		SFS_META_XNAMES ".tmp",
	};
	char **v;
	size_t n;
	int ret = sfs_fsck_list_dir(f->meta_fd, &v, &n);

	if (ret) {
		sfs_fsck_msg(f, true, "%s: %s", SFS_METADIR_NAME, strerror(-ret));
		return;
	}
	for (size_t i = 0; i < n; i++) {
		bool is_known = false, is_tmp = false;
		struct sfs_fsck_problem *p;
		struct stat st;
		char path[300];

		for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
			is_known |= !strcmp(v[i], known[k]);
		for (size_t k = 0; k < sizeof(tmps) / sizeof(tmps[0]); k++)
			is_tmp |= !strcmp(v[i], tmps[k]);
		snprintf(path, sizeof(path), "/%s/%s", SFS_METADIR_NAME, v[i]);
		if (is_tmp) {
			p = sfs_fsck_found(f, SFS_PR_META_TMP, true, path, NULL);
			if (p)
				sfs_fsck_done(f, p, sfs_meta_remove_tree(f->meta_fd, v[i]));
		} else if (!is_known) {
			sfs_fsck_found(f, SFS_PR_META_UNKNOWN, false, path, NULL);
		} else if (!strcmp(v[i], SFS_META_LOCK) &&
			   sfs_do_stat(f->meta_fd, v[i], &st) == 0 &&
			   !S_ISREG(st.st_mode)) {
			sfs_fsck_found(f, SFS_PR_LOCK_BAD, false, path, NULL);
		}
	}
	sfs_fsck_free_names(v, n);
}
