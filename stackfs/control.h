/* The control channel of a live mount: a Unix stream socket beside the
 * pid file, $SFS_RUNTIME_DIR/<major>:<minor>/ctl. The daemon owns the
 * protocol; cli/client.c is its only other user.
 *
 * A request is its words, each ended by a NUL, then one more NUL:
 *   "list"                      the branches
 *   "status"                    branches, options, counters
 *   "add" DIR MODE POSITION     MODE rw|ro; POSITION a 0-based index,
 *                               "top" or "bottom"
 *   "remove" BRANCH FORCE       BRANCH a path or a branch id; FORCE 0|1
 *   "mode" BRANCH MODE
 * A reply is "OK\n" and a body of "key\tvalue" lines (list: one line
 * per branch, "pos\tpath\tmode\tid\tfstype\tfree_bytes"), or
 * "ERR <errno name> <message>\n". One request per connection.
 * Anyone who can connect may list and ask for status; only root and the
 * user who mounted may change branches (SO_PEERCRED), others get EPERM. */
#ifndef SFS_CONTROL_H
#define SFS_CONTROL_H

#define SFS_CTL_NAME "ctl"
#define SFS_CTL_MAX_REQUEST 8192
#define SFS_CTL_MAX_REPLY (1 << 20)

#endif
