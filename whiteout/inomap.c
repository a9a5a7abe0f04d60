/* The inomap: union inode numbers allocated for entries whose real
 * numbers cannot be packed (ondisk.h). Records are appended and
 * fdatasync'd before a number is handed out; record i holds number
 * SFS_INO_ALLOC_BASE | (i + 1), so a number is never given twice, even
 * when a record is lost: fsck retires a bad record in place. */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "whiteout/ondisk.h"

_Static_assert(sizeof(struct sfs_disk_ino_head) == SFS_INO_REC_SIZE, "inomap head size");
_Static_assert(sizeof(struct sfs_disk_ino) == SFS_INO_REC_SIZE, "inomap record size");
_Static_assert(offsetof(struct sfs_disk_ino, i_crc) == SFS_INO_REC_SIZE - 4, "crc last");
_Static_assert(offsetof(struct sfs_disk_ino_head, ih_crc) == SFS_INO_REC_SIZE - 4, "crc last");

/* ------------------------------------------------------------ checksums */

uint32_t sfs_ino_head_csum_compute(const struct sfs_disk_ino_head *d)
{
	return sfs_crc32c(0, d, offsetof(struct sfs_disk_ino_head, ih_crc));
}

bool sfs_ino_head_csum_verify(const struct sfs_disk_ino_head *d)
{
	return le32toh(d->ih_crc) == sfs_ino_head_csum_compute(d);
}

void sfs_ino_head_csum_set(struct sfs_disk_ino_head *d)
{
	d->ih_crc = htole32(sfs_ino_head_csum_compute(d));
}

uint32_t sfs_ino_csum_compute(const struct sfs_disk_ino *d)
{
	return sfs_crc32c(0, d, offsetof(struct sfs_disk_ino, i_crc));
}

bool sfs_ino_csum_verify(const struct sfs_disk_ino *d)
{
	return le32toh(d->i_crc) == sfs_ino_csum_compute(d);
}

void sfs_ino_csum_set(struct sfs_disk_ino *d)
{
	d->i_crc = htole32(sfs_ino_csum_compute(d));
}

/* ------------------------------------------------------------ records */

enum sfs_rec_status sfs_ino_head_decode(const struct sfs_disk_ino_head *d)
{
	static const uint8_t zero[sizeof(d->ih_reserved)];

	if (memcmp(d->ih_magic, SFS_INO_MAGIC, sizeof(d->ih_magic)))
		return SFS_REC_MAGIC;
	/* the checksum first: only a head that is whole may be judged
	 * newer (every version keeps this head's layout and checksum) */
	if (!sfs_ino_head_csum_verify(d))
		return SFS_REC_CRC;
	if (le32toh(d->ih_version) > SFS_INO_VERSION)
		return SFS_REC_NEWER;
	if (le32toh(d->ih_version) == 0 || le32toh(d->ih_rec_size) != SFS_INO_REC_SIZE ||
	    memcmp(d->ih_reserved, zero, sizeof(zero)))
		return SFS_REC_FIELD;
	return SFS_REC_OK;
}

void sfs_ino_head_encode(struct sfs_disk_ino_head *d)
{
	memset(d, 0, sizeof(*d));
	memcpy(d->ih_magic, SFS_INO_MAGIC, sizeof(d->ih_magic));
	d->ih_version = htole32(SFS_INO_VERSION);
	d->ih_rec_size = htole32(SFS_INO_REC_SIZE);
	sfs_ino_head_csum_set(d);
}

enum sfs_rec_status sfs_ino_decode(const struct sfs_disk_ino *d, uint64_t idx,
				   uint32_t *fs_id, uint64_t *ino)
{
	if (!sfs_ino_csum_verify(d))
		return SFS_REC_CRC;
	*fs_id = le32toh(d->i_fs_id);
	*ino = le64toh(d->i_ino);
	if (d->i_reserved || d->i_reserved2 ||
	    le64toh(d->i_union_ino) != sfs_ino_number(idx) ||
	    (!*fs_id && *ino))
		return SFS_REC_FIELD;
	return SFS_REC_OK;
}

