/* The names of the hard-link index's entries (.stackfs/index/): the
 * lower file's filesystem id (registry) and inode number, in hex. The
 * daemon makes them; fsck, diff and commit read them. */
#include <stdio.h>
#include <string.h>

#include "whiteout/metadir.h"

void sfs_index_name(char buf[SFS_INDEX_NAME_MAX], uint32_t fs_id, uint64_t ino)
{
	snprintf(buf, SFS_INDEX_NAME_MAX, "%08x-%016llx", fs_id, (unsigned long long)ino);
}

bool sfs_index_name_ok(const char *s)
{
	if (strlen(s) != 25 || s[8] != '-')
		return false;
	for (int i = 0; i < 25; i++)
		if (i != 8 && !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}
