/* The metadata directory of a rw branch (see metadir.h): its header,
 * checking it, creating and opening it for a mount, the lock, `lowers`,
 * and the file helpers the format library shares (ondisk.h). */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "whiteout/beneath.h"
#include "whiteout/journal.h"
#include "whiteout/ondisk.h"

/* linux/fs.h has it from 6.5; older headers do not. */
#ifndef FS_IOC_GETFSUUID
struct fsuuid2 {
	uint8_t len;
	uint8_t uuid[16];
};
#define FS_IOC_GETFSUUID _IOR(0x15, 0, struct fsuuid2)
#endif

#define HEADER_READ_MAX SFS_HEADER_READ_MAX
#define LOWERS_MAX SFS_LOWERS_MAX

/* ------------------------------------------------------------ header */

uint32_t sfs_header_csum_compute(const struct sfs_disk_header *d)
{
	return sfs_crc32c(0, d, offsetof(struct sfs_disk_header, h_crc));
}

bool sfs_header_csum_verify(const struct sfs_disk_header *d)
{
	return le32toh(d->h_crc) == sfs_header_csum_compute(d);
}

void sfs_header_csum_set(struct sfs_disk_header *d)
{
	d->h_crc = htole32(sfs_header_csum_compute(d));
}

void sfs_header_encode(const struct sfs_header *h, struct sfs_disk_header *d)
{
	memset(d, 0, sizeof(*d));
	memcpy(d->h_magic, SFS_HDR_MAGIC_STR, sizeof(d->h_magic));
	d->h_version = htole32(h->version);
	d->h_flags = htole32(h->flags);
	memcpy(d->h_uuid, h->uuid, sizeof(d->h_uuid));
	d->h_ctime = htole64(h->ctime);
	sfs_header_csum_set(d);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

enum sfs_hdr_status sfs_header_parse(const void *buf, size_t len,
				     struct sfs_header *h)
{
	struct sfs_disk_header d;

	memset(&d, 0, sizeof(d));
	memcpy(&d, buf, len < sizeof(d) ? len : sizeof(d));
	h->version = le32toh(d.h_version);
	h->flags = le32toh(d.h_flags);
	memcpy(h->uuid, d.h_uuid, sizeof(h->uuid));
	h->ctime = le64toh(d.h_ctime);
	if (len < offsetof(struct sfs_disk_header, h_uuid))
		return len >= 8 && memcmp(d.h_magic, SFS_HDR_MAGIC_STR, 8) ? SFS_HDR_BAD_MAGIC
									: SFS_HDR_SHORT;
	if (memcmp(d.h_magic, SFS_HDR_MAGIC_STR, sizeof(d.h_magic)))
		return SFS_HDR_BAD_MAGIC;
	/* a newer format may have another size or checksum: say "newer"
	 * rather than "corrupt", and never touch it */
	if (h->version > SFS_META_VERSION)
		return SFS_HDR_NEWER;
	if (len < SFS_HDR_SIZE)
		return SFS_HDR_SHORT;
	if (len > SFS_HDR_SIZE)
		return SFS_HDR_LONG;
	if (!sfs_header_csum_verify(&d))
		return SFS_HDR_CRC;
	if (h->version == 0)
		return SFS_HDR_VERSION;
	if (h->flags & ~SFS_HDR_KNOWN_FLAGS)
		return SFS_HDR_FLAGS;
	if (!all_zero(d.h_reserved, sizeof(d.h_reserved)))
		return SFS_HDR_RESERVED;
	return SFS_HDR_OK;
}

int sfs_header_explain(enum sfs_hdr_status st, const struct sfs_header *h,
		       size_t len, char *err, size_t errlen)
{
	const char *p = SFS_METADIR_NAME "/" SFS_META_HEADER;

	switch (st) {
	case SFS_HDR_OK:
		return 0;
	case SFS_HDR_SHORT:
		snprintf(err, errlen, "%s is corrupt (truncated: %zu bytes, expected %u)",
			 p, len, SFS_HDR_SIZE);
		break;
	case SFS_HDR_LONG:
		snprintf(err, errlen, "%s is corrupt (%s%zu bytes, expected %u)", p,
			 len > HEADER_READ_MAX ? "more than " : "",
			 len > HEADER_READ_MAX ? (size_t)HEADER_READ_MAX : len, SFS_HDR_SIZE);
		break;
	case SFS_HDR_BAD_MAGIC:
		snprintf(err, errlen, "%s is corrupt (bad magic: not a stackfs header)", p);
		break;
	case SFS_HDR_NEWER:
		snprintf(err, errlen, "%s: format version %u is newer than this stackfs (%u)",
			 p, h->version, SFS_META_VERSION);
		return -EPROTONOSUPPORT;
	case SFS_HDR_CRC:
		snprintf(err, errlen, "%s is corrupt (checksum mismatch)", p);
		break;
	case SFS_HDR_VERSION:
		snprintf(err, errlen, "%s is corrupt (format version 0)", p);
		break;
	case SFS_HDR_FLAGS:
		snprintf(err, errlen, "%s is corrupt (unknown flags 0x%x)", p,
			 h->flags & ~SFS_HDR_KNOWN_FLAGS);
		break;
	case SFS_HDR_RESERVED:
		snprintf(err, errlen, "%s is corrupt (reserved bytes not zero)", p);
		break;
	}
	return -EUCLEAN;
}

/* ------------------------------------------------------------ files */

int sfs_meta_openat(int dir_fd, const char *name, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	long fd = syscall(SYS_openat2, dir_fd, name, &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
}

int sfs_meta_read_file(int dir_fd, const char *name, size_t max,
		       uint8_t **buf, size_t *len)
{
	int fd = sfs_meta_openat(dir_fd, name, O_RDONLY | O_NONBLOCK, 0);
	uint8_t *b = NULL;
	size_t n = 0, cap = 0;
	struct stat st;
	int ret = 0;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		goto out;
	}
	/* refused before a byte is read: a sparse file of a terabyte costs
	 * no disk and would cost that much memory (the loop below still
	 * bounds a file that grows meanwhile) */
	if ((uint64_t)st.st_size > max) {
		ret = -EFBIG;
		goto out;
	}
	for (;;) {
		ssize_t r;

		if (n + 1 >= cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			uint8_t *nb;

			if (ncap > max + 2)
				ncap = max + 2;
			nb = realloc(b, ncap);
			if (!nb) {
				ret = -ENOMEM;
				goto out;
			}
			b = nb;
			cap = ncap;
		}
		r = read(fd, b + n, cap - 1 - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			ret = -EFBIG;
			goto out;
		}
	}
	if (!b && !(b = malloc(1))) {
		ret = -ENOMEM;
		goto out;
	}
	b[n] = 0;
	*buf = b;
	*len = n;
	b = NULL;
out:
	free(b);
	close(fd);
	return ret;
}

int sfs_meta_fsync_dir(int dir_fd)
{
	int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t r = write(fd, p, len);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

int sfs_meta_write_file(int dir_fd, const char *name, const void *buf,
			size_t len)
{
	char tmp[64];
	int fd, ret;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = sfs_meta_openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return fd;
	ret = write_all(fd, buf, len);
	if (!ret && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (ret)
		goto out_unlink;
	if (renameat(dir_fd, tmp, dir_fd, name) < 0) {
		ret = -errno;
		goto out_unlink;
	}
	return sfs_meta_fsync_dir(dir_fd);
out_unlink:
	unlinkat(dir_fd, tmp, 0);
	return ret;
}

/* Empties the directory fd (opened O_RDONLY) without following symlinks. */
static int remove_contents(int fd)
{
	int dfd = dup(fd);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	struct dirent *e;
	int ret = 0;

	if (!d) {
		ret = -errno;
		if (dfd >= 0)
			close(dfd);
		return ret;
	}
	while ((e = readdir(d))) {
		int r;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		r = sfs_meta_remove_tree(fd, e->d_name);
		if (r && !ret)
			ret = r;
	}
	closedir(d);
	return ret;
}

int sfs_meta_remove_tree(int dir_fd, const char *name)
{
	int fd, ret;

	if (unlinkat(dir_fd, name, 0) == 0)
		return 0;
	if (errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	fd = sfs_meta_openat(dir_fd, name, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fd == -ENOTDIR ? -EPERM : fd;
	ret = remove_contents(fd);
	close(fd);
	if (ret)
		return ret;
	if (unlinkat(dir_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/* ------------------------------------------------------------ lowers */

void sfs_lowers_free(struct sfs_lower *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i].path);
	free(v);
}

int sfs_lowers_parse(const char *buf, size_t len, struct sfs_lower **out,
		     size_t *nout, char *err, size_t errlen)
{
	struct sfs_lower *v = NULL;
	size_t n = 0, line = 0, pos = 0;
	int ret = 0;

	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t end, k = 0;
		struct sfs_lower *nv;
		char *path;

		line++;
		if (!nl) {
			snprintf(err, errlen, "%s/%s: line %zu: no end of line (truncated)",
				 SFS_METADIR_NAME, SFS_META_LOWERS, line);
			ret = -EUCLEAN;
			goto out;
		}
		end = (size_t)(nl - buf);
		if (end - pos < 4 || (memcmp(buf + pos, "rw ", 3) && memcmp(buf + pos, "ro ", 3)) ||
		    buf[pos + 3] != '/') {
			snprintf(err, errlen, "%s/%s: line %zu: not \"rw PATH\" or \"ro PATH\" with an absolute PATH",
				 SFS_METADIR_NAME, SFS_META_LOWERS, line);
			ret = -EUCLEAN;
			goto out;
		}
		path = malloc(end - pos);
		if (!path) {
			ret = -ENOMEM;
			goto out;
		}
		for (size_t i = pos + 3; i < end; i++) {
			char c = buf[i];

			if (c == '\\') {
				c = i + 1 < end ? buf[++i] : 0;
				c = c == 'n' ? '\n' : c == '\\' ? '\\' : 0;
			}
			if (!c) {
				free(path);
				snprintf(err, errlen, "%s/%s: line %zu: bad escape or NUL byte",
					 SFS_METADIR_NAME, SFS_META_LOWERS, line);
				ret = -EUCLEAN;
				goto out;
			}
			path[k++] = c;
		}
		path[k] = 0;
		nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv) {
			free(path);
			ret = -ENOMEM;
			goto out;
		}
		v = nv;
		v[n].path = path;
		v[n].rw = buf[pos + 1] == 'w';
		n++;
		pos = end + 1;
	}
	*out = v;
	*nout = n;
	v = NULL;
out:
	sfs_lowers_free(v, n);
	return ret;
}

int sfs_meta_read_lowers(int dir_fd, struct sfs_lower **v, size_t *n,
			 char *err, size_t errlen)
{
	uint8_t *buf;
	size_t len;
	int ret = sfs_meta_read_file(dir_fd, SFS_META_LOWERS, LOWERS_MAX, &buf, &len);

	if (ret) {
		snprintf(err, errlen, "%s/%s: %s", SFS_METADIR_NAME, SFS_META_LOWERS,
			 strerror(-ret));
		return ret;
	}
	ret = sfs_lowers_parse((const char *)buf, len, v, n, err, errlen);
	free(buf);
	return ret;
}

int sfs_meta_write_lowers(struct sfs_meta *m, const struct sfs_lower *v,
			  size_t n)
{
	size_t cap = 1, len = 0;
	char *buf;
	int ret;

	for (size_t i = 0; i < n; i++) {
		if (v[i].path[0] != '/')
			return -EINVAL;
		cap += 4 + 2 * strlen(v[i].path);
	}
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		memcpy(buf + len, v[i].rw ? "rw " : "ro ", 3);
		len += 3;
		for (const char *p = v[i].path; *p; p++) {
			if (*p == '\\' || *p == '\n') {
				buf[len++] = '\\';
				buf[len++] = *p == '\n' ? 'n' : '\\';
			} else {
				buf[len++] = *p;
			}
		}
		buf[len++] = '\n';
	}
	ret = sfs_meta_write_file(m->dir_fd, SFS_META_LOWERS, buf, len);
	free(buf);
	return ret;
}

/* ------------------------------------------------------------ checking */

/* What is in a metadata dir without a header: only work/ (and what an
 * interrupted upgrade leaves) is version 0; nothing but what an
 * interrupted creation leaves is "absent"; anything else is corrupt. */
static int classify_headerless(int dir_fd, enum sfs_meta_state *state,
			       char *err, size_t errlen)
{
	int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	bool work = false, other = false;
	struct dirent *e;

	if (!d) {
		int ret = -errno;

		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "%s: %s", SFS_METADIR_NAME, strerror(-ret));
		return ret;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    !strcmp(e->d_name, SFS_META_HEADER ".tmp") ||
		    !strcmp(e->d_name, SFS_META_LOCK) ||
		    !strcmp(e->d_name, SFS_META_COMMIT_FROM) ||
		    !strcmp(e->d_name, SFS_META_COMMIT_FROM ".tmp"))
			continue;
		if (!strcmp(e->d_name, SFS_META_WORK))
			work = true;
		else
			other = true;
	}
	closedir(d);
	if (other) {
		snprintf(err, errlen, "%s/%s is missing (the directory has other content)",
			 SFS_METADIR_NAME, SFS_META_HEADER);
		return -EUCLEAN;
	}
	*state = work ? SFS_META_OLD : SFS_META_ABSENT;
	return 0;
}

static int read_header(int dir_fd, struct sfs_header *h, char *err, size_t errlen)
{
	uint8_t *buf;
	size_t len;
	int ret = sfs_meta_read_file(dir_fd, SFS_META_HEADER, HEADER_READ_MAX, &buf, &len);

	if (ret == -EFBIG) {
		return sfs_header_explain(SFS_HDR_LONG, h, HEADER_READ_MAX + 1, err, errlen);
	} else if (ret == -EINVAL) {
		snprintf(err, errlen, "%s/%s is not a regular file", SFS_METADIR_NAME,
			 SFS_META_HEADER);
		return -EUCLEAN;
	} else if (ret) {
		if (ret != -ENOENT)
			snprintf(err, errlen, "%s/%s: %s", SFS_METADIR_NAME,
				 SFS_META_HEADER, strerror(-ret));
		return ret;
	}
	ret = sfs_header_explain(sfs_header_parse(buf, len, h), h, len, err, errlen);
	free(buf);
	return ret;
}

/* Loads the registry of dir_fd (-ENOENT when there is none). */
static int load_registry(int dir_fd, struct sfs_reg_table *t, char *err, size_t errlen)
{
	uint8_t *buf;
	size_t len;
	int ret = sfs_meta_read_file(dir_fd, SFS_META_REGISTRY, SFS_REG_MAX_BYTES, &buf, &len);

	if (ret == -EFBIG) {
		snprintf(err, errlen, "%s/%s is larger than its limit of %zu bytes "
			 "(%u records): corrupt", SFS_METADIR_NAME, SFS_META_REGISTRY,
			 SFS_REG_MAX_BYTES, SFS_REG_MAX_RECORDS);
		return ret;
	}
	if (ret) {
		if (ret != -ENOENT)
			snprintf(err, errlen, "%s/%s: %s", SFS_METADIR_NAME,
				 SFS_META_REGISTRY,
				 ret == -EINVAL ? "not a regular file" : strerror(-ret));
		return ret == -EINVAL ? -EUCLEAN : ret;
	}
	ret = sfs_reg_parse(buf, len, t, err, errlen);
	free(buf);
	return ret;
}

/* Loads the inomap of dir_fd (-ENOENT when there is none), in chunks:
 * its size is bounded before anything is read. */
static int load_inomap(int dir_fd, struct sfs_ino_table *t, size_t *keep,
		       size_t *len, bool *last_bad, char *err, size_t errlen)
{
	int fd = sfs_meta_openat(dir_fd, SFS_META_INOMAP, O_RDONLY | O_NONBLOCK, 0);
	struct stat st;
	int ret;

	if (fd < 0) {
		if (fd != -ENOENT)
			snprintf(err, errlen, "%s/%s: %s", SFS_METADIR_NAME,
				 SFS_META_INOMAP,
				 fd == -ELOOP ? "not a regular file" : strerror(-fd));
		return fd == -ELOOP ? -EUCLEAN : fd;
	}
	ret = fstat(fd, &st) < 0 ? -errno : S_ISREG(st.st_mode) ? 0 : -EUCLEAN;
	if (ret) {
		snprintf(err, errlen, "%s/%s: %s", SFS_METADIR_NAME, SFS_META_INOMAP,
			 ret == -EUCLEAN ? "not a regular file" : strerror(-ret));
		goto out;
	}
	ret = sfs_ino_load(fd, t, keep, len, last_bad, err, errlen);
out:
	close(fd);
	return ret;
}

/* Checks the metadata dir dir_fd: its state, and its header in *h; with
 * records, every record of the registry and inomap too. */
static int check_dir(int dir_fd, bool records, enum sfs_meta_state *state,
		     struct sfs_header *h, char *err, size_t errlen)
{
	struct sfs_reg_table reg = { 0 };
	struct sfs_ino_table ino = { 0 };
	size_t keep, len;
	bool last_bad;
	int ret;

	memset(h, 0, sizeof(*h));
	ret = read_header(dir_fd, h, err, errlen);
	if (ret == -ENOENT)
		return classify_headerless(dir_fd, state, err, errlen);
	if (ret)
		return ret;
	*state = SFS_META_CURRENT;
	if (!records)
		return 0;
	ret = load_registry(dir_fd, &reg, err, errlen);
	sfs_reg_table_free(&reg);
	if (ret && ret != -ENOENT)
		return ret;
	ret = load_inomap(dir_fd, &ino, &keep, &len, &last_bad, err, errlen);
	sfs_ino_table_free(&ino);
	if (ret && ret != -ENOENT)
		return ret;
	return 0;
}

static int open_metadir(int root_fd, int *dir_fd, char *err, size_t errlen)
{
	int fd = sfs_meta_dir_open(root_fd, err, errlen);

	if (fd < 0)
		return fd;
	*dir_fd = fd;
	return 0;
}

int sfs_meta_check(int root_fd, enum sfs_meta_state *state,
		   char *err, size_t errlen)
{
	struct sfs_header h;
	int dir_fd, ret;

	ret = open_metadir(root_fd, &dir_fd, err, errlen);
	if (ret == -ENOENT) {
		*state = SFS_META_ABSENT;
		return 0;
	}
	if (ret)
		return ret;
	ret = check_dir(dir_fd, true, state, &h, err, errlen);
	close(dir_fd);
	/* a half-done commit: the view would be neither before nor after */
	if (ret == 0)
		ret = sfs_jnl_pending(root_fd, err, errlen);
	return ret;
}

/* ------------------------------------------------------------ opening */

static int new_uuid(uint8_t uuid[16])
{
	size_t got = 0;

	while (got < 16) {
		ssize_t r = getrandom(uuid + got, 16 - got, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)r;
	}
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40);  /* RFC 4122 version 4 */
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
	return 0;
}

