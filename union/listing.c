/* What a name read from a layer directory is to a merged listing: the
 * daemon's readdir, diff's and commit's walks and fsck read layers with
 * this one rule (resolve.h). */
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "common/bio.h"
#include "union/resolve.h"
#include "whiteout/metadir.h"
#include "whiteout/whiteout.h"

/* An overlayfs whiteout: a 0:0 character device that is not marked as a
 * real one. Only a DT_CHR or DT_UNKNOWN entry is looked at. */
static int chr_whiteout(int dirfd, const char *name, unsigned char type)
{
	struct stat st;
	int ret;

	if (type != DT_CHR && type != DT_UNKNOWN)
		return 0;
	ret = sfs_do_stat(dirfd, name, &st);
	if (ret == -EXDEV)
		return 0; /* a mount point: listed, its lookup refused */
	if (ret < 0)
		return ret;
	return sfs_wh_is_dev_whiteout(dirfd, name, &st);
}

int sfs_u_dirent(int dirfd, const char *name, unsigned char type, bool at_root,
		 const char **hides)
{
	int ret;

	*hides = NULL;
	if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
		return SFS_U_SKIP;
	if (at_root && !strcmp(name, SFS_METADIR_NAME))
		return SFS_U_SKIP;
	if (sfs_wh_reserved_name(name)) {
		if (!strncmp(name, ".wh..wh.", 8))
			return SFS_U_SKIP; /* aufs' own bookkeeping, opaque marker */
		*hides = name + SFS_WH_PREFIX_LEN;
		return SFS_U_WHITEOUT;
	}
	ret = chr_whiteout(dirfd, name, type);
	if (ret == -ENOENT)
		return SFS_U_SKIP; /* gone since the listing: nothing to show */
	if (ret < 0)
		return ret;
	if (ret) {
		*hides = name;
		return SFS_U_WHITEOUT;
	}
	return SFS_U_ENTRY;
}
