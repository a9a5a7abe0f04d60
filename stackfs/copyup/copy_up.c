/* Copy-up: making an entry exist in the highest rw branch before it is
 * changed — which node, into which branch, under which locks, and at
 * which name, if the name still shows the node (else the copy stays out
 * of the view, as an unlinked file is its opener's). The copy itself is
 * staged and put in place by copy_stage.c. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <linux/limits.h>

#include "stackfs/branches/branch_caps.h"
#include "stackfs/copyup/copy_stage.h"
#include "whiteout/metacopy.h"
#include "whiteout/metadir.h"
#include "xattr/xattr.h"

/* Creating upper directories happens once per directory and branch:
 * one lock costs nothing measurable. An rmdir holds it too, from its
 * resolution to its whiteout (sfs_dir_copyups_lock), so that a directory
 * copy-up either lands before the removal or sees the name gone; the
 * rmdir's own copy-up of the parent takes it again (recursive). */
static pthread_mutex_t dir_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

void sfs_dir_copyups_lock(bool lock)
{
	if (lock)
		pthread_mutex_lock(&dir_lock);
	else
		pthread_mutex_unlock(&dir_lock);
}

/* Copy-ups of non-directories take a lock striped by node, so that two
 * requests never copy one file at once and different files copy in
 * parallel; nodes carry no lock of their own for it. */
#define CU_STRIPES 64
static pthread_mutex_t cu_locks[CU_STRIPES] = {
	[0 ... CU_STRIPES - 1] = PTHREAD_MUTEX_INITIALIZER
};

pthread_mutex_t *sfs_cu_lock(const struct sfs_node *n)
{
	return &cu_locks[((uintptr_t)n / sizeof(*n)) % CU_STRIPES];
}

bool sfs_stack_writable(const struct sfs_stack *st)
{
	return st->snap->b[st->l[0].bidx]->mode == SFS_BRANCH_RW;
}

void sfs_temp_name(char buf[64], const char *what)
{
	static atomic_ulong seq;

	snprintf(buf, 64, "%s.%d.%lu", what, (int)getpid(),
		 atomic_fetch_add(&seq, 1));
}

/* A stack like st, on snapshot s, with one more layer fd for branch tb
 * (which s has), in branch order. */
static struct sfs_stack *stack_with(const struct sfs_stack *st, struct sfs_snap *s,
				    const struct sfs_branch *tb, int fd)
{
	struct sfs_stack *ns = sfs_stack_rebase(st, s, 1);
	unsigned pos = (unsigned)sfs_snap_pos(s, tb), i;

	if (!ns)
		return NULL;
	for (i = ns->n; i > 0 && ns->l[i - 1].bidx > pos; i--)
		ns->l[i] = ns->l[i - 1];
	ns->l[i] = (struct sfs_layer){ .fd = fd, .bidx = pos };
	ns->n++;
	return ns;
}

/* The parent and name a node was last reached by, referenced. */
static int node_where(struct sfs_node *n, struct sfs_node **parent, char **name)
{
	pthread_mutex_lock(&n->lock);
	*parent = n->parent;
	*name = n->name ? strdup(n->name) : NULL;
	if (*parent)
		sfs_node_ref(*parent);
	pthread_mutex_unlock(&n->lock);
	if (*name)
		return 0;
	if (*parent)
		sfs_node_unref(*parent);
	return -ENOMEM;
}

/* The node's new stack after its copy-up into branch tb of the parent's
 * snapshot s: the copy alone, or above the lower layers for a directory. */
static int install(struct sfs_node *n, const struct sfs_stack *st, struct sfs_snap *s,
		   const struct sfs_branch *tb, int fd, const struct stat *src, bool meta)
{
	struct sfs_stack *ns;

	if (S_ISDIR(src->st_mode)) {
		ns = stack_with(st, s, tb, fd);
	} else if (meta) {
		ns = sfs_metacopy_stack(st, s, (unsigned)sfs_snap_pos(s, tb), fd);
	} else {
		ns = sfs_stack_new(s, 1);
		if (ns) {
			ns->l[0] = (struct sfs_layer){ .fd = fd, .bidx = (unsigned)sfs_snap_pos(s, tb) };
			ns->nlink = st->indexed ? st->nlink :
				    sfs_index_worthy(src) ?
				    (uint32_t)src->st_nlink : 0;
		}
	}
	if (!ns) {
		close(fd);
		return -ENOMEM;
	}
	sfs_node_set_stack(n, ns);
	atomic_fetch_add(&n->cu_gen, 1);
	/* the copy has its own ctime, which the kernel may have cached */
	sfs_notify_attr(n);
	return 0;
}

