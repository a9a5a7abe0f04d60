/* FUSE over io_uring (kernel 6.14+, `enable_uring` of the fuse module):
 * requests and replies travel through entries the daemon registers per
 * CPU with io_uring commands on /dev/fuse, instead of read(2) and
 * writev(2) on it. A request is served on the CPU that asked, and its
 * reply and the wait for the next request are one system call.
 *
 * Bookworm's libfuse (3.14) predates it, so this is a transport beside
 * libfuse's session: a ring thread turns the request in its entry back
 * into the bytes read(2) would have given, hands them to
 * fuse_session_process_buf, and the device's writev hook (passthrough.c,
 * which sees every reply) hands replies to ring requests back here
 * (sfs_uring_take) instead of to the device. /dev/fuse stays: INIT,
 * FORGET, INTERRUPT and notifications go through it, and all requests
 * until every CPU's queue has an entry.
 *
 * One entry per thread: the kernel gives a request to an entry that
 * waits for one, and an entry waits only while its thread is idle, so a
 * slow request (a copy-up) never holds up another on its CPU while that
 * CPU's queue has another thread. The kernel takes the entry that came
 * back last, so a steady caller is served by the same, warm thread: under
 * a CPU load that is what keeps the daemon as quick as a single-threaded
 * server, where threads reading /dev/fuse are woken in turn
 * (docs/performance.md "FUSE over io_uring").
 *
 * Used with -o uring, where the kernel offers it (else it says why). */
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "stackfs/stackfs.h"

/* The kernel's protocol (linux/fuse.h 7.42), beyond libfuse 3.14's. */
#define UR_FLAGS2_OVER_IO_URING (1u << (41 - 32))
#define UR_CMD_REGISTER 1u
#define UR_CMD_COMMIT_AND_FETCH 2u
#define UR_IN_HEADER 40u  /* struct fuse_in_header */
#define UR_OUT_HEADER 16u /* struct fuse_out_header */
#define UR_OP_MAX 128u    /* the op header's area */

struct ur_ent_in_out {
	uint64_t flags, commit_id;
	uint32_t payload_sz, padding;
	uint64_t reserved;
};

struct ur_header {
	char in_out[128];
	char op_in[UR_OP_MAX];
	struct ur_ent_in_out io;
};

struct ur_cmd_req {
	uint64_t flags, commit_id;
	uint16_t qid;
	uint8_t padding[6];
};

/* The payload starts a page into the entry's buffer: the request's two
 * headers are copied in just before it, so libfuse sees one contiguous
 * request and a WRITE's data is never copied. */
#define UR_LEAD 4096u

struct ur_ent {
	struct ur_header hdr;     /* registered: the kernel writes and reads it */
	char *buf;                /* UR_LEAD bytes, then the payload */
	size_t payload_cap;
	uint16_t qid;
	struct io_uring ring;
	pthread_mutex_t lock;
	pthread_cond_t replied_cv;
	_Atomic uint64_t unique;  /* the request being served; 0: none */
	bool replied;
};

static struct {
	bool wanted;              /* options allow it */
	bool by_option;           /* -o uring said so */
	bool offered;             /* the kernel's INIT offered it */
	bool asked;               /* our INIT reply took it */
	atomic_int active;        /* entries serve requests */
	struct fuse_session *se;
	int devfd;
	size_t payload_cap;
	struct ur_ent *ents;
	unsigned nents, nqueues;
	atomic_uint running;      /* threads still serving */
	pthread_mutex_t go_lock;
	pthread_cond_t go_cv;
	int go;                   /* 1: INIT is answered, register; -1: end */
} ur = { .devfd = -1, .go_lock = PTHREAD_MUTEX_INITIALIZER, .go_cv = PTHREAD_COND_INITIALIZER };

static __thread struct ur_ent *cur;

static int prepare(void);

void sfs_uring_want(bool wanted, bool asked)
{
	ur.wanted = wanted;
	ur.by_option = asked;
}

void sfs_uring_see_init(uint32_t flags2)
{
	ur.offered = (flags2 & UR_FLAGS2_OVER_IO_URING) != 0;
}

bool sfs_uring_planned(void)
{
	return ur.wanted && ur.offered;
}

/* valgrind (3.19) runs one thread at a time and keeps that turn across
 * io_uring_enter: the first ring thread to wait there stops the others
 * before they register their entries, and the kernel serves nothing
 * until every queue has one (a mount under valgrind hung). It preloads
 * its own libraries into the program it runs. */
