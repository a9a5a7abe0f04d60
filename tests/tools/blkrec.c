/* blkrec: a block-write recorder for the power-loss explorer
 * (tests/crash/explore, docs/durability.md "Power loss").
 *
 *   blkrec serve IMAGE LOG MOUNTPOINT
 *   blkrec list LOG
 *   blkrec replay LOG BASE OUT SPEC
 *
 * serve: a FUSE server (low-level API, one thread, so requests are
 * handled and logged one at a time in the order they arrive) showing
 * MOUNTPOINT/disk, the image file IMAGE, and MOUNTPOINT/mark. Every
 * write to disk is applied to IMAGE and appended to LOG (offset and
 * data); so is every fallocate that punches or zeroes (as zeroes); every
 * FSYNC request is logged as a flush. A loop device over disk
 * (losetup --direct-io=on) turns each block write into a WRITE request
 * and each flush or FUA of the filesystem above into an FSYNC, so LOG is
 * what reached the "disk" and where its cache was emptied. A FLUSH
 * request is close(2), not a cache flush: not logged. A write to mark
 * logs its text as a mark: where in the stream a step of the workload
 * began or ended. Mounts, goes to the background and exits when
 * unmounted (fusermount3 -u MOUNTPOINT).
 *
 * list: one line per record: "N write OFFSET LENGTH", "N zero OFFSET
 * LENGTH", "N flush", "N mark TEXT" (N counts from 0).
 *
 * replay: OUT = BASE (the image before serve) with records applied by
 * SPEC: "N" applies records 0..N-1 (the disk as written up to there,
 * nothing lost), "N+I,J,..." those and then records I, J, ... only, each
 * a write or zero at N or later with no flush between N and it (what a
 * disk cache may have kept of the writes after the last flush it
 * completed); "I:OFF+LEN:OFF+LEN..." applies only those byte ranges of
 * record I, relative to its start (the sectors of a write that reached
 * the medium: tests/crash/model.py cuts them at sector bounds). Writes
 * are applied in log order, so a later write of a
 * block wins, as on the disk. Exit 0, 1 on an error, 2 on usage. */
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/falloc.h>

#define LOG_MAGIC "SFSBLKL1"

enum rec_type { REC_WRITE = 1, REC_ZERO = 2, REC_FLUSH = 3, REC_MARK = 4 };

/* On-disk record header; a WRITE or MARK is followed by len bytes. */
struct rec {
	uint32_t type;
	uint32_t reserved;
	uint64_t off;
	uint64_t len;
};

struct log_head {
	char magic[8];
	uint64_t size;                /* of the image */
};

/* ------------------------------------------------------------ serve */

enum { INO_ROOT = 1, INO_DISK = 2, INO_MARK = 3 };

static struct {
	int img_fd;
	int log_fd;
	off_t size;
	uint64_t nrec;
	int failed;                   /* a log write failed: the log is useless */
} srv = { -1, -1, 0, 0, 0 };

/* Appends one record; a failure poisons the log (every later request
 * fails with EIO, so the run stops rather than record half a history). */
static int log_append(uint32_t type, uint64_t off, uint64_t len, const void *data)
{
	struct rec r = { type, 0, off, len };
	struct iovec iov[2] = { { &r, sizeof(r) }, { (void *)data, data ? len : 0 } };
	size_t want = sizeof(r) + (data ? len : 0);
	ssize_t n;

	if (srv.failed)
		return -EIO;
	n = writev(srv.log_fd, iov, data ? 2 : 1);
	if (n != (ssize_t)want) {
		srv.failed = 1;
		fprintf(stderr, "blkrec: log write failed: %s\n", n < 0 ? strerror(errno) : "short");
		return -EIO;
	}
	srv.nrec++;
	return 0;
}

static void fill_attr(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	if (ino == INO_ROOT) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return;
	}
	st->st_mode = S_IFREG | 0600;
	st->st_nlink = 1;
	st->st_size = ino == INO_DISK ? srv.size : 0;
	st->st_blocks = (st->st_size + 511) / 512;
}

