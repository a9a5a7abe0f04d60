/* Undoing one damaged byte of a checksummed record
 * (docs/format.md "On-disk format", the checksum rule): the one change of one
 * byte after which
 * the record is whole and valid. CRC32C detects every error burst of up
 * to 32 bits, so two records that differ in one byte never both pass
 * it; a second candidate (damage elsewhere that a changed byte happens
 * to hide) means nothing can be trusted, and no mend. */
#include <string.h>

#include "whiteout/ondisk.h"

int sfs_mend_byte(uint8_t *buf, size_t len, sfs_mend_valid_fn valid, void *arg,
		  size_t *at, uint8_t *was)
{
	int found = 0;

	for (size_t i = 0; i < len; i++) {
		uint8_t orig = buf[i];

		for (unsigned v = 0; v < 256 && found < 2; v++) {
			if (v == orig)
				continue;
			buf[i] = (uint8_t)v;
			if (!valid(buf, len, arg))
				continue;
			if (!found++) {
				*at = i;
				*was = (uint8_t)v;
			}
		}
		buf[i] = orig;
		if (found > 1)
			return -1;
	}
	if (found)
		buf[*at] = *was;
	return found;
}
