/* What a branch's filesystem lacks of what the union's ways of writing
 * use, found when the branch is opened, and said in one line at mount
 * with the way taken instead (see
 * docs/distributed.md "What a branch's filesystem lacks"). */
#ifndef SFS_BRANCH_CAPS_H
#define SFS_BRANCH_CAPS_H

#include <stdbool.h>
#include <stddef.h>

struct sfs_branch;
struct sfs_snap;

enum sfs_branch_lack {
	SFS_LACKS_TMPFILE = 1u << 0,      /* O_TMPFILE: copies staged under a name */
	SFS_LACKS_RENAME_FLAGS = 1u << 1, /* renameat2 flags: NOREPLACE kept by the seam */
	SFS_LACKS_WHITEOUT = 1u << 2,     /* RENAME_WHITEOUT/EXCHANGE: .wh.NAME written */
	SFS_LACKS_TRUSTED = 1u << 3,      /* trusted.* xattrs: the union's records */
	SFS_SHARED_FS = 1u << 4,          /* other hosts change it: no events of theirs */
	SFS_LACKS_INODE_HANDLES = 1u << 5,/* FUSE: handles name the client's nodes */
};

/* What any branch's filesystem is, found when it is opened (nothing is
 * written): shared with other hosts, handles that name no inode; sets
 * b->lacks. */
void sfs_branch_caps_probe_fs(struct sfs_branch *b);
/* Probes a rw branch's staging directory (work_fd) too; adds to
 * b->lacks. Leaves nothing behind in work_fd. */
void sfs_branch_caps_probe_rw(struct sfs_branch *b, int work_fd);
/* Sets s->pin_fds when a branch's handles cannot reopen its inodes. */
void sfs_snap_caps(struct sfs_snap *s);
/* The one line saying what b lacks and what is done instead, into buf
 * ("" when it lacks nothing); timeout and coherent are the mount's. */
void sfs_branch_caps_line(const struct sfs_branch *b, double timeout, bool coherent, char *buf,
			  size_t len);

#endif