static bool under_valgrind(void)
{
	const char *p = getenv("LD_PRELOAD");

	return p && strstr(p, "vgpreload");
}

/* The INIT reply: takes the offer and notes how large a payload can be
 * (the kernel refuses entries smaller than its largest request). */
bool sfs_uring_patch_init(uint32_t *flags2, uint32_t max_write, uint16_t max_pages)
{
	size_t cap = 8192;
	int ret;

	if (ur.by_option && !ur.offered)
		sfs_log(SFS_LOG_WARN, "-o uring: the kernel does not offer FUSE over io_uring "
			"(Linux 6.14+, with /sys/module/fuse/parameters/enable_uring on); "
			"requests go through /dev/fuse");
	if (!sfs_uring_planned())
		return false;
	if (cap < max_write)
		cap = max_write;
	if (cap < (size_t)max_pages * 4096)
		cap = (size_t)max_pages * 4096;
	ur.payload_cap = cap;
	ret = under_valgrind() ? -ENOTSUP : prepare();
	if (ret < 0) {
		sfs_log(SFS_LOG_WARN, "io_uring cannot be used here (%s): requests go through "
			"/dev/fuse", strerror(-ret));
		return false;
	}
	*flags2 |= UR_FLAGS2_OVER_IO_URING;
	ur.asked = true;
	return true;
}

/* The kernel's queues: one per possible CPU, all needed before it uses any. */
static unsigned possible_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	unsigned lo = 0, hi = 0;
	int n = f ? fscanf(f, "%u-%u", &lo, &hi) : 0;

	if (f)
		fclose(f);
	if (n == 2)
		return hi + 1;
	if (n == 1)
		return lo + 1;
	n = (int)sysconf(_SC_NPROCESSORS_CONF);
	return n > 0 ? (unsigned)n : 1;
}

static int submit_cmd(struct ur_ent *e, uint32_t op, uint64_t commit_id)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&e->ring);
	struct iovec *iov = (struct iovec *)(e + 1);
	struct ur_cmd_req *req;
	int ret;

	if (!sqe)
		return -EBUSY;
	iov[0] = (struct iovec){ &e->hdr, sizeof(e->hdr) };
	iov[1] = (struct iovec){ e->buf + UR_LEAD, e->payload_cap };
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, ur.devfd, iov, 2, 0);
	sqe->cmd_op = op;
	req = (struct ur_cmd_req *)sqe->cmd;
	memset(sqe->cmd, 0, 80);
	req->commit_id = commit_id;
	req->qid = e->qid;
	while ((ret = io_uring_submit(&e->ring)) == -EINTR)
		;
	return ret < 0 ? ret : 0;
}

/* The request in the entry, rebuilt as read(2) gives it: its in header,
 * its op header, then the payload, which is already in place. */
static int rebuild(struct ur_ent *e, struct fuse_buf *fb)
{
	uint32_t len, payload = e->hdr.io.payload_sz;
	size_t op;
	char *start;

	memcpy(&len, e->hdr.in_out, sizeof(len));
	if (len < UR_IN_HEADER + payload || payload > e->payload_cap)
		return -EPROTO;
	op = len - UR_IN_HEADER - payload;
	if (op > UR_OP_MAX)
		return -EPROTO;
	start = e->buf + UR_LEAD - op - UR_IN_HEADER;
	memcpy(start, e->hdr.in_out, UR_IN_HEADER);
	memcpy(start + UR_IN_HEADER, e->hdr.op_in, op);
	*fb = (struct fuse_buf){ .mem = start, .size = len };
	return 0;
}

/* An answer of our own, for a request that could not be rebuilt. */
static void reply_error(struct ur_ent *e, int err)
{
	uint32_t len = UR_OUT_HEADER;
	int32_t error = -err;

	memcpy(e->hdr.in_out, &len, sizeof(len));
	memcpy(e->hdr.in_out + 4, &error, sizeof(error));
	memcpy(e->hdr.in_out + 8, &e->unique, sizeof(e->unique));
	e->hdr.io.payload_sz = 0;
}

/* Serves the request in e; returns once its reply is in the entry (a
 * handler may answer from another thread: sfs_uring_take finds the
 * entry by the request's unique then). */
