/* The daemon: parse the command line, open and check the branches, mount,
 * go to the background once the mount is live, serve requests on the
 * multi-threaded loop, and clean up when unmounted. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bio.h"
#include "common/escape.h"
#include "stackfs/listing/dirahead.h"
#include "stackfs/listing/listings.h"
#include "stackfs/ops/ops.h"
#include "common/runtime.h"
#include "xattr/records.h"

static int root_init(struct sfs_snap *s)
{
	struct sfs_stack *st;
	struct stat id;
	int ret = sfs_root_stack(s, &st, &id);

	if (ret == 0)
		ret = sfs_node_root_init(st, &id);
	return ret;
}

/* Opens the branches; nothing on disk changes here. Exit code or 0. */
static int branches_open(const struct sfs_opts *o, struct sfs_snap **out)
{
	struct sfs_branch_spec *specs = NULL;
	char err[SFS_MSG_MAX];
	size_t n = 0;
	int ret = sfs_branch_spec_parse(o->branches, &specs, &n, err, sizeof(err));

	/* overlay-style: the spec's first branch is upperdir= */
	if (ret == 0 && o->workdir)
		specs[0].workdir = o->workdir;
	if (ret == 0)
		ret = sfs_snap_open(specs, n, o->mountpoint, out, err, sizeof(err));
	if (ret < 0)
		fprintf(stderr, "stackfs: %s\n", err);
	sfs_branch_spec_free(specs, n);
	return ret < 0 ? 1 : 0;
}

/* The FILE of -o log=, opened now: its errors are the user's to see,
 * and after the branches, so that a refused mount creates no file. From
 * here on lines go to the log (and, until the daemon is in the
 * background, errors and warnings to the terminal too): what happens
 * while the mount is made belongs in the log. */
static int log_open(const struct sfs_opts *o)
{
	char err[SFS_MSG_MAX];

	if (o->log_to == SFS_LOG_TO_FILE && sfs_log_open_file(o->log_file, err, sizeof(err)) < 0) {
		sfs_errmsg("log file %s", err);
		return 1;
	}
	sfs_log_setup(o);
	return 0;
}

/* Checks the mount point and makes it absolute: the daemon leaves its
 * working directory when it goes to the background, and publishes its
 * pid under the mount's canonical path. */
static int mountpoint_check(char **mp)
{
	struct stat st;
	int err = stat(*mp, &st) < 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
	char *abs;

	if (err) {
		sfs_errmsg("mountpoint %s: %s", *mp, strerror(err));
		return 1;
	}
	abs = realpath(*mp, NULL);
	if (!abs) {
		sfs_errmsg("mountpoint %s: %s", *mp, strerror(errno));
		return 1;
	}
	free(*mp);
	*mp = abs;
	return 0;
}

/* Forks; the parent exits with the status the child sends once the
 * daemon is published and serving, so `stackfs mount` returns when the
 * mount is usable and the pid file names the right process. */
static int daemonize(int *notify_fd)
{
	int p[2];
	pid_t pid;
	char c = 1;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			c = 1;
		_exit(c);
	}
	close(p[0]);
	setsid();
	if (chdir("/") < 0)
		return -errno;
	*notify_fd = p[1];
	return 0;
}

/* stdin and stdout to /dev/null, and stderr unless the log goes there
 * (-o log=stderr: a supervisor reading the daemon's stderr). */
static void detach_stdio(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	dup2(fd, 0);
	dup2(fd, 1);
	if (!sfs_log_keeps_stderr())
		dup2(fd, 2);
	close(fd);
}

/* Said on the terminal too (the log shows it there only with -f): a user
 * whose runtime directory is missing learns it at mount, not from a
 * status that finds nothing later. */
static void publish_failed(int err)
{
	char msg[SFS_MSG_MAX];

	snprintf(msg, sizeof(msg), "cannot publish pid under %s: %s (stackfs status, branch "
		 "and umount will not find this mount; set XDG_RUNTIME_DIR or "
		 "STACKFS_RUNTIME_DIR to a directory only you can write)",
		 sfs_runtime_base(), strerror(-err));
	if (!sfs_log_keeps_stderr())
		fprintf(stderr, "stackfs: warning: %s\n", msg);
	sfs_log(SFS_LOG_WARN, "%s", msg);
}

