/* lockprobe: check that locks taken through one open file conflict with
 * another process's locks on the same file. Each check forks; parent and
 * child open FILE separately. Every step is printed as "STEP: RESULT";
 * the last line is "PASS", or "FAIL" with exit status 1.
 *
 *   lockprobe posix FILE   fcntl F_SETLK / F_GETLK byte-range locks
 *   lockprobe wait FILE    F_SETLKW blocks until the holder unlocks
 *   lockprobe flock FILE   flock(2) exclusive and shared locks
 *   lockprobe ofd FILE     open file description locks (F_OFD_SETLK)
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

static int failed;

static const char *ename(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "E?";
}

static void expect(const char *step, int got_errno, int want1, int want2)
{
	int good = got_errno == want1 || (want2 && got_errno == want2);

	printf("%s: %s%s\n", step, got_errno ? ename(got_errno) : "OK",
	       good ? "" : " (unexpected)");
	fflush(stdout);
	if (!good)
		failed = 1;
}

static int lk(int fd, int cmd, short type, off_t start, off_t len)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET,
			    .l_start = start, .l_len = len };
	return fcntl(fd, cmd, &fl) < 0 ? errno : 0;
}

static int openit(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		printf("open %s: %s\nFAIL\n", path, ename(errno));
		exit(1);
	}
	return fd;
}

/* a byte on a pipe is the signal between parent and child */
static void sig(int fd) { char c = 1; if (write(fd, &c, 1) != 1) exit(3); }
static void waitsig(int fd) { char c; if (read(fd, &c, 1) != 1) exit(3); }

static int reap(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
		return 1;
	return WEXITSTATUS(st);
}

static int run_posix(const char *path, int ofd)
{
	int p2c[2], c2p[2], fd = openit(path);
	int setlk = ofd ? F_OFD_SETLK : F_SETLK, getlk = ofd ? F_OFD_GETLK : F_GETLK;
	pid_t pid, parent = getpid();

	if (pipe(p2c) || pipe(c2p))
		return 1;
	expect("parent write-locks 0-99", lk(fd, setlk, F_WRLCK, 0, 100), 0, 0);
	pid = fork();
	if (pid == 0) {
		int cfd = openit(path);
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
				    .l_start = 50, .l_len = 10 };
		expect("child write-lock 50-59 conflicts",
		       lk(cfd, setlk, F_WRLCK, 50, 10), EAGAIN, EACCES);
		expect("child read-lock 0-9 conflicts",
		       lk(cfd, setlk, F_RDLCK, 0, 10), EAGAIN, EACCES);
		if (fcntl(cfd, getlk, &fl) < 0) {
			expect("child getlk", errno, 0, 0);
		} else {
			int good = fl.l_type == F_WRLCK && fl.l_start == 0 &&
				   fl.l_len == 100 && (ofd ? fl.l_pid == -1 : fl.l_pid == parent);
			printf("child getlk 50-59 reports: %s start=%lld len=%lld %s%s\n",
			       fl.l_type == F_WRLCK ? "F_WRLCK" :
			       fl.l_type == F_UNLCK ? "F_UNLCK" : "F_RDLCK",
			       (long long)fl.l_start, (long long)fl.l_len,
			       fl.l_pid == parent ? "pid=holder" : "pid=other",
			       good ? "" : " (unexpected)");
			if (!good)
				failed = 1;
		}
		expect("child write-lock 100-199 (no overlap)",
		       lk(cfd, setlk, F_WRLCK, 100, 100), 0, 0);
		fflush(stdout);
		sig(c2p[1]);
		waitsig(p2c[0]);
		expect("child write-lock 0-99 after parent unlocked",
		       lk(cfd, setlk, F_WRLCK, 0, 100), 0, 0);
		exit(failed);
	}
	waitsig(c2p[0]);
	expect("parent write-lock 150-159 conflicts with child",
	       lk(fd, setlk, F_WRLCK, 150, 10), EAGAIN, EACCES);
	expect("parent unlocks 0-99", lk(fd, setlk, F_UNLCK, 0, 100), 0, 0);
	sig(p2c[1]);
	if (reap(pid))
		failed = 1;
	expect("parent write-lock 0-99 after child exited",
	       lk(fd, setlk, F_WRLCK, 0, 100), 0, 0);
	close(fd);
	return failed;
}