static int write_header(int dir_fd, const struct sfs_header *h)
{
	struct sfs_disk_header d;

	sfs_header_encode(h, &d);
	return sfs_meta_write_file(dir_fd, SFS_META_HEADER, &d, sizeof(d));
}

int sfs_meta_lock(int root_fd, bool excl)
{
	char err[512];
	int dir_fd = sfs_meta_dir_open(root_fd, err, sizeof(err));
	int fd;

	if (dir_fd < 0)
		return dir_fd;
	fd = sfs_meta_openat(dir_fd, SFS_META_LOCK, O_RDONLY | O_NONBLOCK, 0);
	close(dir_fd);
	if (fd < 0)
		return fd;
	if (flock(fd, (excl ? LOCK_EX : LOCK_SH) | LOCK_NB) < 0) {
		int ret = errno == EWOULDBLOCK ? -EBUSY : -errno;

		close(fd);
		return ret;
	}
	return fd;
}

static int take_lock(struct sfs_meta *m, char *err, size_t errlen)
{
	int fd = sfs_meta_openat(m->dir_fd, SFS_META_LOCK, O_RDWR | O_CREAT, 0600);

	if (fd < 0) {
		snprintf(err, errlen, "%s/%s: %s", SFS_METADIR_NAME, SFS_META_LOCK,
			 strerror(-fd));
		return fd;
	}
	m->lock_fd = fd;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int ret = errno == EWOULDBLOCK ? -EBUSY : -errno;

		if (ret == -EBUSY)
			snprintf(err, errlen, "branch is in use by a mounted stackfs "
				 "(or by stackfs fsck --repair)");
		else
			snprintf(err, errlen, "%s/%s: flock: %s", SFS_METADIR_NAME,
				 SFS_META_LOCK, strerror(-ret));
		return ret;
	}
	return 0;
}

