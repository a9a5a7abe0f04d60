/* The `stackfs` command: one handler per subcommand behind the dispatch
 * table in main.c. Handlers return an exit code. */
#ifndef SFS_CLI_H
#define SFS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Exit codes scripts can rely on. */
#define SFS_EXIT_OK    0 /* success */
#define SFS_EXIT_FAIL  1 /* the operation failed */
#define SFS_EXIT_USAGE 2 /* bad command line */

/* One option of a command: the table its --help prints and main.c
 * checks the command line against before the command runs, so that what
 * a command accepts is what its help lists (tests/98-docs.bats holds
 * stackfs(1), the README and the completion to that help). */
struct sfs_flag {
	const char *sub;                   /* the subcommand it is of (branch ADD), or NULL */
	const char *name;                  /* "--json", "-o" */
	const char *arg;                   /* its argument's name, or NULL */
	const char *help;                  /* lines ending in '\n' */
};

struct sfs_cmd {
	const char *name;
	const char *alias;                 /* another name, or NULL */
	int (*run)(int argc, char **argv); /* argv[0] is the command name */
	const char *usage;                 /* "stackfs NAME ARGS" lines */
	const char *summary;               /* one line for the command list */
	const char *help;                  /* details after the usage, or NULL */
	const struct sfs_flag *flags;      /* ended by { 0 }; NULL: none */
	bool subcommands;                  /* argv[1] is a subcommand (branch) */
	bool mount_options;                /* its help lists the -o options */
	int usage_exit;                    /* exit code of a usage error, 0: 2 */
};

extern const struct sfs_cmd sfs_cmd_mount;
extern const struct sfs_cmd sfs_cmd_umount;
extern const struct sfs_cmd sfs_cmd_fsck;
extern const struct sfs_cmd sfs_cmd_branch;
extern const struct sfs_cmd sfs_cmd_status;
extern const struct sfs_cmd sfs_cmd_diff;
extern const struct sfs_cmd sfs_cmd_commit;

/* mount_branches.c, for diff, commit, fsck and branch: the branches of
 * a live mount, highest first, as daemon pid's command line gives them
 * (BRANCHES or -o upperdir=,lowerdir=). 0 or -errno with a message in
 * err. */
struct mbranch {
	char *path;
	bool rw;
	char *workdir;            /* holding its metadata dir, or NULL */
};
int sfs_mbranches_of_daemon(pid_t pid, struct mbranch **out, size_t *n,
			     char *err, size_t errlen);
void sfs_mbranches_free(struct mbranch *v, size_t n);
/* The branches of the live stackfs mount on mp, highest first: the
 * daemon's own list (control channel), else its command line. 0 or
 * -errno with a message in err. */
int sfs_mbranches_of_mount(const char *mp, unsigned ma, unsigned mi,
			    struct mbranch **v, size_t *n, char *err, size_t errlen);

/* cmd_diff.c: the changes of the union u (sfs_changes_list's result),
 * with the progress line on a terminal and a line on stderr for each
 * entry that could not be read (*problems counts them). */
struct sfs_ch_union;
struct sfs_changes;
int sfs_diff_collect(struct sfs_ch_union *u, struct sfs_changes *ch, unsigned *problems);
/* diff_layer.c: `stackfs diff --format=oci`: the changes of u as an OCI
 * image layer on stdout, messages on stderr. An exit code. */
int sfs_diff_layer(struct sfs_ch_union *u);

/* daemons.c: a running stackfsd (not this process) that holds an fd of
 * the directory dir (a branch it uses), by the fds every stackfsd holds:
 * its pid, or 0. */
pid_t sfs_cli_daemon_holding(const struct stat *dir);
/* The same, also by the command lines of the mounts published under the
 * runtime directory (a branch a ro mount uses but holds no fd of at
 * the moment): its pid, or 0. */
pid_t sfs_cli_daemon_using(const struct stat *dir);

/* view.c: 1 when fd is inside a fuse.stackfs mount (a view, not a
 * branch), with that mount's mount point in mp; 0 when not; -errno. */
int sfs_cli_stackfs_view(int fd, char *mp, size_t mplen);

