/* The branch seam: the one door through which the daemon and the tools
 * (fsck, diff, commit) reach into a branch. Every namespace or metadata
 * call on a branch's directory fd goes through one of these wrappers, as
 * every call into a layer goes through overlayfs's ovl_do_* helpers, so
 * that one switch shows exactly what touched a branch:
 *
 *  - each returns what its syscall returns on success (0, an fd, a
 *    length) and -errno on failure, with errno left as the call set it
 *    (callers written for the syscall's own convention stay right);
 *  - with tracing on (-o trace, or STACKFS_TRACE=1 in the environment)
 *    each call is logged: operation, branch, path in the branch, result;
 *  - a failure that is not one of the call's expected answers (ENOENT of
 *    a probe, EEXIST of an exclusive create, ...) is logged with the
 *    operation, branch, path and errno name, at most 10 lines a second.
 *
 * The branch and path of a call are found from the directory fd only
 * when a line is written (its /proc/self/fd link, matched against the
 * branch roots registered with sfs_do_register), so a call costs nothing
 * more than the syscall when nothing is logged. Names are not resolved
 * here: sfs_do_open is the only call that turns a name into an fd, one
 * component, beneath the directory, never through a symlink or a mount
 * point (DESIGN.md decision 2). */
#ifndef SFS_COMMON_BIO_H
#define SFS_COMMON_BIO_H

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

/* ---- tracing and logging -------------------------------------------- */

/* Where lines go: level as syslog's (3 error, 4 warning, 7 debug). The
 * default writes "stackfs: LINE" to stderr. Traces are at level 6. */
void sfs_do_set_logger(void (*log)(int level, const char *line));
/* Tracing on or off (its initial state: STACKFS_TRACE=1). */
void sfs_do_set_trace(bool on);
bool sfs_do_tracing(void);
/* Names a branch root for traces and logs (id 0: no stable id). The
 * path is copied; registering an id again replaces its path. */
int sfs_do_register(uint32_t id, const char *root);
void sfs_do_unregister(uint32_t id);
/* Calls and failures logged so far (status shows them). */
uint64_t sfs_do_failures(void);

/* ---- opening a name ------------------------------------------------- */

/* openat2 of a relative name beneath dirfd: RESOLVE_BENEATH, no
 * symlink, no magic link, no mount point (-EXDEV, without a request to
 * the mounted filesystem); O_NOFOLLOW and O_CLOEXEC added. "" and an
 * absolute name are -EINVAL; "." is the directory itself. */
int sfs_do_open(int dirfd, const char *name, int flags, mode_t mode);
/* The directory dirfd/name (name "." for dirfd itself) opened to read
 * its entries: sfs_do_open, then fdopendir. NULL with errno set. */
DIR *sfs_do_opendir(int dirfd, const char *name);
/* A nameless file in directory dirfd (O_TMPFILE), linkable. */
int sfs_do_tmpfile(int dirfd, int flags, mode_t mode);
/* Reopens the inode an O_PATH fd holds, with real access flags (its
 * /proc/self/fd magic link names exactly that inode). */
int sfs_do_reopen(int fd, int flags);
/* The same for a directory (O_DIRECTORY added), by "." where allowed. */
int sfs_do_reopen_dir(int fd, int flags);

/* ---- the namespace -------------------------------------------------- */

int sfs_do_mkdirat(int dirfd, const char *name, mode_t mode);
int sfs_do_mknodat(int dirfd, const char *name, mode_t mode, dev_t dev);
int sfs_do_symlinkat(const char *target, int dirfd, const char *name);
int sfs_do_linkat(int olddirfd, const char *oldname, int newdirfd,
		  const char *newname, int flags);
/* Links the inode fd holds (O_PATH, or an O_TMPFILE) in as dirfd/name:
 * AT_EMPTY_PATH, or through /proc without CAP_DAC_READ_SEARCH. */
int sfs_do_link_fd(int fd, int dirfd, const char *name);
int sfs_do_unlinkat(int dirfd, const char *name, int flags);
/* renameat2; RENAME_NOREPLACE alone is kept where the filesystem has no
 * flags (EINVAL: a FUSE filesystem without RENAME2): by link and unlink
 * for a non-directory, after a check for a directory (bio.c). */
