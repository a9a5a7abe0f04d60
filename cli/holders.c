/* What keeps a mount busy, as fuser -m would name it: the processes with
 * an open file, a working or root directory, an executable or a mapped
 * file in it, and the mounts on top of its directories. `stackfs umount`
 * prints them when the kernel answers EBUSY, which alone does not say
 * what to close.
 *
 * Nothing here enters the mount (its daemon may be stuck): an fd's mount
 * is in /proc/PID/fdinfo (mnt_id), a mapping's device in /proc/PID/maps,
 * and the directories' and executable's mount is that of an O_PATH open
 * of the /proc link (the walk jumps to the link's target: no lookup, no
 * revalidation, no open request), read back from our own fdinfo. Only
 * the processes the caller may look at are seen: root sees all. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/runtime.h"

#define MAX_LINES 20

struct holders {
	FILE *f;
	const struct sfs_mountinfo *m;
	unsigned lines, more;   /* printed, and found past MAX_LINES */
};

static void say(struct holders *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct holders *h, const char *fmt, ...)
{
	va_list ap;

	if (h->lines == MAX_LINES) {
		h->more++;
		return;
	}
	h->lines++;
	fputs("  ", h->f);
	va_start(ap, fmt);
	vfprintf(h->f, fmt, ap);
	va_end(ap);
	fputc('\n', h->f);
}

/* The target of /proc/PID/NAME (a magic link: the kernel's name for
 * it, nothing entered), or "?". */
static void link_target(pid_t pid, const char *name, char *buf, size_t len)
{
	char path[NAME_MAX + 64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	n = readlink(path, buf, len - 1);
	if (n < 0)
		n = snprintf(buf, len, "?");
	buf[n] = '\0';
}

/* The mount id of fd FD of process pid, from its fdinfo; 0 if unknown. */
static unsigned fd_mnt_id(pid_t pid, const char *fd)
{
	char path[NAME_MAX + 64], line[128];
	unsigned id = 0;
	FILE *s;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%s", (int)pid, fd);
	s = fopen(path, "re");
	if (!s)
		return 0;
	while (fgets(line, sizeof(line), s))
		if (sscanf(line, "mnt_id: %u", &id) == 1)
			break;
	fclose(s);
	return id;
}

static void scan_fds(struct holders *h, pid_t pid, const char *comm)
{
	char path[64], fd[NAME_MAX + 4], target[PATH_MAX];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo", (int)pid);
	d = opendir(path);
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.' || fd_mnt_id(pid, e->d_name) != h->m->id)
			continue;
		snprintf(fd, sizeof(fd), "fd/%s", e->d_name);
		link_target(pid, fd, target, sizeof(target));
		say(h, "pid %d (%s): open file %s (fd %s)", (int)pid, comm, target, e->d_name);
	}
	if (d)
		closedir(d);
}

/* cwd, root, exe: in the mount? */
static void scan_links(struct holders *h, pid_t pid, const char *comm)
{
	static const char *const names[] = { "cwd", "root", "exe" };
	static const char *const what[] = { "working directory", "root directory",
					    "executable" };
	char path[64], target[PATH_MAX];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char fd[16];
		int pfd;
		unsigned id;

		snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, names[i]);
		pfd = open(path, O_PATH | O_CLOEXEC);
		if (pfd < 0)
			continue;
		snprintf(fd, sizeof(fd), "%d", pfd);
		id = fd_mnt_id(getpid(), fd);
		close(pfd);
		if (id != h->m->id)
			continue;
		link_target(pid, names[i], target, sizeof(target));
		say(h, "pid %d (%s): %s %s", (int)pid, comm, what[i], target);
	}
}

/* Mapped files of the mount's device (one line per file). */
static void scan_maps(struct holders *h, pid_t pid, const char *comm)
{
	char path[64], *line = NULL, last[PATH_MAX] = "";
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	while (f && getline(&line, &cap, f) > 0) {
		unsigned ma, mi;
		int off = 0;

		/* "start-end perms offset MAJ:MIN inode   path" (hex device) */
		if (sscanf(line, "%*s %*s %*s %x:%x %*u %n", &ma, &mi, &off) < 2 || !off ||
		    ma != h->m->major || mi != h->m->minor)
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (!strcmp(last, line + off))
			continue;
		snprintf(last, sizeof(last), "%s", line + off);
		say(h, "pid %d (%s): mapped file %s", (int)pid, comm, last);
	}
	free(line);
	if (f)
		fclose(f);
}

static void scan_pid(struct holders *h, pid_t pid)
{
	char path[64], comm[64] = "?";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (f && fgets(comm, sizeof(comm), f))
		comm[strcspn(comm, "\n")] = '\0';
	if (f)
		fclose(f);
	scan_fds(h, pid, comm);
	scan_links(h, pid, comm);
	scan_maps(h, pid, comm);
}

/* Mounts whose parent is ours: a mount on a directory of it. */
static void scan_submounts(struct holders *h)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;

	while (f && getline(&line, &cap, f) > 0) {
		unsigned id, parent;
		char point[PATH_MAX];

		if (sscanf(line, "%u %u %*s %*s %4095s", &id, &parent, point) == 3 &&
		    parent == h->m->id && id != h->m->id)
			say(h, "a mount on %s (unmount it first)", point);
	}
	free(line);
	if (f)
		fclose(f);
}

int sfs_cli_print_holders(FILE *f, const struct sfs_mountinfo *m)
{
	struct holders h = { .f = f, .m = m };
	struct dirent *e;
	DIR *proc = opendir("/proc");

	if (!proc)
		return -errno;
	while ((e = readdir(proc))) {
		pid_t pid = (pid_t)atoi(e->d_name);

		if (pid > 0)
			scan_pid(&h, pid);
	}
	closedir(proc);
	scan_submounts(&h);
	if (h.more)
		fprintf(f, "  and %u more\n", h.more);
	return (int)(h.lines + h.more);
}
