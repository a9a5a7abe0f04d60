/* One entry of the OCI layer (oci_int.h): a view's entry read from the
 * branch that shows it (or from b[0]'s index copy) and written as tar
 * headers and data, and the whiteout and opaque markers. Reads only: by
 * the O_PATH fds of the model's stacks, never by a path. */
#include <errno.h>
#include <fcntl.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/bio.h"
#include "union/oci_int.h"
#include "xattr/xattr.h"

#define WH_PREFIX   ".wh."
#define WH_OPAQUE   ".wh..wh..opq"
#define XLIST_MAX   (1 << 20)   /* listxattr never answers more than 64 KiB */
#define CHANGED     (-ESTALE)   /* the entry changed while it was read */

/* ------------------------------------------------------------ names */

/* The name in the archive of view path vpath: "a/b", a directory "a/b/",
 * the root "./". malloc'd. */
static char *archive_name(const char *vpath, bool dir)
{
	const char *p = vpath[0] == '/' ? vpath + 1 : vpath;
	size_t n = strlen(p);
	char *s;

	if (!n)
		return strdup("./");
	s = malloc(n + 2);
	if (!s)
		return NULL;
	memcpy(s, p, n);
	if (dir)
		s[n++] = '/';
	s[n] = '\0';
	return s;
}

int sfs_oci_fail(struct sfs_oci *w, const char *vpath, int ret, const char *why)
{
	if (!w->failed && w->o && w->o->error)
		w->o->error(w->o->arg, w->tar.err ? NULL : vpath, -(w->tar.err ? w->tar.err : ret),
			    w->tar.err ? NULL : why);
	w->failed = true;
	return ret;
}

/* An empty file named vdir/marker: a whiteout or an opaque marker. Mode,
 * owner and time are fixed, so that the same changes give the same bytes. */
static int marker(struct sfs_oci *w, const char *vdir, const char *marker_name)
{
	char *path = sfs_ch_join(vdir[0] ? vdir : "/", marker_name), *name;
	struct sfs_tar_entry te = { .type = SFS_TAR_REG, .mode = 0644 };
	int ret = -ENOMEM;

	name = path ? archive_name(path, false) : NULL;
	if (name) {
		te.name = name;
		ret = sfs_tar_header(&w->tar, &te);
	}
	if (ret == 0)
		w->stats->markers++;
	if (ret < 0)
		sfs_oci_fail(w, path ? path : vdir, ret, NULL);
	free(name);
	free(path);
	return ret;
}

int sfs_oci_whiteout(struct sfs_oci *w, const char *vdir, const char *name)
{
	char *wh = malloc(strlen(WH_PREFIX) + strlen(name) + 1);
	int ret;

	if (!wh)
		return sfs_oci_fail(w, vdir, -ENOMEM, NULL);
	strcpy(wh, WH_PREFIX);
	strcat(wh, name);
	ret = marker(w, vdir, wh);
	free(wh);
	return ret;
}

int sfs_oci_opaque(struct sfs_oci *w, const char *vdir)
{
	return marker(w, vdir, WH_OPAQUE);
}

/* ------------------------------------------------------------ hard links */

struct link {
	dev_t dev;
	ino_t ino;
	char *name;                    /* the first name written */
};

