/* floor: the FUSE floor of bench/run (issue 35). A plain passthrough of
 * one directory through the libfuse 3.14 low-level API, as stackfs is
 * served, with no union logic: what any FUSE filesystem over that
 * directory costs. Where stackfs is slower than this, the union's own
 * work (or a bug) is what makes up the difference.
 *
 *   floor [-f] [-d] DIR MOUNTPOINT
 *
 * Mounts DIR on MOUNTPOINT and returns once the mount is made (-f: stays
 * in the foreground); unmount with fusermount3 -u. Must stay a floor:
 * nothing here that stackfs does not do for every request too.
 *
 * Matched with stackfs's defaults (stackfs/options/opts.c, ops/ops.c,
 * ops/readdir.c, ops/file.c, transport/readahead.c, main.c):
 * - mount options default_permissions (the kernel checks permissions);
 *   the libfuse defaults for the rest (max_read, max_write, max_pages);
 * - entry, attribute and negative-entry timeouts of 60 s (timeout=60);
 * - INIT: atomic_o_trunc, splice_write + splice_move (stackfs drops them
 *   only under FUSE over io_uring), cache_symlinks, parallel_dirops,
 *   readdirplus + readdirplus_auto, ioctl_dir, posix_acl, dont_mask;
 *   no writeback_cache (stackfs's default is off), no export_support,
 *   no handle_killpriv; no splice_read (stackfs does not ask it);
 * - the readahead window of 512 KiB (the mount's bdi read_ahead_kb,
 *   written before the INIT reply, and max_readahead in the reply);
 * - OPENDIR answered ENOSYS where the kernel can open directories
 *   itself, else keep_cache + cache_readdir; files opened keep_cache +
 *   noflush; a READ answered by splice from the file (FUSE_BUF_FD_SEEK,
 *   splice_move), a WRITE copied with fuse_buf_copy into it;
 * - the multi-threaded loop, clone_fd off; RLIMIT_NOFILE raised.
 * Not matched: stackfs's FUSE over io_uring and its kernel passthrough
 * of files of a rw branch (transports it adds beside libfuse 3.14 through
 * its custom I/O hooks; the floor is what libfuse gives a plain server
 * over /dev/fuse: compare stackfs -o nouring for the transport alone).
 * Left out as the bench does not use them: symlinks, link, mknod,
 * listxattr and the xattr writes (getxattr is served: with posix_acl the
 * kernel reads the ACLs), O_DIRECT alignment, fallocate, lseek,
 * copy_file_range, the parent's default ACL (a new entry's mode gets the
 * caller's umask). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define FL_TIMEOUT 60.0
#define FL_READAHEAD_KIB 512u
#define FL_BUCKETS 65536u

/* A node: an O_PATH descriptor of the file, counted by the kernel's
 * lookups; kept while the kernel knows it (the descriptor also keeps its
 * inode number from being reused). A directory keeps one stream between
 * READDIR requests, read on from where the last one stopped. */
struct fl_node {
	struct fl_node *next;	/* hash chain */
	dev_t dev;
	ino_t ino;
	int fd;
	uint64_t nlookup;	/* under fl.lock */
	pthread_mutex_t dir_lock;
	DIR *dir;
	off_t dir_pos;		/* the offset the stream is at */
};

/* One lock for the table: held for a find or an insert only. */
static struct {
	struct fl_node root;
	struct fl_node *bucket[FL_BUCKETS];
	pthread_mutex_t lock;
	bool opendir_in_kernel;
} fl = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct fl_node *node_of(fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? &fl.root : (struct fl_node *)(uintptr_t)ino;
}

static struct fl_node **chain_of(dev_t dev, ino_t ino)
{
	return &fl.bucket[(ino ^ dev) % FL_BUCKETS];
}

/* Takes fd into the table (or closes it for the node already there) and
 * counts one lookup. Returns the node, NULL without memory. */
static struct fl_node *node_get(int fd, const struct stat *st)
{
	struct fl_node **c = chain_of(st->st_dev, st->st_ino), *n;

	pthread_mutex_lock(&fl.lock);
	for (n = *c; n && (n->ino != st->st_ino || n->dev != st->st_dev); n = n->next)
		;
	if (n) {
		close(fd);
	} else if ((n = calloc(1, sizeof(*n)))) {
		n->dev = st->st_dev;
		n->ino = st->st_ino;
		n->fd = fd;
		pthread_mutex_init(&n->dir_lock, NULL);
		n->next = *c;
		*c = n;
	}
	if (n)
		n->nlookup++;
	pthread_mutex_unlock(&fl.lock);
	return n;
}

