/* The state every part of the daemon shares: the mount's options, its
 * FUSE session (to notify the kernel), the current branch snapshot and
 * the root's stack of it. Kept apart from main.c (startup and the loop)
 * so that no operation depends on the file that starts them. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "stackfs/stackfs.h"

struct sfs_mount sfs_m = { .snap_lock = PTHREAD_MUTEX_INITIALIZER };

struct sfs_snap *sfs_snap_current(void)
{
	struct sfs_snap *s;

	pthread_mutex_lock(&sfs_m.snap_lock);
	s = sfs_snap_get(sfs_m.snap);
	pthread_mutex_unlock(&sfs_m.snap_lock);
	return s;
}

void sfs_notify_attr(struct sfs_node *n)
{
	if (sfs_m.se)
		fuse_lowlevel_notify_inval_inode(sfs_m.se, sfs_node_id(n), -1, 0);
}

/* The root's stack: every branch root, down to the first opaque one or
 * the data-only branches. */
int sfs_root_stack(struct sfs_snap *s, struct sfs_stack **out, struct stat *id)
{
	struct sfs_stack *st = sfs_stack_new(s, s->n);
	struct stat top;
	unsigned n = 0;
	int ret = st ? 0 : -ENOMEM;

	for (unsigned i = 0; ret == 0 && i < s->data_from; i++) {
		st->l[n].fd = fcntl(s->b[i]->root_fd, F_DUPFD_CLOEXEC, 0);
		st->l[n].bidx = i;
		ret = st->l[n].fd < 0 ? -errno : sfs_do_fstat(st->l[n].fd, n ? id : &top);
		if (ret < 0)
			break;
		if (n++ == 0)
			*id = top;
		if (i + 1 < s->data_from && sfs_wh_is_opaque(st->l[n - 1].fd) == 1)
			break;
	}
	if (ret < 0 && st)
		sfs_stack_put(st);
	if (ret == 0) {
		st->n = n;
		*out = st;
	}
	return ret;
}