/* Whether parent/name still shows node n as it was when reached (1), or
 * no longer (0: a rename replaced it, an unlink or rmdir removed it): a
 * non-directory's lower entry (tb NULL), or a directory with no layer in
 * branch tb yet. Under the parent's namespace lock (a file's copy-up) or
 * the upper-directory mutex (a directory's), so it stays so. */
static int name_shows_node(struct sfs_node *n, struct sfs_node *parent, const char *name,
			   const struct sfs_branch *tb)
{
	struct sfs_stack *pst = sfs_node_stack(parent), *st = NULL;
	struct stat top, id;
	int ret = sfs_resolve(pst, name, &st, &top, &id);

	sfs_stack_put(pst);
	if (ret < 0)
		return ret == -ENOENT ? 0 : ret;
	ret = (uint64_t)id.st_dev == n->key_dev && (uint64_t)id.st_ino == n->key_ino &&
	      (tb ? S_ISDIR(top.st_mode) && !sfs_stack_in(st, tb) : !sfs_stack_writable(st));
	sfs_stack_put(st);
	return ret;
}

/* A directory copy that could not take its name (removed from the view,
 * or given to another entry, since the node was reached by it) is the
 * node's all the same, as a removed directory is its holder's: it leaves
 * the staging directory, and a change through the node lands on it, out
 * of the view. Placing it would bring a removed directory back, or (with
 * overlay whiteouts) meet the whiteout, which is no directory. */
static int keep_dir_nameless(int workfd, struct staged *s)
{
	if (sfs_do_unlinkat(workfd, s->tmp, AT_REMOVEDIR) < 0)
		return -errno;
	s->tmp[0] = '\0';
	return 0;
}

/* Under dir_lock: puts the staged directory at dirfd/name if the name
 * still shows node n's lower directory, else keeps it nameless. 1 when
 * placed, 0 when nameless, or -errno with the copy still staged. An entry
 * there already (another's, made since the check: a rename over it) is
 * never taken for the copy. */
static int place_dir(struct sfs_node *n, struct sfs_node *parent, int dirfd,
		     const char *name, const struct sfs_branch *tb, int workfd,
		     struct staged *s)
{
	int ret = name_shows_node(n, parent, name, tb);

	if (ret == 1)
		ret = sfs_cu_place(workfd, s, true, dirfd, name);
	else if (ret == 0)
		ret = -EEXIST;
	if (ret == 0)
		return 1;
	return ret == -EEXIST ? keep_dir_nameless(workfd, s) : ret;
}

/* The upper copy of directory n, reached by parent/name (stack pst), in
 * branch tb; nameless where the name no longer shows n (place_dir). */
static int copy_dir_into(struct sfs_node *n, const struct sfs_stack *st,
			 const struct sfs_stack *pst, struct sfs_node *parent,
			 const struct sfs_branch *tb, const char *name)
{
	const struct sfs_layer *sl = sfs_stack_in(pst, sfs_layer_branch(st, &st->l[0]));
	const struct sfs_layer *dl = sfs_stack_in(pst, tb);
	int workfd = tb->work_fd;
	struct staged s = { "", -1, false };
	struct stat src;
	int placed, ret = sl && dl ? sfs_do_fstat(st->l[0].fd, &src) : -ESTALE;

	if (ret == 0)
		ret = sfs_cu_stage_copy(st, sl, &src, workfd, name, false, &s);
	placed = ret == 0 ? place_dir(n, parent, dl->fd, name, tb, workfd, &s) : ret;
	if (placed < 0) {
		sfs_cu_unstage(workfd, &s, S_IFDIR);
		return placed;
	}
	sfs_count(copyups, 1);
	/* flags go on once placed: an immutable entry cannot be renamed */
	ret = sfs_copy_flags(st->l[0].fd, s.fd);
	if (ret < 0) {
		/* back to the old state: the lower entry shows again */
		close(s.fd);
		if (placed)
			sfs_do_unlinkat(dl->fd, name, AT_REMOVEDIR);
		return ret;
	}
	ret = placed ? sfs_cu_sync_placed(s.fd, S_IFDIR, dl->fd) : 0;
	if (ret < 0) {
		close(s.fd);
		return ret;
	}
	return install(n, st, pst->snap, tb, s.fd, &src, false);
}

