/* A kernel overlayfs metacopy file's data brought into the file itself,
 * in place (whiteout/metacopy.h): the daemon does it before the data
 * changes, commit before it places the file in the branch below. The
 * file keeps its inode, size and metadata; the mark goes only once the
 * data is in (and, when asked, on the disk), so a crash at any point
 * leaves a metacopy that still finds its data, or the whole file. */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bio.h"
#include "union/copy.h"
#include "whiteout/metacopy.h"

int sfs_metacopy_fill(int fd, int data_fd, bool durable)
{
	struct stat st;
	int in = -1, out = sfs_do_reopen(fd, O_WRONLY), ret = out < 0 ? out : 0;

	if (ret == 0)
		ret = sfs_do_fstat(fd, &st);
	if (ret == 0 && (in = sfs_open_source(data_fd)) < 0)
		ret = in;
	/* the file is sparse at its size: the data extents land in place;
	 * a copy that fails (ENOSPC) gives their blocks back, the file stays
	 * a metacopy that reads its data below */
	if (ret == 0) {
		ret = sfs_copy_data(in, out, st.st_size);
		if (ret < 0 && st.st_size > 0)
			fallocate(out, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, st.st_size);
	}
	/* the data was the file's all along: its times stay (a commit
	 * places the file with them; a write after sets its own) */
	if (ret == 0 && futimens(out, (const struct timespec[2]){ st.st_atim, st.st_mtim }) < 0)
		ret = -errno;
	if (ret == 0 && durable && fsync(out) < 0)
		ret = -errno;
	if (ret == 0)
		ret = sfs_metacopy_clear(fd);
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return ret;
}