static void serve(struct ur_ent *e)
{
	struct fuse_buf fb;
	int ret;

	memcpy(&e->unique, e->hdr.in_out + 8, sizeof(e->unique));
	ret = rebuild(e, &fb);
	if (ret < 0) {
		sfs_log(SFS_LOG_ERR, "io_uring: malformed request %llu from the kernel",
			(unsigned long long)e->unique);
		reply_error(e, -ret);
		return;
	}
	pthread_mutex_lock(&e->lock);
	e->replied = false;
	pthread_mutex_unlock(&e->lock);
	cur = e;
	fuse_session_process_buf(ur.se, &fb);
	cur = NULL;
	pthread_mutex_lock(&e->lock);
	while (!e->replied)
		pthread_cond_wait(&e->replied_cv, &e->lock);
	e->unique = 0;
	pthread_mutex_unlock(&e->lock);
}

/* The next completion of e's ring. A signal (SIGSTOP and SIGCONT, a
 * tracer attaching) interrupts the wait, never the command: waited for
 * again. A thread that left here would take its entry with it, and the
 * request the kernel gives that entry would fail (ECANCELED). */
static int wait_cqe(struct ur_ent *e, struct io_uring_cqe **cqe)
{
	int ret;

	while ((ret = io_uring_wait_cqe(&e->ring, cqe)) == -EINTR)
		;
	return ret;
}

/* Registers e; the kernel answers EAGAIN until INIT is done. */
static int register_ent(struct ur_ent *e, struct io_uring_cqe **cqe)
{
	int ret;

	for (int tries = 0; tries < 1000; tries++) {
		if ((ret = submit_cmd(e, UR_CMD_REGISTER, 0)) < 0)
			return ret;
		if ((ret = wait_cqe(e, cqe)) < 0)
			return ret;
		if ((*cqe)->res != -EAGAIN)
			return 0;
		io_uring_cqe_seen(&e->ring, *cqe);
		usleep(10000);
	}
	return -EAGAIN;
}

/* Waits until the INIT reply that took io_uring is written: 1 to go on. */
static int wait_go(void)
{
	int go;

	pthread_mutex_lock(&ur.go_lock);
	while (!ur.go)
		pthread_cond_wait(&ur.go_cv, &ur.go_lock);
	go = ur.go;
	pthread_mutex_unlock(&ur.go_lock);
	return go;
}

static void set_go(int go)
{
	pthread_mutex_lock(&ur.go_lock);
	ur.go = go;
	pthread_cond_broadcast(&ur.go_cv);
	pthread_mutex_unlock(&ur.go_lock);
}

static void *ent_thread(void *arg)
{
	struct ur_ent *e = arg;
	struct io_uring_cqe *cqe;
	int ret, res;

	ret = wait_go() == 1 ? register_ent(e, &cqe) : -ECANCELED;
	while (ret == 0) {
		res = cqe->res;
		io_uring_cqe_seen(&e->ring, cqe);
		if (res < 0) {
			/* ENOTCONN, ECANCELED: the mount is going away */
			if (res != -ENOTCONN && res != -ECANCELED && res != -ENODEV)
				sfs_log(SFS_LOG_ERR, "io_uring entry of CPU %u stops: %s",
					e->qid, strerror(-res));
			break;
		}
		sfs_count(uring_requests, 1);
		serve(e);
		if ((ret = submit_cmd(e, UR_CMD_COMMIT_AND_FETCH, e->hdr.io.commit_id)) < 0)
			break;
		ret = wait_cqe(e, &cqe);
	}
	if (ret < 0 && ret != -ECANCELED)
		sfs_log(SFS_LOG_ERR, "io_uring entry of CPU %u stops: %s", e->qid,
			strerror(-ret));
	if (atomic_fetch_sub(&ur.running, 1) == 1)
		atomic_store(&ur.active, 0);
	return NULL;
}

/* Entries (threads) per CPU queue: two, so that a slow request leaves
 * another to serve its CPU. Each holds a payload of the largest request
 * (1 MiB), resident only as far as replies touched it. */
#define UR_DEPTH 2u

static int ent_init(struct ur_ent *e, uint16_t qid)
{
	int ret;

	e->qid = qid;
	e->payload_cap = ur.payload_cap;
	e->buf = mmap(NULL, UR_LEAD + e->payload_cap, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (e->buf == MAP_FAILED) {
		e->buf = NULL;
		return -ENOMEM;
	}
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->replied_cv, NULL);
	ret = io_uring_queue_init(4, &e->ring, IORING_SETUP_SQE128);
	return ret < 0 ? ret : 0;
}

/* Each entry is followed by the two iovecs its commands point at. */
#define UR_ENT_SIZE (sizeof(struct ur_ent) + 2 * sizeof(struct iovec))
#define ENT(i) ((struct ur_ent *)((char *)ur.ents + (size_t)(i) * UR_ENT_SIZE))