/* The inode flags of a fresh copy of a regular file (other types have
 * none to copy, and opening a device to ask would be wrong). */
static int copy_file_flags(const struct sfs_layer *src, int fd, mode_t mode)
{
	return S_ISREG(mode) ? sfs_copy_flags(src->fd, fd) : 0;
}

/* Whether the kernel took fd's entry out of the namespace: its magic
 * link then ends in " (deleted)". */
static bool fd_unlinked(int fd)
{
	static const char mark[] = " (deleted)";
	char p[32], full[PATH_MAX];
	ssize_t n;

	sfs_fd_path(fd, p);
	n = readlink(p, full, sizeof(full) - 1);
	return n >= (ssize_t)strlen(mark) && !memcmp(full + n - strlen(mark), mark, strlen(mark));
}

/* Whether a directory was removed: an rmdir through the view moved its
 * upper copy out and deleted it, and a node of an entry it held may still
 * have it as its parent's layer (a hard link reached last by a name in it,
 * changed through another). No name in it shows anything any more. */
static bool dir_removed(int dirfd)
{
	struct stat st;
	int ret = sfs_do_fstat(dirfd, &st);

	if (ret == 0 && st.st_nlink == 0)
		return true;
	/* a FUSE client may answer the fstat from attributes cached before
	 * the removal (GlusterFS's showed 2 links for a second, and the copy
	 * failed with ENOENT), or refuse it (ESTALE): the kernel's own mark
	 * of a removed dentry is asked then */
	return ret == -ESTALE || ret == -ENOENT || fd_unlinked(dirfd);
}

/* Under the parent's namespace lock: puts the copy under the name if the
 * name still shows the node — the staged s (tmp set), renamed, or an
 * existing copy fd of the index, linked — then a fresh copy's inode
 * flags (after: an immutable entry cannot be renamed). 1 when placed, 0
 * when the name has gone to another entry or its directory was removed,
 * or -errno with nothing placed. */
static int place_file(struct sfs_node *n, struct sfs_node *parent,
		      const struct sfs_layer *src, mode_t mode, int dirfd,
		      const char *name, int workfd, struct staged *s)
{
	bool fresh = s->fresh;
	int ret = name_shows_node(n, parent, name, NULL);

	if (ret <= 0)
		return ret;
	ret = fresh ? sfs_cu_place(workfd, s, false, dirfd, name) :
		      sfs_cu_link_copy(s->fd, dirfd, name);
	if (ret == -EEXIST)
		return 0; /* an entry made there behind the union's back */
	if (ret == -ENOENT && dir_removed(dirfd))
		return 0;
	if (ret < 0 || !fresh)
		return ret < 0 ? ret : 1;
	ret = copy_file_flags(src, s->fd, mode);
	if (ret < 0)
		sfs_do_unlinkat(dirfd, name, 0); /* the lower entry shows again */
	return ret < 0 ? ret : 1;
}

/* A copy that could not take its name is the node's all the same, as an
 * unlinked file is its opener's: it leaves the staging directory (one
 * with other lower names stays in the index for them), then gets its
 * flags. */
static int keep_nameless(const struct sfs_layer *src, mode_t mode, int workfd,
			 struct staged *s)
{
	if (!s->fresh)
		return 0; /* the index entry, as it was */
	if (s->tmp[0] && sfs_do_unlinkat(workfd, s->tmp, 0) < 0)
		return -errno;
	s->tmp[0] = '\0';
	return copy_file_flags(src, s->fd, mode);
}

/* Whether a fresh copy that lost its name can be kept nameless. Not on
 * a branch without O_TMPFILE, where it was staged under a name: such a
 * filesystem need not keep an unlinked file usable (GlusterFS's client
 * answers ESTALE to the reopen of one). There the call fails with
 * ESTALE, on which the kernel looks the name up again and redoes it on
 * what the name now holds (the file renamed over it, or nothing): the
 * call then comes after the change, as it may. */
static bool nameless_usable(const struct sfs_branch *tb, const struct staged *s)
{
	return !s->fresh || !(tb->lacks & SFS_LACKS_TMPFILE);
}

/* Copies non-directory n, reached by parent/name (stack pst), into branch
 * bidx. When the name has gone to another entry since n was reached by it
 * (a rename over it, an unlink), the copy stays nameless: the open or
 * change that asked for it works on it as on an unlinked file, and never
 * fails with EEXIST or touches the entry now at the name. */
