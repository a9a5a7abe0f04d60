/* Directory streams: opendir (left to the kernel), readdir(plus),
 * fsyncdir. A listing (dirlist.c) is read whole when a stream starts
 * (offset 0) and kept for the directory's node (listings.c), sorted by a
 * cookie derived from each name; the offset after an entry is its
 * cookie. So small getdents buffers and telldir/seekdir never make an
 * entry appear twice or go missing, and a position stays valid even when
 * a rewind re-reads the directory after files were created in it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stackfs/listing/dirahead.h"
#include "stackfs/listing/listings.h"
#include "common/bio.h"
#include "stackfs/ops/ops.h"
#include "union/resolve.h"

/* The kernel opens and releases directories itself once OPENDIR has
 * answered ENOSYS (Linux 5.1+, FUSE_CAP_NO_OPENDIR_SUPPORT): streams keep
 * no state here, their listings are the node's (listings.c). */
static bool opendir_in_kernel;

void sfs_readdir_init(const struct fuse_conn_info *conn)
{
	opendir_in_kernel = conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT;
}

/* readdir(3) skips entries whose d_ino is 0, so ".." needs a number:
 * the parent's, or the root's own. */
static ino_t dotdot_ino(struct sfs_node *n)
{
	ino_t ino = n->ino;

	pthread_mutex_lock(&n->lock);
	if (n->parent)
		ino = n->parent->ino;
	pthread_mutex_unlock(&n->lock);
	return ino;
}

/* Reads st's layers into the listing, and with them, where the
 * directory is spread over enough read-only branches, its name index
 * (dirnames.c), which the lookups of the entries about to be served
 * would otherwise read again, layer by layer. */
static int read_listing(struct sfs_listing *d, struct sfs_node *n, struct sfs_stack *st)
{
	bool *take;
	struct sfs_unames *ix = sfs_dirnames_begin(n, st, &take);
	int ix_ret, ret;

	ret = sfs_dirlist_read_ix(st, n == sfs_node_root(), &d->list, ix, take, &ix_ret);
	if (ix)
		sfs_dirnames_end(n, st, ix, take, ix_ret);
	return ret;
}

/* plus: the kernel asked for attributes, a walk may follow: the
 * subdirectories are read ahead (dirahead.c). */
static int dir_load(struct sfs_listing *d, struct sfs_node *n, bool plus)
{
	struct sfs_stack *st;
	int ret = sfs_node_stack_open(n, &st);

	sfs_count(listings_read, 1);
	sfs_dirlist_free(&d->list);
	if (ret == 0)
		ret = sfs_dirlist_add(&d->list, ".", n->ino, DT_DIR);
	if (ret == 0)
		ret = sfs_dirlist_add(&d->list, "..", dotdot_ino(n), DT_DIR);
	if (ret == 0)
		ret = read_listing(d, n, st);
	if (ret == 0 && plus)
		sfs_dirahead_listed(st, &d->list);
	sfs_stack_put(st);
	d->loaded = ret == 0;
	if (!d->loaded)
		return ret;
	d->list.e[0].cookie = 1;
	d->list.e[1].cookie = 2;
	sfs_dirlist_sort(&d->list, 2);
	return 0;
}

