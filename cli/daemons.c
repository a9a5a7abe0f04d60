/* The running stackfs daemons, as the command sees them: which one uses
 * a directory as a branch. commit refuses while one does, fsck --repair
 * too (a lock says so only for a rw branch of a current format). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/runtime.h"

/* Whether path names the directory st. */
static bool same_dir(const char *path, const struct stat *st)
{
	struct stat s;

	return stat(path, &s) == 0 && s.st_dev == st->st_dev && s.st_ino == st->st_ino;
}

/* Whether /proc/PID (pid a decimal name) runs the stackfsd binary, its
 * file possibly replaced since (an upgrade while it runs). */
static bool is_stackfsd(const char *pid)
{
	char p[64], exe[PATH_MAX], *gone;
	const char *base;
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%s/exe", pid);
	n = readlink(p, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	gone = strstr(exe, " (deleted)");
	if (gone)
		*gone = '\0';
	base = strrchr(exe, '/');
	return base && !strcmp(base + 1, "stackfsd");
}

/* Whether process pid holds an fd of the directory dir. */
static bool holds_dir(const char *pid, const struct stat *dir)
{
	char p[600];
	struct dirent *e;
	bool found = false;
	DIR *fds;

	snprintf(p, sizeof(p), "/proc/%s/fd", pid);
	fds = opendir(p);
	if (!fds)
		return false;
	while (!found && (e = readdir(fds))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/proc/%s/fd/%s", pid, e->d_name);
		found = same_dir(p, dir);
	}
	closedir(fds);
	return found;
}

pid_t sfs_cli_daemon_holding(const struct stat *dir)
{
	struct dirent *e;
	pid_t found = 0;
	DIR *proc = opendir("/proc");

	if (!proc)
		return 0;
	while (!found && (e = readdir(proc))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9' || atoi(e->d_name) == getpid())
			continue;
		if (is_stackfsd(e->d_name) && holds_dir(e->d_name, dir))
			found = (pid_t)atoi(e->d_name);
	}
	closedir(proc);
	return found;
}

/* The live daemon whose pid file is in the runtime directory entry
 * name: its pid, or 0. */
static pid_t published_pid(const char *base, const char *name)
{
	char p[PATH_MAX], buf[32];
	ssize_t k;
	pid_t pid;
	int fd;

	snprintf(p, sizeof(p), "%s/%s/pid", base, name);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	k = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (k <= 0)
		return 0;
	buf[k] = '\0';
	pid = (pid_t)atoi(buf);
	if (pid <= 0 || (kill(pid, 0) < 0 && errno == ESRCH))
		return 0;
	return pid;
}

/* Whether the command line of daemon pid names dir as a branch. */
static bool lists_dir(pid_t pid, const struct stat *dir)
{
	struct mbranch *v = NULL;
	char err[256];
	bool found = false;
	size_t n = 0;

	if (sfs_mbranches_of_daemon(pid, &v, &n, err, sizeof(err)) < 0)
		return false;
	for (size_t i = 0; i < n && !found; i++)
		found = same_dir(v[i].path, dir);
	sfs_mbranches_free(v, n);
	return found;
}

/* A daemon of a mount published under the runtime directory whose
 * command line names dir: its pid, or 0. */
static pid_t daemon_listing(const struct stat *dir)
{
	const char *base = sfs_runtime_base();
	struct dirent *e;
	pid_t found = 0;
	DIR *d = opendir(base);

	if (!d)
		return 0;
	while (!found && (e = readdir(d))) {
		pid_t pid;

		if (e->d_name[0] == '.')
			continue;
		pid = published_pid(base, e->d_name);
		if (pid > 0 && lists_dir(pid, dir))
			found = pid;
	}
	closedir(d);
	return found;
}

pid_t sfs_cli_daemon_using(const struct stat *dir)
{
	pid_t pid = daemon_listing(dir);

	return pid ? pid : sfs_cli_daemon_holding(dir);
}
