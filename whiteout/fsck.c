/* fsck of a branch (see fsck.h): the metadata directory record by
 * record, then the tree. Nothing is changed without repair; with it,
 * only what the problem table (problem.c) calls fixable.
 *
 * Whiteouts are checked against the lower branches: a whiteout "hides
 * nothing" only when no lower branch has the name at any path the
 * directory could be merged with. That set is over-approximated (the
 * plain path, the upper directory's redirect and every redirect found
 * below, without cutting at lower opaque directories or whiteouts), so
 * a whiteout that still hides something is never taken away. */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "whiteout/beneath.h"
#include "whiteout/fsck.h"
#include "whiteout/journal.h"
#include "whiteout/ondisk.h"
#include "whiteout/origin.h"
#include "whiteout/whiteout.h"
#include "xattr/xattr.h"

#define MAX_CANDIDATES 16        /* lower paths of one directory */
#define FSCK_TMP ".wh..wh..fsck" /* fsck's own temporary name */
#define MAX_DEPTH 4096
#define PROC_PATH_LEN 320

struct lower_br {
	char *path;
	int fd;                  /* O_RDONLY|O_DIRECTORY of its root */
	uint8_t uuid[16];
	bool uuid_ok;
};

/* The lower paths a directory of the branch may be merged with. */
struct cands {
	char **v;
	size_t n;
	bool unknown;            /* too many, or a lower could not be read */
};

struct fsck {
	const struct sfs_fsck_opts *o;
	struct sfs_fsck_result *r;
	int root_fd;             /* O_PATH of the branch root */
	int meta_fd;             /* O_PATH of .stackfs, or -1 */
	bool v0;                 /* a version 0 metadata dir */
	bool stop;               /* a newer format: check nothing more */
	bool pending;            /* an unfinished commit: the tree is half of it */
	bool marker_only;        /* .stackfs holds nothing but a commit's marker */
	struct lower_br *low;
	size_t nlow;
	bool lowers_known;
	bool reg_damaged;        /* fsck found the registry damaged */
	bool lowers_trusted;     /* verified against the records (or --force):
				  * what they show may be repaired */
	bool handle_warned;
	uint8_t (*noted)[16];    /* filesystems named in a note already */
	size_t nnoted;
	uint64_t entries;
};

static int origin_gone(struct fsck *f, const struct sfs_origin *o, const char *path,
		       char *why, size_t whylen);

/* ------------------------------------------------------------ reporting */

static void message(struct fsck *f, bool error, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void message(struct fsck *f, bool error, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (error)
		f->r->op_error = true;
	if (f->o->message)
		f->o->message(f->o->arg, error, buf);
}

static void emit(struct fsck *f, struct sfs_fsck_problem *p)
{
	f->r->found++;
	if (p->fixed)
		f->r->fixed++;
	else
		f->r->left++;
	if (f->o->report)
		f->o->report(f->o->arg, p);
	free(p->path);
	free(p->detail);
	free(p);
}

/* Records a problem at path (with a detail, or fmt NULL). Returns it
 * when a fix is to be tried now: the caller fixes and calls done().
 * Otherwise (no --repair, not fixable, or can_fix false for this
 * instance) it is reported at once and NULL is returned. */
static struct sfs_fsck_problem *found(struct fsck *f, enum sfs_problem_code code,
				      bool can_fix, const char *path,
				      const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static struct sfs_fsck_problem *found(struct fsck *f, enum sfs_problem_code code,
				      bool can_fix, const char *path,
				      const char *fmt, ...)
{
	struct sfs_fsck_problem *p = calloc(1, sizeof(*p));
	va_list ap;

	if (!p) {
		message(f, true, "out of memory");
		return NULL;
	}
	p->code = code;
	p->path = strdup(path);
	if (fmt) {
		va_start(ap, fmt);
		if (vasprintf(&p->detail, fmt, ap) < 0)
			p->detail = NULL;
		va_end(ap);
	}
	if (f->o->repair && can_fix && sfs_problem_desc(code)->fixable)
		return p;
	emit(f, p);
	return NULL;
}

/* Reports the outcome of a fix (0 or -errno) and returns it. */
static int done(struct fsck *f, struct sfs_fsck_problem *p, int ret)
{
	p->fix_tried = true;
	p->fixed = ret == 0;
	p->fix_err = ret;
	emit(f, p);
	return ret;
}

/* ------------------------------------------------------------ helpers */

static int fstat_fd(int fd, struct stat *st)
{
	return fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
}

/* chmod of the directory fd holds (O_PATH), through its magic link. */
static int chmod_fd(int fd, mode_t mode)
{
	char p[32];

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	return chmod(p, mode) < 0 ? -errno : 0;
}

static char *join(const char *dir, const char *name)
{
	char *s;

	if (asprintf(&s, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", name) < 0)
		return NULL;
	return s;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

/* The names in a directory (any fd of it), sorted, without . and .. */
static int list_dir(int fd, char ***out, size_t *nout)
{
	int dfd = sfs_meta_openat(fd, ".", O_RDONLY | O_DIRECTORY, 0);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	char **v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	int ret = 0;

	if (!d) {
		ret = dfd < 0 ? dfd : -errno;
		if (dfd >= 0)
			close(dfd);
		return ret;
	}
	errno = 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (n == cap) {
			char **nv = realloc(v, (cap = cap ? cap * 2 : 32) * sizeof(*v));

			if (!nv) {
				ret = -ENOMEM;
				goto out;
			}
			v = nv;
		}
		if (!(v[n] = strdup(e->d_name))) {
			ret = -ENOMEM;
			goto out;
		}
		n++;
		errno = 0;
	}
	if (errno)
		ret = -errno;
out:
	closedir(d);
	if (ret) {
		free_names(v, n);
		return ret;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
	*out = v;
	*nout = n;
	return 0;
}

/* An xattr value of dfd/name (not followed), NUL-terminated: its length,
 * -ENODATA, or -errno. By the xattr library, which reaches the name
 * without crossing a mount point. */
static ssize_t get_xattr(int dfd, const char *name, const char *attr,
			 char *buf, size_t len)
{
	ssize_t n = sfs_xattr_get(dfd, name, attr, buf, len - 1);

	if (n < 0)
		return n == -ENOTSUP ? -ENODATA : n;
	buf[n] = 0;
	return n;
}

static int remove_xattr(int dfd, const char *name, const char *attr)
{
	int ret = sfs_xattr_remove(dfd, name, attr);

	return ret == -ENODATA ? 0 : ret;
}

static bool is_empty_dir(int dfd, const char *name)
{
	int fd = sfs_meta_openat(dfd, name, O_PATH | O_DIRECTORY, 0);
	char **v;
	size_t n;
	bool empty = false;

	if (fd < 0)
		return false;
	if (list_dir(fd, &v, &n) == 0) {
		empty = n == 0;
		free_names(v, n);
	}
	close(fd);
	return empty;
}

/* Puts an empty regular file in place of dfd/name (an empty directory or
 * a non-regular file) without a moment where the name is missing. */
static int replace_with_empty_file(int dfd, const char *name, bool is_dir)
{
	int fd, ret = 0;

	fd = sfs_meta_openat(dfd, FSCK_TMP, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return fd;
	if (fsync(fd) < 0)
		ret = -errno;
	close(fd);
	if (!ret && is_dir) {
		if (renameat2(dfd, FSCK_TMP, dfd, name, RENAME_EXCHANGE) < 0)
			ret = -errno;
		else if (unlinkat(dfd, FSCK_TMP, AT_REMOVEDIR) < 0)
			ret = -errno;
	} else if (!ret && renameat(dfd, FSCK_TMP, dfd, name) < 0) {
		ret = -errno;
	}
	if (ret)
		unlinkat(dfd, FSCK_TMP, 0);
	else
		ret = sfs_meta_fsync_dir(dfd);
	return ret;
}

/* ------------------------------------------------------------ header */

static bool zero16(const uint8_t *u)
{
	for (int i = 0; i < 16; i++)
		if (u[i])
			return false;
	return true;
}

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

	if (magic && n >= 32 && !zero16(old->uuid)) {
		memcpy(h.uuid, old->uuid, 16);
	} else {
		if (getrandom(h.uuid, 16, 0) != 16)
			return -errno;
		h.uuid[6] = (uint8_t)((h.uuid[6] & 0x0f) | 0x40);
		h.uuid[8] = (uint8_t)((h.uuid[8] & 0x3f) | 0x80);
	}
	sfs_header_encode(&h, &d);
	return sfs_meta_write_file(f->meta_fd, SFS_META_HEADER, &d, sizeof(d));
}

/* A metadata dir without a header: version 0 (work/ only) or damage. */
static void headerless(struct fsck *f)
{
	const char *path = "/" SFS_METADIR_NAME "/" SFS_META_HEADER;
	struct sfs_fsck_problem *p;
	bool work = false, other = false;
	char **v;
	size_t n;
	int ret = list_dir(f->meta_fd, &v, &n);

	if (ret) {
		message(f, true, "%s: cannot list: %s", SFS_METADIR_NAME, strerror(-ret));
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(v[i], SFS_META_WORK))
			work = true;
		else if (strcmp(v[i], SFS_META_LOCK) && strcmp(v[i], SFS_META_HEADER ".tmp") &&
			 strcmp(v[i], SFS_META_COMMIT_FROM) &&
			 strcmp(v[i], SFS_META_COMMIT_FROM ".tmp"))
			other = true;
	}
	free_names(v, n);
	if (!work && !other) {
		/* made by a commit for its marker in a branch without one */
		f->marker_only = true;
		return;
	}
	if (work && !other) {
		f->v0 = true;
		message(f, false, "%s has format version 0 (made before format 1): "
			"a mount with -o upgrade converts it", SFS_METADIR_NAME);
		return;
	}
	p = found(f, SFS_PR_HEADER_MISSING, true, path, NULL);
	if (p)
		done(f, p, rewrite_header(f, NULL, 0, &(struct sfs_header){ 0 }));
}

static void check_header(struct fsck *f)
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
	size_t len;
	bool can_fix = true;
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
		found(f, SFS_PR_HEADER_NOT_FILE, false, path, NULL);
		return;
	}
	if (fd < 0) {
		message(f, true, "%s: %s", path + 1, strerror(-fd));
		return;
	}
	n = pread(fd, buf, sizeof(buf), 0);
	close(fd);
	if (n < 0) {
		message(f, true, "%s: %s", path + 1, strerror(errno));
		return;
	}
	/* the parser reads at most 64 bytes; it needs the real size */
	len = (size_t)sb.st_size > (size_t)n ? (size_t)sb.st_size : (size_t)n;
	st = sfs_header_parse(buf, len, &h);
	if (st == SFS_HDR_OK && (h.flags & SFS_META_F_VOLATILE) && !f->o->in_use)
		found(f, SFS_PR_VOLATILE_UNCLEAN, false, path, NULL);
	if (st == SFS_HDR_OK)
		return;
	if (st == SFS_HDR_NEWER) {
		message(f, true, "%s: format version %u is newer than this stackfs (%u): not checked",
			path + 1, h.version, SFS_META_VERSION);
		f->stop = true;
		return;
	}
	/* a damaged header that claims another version is left alone */
	if (st == SFS_HDR_CRC && h.version != SFS_META_VERSION)
		can_fix = false;
	switch (st) {
	case SFS_HDR_SHORT:
		p = found(f, code[st], can_fix, path, "%zu bytes, expected %u", len, SFS_HDR_SIZE);
		break;
	case SFS_HDR_LONG:
		p = found(f, code[st], can_fix, path, "%zu bytes, expected %u", len, SFS_HDR_SIZE);
		break;
	case SFS_HDR_CRC: {
		struct sfs_disk_header d;

		memcpy(&d, buf, sizeof(d));
		p = found(f, code[st], can_fix, path, "stored 0x%08x, computed 0x%08x%s",
			  le32toh(d.h_crc), sfs_header_csum_compute(&d),
			  can_fix ? "" : "; its version field is not 1, so it is not rewritten");
		break;
	}
	case SFS_HDR_FLAGS:
		p = found(f, code[st], can_fix, path, "flags 0x%x", h.flags);
		break;
	default:
		p = found(f, code[st], can_fix, path, NULL);
		break;
	}
	if (p)
		done(f, p, rewrite_header(f, buf, (size_t)n, &h));
}

/* ------------------------------------------------------------ registry */

struct pending {
	struct sfs_fsck_problem **v;
	size_t n, cap;
};

static void pend(struct fsck *f, struct pending *pd, struct sfs_fsck_problem *p)
{
	if (!p)
		return;
	if (pd->n == pd->cap) {
		size_t cap = pd->cap ? pd->cap * 2 : 8;
		struct sfs_fsck_problem **v = realloc(pd->v, cap * sizeof(*v));

		if (!v) {
			done(f, p, -ENOMEM);
			return;
		}
		pd->v = v;
		pd->cap = cap;
	}
	pd->v[pd->n++] = p;
}

static void pend_done(struct fsck *f, struct pending *pd, int ret)
{
	for (size_t i = 0; i < pd->n; i++)
		done(f, pd->v[i], ret);
	free(pd->v);
	memset(pd, 0, sizeof(*pd));
}

/* Reads a metadata file: 0, -ENOENT, or a problem reported as not_file. */
static int read_meta(struct fsck *f, const char *name, size_t max,
		     enum sfs_problem_code not_file, uint8_t **buf, size_t *len)
{
	char path[64];
	int ret;

	snprintf(path, sizeof(path), "/%s/%s", SFS_METADIR_NAME, name);
	ret = sfs_meta_read_file(f->meta_fd, name, max, buf, len);
	if (ret == -EINVAL || ret == -ELOOP)
		found(f, not_file, false, path, NULL);
	else if (ret == -EFBIG)
		found(f, SFS_PR_META_TOO_LARGE, false, path, "the limit is %zu bytes: not checked",
		      max);
	else if (ret && ret != -ENOENT)
		message(f, true, "%s: %s", path + 1, strerror(-ret));
	return ret;
}

static bool reg_id_used(const struct sfs_reg_table *t, uint32_t kind, uint32_t id)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].kind == kind && t->v[i].id == id)
			return true;
	return false;
}