static int serve(struct fuse_session *se, const struct sfs_opts *o)
{
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	int notify = -1, ret;

	if (!o->foreground && daemonize(&notify) < 0)
		return 1;
	if ((ret = sfs_runtime_publish(o->mountpoint, getpid())) < 0)
		publish_failed(ret);
	else if (sfs_control_start() < 0)
		sfs_log(SFS_LOG_WARN, "cannot start the control channel");
	/* a thread: after the fork into the background */
	if ((ret = sfs_coherent_start()) < 0)
		sfs_log(SFS_LOG_ERR, "-o coherent: cannot start the watcher: %s (changes made "
			"directly in the branches show after the timeout)", strerror(-ret));
	/* before the loop: the INIT reply must find the window set */
	/* the window is a file of /sys/class/bdi, root's to write */
	if (o->readahead_kb && sfs_records_privileged() &&
	    (ret = sfs_readahead_set(o->mountpoint, o->readahead_kb)) < 0)
		sfs_log(SFS_LOG_WARN, "cannot set the readahead window to %u KiB: %s",
			o->readahead_kb, strerror(-ret));
	if (notify >= 0) {
		detach_stdio();
		sfs_log_detached();
		if (write(notify, "", 1) != 1)
			sfs_log(SFS_LOG_WARN, "cannot tell the parent the mount is live");
		close(notify);
	}
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	ret = fuse_session_loop_mt(se, cfg);
	sfs_uring_stop();
	sfs_dirahead_stop();
	sfs_listings_clear();
	fuse_loop_cfg_destroy(cfg);
	sfs_coherent_stop();
	sfs_control_stop();
	sfs_runtime_unpublish();
	return ret == 0 ? 0 : 1;
}

static int run(struct fuse_args *args, struct sfs_opts *o)
{
	struct fuse_session *se;
	char err[SFS_MSG_MAX];
	int ret;

	/* First, before anything is opened: libfuse refuses here the options
	 * it does not know and bad values of its own, a usage error like ours
	 * (exit 2). It fails otherwise only without memory. */
	se = fuse_session_new(args, &sfs_ops, sizeof(sfs_ops), NULL);
	if (!se)
		return 2;
	ret = mountpoint_check(&o->mountpoint);
	if (ret == 0)
		ret = branches_open(o, &sfs_m.snap);
	if (ret == 0 && sfs_mountflags_check(sfs_m.snap, err, sizeof(err)) < 0) {
		sfs_errmsg("%s", err);
		ret = 1;
	}
	sfs_export = o->nfs_export;
	if (ret == 0 && sfs_export && sfs_export_check(sfs_m.snap, err, sizeof(err)) < 0) {
		sfs_errmsg("%s", err);
		ret = 1;
	}
	if (ret == 0)
		ret = log_open(o);
	/* refused before the mount: a view that silently goes stale is what
	 * the option is there to prevent */
	if (ret == 0 && o->coherent && sfs_coherent_open(sfs_m.snap, err, sizeof(err)) < 0) {
		sfs_errmsg("%s", err);
		ret = 1;
	}
	if (ret)
		goto out;
	sfs_compat_log_notes();
	sfs_mountflags_rootless_note(sfs_runtime_base());
	sfs_timeout = o->timeout;
	sfs_do_set_logger(sfs_log_line);
	if (o->trace)
		sfs_do_set_trace(true);
	umask(0); /* modes arrive with the caller's umask applied */
	sfs_raise_nofile();
	sfs_fdcache_init();
	/* what the parts above the node table keep per node follows it */
	sfs_nodes_hook(&sfs_cohino_hooks);
	sfs_nodes_hook(&sfs_listings_hooks);
	if (sfs_nodes_init() < 0 || root_init(sfs_m.snap) < 0) {
		sfs_errmsg("%s", strerror(ENOMEM));
		ret = 1;
		goto out;
	}
	ret = fuse_session_mount(se, o->mountpoint) != 0;
	/* the kernel takes writeback caching or passthrough, not both: an
	 * explicit -o writeback turns passthrough off */
	/* the kernel opens backing files for CAP_SYS_ADMIN on the host only:
	 * a rootless daemon does not ask for passthrough at all */
	sfs_uring_want(!o->nouring, o->uring_asked);
	if (!ret && sfs_pt_setup(se, !o->nopassthrough && !o->writeback &&
				 sfs_records_privileged()) < 0) {
		sfs_errmsg("cannot hook the FUSE device");
		fuse_session_unmount(se);
		ret = 1;
	}
	sfs_m.se = se;
	if (!ret && sfs_snap_prepare_meta(sfs_m.snap, o->whiteout, o->upgrade,
					  err, sizeof(err)) < 0) {
		fprintf(stderr, "stackfs: %s\n", err);
		fuse_session_unmount(se);
		ret = 1;
	}
	if (!ret && sfs_export)
		sfs_xnames_load(sfs_m.snap);
	if (!ret && fuse_set_signal_handlers(se) == 0) {
		ret = serve(se, o);
		if (sfs_export) {
			/* the names of the nodes still cached, then all of them kept */
			sfs_nodes_remember();
			sfs_xnames_save(sfs_m.snap);
		}
		fuse_remove_signal_handlers(se);
		fuse_session_unmount(se);
	}
	sfs_m.se = NULL;
out:
	sfs_coherent_stop();
	fuse_session_destroy(se);
	return ret;
}