static void node_forget(struct fl_node *n, uint64_t count)
{
	struct fl_node **c;

	if (n == &fl.root)
		return;
	pthread_mutex_lock(&fl.lock);
	n->nlookup -= count;
	if (n->nlookup) {
		pthread_mutex_unlock(&fl.lock);
		return;
	}
	for (c = chain_of(n->dev, n->ino); *c != n; c = &(*c)->next)
		;
	*c = n->next;
	pthread_mutex_unlock(&fl.lock);
	if (n->dir)
		closedir(n->dir);
	close(n->fd);
	pthread_mutex_destroy(&n->dir_lock);
	free(n);
}

/* NAME in DIR as an entry reply, a lookup counted; ENOENT gives a
 * negative entry (ino 0) the kernel may cache, as stackfs does. */
static int lookup_at(struct fl_node *dir, const char *name, struct fuse_entry_param *e)
{
	int fd = openat(dir->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct fl_node *n;

	memset(e, 0, sizeof(*e));
	e->attr_timeout = e->entry_timeout = FL_TIMEOUT;
	if (fd < 0)
		return -errno;
	if (fstatat(fd, "", &e->attr, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
		int err = errno;

		close(fd);
		return -err;
	}
	if (!(n = node_get(fd, &e->attr))) {
		close(fd);
		return -ENOMEM;
	}
	e->ino = (uintptr_t)n;
	return 0;
}

/* Replies to a request that made or found NAME in DIR (ret: 0 or
 * -errno); the lookup is given back when the reply does not arrive. */
static void reply_entry(fuse_req_t req, struct fl_node *dir, const char *name, int ret,
			bool negative)
{
	struct fuse_entry_param e;

	if (ret == 0)
		ret = lookup_at(dir, name, &e);
	if (ret == -ENOENT && negative)
		fuse_reply_entry(req, &e);
	else if (ret < 0)
		fuse_reply_err(req, -ret);
	else if (fuse_reply_entry(req, &e) == -ENOENT)
		node_forget(node_of(e.ino), 1);
}

/* The daemon makes entries as root: the caller's owner given after, the
 * group left where a set-group-ID parent chose it. */
static int owner_set(fuse_req_t req, struct fl_node *dir, const char *name)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	gid_t gid = ctx->gid;
	struct stat st;

	if (ctx->uid == 0 && ctx->gid == 0)
		return 0;
	if (fstat(dir->fd, &st) == 0 && (st.st_mode & S_ISGID))
		gid = (gid_t)-1;
	return fchownat(dir->fd, name, ctx->uid, gid, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

/* With posix_acl the kernel sends modes unmasked, the umask beside. */
static mode_t masked(fuse_req_t req, mode_t mode)
{
	return mode & ~fuse_req_ctx(req)->umask;
}

static void proc_path(char *buf, size_t len, int fd)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

static void fl_init(void *data, struct fuse_conn_info *conn)
{
	unsigned want = FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE |
			FUSE_CAP_CACHE_SYMLINKS | FUSE_CAP_PARALLEL_DIROPS | FUSE_CAP_READDIRPLUS |
			FUSE_CAP_READDIRPLUS_AUTO | FUSE_CAP_IOCTL_DIR | FUSE_CAP_POSIX_ACL |
			FUSE_CAP_DONT_MASK;

	conn->want |= want & conn->capable;
	conn->want &= ~(unsigned)(FUSE_CAP_EXPORT_SUPPORT | FUSE_CAP_HANDLE_KILLPRIV |
				  FUSE_CAP_WRITEBACK_CACHE);
	if (conn->max_readahead < FL_READAHEAD_KIB * 1024u)
		conn->max_readahead = FL_READAHEAD_KIB * 1024u;
	fl.opendir_in_kernel = conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT;
}

static void fl_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	reply_entry(req, node_of(parent), name, 0, true);
}

static void fl_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	node_forget(node_of(ino), nlookup);
	fuse_reply_none(req);
}

static void fl_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	if (fstatat(node_of(ino)->fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_attr(req, &st, FL_TIMEOUT);
}

/* Through the open file where there is one, else through the node's
 * descriptor (/proc/self/fd: an O_PATH descriptor takes no chmod). */
static int set_attrs(int fd, int fh, struct stat *a, int to_set)
{
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT } };
	const struct timespec now = { .tv_nsec = UTIME_NOW };
	char p[32];

	proc_path(p, sizeof(p), fd);
	if ((to_set & FUSE_SET_ATTR_MODE) && (fh >= 0 ? fchmod(fh, a->st_mode) : chmod(p, a->st_mode)) < 0)
		return -errno;
	if ((to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) &&
	    fchownat(fd, "", to_set & FUSE_SET_ATTR_UID ? a->st_uid : (uid_t)-1,
		     to_set & FUSE_SET_ATTR_GID ? a->st_gid : (gid_t)-1,
		     AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if ((to_set & FUSE_SET_ATTR_SIZE) &&
	    (fh >= 0 ? ftruncate(fh, a->st_size) : truncate(p, a->st_size)) < 0)
		return -errno;
	/* the kernel sends ATIME with ATIME_NOW, MTIME with MTIME_NOW */
	if (to_set & FUSE_SET_ATTR_ATIME)
		ts[0] = to_set & FUSE_SET_ATTR_ATIME_NOW ? now : a->st_atim;
	if (to_set & FUSE_SET_ATTR_MTIME)
		ts[1] = to_set & FUSE_SET_ATTR_MTIME_NOW ? now : a->st_mtim;
	if ((to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) &&
	    (fh >= 0 ? futimens(fh, ts) : utimensat(AT_FDCWD, p, ts, 0)) < 0)
		return -errno;
	return 0;
}

static void fl_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *a, int to_set,
		       struct fuse_file_info *fi)
{
	int ret = set_attrs(node_of(ino)->fd, fi ? (int)fi->fh : -1, a, to_set);

	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fl_getattr(req, ino, fi);
}

static void fl_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct fl_node *d = node_of(parent);
	int ret = mkdirat(d->fd, name, masked(req, mode)) < 0 ? -errno : owner_set(req, d, name);

	reply_entry(req, d, name, ret, false);
}

