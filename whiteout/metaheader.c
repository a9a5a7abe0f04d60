/* The metadata directory's `header` (ondisk.h, docs/format.md "header"): its
 * checksum, its encoding, its parser and the one-line message for each
 * way it can be wrong. */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "whiteout/ondisk.h"

#define HEADER_READ_MAX SFS_HEADER_READ_MAX

uint32_t sfs_header_csum_compute(const struct sfs_disk_header *d)
{
	return sfs_crc32c(0, d, offsetof(struct sfs_disk_header, h_crc));
}

bool sfs_header_csum_verify(const struct sfs_disk_header *d)
{
	return le32toh(d->h_crc) == sfs_header_csum_compute(d);
}

void sfs_header_csum_set(struct sfs_disk_header *d)
{
	d->h_crc = htole32(sfs_header_csum_compute(d));
}

void sfs_header_encode(const struct sfs_header *h, struct sfs_disk_header *d)
{
	memset(d, 0, sizeof(*d));
	memcpy(d->h_magic, SFS_HDR_MAGIC_STR, sizeof(d->h_magic));
	d->h_version = htole32(h->version);
	d->h_flags = htole32(h->flags);
	memcpy(d->h_uuid, h->uuid, sizeof(d->h_uuid));
	d->h_ctime = htole64(h->ctime);
	sfs_header_csum_set(d);
}

enum sfs_hdr_status sfs_header_parse(const void *buf, size_t len,
				     struct sfs_header *h)
{
	struct sfs_disk_header d;

	memset(&d, 0, sizeof(d));
	memcpy(&d, buf, len < sizeof(d) ? len : sizeof(d));
	h->version = le32toh(d.h_version);
	h->flags = le32toh(d.h_flags);
	memcpy(h->uuid, d.h_uuid, sizeof(h->uuid));
	h->ctime = le64toh(d.h_ctime);
	if (len < offsetof(struct sfs_disk_header, h_uuid))
		return len >= 8 && memcmp(d.h_magic, SFS_HDR_MAGIC_STR, 8) ? SFS_HDR_BAD_MAGIC
									: SFS_HDR_SHORT;
	if (memcmp(d.h_magic, SFS_HDR_MAGIC_STR, sizeof(d.h_magic)))
		return SFS_HDR_BAD_MAGIC;
	if (len < SFS_HDR_SIZE)
		return SFS_HDR_SHORT;
	/* the checksum before any field: a damaged version byte is damage,
	 * not a newer format. Every version keeps these 64 bytes and their
	 * checksum (it may add bytes after them): a whole one that is newer
	 * is said so, and never touched */
	if (!sfs_header_csum_verify(&d))
		return SFS_HDR_CRC;
	if (h->version > SFS_META_VERSION)
		return SFS_HDR_NEWER;
	if (len > SFS_HDR_SIZE)
		return SFS_HDR_LONG;
	if (h->version == 0)
		return SFS_HDR_VERSION;
	if (h->flags & ~SFS_HDR_KNOWN_FLAGS)
		return SFS_HDR_FLAGS;
	if (!sfs_all_zero(d.h_reserved, sizeof(d.h_reserved)))
		return SFS_HDR_RESERVED;
	return SFS_HDR_OK;
}

static bool header_valid(const uint8_t *buf, size_t len, void *arg)
{
	struct sfs_header h;

	return sfs_header_parse(buf, len, &h) == SFS_HDR_OK;
}

int sfs_header_mend(uint8_t buf[SFS_HDR_SIZE], size_t *at, uint8_t *was)
{
	return sfs_mend_byte(buf, SFS_HDR_SIZE, header_valid, NULL, at, was);
}

int sfs_header_explain(enum sfs_hdr_status st, const struct sfs_header *h,
		       size_t len, char *err, size_t errlen)
{
	const char *p = SFS_METADIR_NAME "/" SFS_META_HEADER;

	switch (st) {
	case SFS_HDR_OK:
		return 0;
	case SFS_HDR_SHORT:
		snprintf(err, errlen, "%s is corrupt (truncated: %zu bytes, expected %u)",
			 p, len, SFS_HDR_SIZE);
		break;
	case SFS_HDR_LONG:
		snprintf(err, errlen, "%s is corrupt (%s%zu bytes, expected %u)", p,
			 len > HEADER_READ_MAX ? "more than " : "",
			 len > HEADER_READ_MAX ? (size_t)HEADER_READ_MAX : len, SFS_HDR_SIZE);
		break;
	case SFS_HDR_BAD_MAGIC:
		snprintf(err, errlen, "%s is corrupt (bad magic: not a stackfs header)", p);
		break;
	case SFS_HDR_NEWER:
		snprintf(err, errlen, "%s: format version %u is newer than this stackfs (%u)",
			 p, h->version, SFS_META_VERSION);
		return -EPROTONOSUPPORT;
	case SFS_HDR_CRC:
		snprintf(err, errlen, "%s is corrupt (checksum mismatch)", p);
		break;
	case SFS_HDR_VERSION:
		snprintf(err, errlen, "%s is corrupt (format version 0)", p);
		break;
	case SFS_HDR_FLAGS:
		snprintf(err, errlen, "%s is corrupt (unknown flags 0x%x)", p,
			 h->flags & ~SFS_HDR_KNOWN_FLAGS);
		break;
	case SFS_HDR_RESERVED:
		snprintf(err, errlen, "%s is corrupt (reserved bytes not zero)", p);
		break;
	}
	return -EUCLEAN;
}
