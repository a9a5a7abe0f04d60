/* fsck of the metadata directory's record files (fsck.h): `registry`
 * and `inomap`, record by record. A bad record is dropped (registry:
 * the file rewritten, ids never given again) or retired in place
 * (inomap: its number stays used). */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "whiteout/fsck_int.h"
#include "whiteout/ondisk.h"

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
			sfs_fsck_done(f, p, -ENOMEM);
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
		sfs_fsck_done(f, pd->v[i], ret);
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
		sfs_fsck_found(f, not_file, false, path, NULL);
	else if (ret == -EFBIG)
		sfs_fsck_found(f, SFS_PR_META_TOO_LARGE, false, path,
			       "the limit is %zu bytes: not checked", max);
	else if (ret && ret != -ENOENT)
		sfs_fsck_msg(f, true, "%s: %s", path + 1, strerror(-ret));
	return ret;
}

/* ------------------------------------------------------------ mending */

static bool reg_head_valid(const uint8_t *buf, size_t len, void *arg)
{
	uint32_t next[3];

	return sfs_reg_head_decode((const struct sfs_disk_reg_head *)buf, next) == SFS_REC_OK;
}

static bool reg_rec_valid(const uint8_t *buf, size_t len, void *arg)
{
	struct sfs_reg_entry e;

	return sfs_reg_decode((const struct sfs_disk_reg *)buf, &e) == SFS_REC_OK;
}

static bool ino_head_valid(const uint8_t *buf, size_t len, void *arg)
{
	return sfs_ino_head_decode((const struct sfs_disk_ino_head *)buf) == SFS_REC_OK;
}

static bool ino_rec_valid(const uint8_t *buf, size_t len, void *arg)
{
	uint32_t fs_id;
	uint64_t ino;

	return sfs_ino_decode((const struct sfs_disk_ino *)buf, *(uint64_t *)arg, &fs_id,
			      &ino) == SFS_REC_OK;
}

/* A record whose checksum fails with its one damaged byte undone: true
 * (and the record mended, where told in *at and *was) when the checksum
 * finds it (whiteout/mend.c). */
static bool mend(void *rec, size_t len, sfs_mend_valid_fn valid, void *arg, size_t *at,
		 uint8_t *was)
{
	return sfs_mend_byte(rec, len, valid, arg, at, was) == 1;
}

static bool reg_id_used(const struct sfs_reg_table *t, uint32_t kind, uint32_t id)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].kind == kind && t->v[i].id == id)
			return true;
	return false;
}

