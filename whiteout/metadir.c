/* The metadata directory of a rw branch (see metadir.h): checking it,
 * changing nothing, and opening it for a mount (creating, upgrading,
 * locking, loading). Its files' formats: metaheader.c, registry.c,
 * inomap.c, metalowers.c; reading and writing them: metafile.c; the
 * lock: metalock.c; filesystem identities: fsid.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/bio.h"
#include "whiteout/journal.h"
#include "whiteout/ondisk.h"

#define HEADER_READ_MAX SFS_HEADER_READ_MAX

/* ------------------------------------------------------------ checking */

/* What is in a metadata dir without a header: only work/ (and what an
 * interrupted upgrade leaves) is version 0; nothing but what an
 * interrupted creation leaves is "absent"; anything else is corrupt. */
static int classify_headerless(int dir_fd, enum sfs_meta_state *state,
			       char *err, size_t errlen)
{
	DIR *d = sfs_do_opendir(dir_fd, ".");
	bool work = false, other = false;
	struct dirent *e;

	if (!d) {
		snprintf(err, errlen, "%s: %s", SFS_METADIR_NAME, strerror(errno));
		return -errno;
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

static int open_metadir(int at_fd, int *dir_fd, char *err, size_t errlen)
{
	int fd = sfs_meta_dir_open(at_fd, err, errlen);

	if (fd < 0)
		return fd;
	*dir_fd = fd;
	return 0;
}

int sfs_meta_check(int at_fd, enum sfs_meta_state *state,
		   char *err, size_t errlen)
{
	struct sfs_header h;
	int dir_fd, ret;

	ret = open_metadir(at_fd, &dir_fd, err, errlen);
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
		ret = sfs_jnl_pending(at_fd, err, errlen);
	return ret;
}

/* ------------------------------------------------------------ opening */

int sfs_meta_new_uuid(uint8_t uuid[16])
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

/* mkdir name in dir_fd (kept if it exists) and an O_PATH fd of it. */
static int subdir(int dir_fd, const char *name, int *out, char *err, size_t errlen)
{
	int fd;

	if (sfs_do_mkdirat(dir_fd, name, 0700) < 0 && errno != EEXIST) {
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
	ret = sfs_meta_empty_dir(fd);
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

/* A branch whose records are user.* is refused by a process that uses
 * trusted.* (metadir.h: SFS_META_F_USERXATTR). */
static int records_check(uint32_t flags, char *err, size_t errlen)
{
	if (!(flags & SFS_META_F_USERXATTR) || sfs_records_user())
		return 0;
	snprintf(err, errlen, "its records are user.* attributes, written by a mount "
		 "without trusted.* attributes (a user's, or a user namespace's root): "
		 "stackfs running with CAP_SYS_ADMIN does not follow records anyone who "
		 "may write the branch can forge; mount it as the user who made it");
	return -EPERM;
}

/* The header flags a mount writes: the whiteout style asked for (< 0:
 * as they are), and user.* records once a process without trusted.*
 * attributes uses the branch. */
static uint32_t wanted_flags(uint32_t flags, int whiteout_style)
{
	if (whiteout_style >= 0)
		flags = (flags & ~SFS_META_F_OVERLAY) | (whiteout_style > 0 ? SFS_META_F_OVERLAY : 0);
	return sfs_records_user() ? flags | SFS_META_F_USERXATTR : flags;
}

int sfs_meta_set_style(struct sfs_meta *m, int whiteout_style)
{
	struct sfs_header h = { .version = m->version, .ctime = m->ctime };
	int ret;

	h.flags = wanted_flags(m->flags, whiteout_style);
	if (h.flags == m->flags)
		return 0;
	memcpy(h.uuid, m->uuid, sizeof(h.uuid));
	ret = write_header(m->dir_fd, &h);
	if (ret == 0)
		m->flags = h.flags;
	return ret;
}

int sfs_meta_open(int at_fd, int whiteout_style, bool upgrade,
		  struct sfs_meta *m, char *err, size_t errlen)
{
	enum sfs_meta_state state;
	struct sfs_header h;
	int ret;

	memset(m, 0, sizeof(*m));
	m->dir_fd = m->work_fd = m->index_fd = m->lock_fd = m->ino_fd = -1;
	m->ino_unsynced = UINT64_MAX;
	pthread_mutex_init(&m->mu, NULL);
	err[0] = 0;
	/* every check first: a refused branch is left as it was */
	ret = sfs_meta_check(at_fd, &state, err, errlen);
	if (ret)
		goto fail;
	if (state == SFS_META_OLD && !upgrade)
		goto old;
	if (state == SFS_META_ABSENT) {
		if (sfs_do_mkdirat(at_fd, SFS_METADIR_NAME, 0700) < 0 && errno != EEXIST) {
			ret = -errno;
			snprintf(err, errlen, "cannot create %s: %s", SFS_METADIR_NAME,
				 strerror(-ret));
			goto fail;
		}
		ret = sfs_meta_fsync_dir(at_fd);
		if (ret)
			goto fail_io;
	}
	ret = open_metadir(at_fd, &m->dir_fd, err, errlen);
	if (ret)
		goto fail;
	ret = sfs_meta_take_lock(m, err, errlen);
	if (ret)
		goto fail;
	/* again, under the lock: another mount may have been quicker (the
	 * records are checked as they are loaded below) */
	ret = check_dir(m->dir_fd, false, &state, &h, err, errlen);
	if (ret)
		goto fail;
	if (state == SFS_META_OLD && !upgrade)
		goto old;
	if (state == SFS_META_CURRENT) {
		ret = records_check(h.flags, err, errlen);
		if (ret)
			goto fail;
	} else {
		memset(&h, 0, sizeof(h));
		h.version = SFS_META_VERSION;
		h.flags = whiteout_style > 0 ? SFS_META_F_OVERLAY : 0;
		h.flags |= sfs_records_user() ? SFS_META_F_USERXATTR : 0;
		h.ctime = (uint64_t)time(NULL);
		ret = sfs_meta_new_uuid(h.uuid);
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
	if (wanted_flags(h.flags, whiteout_style) != h.flags) {
		h.flags = wanted_flags(h.flags, whiteout_style);
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
	/* records never written were never handed out (no sync took them) */
	free(m->ino_pend);
	m->ino_pend = NULL;
	m->ino_pend_n = m->ino_pend_cap = 0;
	pthread_mutex_destroy(&m->mu);
	/* a second close must find a usable mutex */
	pthread_mutex_init(&m->mu, NULL);
}

int sfs_meta_read_flags(int at_fd, uint32_t *flags)
{
	struct sfs_header h;
	char err[256];
	int dir_fd, ret = open_metadir(at_fd, &dir_fd, err, sizeof(err));

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

/* The header rewritten in its own file, no name made in the metadata
 * dir: a mount's end clears its volatile flag after the view is
 * unmounted, when a container engine may be removing the branch already
 * (podman unmounts with umount2 and deletes the layer at once: a
 * header.tmp made after its removal read the directory stays there, and
 * its rmdir fails with ENOTEMPTY). The 64 bytes lie in the file's first
 * sector, written whole by one pwrite: a power cut leaves the old header
 * or the new one. -ENOENT when the header is gone (the branch is being
 * removed); -EINVAL when it is not the 64-byte regular file written. */
int sfs_meta_set_flags_in_place(struct sfs_meta *m, uint32_t flags)
{
	struct sfs_header h = { .version = m->version, .flags = flags, .ctime = m->ctime };
	struct sfs_disk_header d;
	struct stat st;
	ssize_t n;
	int fd, ret = 0;

	if (flags & ~SFS_HDR_KNOWN_FLAGS)
		return -EINVAL;
	memcpy(h.uuid, m->uuid, sizeof(h.uuid));
	sfs_header_encode(&h, &d);
	fd = sfs_meta_openat(m->dir_fd, SFS_META_HEADER, O_WRONLY | O_NONBLOCK, 0);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		ret = -errno;
	else if (!S_ISREG(st.st_mode) || st.st_size != (off_t)sizeof(d))
		ret = -EINVAL;
	else if ((n = sfs_do_pwrite(fd, &d, sizeof(d), 0)) != (ssize_t)sizeof(d))
		ret = n < 0 ? -errno : -EIO;
	else if (fdatasync(fd) < 0)
		ret = -errno;
	close(fd);
	if (ret == 0)
		m->flags = flags;
	return ret;
}
