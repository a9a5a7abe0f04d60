/* Whiteouts and opaque directories, in both on-disk formats:
 *  - aufs/OCI: an empty file ".wh.NAME" hides NAME of lower branches; a
 *    file ".wh..wh..opq" in a directory makes it opaque.
 *  - overlayfs: a character device 0:0 named NAME hides NAME; the xattr
 *    trusted.overlay.opaque="y" (user.overlay.opaque for userxattr
 *    layers) makes a directory opaque.
 * Both are read on every branch; the mount writes one of them.
 * All fds are directory fds (O_PATH is enough for reading); names are
 * single components. Functions return 0/1 for yes/no or -errno. */
#ifndef SFS_WHITEOUT_H
#define SFS_WHITEOUT_H

#include <stdbool.h>
#include <sys/stat.h>

#include "xattr/records.h"

enum sfs_whiteout_style { SFS_WH_AUFS = 0, SFS_WH_OVERLAY = 1 };

#define SFS_WH_PREFIX ".wh."
#define SFS_WH_PREFIX_LEN 4
#define SFS_WH_OPQ ".wh..wh..opq"
#define SFS_OVL_OPAQUE_XATTR "trusted.overlay.opaque"
#define SFS_OVL_USER_OPAQUE_XATTR "user.overlay.opaque"
#define SFS_OVL_REDIRECT_XATTR "trusted.overlay.redirect"
#define SFS_OVL_USER_REDIRECT_XATTR "user.overlay.redirect"
/* trusted.stackfs.redirect, or user.stackfs.redirect (xattr/records.h) */
#define SFS_REDIRECT_XATTR sfs_rec_name(SFS_REC_REDIRECT)

/* Names of the aufs format: ".wh.*". Never shown, never created. */
static inline bool sfs_wh_reserved_name(const char *name)
{
	return name[0] == '.' && name[1] == 'w' && name[2] == 'h' &&
	       name[3] == '.';
}

/* A character device 0:0: an overlayfs whiteout, unless it carries the
 * device marker (below). */
static inline bool sfs_wh_is_chr_whiteout(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && st->st_rdev == 0;
}

/* The marker of a real character device 0:0 (made through a view with
 * -o whiteout=wh, or copied from one): never a whiteout. */
#define SFS_DEVICE_XATTR sfs_rec_name(SFS_REC_DEVICE)   /* or user.stackfs.device */
/* The device marker of fd/ent (ent "" for fd itself): 1 (value "y"), 0
 * none, -EUCLEAN damaged (any other value), or -errno. */
int sfs_wh_device_mark(int fd, const char *ent);
/* Whether entry `ent` of directory fd (fd itself when ent is "", an
 * O_PATH fd), whose stat is st, is an overlayfs whiteout: a 0:0
 * character device without the device marker. The marker is read only
 * for a 0:0 device; one damaged or that cannot be read makes no
 * whiteout (a lookup answers its error). */
bool sfs_wh_is_dev_whiteout(int fd, const char *ent, const struct stat *st);
/* Marks the 0:0 character device fd/ent as a real device. */
int sfs_wh_mark_device(int fd, const char *ent);

/* The xattr whiteouts of Linux 6.7+ overlayfs (composefs and nested
 * overlays write them): in a directory marked to hold them (overlay.opaque
 * "x", as the kernel marks them since 6.8, or 6.7's overlay.whiteouts),
 * an empty regular file carrying overlay.whiteout is a whiteout of its
 * name. Both the trusted. and the user. namespace (userxattr) are read;
 * stackfs never writes them. */
#define SFS_OVL_XWHITEOUTS_XATTR "trusted.overlay.whiteouts"
#define SFS_OVL_USER_XWHITEOUTS_XATTR "user.overlay.whiteouts"
#define SFS_OVL_XWHITEOUT_XATTR "trusted.overlay.whiteout"
#define SFS_OVL_USER_XWHITEOUT_XATTR "user.overlay.whiteout"
/* Whether directory dirfd (an O_PATH fd) is marked to hold xattr
 * whiteouts. */
bool sfs_wh_dir_has_xwhiteouts(int dirfd);
/* The same, *sure saying whether the directory answered (its xattr list
 * was read) rather than a fallback that takes errors for "no". */
bool sfs_wh_dir_xwhiteouts_read(int dirfd, bool *sure);
/* Whether entry ent of dirfd (dirfd itself when ent is ""), whose stat is
 * st, in a directory so marked, is an xattr whiteout. */
