/* The sync policy (-o sync=always|normal|volatile): what the union makes
 * durable, and when. The rules, as a checker tests them, are in
 * docs/durability.md "Power loss"; tests/crash/explore checks them over crash states.
 *
 * - always: whatever the union changes in a rw branch for an operation
 *   is durable before its reply (sfs_sync_changed fsyncs at once).
 * - normal: a copy's data is durable before the copy is placed
 *   (sfs_sync_copy), so a power cut never shows a short or empty copy
 *   hiding its lower file; what the union changed in directories is
 *   remembered (a set of dirty directories) and made durable by an
 *   fsync through the view of anything beneath them (sfs_sync_view).
 * - volatile: no sync at all, and a header flag in each rw branch's
 *   .stackfs while it is mounted so: a mount after an unclean end
 *   refuses the branch unless told (-o accept_unclean); the flag is the
 *   branches' own (branches/branch_sync.c).
 *
 * On ext4 and XFS an fsync of a directory commits the journal up to it:
 * every metadata change made before, to any inode, comes with it. That is
 * how a directory's fsync covers the symlinks and devices named in it
 * (POSIX has no fsync for them); files and directories the union changed
 * are fsynced themselves. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stackfs/stackfs.h"
#include "whiteout/metadir.h"

/* ---- the dirty directories of normal mode ------------------------------
 * Sharded by inode (no global lock), a fixed number of slots each. An
 * entry carries the sequence number of its last change: a sync removes
 * it only if no change came while it synced. A change that finds its
 * shard full is not recorded: the shard is marked, and the next sync
 * that asks it syncs every rw branch's filesystem whole, then forgets
 * what that covered. */
#define DIRTY_SHARDS 16
#define DIRTY_SLOTS 64

struct dirty_dir {
	dev_t dev;
	ino_t ino;
	unsigned long seq;
};

static struct dirty_shard {
	pthread_mutex_t mu;
	unsigned n;
	unsigned long lost;           /* seq of the last change not recorded, 0: none */
	struct dirty_dir v[DIRTY_SLOTS];
} shards[DIRTY_SHARDS] = {
	[0 ... DIRTY_SHARDS - 1] = { .mu = PTHREAD_MUTEX_INITIALIZER }
};

static atomic_ulong dirty_seq = 1;

static struct dirty_shard *shard_of(dev_t dev, ino_t ino)
{
	return &shards[(ino * 0x9E3779B97F4A7C15ull ^ dev) % DIRTY_SHARDS];
}

static void dirty_add(dev_t dev, ino_t ino)
{
	struct dirty_shard *sh = shard_of(dev, ino);
	unsigned long seq = atomic_fetch_add(&dirty_seq, 1);
	unsigned i;

	pthread_mutex_lock(&sh->mu);
	for (i = 0; i < sh->n; i++) {
		if (sh->v[i].dev == dev && sh->v[i].ino == ino)
			break;
	}
	if (i < sh->n)
		sh->v[i].seq = seq;
	else if (sh->n < DIRTY_SLOTS)
		sh->v[sh->n++] = (struct dirty_dir){ dev, ino, seq };
	else
		sh->lost = seq;
	pthread_mutex_unlock(&sh->mu);
}

/* 0 clean, else the seq of its change (1 when its shard lost one). */
static unsigned long dirty_seq_of(dev_t dev, ino_t ino)
{
	struct dirty_shard *sh = shard_of(dev, ino);
	unsigned long seq = 0;

	pthread_mutex_lock(&sh->mu);
	for (unsigned i = 0; i < sh->n && !seq; i++) {
		if (sh->v[i].dev == dev && sh->v[i].ino == ino)
			seq = sh->v[i].seq;
	}
	if (!seq && sh->lost)
		seq = 1;
	pthread_mutex_unlock(&sh->mu);
	return seq;
}

/* After a sync: forgets the directory if nothing changed it meanwhile. */
static void dirty_done(dev_t dev, ino_t ino, unsigned long seq)
{
	struct dirty_shard *sh = shard_of(dev, ino);

	pthread_mutex_lock(&sh->mu);
	for (unsigned i = 0; i < sh->n; i++) {
		if (sh->v[i].dev == dev && sh->v[i].ino == ino && sh->v[i].seq == seq) {
			sh->v[i] = sh->v[--sh->n];
			break;
		}
	}
	pthread_mutex_unlock(&sh->mu);
}

/* After a sync of every rw filesystem begun at seq: forgets every change
 * made before it, recorded or not. */
static void dirty_forget_before(unsigned long seq)
{
	for (unsigned s = 0; s < DIRTY_SHARDS; s++) {
		struct dirty_shard *sh = &shards[s];

		pthread_mutex_lock(&sh->mu);
		for (unsigned i = 0; i < sh->n;) {
			if (sh->v[i].seq < seq)
				sh->v[i] = sh->v[--sh->n];
			else
				i++;
		}
		if (sh->lost && sh->lost < seq)
			sh->lost = 0;
		pthread_mutex_unlock(&sh->mu);
	}
}

/* ---- syncing ----------------------------------------------------------- */

/* syncfs of filesystem dev, by a branch root on it. */
static int syncfs_dev(dev_t dev)
{
	struct sfs_snap *s = sfs_snap_current();
	int ret = -ENOENT;

	for (unsigned i = 0; i < s->n && ret == -ENOENT; i++) {
		if (s->b[i]->dev == dev)
			ret = sfs_syncfs_dir(s->b[i]->root_fd);
	}
	sfs_snap_put(s);
	return ret;
}