static int link_cmp(const void *a, const void *b)
{
	const struct link *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static void link_free(void *p)
{
	struct link *l = p;

	free(l->name);
	free(l);
}

void sfs_oci_links_free(struct sfs_oci *w)
{
	tdestroy(w->links, link_free);
	w->links = NULL;
}

/* The name the inode of st was first written under (*first), or NULL
 * when this is its first name, which is remembered. */
static int link_seen(struct sfs_oci *w, const struct stat *st, const char *name,
		     const char **first)
{
	struct link *l = calloc(1, sizeof(*l)), **found;

	if (!l || !(l->name = strdup(name))) {
		free(l);
		return -ENOMEM;
	}
	l->dev = st->st_dev;
	l->ino = st->st_ino;
	found = tsearch(l, &w->links, link_cmp);
	if (!found) {
		link_free(l);
		return -ENOMEM;
	}
	*first = NULL;
	if (*found != l) {
		*first = (*found)->name;
		link_free(l);
	}
	return 0;
}

/* ------------------------------------------------------------ attributes */

struct xattrs {
	char *names;                   /* listxattr's buffer */
	struct sfs_tar_xattr *v;
	size_t n;
};

static void xattrs_free(struct xattrs *x)
{
	for (size_t i = 0; i < x->n; i++)
		free((void *)x->v[i].value);
	free(x->v);
	free(x->names);
	memset(x, 0, sizeof(*x));
}

/* Left out: what a copy leaves out (sfs_xattr_copied): the union's own
 * (whiteouts, opaque, redirects, origins: the layer says them in its own
 * words), what libattr's policy skips (XFS lists each ACL a second time
 * as trusted.SGI_ACL_*, in its own format); and the host's SELinux
 * label, which runtimes set anew where the layer is used (GNU tar too
 * keeps it for --selinux). */
static bool skipped(const char *name, bool symlink)
{
	return !sfs_xattr_copied(name, symlink) || !strcmp(name, "security.selinux");
}

static int xname_cmp(const void *a, const void *b)
{
	return strcmp(((const struct sfs_tar_xattr *)a)->name, ((const struct sfs_tar_xattr *)b)->name);
}

/* The names of (fd, ent)'s xattrs into x->names, their bytes in *len. */
static int xattr_list(int fd, const char *ent, struct xattrs *x, size_t *len)
{
	size_t size = 4096;
	ssize_t n;

	for (;;) {
		char *b = realloc(x->names, size);

		if (!b)
			return -ENOMEM;
		x->names = b;
		n = sfs_xattr_list(fd, ent, b, size);
		if (n != -ERANGE || size >= XLIST_MAX)
			break;
		size *= 4;
	}
	if (n == -ENOTSUP || n == -EOPNOTSUPP)
		n = 0; /* a filesystem without xattrs: none */
	if (n < 0)
		return (int)n;
	*len = (size_t)n;
	return 0;
}

/* One value, malloc'd; -ENODATA when it went meanwhile. */
static ssize_t xattr_value(int fd, const char *ent, const char *name, void **out)
{
	for (int tries = 0; tries < 8; tries++) {
		ssize_t n = sfs_xattr_get(fd, ent, name, NULL, 0), m;
		void *v;

		if (n < 0)
			return n;
		v = malloc(n ? (size_t)n : 1);
		if (!v)
			return -ENOMEM;
		m = sfs_xattr_get(fd, ent, name, v, (size_t)n);
		if (m >= 0) {
			*out = v;
			return m;
		}
		free(v);
		if (m != -ERANGE) /* ERANGE: it grew between the calls */
			return m;
	}
	return CHANGED;
}

/* The xattrs of (fd, ent) to write, sorted by name (ent a symlink's
 * name, or "" for fd itself). */
static int xattrs_read(int fd, const char *ent, struct xattrs *x)
{
	size_t len = 0;
	int ret = xattr_list(fd, ent, x, &len);

	if (ret == 0 && len)
		x->v = calloc(len / 2 + 1, sizeof(*x->v));
	if (ret == 0 && len && !x->v)
		ret = -ENOMEM;
	for (size_t i = 0; ret == 0 && i < len; i += strlen(x->names + i) + 1) {
		struct sfs_tar_xattr *e = &x->v[x->n];
		void *val = NULL;
		ssize_t n;

		if (skipped(x->names + i, ent[0] != '\0'))
			continue;
		n = xattr_value(fd, ent, x->names + i, &val);
		if (n == -ENODATA)
			continue; /* removed since the list: not there */
		if (n < 0) {
			ret = (int)n;
			break;
		}
		e->name = x->names + i;
		e->value = val;
		e->len = (size_t)n;
		x->n++;
	}
	if (ret == 0 && x->n)
		qsort(x->v, x->n, sizeof(x->v[0]), xname_cmp);
	return ret;
}

/* ------------------------------------------------------------ content */

/* The target of the symlink fd holds; len is its size as stat said (0 on
 * filesystems that do not say). */
static int symlink_target(int fd, off_t len, char **out)
{
	size_t size = len > 0 ? (size_t)len + 1 : 4096;
	char *buf = NULL;
	ssize_t n;

	for (;;) {
		char *b = realloc(buf, size);

		if (!b) {
			free(buf);
			return -ENOMEM;
		}
		buf = b;
		n = sfs_do_readlinkat(fd, "", buf, size);
		if (n < 0 || (size_t)n < size)
			break;
		size *= 2;
	}
	if (n < 0) {
		free(buf);
		return (int)n;
	}
	buf[n] = '\0';
	*out = buf;
	return 0;
}

/* n zeros of the archive for a hole of the file, never read: a read of
 * a hole fills the page cache with zero pages (gigabytes for a big
 * sparse file). */
static int put_zeros(struct sfs_oci *w, uint64_t n)
{
	static const char zero[1 << 16];
	int ret = 0;

	while (ret == 0 && n) {
		size_t k = n < sizeof(zero) ? (size_t)n : sizeof(zero);

		ret = sfs_tar_data(&w->tar, zero, k);
		n -= k;
	}
	return ret;
}

/* The bytes [off, end) of rfd, which must all be there. */
static int put_read(struct sfs_oci *w, int rfd, off_t off, off_t end, const char **why)
{
	char buf[1 << 16];
	int ret = 0;

	while (ret == 0 && off < end) {
		size_t want = end - off < (off_t)sizeof(buf) ? (size_t)(end - off) : sizeof(buf);
		ssize_t n = pread(rfd, buf, want, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
		} else if (n == 0) {
			*why = "the file shrank while it was read";
			ret = CHANGED;
		} else {
			ret = sfs_tar_data(&w->tar, buf, (size_t)n);
			off += n;
		}
	}
	return ret;
}

/* Where the data at or after off begins (SEEK_DATA), or end when only a
 * hole is left; a filesystem that cannot say has data everywhere. */
static off_t next_data(int rfd, off_t off, off_t end, int whence)
{
	off_t r = lseek(rfd, off, whence);

	if (r < 0)
		return errno == ENXIO ? end : whence == SEEK_DATA ? off : end;
	return r < end ? r : end;
}

/* Exactly size bytes of the file fd holds: holes as zeros, data as
 * read. A file that shrank or grew since its header was made is an
 * error: the header's size cannot change any more. */
static int file_data(struct sfs_oci *w, int fd, uint64_t size, const char **why)
{
	int rfd = sfs_do_reopen(fd, O_RDONLY);
	off_t off = 0, end = (off_t)size;
	struct stat st;
	int ret = rfd < 0 ? -errno : 0;

	while (ret == 0 && off < end) {
		off_t data = next_data(rfd, off, end, SEEK_DATA);
		off_t hole = data < end ? next_data(rfd, data, end, SEEK_HOLE) : end;

		ret = put_zeros(w, (uint64_t)(data - off));
		if (ret == 0)
			ret = put_read(w, rfd, data, hole, why);
		off = hole;
	}
	if (ret == 0 && fstat(rfd, &st) < 0)
		ret = -errno;
	if (ret == 0 && st.st_size != end) {
		*why = st.st_size > end ? "the file grew while it was read" :
					  "the file shrank while it was read";
		ret = CHANGED;
	}
	if (rfd >= 0)
		close(rfd);
	return ret;
}

/* ------------------------------------------------------------ the entry */

static char tar_type(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG: return SFS_TAR_REG;
	case S_IFDIR: return SFS_TAR_DIR;
	case S_IFLNK: return SFS_TAR_SYMLINK;
	case S_IFCHR: return SFS_TAR_CHR;
	case S_IFBLK: return SFS_TAR_BLK;
	case S_IFIFO: return SFS_TAR_FIFO;
	default: return 0; /* a socket: no tar type */
	}
}

