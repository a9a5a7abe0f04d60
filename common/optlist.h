/* The daemon's command-line options: one table. The parser (opts.c)
 * builds its fuse_opt templates from it, and the help of `stackfsd` and
 * of `stackfs mount` prints it, so an option is accepted exactly when it
 * is documented there. stackfs(8), the README and the bash completion are
 * checked against that help by tests/98-docs.bats. Linked by the daemon
 * and the command; no libfuse in here. */
#ifndef SFS_OPTLIST_H
#define SFS_OPTLIST_H

#include <stddef.h>
#include <stdio.h>

/* What the parser does with an option (opts.c's opt_proc). */
enum sfs_optkey {
	SFS_OPTK_FG, SFS_OPTK_DEBUG, SFS_OPTK_HELP, SFS_OPTK_VERSION,
	SFS_OPTK_WHITEOUT, SFS_OPTK_TIMEOUT, SFS_OPTK_READAHEAD, SFS_OPTK_LOG,
	SFS_OPTK_SYNC, SFS_OPTK_FSYNC, SFS_OPTK_VOLATILE, SFS_OPTK_ACCEPT_UNCLEAN, SFS_OPTK_UPGRADE, SFS_OPTK_WRITEBACK, SFS_OPTK_NOPASSTHROUGH,
	SFS_OPTK_URING, SFS_OPTK_NOURING,
	SFS_OPTK_TRACE, SFS_OPTK_COHERENT,
	SFS_OPTK_LOWERDIR, SFS_OPTK_UPPERDIR, SFS_OPTK_WORKDIR, SFS_OPTK_LOWERDIR_PLUS,
	SFS_OPTK_BRANCHES_FILE,
	SFS_OPTK_SUBTYPE, SFS_OPTK_FSNAME,
	/* other union filesystems' options (stackfs/options/compat.c, idmap.c) */
	SFS_OPTK_NOTE,            /* accepted, a kernel tuning: a note is logged */
	SFS_OPTK_FSYNC_NUM,       /* fuse-overlayfs's fsync=0|1 */
	SFS_OPTK_WRITEBACK_NUM,   /* fuse-overlayfs's writeback=0|1 */
	SFS_OPTK_USERXATTR, SFS_OPTK_NOACL, SFS_OPTK_NOXATTRS,
	SFS_OPTK_METACOPY,        /* metacopy=on|off: metadata-only copy-up */
	SFS_OPTK_NFS_EXPORT,      /* overlayfs's nfs_export=on|off */
	SFS_OPTK_UIDMAP, SFS_OPTK_GIDMAP,
	SFS_OPTK_SQUASH_ROOT, SFS_OPTK_SQUASH_UID, SFS_OPTK_SQUASH_GID,
	SFS_OPTK_CONTEXT,         /* SELinux labels: passed on when SELinux is on */
	SFS_OPTK_MOUNTFLAG,       /* allow_other, allow_root, suid, dev and their no- */
	SFS_OPTK_FUSE,            /* libfuse's or the kernel's: passed on */
};

/* The heading an option is listed under. */
enum sfs_optgroup {
	SFS_OPTG_STACKFS,         /* stackfs's own -o options */
	SFS_OPTG_OVERLAY,         /* the branches, overlayfs-style */
	SFS_OPTG_COMPAT,          /* overlayfs's and fuse-overlayfs's */
	SFS_OPTG_FUSE,            /* passed to libfuse and the kernel */
	SFS_OPTG_CMDLINE,         /* -f, -d, -h, -V of the daemon's argv */
};
#define SFS_OPTG_MASK(g) (1u << (g))
#define SFS_OPTG_MOUNT_OPTS (SFS_OPTG_MASK(SFS_OPTG_STACKFS) | \
			     SFS_OPTG_MASK(SFS_OPTG_OVERLAY) | SFS_OPTG_MASK(SFS_OPTG_COMPAT) | \
			     SFS_OPTG_MASK(SFS_OPTG_FUSE))

struct sfs_optdef {
	const char *templ;        /* as fuse_opt matches it: "timeout=", "fsync", "-f";
				   * a trailing '=' takes any value */
	enum sfs_optkey key;
	enum sfs_optgroup group;
	const char *arg;          /* the value's form shown after '=', or NULL; in
				   * lower case with '|' ("on|off"): the values
				   * accepted */
	const char *help;         /* lines ending in '\n'; NULL: another spelling
				   * of the entry before, shown on its line */
};

extern const struct sfs_optdef sfs_optlist[];
extern const size_t sfs_optlist_n;

/* The entry of the option arg ("name" or "name=value") by its name, or
 * NULL. */
const struct sfs_optdef *sfs_optlist_find(const char *arg);

/* 1 when value is one of d's alternatives ("on|off"), or d takes any. */
int sfs_optlist_value_ok(const struct sfs_optdef *d, const char *value);

/* Prints the options of the groups in mask (SFS_OPTG_MASK bits) under
 * their headings, as --help shows them. */
void sfs_optlist_print(FILE *f, unsigned mask);

/* foreign.c: an option of mergerfs, fuse-overlayfs or kernel overlayfs
 * that stackfs does not take (opt is "name" or "name=value"): 1 with a
 * one-line message in msg saying what the stackfs way is, 0 when opt is
 * none of theirs. */
int sfs_foreign_hint(const char *opt, char *msg, size_t len);

#endif
