/* Copy-up: making an entry exist in the highest rw branch before it is
 * changed. The copy is built in the branch's staging directory
 * (.stackfs/work) — data, owner, xattrs, ACLs, mode, times, origin — and
 * renamed into place in one step, so a crash at any point leaves either
 * the lower entry visible or the complete copy, never a partial one. */
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

#include "stackfs/stackfs.h"
#include "whiteout/metacopy.h"
#include "whiteout/metadir.h"
#include "xattr/xattr.h"

/* Creating upper directories happens once per directory and branch:
 * one lock costs nothing measurable. */
static pthread_mutex_t dir_lock = PTHREAD_MUTEX_INITIALIZER;

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

/* A copy being staged: an O_PATH fd of it, which every step uses, so
 * that none looks a name up again; and its name in work/, where it has
 * one (a regular file is made nameless, O_TMPFILE, where the branch can:
 * then no name exists that anyone could swap before it is placed). */
struct staged {
	char tmp[64];                 /* "" when it has none in work/ */
	int fd;                       /* -1 when none */
	bool fresh;                   /* made by this copy-up (not the index's) */
};

/* Gives the staged copy the source's owner, xattrs, ACLs, mode and
 * times, each on the copy's own fd (sfs_meta_copy). A symlink's xattrs
 * alone go by name: the copy's in work/, a directory only the daemon can
 * write (checked at every mount: whiteout/metatrust.c), the source's in
 * its lower directory (a swap there could only change which labels the
 * copy of a symlink gets). */
static int copy_meta(const struct sfs_layer *src, int sdir, const char *sname,
		     const struct stat *st, int workfd, const struct staged *s)
{
	bool lnk = S_ISLNK(st->st_mode);
	struct sfs_entry_ref from = { src->fd, sdir, lnk ? sname : NULL };
	struct sfs_entry_ref to = { s->fd, workfd, lnk ? s->tmp : NULL };

	return sfs_meta_copy(&from, st, &to, true);
}

/* An O_PATH fd of what the daemon just made at work/tmp, checked to be
 * it: of the type made, the daemon's own, with no other name. */
static int open_made(int workfd, const char *tmp, mode_t type)
{
	int fd = sfs_do_open(workfd, tmp, O_PATH, 0), ret;
	struct stat st;

	if (fd < 0)
		return fd;
	ret = sfs_do_fstat(fd, &st);
	if (ret == 0 && ((st.st_mode & S_IFMT) != type || st.st_uid != geteuid() ||
			 (!S_ISDIR(type) && st.st_nlink != 1)))
		ret = -ESTALE;
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return fd;
}

/* What a regular file's copy gets of its data: all of it, none (an
 * O_TRUNC open), or none but its size (a metadata-only copy, a metacopy:
 * its data is read from below until its first write). */
enum cu_data { CU_FULL, CU_EMPTY, CU_META };

/* The data of a regular file (data: the layer holding it, src's own or
 * a metacopy's, NULL when there is none); s->fd is an O_PATH fd of the
 * new file. */
static int stage_file(const struct sfs_layer *data, const struct stat *st,
		      int workfd, struct staged *s, enum cu_data how)
{
	bool nodata = how != CU_FULL;
	int in = -1, out, ret = 0;

	out = sfs_do_tmpfile(workfd, O_WRONLY, 0600);
	if (out >= 0)
		s->tmp[0] = '\0';
	else /* no O_TMPFILE here; or an error a named file says better
	      * (a removed work/ is EPERM for O_TMPFILE, ENOENT for it) */
		out = sfs_do_open(workfd, s->tmp, O_CREAT | O_EXCL | O_WRONLY, 0600);
	if (out < 0)
		return out;
	s->fd = sfs_do_reopen(out, O_PATH);
	if (s->fd < 0)
		ret = s->fd;
	if (ret == 0 && !nodata && !data)
		ret = -EIO;
	/* a metacopy: sparse at the size, no block of its own */
	if (ret == 0 && how == CU_META && ftruncate(out, st->st_size) < 0)
		ret = -errno;
	if (ret == 0 && !nodata) {
		in = sfs_open_source(data->fd);
		ret = in < 0 ? in : sfs_copy_data(in, out, st->st_size);
	}
	/* normal and always: never placed with data not yet on the disk
	 * (a power cut would show it short or empty, hiding the lower file);
	 * an empty copy (O_TRUNC) has none, nor has a metacopy (its size and
	 * marks are journalled metadata, committed before the link placing
	 * it: NOTES.md "Metadata-only copy-up") */
	if (ret == 0 && !nodata)
		ret = sfs_sync_copy(out);
	if (in >= 0)
		close(in);
	close(out);
	return ret;
}

