/* The runtime directory of a live mount: how the `stackfs` command finds
 * the daemon that serves a mount point. One directory per mount, named by
 * the mount's device number as /proc/self/mountinfo shows it:
 *   $SFS_RUNTIME_DIR/<major>:<minor>/pid   the daemon's pid, decimal, "\n"
 *   $SFS_RUNTIME_DIR/<major>:<minor>/ctl   the control socket (control.h)
 * SFS_RUNTIME_DIR is /run/stackfs unless STACKFS_RUNTIME_DIR is set. */
#ifndef SFS_RUNTIME_H
#define SFS_RUNTIME_H

#include <stddef.h>
#include <sys/types.h>

#define SFS_RUNTIME_DEFAULT "/run/stackfs"

/* The runtime base directory (environment override or default). */
const char *sfs_runtime_base(void);

/* Finds the newest mount on `mountpoint` (canonicalised) in
 * /proc/self/mountinfo and returns its device number and fs type
 * ("fuse.stackfs" for ours). Returns 0 or -errno (-ENOENT: not mounted). */
int sfs_runtime_find_mount(const char *mountpoint, unsigned *major,
			   unsigned *minor, char *fstype, size_t fstypelen);

/* Daemon side: writes the pid file for the mount on mountpoint. */
int sfs_runtime_publish(const char *mountpoint, pid_t pid);
/* Daemon side: the directory published, or NULL. */
const char *sfs_runtime_dir(void);
/* Daemon side: removes what sfs_runtime_publish made. */
void sfs_runtime_unpublish(void);

/* Command side: reads the pid of the daemon serving the mount. */
int sfs_runtime_pid(unsigned major, unsigned minor, pid_t *pid);

#endif
