/* `exportnames` (docs/format.md "exportnames"): the last names of nodes of an nfs_export=on
 * mount, kept across a restart of the daemon so that a file handle of a
 * non-directory is looked up again by name. Only hints: the daemon
 * checks every name it takes from here against the view, so a record
 * can at worst make a handle answer ESTALE; still, every record has its
 * checksum, and fsck removes a file that does not parse. */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "whiteout/ondisk.h"

#define HDR 32
#define REC_FIXED 20 /* id, parent, name_len, reserved; then name, crc */

/* A name of one directory entry: 1..255 bytes, no '/' or NUL, not a dot
 * name. */
static bool name_ok(const char *name, size_t len)
{
	return len >= 1 && len <= 255 && !memchr(name, '/', len) && !memchr(name, '\0', len) &&
	       !(len == 1 && name[0] == '.') && !(len == 2 && name[0] == '.' && name[1] == '.');
}

int sfs_xnames_encode(const struct sfs_xname *v, size_t n, uint8_t **out, size_t *outlen)
{
	size_t len = HDR, pos = HDR;
	uint8_t *buf;

	if (n > SFS_XNAMES_MAX_RECORDS)
		return -E2BIG;
	for (size_t i = 0; i < n; i++)
		len += REC_FIXED + strlen(v[i].name) + 4;
	buf = calloc(1, len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, SFS_XNAMES_MAGIC, 8);
	sfs_le_put32(buf + 8, SFS_XNAMES_VERSION);
	sfs_le_put32(buf + 12, (uint32_t)n);
	sfs_le_put32(buf + 28, sfs_crc32c(0, buf, 28));
	for (size_t i = 0; i < n; i++) {
		size_t nl = strlen(v[i].name);
		uint8_t *r = buf + pos;

		sfs_le_put64(r, v[i].id);
		sfs_le_put64(r + 8, v[i].parent);
		r[16] = (uint8_t)nl;
		r[17] = (uint8_t)(nl >> 8);
		memcpy(r + REC_FIXED, v[i].name, nl);
		sfs_le_put32(r + REC_FIXED + nl, sfs_crc32c(0, r, REC_FIXED + nl));
		pos += REC_FIXED + nl + 4;
	}
	*out = buf;
	*outlen = len;
	return 0;
}

static int bad(char *err, size_t errlen, const char *why, size_t at)
{
	snprintf(err, errlen, "%s at byte %zu", why, at);
	return -EUCLEAN;
}

/* One record at buf + pos (len bytes in all) into x; its size or -1. */
static long record(const uint8_t *buf, size_t len, size_t pos, struct sfs_xname *x,
		   const char **why)
{
	const uint8_t *r = buf + pos;
	size_t nl;

	*why = "a record cut short";
	if (len - pos < REC_FIXED + 4)
		return -1;
	nl = (size_t)r[16] | (size_t)r[17] << 8;
	if (len - pos < REC_FIXED + nl + 4)
		return -1;
	*why = "a record's checksum does not match";
	if (sfs_le_get32(r + REC_FIXED + nl) != sfs_crc32c(0, r, REC_FIXED + nl))
		return -1;
	*why = "a record has a field out of range";
	x->id = sfs_le_get64(r);
	x->parent = sfs_le_get64(r + 8);
	if (x->id == 0 || x->parent == 0 || r[18] || r[19] ||
	    !name_ok((const char *)r + REC_FIXED, nl))
		return -1;
	memcpy(x->name, r + REC_FIXED, nl);
	x->name[nl] = '\0';
	return (long)(REC_FIXED + nl + 4);
}

int sfs_xnames_parse(const uint8_t *buf, size_t len,
		     int (*each)(void *arg, const struct sfs_xname *x), void *arg,
		     char *err, size_t errlen)
{
	struct sfs_xname x;
	const char *why;
	size_t pos = HDR, count;
	long size;

	if (len < HDR || memcmp(buf, SFS_XNAMES_MAGIC, 8))
		return bad(err, errlen, "no exportnames header", 0);
	if (sfs_le_get32(buf + 28) != sfs_crc32c(0, buf, 28))
		return bad(err, errlen, "the header's checksum does not match", 0);
	if (sfs_le_get32(buf + 8) != SFS_XNAMES_VERSION)
		return bad(err, errlen, "an unknown version", 8);
	count = sfs_le_get32(buf + 12);
	for (size_t k = 16; k < 28; k++)
		if (buf[k])
			return bad(err, errlen, "a reserved field is not zero", k);
	if (count > SFS_XNAMES_MAX_RECORDS)
		return bad(err, errlen, "more records than a mount writes", 12);
	for (size_t i = 0; i < count; i++) {
		size = record(buf, len, pos, &x, &why);
		if (size < 0)
			return bad(err, errlen, why, pos);
		if (each && each(arg, &x) < 0)
			return -ENOMEM;
		pos += (size_t)size;
	}
	if (pos != len)
		return bad(err, errlen, "bytes after the last record", pos);
	return 0;
}