static void rec_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	if (parent != INO_ROOT || (strcmp(name, "disk") && strcmp(name, "mark"))) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	e.ino = strcmp(name, "disk") == 0 ? INO_DISK : INO_MARK;
	fill_attr(e.ino, &e.attr);
	e.attr_timeout = e.entry_timeout = 3600;
	fuse_reply_entry(req, &e);
}

static void rec_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	fill_attr(ino, &st);
	fuse_reply_attr(req, &st, 3600);
}

/* Only mark may be truncated (the shell's '>' does it): to nothing. */
static void rec_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
			int to_set, struct fuse_file_info *fi)
{
	struct stat st;

	if ((to_set & FUSE_SET_ATTR_SIZE) && ino == INO_DISK && attr->st_size != srv.size) {
		fuse_reply_err(req, EPERM);
		return;
	}
	fill_attr(ino, &st);
	fuse_reply_attr(req, &st, 3600);
}

static void rec_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	static const char *names[] = { ".", "..", "disk", "mark" };
	static const fuse_ino_t inos[] = { INO_ROOT, INO_ROOT, INO_DISK, INO_MARK };
	char buf[512];
	size_t used = 0;
	struct stat st;

	for (off_t i = off; i < 4; i++) {
		size_t n;

		fill_attr(inos[i], &st);
		n = fuse_add_direntry(req, buf + used, sizeof(buf) - used, names[i], &st, i + 1);
		if (n > sizeof(buf) - used || used + n > size)
			break;
		used += n;
	}
	fuse_reply_buf(req, buf, used);
}

/* Direct I/O: no page cache of ours between the loop device and the
 * log, so every write reaches it when it is made. */
static void rec_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino == INO_ROOT) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->direct_io = 1;
	fuse_reply_open(req, fi);
}

static void rec_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	char *buf;
	ssize_t n;

	if (ino != INO_DISK || off >= srv.size) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if ((off_t)size > srv.size - off)
		size = (size_t)(srv.size - off);
	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = pread(srv.img_fd, buf, size, off);
	if (n < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void write_mark(fuse_req_t req, const char *buf, size_t size)
{
	size_t len = size;
	int ret;

	while (len > 0 && buf[len - 1] == '\n')
		len--;
	ret = log_append(REC_MARK, 0, len, buf);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_write(req, size);
}

static void rec_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		      off_t off, struct fuse_file_info *fi)
{
	ssize_t n;
	int ret;

	if (ino == INO_MARK) {
		write_mark(req, buf, size);
		return;
	}
	if (off < 0 || off > srv.size || (off_t)size > srv.size - off) {
		fuse_reply_err(req, ENOSPC);
		return;
	}
	n = pwrite(srv.img_fd, buf, size, off);
	if (n != (ssize_t)size) {
		fuse_reply_err(req, n < 0 ? errno : EIO);
		return;
	}
	ret = log_append(REC_WRITE, (uint64_t)off, size, buf);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_write(req, size);
}

/* The loop device's cache flush (vfs_fsync of its backing file). */
static void rec_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		      struct fuse_file_info *fi)
{
	fuse_reply_err(req, ino == INO_DISK ? -log_append(REC_FLUSH, 0, 0, NULL) : 0);
}

/* Discard and write-zeroes of the loop device: the range reads as
 * zeroes afterwards, logged as such. */
