/* FUSE passthrough (kernel 6.9+): reads, writes and mmap of an open file
 * go from the kernel straight to the branch file, with no request to the
 * daemon. Bookworm's libfuse (3.14) predates it: it neither offers the
 * INIT flag nor lets an open reply carry a backing file. So the daemon
 * talks to /dev/fuse through libfuse's custom I/O hooks, which see every
 * message: the INIT request (does the kernel offer passthrough?), the
 * INIT reply (the flag and the stacking depth are added), and the open
 * and create replies of files served this way (FOPEN_PASSTHROUGH and the
 * backing id are added). Everything else passes unchanged.
 *
 * Which opens pass through (sfs_pt_open): a regular file whose top layer
 * is in a rw branch. A lower file is never passed through: a copy-up
 * would leave its descriptors on the lower file, while the union moves
 * them to the copy (sfs_file_fd). The kernel also refuses to mix, on one
 * inode, files passed through with files served by requests (the open
 * fails with EIO), and wants one backing file per inode: so a node has
 * one backing id while any of its files passes through, and a file is
 * served by requests while any other of its node is.
 *
 * The same hooks carry FUSE over io_uring (uring.c): its INIT flag is
 * negotiated here, and replies to requests that came through a ring entry
 * go into the entry instead of to the device. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "stackfs/stackfs.h"

/* The kernel's protocol, beyond libfuse 3.14's fuse_kernel.h (7.38). */
#define PT_OP_INIT 26u
#define PT_INIT_EXT (1u << 30)
#define PT_FLAGS2_PASSTHROUGH (1u << (37 - 32))
#define PT_FOPEN_PASSTHROUGH (1u << 7)
/* what may go with it: direct_io, noflush, parallel_direct_writes (the
 * kernel fails the open for any other flag, keep_cache among them) */
#define PT_FOPEN_ALLOWED ((1u << 0) | (1u << 5) | (1u << 6))
#define PT_MAX_STACK_DEPTH 1u /* branches on plain filesystems */

struct pt_backing_map {
	int32_t fd;
	uint32_t flags;
	uint64_t padding;
};
#define PT_IOC_BACKING_OPEN _IOW(229, 1, struct pt_backing_map)
#define PT_IOC_BACKING_CLOSE _IOW(229, 2, uint32_t)

struct pt_in_header {
	uint32_t len, opcode;
	uint64_t unique, nodeid;
	uint32_t uid, gid, pid;
	uint16_t total_extlen, padding;
};

struct pt_init_in {
	uint32_t major, minor, max_readahead, flags, flags2;
};

struct pt_out_header {
	uint32_t len;
	int32_t error;
	uint64_t unique;
};

/* The INIT reply, as far as it is changed. */
struct pt_init_out {
	uint32_t major, minor, max_readahead, flags;
	uint16_t max_background, congestion_threshold;
	uint32_t max_write, time_gran;
	uint16_t max_pages, map_alignment;
	uint32_t flags2, max_stack_depth;
};

struct pt_open_out {
	uint64_t fh;
	uint32_t open_flags;
	int32_t backing_id;
};

static struct {
	int wanted;               /* the mount may use it (options allow) */
	int offered;              /* the kernel's INIT offered it */
	uint64_t init_unique;     /* the INIT request being answered */
	atomic_int active;        /* negotiated, and backing files open */
	int devfd;                /* /dev/fuse, for the backing ioctls */
} pt = { .init_unique = UINT64_MAX, .devfd = -1 };

/* The backing id the open or create reply this thread sends carries. */
static __thread int reply_backing = -1;

static void see_request(const void *buf, ssize_t n)
{
	const struct pt_in_header *h = buf;
	const struct pt_init_in *in = (const void *)(h + 1);

	if (n < (ssize_t)(sizeof(*h) + sizeof(*in)) || h->opcode != PT_OP_INIT)
		return;
	pt.init_unique = h->unique;
	pt.offered = (in->flags & PT_INIT_EXT) && (in->flags2 & PT_FLAGS2_PASSTHROUGH);
	sfs_uring_see_init((in->flags & PT_INIT_EXT) ? in->flags2 : 0);
}

/* Returns whether the reply took io_uring (started once it is written). */
static bool patch_init(struct iovec *iov, int count)
{
	struct pt_init_out *o = iov[1].iov_base;
	bool uring;

	pt.init_unique = UINT64_MAX;
	if (count != 2 || iov[1].iov_len < sizeof(*o))
		return false;
	uring = sfs_uring_patch_init(&o->flags2, o->max_write, o->max_pages);
	if (uring)
		o->flags |= PT_INIT_EXT;
	if (!pt.offered || !pt.wanted)
		return uring;
	o->flags |= PT_INIT_EXT;
	o->flags2 |= PT_FLAGS2_PASSTHROUGH;
	o->max_stack_depth = PT_MAX_STACK_DEPTH;
	atomic_store(&pt.active, 1);
	return uring;
}

