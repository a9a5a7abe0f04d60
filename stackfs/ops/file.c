/* Data operations on open files: each open holds the real file, opened
 * with the caller's flags, and every data request goes straight to it
 * (splice where the kernel allows). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>

#include "common/bio.h"
#include "stackfs/ops/ops.h"

static struct sfs_file *file_of(struct fuse_file_info *fi)
{
	return (struct sfs_file *)(uintptr_t)fi->fh;
}

/* With the writeback cache the kernel also reads what it writes back
 * partially, and does O_APPEND itself (it knows the size). */
static int real_flags(int flags)
{
	if (!sfs_m.opts.writeback)
		return flags;
	if ((flags & O_ACCMODE) == O_WRONLY)
		flags = (flags & ~O_ACCMODE) | O_RDWR;
	return flags & ~O_APPEND;
}

/* Open files are counted per branch: a branch with open files is not
 * removed from a live mount without --force. */
static void file_set_branch(struct sfs_file *f, struct sfs_branch *br)
{
	if (br) {
		atomic_fetch_add(&br->refs, 1);
		atomic_fetch_add(&br->shared->open_files, 1);
	}
	if (f->br) {
		atomic_fetch_sub(&f->br->shared->open_files, 1);
		sfs_branch_put(f->br);
	}
	f->br = br;
}