static void check_registry(struct fsck *f)
{
	const char *path = "/" SFS_METADIR_NAME "/" SFS_META_REGISTRY;
	struct sfs_reg_table keep = { 0 };
	struct pending pd = { 0 };
	uint32_t head_next[3] = { 0, 1, 1 }, seen_next[3] = { 0, 1, 1 };
	struct sfs_disk_reg_head head;
	enum sfs_rec_status st;
	bool head_ok = false, dirty = false;
	uint8_t *buf;
	size_t len, nrec;
	int ret;

	ret = read_meta(f, SFS_META_REGISTRY, SFS_REG_MAX_BYTES, SFS_PR_REG_NOT_FILE, &buf, &len);
	if (ret == -ENOENT) {
		struct sfs_fsck_problem *p = found(f, SFS_PR_REG_MISSING, true, path, NULL);

		keep.next_id[SFS_REG_FS] = keep.next_id[SFS_REG_BRANCH] = 1;
		if (p)
			done(f, p, sfs_reg_store(f->meta_fd, &keep));
	}
	if (ret)
		return;
	if (len < SFS_REG_REC_SIZE) {
		pend(f, &pd, found(f, SFS_PR_REG_HEAD, true, path, "truncated: %zu bytes", len));
		dirty = true;
	} else {
		memcpy(&head, buf, sizeof(head));
		st = sfs_reg_head_decode(&head, head_next);
		if (st == SFS_REC_NEWER) {
			found(f, SFS_PR_REG_NEWER, false, path, "version %u", le32toh(head.rh_version));
			goto out;
		}
		head_ok = st == SFS_REC_OK;
		if (!head_ok) {
			pend(f, &pd, found(f, SFS_PR_REG_HEAD, true, path, "%s", sfs_rec_status_str(st)));
			dirty = true;
		}
	}
	nrec = len >= SFS_REG_REC_SIZE ? len / SFS_REG_REC_SIZE - 1 : 0;
	if (len >= SFS_REG_REC_SIZE && len % SFS_REG_REC_SIZE) {
		pend(f, &pd, found(f, SFS_PR_REG_PARTIAL, true, path, "%zu bytes after record %zu",
				   len % SFS_REG_REC_SIZE, nrec));
		dirty = true;
	}
	for (size_t i = 0; i < nrec; i++) {
		struct sfs_disk_reg d;
		struct sfs_reg_entry e;

		memcpy(&d, buf + SFS_REG_REC_SIZE * (i + 1), sizeof(d));
		st = sfs_reg_decode(&d, &e);
		/* an id written with a valid checksum stays retired */
		if (st != SFS_REC_CRC && (e.kind == SFS_REG_FS || e.kind == SFS_REG_BRANCH) &&
		    e.id && e.id != UINT32_MAX && e.id >= seen_next[e.kind])
			seen_next[e.kind] = e.id + 1;
		if (st) {
			pend(f, &pd, found(f, st == SFS_REC_CRC ? SFS_PR_REG_CRC : SFS_PR_REG_FIELD,
					   true, path, "record %zu", i + 1));
			dirty = true;
			continue;
		}
		if (head_ok && e.id >= head_next[e.kind]) {
			pend(f, &pd, found(f, SFS_PR_REG_FIELD, true, path,
					   "record %zu: id %u is not below the next id %u",
					   i + 1, e.id, head_next[e.kind]));
			dirty = true;
			continue;
		}
		if (reg_id_used(&keep, e.kind, e.id) || sfs_reg_table_find(&keep, &e)) {
			pend(f, &pd, found(f, SFS_PR_REG_DUP, true, path, "record %zu (%s id %u)",
					   i + 1, e.kind == SFS_REG_FS ? "filesystem" : "branch", e.id));
			dirty = true;
			continue;
		}
		if (sfs_reg_table_add(&keep, &e)) {
			message(f, true, "out of memory");
			goto out;
		}
	}
	/* the branch records may be incomplete: lower branches cannot be
	 * told from others by them */
	f->reg_damaged = dirty;
	if (dirty && pd.n) {
		for (int k = SFS_REG_FS; k <= SFS_REG_BRANCH; k++)
			keep.next_id[k] = head_ok && head_next[k] > seen_next[k] ? head_next[k]
										 : seen_next[k];
		ret = sfs_reg_store(f->meta_fd, &keep);
		pend_done(f, &pd, ret);
	}
out:
	pend_done(f, &pd, -ECANCELED);
	sfs_reg_table_free(&keep);
	free(buf);
}