static void rec_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
			  off_t len, struct fuse_file_info *fi)
{
	int zeroing = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE;
	int ret;

	if (ino != INO_DISK || !(mode & zeroing) ||
	    (mode & ~(zeroing | FALLOC_FL_KEEP_SIZE))) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	if (off < 0 || len <= 0 || off > srv.size || len > srv.size - off) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (fallocate(srv.img_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len) < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	ret = log_append(REC_ZERO, (uint64_t)off, (uint64_t)len, NULL);
	fuse_reply_err(req, -ret);
}

static const struct fuse_lowlevel_ops rec_ops = {
	.lookup = rec_lookup,
	.getattr = rec_getattr,
	.setattr = rec_setattr,
	.readdir = rec_readdir,
	.open = rec_open,
	.read = rec_read,
	.write = rec_write,
	.fsync = rec_fsync,
	.fallocate = rec_fallocate,
};

static int open_log_for_serve(const char *path)
{
	struct log_head h;

	srv.log_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
	if (srv.log_fd < 0) {
		fprintf(stderr, "blkrec: %s: %s\n", path, strerror(errno));
		return -1;
	}
	memcpy(h.magic, LOG_MAGIC, 8);
	h.size = (uint64_t)srv.size;
	if (write(srv.log_fd, &h, sizeof(h)) != (ssize_t)sizeof(h)) {
		fprintf(stderr, "blkrec: %s: cannot write\n", path);
		return -1;
	}
	return 0;
}

static int serve(const char *image, const char *logpath, const char *mp)
{
	char *argv[] = { "blkrec", "-o", "fsname=blkrec,subtype=blkrec", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	struct fuse_session *se = NULL;
	struct stat st;
	int ret = 1;

	srv.img_fd = open(image, O_RDWR | O_CLOEXEC);
	if (srv.img_fd < 0 || fstat(srv.img_fd, &st) < 0) {
		fprintf(stderr, "blkrec: %s: %s\n", image, strerror(errno));
		return 1;
	}
	srv.size = st.st_size;
	if (open_log_for_serve(logpath) < 0)
		return 1;
	se = fuse_session_new(&args, &rec_ops, sizeof(rec_ops), NULL);
	if (!se)
		return 1;
	if (fuse_set_signal_handlers(se) == 0 && fuse_session_mount(se, mp) == 0) {
		fuse_daemonize(0);
		ret = fuse_session_loop(se) == 0 ? 0 : 1;
		fuse_session_unmount(se);
	}
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	fuse_opt_free_args(&args);
	return ret;
}

/* ------------------------------------------------------------ reading a log */

struct logrd {
	FILE *f;
	uint64_t size;
	uint64_t idx;                 /* of the next record */
	struct rec r;
	char *data;                   /* of the last record read (WRITE, MARK) */
	size_t cap;
};

static int logrd_open(struct logrd *l, const char *path)
{
	struct log_head h;

	memset(l, 0, sizeof(*l));
	l->f = fopen(path, "re");
	if (!l->f) {
		fprintf(stderr, "blkrec: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fread(&h, sizeof(h), 1, l->f) != 1 || memcmp(h.magic, LOG_MAGIC, 8)) {
		fprintf(stderr, "blkrec: %s: not a blkrec log\n", path);
		fclose(l->f);
		return -1;
	}
	l->size = h.size;
	return 0;
}

/* The next record into l->r (and its data): 1, 0 at the end, -1 on a
 * damaged log. */
static int logrd_next(struct logrd *l)
{
	bool has_data;

	if (fread(&l->r, sizeof(l->r), 1, l->f) != 1)
		return feof(l->f) ? 0 : -1;
	has_data = l->r.type == REC_WRITE || l->r.type == REC_MARK;
	if (l->r.type < REC_WRITE || l->r.type > REC_MARK || (has_data && l->r.len > (64u << 20)))
		return -1;
	if (has_data && l->r.len + 1 > l->cap) {
		char *p = realloc(l->data, l->r.len + 1);

		if (!p)
			return -1;
		l->data = p;
		l->cap = l->r.len + 1;
	}
	if (has_data && l->r.len && fread(l->data, l->r.len, 1, l->f) != 1)
		return -1;
	if (has_data)
		l->data[l->r.len] = '\0';
	l->idx++;
	return 1;
}

static void logrd_close(struct logrd *l)
{
	fclose(l->f);
	free(l->data);
}

static int list(const char *path)
{
	struct logrd l;
	int r;

	if (logrd_open(&l, path) < 0)
		return 1;
	while ((r = logrd_next(&l)) > 0) {
		uint64_t n = l.idx - 1;

		switch (l.r.type) {
		case REC_WRITE:
		case REC_ZERO:
			printf("%" PRIu64 " %s %" PRIu64 " %" PRIu64 "\n", n,
			       l.r.type == REC_WRITE ? "write" : "zero", l.r.off, l.r.len);
			break;
		case REC_FLUSH:
			printf("%" PRIu64 " flush\n", n);
			break;
		default:
			printf("%" PRIu64 " mark %s\n", n, l.data);
		}
	}
	logrd_close(&l);
	if (r < 0)
		fprintf(stderr, "blkrec: %s: damaged after record %" PRIu64 "\n", path, l.idx);
	return r < 0 ? 1 : 0;
}

/* ------------------------------------------------------------ replay */

/* One write (or zero) of a state after its flush point: whole, or only
 * the byte ranges given (a write the disk kept some sectors of). */
struct piece {
	uint64_t idx;
	size_t nr;                    /* 0: the whole record */
	uint64_t (*ranges)[2];        /* offset in the record, length */
};

struct spec {
	uint64_t prefix;
	struct piece *extra;          /* ascending idx */
	size_t n;
};

static void free_spec(struct spec *sp)
{
	for (size_t i = 0; i < sp->n; i++)
		free(sp->extra[i].ranges);
	free(sp->extra);
}

/* ":OFF+LEN" ranges after a piece's index, up to the next ',' or the end. */
static int parse_ranges(const char **pp, struct piece *pc)
{
	const char *p = *pp;
	char *end;

	while (*p == ':') {
		uint64_t off, len, (*nr)[2];

		errno = 0;
		off = strtoull(p + 1, &end, 10);
		if (end == p + 1 || errno || *end != '+')
			return -1;
		p = end;
		len = strtoull(p + 1, &end, 10);
		if (end == p + 1 || errno || len == 0)
			return -1;
		nr = realloc(pc->ranges, (pc->nr + 1) * sizeof(*nr));
		if (!nr)
			return -1;
		pc->ranges = nr;
		pc->ranges[pc->nr][0] = off;
		pc->ranges[pc->nr][1] = len;
		pc->nr++;
		p = end;
	}
	*pp = p;
	return 0;
}

static int parse_spec(const char *s, struct spec *sp)
{
	char *end;
	const char *p;

	memset(sp, 0, sizeof(*sp));
	errno = 0;
	sp->prefix = strtoull(s, &end, 10);
	if (end == s || errno || (*end && *end != '+'))
		return -1;
	for (p = end; *p == '+' || *p == ','; ) {
		uint64_t v;
		struct piece *nx;

		errno = 0;
		v = strtoull(p + 1, &end, 10);
		if (end == p + 1 || errno || v < sp->prefix || (sp->n && v <= sp->extra[sp->n - 1].idx))
			return -1;
		nx = realloc(sp->extra, (sp->n + 1) * sizeof(*nx));
		if (!nx)
			return -1;
		sp->extra = nx;
		memset(&sp->extra[sp->n], 0, sizeof(*nx));
		sp->extra[sp->n++].idx = v;
		p = end;
		if (parse_ranges(&p, &sp->extra[sp->n - 1]) < 0)
			return -1;
	}
	return *p ? -1 : 0;
}

/* Copies the data extents of BASE (holes stay holes) into a new OUT of
 * the same size. */
static int copy_base(const char *base, const char *out, uint64_t size)
{
	int in = open(base, O_RDONLY | O_CLOEXEC), o = -1, ret = -1;
	off_t data = 0, hole;

	if (in < 0)
		goto fail;
	o = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (o < 0 || ftruncate(o, (off_t)size) < 0)
		goto fail;
	while ((data = lseek(in, data, SEEK_DATA)) >= 0) {
		hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0)
			goto fail;
		for (off_t at = data; at < hole;) {
			off_t oin = at, oout = at;
			ssize_t n = copy_file_range(in, &oin, o, &oout, (size_t)(hole - at), 0);

			if (n <= 0)
				goto fail;
			at += n;
		}
		data = hole;
	}
	ret = errno == ENXIO ? 0 : -1;
fail:
	if (ret < 0)
		fprintf(stderr, "blkrec: copying %s to %s: %s\n", base, out, strerror(errno));
	if (in >= 0)
		close(in);
	if (o >= 0 && close(o) < 0)
		ret = -1;
	return ret;
}

/* The piece of record idx in the state: NULL when idx is below the
 * prefix (applied whole) or not in the state (*in false). */
static const struct piece *wanted(const struct spec *sp, uint64_t idx, size_t *next, bool *in)
{
	*in = idx < sp->prefix;
	if (!*in && *next < sp->n && sp->extra[*next].idx == idx) {
		*in = true;
		return &sp->extra[(*next)++];
	}
	return NULL;
}

static int apply_range(int o, const struct logrd *l, uint64_t at, uint64_t len)
{
	if (l->r.type == REC_WRITE)
		return pwrite(o, l->data + at, len, (off_t)(l->r.off + at)) == (ssize_t)len ? 0 : -1;
	return fallocate(o, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			 (off_t)(l->r.off + at), (off_t)len);
}

/* The record, or the ranges of it the piece names (each within it). */
static int apply(int o, const struct logrd *l, const struct piece *pc)
{
	if (!pc || pc->nr == 0)
		return apply_range(o, l, 0, l->r.len);
	for (size_t i = 0; i < pc->nr; i++) {
		uint64_t at = pc->ranges[i][0], len = pc->ranges[i][1];

		if (at > l->r.len || len > l->r.len - at) {
			errno = ERANGE;
			return -1;
		}
		if (apply_range(o, l, at, len) < 0)
			return -1;
	}
	return 0;
}

static int replay(const char *logpath, const char *base, const char *out, const char *s)
{
	struct logrd l;
	struct spec sp;
	size_t next = 0;
	bool flush_seen = false;
	int o = -1, r, ret = 1;

	if (parse_spec(s, &sp) < 0) {
		fprintf(stderr, "blkrec: bad SPEC '%s' (N or N+I,J:OFF+LEN,... ascending, I >= N)\n", s);
		free_spec(&sp);
		return 2;
	}
	if (logrd_open(&l, logpath) < 0) {
		free_spec(&sp);
		return 1;
	}
	if (copy_base(base, out, l.size) < 0)
		goto out;
	o = open(out, O_WRONLY | O_CLOEXEC);
	if (o < 0)
		goto out;
	while ((r = logrd_next(&l)) > 0 && (l.idx - 1 < sp.prefix || next < sp.n)) {
		uint64_t idx = l.idx - 1;
		bool isdata = l.r.type == REC_WRITE || l.r.type == REC_ZERO, in;
		const struct piece *pc;

		if (idx >= sp.prefix && l.r.type == REC_FLUSH)
			flush_seen = true;
		pc = wanted(&sp, idx, &next, &in);
		if (!in)
			continue;
		if (idx >= sp.prefix && (!isdata || flush_seen)) {
			fprintf(stderr, "blkrec: record %" PRIu64 " is %s\n", idx,
				isdata ? "after a flush that follows N" : "not a write");
			goto out;
		}
		if (isdata && apply(o, &l, pc) < 0) {
			fprintf(stderr, "blkrec: %s: record %" PRIu64 ": %s\n", out, idx, strerror(errno));
			goto out;
		}
	}
	if (r < 0 || l.idx < sp.prefix || next < sp.n) {
		fprintf(stderr, "blkrec: %s ends before the records SPEC names\n", logpath);
		goto out;
	}
	ret = 0;
out:
	if (o >= 0 && close(o) < 0)
		ret = 1;
	logrd_close(&l);
	free_spec(&sp);
	return ret;
}

static int usage(void)
{
	fprintf(stderr, "usage: blkrec serve IMAGE LOG MOUNTPOINT\n"
			"       blkrec list LOG\n"
			"       blkrec replay LOG BASE OUT N[+I,J[:OFF+LEN...],...]\n");
	return 2;
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "serve") == 0)
		return serve(argv[2], argv[3], argv[4]);
	if (argc == 3 && strcmp(argv[1], "list") == 0)
		return list(argv[2]);
	if (argc == 6 && strcmp(argv[1], "replay") == 0)
		return replay(argv[2], argv[3], argv[4], argv[5]);
	return usage();
}