static void fl_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, unlinkat(node_of(parent)->fd, name, 0) < 0 ? errno : 0);
}

static void fl_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, unlinkat(node_of(parent)->fd, name, AT_REMOVEDIR) < 0 ? errno : 0);
}

static void fl_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname, unsigned flags)
{
	fuse_reply_err(req, renameat2(node_of(parent)->fd, name, node_of(newparent)->fd,
				      newname, flags) < 0 ? errno : 0);
}

/* Every change goes through the kernel, which keeps its page cache
 * coherent: kept across opens; close(2) needs no FLUSH (stackfs's). */
static void file_flags(struct fuse_file_info *fi, int fd)
{
	fi->fh = (uint64_t)fd;
	fi->keep_cache = 1;
	fi->noflush = 1;
}

static void fl_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char p[32];
	int fd;

	proc_path(p, sizeof(p), node_of(ino)->fd);
	fd = open(p, (fi->flags & ~O_NOFOLLOW) | O_CLOEXEC);
	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	file_flags(fi, fd);
	if (fuse_reply_open(req, fi) == -ENOENT)
		close(fd);
}

static void fl_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct fl_node *d = node_of(parent);
	struct fuse_entry_param e;
	int fd = openat(d->fd, name, (fi->flags | O_CREAT | O_CLOEXEC) & ~O_NOFOLLOW,
			masked(req, mode));
	int ret = fd < 0 ? -errno : owner_set(req, d, name);

	if (ret == 0)
		ret = lookup_at(d, name, &e);
	if (ret < 0) {
		if (fd >= 0)
			close(fd);
		fuse_reply_err(req, -ret);
		return;
	}
	file_flags(fi, fd);
	if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		close(fd);
		node_forget(node_of(e.ino), 1);
	}
}

static void fl_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);

	buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	buf.buf[0].fd = (int)fi->fh;
	buf.buf[0].pos = off;
	fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
}

static void fl_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
			 struct fuse_file_info *fi)
{
	struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in));
	ssize_t n;

	out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	out.buf[0].fd = (int)fi->fh;
	out.buf[0].pos = off;
	n = fuse_buf_copy(&out, in, 0);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

static void fl_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	close((int)fi->fh);
	fuse_reply_err(req, 0);
}

static void fl_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	int ret = datasync ? fdatasync((int)fi->fh) : fsync((int)fi->fh);

	fuse_reply_err(req, ret < 0 ? errno : 0);
}

