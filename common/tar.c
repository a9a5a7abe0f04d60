/* A tar stream writer (tar.h): POSIX pax archives. Each entry is one
 * 512-byte ustar header, preceded by an extended header ('x') of
 * "LEN KEY=VALUE\n" records when something does not fit the ustar
 * fields (a name or link target over 100 bytes, a size of 8 GiB or more,
 * an owner id over 2097151, a time with nanoseconds or before 1970) or
 * when the entry has extended attributes; then its data, padded with
 * zeros to the block. Two zero blocks end the archive. Numbers in the
 * ustar fields are octal, NUL-terminated; user and group names are left
 * empty: the numeric ids are the entry's owner. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/tar.h"

/* The ustar header: offset and width of each field used. */
#define H_NAME     0   /* 100 */
#define H_MODE     100 /* 8 */
#define H_UID      108 /* 8 */
#define H_GID      116 /* 8 */
#define H_SIZE     124 /* 12 */
#define H_MTIME    136 /* 12 */
#define H_CHKSUM   148 /* 8 */
#define H_TYPE     156 /* 1 */
#define H_LINK     157 /* 100 */
#define H_MAGIC    257 /* "ustar\0" then version "00" */
#define H_DEVMAJOR 329 /* 8 */
#define H_DEVMINOR 337 /* 8 */
#define NAME_LEN   100

#define PAX_TYPE   'x'
/* what marks a stream given up between two entries (sfs_tar_abandon) */
#define ABANDONED_NAME "STACKFS-LAYER-INCOMPLETE"

static const unsigned char zero_block[SFS_TAR_BLOCK];

/* ------------------------------------------------------------ output */

static int flush(struct sfs_tar *t)
{
	size_t done = 0;

	while (t->err == 0 && done < t->len) {
		ssize_t n = write(t->fd, t->buf + done, t->len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			t->err = -errno;
			break;
		}
		done += (size_t)n;
		t->written += (uint64_t)n;
	}
	t->len = 0;
	return t->err;
}

static int put(struct sfs_tar *t, const void *p, size_t n)
{
	const unsigned char *s = p;

	while (t->err == 0 && n > 0) {
		size_t k = sizeof(t->buf) - t->len;

		if (k > n)
			k = n;
		memcpy(t->buf + t->len, s, k);
		t->len += k;
		s += k;
		n -= k;
		if (t->len == sizeof(t->buf))
			flush(t);
	}
	return t->err;
}

/* Zeros to the end of the block after n bytes of data. */
static int pad_after(struct sfs_tar *t, uint64_t n)
{
	size_t rest = (size_t)(n % SFS_TAR_BLOCK);

	return rest ? put(t, zero_block, SFS_TAR_BLOCK - rest) : t->err;
}

void sfs_tar_init(struct sfs_tar *t, int fd)
{
	t->fd = fd;
	t->err = 0;
	t->left = t->pad = t->written = 0;
	t->len = 0;
}

/* ------------------------------------------------------------ pax records */

struct records {
	char *p;
	size_t len, cap;
	int err;
};

static size_t ndigits(size_t v)
{
	size_t d = 1;

	while (v >= 10) {
		v /= 10;
		d++;
	}
	return d;
}

/* Appends "LEN KEY=VALUE\n", where LEN counts the whole record, its own
 * digits included. */
static void rec_add(struct records *r, const char *key, const void *val, size_t vlen)
{
	size_t body = 1 + strlen(key) + 1 + vlen + 1, digits = 1, total;

	if (r->err)
		return;
	while (ndigits(body + digits) != digits)
		digits++;
	total = body + digits;
	if (r->len + total + 1 > r->cap) {
		size_t cap = (r->len + total + 1) * 2;
		char *p = realloc(r->p, cap);

		if (!p) {
			r->err = -ENOMEM;
			return;
		}
		r->p = p;
		r->cap = cap;
	}
	r->len += (size_t)sprintf(r->p + r->len, "%zu %s=", total, key);
	memcpy(r->p + r->len, val, vlen);
	r->len += vlen;
	r->p[r->len++] = '\n';
}

static void rec_str(struct records *r, const char *key, const char *val)
{
	rec_add(r, key, val, strlen(val));
}

static void rec_num(struct records *r, const char *key, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	rec_str(r, key, buf);
}

/* Seconds and nanoseconds as pax writes a time: "-1.500000000" is half
 * a second before -1 + 0 (the fraction counts away from zero). */
static void rec_time(struct records *r, const char *key, struct timespec ts)
{
	long long s = ts.tv_sec;
	long ns = ts.tv_nsec;
	bool neg = s < 0;
	char buf[48];

	if (neg && ns) {
		s += 1;
		ns = 1000000000L - ns;
	}
	snprintf(buf, sizeof(buf), "%s%lld.%09ld", neg ? "-" : "", neg ? -s : s, ns);
	rec_str(r, key, buf);
}

static uint64_t octal_max(size_t width)
{
	return (1ULL << (3 * (width - 1))) - 1;
}

