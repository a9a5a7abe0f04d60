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

static pthread_mutex_t *cu_lock_of(const struct sfs_node *n)
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

/* "/proc/self/fd/DIRFD/NAME": a path to an entry that the xattr and ACL
 * copy functions take, without following the entry if a symlink. */
static void entry_path(char *buf, size_t len, int dirfd, const char *name)
{
	snprintf(buf, len, "/proc/self/fd/%d/%s", dirfd, name);
}

/* Gives the staged copy the source's owner, xattrs, ACLs, mode and
 * times, in an order where no step undoes an earlier one: chown clears
 * set-ID bits and capabilities, so it goes first; times go last. */
static int copy_meta(int sdir, const char *sname, const struct stat *src,
		     int workfd, const char *tmp)
{
	struct timespec tv[2] = { src->st_atim, src->st_mtim };
	bool lnk = S_ISLNK(src->st_mode);
	char sp[300], dp[300];
	int ret;

	if (fchownat(workfd, tmp, src->st_uid, src->st_gid, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	entry_path(sp, sizeof(sp), sdir, sname);
	entry_path(dp, sizeof(dp), workfd, tmp);
	ret = sfs_xattr_copy(sp, dp, lnk);
	if (ret < 0)
		return ret;
	if (!lnk && fchmodat(workfd, tmp, src->st_mode & 07777, 0) < 0)
		return -errno;
	if (utimensat(workfd, tmp, tv, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return 0;
}

static int stage_file(const struct sfs_layer *src, const struct stat *st,
		      int workfd, const char *tmp, bool nodata)
{
	int in = -1, out, ret = 0;

	out = sfs_open_beneath(workfd, tmp, O_CREAT | O_EXCL | O_WRONLY, 0600);
	if (out < 0)
		return out;
	if (!nodata) {
		/* reading the lower file must not change it, atime included */
		in = sfs_reopen(src->fd, O_RDONLY | O_NOATIME);
		if (in == -EPERM) /* not the owner, without CAP_FOWNER */
			in = sfs_reopen(src->fd, O_RDONLY);
		ret = in < 0 ? in : sfs_copy_data(in, out, st->st_size);
	}
	if (ret == 0 && sfs_m.opts.fsync && fsync(out) < 0)
		ret = -errno;
	if (in >= 0)
		close(in);
	close(out);
	return ret;
}

/* Makes the staged entry: the type's own creation, then its metadata. */
static int stage_entry(const struct sfs_layer *src, int sdir, const char *sname,
		       const struct stat *st, int workfd, char tmp[64], bool nodata)
{
	char target[PATH_MAX + 1];
	ssize_t len;
	int ret = 0;

	sfs_temp_name(tmp, "cu");
	if (S_ISREG(st->st_mode)) {
		ret = stage_file(src, st, workfd, tmp, nodata);
	} else if (S_ISLNK(st->st_mode)) {
		len = readlinkat(src->fd, "", target, sizeof(target) - 1);
		if (len < 0)
			return -errno;
		target[len] = '\0';
		if (symlinkat(target, workfd, tmp) < 0)
			return -errno;
	} else if (S_ISDIR(st->st_mode)) {
		if (mkdirat(workfd, tmp, 0700) < 0)
			return -errno;
	} else if (mknodat(workfd, tmp, (st->st_mode & S_IFMT) | 0600, st->st_rdev) < 0) {
		return -errno;
	} else if (sfs_wh_is_chr_whiteout(st)) {
		/* a 0:0 device copied up is a real one (a whiteout has no
		 * node): the copy must read as one too */
		ret = sfs_wh_mark_device(workfd, tmp);
	}
	if (ret == 0)
		ret = copy_meta(sdir, sname, st, workfd, tmp);
	if (ret < 0)
		unlinkat(workfd, tmp, S_ISDIR(st->st_mode) ? AT_REMOVEDIR : 0);
	return ret;
}

/* Moves a staged entry to parentfd/name. The parent's times are put back:
 * the union's view of the parent has not changed. */
static int place_entry(int workfd, const char *tmp, int parentfd, const char *name)
{
	struct stat pst;
	struct timespec tv[2];
	int ret = sfs_fstat(parentfd, &pst);

	if (ret < 0)
		return ret;
	if (renameat2(workfd, tmp, parentfd, name, RENAME_NOREPLACE) < 0)
		return -errno;
	tv[0] = pst.st_atim;
	tv[1] = pst.st_mtim;
	utimensat(parentfd, "", tv, AT_EMPTY_PATH); /* cosmetic: no failure */
	return 0;
}

/* A stack like st with one more layer for branch bidx, in branch order. */
static struct sfs_stack *stack_with(const struct sfs_stack *st, unsigned bidx, int fd)
{
	struct sfs_stack *ns = sfs_stack_new(st->snap, st->n + 1);
	unsigned j = 0;

	if (!ns)
		return NULL;
	for (unsigned i = 0; i < st->n; i++) {
		if (j == i && st->l[i].bidx > bidx)
			ns->l[j++] = (struct sfs_layer){ fd, bidx };
		ns->l[j].bidx = st->l[i].bidx;
		ns->l[j++].fd = fcntl(st->l[i].fd, F_DUPFD_CLOEXEC, 0);
	}
	if (j == st->n)
		ns->l[j] = (struct sfs_layer){ fd, bidx };
	for (unsigned i = 0; i < ns->n; i++) {
		if (ns->l[i].fd < 0) {
			sfs_stack_put(ns);
			return NULL;
		}
	}
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

/* Records on the staged copy which lower entry it came from. */
static int set_origin(const struct sfs_stack *st, int sdir, const char *sname,
		      int workfd, const char *tmp)
{
	struct sfs_origin o;
	char p[300];
	ssize_t len;
	int ret = sfs_origin_of(sdir, sname, st->snap->b[st->l[0].bidx]->fs_uuid, &o);

	if (ret < 0)
		return ret;
	/* A copy whose attribute names already fill what listxattr can
	 * return (64 KiB) goes without: the record would make its list
	 * unreadable. It then shows its own inode number. */
	entry_path(p, sizeof(p), workfd, tmp);
	len = llistxattr(p, NULL, 0);
	if (len >= 0 && (size_t)len + sizeof(SFS_ORIGIN_XATTR) > XATTR_LIST_MAX) {
		sfs_log(SFS_LOG_WARN, "copy-up of %s: no room for its origin record", sname);
		return 0;
	}
	return sfs_origin_set(workfd, tmp, &o);
}

/* The copy a lower file with several names already has in the index
 * (copied up through another name), as an fd to link: its own fd when
 * the name shows it already, else the index entry, else -1. */
static int indexed_copy(const struct sfs_stack *st, const struct stat *src)
{
	if (st->indexed)
		return fcntl(st->l[0].fd, F_DUPFD_CLOEXEC, 0);
	if (!S_ISREG(src->st_mode) || src->st_nlink < 2)
		return -1;
	return sfs_index_open_of(st->snap, st->l[0].fd, src);
}

/* Places an existing copy at dirfd/name: a hard link, no data copied. */
static int link_copy(int copyfd, int dirfd, const char *name)
{
	struct timespec tv[2];
	struct stat pst;
	int ret = sfs_fstat(dirfd, &pst);

	if (ret < 0)
		return ret;
	if (linkat(copyfd, "", dirfd, name, AT_EMPTY_PATH) < 0)
		return -errno;
	tv[0] = pst.st_atim;
	tv[1] = pst.st_mtim;
	utimensat(dirfd, "", tv, AT_EMPTY_PATH); /* cosmetic: no failure */
	return 0;
}

/* Stages a copy of the entry as work/tmp, with its origin; one with
 * several names goes into the index too. Nothing is left on failure. */
static int stage_copy(const struct sfs_stack *st, const struct sfs_layer *sl,
		      const struct stat *src, int workfd, const char *name,
		      bool nodata, char tmp[64])
{
	int ret = stage_entry(&st->l[0], sl->fd, name, src, workfd, tmp, nodata);

	if (ret < 0) {
		tmp[0] = '\0';
		return ret;
	}
	ret = set_origin(st, sl->fd, name, workfd, tmp);
	if (ret == 0 && S_ISREG(src->st_mode) && src->st_nlink > 1)
		ret = sfs_index_link(st->snap, st->l[0].fd, src, workfd, tmp);
	if (ret < 0) {
		unlinkat(workfd, tmp, S_ISDIR(src->st_mode) ? AT_REMOVEDIR : 0);
		tmp[0] = '\0';
	}
	return ret;
}

/* The node's new stack after its copy-up: the copy alone, or above the
 * lower layers for a directory. */
static int install(struct sfs_node *n, const struct sfs_stack *st,
		   unsigned bidx, int fd, const struct stat *src)
{
	struct sfs_stack *ns;

	if (S_ISDIR(src->st_mode)) {
		ns = stack_with(st, bidx, fd);
	} else {
		ns = sfs_stack_new(st->snap, 1);
		if (ns) {
			ns->l[0] = (struct sfs_layer){ fd, bidx };
			ns->nlink = st->indexed ? st->nlink :
				    S_ISREG(src->st_mode) && src->st_nlink > 1 ?
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

/* The upper copy of directory n, in branch bidx of its parent (stack
 * pst). A directory placed by a racing request is as good as ours. */
static int copy_dir_into(struct sfs_node *n, const struct sfs_stack *st,
			 const struct sfs_stack *pst, unsigned bidx, const char *name)
{
	const struct sfs_layer *sl = sfs_stack_in(pst, st->l[0].bidx);
	const struct sfs_layer *dl = sfs_stack_in(pst, bidx);
	int workfd = st->snap->b[bidx]->work_fd;
	char tmp[64];
	struct stat src;
	int fd, ret = sl && dl ? sfs_fstat(st->l[0].fd, &src) : -ESTALE;

	if (ret == 0)
		ret = stage_copy(st, sl, &src, workfd, name, false, tmp);
	if (ret < 0)
		return ret;
	ret = place_entry(workfd, tmp, dl->fd, name);
	if (ret < 0)
		unlinkat(workfd, tmp, AT_REMOVEDIR);
	if (ret < 0 && ret != -EEXIST)
		return ret;
	sfs_count(copyups, 1);
	fd = sfs_path_fd(dl->fd, name);
	if (fd < 0)
		return fd;
	/* flags go on once placed: an immutable entry cannot be renamed */
	ret = ret == 0 ? sfs_copy_flags(st->l[0].fd, fd) : 0;
	if (ret < 0) {
		/* back to the old state: the lower entry shows again */
		close(fd);
		unlinkat(dl->fd, name, AT_REMOVEDIR);
		return ret;
	}
	return install(n, st, bidx, fd, &src);
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

/* Under the parent's namespace lock: puts the copy under the name if the
 * name still shows the node — the staged tmp, renamed, or (tmp empty) an
 * existing copy fd of the index, linked — then a fresh copy's inode flags
 * (after: an immutable entry cannot be renamed). 1 when placed, 0 when
 * the name has gone to another entry, or -errno with nothing placed. */
static int place_file(struct sfs_node *n, struct sfs_node *parent,
		      const struct sfs_layer *src, mode_t mode, int dirfd,
		      const char *name, int fd, int workfd, const char *tmp)
{
	int ret = name_shows_lower(n, parent, name);

	if (ret <= 0)
		return ret;
	ret = tmp[0] ? place_entry(workfd, tmp, dirfd, name) :
		       link_copy(fd, dirfd, name);
	if (ret == -EEXIST)
		return 0; /* an entry made there behind the union's back */
	if (ret < 0 || !tmp[0])
		return ret < 0 ? ret : 1;
	ret = copy_file_flags(src, fd, mode);
	if (ret < 0)
		unlinkat(dirfd, name, 0); /* the lower entry shows again */
	return ret < 0 ? ret : 1;
}

/* A copy that could not take its name is the node's all the same, as an
 * unlinked file is its opener's: it leaves the staging directory (one
 * with other lower names stays in the index for them), then gets its
 * flags. */
static int keep_nameless(const struct sfs_layer *src, mode_t mode, int fd,
			 int workfd, char tmp[64])
{
	if (!tmp[0])
		return 0; /* the index entry, as it was */
	if (unlinkat(workfd, tmp, 0) < 0)
		return -errno;
	tmp[0] = '\0';
	return copy_file_flags(src, fd, mode);
}

/* Copies non-directory n, reached by parent/name (stack pst), into branch
 * bidx. When the name has gone to another entry since n was reached by it
 * (a rename over it, an unlink), the copy stays nameless: the open or
 * change that asked for it works on it as on an unlinked file, and never
 * fails with EEXIST or touches the entry now at the name. */
static int copy_file_into(struct sfs_node *n, const struct sfs_stack *st,
			  const struct sfs_stack *pst, struct sfs_node *parent,
			  unsigned bidx, const char *name, bool nodata)
{
	const struct sfs_layer *sl = sfs_stack_in(pst, st->l[0].bidx);
	const struct sfs_layer *dl = sfs_stack_in(pst, bidx);
	int workfd = st->snap->b[bidx]->work_fd;
	char tmp[64] = "";
	struct stat src;
	int fd = -1, ret = sl && dl ? sfs_fstat(st->l[0].fd, &src) : -ESTALE;

	if (ret == 0) {
		fd = indexed_copy(st, &src);
		if (fd < 0)
			ret = stage_copy(st, sl, &src, workfd, name, nodata, tmp);
		if (ret == 0 && fd < 0)
			ret = fd = sfs_path_fd(workfd, tmp);
	}
	if (ret >= 0) {
		sfs_ns_lock(parent);
		ret = place_file(n, parent, &st->l[0], src.st_mode, dl->fd,
				 name, fd, workfd, tmp);
		sfs_ns_unlock(parent);
	}
	if (ret == 0)
		ret = keep_nameless(&st->l[0], src.st_mode, fd, workfd, tmp);
	if (ret < 0) {
		if (tmp[0])
			unlinkat(workfd, tmp, 0);
		if (fd >= 0)
			close(fd);
		return ret;
	}
	sfs_count(copyups, 1);
	if (tmp[0] && S_ISREG(src.st_mode) && !nodata)
		sfs_count(copyup_bytes, (uint64_t)src.st_size);
	return install(n, st, bidx, fd, &src);
}

int sfs_dir_ensure_layer(struct sfs_node *dir, unsigned bidx,
			 struct sfs_stack **out)
{
	struct sfs_stack *st = sfs_node_stack(dir), *pst = NULL;
	struct sfs_node *parent;
	char *name;
	int ret;

	if (sfs_stack_in(st, bidx) || dir == sfs_node_root()) {
		*out = st;
		return sfs_stack_in(st, bidx) ? 0 : -ENOENT;
	}
	sfs_stack_put(st);
	ret = node_where(dir, &parent, &name);
	if (ret < 0)
		return ret;
	ret = sfs_dir_ensure_layer(parent, bidx, &pst);
	if (ret == 0) {
		pthread_mutex_lock(&dir_lock);
		st = sfs_node_stack(dir);
		if (!sfs_stack_in(st, bidx))
			ret = copy_dir_into(dir, st, pst, bidx, name);
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

int sfs_node_copy_up_at(struct sfs_node *n, struct sfs_node *parent,
			const char *name)
{
	struct sfs_stack *st = NULL, *pst = NULL;
	struct stat top, id;
	int bidx, ret;

	st = sfs_node_stack(parent);
	bidx = st->snap->top_rw;
	sfs_stack_put(st);
	st = NULL;
	if (bidx < 0)
		return -EROFS;
	if (n->type == S_IFDIR)
		return -EISDIR;
	ret = sfs_dir_ensure_layer(parent, (unsigned)bidx, &pst);
	if (ret < 0)
		return ret;
	/* resolved under the lock: a copy-up through another name of the
	 * node (a hard link) is either done, and this name shows its copy
	 * from the index, or not begun */
	pthread_mutex_lock(cu_lock_of(n));
	ret = sfs_resolve(pst, name, &st, &top, &id);
	if (ret == 0 && !is_node(n, &id))
		ret = -ESTALE;
	if (ret == 0 && !sfs_stack_writable(st))
		ret = copy_file_into(n, st, pst, parent, (unsigned)bidx, name, false);
	pthread_mutex_unlock(cu_lock_of(n));
	if (st)
		sfs_stack_put(st);
	sfs_stack_put(pst);
	return ret;
}

/* Copies a non-directory up into the highest rw branch. */
static int copy_up_file(struct sfs_node *n, int bidx, bool nodata)
{
	struct sfs_stack *st, *pst = NULL;
	struct sfs_node *parent;
	char *name;
	int ret = node_where(n, &parent, &name);

	if (ret < 0)
		return ret;
	ret = sfs_dir_ensure_layer(parent, (unsigned)bidx, &pst);
	if (ret == 0) {
		pthread_mutex_lock(cu_lock_of(n));
		st = sfs_node_stack(n);
		if (!sfs_stack_writable(st))
			ret = copy_file_into(n, st, pst, parent, (unsigned)bidx,
					     name, nodata);
		sfs_stack_put(st);
		pthread_mutex_unlock(cu_lock_of(n));
		sfs_stack_put(pst);
	}
	sfs_node_unref(parent);
	free(name);
	return ret;
}

int sfs_node_copy_up(struct sfs_node *n, unsigned flags, struct sfs_stack **out)
{
	struct sfs_stack *st = sfs_node_stack(n);
	int top = st->snap->top_rw, ret = 0;

	if (sfs_stack_writable(st)) {
		*out = st;
		return 0;
	}
	sfs_stack_put(st);
	if (top < 0)
		return -EROFS;
	if (n == sfs_node_root())
		return -EROFS; /* the root is every branch's root: never lower-only */
	if (n->type == S_IFDIR)
		ret = sfs_dir_ensure_layer(n, (unsigned)top, &st);
	else
		ret = copy_up_file(n, top, flags & SFS_CU_NODATA);
	if (ret < 0) {
		sfs_log(SFS_LOG_WARN, "copy-up of %s failed: %s", n->name ? n->name : "/", strerror(-ret));
		return ret;
	}
	if (n->type == S_IFDIR)
		sfs_stack_put(st);
	*out = sfs_node_stack(n);
	return sfs_stack_writable(*out) ? 0 : -EROFS;
}

int sfs_node_writable(struct sfs_node *n, struct sfs_stack **out)
{
	return sfs_node_copy_up(n, 0, out);
}
