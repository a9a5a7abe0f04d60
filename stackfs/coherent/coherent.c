/* -o coherent: the read-only branches watched, so that a change made
 * directly in one shows in the view at once rather than after the
 * kernel's cache timeout (docs/coherent.md "Lower branches that change").
 *
 * fanotify on the whole filesystem of each read-only branch
 * (FAN_MARK_FILESYSTEM), events naming a directory by file handle and
 * the entry by name (FAN_REPORT_DFID_NAME). One thread reads them and
 * hands them to coherent_apply.c, which finds the nodes and tells the
 * kernel; it holds no lock of the daemon's while it does (a notification
 * waits for the kernel's inode lock, which a request may hold while it
 * waits for the daemon). This file is the watch: setup, the thread, the
 * events parsed. Where fanotify cannot watch (no CAP_SYS_ADMIN: a rootless
 * mount), the same thread reads inotify watches of the cached
 * directories instead (coherent_inotify.c). */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "stackfs/stackfs.h"

/* Names appearing, going, moving; data and attributes changing; of
 * directories too. */
#define COH_MASK (FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO | \
		  FAN_MODIFY | FAN_ATTRIB | FAN_ONDIR)
#define COH_BUF (64 * 1024)
/* Events of one read handled together (a read returns at most COH_BUF). */
#define COH_BATCH 2048

/* A watched filesystem: its fsid (what events name) and an fd of a
 * branch root on it, opened for reading (open_by_handle_at takes no
 * O_PATH fd). */
struct coh_fs {
	fsid_t fsid;
	int mount_fd;
};

static struct {
	int fan;                  /* the fanotify group, -1: off */
	int stop;                 /* eventfd: the thread is to end */
	pthread_t thread;
	bool running;
	bool abandoned;           /* did not end at unmount: its fds kept */
	pthread_mutex_t lock;     /* guards the table (branch changes add) */
	struct coh_fs *fs;
	unsigned nfs;
} coh = { .fan = -1, .stop = -1, .lock = PTHREAD_MUTEX_INITIALIZER };

struct sfs_coh_stats sfs_coh_stats;

bool sfs_coherent_on(void)
{
	return coh.fan >= 0 || sfs_coh_ino;
}

const char *sfs_coherent_kind(void)
{
	return coh.fan >= 0 ? "fanotify" : sfs_coh_ino ? "inotify" : "off";
}

/* Under coh.lock: the entry of the filesystem with this fsid, or NULL. */
static struct coh_fs *fs_of(const fsid_t *id)
{
	for (unsigned i = 0; i < coh.nfs; i++)
		if (!memcmp(&coh.fs[i].fsid, id, sizeof(*id)))
			return &coh.fs[i];
	return NULL;
}

/* Under coh.lock: marks the filesystem of branch b, once. */
static int watch_branch(const struct sfs_branch *b, char *err, size_t len)
{
	struct coh_fs *v, e = { .mount_fd = -1 };
	struct statfs sf;
	int ret = 0;

	e.mount_fd = sfs_do_reopen_dir(b->root_fd, O_RDONLY);
	if (e.mount_fd < 0 || fstatfs(e.mount_fd, &sf) < 0) {
		ret = e.mount_fd < 0 ? e.mount_fd : -errno;
		goto fail;
	}
	e.fsid = sf.f_fsid;
	if (fs_of(&e.fsid))
		goto out;
	if (fanotify_mark(coh.fan, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, COH_MASK,
			  e.mount_fd, NULL) < 0) {
		ret = -errno;
		goto fail;
	}
	v = realloc(coh.fs, (coh.nfs + 1) * sizeof(*v));
	if (!v) {
		ret = -ENOMEM;
		goto fail;
	}
	coh.fs = v;
	coh.fs[coh.nfs++] = e;
	return 0;
fail:
	snprintf(err, len, "-o coherent: cannot watch the filesystem of %s: %s%s", b->path,
		 strerror(-ret), ret == -EPERM ?
		 " (watching a filesystem needs CAP_SYS_ADMIN)" : ret == -EXDEV || ret == -EOPNOTSUPP || ret == -ENODEV ?
		 " (fanotify needs a filesystem with file handles and one fsid)" : "");
out:
	if (e.mount_fd >= 0)
		close(e.mount_fd);
	return ret;
}

int sfs_coherent_watch(const struct sfs_snap *s, char *err, size_t len)
{
	int ret = 0;

	if (coh.fan < 0)
		return 0;
	pthread_mutex_lock(&coh.lock);
	for (unsigned i = 0; ret == 0 && i < s->n; i++)
		if (s->b[i]->mode == SFS_BRANCH_RO)
			ret = watch_branch(s->b[i], err, len);
	pthread_mutex_unlock(&coh.lock);
	return ret;
}