/* The header fields from st. */
static void fill(struct sfs_tar_entry *te, const struct stat *st, const char *name)
{
	te->name = name;
	te->type = tar_type(st->st_mode);
	te->mode = st->st_mode & 07777;
	te->uid = st->st_uid;
	te->gid = st->st_gid;
	te->mtime = st->st_mtim;
	te->size = S_ISREG(st->st_mode) ? (uint64_t)st->st_size : 0;
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) {
		te->devmajor = major(st->st_rdev);
		te->devminor = minor(st->st_rdev);
	}
}

/* Its header (what it has and how to read it: fd, or by name in dir_fd
 * for a symlink) and its data (data_fd's: fd's own, or a kernel
 * metacopy's data file below). */
static int put_full(struct sfs_oci *w, struct sfs_tar_entry *te, const struct stat *st,
		    int fd, int data_fd, int dir_fd, const char *name, const char **why)
{
	bool lnk = te->type == SFS_TAR_SYMLINK;
	struct xattrs x = { 0 };
	char *target = NULL;
	int ret = lnk ? symlink_target(fd, st->st_size, &target) : 0;

	if (ret == 0)
		ret = lnk ? xattrs_read(dir_fd, name, &x) : xattrs_read(fd, "", &x);
	for (size_t i = 0; ret == 0 && i < x.n; i++) {
		if (strchr(x.v[i].name, '=')) { /* a pax key ends at its '=' */
			*why = "an xattr whose name holds '=': no pax record can say it";
			ret = -EINVAL;
		}
	}
	if (ret == 0) {
		te->link = target;
		te->xattrs = x.v;
		te->nxattrs = x.n;
		ret = sfs_tar_header(&w->tar, te);
	}
	if (ret == 0 && te->size)
		ret = file_data(w, data_fd, te->size, why);
	xattrs_free(&x);
	free(target);
	return ret;
}