/* Everything the rings need, made before the INIT reply offers the
 * kernel io_uring: once it has taken it, the kernel holds every request
 * until each CPU's queue has an entry, so an io_uring refused here (a
 * seccomp filter, io_uring_disabled, valgrind) or a thread that cannot
 * start must keep the flag out of the reply instead. The threads wait
 * until the reply is written (sfs_uring_start). 0 or -errno. */
static int prepare(void)
{
	unsigned i;
	int ret = 0;
	pthread_attr_t attr;

	ur.nqueues = possible_cpus();
	ur.nents = ur.nqueues * UR_DEPTH;
	ur.ents = calloc(ur.nents, UR_ENT_SIZE);
	if (!ur.ents)
		return -ENOMEM;
	for (i = 0; i < ur.nents && ret == 0; i++)
		ret = ent_init(ENT(i), (uint16_t)(i / UR_DEPTH));
	if (ret < 0)
		return ret;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (i = 0; i < ur.nents && ret == 0; i++) {
		pthread_t t;

		atomic_fetch_add(&ur.running, 1);
		if (pthread_create(&t, &attr, ent_thread, ENT(i)) != 0) {
			atomic_fetch_sub(&ur.running, 1);
			ret = -EAGAIN;
		}
	}
	pthread_attr_destroy(&attr);
	if (ret < 0)
		set_go(-1); /* those started end */
	return ret;
}

void sfs_uring_attach(struct fuse_session *se, int devfd)
{
	ur.se = se;
	ur.devfd = devfd;
}

void sfs_uring_start(void)
{
	if (!ur.asked)
		return;
	atomic_store(&ur.active, 1);
	set_go(1);
	sfs_log(SFS_LOG_INFO, "io_uring: %u queues of %u entries", ur.nqueues, UR_DEPTH);
}

/* After the session's loop: the kernel has ended every entry (ENOTCONN)
 * or is about to; a thread still serving a request must be done before
 * the session it uses is destroyed. Bounded: a thread stuck in a branch
 * call must not keep the daemon from exiting. */
void sfs_uring_stop(void)
{
	for (int i = 0; i < 500 && atomic_load(&ur.running) > 0; i++)
		usleep(10000);
	if (atomic_load(&ur.running) > 0)
		sfs_log(SFS_LOG_WARN, "io_uring: %u threads still busy at exit",
			atomic_load(&ur.running));
}

bool sfs_uring_active(void)
{
	return atomic_load(&ur.active);
}

static struct ur_ent *ent_of(uint64_t unique)
{
	if (cur && cur->unique == unique)
		return cur;
	for (unsigned i = 0; i < ur.nents; i++) {
		struct ur_ent *e = ENT(i);

		if (e->unique == unique)
			return e;
	}
	return NULL;
}

/* Copies a reply into the entry of its request. */
static ssize_t fill(struct ur_ent *e, const struct iovec *iov, int count)
{
	size_t total = 0, room = e->payload_cap;
	char *p = e->buf + UR_LEAD;

	for (int i = 1; i < count; i++)
		total += iov[i].iov_len;
	pthread_mutex_lock(&e->lock);
	if (total > room) {
		reply_error(e, EIO);
		sfs_log(SFS_LOG_ERR, "io_uring: a reply of %zu bytes does not fit", total);
	} else {
		memcpy(e->hdr.in_out, iov[0].iov_base, UR_OUT_HEADER);
		for (int i = 1; i < count; i++) {
			/* data built in place (sfs_uring_reply_room) stays */
			if (iov[i].iov_base != p)
				memmove(p, iov[i].iov_base, iov[i].iov_len);
			p += iov[i].iov_len;
		}
		e->hdr.io.payload_sz = (uint32_t)total;
	}
	e->replied = true;
	pthread_cond_signal(&e->replied_cv);
	pthread_mutex_unlock(&e->lock);
	return (ssize_t)(total + iov[0].iov_len);
}

char *sfs_uring_reply_room(size_t len)
{
	if (!cur || len > cur->payload_cap)
		return NULL;
	return cur->buf + UR_LEAD;
}

ssize_t sfs_uring_take(const struct iovec *iov, int count)
{
	uint64_t unique;
	struct ur_ent *e;

	if (!atomic_load(&ur.active) || count < 1 || iov[0].iov_len < UR_OUT_HEADER)
		return -1;
	memcpy(&unique, (const char *)iov[0].iov_base + 8, sizeof(unique));
	/* 0: a notification, which goes through the device */
	if (unique == 0 || !(e = ent_of(unique)))
		return -1;
	return fill(e, iov, count);
}
