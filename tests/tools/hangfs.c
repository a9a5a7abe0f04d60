/* hangfs: a FUSE server that answers INIT and then nothing else, ever:
 * every LOOKUP, GETATTR, GETXATTR, OPENDIR, READDIR... stays pending, so
 * whoever enters the filesystem (a stat of its mount point included)
 * sleeps until the connection is aborted. For the tests that check that
 * stackfs and its tools never cross a mount point inside a branch.
 *
 *   hangfs MOUNTPOINT
 *
 * Mounts on MOUNTPOINT, prints the pid of the server (a child that keeps
 * the connection) on stdout and exits 0; the server ends when killed,
 * which aborts the connection (pending callers get ENOTCONN); the mount
 * stays until unmounted (umount -l). Exit 1 when the mount fails. */
#include <fuse_lowlevel.h>
#include <linux/close_range.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* A request is never replied to: libfuse keeps it, the kernel waits. */
#define HANG(op, ...) \
	static void hang_##op(fuse_req_t req, __VA_ARGS__) { (void)req; }

HANG(lookup, fuse_ino_t p, const char *n)
HANG(getattr, fuse_ino_t i, struct fuse_file_info *fi)
HANG(setattr, fuse_ino_t i, struct stat *a, int s, struct fuse_file_info *fi)
HANG(readlink, fuse_ino_t i)
HANG(mknod, fuse_ino_t p, const char *n, mode_t m, dev_t d)
HANG(mkdir, fuse_ino_t p, const char *n, mode_t m)
HANG(unlink, fuse_ino_t p, const char *n)
HANG(rmdir, fuse_ino_t p, const char *n)
HANG(symlink, const char *l, fuse_ino_t p, const char *n)
HANG(rename, fuse_ino_t p, const char *n, fuse_ino_t np, const char *nn, unsigned f)
HANG(link, fuse_ino_t i, fuse_ino_t p, const char *n)
HANG(open, fuse_ino_t i, struct fuse_file_info *fi)
HANG(opendir, fuse_ino_t i, struct fuse_file_info *fi)
HANG(readdir, fuse_ino_t i, size_t s, off_t o, struct fuse_file_info *fi)
HANG(readdirplus, fuse_ino_t i, size_t s, off_t o, struct fuse_file_info *fi)
HANG(statfs, fuse_ino_t i)
HANG(setxattr, fuse_ino_t i, const char *n, const char *v, size_t s, int f)
HANG(getxattr, fuse_ino_t i, const char *n, size_t s)
HANG(listxattr, fuse_ino_t i, size_t s)
HANG(removexattr, fuse_ino_t i, const char *n)
HANG(access, fuse_ino_t i, int m)
HANG(create, fuse_ino_t p, const char *n, mode_t m, struct fuse_file_info *fi)

static const struct fuse_lowlevel_ops ops = {
	.lookup = hang_lookup, .getattr = hang_getattr, .setattr = hang_setattr,
	.readlink = hang_readlink, .mknod = hang_mknod, .mkdir = hang_mkdir,
	.unlink = hang_unlink, .rmdir = hang_rmdir, .symlink = hang_symlink,
	.rename = hang_rename, .link = hang_link, .open = hang_open,
	.opendir = hang_opendir, .readdir = hang_readdir,
	.readdirplus = hang_readdirplus, .statfs = hang_statfs,
	.setxattr = hang_setxattr, .getxattr = hang_getxattr,
	.listxattr = hang_listxattr, .removexattr = hang_removexattr,
	.access = hang_access, .create = hang_create,
};

int main(int argc, char **argv)
{
	char *av[] = { argv[0], "-o", "fsname=hangfs,subtype=hangfs", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, av);
	struct fuse_session *se;
	pid_t pid;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: hangfs MOUNTPOINT\n");
		return 2;
	}
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se || fuse_session_mount(se, argv[1]) != 0)
		return 1;
	/* The parent returns once the mount exists; the child serves it. */
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid > 0) {
		printf("%d\n", (int)pid);
		return 0;
	}
	setsid();
	/* Hold nothing of the caller's (a test's output pipe would never
	 * see its end while the server lives): only the connection. */
	fd = fuse_session_fd(se);
	if (fd > 3)
		close_range(3, (unsigned)fd - 1, 0);
	close_range((unsigned)fd + 1, ~0U, 0);
	if (!freopen("/dev/null", "r", stdin) || !freopen("/dev/null", "w", stdout) ||
	    !freopen("/dev/null", "w", stderr))
		_exit(1);
	fuse_session_loop(se);
	_exit(0);
}