int sfs_do_renameat2(int olddirfd, const char *oldname, int newdirfd,
		     const char *newname, unsigned flags);
/* renameat2(dirfd, from, dirfd, to, flags) as it is, for a probe of what
 * the filesystem can do: 0 or -errno; EINVAL, EPERM, EOPNOTSUPP are
 * answers, not failures. */
int sfs_do_rename_probe(int dirfd, const char *from, const char *to, unsigned flags);

/* ---- attributes ----------------------------------------------------- */

/* lstat of name beneath dirfd that never crosses a mount point: the
 * sfs_do_open above (O_PATH), then fstat. A stat by name would be a
 * request to a filesystem mounted there, whose server may never answer. */
int sfs_do_stat(int dirfd, const char *name, struct stat *st);
/* fstat of the fd itself, O_PATH too, never following a symlink. */
int sfs_do_fstat(int fd, struct stat *st);
struct statfs;
int sfs_do_fstatfs(int fd, struct statfs *sf);
int sfs_do_fchownat(int dirfd, const char *name, uid_t uid, gid_t gid, int flags);
/* chmod of the inode fd holds (O_PATH too; never a symlink). */
int sfs_do_fchmod(int fd, mode_t mode);
/* Truncates the file fd holds: ftruncate of an open fd, truncate of the
 * inode an O_PATH fd holds. */
int sfs_do_truncate(int fd, off_t size);
/* name NULL: the times of the open file dirfd (futimens). */
int sfs_do_utimensat(int dirfd, const char *name, const struct timespec tv[2], int flags);
ssize_t sfs_do_readlinkat(int dirfd, const char *name, char *buf, size_t len);
/* statx of the fd itself (O_PATH too, never following a symlink): its
 * stat and the id of the mount it is on (mnt may be NULL). */
int sfs_do_statx(int fd, struct stat *st, uint64_t *mnt);
/* statx of the entry name of directory dirfd (one component), without
 * opening it: never following a symlink or an automount, and -EXDEV for
 * a mount point, as sfs_do_open; what is mounted there is asked nothing
 * (AT_STATX_DONT_SYNC: its cached attributes are read, then refused). */
int sfs_do_statx_at(int dirfd, const char *name, struct stat *st);
/* The inode attributes statx reports of fd (STATX_ATTR_APPEND,
 * STATX_ATTR_IMMUTABLE...: chattr's flags without opening the file), 0
 * where the filesystem reports none. 0 or -errno. */
int sfs_do_statx_attrs(int fd, uint64_t *attrs);
/* listxattrat of the entry name of directory dirfd (one component),
 * not following a symlink: the list's length, or -errno (-ENOSYS on a
 * kernel before 6.13, which lacks the call). By name, so a mount point
 * there would be crossed: only for a name the caller has just opened
 * with sfs_do_open, which refuses one (fsck's walk, where one call in
 * place of an open, a stat and a /proc path per attribute pays). */
ssize_t sfs_do_listxattrat(int dirfd, const char *name, char *list, size_t size);
int sfs_do_name_to_handle(int dirfd, const char *name, void *fh, int *mount_id, int flags);
int sfs_do_open_by_handle(int mount_fd, void *fh, int flags);

/* ---- a copy's data (union/datacopy.c) ------------------------------- */

/* FICLONE of in into out: a refusal (no reflink here) is an answer. */
int sfs_do_clone(int out, int in);
/* copy_file_range of len bytes at the offsets given (advanced); EXDEV,
 * ENOSYS, EOPNOTSUPP and EINVAL (no such copy here) are answers. */
ssize_t sfs_do_copy_range(int in, off_t *off_in, int out, off_t *off_out, size_t len);
ssize_t sfs_do_pwrite(int fd, const void *buf, size_t len, off_t off);
int sfs_do_fallocate(int fd, int mode, off_t off, off_t len);

/* ---- for xattr/: the same tracing and logging for attribute calls --- */

/* Records an attribute call on fd/name (op "setxattr", ...) that the
 * xattr library made: result r (>= 0 or -errno); expected: r is one of
 * the answers the caller expects. Returns r. */
long sfs_do_note(const char *op, int fd, const char *name, const char *what, long r,
		 bool expected);

#endif