void sfs_ino_encode(uint32_t fs_id, uint64_t ino, uint64_t idx,
		    struct sfs_disk_ino *d)
{
	memset(d, 0, sizeof(*d));
	d->i_fs_id = htole32(fs_id);
	d->i_ino = htole64(fs_id ? ino : 0);
	d->i_union_ino = htole64(sfs_ino_number(idx));
	sfs_ino_csum_set(d);
}

/* ------------------------------------------------------------ the table */

static size_t ino_hash(uint32_t fs_id, uint64_t ino)
{
	uint64_t h = (ino ^ ((uint64_t)fs_id << 40)) * 0x9E3779B97F4A7C15ull;

	return (size_t)(h ^ (h >> 29));
}

const struct sfs_ino_entry *sfs_ino_table_find(const struct sfs_ino_table *t,
					       uint32_t fs_id, uint64_t ino)
{
	if (!t->size)
		return NULL;
	for (const struct sfs_ino_entry *e = t->tab[ino_hash(fs_id, ino) & (t->size - 1)];
	     e; e = e->next)
		if (e->fs_id == fs_id && e->ino == ino)
			return e;
	return NULL;
}

static int ino_table_grow(struct sfs_ino_table *t)
{
	size_t size = t->size ? t->size * 2 : 64;
	struct sfs_ino_entry **tab = calloc(size, sizeof(*tab));

	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < t->size; i++) {
		struct sfs_ino_entry *e = t->tab[i], *next;

		for (; e; e = next) {
			size_t b = ino_hash(e->fs_id, e->ino) & (size - 1);

			next = e->next;
			e->next = tab[b];
			tab[b] = e;
		}
	}
	free(t->tab);
	t->tab = tab;
	t->size = size;
	return 0;
}

int sfs_ino_table_add(struct sfs_ino_table *t, uint32_t fs_id, uint64_t ino,
		      uint64_t union_ino)
{
	struct sfs_ino_entry *e;
	size_t b;

	if (t->count >= t->size && ino_table_grow(t))
		return -ENOMEM;
	e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->fs_id = fs_id;
	e->ino = ino;
	e->union_ino = union_ino;
	b = ino_hash(fs_id, ino) & (t->size - 1);
	e->next = t->tab[b];
	t->tab[b] = e;
	t->count++;
	return 0;
}

void sfs_ino_table_free(struct sfs_ino_table *t)
{
	for (size_t i = 0; i < t->size; i++) {
		struct sfs_ino_entry *e = t->tab[i], *next;

		for (; e; e = next) {
			next = e->next;
			free(e);
		}
	}
	free(t->tab);
	memset(t, 0, sizeof(*t));
}

/* 0, or -EFBIG with a message for an inomap of more than its limit. */
static int ino_size_ok(uint64_t len, char *err, size_t errlen)
{
	if (len <= SFS_INO_MAX_BYTES)
		return 0;
	snprintf(err, errlen, "%s/%s is larger than its limit of %llu bytes "
		 "(%u records): corrupt", SFS_METADIR_NAME, SFS_META_INOMAP,
		 (unsigned long long)SFS_INO_MAX_BYTES, SFS_INO_MAX_RECORDS);
	return -EFBIG;
}

/* The file header of an inomap of len bytes: 0, or -errno with a
 * message. */