/* fsync of whatever fd holds (O_PATH too): a regular file or directory
 * reopened read-only by its /proc/self/fd link (the same inode), any
 * other type by a syncfs of its filesystem (nothing else reaches it). */
static int sync_fd(int fd, bool datasync)
{
	struct stat st;
	int rfd, ret = sfs_do_fstat(fd, &st), fl = fcntl(fd, F_GETFL);

	if (ret < 0)
		return ret;
	if (fl >= 0 && !(fl & O_PATH))
		return (datasync ? fdatasync(fd) : fsync(fd)) < 0 ? -errno : 0;
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return syncfs_dev(st.st_dev);
	rfd = sfs_do_reopen(fd, O_RDONLY | (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0));
	if (rfd < 0)
		return rfd;
	ret = (datasync ? fdatasync(rfd) : fsync(rfd)) < 0 ? -errno : 0;
	close(rfd);
	return ret;
}

int sfs_sync_copy(int fd)
{
	if (sfs_m.opts.sync == SFS_SYNC_VOLATILE)
		return 0;
	return fsync(fd) < 0 ? -errno : 0;
}

int sfs_sync_changed(int fd)
{
	struct stat st;
	int ret;

	switch (sfs_m.opts.sync) {
	case SFS_SYNC_ALWAYS:
		return sync_fd(fd, false);
	case SFS_SYNC_NORMAL:
		ret = sfs_do_fstat(fd, &st);
		if (ret == 0 && S_ISDIR(st.st_mode))
			dirty_add(st.st_dev, st.st_ino);
		return ret;
	default:
		return 0;
	}
}

/* Every rw branch's filesystem, whole (a shard lost track of a change). */
static int sync_all_rw(void)
{
	struct sfs_snap *s = sfs_snap_current();
	unsigned long seq = atomic_load(&dirty_seq);
	int ret = 0;

	for (unsigned i = 0; i < s->n && ret == 0; i++) {
		if (s->b[i]->mode == SFS_BRANCH_RW)
			ret = sfs_syncfs_dir(s->b[i]->root_fd);
	}
	sfs_snap_put(s);
	if (ret == 0)
		dirty_forget_before(seq);
	return ret;
}

/* fd (a directory of a rw branch, any fd) synced if the union changed it
 * since it was last synced. */
static int sync_if_dirty(int fd)
{
	struct stat st;
	unsigned long seq;
	int ret = sfs_do_fstat(fd, &st);

	if (ret < 0)
		return ret;
	seq = dirty_seq_of(st.st_dev, st.st_ino);
	if (seq == 1)
		return sync_all_rw();
	if (!seq)
		return 0;
	ret = sync_fd(fd, false);
	if (ret == 0)
		dirty_done(st.st_dev, st.st_ino, seq);
	return ret;
}

/* The node's parent, referenced (NULL at the root). */
static struct sfs_node *parent_of(struct sfs_node *n)
{
	struct sfs_node *p;

	pthread_mutex_lock(&n->lock);
	p = n->parent;
	if (p)
		sfs_node_ref(p);
	pthread_mutex_unlock(&n->lock);
	return p;
}

/* What the union changed on n's path in branch b (named by identity: the
 * parents' stacks may be of another snapshot than n's, st): its
 * directories up to the root, and the branch's index (a copy with
 * several names). */
static int sync_path(struct sfs_node *n, const struct sfs_branch *b)
{
	struct sfs_node *p = parent_of(n), *next;
	const struct sfs_layer *l;
	struct sfs_stack *st;
	int ret = b->meta ? sync_if_dirty(b->meta->index_fd) : 0;

	for (; p; p = next) {
		st = sfs_node_stack(p);
		l = sfs_stack_in(st, b);
		if (ret == 0 && l)
			ret = sync_if_dirty(l->fd);
		sfs_stack_put(st);
		next = parent_of(p);
		sfs_node_unref(p);
	}
	return ret;
}

/* fsync of fd; a directory the union changed is then clean. */
static int sync_own(int fd, bool datasync)
{
	struct stat st;
	unsigned long seq;
	int ret = sfs_do_fstat(fd, &st);

	if (ret < 0)
		return ret;
	seq = S_ISDIR(st.st_mode) ? dirty_seq_of(st.st_dev, st.st_ino) : 0;
	ret = sync_fd(fd, datasync);
	if (ret == 0 && seq > 1)
		dirty_done(st.st_dev, st.st_ino, seq);
	return ret;
}

int sfs_sync_view(struct sfs_node *n, int fd, bool datasync)
{
	struct sfs_stack *st;
	int ret;

	if (sfs_m.opts.sync == SFS_SYNC_VOLATILE)
		return 0;
	ret = sync_own(fd, datasync);
	if (ret < 0)
		return ret;
	st = sfs_node_stack(n);
	/* in a ro branch the union changed nothing; with always, all of it
	 * was synced when it was changed. st holds the branch meanwhile. */
	if (sfs_stack_writable(st) && sfs_m.opts.sync != SFS_SYNC_ALWAYS)
		ret = sync_path(n, sfs_layer_branch(st, &st->l[0]));
	sfs_stack_put(st);
	return ret;
}