/* Makes a staged entry of another type than a regular file. */
static int stage_node(const struct sfs_layer *src, const struct stat *st,
		      int workfd, struct staged *s)
{
	char target[PATH_MAX + 1];
	ssize_t len;
	int r;

	if (S_ISLNK(st->st_mode)) {
		len = sfs_do_readlinkat(src->fd, "", target, sizeof(target) - 1);
		if (len < 0)
			return -errno;
		target[len] = '\0';
		r = sfs_do_symlinkat(target, workfd, s->tmp);
	} else if (S_ISDIR(st->st_mode)) {
		r = sfs_do_mkdirat(workfd, s->tmp, 0700);
	} else {
		r = sfs_do_mknodat(workfd, s->tmp, (st->st_mode & S_IFMT) | 0600, st->st_rdev);
	}
	if (r < 0)
		return -errno;
	s->fd = open_made(workfd, s->tmp, st->st_mode & S_IFMT);
	return s->fd < 0 ? s->fd : 0;
}

/* Takes the staged entry away again (its fd too). */
static void unstage(int workfd, struct staged *s, mode_t mode)
{
	if (s->tmp[0])
		sfs_do_unlinkat(workfd, s->tmp, S_ISDIR(mode) ? AT_REMOVEDIR : 0);
	if (s->fd >= 0)
		close(s->fd);
	s->tmp[0] = '\0';
	s->fd = -1;
}

/* Whether the staging directory was removed under the mount (the branch's
 * metadata directory with it): XFS still makes an O_TMPFILE in a dead
 * directory and ext4 does not, so the check is ours, and a copy-up fails
 * with ENOENT on every filesystem rather than place a copy the records
 * around it can no longer describe. */
static int staging_alive(int workfd)
{
	struct stat st;
	int ret = sfs_do_fstat(workfd, &st);

	if (ret < 0)
		return ret;
	return st.st_nlink == 0 ? -ENOENT : 0;
}

/* Makes the staged entry: the type's own creation (a regular file's
 * data from data), then its metadata (src's). */
static int stage_entry(const struct sfs_layer *src, const struct sfs_layer *data, int sdir,
		       const char *sname, const struct stat *st, int workfd, struct staged *s,
		       enum cu_data how)
{
	int ret;

	sfs_temp_name(s->tmp, "cu");
	s->fd = -1;
	s->fresh = true;
	ret = staging_alive(workfd);
	if (ret < 0)
		return ret;
	if (S_ISREG(st->st_mode))
		ret = stage_file(data, st, workfd, s, how);
	else
		ret = stage_node(src, st, workfd, s);
	/* a 0:0 device copied up is a real one (a whiteout has no node): the
	 * copy must read as one too */
	if (ret == 0 && sfs_wh_is_chr_whiteout(st))
		ret = sfs_wh_mark_device(s->fd, "");
	if (ret == 0)
		ret = copy_meta(src, sdir, sname, st, workfd, s);
	if (ret < 0)
		unstage(workfd, s, st->st_mode);
	return ret;
}

/* Whether fds a and b hold the same inode. */
static bool same_inode(int a, int b)
{
	struct stat sa, sb;

	return sfs_do_fstat(a, &sa) == 0 && sfs_do_fstat(b, &sb) == 0 &&
	       sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev;
}

/* A staged directory, renamed to parentfd/name: checked to be the one
 * staged (its name in work/ is the only way to move it), else put back
 * out of the view and -ESTALE. Only a staging area someone else could
 * write would fail this: the mount checks that none can. */
static int rename_dir(int workfd, const struct staged *s, int parentfd, const char *name)
{
	char back[64];
	int fd;

	if (sfs_do_renameat2(workfd, s->tmp, parentfd, name, RENAME_NOREPLACE) < 0)
		return -errno;
	fd = sfs_do_open(parentfd, name, O_PATH, 0);
	if (fd >= 0 && same_inode(fd, s->fd)) {
		close(fd);
		return 0;
	}
	if (fd >= 0)
		close(fd);
	sfs_temp_name(back, "stale");
	sfs_do_renameat2(parentfd, name, workfd, back, RENAME_NOREPLACE);
	sfs_log(SFS_LOG_ERR, "copy-up: the staged directory was replaced in %s/%s before it "
		"was placed: not placed", SFS_METADIR_NAME, SFS_META_WORK);
	return -ESTALE;
}

