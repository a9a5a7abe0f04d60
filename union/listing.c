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
 * real one, or (in a directory marked for them) an xattr whiteout. Only
 * the types that can be one are looked at. */
static int ovl_whiteout(int dirfd, const char *name, unsigned char type, bool xwh)
{
	struct stat st;
	int ret;

	if (type != DT_CHR && type != DT_UNKNOWN && !(xwh && type == DT_REG))
		return 0;
	ret = sfs_do_stat(dirfd, name, &st);
	if (ret == -EXDEV)
		return 0; /* a mount point: listed, its lookup refused */
	if (ret < 0)
		return ret;
	return sfs_wh_is_dev_whiteout(dirfd, name, &st) ||
	       (xwh && sfs_wh_is_xwhiteout(dirfd, name, &st));
}

int sfs_u_dirent(int dirfd, const char *name, unsigned char type, unsigned dirflags,
		 const char **hides)
{
	int ret;

	*hides = NULL;
	if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
		return SFS_U_SKIP;
	if ((dirflags & SFS_U_AT_ROOT) && !strcmp(name, SFS_METADIR_NAME))
		return SFS_U_SKIP;
	if (sfs_wh_reserved_name(name)) {
		if (!strncmp(name, ".wh..wh.", 8))
			return SFS_U_SKIP; /* aufs' own bookkeeping, opaque marker */
		*hides = name + SFS_WH_PREFIX_LEN;
		return SFS_U_WHITEOUT;
	}
	ret = ovl_whiteout(dirfd, name, type, dirflags & SFS_U_XWHITEOUTS);
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

bool sfs_u_dir_xwhiteouts(int dirfd, unsigned xwh, unsigned char *keep)
{
	bool sure, x;

	if (xwh == SFS_XWH_UNKNOWN && keep)
		xwh = __atomic_load_n(keep, __ATOMIC_RELAXED);
	if (xwh != SFS_XWH_UNKNOWN)
		return xwh == SFS_XWH_SOME;
	x = sfs_wh_dir_xwhiteouts_read(dirfd, &sure);
	if (keep && sure)
		__atomic_store_n(keep, x ? SFS_XWH_SOME : SFS_XWH_NONE, __ATOMIC_RELAXED);
	return x;
}