static int file_new(struct sfs_node *n, unsigned gen, int fd,
		    struct sfs_branch *br, struct fuse_file_info *fi)
{
	struct sfs_file *f = malloc(sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->br = NULL;
	file_set_branch(f, br);
	sfs_count(open_files, 1);
	f->fd = fd;
	f->flags = real_flags(fi->flags) & ~(O_CREAT | O_EXCL | O_TRUNC);
	f->cu_gen = gen;
	f->stale_fd = -1;
	f->node = n;
	sfs_node_ref(n);
	pthread_mutex_init(&f->lock, NULL);
	fi->fh = (uintptr_t)f;
	/* Every change goes through the kernel, which keeps its page cache
	 * coherent (and drops it when a getattr shows another size or
	 * mtime): no reason to throw it away at each open. close(2) needs no
	 * round trip: flush has nothing to do here. */
	fi->keep_cache = 1;
	fi->noflush = 1;
	return 0;
}

static void file_free(struct sfs_file *f)
{
	sfs_pt_release(f);
	file_set_branch(f, NULL);
	atomic_fetch_sub(&sfs_stats.open_files, 1);
	close(f->fd);
	if (f->stale_fd >= 0)
		close(f->stale_fd);
	sfs_node_unref(f->node);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

/* Every descriptor of a union inode sees one file: one opened before a
 * copy-up (read-only, or the copy-up would have come first) moves to the
 * copy at its next use. The old fd stays open until release, since a
 * concurrent request may still be reading it. */
int sfs_file_fd(struct sfs_file *f)
{
	unsigned gen = atomic_load_explicit(&f->node->cu_gen, memory_order_acquire);
	struct sfs_stack *st;
	int fd, ret;

	if (gen == f->cu_gen)
		return f->fd;
	pthread_mutex_lock(&f->lock);
	ret = f->fd;
	if (gen != f->cu_gen) {
		st = sfs_node_stack(f->node);
		fd = sfs_stack_data_open(st, f->flags);
		if (fd >= 0)
			file_set_branch(f, st->snap->b[sfs_stack_data(st)->bidx]);
		sfs_stack_put(st);
		if (fd >= 0) {
			if (f->stale_fd >= 0)
				close(f->stale_fd);
			f->stale_fd = f->fd;
			f->fd = ret = fd;
			f->cu_gen = gen;
		}
	}
	pthread_mutex_unlock(&f->lock);
	return ret;
}

static bool wants_write(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

/* Whether the caller holds CAP_FSETID for the daemon's files: in its
 * effective set (read from /proc, as libfuse reads the caller's groups)
 * and in the daemon's user namespace (a namespace's root is not root
 * here). A caller that cannot be looked at (gone, or in another pid
 * namespace) is taken to lack it: clearing the bits is the safe side. */
static bool caller_has_fsetid(fuse_req_t req)
{
	pid_t pid = fuse_req_ctx(req)->pid;
	char path[64], line[128], ns[64], own[64];
	unsigned long long caps = 0;
	bool found = false;
	ssize_t a, b;
	FILE *f;

	if (pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	a = readlink(path, ns, sizeof(ns));
	b = readlink("/proc/self/ns/user", own, sizeof(own));
	if (a <= 0 || a != b || memcmp(ns, own, (size_t)a) != 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "CapEff: %llx", &caps) == 1;
	fclose(f);
	return found && (caps & (1ULL << CAP_FSETID));
}

static bool caller_in_group(fuse_req_t req, gid_t gid)
{
	int n = fuse_req_getgroups(req, 0, NULL), i = 0;
	gid_t *list;

	if (fuse_req_ctx(req)->gid == gid)
		return true;
	list = n > 0 ? calloc((size_t)n, sizeof(*list)) : NULL;
	if (list && fuse_req_getgroups(req, n, list) == n)
		while (i < n && list[i] != gid)
			i++;
	free(list);
	return list && i < n;
}

/* The set-ID bits truncating st clears, by the kernel's rule for a caller
 * without CAP_FSETID: set-user-ID always, set-group-ID when group-exec is
 * set or the caller is not in the file's group. */
static mode_t kill_bits(fuse_req_t req, const struct stat *st)
{
	mode_t kill = st->st_mode & S_ISUID;

	if (!S_ISREG(st->st_mode))
		return 0;
	if ((st->st_mode & S_ISGID) &&
	    ((st->st_mode & S_IXGRP) ||
	     !caller_in_group(req, sfs_idmap_to_view(SFS_IDMAP_GID, st->st_gid))))
		kill |= S_ISGID;
	return kill && !caller_has_fsetid(req) ? kill : 0;
}

/* An open that truncates clears set-ID bits as truncate(2) would. The
 * kernel leaves it to us: with atomic O_TRUNC it sends no setattr for
 * the truncate (so not the mode change it would carry), and the daemon
 * truncates as root, which keeps them. */
static int trunc_kill_priv(fuse_req_t req, int fd)
{
	struct stat st;
	mode_t kill;
	int ret = sfs_do_fstat(fd, &st);

	if (ret < 0)
		return ret;
	kill = kill_bits(req, &st);
	return kill ? sfs_do_fchmod(fd, st.st_mode & 07777 & ~kill) : 0;
}

static int do_open(fuse_req_t req, struct sfs_node *n, struct fuse_file_info *fi)
{
	unsigned gen = atomic_load(&n->cu_gen);
	struct sfs_stack *st;
	int fd, ret = 0;

	/* a file about to be truncated needs no data copied */
	if (wants_write(fi->flags))
		ret = sfs_node_copy_up(n, SFS_CU_DATA | ((fi->flags & O_TRUNC) ? SFS_CU_NODATA : 0),
				       &st);
	else if ((ret = sfs_node_stack_open(n, &st)) < 0)
		sfs_stack_put(st);
	if (ret < 0)
		return ret;
	if (wants_write(fi->flags))
		gen = atomic_load(&n->cu_gen);
	fd = sfs_stack_data_open(st, real_flags(fi->flags));
	ret = fd >= 0 && (fi->flags & O_TRUNC) ? trunc_kill_priv(req, fd) : fd;
	if (ret >= 0)
		ret = file_new(n, gen, fd, st->snap->b[sfs_stack_data(st)->bidx], fi);
	if (ret >= 0)
		/* a metacopy's reads come from a lower file, whose descriptor
		 * could not follow the file's completion */
		sfs_pt_open(file_of(fi), sfs_stack_writable(st) && !st->metacopy);
	sfs_stack_put(st);
	if (ret < 0 && fd >= 0)
		close(fd);
	return ret;
}

void sfs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int ret = do_open(req, sfs_node_of(ino), fi);

	if (ret < 0) {
		sfs_reply_err(req, -ret);
		return;
	}
	sfs_pt_reply_with(file_of(fi));
	ret = fuse_reply_open(req, fi);
	sfs_pt_reply_with(NULL);
	if (ret == -ENOENT)
		file_free(file_of(fi));
}

/* A create always makes a new file. One that meets an entry (the kernel
 * cached the name as free while the branch got it behind the union's
 * back) answers ESTALE unless the caller asked for O_EXCL: the kernel
 * then repeats the open once with a fresh lookup, finds the entry, and
 * opens it as any existing file, checking the caller's permissions and
 * truncating through setattr. Opening it here, as root, skipped those
 * checks (the kernel takes a created file as the caller's own). */
static int do_create(fuse_req_t req, struct sfs_node *parent, const char *name,
		     mode_t mode, struct fuse_file_info *fi,
		     struct fuse_entry_param *e)
{
	int fd = -1;
	struct sfs_node *n;
	struct sfs_place p;
	int ret;

	sfs_ns_lock(parent);
	ret = sfs_place_new(parent, name, &p);
	if (ret < 0)
		goto out;
	ret = sfs_place_create(req, &p, name, real_flags(fi->flags), mode & 07777, &fd);
	if (ret == -EEXIST && !(fi->flags & O_EXCL))
		ret = -ESTALE;
	if (ret == 0)
		ret = sfs_entry_new(parent, &p, name, e);
	if (ret == 0) {
		n = sfs_node_of(e->ino);
		ret = file_new(n, atomic_load(&n->cu_gen), fd, p.br, fi);
		if (ret == 0)
			sfs_pt_open(file_of(fi), true);
	}
	sfs_stack_put(p.pst);
out:
	if (ret < 0 && fd >= 0)
		close(fd);
	sfs_ns_unlock(parent);
	return ret;
}

void sfs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		   mode_t mode, struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	int ret = do_create(req, sfs_node_of(parent), name, mode, fi, &e);

	if (ret < 0) {
		sfs_reply_err(req, -ret);
		return;
	}
	sfs_pt_reply_with(file_of(fi));
	ret = fuse_reply_create(req, &e, fi);
	sfs_pt_reply_with(NULL);
	if (ret == -ENOENT) {
		file_free(file_of(fi));
		sfs_node_forget(sfs_node_of(e.ino), 1);
	}
}

/* A READ that came through an io_uring entry: the data is read straight
 * into the entry's payload, which the reply then names (no copy). */
static void read_into(fuse_req_t req, int fd, char *room, size_t size, off_t off)
{
	size_t got = 0;
	ssize_t n = 1;

	while (got < size && n > 0) {
		n = pread(fd, room + got, size - got, off + (off_t)got);
		if (n > 0)
			got += (size_t)n;
		else if (n < 0 && errno == EINTR)
			n = 1;
	}
	if (n < 0 && got == 0)
		sfs_reply_err(req, errno);
	else
		fuse_reply_buf(req, room, got);
}

void sfs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		 struct fuse_file_info *fi)
{
	struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);
	char *room = sfs_uring_reply_room(size);