/* ------------------------------------------------------------ inomap */

static int ino_write_rec(int fd, const void *rec, uint64_t slot)
{
	ssize_t n = pwrite(fd, rec, SFS_INO_REC_SIZE, (off_t)(SFS_INO_REC_SIZE * slot));

	if (n != (ssize_t)SFS_INO_REC_SIZE)
		return n < 0 ? -errno : -ENOSPC;
	return fdatasync(fd) < 0 ? -errno : 0;
}

/* Opens the inomap to check (and, with repair, to write): an fd, or -1
 * when there is nothing more to check (reported). *len is its size. */
static int open_inomap(struct fsck *f, uint64_t *len)
{
	const char *path = "/" SFS_METADIR_NAME "/" SFS_META_INOMAP;
	struct sfs_fsck_problem *p;
	struct stat sb;
	int fd = sfs_meta_openat(f->meta_fd, SFS_META_INOMAP, O_RDONLY | O_NONBLOCK, 0);

	if (fd == -ENOENT) {
		p = found(f, SFS_PR_INO_MISSING, true, path, NULL);
		if (p)
			done(f, p, sfs_ino_create(f->meta_fd));
		return -1;
	}
	if (fd >= 0 && fstat(fd, &sb) < 0) {
		close(fd);
		fd = -errno;
	}
	if (fd == -ELOOP || (fd >= 0 && !S_ISREG(sb.st_mode))) {
		found(f, SFS_PR_INO_NOT_FILE, false, path, NULL);
		goto fail;
	}
	if (fd < 0) {
		message(f, true, "%s: %s", path + 1, strerror(-fd));
		return -1;
	}
	*len = (uint64_t)sb.st_size;
	/* nothing of it is read: a sparse terabyte costs no disk */
	if (*len > SFS_INO_MAX_BYTES) {
		found(f, SFS_PR_META_TOO_LARGE, false, path,
		      "%llu bytes, the limit is %llu (%u records): not checked",
		      (unsigned long long)*len, (unsigned long long)SFS_INO_MAX_BYTES,
		      SFS_INO_MAX_RECORDS);
		goto fail;
	}
	if (f->o->repair) {
		close(fd);
		fd = sfs_meta_openat(f->meta_fd, SFS_META_INOMAP, O_RDWR | O_NONBLOCK, 0);
		if (fd < 0) {
			message(f, true, "%s: %s", path + 1, strerror(-fd));
			return -1;
		}
	}
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

/* The file header; false when the records are not to be checked. */
static bool check_ino_head(struct fsck *f, int fd, uint64_t len)
{
	const char *path = "/" SFS_METADIR_NAME "/" SFS_META_INOMAP;
	struct sfs_disk_ino_head head;
	struct sfs_fsck_problem *p;
	enum sfs_rec_status st;
	int ret;

	memset(&head, 0, sizeof(head));
	ret = sfs_pread_full(fd, &head, len < sizeof(head) ? (size_t)len : sizeof(head), 0);
	if (ret) {
		message(f, true, "%s: %s", path + 1, strerror(-ret));
		return false;
	}
	st = len < SFS_INO_REC_SIZE ? SFS_REC_FIELD : sfs_ino_head_decode(&head);
	if (st == SFS_REC_NEWER) {
		found(f, SFS_PR_INO_NEWER, false, path, "version %u", le32toh(head.ih_version));
		return false;
	}
	if (st) {
		p = len < SFS_INO_REC_SIZE
			? found(f, SFS_PR_INO_HEAD, true, path, "truncated: %llu bytes",
				(unsigned long long)len)
			: found(f, SFS_PR_INO_HEAD, true, path, "%s", sfs_rec_status_str(st));
		if (p) {
			sfs_ino_head_encode(&head);
			done(f, p, ino_write_rec(fd, &head, 0));
		}
	}
	return true;
}

/* One record (number i of nfull): bad ones and repeats are retired. */
static int check_ino_rec(struct fsck *f, int fd, struct sfs_ino_table *seen,
			 struct sfs_disk_ino *d, uint64_t i, uint64_t nfull)
{
	const char *path = "/" SFS_METADIR_NAME "/" SFS_META_INOMAP;
	struct sfs_fsck_problem *p;
	enum sfs_rec_status st;
	uint32_t fs_id;
	uint64_t ino;

	st = sfs_ino_decode(d, i, &fs_id, &ino);
	if (st)
		p = found(f, st == SFS_REC_CRC ? SFS_PR_INO_CRC : SFS_PR_INO_FIELD, true, path,
			  "record %llu%s", (unsigned long long)(i + 1),
			  i + 1 == nfull ? " (the last: an interrupted append?)" : "");
	else if (fs_id && sfs_ino_table_find(seen, fs_id, ino))
		p = found(f, SFS_PR_INO_DUP, true, path,
			  "record %llu (filesystem %u, inode %llu)", (unsigned long long)(i + 1),
			  fs_id, (unsigned long long)ino);
	else if (fs_id && sfs_ino_table_add(seen, fs_id, ino, sfs_ino_number(i)))
		return -ENOMEM;
	else
		return 0;
	if (p) {
		sfs_ino_encode(0, 0, i, d);
		done(f, p, ino_write_rec(fd, d, i + 1));
	}
	return 0;
}

static void check_inomap(struct fsck *f)
{
	const char *path = "/" SFS_METADIR_NAME "/" SFS_META_INOMAP;
	struct sfs_ino_table seen = { 0 };
	struct sfs_fsck_problem *p;
	uint8_t *chunk = NULL;
	uint64_t len = 0, nfull;
	int ret, fd = open_inomap(f, &len);

	if (fd < 0)
		return;
	if (!check_ino_head(f, fd, len))
		goto out;
	nfull = len >= SFS_INO_REC_SIZE ? len / SFS_INO_REC_SIZE - 1 : 0;
	if (len >= SFS_INO_REC_SIZE && len % SFS_INO_REC_SIZE) {
		p = found(f, SFS_PR_INO_PARTIAL, true, path, "%llu bytes after record %llu",
			  (unsigned long long)(len % SFS_INO_REC_SIZE), (unsigned long long)nfull);
		if (p) {
			ret = ftruncate(fd, (off_t)(SFS_INO_REC_SIZE * (nfull + 1))) < 0 ? -errno : 0;
			if (!ret && fdatasync(fd) < 0)
				ret = -errno;
			done(f, p, ret);
		}
	}
	/* read in chunks: memory is the table of numbers, not the file */
	chunk = malloc((size_t)SFS_INO_REC_SIZE * SFS_INO_CHUNK);
	if (!chunk && nfull) {
		message(f, true, "out of memory");
		goto out;
	}
	for (uint64_t i = 0; i < nfull; i += SFS_INO_CHUNK) {
		size_t n = nfull - i < SFS_INO_CHUNK ? (size_t)(nfull - i) : SFS_INO_CHUNK;

		ret = sfs_pread_full(fd, chunk, SFS_INO_REC_SIZE * n,
				     (off_t)(SFS_INO_REC_SIZE * (i + 1)));
		if (ret) {
			message(f, true, "%s: %s", path + 1,
				ret == -ENODATA ? "changed while read" : strerror(-ret));
			goto out;
		}
		for (size_t k = 0; k < n; k++) {
			struct sfs_disk_ino d;

			memcpy(&d, chunk + SFS_INO_REC_SIZE * k, sizeof(d));
			if (check_ino_rec(f, fd, &seen, &d, i + k, nfull)) {
				message(f, true, "out of memory");
				goto out;
			}
		}
	}
out:
	free(chunk);
	sfs_ino_table_free(&seen);
	close(fd);
}

/* ------------------------------------------------------------ the rest of .stackfs */

static void check_lowers_file(struct fsck *f)
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
		p = found(f, SFS_PR_LOWERS_BAD, true, path, "%s",
			  ret == -EFBIG ? "too large" : "not a regular file");
	} else if (ret) {
		message(f, true, "%s: %s", path + 1, strerror(-ret));
		return;
	} else {
		ret = sfs_lowers_parse((const char *)buf, len, &v, &n, err, sizeof(err));
		free(buf);
		if (!ret) {
			sfs_lowers_free(v, n);
			return;
		}
		p = found(f, SFS_PR_LOWERS_BAD, true, path, "%s", err);
	}
	if (p)
		done(f, p, sfs_meta_remove_tree(f->meta_fd, SFS_META_LOWERS));
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
		ret = list_dir(fd, v, n);
	if (ret == 0)
		return fd;
	if (ret == -ENOTDIR || ret == -ELOOP)
		found(f, not_dir, false, path, NULL);
	else if (ret != -ENOENT)
		message(f, true, "%s: %s", path + 1, strerror(-ret));
	if (fd >= 0)
		close(fd);
	return -1;
}

