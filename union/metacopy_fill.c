/* A kernel overlayfs metacopy file's data brought into the file itself,
 * in place (whiteout/metacopy.h): the daemon does it before the data
 * changes, commit before it places the file in the branch below. The
 * file keeps its inode, size and metadata; the mark goes only once the
 * data is in (and, when asked, on the disk), so a crash at any point
 * leaves a metacopy that still finds its data, or the whole file.
 *
 * Times: the data written in place sets the mtime. The times to put back
 * are saved on the file first (SFS_MCTIMES_XATTR), so a fill killed
 * midway leaves them for the next fill (a second commit, the next write)
 * instead of losing them; they go once the times are back, before the
 * mark, so no file but a metacopy ever keeps them. */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bio.h"
#include "union/copy.h"
#include "whiteout/metacopy.h"

/* The times the file must end with: those a fill killed before kept, else
 * its own, kept now (a filesystem that refuses the record still gets its
 * times back when nothing is killed). A damaged record stops the fill
 * (-EUCLEAN): after a killed fill the file's own times are the kill's. */
static int times_to_keep(int fd, const struct stat *st, struct timespec t[2])
{
	int ret = sfs_metacopy_times_load(fd, t);

	if (ret != -ENODATA)
		return ret;
	t[0] = st->st_atim;
	t[1] = st->st_mtim;
	(void)sfs_metacopy_times_save(fd, t);
	return 0;
}

/* The blocks a failed fill took, given back: punched, or where the
 * filesystem refuses that too (a full GlusterFS volume answers the punch
 * with ENOSPC, also on its own mount) cut off and the size set again,
 * which frees them as well. What a client still holds of the writes is
 * flushed first: GlusterFS's answered the truncate with the ENOSPC of
 * its pending writes, and 6.5 of 24 MiB stayed allocated. The blocks
 * are best effort (the data below is read either way); the size is not:
 * -EIO when it could not be set back, else 0. */
static int give_back(int out, off_t size)
{
	(void)fdatasync(out); /* its error is the copy's, already known */
	if (fallocate(out, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, size) == 0 ||
	    ftruncate(out, 0) < 0)
		return 0;
	/* cut off, it must get its size back (the view shows the copy's):
	 * a sparse size needs no block; if even that fails, EIO says the
	 * file is wrong, not the ENOSPC of the copy. Not crash-safe: a kill
	 * between the two truncates leaves the metacopy at size 0, which
	 * the view then shows (only where the punch is refused) */
	return ftruncate(out, size) == 0 || ftruncate(out, size) == 0 ? 0 : -EIO;
}

int sfs_metacopy_fill(int fd, int data_fd, bool durable)
{
	struct stat st;
	struct timespec t[2];
	int in = -1, out = sfs_do_reopen(fd, O_WRONLY), ret = out < 0 ? out : 0;

	if (ret == 0)
		ret = sfs_do_fstat(fd, &st);
	if (ret == 0)
		ret = times_to_keep(fd, &st, t);
	if (ret == 0 && (in = sfs_open_source(data_fd)) < 0)
		ret = in;
	/* the file is sparse at its size: the data extents land in place;
	 * a copy that fails (ENOSPC) gives their blocks back, the file stays
	 * a metacopy that reads its data below */
	if (ret == 0) {
		ret = sfs_copy_data(in, out, st.st_size);
		if (ret < 0 && st.st_size > 0 && give_back(out, st.st_size) < 0)
			ret = -EIO;
	}
	/* the data was the file's all along: its times stay (a commit
	 * places the file with them; a write after sets its own) */
	if (ret == 0 && futimens(out, t) < 0)
		ret = -errno;
	if (ret == 0 && durable && fsync(out) < 0)
		ret = -errno;
	if (ret == 0)
		ret = sfs_metacopy_times_drop(fd);
	if (ret == 0)
		ret = sfs_metacopy_clear(fd);
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return ret;
}