/* mkdir name in dir_fd (kept if it exists) and an O_PATH fd of it. */
static int subdir(int dir_fd, const char *name, int *out, char *err, size_t errlen)
{
	int fd;

	if (mkdirat(dir_fd, name, 0700) < 0 && errno != EEXIST) {
		fd = -errno;
		goto fail;
	}
	fd = sfs_meta_openat(dir_fd, name, O_PATH | O_DIRECTORY, 0);
	if (fd < 0)
		goto fail;
	*out = fd;
	return 0;
fail:
	snprintf(err, errlen, "%s/%s: %s", SFS_METADIR_NAME, name, strerror(-fd));
	return fd;
}

static int empty_work(struct sfs_meta *m, char *err, size_t errlen)
{
	int fd = sfs_meta_openat(m->work_fd, ".", O_RDONLY | O_DIRECTORY, 0);
	int ret;

	if (fd < 0) {
		ret = fd;
		goto fail;
	}
	ret = remove_contents(fd);
	close(fd);
	if (!ret)
		return 0;
fail:
	snprintf(err, errlen, "cannot empty %s/%s: %s", SFS_METADIR_NAME,
		 SFS_META_WORK, strerror(-ret));
	return ret;
}

static int open_registry(struct sfs_meta *m, char *err, size_t errlen)
{
	int ret = load_registry(m->dir_fd, &m->reg, err, errlen);

	if (ret != -ENOENT)
		return ret;
	m->reg.next_id[SFS_REG_FS] = m->reg.next_id[SFS_REG_BRANCH] = 1;
	ret = sfs_reg_store(m->dir_fd, &m->reg);
	if (ret)
		snprintf(err, errlen, "%s/%s: %s", SFS_METADIR_NAME, SFS_META_REGISTRY,
			 strerror(-ret));
	return ret;
}

