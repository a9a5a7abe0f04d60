/* The registry: stable ids of filesystems and branches (ondisk.h). The
 * file is small and changes rarely (a new filesystem or branch), so it is
 * rewritten whole on every change, crash-safe (write, fsync, rename). */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "whiteout/ondisk.h"

/* Records beyond this make the file corrupt (and keep checks cheap). */
#define REG_MAX_RECORDS SFS_REG_MAX_RECORDS

_Static_assert(sizeof(struct sfs_disk_reg_head) == SFS_REG_REC_SIZE, "registry head size");
_Static_assert(sizeof(struct sfs_disk_reg) == SFS_REG_REC_SIZE, "registry record size");
_Static_assert(offsetof(struct sfs_disk_reg, r_crc) == SFS_REG_REC_SIZE - 4, "crc last");
_Static_assert(offsetof(struct sfs_disk_reg_head, rh_crc) == SFS_REG_REC_SIZE - 4, "crc last");
_Static_assert(offsetof(struct sfs_disk_reg, r_handle) == 32, "handle offset");
_Static_assert(sizeof(struct sfs_disk_header) == SFS_HDR_SIZE, "header size");
_Static_assert(offsetof(struct sfs_disk_header, h_crc) == 60, "header crc offset");
_Static_assert(offsetof(struct sfs_disk_header, h_ctime) == 32, "header ctime offset");

const char *sfs_rec_status_str(enum sfs_rec_status st)
{
	switch (st) {
	case SFS_REC_OK:
		return "valid";
	case SFS_REC_CRC:
		return "checksum mismatch";
	case SFS_REC_FIELD:
		return "a field is out of range";
	case SFS_REC_MAGIC:
		return "bad magic";
	case SFS_REC_NEWER:
		return "newer version";
	}
	return "?";
}