static int ino_parse_head(const void *buf, size_t len, char *err, size_t errlen)
{
	const char *p = SFS_METADIR_NAME "/" SFS_META_INOMAP;
	struct sfs_disk_ino_head head;
	enum sfs_rec_status st;
	int ret = ino_size_ok(len, err, errlen);

	if (ret)
		return ret;
	if (len < SFS_INO_REC_SIZE) {
		snprintf(err, errlen, "%s is corrupt (truncated: %zu bytes)", p, len);
		return -EUCLEAN;
	}
	memcpy(&head, buf, sizeof(head));
	st = sfs_ino_head_decode(&head);
	if (st == SFS_REC_NEWER) {
		snprintf(err, errlen, "%s: version %u is newer than this stackfs (%u)", p,
			 le32toh(head.ih_version), SFS_INO_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (st) {
		snprintf(err, errlen, "%s is corrupt (file header: %s)", p,
			 sfs_rec_status_str(st));
		return -EUCLEAN;
	}
	return 0;
}

/* Records first..first+n-1 of the nfull complete ones into t. 1 when
 * the last one is the torn tail of an interrupted append (*last_bad),
 * else 0, or -errno with a message. */
static int ino_parse_recs(const uint8_t *buf, size_t n, uint64_t first, uint64_t nfull,
			  struct sfs_ino_table *t, bool *last_bad, char *err, size_t errlen)
{
	const char *p = SFS_METADIR_NAME "/" SFS_META_INOMAP;

	for (size_t k = 0; k < n; k++) {
		uint64_t i = first + k;
		struct sfs_disk_ino d;
		enum sfs_rec_status st;
		uint32_t fs_id;
		uint64_t ino;
		int ret;

		memcpy(&d, buf + SFS_INO_REC_SIZE * k, sizeof(d));
		st = sfs_ino_decode(&d, i, &fs_id, &ino);
		if (st && i + 1 == nfull) {
			/* the last record of an interrupted append */
			*last_bad = true;
			return 1;
		}
		if (st) {
			snprintf(err, errlen, "%s: record %llu is corrupt (%s)", p,
				 (unsigned long long)(i + 1), sfs_rec_status_str(st));
			return -EUCLEAN;
		}
		if (!fs_id || sfs_ino_table_find(t, fs_id, ino))
			continue;
		ret = sfs_ino_table_add(t, fs_id, ino, sfs_ino_number(i));
		if (ret) {
			snprintf(err, errlen, "%s: %s", p, strerror(-ret));
			return ret;
		}
	}
	return 0;
}

int sfs_ino_parse(const void *buf, size_t len, struct sfs_ino_table *t,
		  size_t *keep, bool *last_bad, char *err, size_t errlen)
{
	size_t nfull;
	int ret;

	memset(t, 0, sizeof(*t));
	*last_bad = false;
	*keep = 0;
	ret = ino_parse_head(buf, len, err, errlen);
	if (ret)
		return ret;
	nfull = len / SFS_INO_REC_SIZE - 1;
	ret = ino_parse_recs((const uint8_t *)buf + SFS_INO_REC_SIZE, nfull, 0, nfull, t,
			     last_bad, err, errlen);
	if (ret < 0) {
		sfs_ino_table_free(t);
		return ret;
	}
	t->nrec = nfull;
	*keep = SFS_INO_REC_SIZE * (nfull + 1);
	return 0;
}

int sfs_pread_full(int fd, void *buf, size_t len, off_t off)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t r = pread(fd, p, len, off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ENODATA;
		p += r;
		off += r;
		len -= (size_t)r;
	}
	return 0;
}

int sfs_ino_load(int fd, struct sfs_ino_table *t, size_t *keep, size_t *len,
		 bool *last_bad, char *err, size_t errlen)
{
	const char *p = SFS_METADIR_NAME "/" SFS_META_INOMAP;
	uint8_t head[SFS_INO_REC_SIZE], *chunk = NULL;
	uint64_t nfull, i;
	struct stat st;
	int ret;

	memset(t, 0, sizeof(*t));
	*last_bad = false;
	*keep = 0;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", p, strerror(-ret));
		return ret;
	}
	*len = (size_t)st.st_size;
	/* the limit first: nothing of a too large file is read */
	ret = ino_size_ok((uint64_t)st.st_size, err, errlen);
	if (ret)
		return ret;
	ret = sfs_pread_full(fd, head, *len < sizeof(head) ? *len : sizeof(head), 0);
	if (!ret)
		ret = ino_parse_head(head, *len, err, errlen);
	else
		snprintf(err, errlen, "%s: %s", p, ret == -ENODATA ? "changed while read"
								  : strerror(-ret));
	if (ret)
		return ret;
	nfull = *len / SFS_INO_REC_SIZE - 1;
	chunk = malloc((size_t)SFS_INO_REC_SIZE * SFS_INO_CHUNK);
	if (!chunk) {
		snprintf(err, errlen, "%s: %s", p, strerror(ENOMEM));
		return -ENOMEM;
	}
	for (i = 0; i < nfull; i += SFS_INO_CHUNK) {
		size_t n = nfull - i < SFS_INO_CHUNK ? (size_t)(nfull - i) : SFS_INO_CHUNK;

		ret = sfs_pread_full(fd, chunk, SFS_INO_REC_SIZE * n,
				     (off_t)(SFS_INO_REC_SIZE * (i + 1)));
		if (ret) {
			snprintf(err, errlen, "%s: %s", p, ret == -ENODATA ? "changed while read"
									  : strerror(-ret));
			goto fail;
		}
		ret = ino_parse_recs(chunk, n, i, nfull, t, last_bad, err, errlen);
		if (ret < 0)
			goto fail;
		if (ret > 0)
			break;
	}
	free(chunk);
	t->nrec = nfull;
	*keep = SFS_INO_REC_SIZE * (nfull + 1);
	return 0;
fail:
	free(chunk);
	sfs_ino_table_free(t);
	return ret;
}

