/* fsck of metacopy files (whiteout/metacopy.h): a file of the branch
 * whose data is read from below — stackfs's metadata-only copies and
 * kernel overlayfs's — must still find that data. Where none of the
 * lower directories its parent merges with has a regular file at its
 * name (or its redirect), or where the one it would read is not the
 * inode its origin record names (a branch reordered, a lower file
 * replaced offline), its reads fail with EIO: reported, never repaired
 * (no fix keeps its data: restore the lower file, or remove the file).
 * The times a fill keeps aside (SFS_MCTIMES_XATTR) are left only by a
 * fill that was killed: repaired by putting them back. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bio.h"
#include "whiteout/fsck_int.h"
#include "whiteout/metacopy.h"
#include "whiteout/origin.h"

/* Whether the file dirfd/name of lower j is the data: a regular file,
 * and the inode the origin names when there is one (has_o). 1 yes, 0 no,
 * -1 no such name. */
static int is_data(struct fsck *f, size_t j, int dirfd, const char *name,
		   const struct sfs_origin *o, bool has_o)
{
	struct stat st;
	int ret = sfs_do_stat(dirfd, name, &st);

	if (ret < 0)
		return -1;
	if (!S_ISREG(st.st_mode))
		return 0;
	if (!has_o || o->version != SFS_ORIGIN_VERSION || !f->low[j].uuid_ok)
		return 1;
	if (memcmp(f->low[j].uuid, o->fs_uuid, 16))
		return 0;
	return sfs_origin_names(o, dirfd, name) == 1;
}

/* The first lower of the merged directories lf with the name: whether it
 * is the data (1), not (0), or -1 when no lower has the name. The
 * union's whiteouts between are not read: a data file a lower whiteout
 * hides is taken as found (never a false report). */
static int data_in(struct fsck *f, const struct lower_fds *lf, const char *name,
		   const struct sfs_origin *o, bool has_o)
{
	for (size_t i = 0; i < lf->n; i++) {
		int r = lf->fd[i] < 0 ? -1 : is_data(f, i % f->nlow, lf->fd[i], name, o, has_o);

		if (r >= 0)
			return r;
	}
	return -1;
}

/* The same for an absolute redirect path, from the lower roots. */
static int data_at(struct fsck *f, const char *path, const struct sfs_origin *o, bool has_o)
{
	char *dir = strdup(path), *base = dir ? strrchr(dir, '/') : NULL;
	int r = -1;

	if (!base) {
		free(dir);
		return -1;
	}
	*base++ = '\0';
	for (size_t j = 0; j < f->nlow && r < 0; j++) {
		int fd = sfs_fsck_lower_dir(f, j, dir[0] ? dir : "/");

		if (fd < 0)
			continue;
		r = is_data(f, j, fd, base, o, has_o);
		close(fd);
	}
	free(dir);
	return r;
}

/* The times a killed fill kept aside on metacopy fd. */
static void check_kept_times(struct fsck *f, int fd, const char *path)
{
	struct timespec t[2];
	struct sfs_fsck_problem *p;
	int r = sfs_metacopy_times_load(fd, t);

	if (r == 0) {
		p = sfs_fsck_found(f, SFS_PR_METACOPY_TIMES_KEPT, true, path, NULL);
		if (p)
			sfs_fsck_done(f, p, sfs_metacopy_times_restore(fd));
	} else if (r == -EUCLEAN) {
		p = sfs_fsck_found(f, SFS_PR_METACOPY_TIMES_BAD, true, path, NULL);
		if (p)
			sfs_fsck_done(f, p, sfs_metacopy_times_drop(fd));
	}
}

bool sfs_fsck_metacopy(struct fsck *f, int dfd, const char *name, const char *path,
		       const struct lower_fds *lf)
{
	struct sfs_metacopy m;
	struct sfs_origin o;
	bool has_o;
	int fd = sfs_do_open(dfd, name, O_PATH | O_NOFOLLOW, 0), r;

	r = fd < 0 ? fd : sfs_metacopy_read(fd, &m);
	if (r == -EUCLEAN) {
		/* where its data is cannot be read: nothing to mend it from */
		sfs_fsck_found(f, SFS_PR_REDIRECT_BAD, false, path, "%s of a metacopy file",
			       SFS_OVL_REDIRECT_XATTR);
		close(fd);
		return true;
	}
	if (r < 0 || !m.is) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	check_kept_times(f, fd, path);
	close(fd);
	has_o = sfs_origin_get(dfd, name, &o) == 1;
	if (m.redirect && m.redirect[0] == '/') {
		r = lf->unknown ? 1 : data_at(f, m.redirect, &o, has_o);
		if (r < 0) { /* it may be in a data-only branch, which fsck is not given */
			sfs_fsck_msg(f, false, "%s: a metacopy whose data %s is in no lower branch "
				     "given: not checked (a data-only branch?)", path, m.redirect);
			r = 1;
		}
	} else {
		r = lf->unknown ? 1 : data_in(f, lf, m.redirect ? m.redirect : name, &o, has_o);
	}
	if (r != 1)
		sfs_fsck_found(f, SFS_PR_METACOPY_NO_DATA, false, path, "%s",
			       r < 0 ? "no lower branch has its data" :
			       "the file below at its name is not the one it was copied from");
	sfs_metacopy_free(&m);
	return true;
}