static void check_work(struct fsck *f)
{
	const char *path = "/" SFS_METADIR_NAME "/" SFS_META_WORK;
	char **v;
	size_t n;
	int fd = open_meta_listing(f, SFS_META_WORK, path, SFS_PR_WORK_NOT_DIR, &v, &n);

	if (fd < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		char *p = join(path, v[i]);
		struct sfs_fsck_problem *pr = p ? found(f, SFS_PR_WORK_LEFTOVER, true, p, NULL) : NULL;

		if (pr)
			done(f, pr, sfs_meta_remove_tree(fd, v[i]));
		free(p);
	}
	free_names(v, n);
	close(fd);
}

static bool index_name_ok(const char *s)
{
	if (strlen(s) != 25 || s[8] != '-')
		return false;
	for (int i = 0; i < 25; i++)
		if (i != 8 && !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static bool index_has_origin(int dirfd, const char *name)
{
	struct sfs_origin o;

	return sfs_origin_get(dirfd, name, &o) == 1;
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

	if (sfs_origin_get(dfd, name, &o) != 1 || origin_gone(f, &o, path, why, sizeof(why)) != 1)
		return;
	p = found(f, SFS_PR_INDEX_STALE, f->lowers_trusted, path, "%s", why);
	if (p)
		done(f, p, unlinkat(dfd, name, 0) < 0 ? -errno : 0);
}

static void check_index(struct fsck *f)
{
	const char *path = "/" SFS_METADIR_NAME "/" SFS_META_INDEX;
	char **v;
	size_t n;
	int fd = open_meta_listing(f, SFS_META_INDEX, path, SFS_PR_INDEX_NOT_DIR, &v, &n);

	if (fd < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		char *p = join(path, v[i]);
		struct sfs_fsck_problem *pr;
		struct stat st;

		if (!p)
			break;
		if (fstatat(fd, v[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT)
				message(f, true, "%s: %s", p + 1, strerror(errno));
		} else if (S_ISDIR(st.st_mode) || !index_name_ok(v[i])) {
			found(f, SFS_PR_INDEX_NAME, false, p, "%s",
			      S_ISDIR(st.st_mode) ? "a directory" : "bad name");
		} else if (st.st_nlink == 1 && !index_has_origin(fd, v[i])) {
			/* with an origin it still serves the lower names of its
			 * inode that were not copied up (they show the copy) */
			pr = found(f, SFS_PR_INDEX_ORPHAN, true, p, NULL);
			if (pr)
				done(f, pr, unlinkat(fd, v[i], 0) < 0 ? -errno : 0);
		} else {
			check_index_origin(f, fd, v[i], p);
		}
		free(p);
	}
	free_names(v, n);
	close(fd);
}

static void check_meta_entries(struct fsck *f)
{
	static const char *const known[] = {
		SFS_META_HEADER, SFS_META_REGISTRY, SFS_META_INOMAP, SFS_META_LOWERS,
		SFS_META_LOCK, SFS_META_WORK, SFS_META_INDEX, SFS_META_COMMIT,
		SFS_META_COMMIT_FROM,
	};
	static const char *const tmps[] = {
		SFS_META_HEADER ".tmp", SFS_META_REGISTRY ".tmp", SFS_META_INOMAP ".tmp",
		SFS_META_LOWERS ".tmp", SFS_META_COMMIT ".tmp", SFS_META_COMMIT_FROM ".tmp",
	};
	char **v;
	size_t n;
	int ret = list_dir(f->meta_fd, &v, &n);

	if (ret) {
		message(f, true, "%s: %s", SFS_METADIR_NAME, strerror(-ret));
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
			p = found(f, SFS_PR_META_TMP, true, path, NULL);
			if (p)
				done(f, p, sfs_meta_remove_tree(f->meta_fd, v[i]));
		} else if (!is_known) {
			found(f, SFS_PR_META_UNKNOWN, false, path, NULL);
		} else if (!strcmp(v[i], SFS_META_LOCK) &&
			   fstatat(f->meta_fd, v[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			   !S_ISREG(st.st_mode)) {
			found(f, SFS_PR_LOCK_BAD, false, path, NULL);
		}
	}
	free_names(v, n);
}

/* ------------------------------------------------------------ commit */

static void uuid_str(const uint8_t u[16], char out[40])
{
	for (int i = 0, k = 0; i < 16; i++)
		k += snprintf(out + k, 40 - (size_t)k, "%s%02x",
			      i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", u[i]);
}

static const char *phase_str(const struct sfs_journal *j)
{
	return j->phase == SFS_JNL_MOVING ? "part way: --repair puts the moved lower directories back"
		: "the lower branch is complete: --repair finishes emptying the rw branch";
}

/* This branch's own journal: a commit from it into j->lower. */
static void commit_from_here(struct fsck *f, const struct sfs_journal *j)
{
	const char *path = "/" SFS_METADIR_NAME "/" SFS_META_COMMIT, *how;
	int lfd = open(j->lower, O_PATH | O_DIRECTORY | O_CLOEXEC), ret;
	struct sfs_fsck_problem *p;
	char msg[512];

	p = found(f, SFS_PR_COMMIT_UNFINISHED, lfd >= 0, path, "into %s, %s%s", j->lower,
		  phase_str(j), lfd >= 0 ? "" : " (the lower branch cannot be opened)");
	if (!p) {
		f->pending = true;
		goto out;
	}
	ret = sfs_jnl_recover(f->root_fd, lfd, j, &how, msg, sizeof(msg));
	if (ret < 0) {
		message(f, true, "%s: %s", path, msg);
		f->pending = true;
	} else {
		message(f, false, "the unfinished commit into %s was %s", j->lower, how);
	}
	done(f, p, ret);
out:
	if (lfd >= 0)
		close(lfd);
}

/* Recovers, from this lower branch, the commit the marker names: with the
 * rw branch's lock (a running commit holds it). */
static int recover_from_lower(struct fsck *f, int rfd, const struct sfs_journal *j)
{
	const char *how;
	char msg[512];
	int lk = sfs_meta_lock(rfd, true), ret;

	if (lk < 0 && lk != -ENOENT) {
		message(f, true, "%s: %s", j->lower, lk == -EBUSY ?
			"the rw branch is in use (a commit running?)" : strerror(-lk));
		return lk;
	}
	ret = sfs_jnl_recover(rfd, f->root_fd, j, &how, msg, sizeof(msg));
	if (ret < 0)
		message(f, true, "%s", msg);
	else
		message(f, false, "the unfinished commit into this branch was %s", how);
	if (lk >= 0)
		close(lk);
	return ret;
}

/* This branch's marker: a commit into it from the rw branch it names. */
static void commit_into_here(struct fsck *f, const struct sfs_jnl_mark *m)
{
	const char *path = "/" SFS_METADIR_NAME "/" SFS_META_COMMIT_FROM;
	int rfd = open(m->rw, O_PATH | O_DIRECTORY | O_CLOEXEC), ret;
	struct sfs_fsck_problem *p;
	struct sfs_journal j = { 0 };
	char msg[512], u[40];

	uuid_str(m->rw_uuid, u);
	if (rfd < 0 || !sfs_jnl_same_branch(rfd, m->rw_fs_uuid, m->rw_ino)) {
		found(f, SFS_PR_COMMIT_UNFINISHED, false, path, "from branch %s at %s, which is not "
		      "there: bring it back, then run stackfs fsck --repair on it", u, m->rw);
		f->pending = true;
		goto out;
	}
	ret = sfs_jnl_read(rfd, &j, msg, sizeof(msg));
	if (ret == -ENOENT || (ret == 0 && !sfs_jnl_same_branch(f->root_fd, j.lower_fs_uuid,
								 j.lower_ino))) {
		struct sfs_journal none = { 0 };

		p = found(f, SFS_PR_COMMIT_MARKER_STALE, true, path, "from %s", m->rw);
		if (p)
			done(f, p, sfs_jnl_finish(-1, f->root_fd, &none));
		else
			f->pending = true;
		goto out;
	}
	if (ret < 0) {
		found(f, SFS_PR_COMMIT_UNFINISHED, false, path, "from branch %s at %s, whose journal "
		      "cannot be read: %s", u, m->rw, msg);
		f->pending = true;
		goto out;
	}
	p = found(f, SFS_PR_COMMIT_UNFINISHED, true, path, "from branch %s at %s, %s", u, m->rw,
		  phase_str(&j));
	if (!p) {
		f->pending = true;
		goto out;
	}
	ret = recover_from_lower(f, rfd, &j);
	f->pending |= ret < 0;
	done(f, p, ret);
out:
	sfs_jnl_free(&j);
	if (rfd >= 0)
		close(rfd);
}

/* An unfinished commit from or into this branch (journal.h). */
static void check_commit(struct fsck *f)
{
	struct sfs_journal j;
	struct sfs_jnl_mark m;
	char msg[512];
	int ret = sfs_jnl_read(f->root_fd, &j, msg, sizeof(msg));

	if (ret == 0) {
		commit_from_here(f, &j);
		sfs_jnl_free(&j);
	} else if (ret != -ENOENT) {
		found(f, SFS_PR_COMMIT_UNFINISHED, false, "/" SFS_METADIR_NAME "/" SFS_META_COMMIT,
		      "%s", msg);
		f->pending = true;
	}
	ret = sfs_jmark_read(f->root_fd, &m, msg, sizeof(msg));
	if (ret == 0) {
		commit_into_here(f, &m);
		sfs_jmark_free(&m);
	} else if (ret != -ENOENT) {
		found(f, SFS_PR_COMMIT_UNFINISHED, false,
		      "/" SFS_METADIR_NAME "/" SFS_META_COMMIT_FROM, "%s", msg);
		f->pending = true;
	}
}

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
	p = found(f, SFS_PR_META_UNTRUSTED, true, path, "%s", what);
	if (!p) {
		message(f, false, "nothing else is checked while the metadata directory is "
			"not trusted: run fsck --repair to rebuild it");
		f->stop = true;
		return -1;
	}
	close(f->meta_fd);
	ret = done(f, p, sfs_meta_rebuild(f->root_fd, kept, sizeof(kept)));
	f->meta_fd = ret < 0 ? -1 : sfs_meta_dir_open(f->root_fd, NULL, 0);
	if (f->meta_fd < 0) {
		f->stop = true;
		return -1;
	}
	message(f, false, "the old metadata directory is kept as %s: stackfs no longer "
		"uses it, and never acts on what it holds", kept);
	return 0;
}

/* 0 to go on with the metadata dir's content, else skip it. */
static int open_meta(struct fsck *f)
{
	const char *path = "/" SFS_METADIR_NAME;
	struct sfs_fsck_problem *p;
	struct sfs_distrust d;
	struct stat st;
	int ret;

	f->meta_fd = sfs_meta_openat(f->root_fd, SFS_METADIR_NAME, O_PATH | O_DIRECTORY, 0);
	if (f->meta_fd == -ENOENT) {
		message(f, false, "no %s: the branch was never mounted read-write",
			SFS_METADIR_NAME);
		return -1;
	}
	if (f->meta_fd == -ELOOP || f->meta_fd == -ENOTDIR) {
		found(f, SFS_PR_META_NOT_DIR, false, path, "%s",
		      f->meta_fd == -ELOOP ? "a symlink" : "not a directory");
		return -1;
	}
	if (f->meta_fd < 0) {
		message(f, true, "%s: %s", SFS_METADIR_NAME, strerror(-f->meta_fd));
		return -1;
	}
	ret = sfs_meta_trusted(f->root_fd, f->meta_fd, &d);
	if (ret == -EPERM)
		return untrusted_meta(f, &d);
	if (ret < 0 || fstat_fd(f->meta_fd, &st) < 0) {
		message(f, true, "%s: %s", SFS_METADIR_NAME, strerror(ret < 0 ? -ret : errno));
		return -1;
	}
	if ((st.st_mode & 07777) != 0700) {
		p = found(f, SFS_PR_META_MODE, true, path, "mode %04o", st.st_mode & 07777);
		if (p)
			done(f, p, chmod_fd(f->meta_fd, 0700));
	}
	return 0;
}

/* ------------------------------------------------------------ lower branches */

static int add_lower(struct fsck *f, const char *path)
{
	struct lower_br *v = realloc(f->low, (f->nlow + 1) * sizeof(*v));
	struct lower_br *l;
	int fd;

	if (!v)
		return -ENOMEM;
	f->low = v;
	/* not O_PATH: open_by_handle_at wants a real fd of the filesystem */
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	l = &f->low[f->nlow++];
	memset(l, 0, sizeof(*l));
	l->fd = fd;
	l->path = strdup(path);
	l->uuid_ok = sfs_fs_uuid(fd, l->uuid) == 0;
	return l->path ? 0 : -ENOMEM;
}

static bool same_dir(int a_fd, const char *b_path)
{
	struct stat a, b;

	return fstat(a_fd, &a) == 0 && stat(b_path, &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* The branch records of the registry (kind 2: filesystem UUID and root
 * file handle of every branch of a mount this branch was the highest rw
 * branch of). false when there are none to compare with. */
static bool load_branch_records(struct fsck *f, struct sfs_reg_table *t)
{
	char err[256];
	uint8_t *buf;
	size_t len;
	bool any = false;

	memset(t, 0, sizeof(*t));
	if (f->reg_damaged)
		return false;
	if (f->meta_fd < 0 || f->v0 ||
	    sfs_meta_read_file(f->meta_fd, SFS_META_REGISTRY, SFS_REG_MAX_BYTES, &buf, &len))
		return false;
	if (sfs_reg_parse(buf, len, t, err, sizeof(err)) == 0)
		for (size_t i = 0; i < t->n; i++)
			any |= t->v[i].kind == SFS_REG_BRANCH;
	free(buf);
	return any;
}

/* 1 when the directory fd is a branch the registry records, 0 when it is
 * another one, -errno when its identity cannot be read. */
static int recorded_branch(const struct sfs_reg_table *t, int fd)
{
	struct sfs_reg_entry key = { .kind = SFS_REG_BRANCH };
	unsigned hb = SFS_HANDLE_MAX;
	int type, ret = sfs_fs_uuid(fd, key.fs_uuid);

	if (!ret)
		ret = sfs_fs_handle(fd, "", &type, key.handle, &hb);
	if (ret)
		return ret;
	key.handle_type = type;
	key.handle_bytes = (uint16_t)hb;
	return sfs_reg_table_find(t, &key) != NULL;
}

/* --lower: opened before anything else (one that cannot be opened
 * stops the check: a whiteout would look as if it hid nothing). */
static int open_given_lowers(struct fsck *f)
{
	for (size_t i = 0; i < f->o->nlowers; i++) {
		int ret = add_lower(f, f->o->lowers[i]);

		if (ret) {
			message(f, true, "lower branch %s: %s", f->o->lowers[i], strerror(-ret));
			return ret;
		}
	}
	f->lowers_known = f->lowers_trusted = true;
	return 0;
}

/* --lower taken as given; one the registry does not record is judged
 * against, but nothing it decides is repaired without --force. */
static void verify_given_lowers(struct fsck *f)
{
	struct sfs_reg_table t;
	bool records = load_branch_records(f, &t);

	for (size_t i = 0; records && i < f->nlow; i++) {
		if (recorded_branch(&t, f->low[i].fd) == 1)
			continue;
		if (f->o->force) {
			message(f, false, "--lower %s is not a branch recorded in %s/%s: judged "
				"against all the same (--force)", f->low[i].path,
				SFS_METADIR_NAME, SFS_META_REGISTRY);
			continue;
		}
		message(f, false, "--lower %s is not a branch recorded in %s/%s (never mounted "
			"with this branch): whiteouts, origin records and index entries are "
			"judged against it but not repaired (--force to repair)", f->low[i].path,
			SFS_METADIR_NAME, SFS_META_REGISTRY);
		f->lowers_trusted = false;
	}
	sfs_reg_table_free(&t);
}

/* One branch of lowers below this one: opened, and the very branch that
 * was mounted (its identity in the registry), else an error saying that
 * nothing is judged. 0 or -1. */
static int recorded_lower(struct fsck *f, const struct sfs_reg_table *t, bool records,
			  const char *path)
{
	static const char tail[] = "whiteouts, origin records and index entries are not "
				   "checked against the lower branches (give them with --lower)";
	int ret = add_lower(f, path);

	if (ret) {
		message(f, true, "lower branch %s (from %s/%s) %s: %s", path,
			SFS_METADIR_NAME, SFS_META_LOWERS,
			ret == -ENOENT ? "is missing" : "cannot be opened",
			ret == -ENOENT ? tail : strerror(-ret));
		return -1;
	}
	if (!records)
		return 0;
	ret = recorded_branch(t, f->low[f->nlow - 1].fd);
	if (ret == 1)
		return 0;
	if (ret == 0)
		message(f, true, "%s is not the lower branch of the last mount (its filesystem "
			"UUID and root file handle are not in %s/%s: an empty mount point, "
			"another directory in its place, or a record lost): %s", path, SFS_METADIR_NAME,
			SFS_META_REGISTRY, tail);
	else
		message(f, true, "lower branch %s: its identity cannot be read: %s: %s", path,
			strerror(-ret), tail);
	return -1;
}

/* The lower branches: --lower, else those below this branch in lowers,
 * each checked to be the branch that was mounted there. */
static int find_lowers(struct fsck *f)
{
	struct sfs_lower *v = NULL;
	struct sfs_reg_table t;
	size_t n = 0, self;
	bool records;
	char err[256];

	if (f->o->lowers) {
		verify_given_lowers(f);
		return 0;
	}
	if (f->meta_fd < 0 || sfs_meta_read_lowers(f->meta_fd, &v, &n, err, sizeof(err))) {
		message(f, false, "the lower branches are unknown (no --lower, no readable "
			"%s/%s): whiteouts and origin records are not checked against them",
			SFS_METADIR_NAME, SFS_META_LOWERS);
		return 0;
	}
	records = load_branch_records(f, &t);
	for (self = 0; self < n && !same_dir(f->root_fd, v[self].path); self++)
		;
	if (self == n) {
		message(f, false, "the branch is not in %s/%s (moved?): whiteouts and origin "
			"records are not checked against lower branches; give them with --lower",
			SFS_METADIR_NAME, SFS_META_LOWERS);
		goto out;
	}
	if (self + 1 == n) {
		message(f, false, "the last mount had no branch below this one: whiteouts and "
			"origin records are not checked against lower branches; give them with "
			"--lower");
		goto out;
	}
	for (size_t i = self + 1; i < n; i++)
		if (recorded_lower(f, &t, records, v[i].path))
			goto out;
	f->lowers_known = true;
	/* without records the paths are all there is: reported, not repaired */
	f->lowers_trusted = records || f->o->force;
	if (!f->lowers_trusted)
		message(f, false, "%s/%s %s: the branches of %s/%s cannot be checked against "
			"it; what they decide is reported, not repaired (--force to repair)",
			SFS_METADIR_NAME, SFS_META_REGISTRY,
			f->reg_damaged ? "was damaged" : "records no branch",
			SFS_METADIR_NAME, SFS_META_LOWERS);
out:
	sfs_reg_table_free(&t);
	sfs_lowers_free(v, n);
	return 0;
}

/* ------------------------------------------------------------ candidates */

static void cands_free(struct cands *c)
{
	free_names(c->v, c->n);
	memset(c, 0, sizeof(*c));
}

static void cands_add(struct cands *c, char *p)
{
	char **v;

	if (!p) {
		c->unknown = true;
		return;
	}
	for (size_t i = 0; i < c->n; i++) {
		if (!strcmp(c->v[i], p)) {
			free(p);
			return;
		}
	}
	if (c->n >= MAX_CANDIDATES || !(v = realloc(c->v, (c->n + 1) * sizeof(*v)))) {
		c->unknown = true;
		free(p);
		return;
	}
	c->v = v;
	c->v[c->n++] = p;
}

/* The directory at path p (absolute in the branch) of lower j: an
 * O_PATH fd, -ENOENT when it is not there, or -errno. */
static int lower_dir(struct fsck *f, size_t j, const char *p)
{
	int fd = sfs_meta_openat(f->low[j].fd, p[1] ? p + 1 : ".", O_PATH | O_DIRECTORY, 0);

	if (fd == -ENOTDIR || fd == -ELOOP || fd == -EXDEV)
		return -ENOENT;
	return fd;
}

/* A redirect of a directory (any of the three names), or NULL. */
static char *redirect_of(int dfd, const char *name)
{
	static const char *const names[] = {
		SFS_REDIRECT_XATTR, SFS_OVL_REDIRECT_XATTR, SFS_OVL_USER_REDIRECT_XATTR,
	};
	char buf[4096];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (get_xattr(dfd, name, names[i], buf, sizeof(buf)) > 0)
			return strdup(buf);
	return NULL;
}

static char *dir_of(const char *p)
{
	const char *s = strrchr(p, '/');

	return s == p || !s ? strdup("/") : strndup(p, (size_t)(s - p));
}

/* The candidates of a subdirectory `name` of a directory with parent's
 * candidates, given whether it is opaque and its own redirect. */
static void child_cands(struct fsck *f, const struct cands *parent, const char *name,
			bool opaque, const char *redirect, struct cands *c)
{
	memset(c, 0, sizeof(*c));
	if (parent->unknown) {
		c->unknown = true;
		return;
	}
	if (opaque)
		return;
	for (size_t i = 0; i < parent->n; i++)
		cands_add(c, join(parent->v[i], name));
	if (redirect && redirect[0] == '/')
		cands_add(c, strdup(redirect));
	else if (redirect)
		for (size_t i = 0; i < parent->n; i++)
			cands_add(c, join(parent->v[i], redirect));
	/* keep the paths some lower has, adding the redirects found there */
	for (size_t i = 0; i < c->n && !c->unknown;) {
		bool exists = false;

		for (size_t j = 0; j < f->nlow && !c->unknown; j++) {
			int fd = lower_dir(f, j, c->v[i]);
			char *r;

			if (fd == -ENOENT)
				continue;
			if (fd < 0) {
				c->unknown = true;
				break;
			}
			exists = true;
			r = redirect_of(fd, "");
			close(fd);
			if (r && r[0] == '/') {
				cands_add(c, r);
				continue;
			}
			if (r) {
				char *d = dir_of(c->v[i]);

				cands_add(c, d ? join(d, r) : NULL);
				for (size_t k = 0; k < parent->n; k++)
					cands_add(c, join(parent->v[k], r));
				free(d);
				free(r);
			}
		}
		if (exists) {
			i++;
		} else {
			free(c->v[i]);
			c->v[i] = c->v[--c->n];
		}
	}
	if (c->unknown) {
		cands_free(c);
		c->unknown = true;
	}
}

/* Lower directory fds of one upper directory: fds[i * nlow + j]. */
struct lower_fds {
	int *fd;
	size_t n;
	bool unknown;
};

static void lower_fds_open(struct fsck *f, const struct cands *c, struct lower_fds *l)
{
	memset(l, 0, sizeof(*l));
	l->unknown = c->unknown || !f->lowers_known;
	if (l->unknown || !c->n || !f->nlow)
		return;
	l->fd = malloc(c->n * f->nlow * sizeof(int));
	if (!l->fd) {
		l->unknown = true;
		return;
	}
	l->n = c->n * f->nlow;
	for (size_t i = 0; i < c->n; i++) {
		for (size_t j = 0; j < f->nlow; j++) {
			int fd = lower_dir(f, j, c->v[i]);

			if (fd < 0 && fd != -ENOENT)
				l->unknown = true;
			l->fd[i * f->nlow + j] = fd;
		}
	}
}

static void lower_fds_close(struct lower_fds *l)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->fd[i] >= 0)
			close(l->fd[i]);
	free(l->fd);
	memset(l, 0, sizeof(*l));
}

/* 1 when some lower has `name` where the directory merges, 0 when none
 * has, -1 when it cannot be known. */
static int lower_has(const struct lower_fds *l, const char *name)
{
	if (l->unknown)
		return -1;
	for (size_t i = 0; i < l->n; i++) {
		struct stat st;

		if (l->fd[i] < 0)
			continue;
		int ret = sfs_nx_stat(l->fd[i], name, &st);

		if (ret == -EXDEV)
			return 1; /* a mount point: a name there, not entered */
		if (ret == 0) {
			if (!sfs_wh_is_dev_whiteout(l->fd[i], name, &st))
				return 1;
		} else if (ret != -ENOENT && ret != -ENOTDIR) {
			return -1;
		}
	}
	return 0;
}

/* ------------------------------------------------------------ the tree */

static bool opaque_value_ok(const char *v)
{
	return !strcmp(v, "y") || !strcmp(v, "x");
}

static bool redirect_ok(const char *r)
{
	const char *s;

	if (!r[0])
		return false;
	if (r[0] != '/')
		return !strchr(r, '/') && strcmp(r, ".") && strcmp(r, "..");
	for (s = r; *s; ) {
		const char *e;
		size_t len;

		s++;
		e = strchrnul(s, '/');
		len = (size_t)(e - s);
		if ((len == 0 && (*e || s - r > 1)) || (len == 1 && s[0] == '.') ||
		    (len == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		s = e;
	}
	return true;
}

/* Whether the lower inode a valid record names is gone: 1 gone (why
 * says how), 0 still there, -1 not known (said in a note or error). */
static int origin_gone(struct fsck *f, const struct sfs_origin *o, const char *path,
		       char *why, size_t whylen)
{
	struct file_handle *fh;
	struct stat st;
	size_t j;
	int ret, fd;

	if (o->version != SFS_ORIGIN_VERSION || !o->handle_bytes || !f->lowers_known)
		return -1;
	for (j = 0; j < f->nlow; j++)
		if (f->low[j].uuid_ok && !memcmp(f->low[j].uuid, o->fs_uuid, 16))
			break;
	if (j == f->nlow) {
		uint8_t (*v)[16];

		for (size_t k = 0; k < f->nnoted; k++)
			if (!memcmp(f->noted[k], o->fs_uuid, 16))
				return -1;
		v = realloc(f->noted, (f->nnoted + 1) * sizeof(*v));
		if (v) {
			f->noted = v;
			memcpy(f->noted[f->nnoted++], o->fs_uuid, 16);
		}
		message(f, false, "%s (and maybe others): its origin is on a filesystem that "
			"no lower branch is on: not checked", path);
		return -1;
	}
	fh = malloc(sizeof(*fh) + o->handle_bytes);
	if (!fh) {
		message(f, true, "out of memory");
		return -1;
	}
	fh->handle_bytes = o->handle_bytes;
	fh->handle_type = o->handle_type;
	memcpy(fh->f_handle, o->handle, o->handle_bytes);
	fd = open_by_handle_at(f->low[j].fd, fh, O_PATH | O_CLOEXEC);
	ret = fd < 0 ? -errno : 0;
	free(fh);
	if (ret == -ESTALE || ret == -ENOENT) {
		snprintf(why, whylen, "inode %llu of %s's filesystem", (unsigned long long)o->ino,
			 f->low[j].path);
		return 1;
	}
	if (ret) {
		if (!f->handle_warned)
			message(f, true, "%s: cannot check its origin: open_by_handle_at: %s%s",
				path, strerror(-ret),
				ret == -EPERM ? " (needs CAP_DAC_READ_SEARCH)" : "");
		f->handle_warned = true;
		return -1;
	}
	ret = fstat(fd, &st) < 0 ? -errno : 0;
	close(fd);
	if (ret || (uint64_t)st.st_ino == o->ino)
		return 0;
	snprintf(why, whylen, "the handle names inode %llu, the record says %llu",
		 (unsigned long long)st.st_ino, (unsigned long long)o->ino);
	return 1;
}

static void check_origin(struct fsck *f, int dfd, const char *name, const char *path)
{
	struct sfs_fsck_problem *p;
	struct sfs_origin o;
	char why[PATH_MAX + 64];
	int ret = sfs_origin_get(dfd, name, &o);

	if (ret == -EUCLEAN) {
		p = found(f, SFS_PR_ORIGIN_CORRUPT, true, path, NULL);
		if (p)
			done(f, p, sfs_origin_remove(dfd, name));
		return;
	}
	if (ret < 0) {
		message(f, true, "%s: origin record: %s", path, strerror(-ret));
		return;
	}
	if (ret == 0 || origin_gone(f, &o, path, why, sizeof(why)) != 1)
		return;
	p = found(f, SFS_PR_ORIGIN_DANGLING, f->lowers_trusted, path, "%s", why);
	if (p)
		done(f, p, sfs_origin_remove(dfd, name));
}

/* The xattrs of a real entry: opaque markers, redirects, origin. */
static void check_xattrs(struct fsck *f, int dfd, const char *name, const char *path,
			 const struct stat *st)
{
	static const char *const opq[] = { SFS_OVL_OPAQUE_XATTR, SFS_OVL_USER_OPAQUE_XATTR };
	static const char *const rdr[] = {
		SFS_REDIRECT_XATTR, SFS_OVL_REDIRECT_XATTR, SFS_OVL_USER_REDIRECT_XATTR,
	};
	struct sfs_fsck_problem *p;
	char buf[4096];
	ssize_t n;

	for (size_t i = 0; i < 2; i++) {
		n = get_xattr(dfd, name, opq[i], buf, sizeof(buf));
		if (n == -ENODATA)
			continue;
		if (n == -ERANGE)
			buf[0] = 0;             /* a long value: not "y" */
		else if (n < 0) {
			message(f, true, "%s: %s: %s", path, opq[i], strerror((int)-n));
			continue;
		}
		if (!S_ISDIR(st->st_mode))
			p = found(f, SFS_PR_OPQ_NOT_DIR, true, path, "%s", opq[i]);
		else if (!opaque_value_ok(buf))
			p = found(f, SFS_PR_OPQ_VALUE, true, path, "%s=\"%.40s\"", opq[i], buf);
		else
			continue;
		if (p)
			done(f, p, remove_xattr(dfd, name, opq[i]));
	}
	for (size_t i = 0; i < 3; i++) {
		n = get_xattr(dfd, name, rdr[i], buf, sizeof(buf));
		if (n == -ENODATA)
			continue;
		if (n < 0 && n != -ERANGE) {
			message(f, true, "%s: %s: %s", path, rdr[i], strerror((int)-n));
			continue;
		}
		if (n == -ERANGE || !S_ISDIR(st->st_mode) || !redirect_ok(buf))
			found(f, SFS_PR_REDIRECT_BAD, false, path, "%s%s", rdr[i],
			      S_ISDIR(st->st_mode) ? "" : " on a non-directory");
	}
	if (!S_ISDIR(st->st_mode))
		check_origin(f, dfd, name, path);
}

/* An aufs whiteout .wh.X (or a .wh..wh. name) in a directory. */
static void check_aufs_name(struct fsck *f, int dfd, const char *name, const char *path,
			    const struct stat *st, const struct lower_fds *lf)
{
	const char *target = name + SFS_WH_PREFIX_LEN;
	struct sfs_fsck_problem *p;
	struct stat tst;
	bool empty_dir;
	int has;

	if (!strcmp(name, SFS_WH_OPQ)) {
		if (S_ISREG(st->st_mode) && st->st_size == 0)
			return;
		empty_dir = S_ISDIR(st->st_mode) && is_empty_dir(dfd, name);
		if (S_ISREG(st->st_mode) || (S_ISDIR(st->st_mode) && !empty_dir)) {
			found(f, SFS_PR_OPQ_MARKER_DATA, false, path, "%s",
			      S_ISDIR(st->st_mode) ? "a directory with entries" : "a file with data");
			return;
		}
		p = found(f, SFS_PR_OPQ_MARKER_TYPE, true, path, NULL);
		if (p)
			done(f, p, replace_with_empty_file(dfd, name, S_ISDIR(st->st_mode)));
		return;
	}
	if (!strcmp(name, FSCK_TMP)) {
		p = found(f, SFS_PR_META_TMP, true, path, NULL);
		if (p)
			done(f, p, sfs_meta_remove_tree(dfd, name));
		return;
	}
	if (!strncmp(name, SFS_JNL_TMP_PREFIX, strlen(SFS_JNL_TMP_PREFIX))) {
		p = found(f, SFS_PR_COMMIT_TMP, true, path, NULL);
		if (p)
			done(f, p, sfs_meta_remove_tree(dfd, name));
		return;
	}
	if (!strncmp(name, SFS_JNL_STAGE_PREFIX, strlen(SFS_JNL_STAGE_PREFIX))) {
		found(f, SFS_PR_COMMIT_STAGED, false, path, NULL);
		return;
	}
	if (!target[0] || !strncmp(target, SFS_WH_PREFIX, SFS_WH_PREFIX_LEN)) {
		found(f, SFS_PR_WH_RESERVED, false, path, NULL);
		return;
	}
	if (!S_ISREG(st->st_mode) || st->st_size) {
		if (!S_ISDIR(st->st_mode) || !is_empty_dir(dfd, name)) {
			found(f, SFS_PR_WH_BAD_TYPE, false, path, "%s",
			      S_ISDIR(st->st_mode) ? "a directory with entries" :
			      S_ISREG(st->st_mode) ? "a file with data" : "not a regular file");
			return;
		}
		p = found(f, SFS_PR_WH_EMPTY_DIR, true, path, NULL);
		if (!p)
			return;
		if (done(f, p, replace_with_empty_file(dfd, name, true)))
			return;
	}
	int ret = sfs_nx_stat(dfd, target, &tst);
	if (ret == 0 || ret == -EXDEV) {
		p = found(f, SFS_PR_WH_BESIDE, true, path, NULL);
		if (p)
			done(f, p, unlinkat(dfd, name, 0) < 0 ? -errno : 0);
		return;
	}
	has = lower_has(lf, target);
	if (has == 0) {
		p = found(f, SFS_PR_WH_NOTHING, f->lowers_trusted, path, NULL);
		if (p)
			done(f, p, unlinkat(dfd, name, 0) < 0 ? -errno : 0);
	}
}

struct subdir {
	char *name;
	bool opaque;
	char *redirect;
};

static int walk(struct fsck *f, int dfd, const char *dpath, const struct cands *c, int depth);

static void check_entries(struct fsck *f, int dfd, const char *dpath, char **names,
			  size_t n, const struct lower_fds *lf, struct subdir *subs,
			  size_t *nsubs)
{
	for (size_t i = 0; i < n; i++) {
		const char *name = names[i];
		struct sfs_fsck_problem *p;
		struct stat st;
		char *path;
		int ret;

		if (!strcmp(dpath, "/") && !strcmp(name, SFS_METADIR_NAME))
			continue;
		path = join(dpath, name);
		if (!path) {
			message(f, true, "out of memory");
			return;
		}
		f->entries++;
		if (f->o->progress)
			f->o->progress(f->o->arg, f->entries, path);
		/* the first call on the name: it may be a mount point */
		ret = sfs_nx_stat(dfd, name, &st);
		if (ret == -EXDEV) {
			message(f, false, "%s: a mount point: not crossed", path);
		} else if (ret < 0) {
			if (ret != -ENOENT)
				message(f, true, "%s: %s", path, strerror(-ret));
		} else if (sfs_wh_reserved_name(name)) {
			/* the entry itself may be replaced (free(p) below) */
			check_aufs_name(f, dfd, name, path, &st, lf);
		} else if (sfs_wh_is_dev_whiteout(dfd, name, &st)) {
			if (lower_has(lf, name) == 0) {
				p = found(f, SFS_PR_WH_NOTHING, f->lowers_trusted, path,
					  "overlay whiteout");
				if (p)
					done(f, p, unlinkat(dfd, name, 0) < 0 ? -errno : 0);
			}
		} else {
			check_xattrs(f, dfd, name, path, &st);
			if (S_ISDIR(st.st_mode)) {
				struct subdir *s = &subs[(*nsubs)++];
				struct sfs_dirmark m;
				int fd = sfs_meta_openat(dfd, name, O_PATH | O_DIRECTORY, 0);

				s->name = strdup(name);
				s->opaque = false;
				s->redirect = NULL;
				if (fd >= 0 && sfs_dirmark_read(fd, &m) == 0) {
					s->opaque = m.opaque;
					s->redirect = m.redirect;
				}
				if (fd >= 0)
					close(fd);
				if (!strcmp(name, SFS_METADIR_NAME)) {
					struct stat hs;

					if (sfs_nx_stat(dfd, ".stackfs/header", &hs) == 0 ||
					    sfs_nx_stat(dfd, ".stackfs/work", &hs) == 0)
						found(f, SFS_PR_NESTED_META, false, path, NULL);
				}
			}
		}
		free(path);
	}
}

static int walk(struct fsck *f, int dfd, const char *dpath, const struct cands *c, int depth)
{
	struct lower_fds lf;
	struct subdir *subs;
	size_t n, nsubs = 0;
	char **names;
	int ret = list_dir(dfd, &names, &n);

	if (ret) {
		message(f, true, "%s: cannot list: %s", dpath, strerror(-ret));
		return ret;
	}
	if (depth > MAX_DEPTH) {
		free_names(names, n);
		message(f, true, "%s: deeper than %d directories: not checked", dpath, MAX_DEPTH);
		return -ELOOP;
	}
	subs = calloc(n ? n : 1, sizeof(*subs));
	if (!subs) {
		free_names(names, n);
		message(f, true, "out of memory");
		return -ENOMEM;
	}
	lower_fds_open(f, c, &lf);
	check_entries(f, dfd, dpath, names, n, &lf, subs, &nsubs);
	lower_fds_close(&lf);
	free_names(names, n);
	for (size_t i = 0; i < nsubs; i++) {
		struct cands cc;
		char *path = subs[i].name ? join(dpath, subs[i].name) : NULL;
		int fd = path ? sfs_meta_openat(dfd, subs[i].name, O_RDONLY | O_DIRECTORY, 0)
			      : -ENOMEM;

		if (fd == -EXDEV) {
			message(f, false, "%s: a mount point: not crossed", path);
		} else if (fd < 0) {
			if (fd != -ENOENT)
				message(f, true, "%s: %s", path ? path : dpath, strerror(-fd));
		} else {
			child_cands(f, c, subs[i].name, subs[i].opaque, subs[i].redirect, &cc);
			walk(f, fd, path, &cc, depth + 1);
			cands_free(&cc);
			close(fd);
		}
		free(path);
		free(subs[i].name);
		free(subs[i].redirect);
	}
	free(subs);
	return 0;
}

static void check_tree(struct fsck *f)
{
	struct cands c = { 0 };
	struct sfs_dirmark m;
	int fd = sfs_meta_openat(f->root_fd, ".", O_RDONLY | O_DIRECTORY, 0);

	if (fd < 0) {
		message(f, true, "cannot open the branch: %s", strerror(-fd));
		return;
	}
	if (sfs_dirmark_read(fd, &m) == 0) {
		if (!m.opaque)
			cands_add(&c, strdup("/"));
		sfs_dirmark_free(&m);
	} else {
		c.unknown = true;
	}
	walk(f, fd, "/", &c, 0);
	cands_free(&c);
	close(fd);
}

/* ------------------------------------------------------------ entry */

int sfs_fsck_run(const struct sfs_fsck_opts *o, struct sfs_fsck_result *r)
{
	struct fsck f = { .o = o, .r = r, .root_fd = o->root_fd, .meta_fd = -1 };
	bool meta_gone = false;
	int status;

	memset(r, 0, sizeof(*r));
	/* explicit lower branches that cannot be opened: check nothing, as
	 * a whiteout would look as if it hid nothing */
	if (o->lowers && open_given_lowers(&f))
		goto out;
	if (open_meta(&f) == 0) {
		check_commit(&f);
		/* the commit's own .stackfs may have gone with its marker */
		meta_gone = faccessat(f.root_fd, SFS_METADIR_NAME, F_OK, AT_SYMLINK_NOFOLLOW) < 0;
		if (!meta_gone)
			check_header(&f);
		if (!meta_gone && !f.stop && !f.v0 && !f.marker_only) {
			check_registry(&f);
			check_inomap(&f);
			check_lowers_file(&f);
		}
	}
	/* the index is judged against the lower branches too */
	if (!f.stop)
		find_lowers(&f);
	if (f.meta_fd >= 0 && !meta_gone && !f.stop && !f.marker_only) {
		if (!f.v0)
			check_index(&f);
		check_work(&f);
		check_meta_entries(&f);
	}
	if (!f.stop && f.pending) {
		/* a whiteout would seem to hide nothing where the commit moved
		 * or deleted the lower entry: its removal would lose it */
		message(&f, false, "the tree is not checked while a commit is unfinished");
	} else if (!f.stop) {
		check_tree(&f);
	}
out:
	r->lowers_known = f.lowers_known;
	r->lowers = calloc(f.nlow ? f.nlow : 1, sizeof(char *));
	for (size_t i = 0; i < f.nlow; i++) {
		if (r->lowers)
			r->lowers[r->nlowers++] = f.low[i].path;
		else
			free(f.low[i].path);
		close(f.low[i].fd);
	}
	free(f.low);
	free(f.noted);
	if (f.meta_fd >= 0)
		close(f.meta_fd);
	status = (r->fixed ? SFS_FSCK_FIXED : 0) | (r->left ? SFS_FSCK_LEFT : 0) |
		 (r->op_error ? SFS_FSCK_OPERR : 0);
	return status;
}

void sfs_fsck_result_free(struct sfs_fsck_result *r)
{
	free_names(r->lowers, r->nlowers);
	memset(r, 0, sizeof(*r));
}
