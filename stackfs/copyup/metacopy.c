/* Kernel overlayfs metacopy files in the daemon (whiteout/metacopy.h):
 * the union's rules found the layer holding a metacopy's data (l[1] of
 * its stack); a file's reads go there, and a change of its data first
 * brings that data into the file when the file is in a rw branch, as the
 * kernel does: in place, the mark removed only once the data is on the
 * disk, so a crash leaves either the metacopy or the whole file. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/limits.h>

#include "stackfs/stackfs.h"
#include "union/copy.h"
#include "whiteout/metacopy.h"
#include "xattr/records.h"
#include "xattr/xattr.h"

const struct sfs_layer *sfs_stack_data(const struct sfs_stack *st)
{
	if (!st->metacopy)
		return &st->l[0];
	if (st->n > 1)
		return &st->l[1];
	sfs_log_no_data(st->snap, &st->l[0]);
	return NULL;
}

int sfs_stack_data_open(const struct sfs_stack *st, int flags)
{
	const struct sfs_layer *d = sfs_stack_data(st);

	return d ? sfs_do_reopen(d->fd, flags) : -EIO;
}

/* The node's stack from now on: the file alone. */
static int install_plain(struct sfs_node *n, const struct sfs_stack *st)
{
	struct sfs_stack *ns = sfs_stack_new(st->snap, 1);

	if (!ns)
		return -ENOMEM;
	ns->l[0] = st->l[0];
	ns->l[0].fd = fcntl(st->l[0].fd, F_DUPFD_CLOEXEC, 0);
	ns->nlink = st->nlink;
	ns->indexed = st->indexed;
	if (ns->l[0].fd < 0) {
		sfs_stack_put(ns);
		return -errno;
	}
	sfs_node_set_stack(n, ns);
	/* descriptors opened on the lower data move to the file */
	atomic_fetch_add(&n->cu_gen, 1);
	sfs_notify_attr(n);
	return 0;
}

/* An open with O_TRUNC needs no data: the file is emptied, then the
 * mark goes (a crash between leaves an empty metacopy: what was asked). */
static int truncate_plain(int fd)
{
	int out = sfs_do_reopen(fd, O_WRONLY), ret = out < 0 ? out : 0;

	if (ret == 0 && ftruncate(out, 0) < 0)
		ret = -errno;
	if (out >= 0)
		close(out);
	return ret < 0 ? ret : sfs_metacopy_clear(fd);
}

int sfs_metacopy_complete(struct sfs_node *n, bool nodata)
{
	const struct sfs_layer *d;
	struct sfs_stack *st;
	int ret = 0;

	pthread_mutex_lock(sfs_cu_lock(n));
	st = sfs_node_stack(n);
	if (!st->metacopy || !sfs_stack_writable(st))
		goto out;
	d = nodata ? NULL : sfs_stack_data(st);
	if (nodata)
		ret = truncate_plain(st->l[0].fd);
	else
		ret = d ? sfs_metacopy_fill(st->l[0].fd, d->fd, sfs_m.opts.sync != SFS_SYNC_VOLATILE)
			: -EIO;
	if (ret == 0)
		ret = sfs_sync_changed(st->l[0].fd);
	if (ret == 0)
		ret = install_plain(n, st);
out:
	sfs_stack_put(st);
	pthread_mutex_unlock(sfs_cu_lock(n));
	return ret;
}

/* Metadata-only copy-up (docs/union.md "Metadata-only copy-up"): which copies
 * may be one. Not a lower file with several names (the index's copy is
 * every name's, and carries the data: one copy for all), not in a
 * rootless mount (its marks would be user.* attributes, which anyone who
 * may write the branch can forge, and which the union never follows),
 * not an append-only file (the data could not be written into it later),
 * and not one whose data is nowhere (its copy-up fails as before). */
/* The names a metacopy adds to its file's xattrs: the mark, the origin
 * record, the times a fill keeps (each name and its NUL), with room. */
#define MC_NAMES_ROOM 128

/* Whether the lower file's xattr names leave room for a metacopy's: a
 * listing over the kernel's 64 KiB fails (E2BIG on XFS). A whole copy
 * carries no mark. */
static bool names_fit(int fd)
{
	ssize_t len = sfs_xattr_list(fd, "", NULL, 0);

	return len >= 0 && (size_t)len + MC_NAMES_ROOM <= XATTR_LIST_MAX;
}

bool sfs_metacopy_wanted(const struct sfs_stack *st, const struct stat *src)
{
	uint64_t attrs = 0;

	if (sfs_m.opts.metacopy_off || sfs_records_user() || !S_ISREG(src->st_mode) ||
	    src->st_nlink > 1 || st->indexed || !sfs_stack_data(st))
		return false;
	return sfs_do_statx_attrs(st->l[0].fd, &attrs) == 0 &&
	       !(attrs & STATX_ATTR_APPEND) && names_fit(st->l[0].fd);
}

struct sfs_stack *sfs_metacopy_stack(const struct sfs_stack *st, struct sfs_snap *s,
				     unsigned pos, int fd)
{
	const struct sfs_layer *d = sfs_stack_data(st);
	int dpos = d ? sfs_snap_pos(s, sfs_layer_branch(st, d)) : -1;
	struct sfs_stack *ns = sfs_stack_new(s, dpos < 0 ? 1 : 2);

	if (!ns)
		return NULL;
	ns->l[0] = (struct sfs_layer){ .fd = fd, .bidx = pos };
	ns->metacopy = true;
	if (dpos < 0) /* its branch left meanwhile: reads fail, as after a remount */
		return ns;
	ns->l[1] = (struct sfs_layer){ .fd = fcntl(d->fd, F_DUPFD_CLOEXEC, 0), .bidx = (unsigned)dpos };
	if (ns->l[1].fd >= 0)
		return ns;
	ns->n = 1; /* fd stays the caller's */
	ns->l[0].fd = -1;
	sfs_stack_put(ns);
	return NULL;
}