	if (room) {
		read_into(req, sfs_file_fd(file_of(fi)), room, size, off);
		return;
	}
	buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	buf.buf[0].fd = sfs_file_fd(file_of(fi));
	buf.buf[0].pos = off;
	fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
}

/* An O_DIRECT write needs its memory aligned too (ext4 and XFS ask for
 * the logical block size, at most a page here), and the data of a WRITE
 * request starts after its header, in libfuse's buffer or in the pipe it
 * was spliced into: copied to a page-aligned buffer first. Offset and
 * length stay the caller's, so an unaligned O_DIRECT write gets the
 * branch's EINVAL as it would natively. */
static ssize_t write_direct(int fd, struct fuse_bufvec *in, off_t off)
{
	size_t size = fuse_buf_size(in);
	struct fuse_bufvec mem = FUSE_BUFVEC_INIT(size);
	void *buf;
	ssize_t n;

	if (posix_memalign(&buf, (size_t)sysconf(_SC_PAGESIZE), size ? size : 1))
		return -ENOMEM;
	mem.buf[0].mem = buf;
	n = fuse_buf_copy(&mem, in, 0);
	if (n > 0) {
		n = pwrite(fd, buf, (size_t)n, off);
		if (n < 0)
			n = -errno;
	}
	free(buf);
	return n;
}