static int copy_file_into(struct sfs_node *n, const struct sfs_stack *st,
			  const struct sfs_stack *pst, struct sfs_node *parent,
			  const struct sfs_branch *tb, const char *name, unsigned flags)
{
	const struct sfs_layer *sl = sfs_stack_in(pst, sfs_layer_branch(st, &st->l[0]));
	const struct sfs_layer *dl = sfs_stack_in(pst, tb);
	int workfd = tb->work_fd;
	struct staged s = { "", -1, false };
	struct stat src;
	bool fresh = false, placed = false;
	enum cu_data how = (flags & SFS_CU_NODATA) ? CU_EMPTY : CU_FULL;
	int ret = sl && dl ? sfs_do_fstat(st->l[0].fd, &src) : -ESTALE;

	if (ret == 0 && !(flags & (SFS_CU_DATA | SFS_CU_NODATA)) && sfs_metacopy_wanted(st, &src))
		how = CU_META;
	if (ret == 0) {
		s.fd = sfs_index_copy_of(st, &src);
		fresh = s.fd < 0;
		if (fresh)
			ret = sfs_cu_stage_copy(st, sl, &src, workfd, name, how, &s);
	}
	if (ret == 0) {
		sfs_ns_lock(parent);
		ret = place_file(n, parent, &st->l[0], src.st_mode, dl->fd,
				 name, workfd, &s);
		sfs_ns_unlock(parent);
		placed = ret == 1;
		if (placed) /* synced outside the lock */
			ret = sfs_cu_sync_placed(s.fd, src.st_mode, dl->fd);
	}
	if (ret == 0 && !placed)
		ret = nameless_usable(tb, &s) ? keep_nameless(&st->l[0], src.st_mode, workfd, &s) :
						-ESTALE;
	if (ret < 0) {
		sfs_cu_unstage(workfd, &s, src.st_mode);
		return ret;
	}
	sfs_count(copyups, 1);
	if (fresh && S_ISREG(src.st_mode) && how == CU_FULL)
		sfs_count(copyup_bytes, (uint64_t)src.st_size);
	return install(n, st, pst->snap, tb, s.fd, &src, how == CU_META);
}

int sfs_dir_ensure_layer(struct sfs_node *dir, const struct sfs_branch *tb,
			 struct sfs_stack **out)
{
	struct sfs_stack *st = sfs_node_stack(dir), *pst = NULL;
	struct sfs_node *parent;
	char *name;
	int ret;

	if (sfs_stack_in(st, tb) || dir == sfs_node_root()) {
		*out = st;
		return sfs_stack_in(st, tb) ? 0 : -ENOENT;
	}
	sfs_stack_put(st);
	ret = node_where(dir, &parent, &name);
	if (ret < 0)
		return ret;
	ret = sfs_dir_ensure_layer(parent, tb, &pst);
	if (ret == 0) {
		pthread_mutex_lock(&dir_lock);
		st = sfs_node_stack(dir);
		if (!sfs_stack_in(st, tb))
			ret = copy_dir_into(dir, st, pst, parent, tb, name);
		sfs_stack_put(st);
		pthread_mutex_unlock(&dir_lock);
		sfs_stack_put(pst);
	}
	sfs_node_unref(parent);
	free(name);
	if (ret == 0)
		*out = sfs_node_stack(dir);
	return ret;
}

/* Whether a resolution is of node n (the same identity). */
static bool is_node(const struct sfs_node *n, const struct stat *id)
{
	return (uint64_t)id->st_dev == n->key_dev && (uint64_t)id->st_ino == n->key_ino;
}

/* The branch a copy-up through directory dir goes into: the highest rw
 * branch of dir's snapshot, held by *hold (a reference to dir's stack);
 * -EROFS when there is none. */
static int target_of(struct sfs_node *dir, struct sfs_stack **hold, struct sfs_branch **tb)
{
	*hold = sfs_node_stack(dir);
	*tb = sfs_snap_top_rw((*hold)->snap);
	return *tb ? 0 : -EROFS;
}