static void patch_open(struct iovec *iov, int count)
{
	struct pt_open_out *o;

	if (count != 2 || iov[1].iov_len < sizeof(*o))
		return;
	o = (void *)((char *)iov[1].iov_base + iov[1].iov_len - sizeof(*o));
	o->open_flags = (o->open_flags & PT_FOPEN_ALLOWED) | PT_FOPEN_PASSTHROUGH;
	o->backing_id = reply_backing;
}

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);

	(void)userdata;
	if (n > 0 && pt.init_unique == UINT64_MAX && !atomic_load(&pt.active))
		see_request(buf, n);
	return n;
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	const struct pt_out_header *h = iov[0].iov_base;
	bool uring = false;
	ssize_t n;

	(void)userdata;
	if (h->error == 0 && h->unique != 0) {
		if (h->unique == pt.init_unique)
			uring = patch_init(iov, count);
		else if (reply_backing >= 0)
			patch_open(iov, count);
	}
	reply_backing = -1;
	if ((n = sfs_uring_take(iov, count)) >= 0)
		return n;
	n = writev(fd, iov, count);
	/* the kernel takes registrations once it has this reply */
	if (uring && n >= 0)
		sfs_uring_start();
	return n;
}

static ssize_t io_splice_receive(int fdin, off_t *offin, int fdout, off_t *offout,
				 size_t len, unsigned int flags, void *userdata)
{
	(void)userdata;
	return splice(fdin, offin, fdout, offout, len, flags);
}

static ssize_t io_splice_send(int fdin, off_t *offin, int fdout, off_t *offout,
			      size_t len, unsigned int flags, void *userdata)
{
	(void)userdata;
	return splice(fdin, offin, fdout, offout, len, flags);
}

int sfs_pt_setup(struct fuse_session *se, bool wanted)
{
	static const struct fuse_custom_io io = {
		.read = io_read,
		.writev = io_writev,
		.splice_receive = io_splice_receive,
		.splice_send = io_splice_send,
	};

	pt.wanted = wanted;
	pt.devfd = fuse_session_fd(se);
	sfs_uring_attach(se, pt.devfd);
	return fuse_session_custom_io(se, &io, pt.devfd);
}

bool sfs_pt_active(void)
{
	return atomic_load(&pt.active);
}

/* A backing id for the node's top layer, or -errno. The kernel takes it
 * only from a process with CAP_SYS_ADMIN and for a branch on a plain
 * filesystem (not itself stacked): without either, this mount serves by
 * requests, as before. */
static int backing_open(int fd)
{
	struct pt_backing_map map = { .fd = fd };
	int id = ioctl(pt.devfd, PT_IOC_BACKING_OPEN, &map);

	if (id >= 0)
		return id;
	if (errno == EPERM || errno == EOPNOTSUPP || errno == ENOTTY || errno == EINVAL) {
		if (atomic_exchange(&pt.active, 0))
			sfs_log(SFS_LOG_INFO, "passthrough is off: %s", strerror(errno));
	}
	return -errno;
}

void sfs_pt_open(struct sfs_file *f, bool writable)
{
	struct sfs_node *n = f->node;

	f->backing = -1;
	pthread_mutex_lock(&n->lock);
	if (writable && n->type == S_IFREG && n->pt_cached == 0 && sfs_pt_active()) {
		if (n->pt_files == 0)
			n->pt_backing = backing_open(f->fd);
		if (n->pt_backing >= 0) {
			n->pt_files++;
			f->backing = n->pt_backing;
		}
	}
	if (f->backing < 0)
		n->pt_cached++;
	pthread_mutex_unlock(&n->lock);
	if (f->backing >= 0)
		sfs_count(passthrough_opens, 1);
}

void sfs_pt_release(struct sfs_file *f)
{
	struct sfs_node *n = f->node;
	int close_id = -1;

	pthread_mutex_lock(&n->lock);
	if (f->backing < 0) {
		n->pt_cached--;
	} else if (--n->pt_files == 0) {
		/* the kernel's files hold the backing file themselves */
		close_id = n->pt_backing;
		n->pt_backing = -1;
	}
	pthread_mutex_unlock(&n->lock);
	if (close_id >= 0) {
		uint32_t id = (uint32_t)close_id;

		ioctl(pt.devfd, PT_IOC_BACKING_CLOSE, &id);
	}
}

void sfs_pt_reply_with(const struct sfs_file *f)
{
	reply_backing = f ? f->backing : -1;
}