static int open_inomap(struct sfs_meta *m, char *err, size_t errlen)
{
	size_t keep = 0, len = 0;
	bool last_bad = false;
	int ret = load_inomap(m->dir_fd, &m->ino, &keep, &len, &last_bad, err, errlen);

	if (ret == -ENOENT) {
		ret = sfs_ino_create(m->dir_fd);
		keep = len = SFS_INO_REC_SIZE;
	}
	if (ret)
		goto out;
	m->ino_fd = sfs_meta_openat(m->dir_fd, SFS_META_INOMAP, O_RDWR, 0);
	if (m->ino_fd < 0) {
		ret = m->ino_fd;
		goto out;
	}
	/* the tail of an interrupted append: its number was never handed out */
	if (keep < len && ftruncate(m->ino_fd, (off_t)keep) < 0) {
		ret = -errno;
		goto out;
	}
	if (last_bad) {
		struct sfs_disk_ino d;
		uint64_t idx = m->ino.nrec - 1;

		sfs_ino_encode(0, 0, idx, &d);
		if (pwrite(m->ino_fd, &d, sizeof(d),
			   (off_t)(SFS_INO_REC_SIZE * (idx + 1))) != (ssize_t)sizeof(d)) {
			ret = errno ? -errno : -EIO;
			goto out;
		}
	}
	if ((keep < len || last_bad) && fdatasync(m->ino_fd) < 0)
		ret = -errno;
out:
	if (ret && !err[0])
		snprintf(err, errlen, "%s/%s: %s", SFS_METADIR_NAME, SFS_META_INOMAP,
			 strerror(-ret));
	return ret;
}