static ssize_t write_fd(int fd, struct fuse_bufvec *in, off_t off)
{
	struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in));

	out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	out.buf[0].fd = fd;
	out.buf[0].pos = off;
	return fuse_buf_copy(&out, in, 0);
}

/* The writeback cache writes its pages back through any writable file of
 * the inode, an O_DIRECT one too, up to the end of the file (a length
 * O_DIRECT refuses): those writes are the cache's, not the caller's
 * O_DIRECT ones, and go through a buffered descriptor of the same file. */
static ssize_t write_cached(int fd, struct fuse_bufvec *in, off_t off)
{
	int bfd = sfs_do_reopen(fd, O_WRONLY);
	ssize_t n;

	if (bfd < 0)
		return bfd;
	n = write_fd(bfd, in, off);
	close(bfd);
	return n;
}

void sfs_op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in,
		      off_t off, struct fuse_file_info *fi)
{
	struct sfs_file *f = file_of(fi);
	int fd = sfs_file_fd(f);
	ssize_t n;

	if (!(f->flags & O_DIRECT))
		n = write_fd(fd, in, off);
	else if (fi->writepage)
		n = write_cached(fd, in, off);
	else
		n = write_direct(fd, in, off);
	if (n < 0)
		sfs_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

/* Nothing to do at close(2): locks are the kernel's, and the real file
 * is closed at release. */
void sfs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	sfs_reply_err(req, 0);
}

void sfs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	file_free(file_of(fi));
	sfs_reply_err(req, 0);
}

void sfs_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		  struct fuse_file_info *fi)
{
	int ret = sfs_sync_view(sfs_node_of(ino), sfs_file_fd(file_of(fi)), datasync);

	sfs_reply_err(req, -ret);
}

void sfs_op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset,
		      off_t length, struct fuse_file_info *fi)
{
	int r = fallocate(sfs_file_fd(file_of(fi)), mode, offset, length);

	sfs_reply_err(req, r < 0 ? errno : 0);
}

void sfs_op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		  struct fuse_file_info *fi)
{
	/* With the writeback cache the kernel may hold data the branch has
	 * not seen: ENOSYS makes it answer SEEK_DATA/SEEK_HOLE itself, from
	 * what it knows, rather than a hole where dirty pages are. */
	if (sfs_m.opts.writeback) {
		sfs_reply_err(req, ENOSYS);
		return;
	}
	off_t r = lseek(sfs_file_fd(file_of(fi)), off, whence);

	if (r < 0)
		sfs_reply_err(req, errno);
	else
		fuse_reply_lseek(req, r);
}

void sfs_op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			    struct fuse_file_info *fi_in, fuse_ino_t ino_out,
			    off_t off_out, struct fuse_file_info *fi_out,
			    size_t len, int flags)
{
	ssize_t n = copy_file_range(sfs_file_fd(file_of(fi_in)), &off_in,
				    sfs_file_fd(file_of(fi_out)), &off_out, len,
				    (unsigned)flags);

	if (n < 0)
		sfs_reply_err(req, errno);
	else
		fuse_reply_write(req, (size_t)n);
}