static void fl_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (fl.opendir_in_kernel) {
		fuse_reply_err(req, ENOSYS); /* "open them yourself", asked once */
		return;
	}
	fi->fh = 0;
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

/* The node's stream at OFF (under dir_lock): offset 0 starts a fresh
 * listing, another offset than the stream's is sought. */
static int dir_seek(struct fl_node *d, off_t off)
{
	int fd;

	if (!d->dir) {
		fd = openat(d->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		if (!(d->dir = fdopendir(fd))) {
			close(fd);
			return -ENOMEM;
		}
	} else if (off == 0) {
		rewinddir(d->dir);
	} else if (off != d->dir_pos) {
		seekdir(d->dir, off);
	}
	d->dir_pos = off;
	return 0;
}

/* One entry into buf: its size, 0 when it does not fit (before any
 * lookup is counted). A name that cannot be looked up now (gone since)
 * and "." and ".." go without attributes (node 0: the kernel makes no
 * dentry of them). */
static size_t dir_add(fuse_req_t req, struct fl_node *d, const struct dirent *de, char *buf,
		      size_t rem, bool plus)
{
	struct fuse_entry_param e = { .attr.st_ino = de->d_ino, .attr.st_mode = DTTOIF(de->d_type) };
	bool dots = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");
	size_t need;

	if (!plus) {
		need = fuse_add_direntry(req, buf, rem, de->d_name, &e.attr, de->d_off);
		return need > rem ? 0 : need;
	}
	if (fuse_add_direntry_plus(req, NULL, 0, de->d_name, NULL, 0) > rem)
		return 0;
	if (!dots && lookup_at(d, de->d_name, &e) < 0) {
		memset(&e, 0, sizeof(e));
		e.attr.st_ino = de->d_ino;
		e.attr.st_mode = DTTOIF(de->d_type);
	}
	return fuse_add_direntry_plus(req, buf, rem, de->d_name, &e, de->d_off);
}

static void dir_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	struct fl_node *d = node_of(ino);
	char *buf = malloc(size);
	size_t used = 0, n;
	struct dirent *de;
	int ret;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&d->dir_lock);
	ret = dir_seek(d, off);
	while (ret == 0) {
		errno = 0;
		if (!(de = readdir(d->dir))) {
			ret = -errno;
			break;
		}
		if (!(n = dir_add(req, d, de, buf + used, size - used, plus))) {
			seekdir(d->dir, d->dir_pos); /* the next request starts here */
			break;
		}
		used += n;
		d->dir_pos = de->d_off;
	}
	pthread_mutex_unlock(&d->dir_lock);
	if (ret < 0 && used == 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_buf(req, buf, used);
	free(buf);
}

static void fl_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	dir_read(req, ino, size, off, false);
}

static void fl_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	dir_read(req, ino, size, off, true);
}

/* The ACLs the kernel reads (posix_acl), through /proc/self/fd followed:
 * the node itself. size 0 asks for the value's size. */
static void fl_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	char p[32], *buf = size ? malloc(size) : NULL;
	ssize_t n;

	proc_path(p, sizeof(p), node_of(ino)->fd);
	n = size && !buf ? (errno = ENOMEM, -1) : getxattr(p, name, buf, size);
	if (n < 0)
		fuse_reply_err(req, errno);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static const struct fuse_lowlevel_ops fl_ops = {
	.init = fl_init,
	.lookup = fl_lookup,
	.forget = fl_forget,
	.getattr = fl_getattr,
	.setattr = fl_setattr,
	.mkdir = fl_mkdir,
	.unlink = fl_unlink,
	.rmdir = fl_rmdir,
	.rename = fl_rename,
	.open = fl_open,
	.create = fl_create,
	.read = fl_read,
	.write_buf = fl_write_buf,
	.release = fl_release,
	.fsync = fl_fsync,
	.opendir = fl_opendir,
	.readdir = fl_readdir,
	.readdirplus = fl_readdirplus,
	.getxattr = fl_getxattr,
};

/* The mount's backing device window: written before the INIT reply, of
 * which the kernel keeps the smaller (stackfs's readahead=512). The
 * mount is found by its mount point in mountinfo, last line first (a
 * stat of it would wait for the INIT reply). */
