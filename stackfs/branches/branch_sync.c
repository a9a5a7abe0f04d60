/* A rw branch under -o sync=volatile: the header flag set while it is
 * mounted so, checked when a mount opens the branch (a mount after an
 * unclean end refuses it unless -o accept_unclean), cleared after a sync
 * at a clean end. The rest of the sync policy is copyup/sync.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/bio.h"
#include "stackfs/stackfs.h"
#include "whiteout/metadir.h"

/* syncfs of the filesystem of directory dirfd (O_PATH too: syncfs(2)
 * wants an fd opened for real). */
int sfs_syncfs_dir(int dirfd)
{
	int fd = sfs_do_reopen_dir(dirfd, O_RDONLY), ret;

	if (fd < 0)
		return fd;
	ret = syncfs(fd) < 0 ? -errno : 0;
	close(fd);
	return ret;
}

int sfs_sync_branch_check(int at_fd, char *why, size_t len)
{
	uint32_t flags = 0;
	int ret = sfs_meta_read_flags(at_fd, &flags);

	if (ret < 0 || !(flags & SFS_META_F_VOLATILE) || sfs_m.opts.accept_unclean)
		return 0; /* the metadata's own checks report its errors */
	snprintf(why, len, "was mounted with -o sync=volatile and did not end cleanly "
		 "(its header has the volatile flag): after a power cut or a crash anything "
		 "written through that mount may be lost or partial, a deleted file back; "
		 "refused (mount with -o accept_unclean to use it as it is)");
	return -EUCLEAN;
}

int sfs_sync_branch_open(struct sfs_meta *m)
{
	uint32_t want = m->flags & ~SFS_META_F_VOLATILE;

	if (sfs_m.opts.sync == SFS_SYNC_VOLATILE)
		want |= SFS_META_F_VOLATILE;
	if (want == m->flags)
		return 0;
	if (!(want & SFS_META_F_VOLATILE))
		sfs_log(SFS_LOG_WARN, "a branch left by a volatile mount that did not end cleanly "
			"is used as it is (-o accept_unclean)");
	return sfs_meta_set_flags(m, want);
}

void sfs_sync_branch_close(struct sfs_meta *m)
{
	int ret;

	if (sfs_m.opts.sync != SFS_SYNC_VOLATILE || !(m->flags & SFS_META_F_VOLATILE) ||
	    m->dir_fd < 0)
		return;
	/* what the mount left unsynced, then the flag that said so: in
	 * place, making no name in the metadata dir (a container engine may
	 * be removing the branch already: sfs_meta_set_flags_in_place) */
	ret = sfs_syncfs_dir(m->dir_fd);
	if (ret == 0)
		ret = sfs_meta_set_flags_in_place(m, m->flags & ~SFS_META_F_VOLATILE);
	if (ret == -ENOENT) {
		sfs_log(SFS_LOG_INFO, "volatile mount: the branch's header is gone "
			"(the branch was removed after the unmount): no flag to clear");
		return;
	}
	if (ret < 0)
		sfs_log(SFS_LOG_ERR, "volatile mount: cannot sync the branch and clear its flag (%s): "
			"the next mount will refuse it", strerror(-ret));
}
