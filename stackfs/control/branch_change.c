/* Changing the branches of a live mount. The new snapshot is built and
 * checked aside, then swapped in under the snapshot lock together with
 * the root's stack: a request works on the snapshot its stacks were
 * resolved on, old or new, never a mix. Then the kernel is told to drop
 * every entry it cached, so the next lookups resolve in the new set;
 * inode numbers of entries that stay visible do not change (the registry
 * of ids is kept). Open files stay on the entries they opened. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stackfs/stackfs.h"

/* What refuses a removal without --force. */
static int remove_check(const struct sfs_snap *s, unsigned idx, char *err, size_t errlen)
{
	const struct sfs_branch *b = s->b[idx];
	unsigned open = atomic_load(&b->shared->open_files);
	unsigned rw = 0;

	for (unsigned i = 0; i < s->n; i++)
		rw += s->b[i]->mode == SFS_BRANCH_RW;
	if (open) {
		snprintf(err, errlen, "%s: %u file%s of the branch open (--force removes it anyway)",
			 b->path, open, open == 1 ? " is" : "s are");
		return -EBUSY;
	}
	if (b->mode == SFS_BRANCH_RW && rw == 1) {
		snprintf(err, errlen, "%s: the only rw branch (--force removes it anyway)", b->path);
		return -EBUSY;
	}
	return 0;
}

int sfs_branches_change(const struct sfs_change *c, bool force, char *err, size_t errlen)
{
	struct sfs_snap *old, *s = NULL;
	struct sfs_stack *root;
	struct stat id;
	int ret;

	pthread_mutex_lock(&sfs_m.snap_lock);
	old = sfs_m.snap;
	ret = c->op == SFS_CHANGE_REMOVE && !force ? remove_check(old, c->index, err, errlen) : 0;
	if (ret == 0)
		ret = sfs_snap_change(old, c, sfs_m.opts.mountpoint, sfs_m.opts.whiteout,
				      &s, err, errlen);
	/* a branch added from a nosuid mount must not gain suid here */
	if (ret == 0 && c->op == SFS_CHANGE_ADD)
		ret = sfs_mountflags_check(s, err, errlen);
	/* node ids must stay decodable: a branch whose handles are not */
	if (ret == 0 && c->op == SFS_CHANGE_ADD && sfs_export)
		ret = sfs_export_check(s, err, errlen);
	if (ret == 0 && (ret = sfs_root_stack(s, &root, &id)) < 0)
		snprintf(err, errlen, "reading the branch roots: %s", strerror(-ret));
	if (ret == 0) {
		sfs_node_set_stack(sfs_node_root(), root);
		sfs_m.snap = s;
	}
	pthread_mutex_unlock(&sfs_m.snap_lock);
	if (ret < 0) {
		sfs_snap_put(s);
		return ret;
	}
	sfs_log(SFS_LOG_INFO, "branches changed (generation %u)", s->gen);
	sfs_snap_put(old);
	/* a new read-only branch on another filesystem is watched too */
	if (sfs_coherent_watch(s, err, errlen) < 0)
		sfs_log(SFS_LOG_WARN, "%s: changes made directly in it show after the timeout",
			err);
	sfs_invalidate_all(false);
	return 0;
}