static bool zero_bytes(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

/* ------------------------------------------------------------ checksums */

uint32_t sfs_reg_head_csum_compute(const struct sfs_disk_reg_head *d)
{
	return sfs_crc32c(0, d, offsetof(struct sfs_disk_reg_head, rh_crc));
}

bool sfs_reg_head_csum_verify(const struct sfs_disk_reg_head *d)
{
	return le32toh(d->rh_crc) == sfs_reg_head_csum_compute(d);
}

void sfs_reg_head_csum_set(struct sfs_disk_reg_head *d)
{
	d->rh_crc = htole32(sfs_reg_head_csum_compute(d));
}

uint32_t sfs_reg_csum_compute(const struct sfs_disk_reg *d)
{
	return sfs_crc32c(0, d, offsetof(struct sfs_disk_reg, r_crc));
}

bool sfs_reg_csum_verify(const struct sfs_disk_reg *d)
{
	return le32toh(d->r_crc) == sfs_reg_csum_compute(d);
}

void sfs_reg_csum_set(struct sfs_disk_reg *d)
{
	d->r_crc = htole32(sfs_reg_csum_compute(d));
}

/* ------------------------------------------------------------ records */

enum sfs_rec_status sfs_reg_head_decode(const struct sfs_disk_reg_head *d,
					uint32_t next_id[3])
{
	if (memcmp(d->rh_magic, SFS_REG_MAGIC, sizeof(d->rh_magic)))
		return SFS_REC_MAGIC;
	/* the checksum first: only a head that is whole may be judged
	 * newer (every version keeps this head's layout and checksum) */
	if (!sfs_reg_head_csum_verify(d))
		return SFS_REC_CRC;
	if (le32toh(d->rh_version) > SFS_REG_VERSION)
		return SFS_REC_NEWER;
	next_id[0] = 0;
	next_id[SFS_REG_FS] = le32toh(d->rh_next_fs_id);
	next_id[SFS_REG_BRANCH] = le32toh(d->rh_next_branch_id);
	if (le32toh(d->rh_version) == 0 || le32toh(d->rh_rec_size) != SFS_REG_REC_SIZE ||
	    !next_id[SFS_REG_FS] || !next_id[SFS_REG_BRANCH] ||
	    !zero_bytes(d->rh_reserved, sizeof(d->rh_reserved)))
		return SFS_REC_FIELD;
	return SFS_REC_OK;
}

void sfs_reg_head_encode(const uint32_t next_id[3], struct sfs_disk_reg_head *d)
{
	memset(d, 0, sizeof(*d));
	memcpy(d->rh_magic, SFS_REG_MAGIC, sizeof(d->rh_magic));
	d->rh_version = htole32(SFS_REG_VERSION);
	d->rh_rec_size = htole32(SFS_REG_REC_SIZE);
	d->rh_next_fs_id = htole32(next_id[SFS_REG_FS]);
	d->rh_next_branch_id = htole32(next_id[SFS_REG_BRANCH]);
	sfs_reg_head_csum_set(d);
}

enum sfs_rec_status sfs_reg_decode(const struct sfs_disk_reg *d,
				   struct sfs_reg_entry *e)
{
	uint16_t hb = le16toh(d->r_handle_bytes);

	if (!sfs_reg_csum_verify(d))
		return SFS_REC_CRC;
	memset(e, 0, sizeof(*e));
	e->kind = le32toh(d->r_kind);
	e->id = le32toh(d->r_id);
	memcpy(e->fs_uuid, d->r_fs_uuid, sizeof(e->fs_uuid));
	e->handle_type = (int32_t)le32toh((uint32_t)d->r_handle_type);
	e->handle_bytes = hb;
	if (d->r_reserved || d->r_reserved2 || !e->id)
		return SFS_REC_FIELD;
	if (e->kind == SFS_REG_FS) {
		if (hb || e->handle_type || !zero_bytes(d->r_handle, sizeof(d->r_handle)))
			return SFS_REC_FIELD;
	} else if (e->kind == SFS_REG_BRANCH) {
		if (!hb || hb > SFS_HANDLE_MAX ||
		    !zero_bytes(d->r_handle + hb, sizeof(d->r_handle) - hb))
			return SFS_REC_FIELD;
		memcpy(e->handle, d->r_handle, hb);
	} else {
		return SFS_REC_FIELD;
	}
	return SFS_REC_OK;
}

void sfs_reg_encode(const struct sfs_reg_entry *e, struct sfs_disk_reg *d)
{
	uint16_t hb = e->handle_bytes > SFS_HANDLE_MAX ? SFS_HANDLE_MAX : e->handle_bytes;

	memset(d, 0, sizeof(*d));
	d->r_kind = htole32(e->kind);
	d->r_id = htole32(e->id);
	memcpy(d->r_fs_uuid, e->fs_uuid, sizeof(d->r_fs_uuid));
	d->r_handle_type = (int32_t)htole32((uint32_t)e->handle_type);
	d->r_handle_bytes = htole16(hb);
	memcpy(d->r_handle, e->handle, hb);
	sfs_reg_csum_set(d);
}

/* ------------------------------------------------------------ the table */

int sfs_reg_table_add(struct sfs_reg_table *t, const struct sfs_reg_entry *e)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 8;
		struct sfs_reg_entry *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n++] = *e;
	return 0;
}

static bool same_identity(const struct sfs_reg_entry *a, const struct sfs_reg_entry *b)
{
	if (a->kind != b->kind || memcmp(a->fs_uuid, b->fs_uuid, sizeof(a->fs_uuid)))
		return false;
	if (a->kind != SFS_REG_BRANCH)
		return true;
	return a->handle_type == b->handle_type && a->handle_bytes == b->handle_bytes &&
	       !memcmp(a->handle, b->handle, a->handle_bytes);
}

const struct sfs_reg_entry *sfs_reg_table_find(const struct sfs_reg_table *t,
					       const struct sfs_reg_entry *key)
{
	for (size_t i = 0; i < t->n; i++)
		if (same_identity(&t->v[i], key))
			return &t->v[i];
	return NULL;
}

void sfs_reg_table_free(struct sfs_reg_table *t)
{
	free(t->v);
	memset(t, 0, sizeof(*t));
}