/* The records e needs: what its ustar header cannot hold, its xattrs. */
static int entry_records(const struct sfs_tar_entry *e, struct records *r)
{
	bool long_name = strlen(e->name) > NAME_LEN;
	bool long_link = e->link && strlen(e->link) > NAME_LEN;

	/* a name's bytes as they are, UTF-8 or not, as the container tools
	 * write them (GNU tar 1.34 knows no "hdrcharset" and says so; it,
	 * Go's and Python's readers take bytes that are not UTF-8 as they
	 * are) */
	if (long_name)
		rec_str(r, "path", e->name);
	if (long_link)
		rec_str(r, "linkpath", e->link);
	if (e->size > octal_max(12))
		rec_num(r, "size", e->size);
	if (e->uid > octal_max(8))
		rec_num(r, "uid", e->uid);
	if (e->gid > octal_max(8))
		rec_num(r, "gid", e->gid);
	if (e->mtime.tv_nsec || e->mtime.tv_sec < 0 || (uint64_t)e->mtime.tv_sec > octal_max(12))
		rec_time(r, "mtime", e->mtime);
	for (size_t i = 0; i < e->nxattrs && !r->err; i++) {
		char *key;

		/* a key holds no '=' (the record's separator) */
		if (strchr(e->xattrs[i].name, '='))
			return -EINVAL;
		if (asprintf(&key, "SCHILY.xattr.%s", e->xattrs[i].name) < 0)
			return -ENOMEM;
		rec_add(r, key, e->xattrs[i].value, e->xattrs[i].len);
		free(key);
	}
	return r->err;
}

/* ------------------------------------------------------------ headers */

/* A number in a ustar field: octal digits, then a NUL. */
static void put_octal(unsigned char *h, size_t off, size_t width, uint64_t v)
{
	char tmp[24];

	if (v > octal_max(width))
		v = 0; /* a pax record holds it */
	snprintf(tmp, sizeof(tmp), "%0*llo", (int)(width - 1), (unsigned long long)v);
	memcpy(h + off, tmp, width);
}

static void put_text(unsigned char *h, size_t off, size_t width, const char *s)
{
	size_t n = strlen(s);

	memcpy(h + off, s, n < width ? n : width); /* longer: a pax record holds it */
}

static void checksum(unsigned char *h)
{
	unsigned sum = 0;
	char tmp[8];

	memset(h + H_CHKSUM, ' ', 8);
	for (size_t i = 0; i < SFS_TAR_BLOCK; i++)
		sum += h[i];
	snprintf(tmp, sizeof(tmp), "%06o", sum);
	memcpy(h + H_CHKSUM, tmp, 7); /* six digits, a NUL, the space left */
}

static int put_header(struct sfs_tar *t, const struct sfs_tar_entry *e)
{
	unsigned char h[SFS_TAR_BLOCK] = { 0 };
	struct timespec mt = e->mtime;

	put_text(h, H_NAME, NAME_LEN, e->name);
	put_octal(h, H_MODE, 8, e->mode & 07777);
	put_octal(h, H_UID, 8, e->uid);
	put_octal(h, H_GID, 8, e->gid);
	put_octal(h, H_SIZE, 12, e->size);
	put_octal(h, H_MTIME, 12, mt.tv_sec < 0 ? 0 : (uint64_t)mt.tv_sec);
	h[H_TYPE] = (unsigned char)e->type;
	if (e->link)
		put_text(h, H_LINK, NAME_LEN, e->link);
	memcpy(h + H_MAGIC, "ustar\0" "00", 8);
	put_octal(h, H_DEVMAJOR, 8, e->devmajor);
	put_octal(h, H_DEVMINOR, 8, e->devminor);
	checksum(h);
	return put(t, h, sizeof(h));
}

/* The extended header of records r for the entry named name: named
 * "PaxHeaders/BASENAME" (a reader that knows no pax headers extracts it
 * as a file there). */
static int put_pax(struct sfs_tar *t, const char *name, const struct records *r)
{
	size_t end = strlen(name), start;
	char xname[NAME_LEN + 1];
	struct sfs_tar_entry x = { .name = xname, .type = PAX_TYPE, .mode = 0644, .size = r->len };

	while (end > 1 && name[end - 1] == '/')
		end--; /* "a/b/" is named by "b" */
	for (start = end; start > 0 && name[start - 1] != '/'; start--)
		;
	snprintf(xname, sizeof(xname), "PaxHeaders/%.*s", (int)(end - start), name + start);
	if (put_header(t, &x) < 0 || put(t, r->p, r->len) < 0)
		return t->err;
	return pad_after(t, r->len);
}

int sfs_tar_header(struct sfs_tar *t, const struct sfs_tar_entry *e)
{
	struct records r = { 0 };
	int ret;

	if (t->err)
		return t->err;
	if (t->left || !e->name[0])
		return -EINVAL;
	if (e->devmajor > octal_max(8) || e->devminor > octal_max(8))
		return -EOVERFLOW;
	ret = entry_records(e, &r);
	if (ret == 0 && r.len)
		ret = put_pax(t, e->name, &r);
	free(r.p);
	if (ret == 0)
		ret = put_header(t, e);
	if (ret == 0 && e->type == SFS_TAR_REG) {
		t->left = e->size;
		t->pad = e->size;
	}
	return ret;
}

int sfs_tar_data(struct sfs_tar *t, const void *p, size_t n)
{
	if (t->err)
		return t->err;
	if (n > t->left)
		return -EINVAL;
	if (put(t, p, n) < 0)
		return t->err;
	t->left -= n;
	return t->left ? 0 : pad_after(t, t->pad);
}

int sfs_tar_finish(struct sfs_tar *t)
{
	if (t->err)
		return t->err;
	if (t->left)
		return -EINVAL;
	put(t, zero_block, SFS_TAR_BLOCK);
	put(t, zero_block, SFS_TAR_BLOCK);
	return flush(t);
}

void sfs_tar_abandon(struct sfs_tar *t)
{
	struct sfs_tar_entry cut = {
		.name = ABANDONED_NAME, .type = SFS_TAR_REG, .mode = 0644, .size = SFS_TAR_BLOCK,
	};

	/* mid-entry the data is cut short already: readers say so */
	if (t->err == 0 && t->left == 0)
		put_header(t, &cut);
	flush(t);
}