bool sfs_wh_is_xwhiteout(int dirfd, const char *ent, const struct stat *st);

/* 1 when NAME is whited out in dirfd by a ".wh.NAME" file. */
int sfs_wh_has_aufs(int dirfd, const char *name);
/* 1 when the directory is opaque in either format. */
int sfs_wh_is_opaque(int dirfd);

/* What a directory says about the same directory below it. A redirect
 * is where its lower layers are: a path from the branch roots starting
 * with '/', or a name in its parent's lower layers (overlayfs writes
 * those). Read from trusted.stackfs.redirect, trusted.overlay.redirect
 * or user.overlay.redirect. */
struct sfs_dirmark {
	bool opaque;
	char *redirect;           /* malloc'd, or NULL */
	bool has_origin;          /* carries an origin record (a copy-up) */
	bool xwhiteouts;          /* marked to hold xattr whiteouts, as
				   * sfs_wh_dir_has_xwhiteouts answers */
};
/* 0 with *m, -EUCLEAN for a redirect that is no valid one
 * (sfs_redirect_ok), or -errno. */
int sfs_dirmark_read(int dirfd, struct sfs_dirmark *m);
/* Whether the n bytes of v are a redirect overlayfs or stackfs writes:
 * "/a/b" (components, none empty, "." or "..") or one such name. */
bool sfs_redirect_ok(const char *v, size_t n);
/* Whether a root process follows user.overlay.redirect too (a mount
 * given userxattr); one whose records are user.* always does. Set once,
 * before any branch is read. */
void sfs_dirmark_user_redirects(bool follow);
void sfs_dirmark_free(struct sfs_dirmark *m);
/* Records a redirect, in the format of the style. */
int sfs_redirect_set(int dirfd, const char *path, enum sfs_whiteout_style style);
/* Removes every opaque mark and redirect record of a directory, both
 * formats (the xattrs, and .wh..wh..opq in it). */
int sfs_dirmark_clear(int dirfd);

/* Hides NAME of the branches below: in aufs style creates ".wh.NAME"
 * (NAME itself, if present in dirfd, is left to the caller to remove
 * after this succeeded, so a crash leaves the old state); in overlay
 * style creates the device in workfd under a temporary name and renames
 * it onto NAME, replacing a non-directory NAME atomically. */
int sfs_wh_create(int dirfd, const char *name, int workfd,
		  enum sfs_whiteout_style style);
/* The style a whiteout of NAME is written in when the mount writes
 * `want`: the overlay device where ".wh.NAME" would not fit in NAME_MAX
 * (a 252- to 255-byte name); both forms are read everywhere. */
enum sfs_whiteout_style sfs_wh_style_for(const char *name, enum sfs_whiteout_style want);
/* The same, the overlay device made under the caller's name tmp in
 * workfd: a commit stages it beside its target, under a name its
 * recovery finds and removes (sfs_wh_create makes one up). */
int sfs_wh_create_as(int dirfd, const char *name, int workfd, const char *tmp,
		     enum sfs_whiteout_style style);
/* Removes a whiteout of NAME in either format: 1 if there was one. */
int sfs_wh_remove(int dirfd, const char *name);
/* Removes ".wh.NAME" alone (beside NAME once NAME is in place: moot):
 * 1 if there was one, 0 if not, or -errno. */
int sfs_wh_remove_aufs(int dirfd, const char *name);
/* Which whiteouts of NAME dirfd holds: SFS_WH_HAS_* bits, or -errno. */
#define SFS_WH_HAS_AUFS 1         /* a ".wh.NAME" file */
#define SFS_WH_HAS_DEV 2          /* NAME is a 0:0 character device */
int sfs_wh_find(int dirfd, const char *name);
/* Puts the entry fromdir/from at dirfd/name, whose whiteouts are `has`
 * (sfs_wh_find), in one step that replaces what the view shows: over a
 * device by RENAME_EXCHANGE (the device, now fromdir/from, is then
 * removed), else by RENAME_NOREPLACE; ".wh.NAME" is removed only after,
 * the entry winning over its whiteout meanwhile. 0 or -errno of the
 * rename (nothing moved then). */
int sfs_wh_replace(int fromdir, const char *from, int dirfd, const char *name,
		   int has);
/* Removes every whiteout and aufs marker in a directory (before it is
 * removed: the view showed it empty). dirfd may be O_PATH. */
int sfs_wh_clear_dir(int dirfd);
/* Marks a directory opaque in the given style. */
int sfs_wh_set_opaque(int dirfd, enum sfs_whiteout_style style);

#endif
