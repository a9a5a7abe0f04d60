/* stackfs umount: unmounts and waits for the daemon to exit, so that the
 * branches it held open are free when the command returns (tests detach
 * loop devices right after). */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/runtime.h"

#define SFS_FSTYPE "fuse.stackfs"
#define DAEMON_EXIT_TIMEOUT_MS 30000

/* An fd that becomes readable when the daemon exits; taken before the
 * unmount so a pid reused afterwards cannot be mistaken for it. -ENOSYS
 * on kernels before 5.3. */
static int daemon_pidfd(unsigned major, unsigned minor, pid_t *pid)
{
	long fd;
	int ret = sfs_runtime_pid(major, minor, pid);

	if (ret)
		return ret;
	fd = syscall(SYS_pidfd_open, *pid, 0);
	return fd < 0 ? -errno : (int)fd;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Waits for the daemon to exit: 0, or -ETIMEDOUT. Without a pidfd the
 * pid is polled, which a reused pid could fool; it is the fallback only. */
static int wait_daemon(int pidfd, pid_t pid)
{
	long long deadline = now_ms() + DAEMON_EXIT_TIMEOUT_MS;

	for (;;) {
		long long left = deadline - now_ms();
		struct pollfd p = { .fd = pidfd, .events = POLLIN };
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		if (pidfd >= 0) {
			r = poll(&p, 1, (int)left);
			if (r > 0)
				return 0;
			if (r < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		if (kill(pid, 0) < 0 && errno == ESRCH)
			return 0;
		usleep(20000);
	}
}

/* fusermount3 -u for users who mounted without privileges. */
static int run_fusermount(const char *mp)
{
	char *dotted = NULL;
	pid_t child;
	int status;

	/* a path that looks like an option must not be taken for one */
	if (mp[0] == '-' && asprintf(&dotted, "./%s", mp) < 0)
		return -ENOMEM;
	child = fork();
	if (child < 0) {
		free(dotted);
		return -errno;
	}
	if (child == 0) {
		execlp("fusermount3", "fusermount3", "-u", dotted ? dotted : mp, (char *)NULL);
		fprintf(stderr, "stackfs: umount: cannot run fusermount3: %s\n", strerror(errno));
		_exit(127);
	}
	free(dotted);
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	/* fusermount3 printed why it failed */
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ECANCELED;
}

/* A busy mount: which processes (and mounts on top) hold it, so the
 * user knows what to close; or only the errno when none can be seen. */
static void explain_busy(const char *mp, const struct sfs_mountinfo *m, bool said)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int n = f ? sfs_cli_print_holders(f, m) : -ENOMEM;

	if (f)
		fclose(f);
	if (n > 0)
		fprintf(stderr, "stackfs: umount: %s: busy, in use by:\n%s"
			"Close those files or leave those directories, then run stackfs umount "
			"again.\n", mp, text);
	else if (!said)
		fprintf(stderr, "stackfs: umount: %s: %s\n", mp, strerror(EBUSY));
	free(text);
}

/* The mount on mp, if it is a stackfs one: 0, or an exit code after
 * saying why not. */
static int find_stackfs(const char *mp, struct sfs_mountinfo *m)
{
	int ret = sfs_runtime_find_mountinfo(mp, m);

	if (ret == -ENOENT) {
		fprintf(stderr, "stackfs: umount: %s: not mounted\n", mp);
		return SFS_EXIT_FAIL;
	}
	if (ret) {
		fprintf(stderr, "stackfs: umount: %s: %s\n", mp, strerror(-ret));
		return SFS_EXIT_FAIL;
	}
	if (strcmp(m->fstype, SFS_FSTYPE)) {
		fprintf(stderr, "stackfs: umount: %s: not a stackfs mount (%s)\n", mp, m->fstype);
		return SFS_EXIT_FAIL;
	}
	return 0;
}

/* Unmounts mp: 0 or -errno (-ECANCELED: fusermount3 said why). */
static int unmount(const char *mp, const struct sfs_mountinfo *m)
{
	int ret = geteuid() == 0 ? (umount2(mp, 0) < 0 ? -errno : 0) : run_fusermount(mp);
	struct sfs_mountinfo now;

	if (ret == -EBUSY)
		explain_busy(mp, m, false);
	else if (ret == -ECANCELED && sfs_runtime_find_mountinfo(mp, &now) == 0 &&
		 now.id == m->id)
		explain_busy(mp, m, true); /* maybe busy: fusermount3 does not say how */
	else if (ret && ret != -ECANCELED)
		fprintf(stderr, "stackfs: umount: %s: %s\n", mp, strerror(-ret));
	return ret;
}

static int run_umount(int argc, char **argv)
{
	struct sfs_mountinfo m;
	const char *mp;
	pid_t pid = 0, stale = 0;
	int pidfd = -1, ret, code = SFS_EXIT_FAIL;

	if (argc > 1 && !strcmp(argv[1], "--"))
		argc--, argv++;
	if (argc < 2)
		return sfs_cli_usage_error(&sfs_cmd_umount, "missing MOUNTPOINT");
	if (argc > 2)
		return sfs_cli_usage_error(&sfs_cmd_umount, "unexpected argument '%s'", argv[2]);
	mp = argv[1];
	if (mp[0] == '-' && mp[1])
		return sfs_cli_usage_error(&sfs_cmd_umount, "unknown option '%s'", mp);

	ret = find_stackfs(mp, &m);
	if (ret)
		return ret;
	/* no pid file (or the daemon already died): nothing to wait for;
	 * a dead daemon's files are removed once its mount is gone */
	pidfd = daemon_pidfd(m.major, m.minor, &pid);
	if (pidfd == -ENOENT || pidfd == -ESRCH || pidfd == -EINVAL)
		pid = 0;
	else if (pidfd < 0 && pidfd != -ENOSYS) {
		fprintf(stderr, "stackfs: umount: %s: daemon pid %d: %s\n", mp, (int)pid, strerror(-pidfd));
		goto out;
	}
	if (sfs_runtime_daemon_gone(m.major, m.minor, &stale) != 1)
		stale = 0;

	if (unmount(mp, &m))
		goto out;
	if (stale)
		sfs_runtime_remove_stale(m.major, m.minor, stale);
	if (pid > 0 && !stale) {
		ret = wait_daemon(pidfd, pid);
		if (ret == -ETIMEDOUT) {
			fprintf(stderr, "stackfs: umount: %s: daemon pid %d did not exit within %d s\n",
				mp, (int)pid, DAEMON_EXIT_TIMEOUT_MS / 1000);
			goto out;
		}
		if (ret) {
			fprintf(stderr, "stackfs: umount: %s: waiting for daemon pid %d: %s\n",
				mp, (int)pid, strerror(-ret));
			goto out;
		}
		/* a daemon killed just before (still exiting when looked at)
		 * removed nothing itself: its files, only if it left them */
		sfs_runtime_remove_stale(m.major, m.minor, pid);
	}
	code = SFS_EXIT_OK;

out:
	if (pidfd >= 0)
		close(pidfd);
	return code;
}

const struct sfs_cmd sfs_cmd_umount = {
	.name = "umount",
	.alias = "unmount",
	.run = run_umount,
	.usage = "usage: stackfs umount MOUNTPOINT",
	.summary = "Unmount a stackfs mount and wait for its daemon to exit",
	.help =
		"Returns once the daemon has exited (at most 30 s), so the branches\n"
		"and their filesystems are no longer in use. Without root privileges\n"
		"it runs fusermount3 -u. A busy mount is left mounted and the\n"
		"processes using it are named (pid, command, what they hold), as\n"
		"fuser -m would. A mount whose daemon died (killed, crashed) is\n"
		"removed, with what the daemon left in the runtime directory.\n",
};