int sfs_ino_create(int dir_fd)
{
	struct sfs_disk_ino_head head;

	sfs_ino_head_encode(&head);
	return sfs_meta_write_file(dir_fd, SFS_META_INOMAP, &head, sizeof(head));
}

/* ------------------------------------------------------------ allocation */

static int pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t r = pwrite(fd, p, len, off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += r;
		off += r;
		len -= (size_t)r;
	}
	return 0;
}

int sfs_meta_ino_find(struct sfs_meta *m, uint32_t fs_id, uint64_t ino,
		      uint64_t *out)
{
	const struct sfs_ino_entry *e;

	pthread_mutex_lock(&m->mu);
	e = sfs_ino_table_find(&m->ino, fs_id, ino);
	if (e)
		*out = e->union_ino;
	pthread_mutex_unlock(&m->mu);
	return e != NULL;
}

/* A batch of this thread's allocations (the entries of one READDIRPLUS
 * reply): their records are gathered and written by one pwrite, made
 * durable by one fdatasync when the batch ends, before the reply carries
 * any of their numbers out of the daemon. A sync per new number made a
 * first listing of 2,000 names on a GlusterFS lower 1.5 s slower than the
 * next one, and a pwrite per number cost 0.19 s more where the rw branch
 * is on the volume (docs/distributed.md). One metadata dir per batch;
 * another one's allocations are written and synced at once. */
static __thread bool batch_on;
static __thread struct sfs_meta *batch_dirty;

/* Records gathered before they are written: a batch is one reply (a few
 * thousand entries at most); past this they are written on the way. */
#define INO_PEND_MAX 1024u

void sfs_meta_ino_batch_begin(void)
{
	batch_on = true;
	batch_dirty = NULL;
}

/* Writes the gathered records; m->mu held. Kept for another try when the
 * write fails: their numbers are in the table, but none was handed out
 * (handing one out syncs first, and the sync fails too). */
static int ino_flush(struct sfs_meta *m)
{
	int ret;

	if (!m->ino_pend_n)
		return 0;
	ret = pwrite_all(m->ino_fd, m->ino_pend, m->ino_pend_n * SFS_INO_REC_SIZE,
			 (off_t)(SFS_INO_REC_SIZE * (m->ino_pend_first + 1)));
	if (ret == 0)
		m->ino_pend_n = 0;
	return ret;
}

/* Makes the records allocated so far durable; m->mu held. */
static int ino_sync(struct sfs_meta *m)
{
	int ret = ino_flush(m);

	if (ret == 0 && fdatasync(m->ino_fd) < 0)
		ret = -errno;
	if (ret == 0)
		m->ino_unsynced = UINT64_MAX;
	return ret;
}

int sfs_meta_ino_batch_end(void)
{
	struct sfs_meta *m = batch_dirty;
	int ret = 0;

	batch_on = false;
	batch_dirty = NULL;
	if (m) {
		pthread_mutex_lock(&m->mu);
		if (m->ino_unsynced != UINT64_MAX)
			ret = ino_sync(m);
		pthread_mutex_unlock(&m->mu);
	}
	return ret;
}

