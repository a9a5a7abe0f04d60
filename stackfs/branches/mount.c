/* The state every part of the daemon shares: the mount's options, its
 * FUSE session (to notify the kernel) and the current branch snapshot.
 * Kept apart from main.c (startup and the loop) so that no operation
 * depends on the file that starts them, and with the branches, the
 * lowest part that needs it. */
#include "stackfs/stackfs.h"

struct sfs_mount sfs_m = { .snap_lock = PTHREAD_MUTEX_INITIALIZER };

struct sfs_snap *sfs_snap_current(void)
{
	struct sfs_snap *s;

	pthread_mutex_lock(&sfs_m.snap_lock);
	s = sfs_snap_get(sfs_m.snap);
	pthread_mutex_unlock(&sfs_m.snap_lock);
	return s;
}