/* output.c */
/* s as a JSON string (NULL: null). Every JSON string of the command is
 * written by this one function: UTF-8 as it is, other bytes as \udcXX
 * (Python's surrogateescape), control characters as \u00XX. */
void sfs_json_str(FILE *f, const char *s);
void sfs_human_size(unsigned long long v, char *buf, size_t len);
/* A path field of a control reply (escaped by the daemon, control.h): as
 * a JSON string of its exact bytes; as a column of text (malloc'd, NULL
 * on ENOMEM), with control characters, backslashes and spaces written
 * \ooo as /proc/mounts does. */
void sfs_json_field(FILE *f, const char *field);
char *sfs_text_field(const char *field);

/* One branch line of a list or status reply (control.h), split in place. */
struct sfs_branch_row {
	char *pos, *path, *mode, *id, *fstype, *free_bytes;
	char *workdir;            /* holding its metadata dir (escaped), or NULL */
};
/* 0, or -EPROTO for a line without six fields or with a number that is
 * not decimal digits. */
int sfs_branch_row(char *line, struct sfs_branch_row *r);
/* The row as a JSON object: position, path, mode, id, fstype, free_bytes,
 * workdir (null: the metadata dir, if any, is in the branch root). */
void sfs_json_branch(FILE *f, const struct sfs_branch_row *r);

/* Sends a request to the daemon serving mount point mp (control channel,
 * common/control.h): 0 with the reply's body (malloc'd), or -errno with
 * a message naming the mount point and the daemon's reason. */
int sfs_ctl_call(const char *mp, const char *const *words, char **body,
		 char *err, size_t errlen);

/* When the daemon of the stackfs mount ma:mi on mp is gone (killed,
 * crashed: its mount is left, answering ENOTCONN): true, with a message
 * saying so and to run `stackfs umount MP` in err. */
bool sfs_cli_gone_msg(const char *mp, unsigned ma, unsigned mi, char *err, size_t errlen);
/* Prints a failed sfs_ctl_call's message: "stackfs: CMD [SUB]: ERR
 * (errno text)", without the errno text when the daemon is gone. */
void sfs_cli_ctl_error(const char *cmd, const char *sub, const char *err, int ret);
/* When err (ENOTCONN) comes from path being in a stackfs mount whose
 * daemon is gone: true, with that message in msg. */
bool sfs_cli_gone_path(const char *path, int err, char *msg, size_t len);

/* holders.c: prints to f one line per process (pid, command, what it
 * holds: an open file, its working or root directory, executable, a
 * mapped file) and per mount on top that keeps the mount m busy, at
 * most 20 and a count of the rest. Returns how many it found, or -errno. */
struct sfs_mountinfo;
int sfs_cli_print_holders(FILE *f, const struct sfs_mountinfo *m);

/* Prints the usage and help of cmd to stdout. */
void sfs_cli_cmd_help(const struct sfs_cmd *cmd);
/* flags.c: cmd's options, as its help lists them (after its text). */
void sfs_cli_flags_help(const struct sfs_cmd *cmd);
/* flags.c: 0 when every option of argv (argv[0] the command's name, up
 * to a "--") is in cmd's table; else a usage error naming the first
 * that is not, and cmd's usage exit code. */
int sfs_cli_check_flags(const struct sfs_cmd *cmd, int argc, char **argv);
/* flags.c: the arguments "[--json] MOUNTPOINT" of argv[1..argc) (status,
 * branch list) into *json and *mp: 0, or a usage error of cmd, its
 * message after `what` ("" or "list: "). */
int sfs_cli_mp_args(const struct sfs_cmd *cmd, const char *what, int argc, char **argv,
		    bool *json, const char **mp);
/* A usage error of cmd: "stackfs: NAME: MSG" and the usage line on
 * stderr. Returns SFS_EXIT_USAGE. */
int sfs_cli_usage_error(const struct sfs_cmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Runs the daemon with argv (argv[0] is replaced); returns only on
 * failure, with an exit code after printing why. */
int sfs_cli_exec_daemon(int argc, char **argv);

/* The path of the stackfsd binary to run (malloc'd), or NULL on ENOMEM:
 * $STACKFS_DAEMON if set, else stackfsd beside this executable if it can
 * be run, else SFS_LIBEXECDIR/stackfsd. */
char *sfs_daemon_path(void);

#endif