int sfs_node_copy_up_at(struct sfs_node *n, struct sfs_node *parent,
			const char *name)
{
	struct sfs_stack *st = NULL, *pst = NULL, *hold;
	struct sfs_branch *tb;
	struct stat top, id;
	int ret = target_of(parent, &hold, &tb);

	if (ret == 0 && n->type == S_IFDIR)
		ret = -EISDIR;
	if (ret == 0)
		ret = sfs_dir_ensure_layer(parent, tb, &pst);
	if (ret < 0)
		goto out;
	/* resolved under the lock: a copy-up through another name of the
	 * node (a hard link) is either done, and this name shows its copy
	 * from the index, or not begun */
	pthread_mutex_lock(sfs_cu_lock(n));
	ret = sfs_resolve(pst, name, &st, &top, &id);
	if (ret == 0 && !is_node(n, &id))
		ret = -ESTALE;
	if (ret == 0 && !sfs_stack_writable(st))
		ret = copy_file_into(n, st, pst, parent, tb, name, SFS_CU_DATA);
	pthread_mutex_unlock(sfs_cu_lock(n));
	if (st)
		sfs_stack_put(st);
	sfs_stack_put(pst);
out:
	sfs_stack_put(hold);
	return ret;
}

/* Where a node's copy-up goes: its parent and name now, and the highest
 * rw branch of the parent's snapshot (held by hold). */
struct cu_where {
	struct sfs_node *parent;
	char *name;
	struct sfs_stack *hold;
	struct sfs_branch *tb;
};

/* Releases what where_begin took. */
static void where_end(struct cu_where *w)
{
	sfs_stack_put(w->hold);
	sfs_node_unref(w->parent);
	free(w->name);
}

/* 0 with w filled (where_end releases it), or -errno with nothing held. */
static int where_begin(struct sfs_node *n, struct cu_where *w)
{
	int ret = node_where(n, &w->parent, &w->name);

	if (ret < 0)
		return ret;
	ret = target_of(w->parent, &w->hold, &w->tb);
	if (ret < 0)
		where_end(w);
	return ret;
}

/* Copies a non-directory up into the highest rw branch of its parent's
 * snapshot. */
static int copy_up_file(struct sfs_node *n, unsigned flags)
{
	struct sfs_stack *st, *pst = NULL;
	struct cu_where w;
	int ret = where_begin(n, &w);

	if (ret < 0)
		return ret;
	ret = sfs_dir_ensure_layer(w.parent, w.tb, &pst);
	if (ret == 0) {
		pthread_mutex_lock(sfs_cu_lock(n));
		st = sfs_node_stack(n);
		if (!sfs_stack_writable(st))
			ret = copy_file_into(n, st, pst, w.parent, w.tb, w.name, flags);
		sfs_stack_put(st);
		pthread_mutex_unlock(sfs_cu_lock(n));
		sfs_stack_put(pst);
	}
	where_end(&w);
	return ret;
}

/* A directory's upper copy in the highest rw branch of its parent's
 * snapshot. */
static int copy_up_dir(struct sfs_node *n)
{
	struct sfs_stack *st = NULL;
	struct cu_where w;
	int ret = where_begin(n, &w);

	if (ret < 0)
		return ret;
	ret = sfs_dir_ensure_layer(n, w.tb, &st);
	if (st)
		sfs_stack_put(st);
	where_end(&w);
	return ret;
}

int sfs_node_copy_up(struct sfs_node *n, unsigned flags, struct sfs_stack **out)
{
	struct sfs_stack *st;
	int ret = sfs_node_stack_open(n, &st);

	if (ret < 0) { /* its inode is gone from its branch (ESTALE) */
		sfs_stack_put(st);
		return ret;
	}
	if (sfs_stack_writable(st) && !(st->metacopy && (flags & SFS_CU_DATA))) {
		*out = st;
		return 0;
	}
	if (sfs_stack_writable(st)) {
		sfs_stack_put(st);
		ret = sfs_metacopy_complete(n, flags & SFS_CU_NODATA);
		*out = ret < 0 ? NULL : sfs_node_stack(n);
		return ret;
	}
	sfs_stack_put(st);
	if (n == sfs_node_root())
		return -EROFS; /* the root is every branch's root: never lower-only */
	if (n->type == S_IFDIR)
		ret = copy_up_dir(n);
	else
		ret = copy_up_file(n, flags);
	if (ret < 0) {
		if (ret != -EROFS)
			sfs_log(SFS_LOG_WARN, "copy-up of %s failed: %s",
				n->name ? n->name : "/", strerror(-ret));
		return ret;
	}
	*out = sfs_node_stack(n);
	return sfs_stack_writable(*out) ? 0 : -EROFS;
}

int sfs_node_writable(struct sfs_node *n, struct sfs_stack **out)
{
	return sfs_node_copy_up(n, 0, out);
}