int sfs_oci_entry(struct sfs_oci *w, const char *vpath, const struct sfs_ch_stack *dir,
		  const char *name, const struct sfs_ch_stack *e)
{
	const struct stat *st = &e->top;
	const struct sfs_ch_layer *dl = dir ? sfs_ch_stack_in(dir, e->l[0].b) : NULL;
	int fd = e->indexed ? e->index_fd : e->l[0].fd;
	int data_fd = e->metacopy ? e->data_fd : fd;
	struct sfs_tar_entry te = { 0 };
	const char *first = NULL, *why = NULL;
	char *aname;
	int ret;

	if (w->o && w->o->progress)
		w->o->progress(w->o->arg, w->stats->entries, vpath);
	if (!tar_type(st->st_mode)) {
		w->stats->left_out++;
		if (w->o && w->o->left_out)
			w->o->left_out(w->o->arg, vpath, "a socket: no tar entry holds one");
		return 0;
	}
	aname = archive_name(vpath, S_ISDIR(st->st_mode));
	ret = aname ? 0 : -ENOMEM;
	/* a file of several names (b[0]'s, or a lower one's index copy) */
	if (ret == 0 && !S_ISDIR(st->st_mode) && (st->st_nlink > 1 || e->indexed))
		ret = link_seen(w, st, aname, &first);
	fill(&te, st, aname);
	if (ret == 0 && first) {
		te.type = SFS_TAR_HARDLINK;
		te.link = first;
		te.size = 0;
		ret = sfs_tar_header(&w->tar, &te);
	} else if (ret == 0 && data_fd < 0) {
		why = "a metacopy file whose data is in no branch below";
		ret = -EIO;
	} else if (ret == 0) {
		ret = S_ISLNK(st->st_mode) && !dl ? -ENOENT :
		      put_full(w, &te, st, fd, data_fd, dl ? dl->fd : -1, name, &why);
	}
	if (ret == 0)
		w->stats->entries++;
	free(aname);
	return ret < 0 ? sfs_oci_fail(w, vpath, ret, why) : 0;
}