/* libfuse's messages (bad values of its options, -d's request log, its
 * errors while serving): into our log, each kept on its line whatever an
 * option value holds. libfuse writes some lines in pieces (its unknown
 * option message: "...option(s): `", "-o", " NAME'\n"): a thread's
 * pieces are gathered up to the newline. Before the log is set up that
 * is stderr. */
static void fuse_log_ours(enum fuse_log_level level, const char *fmt, va_list ap)
{
	static __thread char line[SFS_LOG_LINE_MAX];
	static __thread size_t len;
	char piece[SFS_LOG_LINE_MAX];
	int n = vsnprintf(piece, sizeof(piece), fmt, ap);
	size_t plen = n < 0 ? 0 : (size_t)n < sizeof(piece) ? (size_t)n : sizeof(piece) - 1;
	bool end = plen && piece[plen - 1] == '\n';

	if (end)
		piece[--plen] = '\0';
	if (len + plen >= sizeof(line))
		plen = sizeof(line) - 1 - len;
	memcpy(line + len, piece, plen);
	len += plen;
	line[len] = '\0';
	if (!end && len < sizeof(line) - 1)
		return;
	sfs_log((int)level, "%s", line);
	len = 0;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct sfs_opts *o = &sfs_m.opts;
	int ret;

	fuse_set_log_func(fuse_log_ours);
	/* before the options (userxattr's meaning) and any branch is read */
	sfs_records_init();
	if (sfs_opts_parse(&args, o) < 0) {
		ret = 2;
	} else if (o->show_help) {
		sfs_opts_usage("stackfs mount");
		ret = 0;
	} else if (o->show_version) {
		printf("stackfs %s (libfuse %s)\n", SFS_VERSION, fuse_pkgversion());
		ret = 0;
	} else if (!o->branches || !o->mountpoint) {
		fprintf(stderr, "stackfs: missing %s\nusage: stackfs mount [-f] [-o OPTIONS] BRANCHES MOUNTPOINT\n",
			o->branches ? "MOUNTPOINT" : "BRANCHES and MOUNTPOINT");
		ret = 2;
	} else {
		/* root's mount follows the branches' user.overlay.redirect
		 * only when told they are meant (whiteout/dirmark.c) */
		sfs_dirmark_user_redirects(o->userxattr);
		ret = run(&args, o);
	}
	if (sfs_node_root())
		sfs_nodes_destroy();
	if (sfs_m.snap)
		sfs_snap_put(sfs_m.snap);
	fuse_opt_free_args(&args);
	sfs_opts_free(o);
	sfs_idmap_free();
	return ret;
}
