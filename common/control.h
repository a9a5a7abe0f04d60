/* The control channel of a live mount: a Unix stream socket beside the
 * pid file, $SFS_RUNTIME_DIR/<major>:<minor>/ctl. The daemon owns the
 * protocol (stackfs/control/control.c serves it); cli/client.c is its only other
 * user.
 *
 * A request is its words, each ended by a NUL, then one more NUL:
 *   "list"                      the branches
 *   "status"                    branches, options, counters
 *   "add" DIR MODE POSITION     MODE rw|ro; POSITION "top", "bottom" or
 *                               an index in decimal digits, 0 (top) to
 *                               the number of branches (bottom)
 *   "remove" BRANCH FORCE       BRANCH a path or a branch id; FORCE 0|1
 *   "mode" BRANCH MODE
 * A reply is "OK\n" and a body of "key\tvalue" lines (list: one line
 * per branch, "pos\tpath\tmode\tid\tfstype\tfree_bytes\tworkdir",
 * workdir the directory holding the branch's metadata dir when that is
 * not the branch root (an overlay-style mount's workdir=), else "-"; a
 * daemon before it sent the first six fields only), or
 * "ERR <errno name> <message>\n". One request per connection.
 * status: "mountpoint", "whiteout", ..., "log" (syslog, stderr or the
 * log file's path), the branches as "branch\t" and a list line, the
 * counters ("failures" and "answers" in all, then "error.ENAME" for
 * failures and "answer.ENAME" for expected answers such as ENODATA),
 * then the last errors and warnings logged, oldest first, as
 * "last_error\tTIME\tLEVEL\tMESSAGE" (TIME: seconds since the epoch,
 * LEVEL: error or warning, MESSAGE escaped as paths are).
 * Paths in a reply (branch paths, the mount point) are escaped as
 * /proc/mounts does, so that a tab or a newline in a path cannot split a
 * field or a line: a control character (below 0x20, 0x7f) and a
 * backslash are written \ooo, three octal digits (a tab \011, a newline
 * \012, a backslash \134); nothing else is (sfs_escape with
 * SFS_ESC_BACKSLASH; sfs_unescape reverses it). The message of an ERR
 * line is for people: one line, its control characters escaped the same
 * way, its backslashes as they are.
 * Anyone who can connect may list and ask for status; only root and the
 * user who mounted may change branches (SO_PEERCRED), others get EPERM. */
#ifndef SFS_CONTROL_H
#define SFS_CONTROL_H

#define SFS_CTL_NAME "ctl"
#define SFS_CTL_MAX_REQUEST 8192
#define SFS_CTL_MAX_REPLY (1 << 20)

/* Each connection is served by a thread of its own, at most
 * SFS_CTL_MAX_CONN at once; peers who may not change branches (not root,
 * not the daemon's user) share SFS_CTL_MAX_UNPRIV of them and past that
 * get "ERR EAGAIN" at once, so they can never take the slots root needs;
 * one such user has at most SFS_CTL_MAX_PER_USER of the shared ones, so
 * that no user can take them all from the others either.
 * Each connection has deadlines: the whole request must arrive within
 * SFS_CTL_REQUEST_MS of the accept (else "ERR ETIMEDOUT" and the
 * connection is closed), and the whole reply must be taken within
 * SFS_CTL_REPLY_MS of being ready, so a client that trickles bytes or
 * never reads holds its slot for at most their sum; `stackfs` sends its
 * request at once. */
#define SFS_CTL_MAX_CONN 32
#define SFS_CTL_MAX_UNPRIV 24
#define SFS_CTL_MAX_PER_USER 4
#define SFS_CTL_REQUEST_MS 2000
#define SFS_CTL_REPLY_MS 2000

#endif
