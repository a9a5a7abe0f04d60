/* What a branch's filesystem lacks of what the union's ways of writing
 * use, found when the branch is opened, and said in one line at mount
 * with the way taken instead (see
 * docs/distributed.md "What a branch's filesystem lacks"). */
#ifndef SFS_BRANCH_CAPS_H
#define SFS_BRANCH_CAPS_H

#include <stdbool.h>
#include <stddef.h>

struct sfs_branch;

enum sfs_branch_lack {
	SFS_LACKS_TMPFILE = 1u << 0,      /* O_TMPFILE: copies staged under a name */
	SFS_LACKS_RENAME_FLAGS = 1u << 1, /* renameat2 flags: NOREPLACE kept by the seam */
	SFS_LACKS_WHITEOUT = 1u << 2,     /* RENAME_WHITEOUT/EXCHANGE: .wh.NAME written */
	SFS_LACKS_TRUSTED = 1u << 3,      /* trusted.* xattrs: the union's records */
	SFS_SHARED_FS = 1u << 4,          /* other hosts change it: no events of theirs */
};

/* Probes a rw branch's staging directory (work_fd) and its filesystem;
 * sets b->lacks. Leaves nothing behind in work_fd. */
void sfs_branch_caps_probe_rw(struct sfs_branch *b, int work_fd);
/* The same for a read-only branch: only whether its filesystem is
 * shared with other hosts (nothing is written there). */
void sfs_branch_caps_probe_ro(struct sfs_branch *b);
/* The one line saying what b lacks and what is done instead, into buf
 * ("" when it lacks nothing); timeout and coherent are the mount's. */
void sfs_branch_caps_line(const struct sfs_branch *b, double timeout, bool coherent, char *buf,
			  size_t len);
/* Whether fstype (mountinfo's: "nfs4", "fuse.glusterfs") is one that
 * other hosts write. */
int sfs_fstype_shared(const char *fstype);

#endif