/* qsort_r comparators over indices into one table, for duplicates */
static int cmp_id(const void *a, const void *b, void *arg)
{
	const struct sfs_reg_entry *base = arg;
	const struct sfs_reg_entry *x = &base[*(const size_t *)a];
	const struct sfs_reg_entry *y = &base[*(const size_t *)b];

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static int cmp_identity(const void *a, const void *b, void *arg)
{
	const struct sfs_reg_entry *base = arg;
	const struct sfs_reg_entry *x = &base[*(const size_t *)a];
	const struct sfs_reg_entry *y = &base[*(const size_t *)b];
	int c;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	c = memcmp(x->fs_uuid, y->fs_uuid, sizeof(x->fs_uuid));
	if (!c && x->handle_type != y->handle_type)
		c = x->handle_type < y->handle_type ? -1 : 1;
	if (!c && x->handle_bytes != y->handle_bytes)
		c = x->handle_bytes < y->handle_bytes ? -1 : 1;
	if (!c)
		c = memcmp(x->handle, y->handle, x->handle_bytes);
	if (!c)
		c = *(const size_t *)a < *(const size_t *)b ? -1 : 1;
	return c;
}

/* *dup: the first record (1-based, in file order) that repeats an id or
 * an identity of an earlier one, or 0. 0 or -ENOMEM. */
static int first_duplicate(const struct sfs_reg_table *t, size_t *dup, bool *by_id)
{
	size_t *ix = malloc((t->n ? t->n : 1) * sizeof(*ix)), worst = 0;

	if (!ix)
		return -ENOMEM;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < t->n; i++)
			ix[i] = i;
		qsort_r(ix, t->n, sizeof(*ix), pass ? cmp_identity : cmp_id, t->v);
		for (size_t i = 1; i < t->n; i++) {
			const struct sfs_reg_entry *a = &t->v[ix[i - 1]], *b = &t->v[ix[i]];
			bool same = pass ? same_identity(a, b)
					 : a->kind == b->kind && a->id == b->id;

			if (same && (!worst || ix[i] + 1 < worst)) {
				worst = ix[i] + 1;
				*by_id = !pass;
			}
		}
	}
	free(ix);
	*dup = worst;
	return 0;
}