int sfs_meta_open(int root_fd, int whiteout_style, bool upgrade,
		  struct sfs_meta *m, char *err, size_t errlen)
{
	enum sfs_meta_state state;
	struct sfs_header h;
	int ret;

	memset(m, 0, sizeof(*m));
	m->dir_fd = m->work_fd = m->index_fd = m->lock_fd = m->ino_fd = -1;
	pthread_mutex_init(&m->mu, NULL);
	err[0] = 0;
	/* every check first: a refused branch is left as it was */
	ret = sfs_meta_check(root_fd, &state, err, errlen);
	if (ret)
		goto fail;
	if (state == SFS_META_OLD && !upgrade)
		goto old;
	if (state == SFS_META_ABSENT) {
		if (mkdirat(root_fd, SFS_METADIR_NAME, 0700) < 0 && errno != EEXIST) {
			ret = -errno;
			snprintf(err, errlen, "cannot create %s: %s", SFS_METADIR_NAME,
				 strerror(-ret));
			goto fail;
		}
		ret = sfs_meta_fsync_dir(root_fd);
		if (ret)
			goto fail_io;
	}
	ret = open_metadir(root_fd, &m->dir_fd, err, errlen);
	if (ret)
		goto fail;
	ret = take_lock(m, err, errlen);
	if (ret)
		goto fail;
	/* again, under the lock: another mount may have been quicker (the
	 * records are checked as they are loaded below) */
	ret = check_dir(m->dir_fd, false, &state, &h, err, errlen);
	if (ret)
		goto fail;
	if (state == SFS_META_OLD && !upgrade)
		goto old;
	if (state != SFS_META_CURRENT) {
		memset(&h, 0, sizeof(h));
		h.version = SFS_META_VERSION;
		h.flags = whiteout_style > 0 ? SFS_META_F_OVERLAY : 0;
		h.ctime = (uint64_t)time(NULL);
		ret = new_uuid(h.uuid);
		if (!ret)
			ret = write_header(m->dir_fd, &h);
		if (ret)
			goto fail_io;
	}
	ret = open_registry(m, err, errlen);
	if (!ret)
		ret = open_inomap(m, err, errlen);
	if (ret)
		goto fail_io;
	if (whiteout_style >= 0 && !!(h.flags & SFS_META_F_OVERLAY) != (whiteout_style > 0)) {
		h.flags ^= SFS_META_F_OVERLAY;
		ret = write_header(m->dir_fd, &h);
		if (ret)
			goto fail_io;
	}
	m->version = h.version;
	m->flags = h.flags;
	memcpy(m->uuid, h.uuid, sizeof(m->uuid));
	m->ctime = h.ctime;
	if (!ret)
		ret = subdir(m->dir_fd, SFS_META_WORK, &m->work_fd, err, errlen);
	if (!ret)
		ret = empty_work(m, err, errlen);
	if (!ret)
		ret = subdir(m->dir_fd, SFS_META_INDEX, &m->index_fd, err, errlen);
	if (!ret)
		ret = sfs_meta_fsync_dir(m->dir_fd);
	if (ret)
		goto fail_io;
	return 0;
old:
	snprintf(err, errlen, "%s has format version 0 (made before format 1): "
		 "mount with -o upgrade to convert it", SFS_METADIR_NAME);
	ret = -EPROTO;
	goto fail;
fail_io:
	if (!err[0])
		snprintf(err, errlen, "%s: %s", SFS_METADIR_NAME, strerror(-ret));
fail:
	sfs_meta_close(m);
	return ret;
}