/* The first entry to return for a request at offset off. */
static size_t dir_seek(const struct sfs_listing *d, off_t off)
{
	size_t lo = 0, hi = d->list.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->list.e[mid].cookie <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void sfs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	sfs_count(dir_opens, 1);
	if (opendir_in_kernel) {
		/* not an error: "open them yourself", asked once */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	/* The kernel may keep the listing between opens: every change of a
	 * directory goes through it and drops its copy, and offsets (name
	 * cookies) stay valid across a re-read. What it does by default
	 * where it opens directories itself. */
	fi->fh = 0;
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

/* Adds one readdirplus entry: looks the name up (counting a lookup the
 * kernel will own; unopened where lookup_listed.c can), or gives "."
 * and ".." without one. A mount point
 * inside a branch (its lookup answers EXDEV) is listed without
 * attributes (node id 0: the kernel makes no dentry, a later lookup gets
 * the EXDEV), so the listing goes on past it. Returns the size used, 0
 * when it did not fit (the lookup is undone), or -errno. */
static long add_plus(fuse_req_t req, struct sfs_node *dir, const struct sfs_dirent *de,
		     char *buf, size_t rem, off_t next)
{
	struct fuse_entry_param e;
	bool dots = strcmp(de->name, ".") == 0 || strcmp(de->name, "..") == 0;
	int ret = dots ? 0 : sfs_lookup_listed(dir, de->name, &e);
	size_t sz;

	if (ret == -EAGAIN)
		ret = sfs_lookup_entry(dir, de->name, &e);
	if (dots || ret == -EXDEV) {
		memset(&e, 0, sizeof(e));
		e.attr.st_ino = de->ino;
		e.attr.st_mode = DTTOIF(de->type);
		sz = fuse_add_direntry_plus(req, buf, rem, de->name, &e, next);
		return sz > rem ? 0 : (long)sz;
	}
	if (ret < 0)
		return ret;
	sz = fuse_add_direntry_plus(req, buf, rem, de->name, &e, next);
	if (sz > rem) {
		sfs_node_forget(sfs_node_of(e.ino), 1);
		return 0;
	}
	return (long)sz;
}

static long add_plain(fuse_req_t req, const struct sfs_dirent *de, char *buf,
		      size_t rem, off_t next)
{
	struct stat st = { .st_ino = de->ino, .st_mode = DTTOIF(de->type) };
	size_t sz = fuse_add_direntry(req, buf, rem, de->name, &st, next);

	return sz > rem ? 0 : (long)sz;
}

/* The entries from offset off that fit in size bytes, from n's listing
 * (read again at offset 0). */
static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	struct sfs_node *n = sfs_node_of(ino);
	struct sfs_listing *d = sfs_listing_get(n);
	char *buf = malloc(size);
	size_t pos = 0, i = 0;
	int ret = buf && d ? 0 : -ENOMEM, sync_ret;

	/* the entries' new inode numbers (the listing's d_ino, a plus
	 * entry's node) made durable once, before the reply */
	sfs_meta_ino_batch_begin();
	if (ret == 0 && (off == 0 || !d->loaded))
		ret = dir_load(d, n, plus);
	for (i = ret == 0 ? dir_seek(d, off) : 0; ret == 0 && i < d->list.n; i++) {
		off_t next = d->list.e[i].cookie;
		long sz = plus ? add_plus(req, n, &d->list.e[i], buf + pos, size - pos, next)
			       : add_plain(req, &d->list.e[i], buf + pos, size - pos, next);

		if (sz == -ENOENT)
			continue; /* removed since the listing was read */
		if (sz <= 0) {
			ret = (int)sz;
			break;
		}
		pos += (size_t)sz;
	}
	if ((sync_ret = sfs_meta_ino_batch_end()) < 0) {
		ret = sync_ret; /* none of the numbers may leave: the kernel asks again */
		pos = 0;
	}
	/* the empty reply ends a stream: the listing has served it whole */
	if (d)
		sfs_listing_put(d, ret == 0 && pos == 0 && i >= d->list.n);
	/* An error after some entries: return those; the next call reports. */
	if (ret < 0 && pos == 0)
		sfs_reply_err_op(req, -ret, plus ? "sfs_op_readdirplus" : "sfs_op_readdir");
	else
		fuse_reply_buf(req, buf, pos);
	free(buf);
}

void sfs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, false);
}

void sfs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, true);
}

/* Only where the kernel does not open directories itself: nothing is
 * kept per stream. */
void sfs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	sfs_reply_err(req, 0);
}

void sfs_op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	struct sfs_node *n = sfs_node_of(ino);
	struct sfs_stack *st = sfs_node_stack(n);
	int fd = sfs_do_reopen_dir(st->l[0].fd, O_RDONLY);
	int ret = fd;

	sfs_stack_put(st);
	if (fd >= 0) {
		ret = sfs_sync_view(n, fd, datasync);
		close(fd);
	}
	sfs_reply_err(req, -ret);
}