int sfs_reg_parse(const void *buf, size_t len, struct sfs_reg_table *t,
		  char *err, size_t errlen)
{
	const char *p = SFS_METADIR_NAME "/" SFS_META_REGISTRY;
	struct sfs_disk_reg_head head;
	enum sfs_rec_status st;
	size_t nrec, dup;
	bool by_id = false;
	int ret = -EUCLEAN;

	memset(t, 0, sizeof(*t));
	if (len < SFS_REG_REC_SIZE) {
		snprintf(err, errlen, "%s is corrupt (truncated: %zu bytes)", p, len);
		return -EUCLEAN;
	}
	memcpy(&head, buf, sizeof(head));
	st = sfs_reg_head_decode(&head, t->next_id);
	if (st == SFS_REC_NEWER) {
		snprintf(err, errlen, "%s: version %u is newer than this stackfs (%u)", p,
			 le32toh(head.rh_version), SFS_REG_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (st) {
		snprintf(err, errlen, "%s is corrupt (file header: %s)", p,
			 sfs_rec_status_str(st));
		return -EUCLEAN;
	}
	if (len % SFS_REG_REC_SIZE) {
		snprintf(err, errlen, "%s is corrupt (a partial record at the end: %zu bytes)",
			 p, len % SFS_REG_REC_SIZE);
		return -EUCLEAN;
	}
	nrec = len / SFS_REG_REC_SIZE - 1;
	if (nrec > REG_MAX_RECORDS) {
		snprintf(err, errlen, "%s is corrupt (%zu records)", p, nrec);
		return -EUCLEAN;
	}
	for (size_t i = 0; i < nrec; i++) {
		struct sfs_disk_reg d;
		struct sfs_reg_entry e;

		memcpy(&d, (const uint8_t *)buf + SFS_REG_REC_SIZE * (i + 1), sizeof(d));
		st = sfs_reg_decode(&d, &e);
		if (!st && e.id >= t->next_id[e.kind])
			st = SFS_REC_FIELD;
		if (st) {
			snprintf(err, errlen, "%s: record %zu is corrupt (%s)", p, i + 1,
				 sfs_rec_status_str(st));
			goto fail;
		}
		ret = sfs_reg_table_add(t, &e);
		if (ret) {
			snprintf(err, errlen, "%s: %s", p, strerror(-ret));
			goto fail;
		}
		ret = -EUCLEAN;
	}
	ret = first_duplicate(t, &dup, &by_id);
	if (ret) {
		snprintf(err, errlen, "%s: %s", p, strerror(-ret));
		goto fail;
	}
	ret = -EUCLEAN;
	if (dup) {
		snprintf(err, errlen, "%s: record %zu is corrupt (repeats the %s of another)",
			 p, dup, by_id ? "id" : "filesystem or branch");
		goto fail;
	}
	return 0;
fail:
	sfs_reg_table_free(t);
	return ret;
}

int sfs_reg_serialize(const struct sfs_reg_table *t, uint8_t **buf, size_t *len)
{
	size_t n = SFS_REG_REC_SIZE * (t->n + 1);
	uint8_t *b = malloc(n);
	struct sfs_disk_reg_head head;

	if (!b)
		return -ENOMEM;
	sfs_reg_head_encode(t->next_id, &head);
	memcpy(b, &head, sizeof(head));
	for (size_t i = 0; i < t->n; i++) {
		struct sfs_disk_reg d;

		sfs_reg_encode(&t->v[i], &d);
		memcpy(b + SFS_REG_REC_SIZE * (i + 1), &d, sizeof(d));
	}
	*buf = b;
	*len = n;
	return 0;
}

int sfs_reg_store(int dir_fd, const struct sfs_reg_table *t)
{
	uint8_t *buf;
	size_t len;
	int ret = sfs_reg_serialize(t, &buf, &len);

	if (ret)
		return ret;
	ret = sfs_meta_write_file(dir_fd, SFS_META_REGISTRY, buf, len);
	free(buf);
	return ret;
}

/* ------------------------------------------------------------ ids */

/* The id of key's identity, allocated and stored when new. */
static int reg_id(struct sfs_meta *m, struct sfs_reg_entry *key, uint32_t *id)
{
	const struct sfs_reg_entry *e;
	uint32_t *next = &m->reg.next_id[key->kind];
	int ret = 0;

	pthread_mutex_lock(&m->mu);
	e = sfs_reg_table_find(&m->reg, key);
	if (e) {
		*id = e->id;
		goto out;
	}
	if (m->dir_fd < 0) {
		ret = -EBADF;
		goto out;
	}
	/* past the limit the registry would be refused at the next mount */
	if (*next == 0 || *next == UINT32_MAX || m->reg.n >= REG_MAX_RECORDS) {
		ret = -ENOSPC;
		goto out;
	}
	key->id = (*next)++;
	ret = sfs_reg_table_add(&m->reg, key);
	if (!ret && m->reg_held)
		m->reg_dirty = true;
	else if (!ret) {
		ret = sfs_reg_store(m->dir_fd, &m->reg);
		if (ret)
			m->reg.n--;
	}
	if (ret)
		(*next)--;
	else
		*id = key->id;
out:
	pthread_mutex_unlock(&m->mu);
	return ret;
}

void sfs_meta_reg_hold(struct sfs_meta *m)
{
	pthread_mutex_lock(&m->mu);
	m->reg_held = true;
	pthread_mutex_unlock(&m->mu);
}

int sfs_meta_reg_release(struct sfs_meta *m)
{
	int ret = 0;

	pthread_mutex_lock(&m->mu);
	if (m->reg_dirty)
		ret = m->dir_fd < 0 ? -EBADF : sfs_reg_store(m->dir_fd, &m->reg);
	m->reg_held = m->reg_dirty = false;
	pthread_mutex_unlock(&m->mu);
	return ret;
}

int sfs_meta_fs_id(struct sfs_meta *m, const uint8_t uuid[16], uint32_t *id)
{
	struct sfs_reg_entry key = { .kind = SFS_REG_FS };

	memcpy(key.fs_uuid, uuid, sizeof(key.fs_uuid));
	return reg_id(m, &key, id);
}

int sfs_meta_branch_id(struct sfs_meta *m, const uint8_t uuid[16],
		       int handle_type, const void *handle,
		       unsigned handle_bytes, uint32_t *id)
{
	struct sfs_reg_entry key = { .kind = SFS_REG_BRANCH };

	if (!handle_bytes || handle_bytes > SFS_HANDLE_MAX)
		return -EINVAL;
	memcpy(key.fs_uuid, uuid, sizeof(key.fs_uuid));
	key.handle_type = handle_type;
	key.handle_bytes = (uint16_t)handle_bytes;
	memcpy(key.handle, handle, handle_bytes);
	return reg_id(m, &key, id);
}