void sfs_meta_close(struct sfs_meta *m)
{
	int *fds[] = { &m->dir_fd, &m->work_fd, &m->index_fd, &m->ino_fd, &m->lock_fd };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
	sfs_reg_table_free(&m->reg);
	sfs_ino_table_free(&m->ino);
	pthread_mutex_destroy(&m->mu);
	/* a second close must find a usable mutex */
	pthread_mutex_init(&m->mu, NULL);
}

int sfs_meta_read_flags(int root_fd, uint32_t *flags)
{
	struct sfs_header h;
	char err[256];
	int dir_fd, ret = open_metadir(root_fd, &dir_fd, err, sizeof(err));

	if (ret)
		return ret;
	ret = read_header(dir_fd, &h, err, sizeof(err));
	close(dir_fd);
	if (ret == 0)
		*flags = h.flags;
	return ret;
}

int sfs_meta_set_flags(struct sfs_meta *m, uint32_t flags)
{
	struct sfs_header h = { .version = m->version, .flags = flags, .ctime = m->ctime };
	int ret;

	if (flags & ~SFS_HDR_KNOWN_FLAGS)
		return -EINVAL;
	memcpy(h.uuid, m->uuid, sizeof(h.uuid));
	ret = write_header(m->dir_fd, &h);
	if (ret == 0)
		m->flags = flags;
	return ret;
}

