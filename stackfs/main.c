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
#include "stackfs/escape.h"
#include "stackfs/ops.h"
#include "stackfs/runtime.h"

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

	if (ret == 0)
		ret = sfs_snap_open(specs, n, o->mountpoint, out, err, sizeof(err));
	if (ret < 0)
		fprintf(stderr, "stackfs: %s\n", err);
	sfs_branch_spec_free(specs, n);
	return ret < 0 ? 1 : 0;
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

static void detach_stdio(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	close(fd);
}

static int serve(struct fuse_session *se, const struct sfs_opts *o)
{
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	int notify = -1, ret;

	if (!o->foreground && daemonize(&notify) < 0)
		return 1;
	sfs_log_set_foreground(o->foreground, o->debug);
	if (sfs_runtime_publish(o->mountpoint, getpid()) < 0)
		sfs_log(SFS_LOG_WARN, "cannot publish pid under %s", sfs_runtime_base());
	else if (sfs_control_start() < 0)
		sfs_log(SFS_LOG_WARN, "cannot start the control channel");
	/* before the loop: the INIT reply must find the window set */
	if (o->readahead_kb && (ret = sfs_readahead_set(o->mountpoint, o->readahead_kb)) < 0)
		sfs_log(SFS_LOG_WARN, "cannot set the readahead window to %u KiB: %s",
			o->readahead_kb, strerror(-ret));
	if (notify >= 0) {
		detach_stdio();
		if (write(notify, "", 1) != 1)
			sfs_log(SFS_LOG_WARN, "cannot tell the parent the mount is live");
		close(notify);
	}
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	ret = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
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
	if (ret)
		goto out;
	sfs_timeout = o->timeout;
	sfs_do_set_logger(sfs_log_line);
	if (o->trace)
		sfs_do_set_trace(true);
	umask(0); /* modes arrive with the caller's umask applied */
	sfs_raise_nofile();
	sfs_fdcache_init();
	if (sfs_nodes_init() < 0 || root_init(sfs_m.snap) < 0) {
		sfs_errmsg("%s", strerror(ENOMEM));
		ret = 1;
		goto out;
	}
	ret = fuse_session_mount(se, o->mountpoint) != 0;
	/* the kernel takes writeback caching or passthrough, not both: an
	 * explicit -o writeback turns passthrough off */
	if (!ret && sfs_pt_setup(se, !o->nopassthrough && !o->writeback) < 0) {
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
	if (!ret && fuse_set_signal_handlers(se) == 0) {
		ret = serve(se, o);
		fuse_remove_signal_handlers(se);
		fuse_session_unmount(se);
	}
	sfs_m.se = NULL;
out:
	fuse_session_destroy(se);
	return ret;
}

/* libfuse's messages (options it refuses, -d's request log): each kept
 * on its line, as ours are, whatever an option value holds. */
static void fuse_log_escaped(enum fuse_log_level level, const char *fmt, va_list ap)
{
	char *msg = NULL, *esc;
	size_t len;
	int nl;

	(void)level;
	if (vasprintf(&msg, fmt, ap) < 0)
		return;
	len = strlen(msg);
	nl = len && msg[len - 1] == '\n';
	if (nl)
		msg[len - 1] = '\0';
	esc = sfs_escape_dup(msg, 0);
	fprintf(stderr, "%s%s", esc ? esc : "", nl ? "\n" : "");
	free(esc);
	free(msg);
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct sfs_opts *o = &sfs_m.opts;
	int ret;

	fuse_set_log_func(fuse_log_escaped);
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
		ret = run(&args, o);
	}
	if (sfs_node_root())
		sfs_nodes_destroy();
	if (sfs_m.snap)
		sfs_snap_put(sfs_m.snap);
	fuse_opt_free_args(&args);
	free(o->branches);
	free(o->mountpoint);
	return ret;
}