/* Whether this thread's batch can take m's records (its one metadata
 * dir is m, or not chosen yet). */
static bool batch_takes(const struct sfs_meta *m)
{
	return batch_on && (!batch_dirty || batch_dirty == m);
}

/* Whether record idx may wait in the gathered ones: in this thread's
 * batch for m, with room, following those gathered. */
static bool may_gather(struct sfs_meta *m, uint64_t idx)
{
	if (!batch_takes(m))
		return false;
	if (m->ino_pend_n && m->ino_pend_first + m->ino_pend_n != idx)
		return false;
	if (m->ino_pend_n == m->ino_pend_cap) {
		size_t cap = m->ino_pend_cap ? m->ino_pend_cap * 2 : 64;
		uint8_t *p;

		if (cap > INO_PEND_MAX)
			return false;
		if (!(p = realloc(m->ino_pend, cap * SFS_INO_REC_SIZE)))
			return false;
		m->ino_pend = p;
		m->ino_pend_cap = cap;
	}
	return true;
}

/* Record d of idx: gathered in this thread's batch (durable at its end),
 * or written now, with what was gathered, and synced unless batching. */
static int ino_record_put(struct sfs_meta *m, uint64_t idx, const struct sfs_disk_ino *d)
{
	int ret;

	if (may_gather(m, idx)) {
		if (!m->ino_pend_n)
			m->ino_pend_first = idx;
		memcpy(m->ino_pend + m->ino_pend_n++ * SFS_INO_REC_SIZE, d, SFS_INO_REC_SIZE);
	} else {
		ret = ino_flush(m);
		if (ret == 0)
			ret = pwrite_all(m->ino_fd, d, sizeof(*d), (off_t)(SFS_INO_REC_SIZE * (idx + 1)));
		if (ret)
			return ret;
	}
	if (batch_takes(m)) {
		batch_dirty = m;
		if (m->ino_unsynced == UINT64_MAX)
			m->ino_unsynced = idx;
		return 0;
	}
	return ino_sync(m);
}

/* A number found in the table may be one a batch (this thread's or
 * another's) has not synced yet: handed out here, it is made durable
 * first, or by this thread's batch, whose end syncs all of m. */
static int found_durable(struct sfs_meta *m, uint64_t union_ino)
{
	uint64_t idx = (union_ino & ~SFS_INO_ALLOC_BASE) - 1;

	if (idx < m->ino_unsynced)
		return 0;
	if (batch_takes(m)) {
		batch_dirty = m;
		return 0;
	}
	return ino_sync(m);
}

int sfs_meta_ino_alloc(struct sfs_meta *m, uint32_t fs_id, uint64_t ino,
		       uint64_t *out)
{
	const struct sfs_ino_entry *e;
	struct sfs_disk_ino d;
	uint64_t idx;
	int ret = 0;

	if (!fs_id)
		return -EINVAL;
	pthread_mutex_lock(&m->mu);
	e = sfs_ino_table_find(&m->ino, fs_id, ino);
	if (e) {
		ret = found_durable(m, e->union_ino);
		if (!ret)
			*out = e->union_ino;
		goto out;
	}
	if (m->ino_fd < 0) {
		ret = -EBADF;
		goto out;
	}
	idx = m->ino.nrec;
	/* past the limit the file would be refused at the next mount */
	if (idx >= SFS_INO_MAX_RECORDS) {
		ret = -ENOSPC;
		goto out;
	}
	/* a failed write leaves the slot to the next allocation: its number
	 * was not handed out */
	sfs_ino_encode(fs_id, ino, idx, &d);
	ret = ino_record_put(m, idx, &d);
	if (ret)
		goto out;
	m->ino.nrec++;
	ret = sfs_ino_table_add(&m->ino, fs_id, ino, sfs_ino_number(idx));
	if (!ret)
		*out = sfs_ino_number(idx);
out:
	pthread_mutex_unlock(&m->mu);
	return ret;
}