/* Puts the staged entry s at parentfd/name. A non-directory is linked
 * from its fd, then its name in work/ removed: what is placed is the
 * inode staged, whatever was done to that name. A directory, which has
 * no second name, is renamed and checked (rename_dir). The parent's times
 * are put back: the union's view of the parent has not changed. */
static int place_entry(int workfd, struct staged *s, bool dir, int parentfd,
		       const char *name)
{
	struct stat pst;
	struct timespec tv[2];
	int ret = sfs_do_fstat(parentfd, &pst);

	if (ret == 0)
		ret = dir ? rename_dir(workfd, s, parentfd, name) :
			    sfs_do_link_fd(s->fd, parentfd, name);
	if (ret < 0)
		return ret;
	if (!dir && s->tmp[0])
		sfs_do_unlinkat(workfd, s->tmp, 0); /* an unlinked leftover goes at mount */
	s->tmp[0] = '\0';
	tv[0] = pst.st_atim;
	tv[1] = pst.st_mtim;
	sfs_do_utimensat(parentfd, "", tv, AT_EMPTY_PATH); /* cosmetic: no failure */
	return 0;
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

/* Records on the staged copy which lower entry (src, the node's lower
 * layer) it came from. */
static int set_origin(const struct sfs_stack *st, const struct stat *src,
		      int workfd, const struct staged *s)
{
	bool lnk = S_ISLNK(src->st_mode);
	int dfd = lnk ? workfd : s->fd;
	const char *dname = lnk ? s->tmp : "";
	struct sfs_origin o;
	ssize_t len;
	int ret = sfs_origin_of(st->l[0].fd, "", sfs_layer_branch(st, &st->l[0])->fs_uuid, &o);

	if (ret < 0)
		return ret;
	/* A copy whose attribute names already fill what listxattr can
	 * return (64 KiB) goes without: the record would make its list
	 * unreadable. It then shows its own inode number. */
	len = sfs_xattr_list(dfd, dname, NULL, 0);
	if (len >= 0 && (size_t)len + strlen(SFS_ORIGIN_XATTR) + 1 > XATTR_LIST_MAX) {
		sfs_log(SFS_LOG_WARN, "copy-up: no room for an origin record on the copy of "
			"inode %llu", (unsigned long long)src->st_ino);
		return 0;
	}
	return sfs_origin_set(dfd, dname, &o);
}

/* A placed copy and the directory it was placed in: durable now
 * (always), or when an fsync through the view covers them (normal). A
 * symlink or device comes with its directory (sync.c). */
static int sync_placed(int fd, mode_t mode, int dirfd)
{
	int ret = S_ISREG(mode) || S_ISDIR(mode) ? sfs_sync_changed(fd) : 0;

	return ret < 0 ? ret : sfs_sync_changed(dirfd);
}

/* Places an existing copy at dirfd/name: a hard link, no data copied. */
static int link_copy(int copyfd, int dirfd, const char *name)
{
	struct timespec tv[2];
	struct stat pst;
	int ret = sfs_do_fstat(dirfd, &pst);

	if (ret < 0)
		return ret;
	if (sfs_do_linkat(copyfd, "", dirfd, name, AT_EMPTY_PATH) < 0)
		return -errno;
	tv[0] = pst.st_atim;
	tv[1] = pst.st_mtim;
	sfs_do_utimensat(dirfd, "", tv, AT_EMPTY_PATH); /* cosmetic: no failure */
	return 0;
}

/* Stages a copy of the entry as work/tmp, with its origin; one with
 * several names goes into the index too. Nothing is left on failure. */
static int stage_copy(const struct sfs_stack *st, const struct sfs_layer *sl,
		      const struct stat *src, int workfd, const char *name,
		      enum cu_data how, struct staged *s)
{
	const struct sfs_layer *data = S_ISREG(src->st_mode) && how == CU_FULL ?
				       sfs_stack_data(st) : NULL;
	int ret = stage_entry(&st->l[0], data, sl->fd, name, src, workfd, s, how);

	if (ret < 0)
		return ret;
	ret = set_origin(st, src, workfd, s);
	if (ret == 0 && how == CU_META)
		ret = sfs_metacopy_mark(s->fd, sfs_m.opts.whiteout);
	if (ret == 0 && sfs_index_worthy(src))
		ret = sfs_index_link(st->snap, st->l[0].fd, src, s->fd);
	if (ret < 0)
		unstage(workfd, s, src->st_mode);
	return ret;
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

/* The upper copy of directory n, in branch tb of its parent (stack
 * pst). A directory placed by a racing request is as good as ours. */
static int copy_dir_into(struct sfs_node *n, const struct sfs_stack *st,
			 const struct sfs_stack *pst, const struct sfs_branch *tb,
			 const char *name)
{
	const struct sfs_layer *sl = sfs_stack_in(pst, sfs_layer_branch(st, &st->l[0]));
	const struct sfs_layer *dl = sfs_stack_in(pst, tb);
	int workfd = tb->work_fd;
	struct staged s = { "", -1, false };
	struct stat src;
	int fd, ret = sl && dl ? sfs_do_fstat(st->l[0].fd, &src) : -ESTALE;

	if (ret == 0)
		ret = stage_copy(st, sl, &src, workfd, name, false, &s);
	if (ret == 0)
		ret = place_entry(workfd, &s, true, dl->fd, name);
	if (ret == -EEXIST) {
		/* placed meanwhile (behind the union's back): that one */
		unstage(workfd, &s, S_IFDIR);
		fd = sfs_do_open(dl->fd, name, O_PATH, 0);
		return fd < 0 ? fd : install(n, st, pst->snap, tb, fd, &src, false);
	}
	if (ret < 0) {
		unstage(workfd, &s, S_IFDIR);
		return ret;
	}
	sfs_count(copyups, 1);
	/* flags go on once placed: an immutable entry cannot be renamed */
	ret = sfs_copy_flags(st->l[0].fd, s.fd);
	if (ret < 0) {
		/* back to the old state: the lower entry shows again */
		close(s.fd);
		sfs_do_unlinkat(dl->fd, name, AT_REMOVEDIR);
		return ret;
	}
	ret = sync_placed(s.fd, S_IFDIR, dl->fd);
	if (ret < 0) {
		close(s.fd);
		return ret;
	}
	return install(n, st, pst->snap, tb, s.fd, &src, false);
}

/* Whether parent/name still shows node n's lower entry (1), or no longer
 * (0: a rename replaced it or an unlink removed it since n was reached by
 * the name). Under the parent's namespace lock, so it stays so. */
static int name_shows_lower(struct sfs_node *n, struct sfs_node *parent,
			    const char *name)
{
	struct sfs_stack *pst = sfs_node_stack(parent), *st = NULL;
	struct stat top, id;
	int ret = sfs_resolve(pst, name, &st, &top, &id);

	sfs_stack_put(pst);
	if (ret < 0)
		return ret == -ENOENT ? 0 : ret;
	ret = (uint64_t)id.st_dev == n->key_dev &&
	      (uint64_t)id.st_ino == n->key_ino && !sfs_stack_writable(st);
	sfs_stack_put(st);
	return ret;
}

/* The inode flags of a fresh copy of a regular file (other types have
 * none to copy, and opening a device to ask would be wrong). */
static int copy_file_flags(const struct sfs_layer *src, int fd, mode_t mode)
{
	return S_ISREG(mode) ? sfs_copy_flags(src->fd, fd) : 0;
}

/* Whether a directory was removed: an rmdir through the view moved its
 * upper copy out and deleted it, and a node of an entry it held may still
 * have it as its parent's layer (a hard link reached last by a name in it,
 * changed through another). No name in it shows anything any more. */
static bool dir_removed(int dirfd)
{
	struct stat st;

	return sfs_do_fstat(dirfd, &st) == 0 && st.st_nlink == 0;
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
	int ret = name_shows_lower(n, parent, name);

	if (ret <= 0)
		return ret;
	ret = fresh ? place_entry(workfd, s, false, dirfd, name) :
		      link_copy(s->fd, dirfd, name);
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
			ret = stage_copy(st, sl, &src, workfd, name, how, &s);
	}
	if (ret == 0) {
		sfs_ns_lock(parent);
		ret = place_file(n, parent, &st->l[0], src.st_mode, dl->fd,
				 name, workfd, &s);
		sfs_ns_unlock(parent);
		placed = ret == 1;
		if (placed) /* synced outside the lock */
			ret = sync_placed(s.fd, src.st_mode, dl->fd);
	}
	if (ret == 0 && !placed)
		ret = keep_nameless(&st->l[0], src.st_mode, workfd, &s);
	if (ret < 0) {
		unstage(workfd, &s, src.st_mode);
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
			ret = copy_dir_into(dir, st, pst, tb, name);
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
