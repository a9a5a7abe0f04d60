/* The namespace of the union's own records (origin, redirect, device
 * and workdir records, and the overlay marks a mount writes): trusted.*
 * for a process with CAP_SYS_ADMIN in the initial user namespace (the
 * kernel lets no one else set or read trusted.* attributes), user.*
 * for any other (a user's mount through fusermount3, the mapped root of
 * a user namespace: rootless podman). One choice per process, made once
 * at start (sfs_records_init) before any thread: a process reads and
 * writes its records in its own namespace only, so a root daemon never
 * follows a user.stackfs.* record, which anyone who may write the entry
 * can forge (docs/trust.md "Rootless mounts"). */
#ifndef SFS_RECORDS_H
#define SFS_RECORDS_H

#include <stdbool.h>

enum sfs_rec {
	SFS_REC_ORIGIN,           /* stackfs.origin: the lower entry a copy came from */
	SFS_REC_REDIRECT,         /* stackfs.redirect: a moved directory's lower path */
	SFS_REC_DEVICE,           /* stackfs.device: a 0:0 device that is no whiteout */
	SFS_REC_WORKDIR,          /* stackfs.workdir: where an upper's metadata is */
	SFS_REC_OVL_OPAQUE,       /* overlay.opaque, as kernel overlayfs reads it */
	SFS_REC_OVL_REDIRECT,     /* overlay.redirect, likewise */
	SFS_REC_LOWERNAME,        /* stackfs.lowername: a FUSE-lower copy's lower path */
};

/* Decides the namespace: user.* when the process cannot use trusted.*
 * (see above). Returns whether it is user.*. */
bool sfs_records_init(void);
/* Whether the records are in user.* (false until sfs_records_init). */
bool sfs_records_user(void);
/* Whether this process has CAP_SYS_ADMIN in the initial user namespace,
 * the kernel's condition for trusted.* attributes. */
bool sfs_records_privileged(void);
/* The attribute name of a record in this process's namespace. */
const char *sfs_rec_name(enum sfs_rec r);

#endif
