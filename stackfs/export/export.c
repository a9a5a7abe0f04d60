/* nfs_export=on: an entry's real generation, and an inode of a branch's
 * filesystem opened by its number alone.
 *
 * The kernel's FUSE file handle is a node id and a generation, and to
 * decode one it no longer caches it sends LOOKUP(id, ".") without the
 * generation: the daemon must find the inode from the id alone, and the
 * kernel compares the generation of the reply. So ids are union inode
 * numbers (a filesystem id and a real inode number) and generations the
 * real inodes' (docs/export.md "NFS export"). Opening an inode by number needs
 * a file handle the daemon builds, which is the filesystem's own format:
 * known here for ext4 and XFS only, and checked at mount against the
 * handle of each branch root. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "stackfs/stackfs.h"

bool sfs_export;

enum fh_kind {
	FH_NONE,
	FH_EXT4,  /* FILEID_INO32_GEN: u32 ino, u32 gen; gen 0 matches any */
	FH_XFS32, /* FILEID_INO32_GEN: u32 ino, u32 gen, checked */
	FH_XFS64, /* | XFS_FILEID_TYPE_64FLAG: u64 ino, u32 gen, checked */
};

#define EXT4_MAGIC 0xEF53
#define XFS_MAGIC 0x58465342
#define FILEID_INO32_GEN 1
#define XFS_FILEID_64 0x80

struct fh {
	struct file_handle h;
	unsigned char bytes[MAX_HANDLE_SZ];
};

static uint32_t get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* The generation in a handle of kind k: 0 with 1, -EINVAL when the
 * handle is not of that kind. */
static int fh_gen(const struct fh *f, int k, uint32_t *gen)
{
	if ((k == FH_EXT4 || k == FH_XFS32) && f->h.handle_type == FILEID_INO32_GEN &&
	    f->h.handle_bytes == 8)
		*gen = get32(f->bytes + 4);
	else if (k == FH_XFS64 && f->h.handle_type == (FILEID_INO32_GEN | XFS_FILEID_64) &&
		 f->h.handle_bytes == 12)
		*gen = get32(f->bytes + 8);
	else
		return -EINVAL;
	return 0;
}

static int fd_handle(int fd, struct fh *f)
{
	int mid;

	f->h.handle_bytes = MAX_HANDLE_SZ;
	return sfs_do_name_to_handle(fd, "", &f->h, &mid, AT_EMPTY_PATH) < 0 ? -errno : 0;
}

static int fd_gen(int fd, int k, uint32_t *gen)
{
	struct fh f;
	int ret = fd_handle(fd, &f);

	return ret < 0 ? ret : fh_gen(&f, k, gen);
}

/* XFS checks the generation of a handle: it comes from bulkstat
 * (XFS_IOC_BULKSTAT, v5: a 64-byte request header, then 192-byte
 * records with the inode number at 0 and the generation at 64; the
 * layout is xfs_fs.h's, written out here as xfsprogs' headers are not a
 * build dependency). CAP_SYS_ADMIN. */
#define XFS_BULK_HDR 64
#define XFS_BULKSTAT_SIZE 192
#define XFS_IOC_BULKSTAT_V5 _IOR('X', 127, unsigned char[XFS_BULK_HDR])

static int xfs_gen(int root_fd, uint64_t ino, uint32_t *gen)
{
	unsigned char req[XFS_BULK_HDR + XFS_BULKSTAT_SIZE] = { 0 };
	uint32_t icount = 1, ocount;
	uint64_t got;
	int fd = sfs_do_reopen_dir(root_fd, O_RDONLY), ret = 0;

	if (fd < 0)
		return fd;
	memcpy(req, &ino, 8);              /* hdr.ino: start with this inode */
	memcpy(req + 12, &icount, 4);      /* hdr.icount */
	if (ioctl(fd, XFS_IOC_BULKSTAT_V5, req) < 0)
		ret = errno == EINVAL ? -ESTALE : -errno;
	close(fd);
	if (ret < 0)
		return ret;
	memcpy(&ocount, req + 16, 4);
	memcpy(&got, req + XFS_BULK_HDR, 8);
	if (ocount != 1 || got != ino)
		return -ESTALE; /* no such inode: the next one came */
	*gen = get32(req + XFS_BULK_HDR + 64);
	return 0;
}