/* fanotify on the filesystems of s's read-only branches: 0, or -errno
 * with the reason in err. */
static int open_fanotify(const struct sfs_snap *s, char *err, size_t len)
{
	int ret;

	coh.fan = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK |
				FAN_REPORT_DFID_NAME, O_RDONLY | O_CLOEXEC);
	if (coh.fan < 0) {
		ret = -errno;
		snprintf(err, len, "-o coherent: cannot watch the branches: fanotify: %s%s",
			 strerror(-ret), ret == -EPERM ?
			 " (it needs CAP_SYS_ADMIN: a rootless mount cannot use it)" :
			 ret == -EINVAL ? " (the kernel is older than 5.9)" : "");
		return ret;
	}
	ret = sfs_coherent_watch(s, err, len);
	if (ret < 0)
		sfs_coherent_stop();
	return ret;
}

/* fanotify where it works (one mark per filesystem, whatever the trees);
 * else inotify on the cached directories, said in the log with why. */
int sfs_coherent_open(const struct sfs_snap *s, char *err, size_t len)
{
	int ret = open_fanotify(s, err, len);

	if (ret == 0) {
		sfs_log(SFS_LOG_INFO, "coherent: watching the read-only branches by fanotify "
			"(%u filesystem%s)", coh.nfs, coh.nfs == 1 ? "" : "s");
		return 0;
	}
	sfs_log(SFS_LOG_INFO, "%s", err);
	ret = sfs_cohino_open();
	if (ret < 0) {
		snprintf(err, len, "-o coherent: cannot watch the branches: neither fanotify "
			 "(see above) nor inotify: %s", strerror(-ret));
		return ret;
	}
	sfs_log(SFS_LOG_INFO, "coherent: watching the read-only branches by inotify (fanotify "
		"cannot): a watch per cached directory, up to fs.inotify.max_user_watches");
	return 0;
}

/* The directory an event names, opened (O_PATH), or -errno. */
static int open_dir(const struct fanotify_event_info_fid *fid)
{
	struct file_handle *fh = (struct file_handle *)fid->handle;
	int fd = -ESTALE;
	struct coh_fs *f;

	pthread_mutex_lock(&coh.lock);
	f = fs_of((const fsid_t *)&fid->fsid);
	if (f)
		fd = sfs_open_handle(f->mount_fd, fh->handle_type, fh->f_handle,
				     fh->handle_bytes);
	pthread_mutex_unlock(&coh.lock);
	return fd;
}

/* One event's directory and name into ev: 1, or 0 to skip it. md is
 * the event's header copied out, raw the event's bytes in the buffer
 * (its info records are 4-byte aligned, as they need). */
static int parse_one(const struct fanotify_event_metadata *md, const char *raw,
		     struct sfs_coh_ev *ev)
{
	const char *p = raw + md->metadata_len, *end = raw + md->event_len;

	while (p + sizeof(struct fanotify_event_info_header) <= end) {
		const struct fanotify_event_info_fid *fid = (const void *)p;
		const struct file_handle *fh = (const void *)fid->handle;
		const char *name = (const char *)(fh->f_handle + fh->handle_bytes);

		if (fid->hdr.len == 0 || p + fid->hdr.len > end)
			return 0;
		if (fid->hdr.info_type == FAN_EVENT_INFO_TYPE_DFID_NAME ||
		    fid->hdr.info_type == FAN_EVENT_INFO_TYPE_DFID) {
			bool named = fid->hdr.info_type == FAN_EVENT_INFO_TYPE_DFID_NAME &&
				     name < p + fid->hdr.len && strcmp(name, ".");

			ev->dirfd = open_dir(fid);
			if (ev->dirfd < 0)
				return 0; /* gone already, or not a watched filesystem */
			ev->mask = (uint32_t)md->mask;
			ev->name = named ? strndup(name, (size_t)(p + fid->hdr.len - name)) : NULL;
			if (named && !ev->name) {
				close(ev->dirfd);
				return 0;
			}
			return 1;
		}
		p += fid->hdr.len;
	}
	return 0;
}

/* Applies a batch (or, when events were lost, drops every cache), and
 * frees it. */
static void apply(struct sfs_coh_ev *ev, size_t n, bool overflow)
{
	if (overflow)
		sfs_coh_overflow();
	else
		sfs_coh_apply(ev, n);
	for (size_t i = 0; i < n; i++) {
		close(ev[i].dirfd);
		free(ev[i].name);
	}
}

/* inotify: what is queued read and applied, read by read (an event
 * takes 16 bytes at least: a read this size holds a batch at most). */