/* ------------------------------------------------------------ identity */

static int reopen_rdonly(int fd)
{
	char p[32];
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0)
		return -errno;
	if (!(flags & O_PATH)) {
		fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		return fd < 0 ? -errno : fd;
	}
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	fd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	return fd < 0 ? -errno : fd;
}

int sfs_fs_uuid(int fd, uint8_t uuid[16])
{
	struct fsuuid2 u = { 0 };
	struct statfs sf;
	struct stat st;
	uint8_t key[24];
	int rfd, ret = 0;

	rfd = reopen_rdonly(fd);
	if (rfd < 0)
		return rfd;
	if (ioctl(rfd, FS_IOC_GETFSUUID, &u) == 0) {
		if (u.len == 16 && !all_zero(u.uuid, 16)) {
			memcpy(uuid, u.uuid, 16);
			goto out;
		}
	} else if (errno != ENOTTY && errno != EOPNOTSUPP && errno != EINVAL &&
		   errno != ENOSYS) {
		/* only "not supported" falls back */
		ret = -errno;
		goto out;
	}
	/* no UUID from the filesystem: a name derived from statfs's f_fsid
	 * (or st_dev when that is zero) and the filesystem type, marked as
	 * an RFC 9562 version 8 ("custom") UUID */
	if (fstatfs(rfd, &sf) < 0 || fstat(rfd, &st) < 0) {
		ret = -errno;
		goto out;
	}
	memset(key, 0, sizeof(key));
	memcpy(key, &sf.f_fsid, sizeof(sf.f_fsid) < 8 ? sizeof(sf.f_fsid) : 8);
	if (all_zero(key, 8)) {
		uint64_t dev = htole64((uint64_t)st.st_dev);

		memcpy(key, &dev, 8);
	}
	{
		uint64_t type = htole64((uint64_t)sf.f_type);

		memcpy(key + 8, &type, 8);
		memcpy(key + 16, "stackfs", 8);
	}
	for (int i = 0; i < 4; i++) {
		uint32_t c = htole32(sfs_crc32c((uint32_t)i * 0x9E3779B9u, key, sizeof(key)));

		memcpy(uuid + 4 * i, &c, 4);
	}
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x80);
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
out:
	close(rfd);
	return ret;
}

int sfs_fs_handle(int dirfd, const char *name, int *handle_type,
		  void *handle, unsigned *handle_bytes)
{
	union {
		struct file_handle fh;
		uint8_t raw[sizeof(struct file_handle) + SFS_HANDLE_MAX];
	} u;
	int mount_id, fd = name[0] ? sfs_nx_open(dirfd, name, O_PATH) : dirfd, ret = 0;

	/* a name is opened first: name_to_handle_at would cross a mount */
	if (fd < 0)
		return fd;
	u.fh.handle_bytes = SFS_HANDLE_MAX;
	if (name_to_handle_at(fd, "", &u.fh, &mount_id, AT_EMPTY_PATH) < 0)
		ret = errno == EOVERFLOW ? -EOVERFLOW : -errno;
	if (fd != dirfd)
		close(fd);
	if (ret < 0)
		return ret;
	if (u.fh.handle_bytes > *handle_bytes)
		return -EOVERFLOW;
	memcpy(handle, u.fh.f_handle, u.fh.handle_bytes);
	*handle_bytes = u.fh.handle_bytes;
	*handle_type = u.fh.handle_type;
	return 0;
}