static int readahead_set(const char *mountpoint, unsigned kib)
{
	FILE *mi = fopen("/proc/self/mountinfo", "re");
	char line[4096], mp[4096], dev[32] = "", path[96];
	unsigned maj, min;
	int ret = -ENOENT;

	if (!mi)
		return -errno;
	while (fgets(line, sizeof(line), mi))
		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min, mp) == 3 &&
		    !strcmp(mp, mountpoint))
			snprintf(dev, sizeof(dev), "%u:%u", maj, min);
	fclose(mi);
	if (dev[0]) {
		FILE *f;

		snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
		f = fopen(path, "we");
		ret = f && fprintf(f, "%u\n", kib) > 0 ? 0 : -errno;
		if (f && fclose(f) != 0 && ret == 0)
			ret = -errno;
	}
	return ret;
}

/* One O_PATH descriptor per node the kernel knows: a walk of a large
 * tree needs more than the default 1024, and a walk of 30,000 entries
 * more than a hard limit of 20,000 (bench/distributed's full size: "Too many
 * open files"). Raised as stackfs raises its own: to the kernel's
 * nr_open where allowed (root), else to the hard limit. */
static void nofile_raise(void)
{
	struct rlimit r;
	unsigned long nr_open = 0;
	FILE *f = fopen("/proc/sys/fs/nr_open", "re");

	if (f) {
		if (fscanf(f, "%lu", &nr_open) != 1)
			nr_open = 0;
		fclose(f);
	}
	if (getrlimit(RLIMIT_NOFILE, &r) != 0)
		return;
	if (nr_open > r.rlim_max) {
		struct rlimit up = { .rlim_cur = nr_open, .rlim_max = nr_open };

		if (setrlimit(RLIMIT_NOFILE, &up) == 0)
			return;
	}
	if (r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

static int serve(struct fuse_session *se, const struct fuse_cmdline_opts *co)
{
	struct fuse_loop_config *cfg;
	int ret;

	if (fuse_session_mount(se, co->mountpoint) != 0)
		return 1;
	if (geteuid() == 0 && (ret = readahead_set(co->mountpoint, FL_READAHEAD_KIB)) < 0)
		fprintf(stderr, "floor: readahead: %s\n", strerror(-ret));
	ret = 1;
	if (fuse_set_signal_handlers(se) != 0 || fuse_daemonize(co->foreground) != 0)
		goto unmount;
	cfg = fuse_loop_cfg_create();
	if (cfg) {
		fuse_loop_cfg_set_clone_fd(cfg, 0);
		ret = fuse_session_loop_mt(se, cfg) != 0;
		fuse_loop_cfg_destroy(cfg);
	}
	fuse_remove_signal_handlers(se);
unmount:
	fuse_session_unmount(se);
	return ret;
}

/* DIR is the argument before the mount point; libfuse parses the rest. */
int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc - 1, argv);
	struct fuse_cmdline_opts co = { 0 };
	struct fuse_session *se = NULL;
	const char *dir = argc >= 3 ? argv[argc - 2] : NULL;
	int ret = 2;

	fl.root.fd = -1;
	if (dir)
		argv[argc - 2] = argv[argc - 1];
	/* allow_other as stackfs has it when root mounts */
	if (!dir || fuse_parse_cmdline(&args, &co) != 0 || co.show_help || !co.mountpoint ||
	    fuse_opt_add_arg(&args, geteuid() == 0 ?
			     "-odefault_permissions,fsname=floor,subtype=floor,allow_other" :
			     "-odefault_permissions,fsname=floor,subtype=floor") < 0) {
		fprintf(stderr, "usage: floor [-f] [-d] DIR MOUNTPOINT\n");
		goto out;
	}
	ret = 1;
	fl.root.fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fl.root.fd < 0) {
		fprintf(stderr, "floor: %s: %s\n", dir, strerror(errno));
		goto out;
	}
	pthread_mutex_init(&fl.root.dir_lock, NULL);
	umask(0); /* modes arrive with the caller's umask applied (masked()) */
	nofile_raise();
	se = fuse_session_new(&args, &fl_ops, sizeof(fl_ops), NULL);
	if (se)
		ret = serve(se, &co);
out:
	if (se)
		fuse_session_destroy(se);
	if (fl.root.dir)
		closedir(fl.root.dir);
	if (fl.root.fd >= 0)
		close(fl.root.fd);
	free(co.mountpoint);
	fuse_opt_free_args(&args);
	return ret;
}
