/* The runtime directory of a live mount: how the `stackfs` command finds
 * the daemon that serves a mount point. One directory per mount, named by
 * the mount's device number as /proc/self/mountinfo shows it:
 *   $SFS_RUNTIME_DIR/<major>:<minor>/pid   the daemon's pid, decimal, "\n"
 *   $SFS_RUNTIME_DIR/<major>:<minor>/ctl   the control socket (control.h)
 * SFS_RUNTIME_DIR is STACKFS_RUNTIME_DIR when set, else /run/stackfs
 * for root (CAP_SYS_ADMIN in the initial user namespace), else the
 * user's $XDG_RUNTIME_DIR/stackfs (/run/user/UID/stackfs when unset). */
#ifndef SFS_RUNTIME_H
#define SFS_RUNTIME_H

#include <stddef.h>
#include <sys/types.h>

#define SFS_RUNTIME_DEFAULT "/run/stackfs"

/* The runtime base directory (environment override, root's or the
 * user's: above). */
const char *sfs_runtime_base(void);
/* Command side: the base under which the daemon of mount major:minor
 * published: this process's own, else (a user's command, root's mount)
 * root's /run/stackfs when the mount is there; the own one when
 * neither has it. */
const char *sfs_runtime_base_of(unsigned major, unsigned minor);

/* A mount as /proc/self/mountinfo gives it. */
struct sfs_mountinfo {
	unsigned id;              /* the mount's id (the fdinfo mnt_id) */
	unsigned major, minor;    /* its device */
	char fstype[64];          /* "fuse.stackfs" for ours */
};
/* The newest mount on `mountpoint` (canonicalised without entering it,
 * as below). 0 or -errno (-ENOENT: not mounted). */
int sfs_runtime_find_mountinfo(const char *mountpoint, struct sfs_mountinfo *out);

/* The filesystem type of the device major:minor as mountinfo names it
 * ("ext4", "fuse.glusterfs"; bind mounts of one device share it): 0, or
 * -errno (-ENOENT: no mount of it here). */
int sfs_runtime_fstype_of(unsigned major, unsigned minor, char *fstype, size_t len);
/* The same, and the mount's source ("host:/volume"; "" when mountinfo
 * gives none) into source. */
int sfs_runtime_source_of(unsigned major, unsigned minor, char *fstype, size_t len,
			  char *source, size_t slen);

/* Whether fstype (mountinfo's: "nfs4", "fuse.glusterfs") is one that
 * other hosts write. */
int sfs_fstype_shared(const char *fstype);

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

/* Whether the daemon of the mount major:minor is gone (killed, crashed):
 * 1 when its pid file names no running stackfsd (*pid: the pid named),
 * 0 when it runs, -errno when there is no pid file to tell. */
int sfs_runtime_daemon_gone(unsigned major, unsigned minor, pid_t *pid);
/* Removes the pid file and control socket a dead daemon pid left for
 * major:minor, once its mount is gone; never a live daemon's. */
void sfs_runtime_remove_stale(unsigned major, unsigned minor, pid_t pid);

/* Who holds the lock file of a rw branch (.stackfs/lock beneath at_fd:
 * its root, or the workdir holding its metadata dir) open, and so maybe
 * its lock: "the stackfs mount on MP, stackfsd pid N", or the command
 * line and pid of another process, in buf. Found by
 * the fds of every process (fdinfo: inode and mount), so it sees only
 * the processes the caller may look at. 0, -ENOENT when none is found,
 * or -errno. */
int sfs_runtime_lock_holder(int at_fd, char *buf, size_t len);
/* 1 when that holder is a stackfsd serving no mount any more: its view
 * was unmounted and it is ending (syncing, clearing the volatile flag,
 * releasing the lock), which a new mount of the branch waits for. */
int sfs_runtime_lock_ending(int at_fd);

#endif