/* The child reports on a pipe once F_SETLKW returned; the parent, still
 * holding the lock 600 ms later, must find nothing on the pipe yet. */
static int run_wait(const char *path)
{
	int c2p[2], got[2], fd = openit(path);
	pid_t pid;
	char c;

	if (pipe(c2p) || pipe2(got, O_NONBLOCK))
		return 1;
	expect("parent write-locks 0-99", lk(fd, F_SETLK, F_WRLCK, 0, 100), 0, 0);
	pid = fork();
	if (pid == 0) {
		int cfd = openit(path);
		alarm(20);
		sig(c2p[1]);
		expect("child F_SETLKW 0-9", lk(cfd, F_SETLKW, F_WRLCK, 0, 10), 0, 0);
		sig(got[1]);
		exit(failed);
	}
	waitsig(c2p[0]);
	usleep(600 * 1000);
	if (read(got[0], &c, 1) == 1) {
		printf("child F_SETLKW returned while the parent held the lock (unexpected)\n");
		failed = 1;
	} else {
		printf("child F_SETLKW still waiting while the parent holds the lock\n");
	}
	expect("parent unlocks 0-99", lk(fd, F_SETLK, F_UNLCK, 0, 100), 0, 0);
	if (reap(pid))
		failed = 1;
	close(fd);
	return failed;
}

static int fl(int fd, int op)
{
	return flock(fd, op) < 0 ? errno : 0;
}

static int run_flock(const char *path)
{
	int p2c[2], c2p[2], fd = openit(path);
	pid_t pid;

	if (pipe(p2c) || pipe(c2p))
		return 1;
	expect("parent flock LOCK_EX", fl(fd, LOCK_EX | LOCK_NB), 0, 0);
	pid = fork();
	if (pid == 0) {
		int cfd = openit(path);
		expect("child flock LOCK_EX conflicts", fl(cfd, LOCK_EX | LOCK_NB), EWOULDBLOCK, 0);
		expect("child flock LOCK_SH conflicts", fl(cfd, LOCK_SH | LOCK_NB), EWOULDBLOCK, 0);
		sig(c2p[1]);
		waitsig(p2c[0]);
		expect("child flock LOCK_SH with parent's LOCK_SH", fl(cfd, LOCK_SH | LOCK_NB), 0, 0);
		sig(c2p[1]);
		waitsig(p2c[0]);
		expect("child flock LOCK_EX after parent unlocked", fl(cfd, LOCK_EX | LOCK_NB), 0, 0);
		sig(c2p[1]);
		waitsig(p2c[0]);
		exit(failed);
	}
	waitsig(c2p[0]);
	expect("parent downgrades to LOCK_SH", fl(fd, LOCK_SH | LOCK_NB), 0, 0);
	sig(p2c[1]);
	waitsig(c2p[0]);
	expect("parent flock LOCK_EX conflicts with child's LOCK_SH", fl(fd, LOCK_EX | LOCK_NB), EWOULDBLOCK, 0);
	expect("parent unlocks", fl(fd, LOCK_UN), 0, 0);
	sig(p2c[1]);
	waitsig(c2p[0]);
	expect("parent flock LOCK_SH conflicts with child's LOCK_EX", fl(fd, LOCK_SH | LOCK_NB), EWOULDBLOCK, 0);
	sig(p2c[1]);
	if (reap(pid))
		failed = 1;
	expect("parent flock LOCK_EX after child exited", fl(fd, LOCK_EX | LOCK_NB), 0, 0);
	close(fd);
	return failed;
}

int main(int argc, char **argv)
{
	int r;

	if (argc != 3) {
		fprintf(stderr, "usage: lockprobe posix|wait|flock|ofd FILE\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "posix"))
		r = run_posix(argv[2], 0);
	else if (!strcmp(argv[1], "ofd"))
		r = run_posix(argv[2], 1);
	else if (!strcmp(argv[1], "wait"))
		r = run_wait(argv[2]);
	else if (!strcmp(argv[1], "flock"))
		r = run_flock(argv[2]);
	else {
		fprintf(stderr, "usage: lockprobe posix|wait|flock|ofd FILE\n");
		return 2;
	}
	printf("%s\n", r ? "FAIL" : "PASS");
	return r ? 1 : 0;
}