static void drain_inotify(int fd, char *buf, struct sfs_coh_ev *ev)
{
	ssize_t len;

	while ((len = read(fd, buf, COH_BATCH * sizeof(struct inotify_event))) > 0) {
		bool overflow = false;
		size_t n = sfs_cohino_parse(buf, (size_t)len, ev, COH_BATCH, &overflow);

		apply(ev, n, overflow);
	}
}

/* Reads what is queued and applies it, batch by batch. An event's header
 * is copied out before it is read: events follow each other at 4-byte
 * boundaries, and the header holds a 64-bit field (UBSan: a misaligned
 * access, undefined). */
static void drain(char *buf, struct sfs_coh_ev *ev)
{
	const size_t hlen = FAN_EVENT_METADATA_LEN;
	pid_t self = getpid();
	ssize_t len;

	while ((len = read(coh.fan, buf, COH_BUF)) > 0) {
		struct fanotify_event_metadata md;
		bool overflow = false;
		size_t n = 0, off = 0;

		for (; off + hlen <= (size_t)len && n < COH_BATCH; off += md.event_len) {
			memcpy(&md, buf + off, hlen);
			if (md.event_len < hlen || md.event_len > (size_t)len - off ||
			    md.metadata_len < hlen || md.metadata_len > md.event_len ||
			    md.vers != FANOTIFY_METADATA_VERSION)
				break;
			atomic_fetch_add_explicit(&sfs_coh_stats.events, 1, memory_order_relaxed);
			if (md.mask & FAN_Q_OVERFLOW)
				overflow = true;
			/* the daemon's own changes (rw branches on the same
			 * filesystem) are known to it already */
			else if (md.pid != self && parse_one(&md, buf + off, &ev[n]))
				n++;
		}
		if (off + hlen <= (size_t)len)
			overflow = true; /* more than a batch, or not understood: never dropped */
		apply(ev, n, overflow);
	}
}

static void *watcher(void *arg)
{
	/* aligned for the records read into it (both kinds hold 64-bit
	 * fields); an alignment must be a power of two (it was 192: ASan
	 * refused it, and C11 leaves it undefined) */
	char *buf = aligned_alloc(_Alignof(max_align_t), COH_BUF);
	struct sfs_coh_ev *ev = calloc(COH_BATCH, sizeof(*ev));
	int fd = coh.fan >= 0 ? coh.fan : sfs_cohino_fd();
	struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
			       { .fd = coh.stop, .events = POLLIN } };

	(void)arg;
	if (!buf || !ev) {
		sfs_log(SFS_LOG_ERR, "coherent: no memory for the watcher: changes made "
			"directly in the branches show only after the timeout");
		goto out;
	}
	while (poll(p, 2, -1) >= 0 || errno == EINTR) {
		if (p[1].revents)
			break;
		if (p[0].revents && fd == coh.fan)
			drain(buf, ev);
		else if (p[0].revents)
			drain_inotify(fd, buf, ev);
	}
out:
	free(buf);
	free(ev);
	return NULL;
}

int sfs_coherent_start(void)
{
	int ret;

	if (!sfs_coherent_on())
		return 0;
	coh.stop = eventfd(0, EFD_CLOEXEC);
	if (coh.stop < 0)
		return -errno;
	ret = -pthread_create(&coh.thread, NULL, watcher, NULL);
	coh.running = ret == 0;
	return ret;
}

/* The thread told to end and waited for, a bounded time: a notification
 * it is sending may wait for the kernel's lock of a directory that a
 * request holds, and after the loop ended nobody answers that request
 * until the unmount that follows. Left running then (the process ends
 * soon), with the fds it uses. */
static bool thread_ended(void)
{
	struct timespec until;
	uint64_t one = 1;

	if (coh.abandoned)
		return false;
	if (!coh.running)
		return true;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2;
	if (write(coh.stop, &one, sizeof(one)) != sizeof(one) ||
	    pthread_timedjoin_np(coh.thread, NULL, &until) != 0) {
		sfs_log(SFS_LOG_WARN, "coherent: the watcher did not end (a notification "
			"waits for the kernel); left to the process's end");
		coh.abandoned = true;
		return false;
	}
	coh.running = false;
	return true;
}

void sfs_coherent_stop(void)
{
	if (!thread_ended())
		return;
	for (unsigned i = 0; i < coh.nfs; i++)
		close(coh.fs[i].mount_fd);
	free(coh.fs);
	coh.fs = NULL;
	coh.nfs = 0;
	if (coh.stop >= 0)
		close(coh.stop);
	if (coh.fan >= 0)
		close(coh.fan);
	coh.stop = coh.fan = -1;
	sfs_cohino_close();
}