/* The handle of inode ino of a branch of kind k. */
static int build(const struct sfs_branch *b, uint64_t ino, struct fh *f)
{
	uint32_t gen = 0, ino32 = (uint32_t)ino;
	int ret;

	if (ino == 0 || (b->fh_kind != FH_XFS64 && ino > UINT32_MAX))
		return -ESTALE;
	if (b->fh_kind == FH_XFS32 || b->fh_kind == FH_XFS64) {
		ret = xfs_gen(b->root_fd, ino, &gen);
		if (ret < 0)
			return ret;
	}
	if (b->fh_kind == FH_XFS64) {
		f->h.handle_type = FILEID_INO32_GEN | XFS_FILEID_64;
		f->h.handle_bytes = 12;
		memcpy(f->bytes, &ino, 8);
		memcpy(f->bytes + 8, &gen, 4);
	} else {
		f->h.handle_type = FILEID_INO32_GEN;
		f->h.handle_bytes = 8;
		memcpy(f->bytes, &ino32, 4);
		memcpy(f->bytes + 4, &gen, 4);
	}
	return 0;
}

int sfs_export_open_ino(const struct sfs_branch *b, uint64_t ino)
{
	struct stat st;
	struct fh f;
	int fd, ret = b->fh_kind == FH_NONE ? -ESTALE : build(b, ino, &f);

	if (ret < 0)
		return ret;
	fd = sfs_branch_open_handle(b, f.h.handle_type, f.bytes, f.h.handle_bytes);
	if (fd < 0)
		return fd == -ENOENT || fd == -EINVAL ? -ESTALE : fd;
	/* the filesystem's answer must be that inode, of a branch's device */
	if (sfs_do_fstat(fd, &st) < 0 || st.st_ino != ino || st.st_dev != b->dev) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

uint32_t sfs_export_gen(const struct sfs_stack *st, const struct stat *idst)
{
	const struct sfs_snap *s = st->snap;
	uint32_t gen = 0;
	struct stat ls;
	int fd;

	for (unsigned i = 0; i < st->n; i++) {
		if (st->l[i].fd < 0 || sfs_do_fstat(st->l[i].fd, &ls) < 0 ||
		    ls.st_dev != idst->st_dev || ls.st_ino != idst->st_ino)
			continue;
		fd_gen(st->l[i].fd, s->b[st->l[i].bidx]->fh_kind, &gen);
		return gen;
	}
	/* not a layer: the origin of a copy, the lower name of an index copy */
	for (unsigned i = 0; i < s->n; i++) {
		if (s->b[i]->dev != idst->st_dev)
			continue;
		fd = sfs_export_open_ino(s->b[i], idst->st_ino);
		if (fd >= 0) {
			fd_gen(fd, s->b[i]->fh_kind, &gen);
			close(fd);
		}
		break;
	}
	return gen;
}

/* The kind of handles of b's filesystem, or FH_NONE. */
static int kind_of(const struct sfs_branch *b)
{
	struct statfs sf;
	struct fh f;

	if (fstatfs(b->root_fd, &sf) < 0 || fd_handle(b->root_fd, &f) < 0)
		return FH_NONE;
	if (sf.f_type == EXT4_MAGIC)
		return FH_EXT4;
	if (sf.f_type != XFS_MAGIC)
		return FH_NONE;
	return f.h.handle_type == FILEID_INO32_GEN ? FH_XFS32 : FH_XFS64;
}

/* The root's own handle must be what build() makes of its number, and
 * open the root: the format is the one assumed, and the daemon may open
 * handles (CAP_DAC_READ_SEARCH; CAP_SYS_ADMIN on XFS). */
static int self_test(struct sfs_branch *b, const char **why)
{
	struct fh real, made;
	int fd, ret;

	*why = "its filesystem's file handles are not ext4's or XFS's";
	b->fh_kind = (uint8_t)kind_of(b);
	if (b->fh_kind == FH_NONE)
		return -EOPNOTSUPP;
	ret = fd_handle(b->root_fd, &real);
	if (ret == 0)
		ret = build(b, (uint64_t)b->ino, &made);
	/* ext4's made handle has generation 0 (any): its number must agree */
	*why = "its file handles are not in the format expected";
	if (ret == 0 && (real.h.handle_type != made.h.handle_type ||
			 real.h.handle_bytes != made.h.handle_bytes ||
			 memcmp(real.bytes, made.bytes, b->fh_kind == FH_EXT4 ? 4 :
				made.h.handle_bytes)))
		ret = -EOPNOTSUPP;
	if (ret == 0) {
		*why = "cannot open its inodes by number";
		fd = sfs_export_open_ino(b, (uint64_t)b->ino);
		ret = fd < 0 ? fd : 0;
		if (fd >= 0)
			close(fd);
	}
	if (ret < 0)
		b->fh_kind = FH_NONE;
	return ret;
}

int sfs_export_check(struct sfs_snap *s, char *err, size_t errlen)
{
	const char *why;
	int ret;

	for (unsigned i = 0; i < s->n; i++) {
		ret = self_test(s->b[i], &why);
		if (ret < 0) {
			snprintf(err, errlen, "nfs_export=on: branch %s: %s (%s)",
				 s->b[i]->path, why, strerror(-ret));
			return ret;
		}
	}
	return 0;
}