void sfs_fsck_check_registry(struct fsck *f)
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
		struct sfs_fsck_problem *p;

		p = sfs_fsck_found(f, SFS_PR_REG_MISSING, true, path, NULL);

		keep.next_id[SFS_REG_FS] = keep.next_id[SFS_REG_BRANCH] = 1;
		if (p)
			sfs_fsck_done(f, p, sfs_reg_store(f->meta_fd, &keep));
	}
	if (ret)
		return;
	if (len < SFS_REG_REC_SIZE) {
		pend(f, &pd, sfs_fsck_found(f, SFS_PR_REG_HEAD, true, path, "truncated: %zu bytes",
					    len));
		dirty = true;
	} else {
		size_t at;
		uint8_t was;

		memcpy(&head, buf, sizeof(head));
		st = sfs_reg_head_decode(&head, head_next);
		if (st == SFS_REC_CRC && mend(&head, sizeof(head), reg_head_valid, NULL, &at, &was)) {
			pend(f, &pd, sfs_fsck_found(f, SFS_PR_REG_HEAD, true, path, "byte %zu is "
						    "damaged: the checksum holds with 0x%02x there",
						    at, was));
			dirty = true;
			st = sfs_reg_head_decode(&head, head_next);
		} else if (st == SFS_REC_NEWER) {
			sfs_fsck_found(f, SFS_PR_REG_NEWER, false, path, "version %u",
				       le32toh(head.rh_version));
			goto out;
		}
		head_ok = st == SFS_REC_OK;
		if (!head_ok && !dirty) {
			pend(f, &pd, sfs_fsck_found(f, SFS_PR_REG_HEAD, true, path, "%s",
						    sfs_rec_status_str(st)));
			dirty = true;
		}
	}
	nrec = len >= SFS_REG_REC_SIZE ? len / SFS_REG_REC_SIZE - 1 : 0;
	if (len >= SFS_REG_REC_SIZE && len % SFS_REG_REC_SIZE) {
		pend(f, &pd, sfs_fsck_found(f, SFS_PR_REG_PARTIAL, true, path,
					    "%zu bytes after record %zu", len % SFS_REG_REC_SIZE,
					    nrec));
		dirty = true;
	}
	for (size_t i = 0; i < nrec; i++) {
		struct sfs_disk_reg d;
		struct sfs_reg_entry e;

		size_t at;
		uint8_t was;

		memcpy(&d, buf + SFS_REG_REC_SIZE * (i + 1), sizeof(d));
		st = sfs_reg_decode(&d, &e);
		if (st == SFS_REC_CRC && mend(&d, sizeof(d), reg_rec_valid, NULL, &at, &was)) {
			pend(f, &pd, sfs_fsck_found(f, SFS_PR_REG_CRC, true, path, "record %zu: "
						    "byte %zu is damaged: the checksum holds with "
						    "0x%02x there", i + 1, at, was));
			dirty = true;
			st = sfs_reg_decode(&d, &e);
		}
		/* an id written with a valid checksum stays retired */
		if (st != SFS_REC_CRC && (e.kind == SFS_REG_FS || e.kind == SFS_REG_BRANCH) &&
		    e.id && e.id != UINT32_MAX && e.id >= seen_next[e.kind])
			seen_next[e.kind] = e.id + 1;
		if (st) {
			enum sfs_problem_code code = st == SFS_REC_CRC ? SFS_PR_REG_CRC
							       : SFS_PR_REG_FIELD;

			pend(f, &pd, sfs_fsck_found(f, code, true, path, "record %zu", i + 1));
			dirty = true;
			continue;
		}
		if (head_ok && e.id >= head_next[e.kind]) {
			pend(f, &pd, sfs_fsck_found(f, SFS_PR_REG_FIELD, true, path,
						    "record %zu: id %u is not below the next id %u",
						    i + 1, e.id, head_next[e.kind]));
			dirty = true;
			continue;
		}
		if (reg_id_used(&keep, e.kind, e.id) || sfs_reg_table_find(&keep, &e)) {
			pend(f, &pd, sfs_fsck_found(f, SFS_PR_REG_DUP, true, path,
						    "record %zu (%s id %u)", i + 1,
						    e.kind == SFS_REG_FS ? "filesystem" : "branch",
						    e.id));
			dirty = true;
			continue;
		}
		if (sfs_reg_table_add(&keep, &e)) {
			sfs_fsck_msg(f, true, "out of memory");
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
		p = sfs_fsck_found(f, SFS_PR_INO_MISSING, true, path, NULL);
		if (p)
			sfs_fsck_done(f, p, sfs_ino_create(f->meta_fd));
		return -1;
	}
	if (fd >= 0 && fstat(fd, &sb) < 0) {
		close(fd);
		fd = -errno;
	}
	if (fd == -ELOOP || (fd >= 0 && !S_ISREG(sb.st_mode))) {
		sfs_fsck_found(f, SFS_PR_INO_NOT_FILE, false, path, NULL);
		goto fail;
	}
	if (fd < 0) {
		sfs_fsck_msg(f, true, "%s: %s", path + 1, strerror(-fd));
		return -1;
	}
	*len = (uint64_t)sb.st_size;
	/* nothing of it is read: a sparse terabyte costs no disk */
	if (*len > SFS_INO_MAX_BYTES) {
		sfs_fsck_found(f, SFS_PR_META_TOO_LARGE, false, path,
			       "%llu bytes, the limit is %llu (%u records): not checked",
			       (unsigned long long)*len, (unsigned long long)SFS_INO_MAX_BYTES,
			       SFS_INO_MAX_RECORDS);
		goto fail;
	}
	if (f->o->repair) {
		close(fd);
		fd = sfs_meta_openat(f->meta_fd, SFS_META_INOMAP, O_RDWR | O_NONBLOCK, 0);
		if (fd < 0) {
			sfs_fsck_msg(f, true, "%s: %s", path + 1, strerror(-fd));
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
		sfs_fsck_msg(f, true, "%s: %s", path + 1, strerror(-ret));
		return false;
	}
	st = len < SFS_INO_REC_SIZE ? SFS_REC_FIELD : sfs_ino_head_decode(&head);
	if (st == SFS_REC_CRC) {
		size_t at;
		uint8_t was;
		struct sfs_disk_ino_head m = head;

		if (mend(&m, sizeof(m), ino_head_valid, NULL, &at, &was)) {
			p = sfs_fsck_found(f, SFS_PR_INO_HEAD, true, path, "byte %zu is damaged: "
					   "the checksum holds with 0x%02x there", at, was);
			if (p)
				sfs_fsck_done(f, p, ino_write_rec(fd, &m, 0));
			return true;
		}
	}
	if (st == SFS_REC_NEWER) {
		sfs_fsck_found(f, SFS_PR_INO_NEWER, false, path, "version %u",
			       le32toh(head.ih_version));
		return false;
	}
	if (st) {
		p = len < SFS_INO_REC_SIZE
			? sfs_fsck_found(f, SFS_PR_INO_HEAD, true, path, "truncated: %llu bytes",
					 (unsigned long long)len)
			: sfs_fsck_found(f, SFS_PR_INO_HEAD, true, path, "%s",
					 sfs_rec_status_str(st));
		if (p) {
			sfs_ino_head_encode(&head);
			sfs_fsck_done(f, p, ino_write_rec(fd, &head, 0));
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
	if (st == SFS_REC_CRC) {
		size_t at;
		uint8_t was;
		struct sfs_disk_ino m = *d;

		if (mend(&m, sizeof(m), ino_rec_valid, &i, &at, &was)) {
			p = sfs_fsck_found(f, SFS_PR_INO_CRC, true, path, "record %llu: byte %zu "
					   "is damaged: the checksum holds with 0x%02x there",
					   (unsigned long long)(i + 1), at, was);
			if (p)
				sfs_fsck_done(f, p, ino_write_rec(fd, &m, i + 1));
			*d = m;
			st = sfs_ino_decode(d, i, &fs_id, &ino);
		}
	}
	if (st)
		p = sfs_fsck_found(f, st == SFS_REC_CRC ? SFS_PR_INO_CRC : SFS_PR_INO_FIELD, true,
				   path, "record %llu%s", (unsigned long long)(i + 1),
				   i + 1 == nfull ? " (the last: an interrupted append?)" : "");
	else if (fs_id && sfs_ino_table_find(seen, fs_id, ino))
		p = sfs_fsck_found(f, SFS_PR_INO_DUP, true, path,
				   "record %llu (filesystem %u, inode %llu)",
				   (unsigned long long)(i + 1), fs_id, (unsigned long long)ino);
	else if (fs_id && sfs_ino_table_add(seen, fs_id, ino, sfs_ino_number(i)))
		return -ENOMEM;
	else
		return 0;
	if (p) {
		sfs_ino_encode(0, 0, i, d);
		sfs_fsck_done(f, p, ino_write_rec(fd, d, i + 1));
	}
	return 0;
}

void sfs_fsck_check_inomap(struct fsck *f)
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
		p = sfs_fsck_found(f, SFS_PR_INO_PARTIAL, true, path,
				   "%llu bytes after record %llu",
				   (unsigned long long)(len % SFS_INO_REC_SIZE),
				   (unsigned long long)nfull);
		if (p) {
			ret = ftruncate(fd, (off_t)(SFS_INO_REC_SIZE * (nfull + 1))) < 0 ? -errno
											  : 0;
			if (!ret && fdatasync(fd) < 0)
				ret = -errno;
			sfs_fsck_done(f, p, ret);
		}
	}
	/* read in chunks: memory is the table of numbers, not the file */
	chunk = malloc((size_t)SFS_INO_REC_SIZE * SFS_INO_CHUNK);
	if (!chunk && nfull) {
		sfs_fsck_msg(f, true, "out of memory");
		goto out;
	}
	for (uint64_t i = 0; i < nfull; i += SFS_INO_CHUNK) {
		size_t n = nfull - i < SFS_INO_CHUNK ? (size_t)(nfull - i) : SFS_INO_CHUNK;

		ret = sfs_pread_full(fd, chunk, SFS_INO_REC_SIZE * n,
				     (off_t)(SFS_INO_REC_SIZE * (i + 1)));
		if (ret) {
			sfs_fsck_msg(f, true, "%s: %s", path + 1,
				     ret == -ENODATA ? "changed while read" : strerror(-ret));
			goto out;
		}
		for (size_t k = 0; k < n; k++) {
			struct sfs_disk_ino d;

			memcpy(&d, chunk + SFS_INO_REC_SIZE * k, sizeof(d));
			if (check_ino_rec(f, fd, &seen, &d, i + k, nfull)) {
				sfs_fsck_msg(f, true, "out of memory");
				goto out;
			}
		}
	}
out:
	free(chunk);
	sfs_ino_table_free(&seen);
	close(fd);
}
