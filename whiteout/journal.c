/* The commit journal and marker: their bytes (docs/format.md "commit", the
 * commit journal) and their files. A record may be hostile (anyone who
 * could write RW's .stackfs): every length is bounded, every path checked
 * to stay a plain path beneath a branch root, the checksum covers all. */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bio.h"
#include "whiteout/journal.h"
#include "whiteout/ondisk.h"

#define JNL_MAGIC "SFSCMT\0\0"
#define MARK_MAGIC "SFSCMF\0\0"
#define JNL_VERSION 1u
#define JNL_HEAD 96u
#define JNL_MOVE 16u
#define MARK_HEAD 56u
#define STAGE_MAX 63u

/* ------------------------------------------------------------ bytes */

static bool jzeros(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* An absolute path of plain components: no empty, ".", ".." one, no NUL. */
static bool path_ok(const char *p, size_t len)
{
	size_t i = 1;

	if (len < 1 || len > SFS_JNL_PATH_MAX || p[0] != '/' || memchr(p, 0, len))
		return false;
	if (len == 1)
		return true;
	while (i <= len) {
		size_t j = i;

		while (j < len && p[j] != '/')
			j++;
		if (j == i || (j - i == 1 && p[i] == '.') ||
		    (j - i == 2 && p[i] == '.' && p[i + 1] == '.') || j - i > 255)
			return false;
		i = j + 1;
	}
	return true;
}

static bool stage_ok(const char *s, size_t len)
{
	size_t pl = strlen(SFS_JNL_STAGE_PREFIX);

	if (len <= pl || len > STAGE_MAX || memcmp(s, SFS_JNL_STAGE_PREFIX, pl))
		return false;
	for (size_t i = pl; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static int jbad(char *err, size_t errlen, const char *what, const char *detail)
{
	snprintf(err, errlen, "%s is corrupt (%s)", what, detail);
	return -EUCLEAN;
}

/* The envelope the journal and the marker share: at least head + 4
 * bytes, the magic, the CRC32C of all but its last 4 bytes, the version. */
static int jenvelope(const uint8_t *b, size_t len, size_t head, const char *magic,
		     const char *what, char *err, size_t errlen)
{
	if (len < head + 4)
		return jbad(err, errlen, what, "truncated");
	if (memcmp(b, magic, 8))
		return jbad(err, errlen, what, "bad magic");
	if (sfs_le_get32(b + len - 4) != sfs_crc32c(0, b, len - 4))
		return jbad(err, errlen, what, "checksum mismatch");
	/* below the first version is no version any stackfs wrote */
	if (sfs_le_get32(b + 8) < JNL_VERSION)
		return jbad(err, errlen, what, "format version 0");
	if (sfs_le_get32(b + 8) != JNL_VERSION) {
		snprintf(err, errlen, "%s has format version %u (this stackfs knows %u)", what,
			 sfs_le_get32(b + 8), JNL_VERSION);
		return -EPROTONOSUPPORT;
	}
	return 0;
}

int sfs_jnl_encode(const struct sfs_journal *j, uint8_t **buf, size_t *len)
{
	size_t ll = strlen(j->lower), sl = strlen(j->stage), n = JNL_HEAD + ll + sl + 4;
	uint8_t *b, *p;

	if (j->nmv > SFS_JNL_MAX_MOVES || !path_ok(j->lower, ll) || !stage_ok(j->stage, sl))
		return -EINVAL;
	for (size_t i = 0; i < j->nmv; i++) {
		size_t a = strlen(j->mv[i].src), d = strlen(j->mv[i].dst);

		if (!path_ok(j->mv[i].src, a) || !path_ok(j->mv[i].dst, d))
			return -EINVAL;
		n += JNL_MOVE + a + d;
	}
	b = calloc(1, n);
	if (!b)
		return -ENOMEM;
	memcpy(b, JNL_MAGIC, 8);
	sfs_le_put32(b + 8, JNL_VERSION);
	sfs_le_put32(b + 12, j->phase);
	sfs_le_put32(b + 16, j->flags);
	sfs_le_put32(b + 20, j->pid);
	sfs_le_put32(b + 24, (uint32_t)j->nmv);
	sfs_le_put16(b + 28, (uint16_t)ll);
	sfs_le_put16(b + 30, (uint16_t)sl);
	memcpy(b + 32, j->lower_fs_uuid, 16);
	sfs_le_put64(b + 48, j->lower_ino);
	sfs_le_put64(b + 56, (uint64_t)j->rw_times[0].tv_sec);
	sfs_le_put32(b + 64, (uint32_t)j->rw_times[0].tv_nsec);
	sfs_le_put32(b + 68, (uint32_t)j->rw_times[1].tv_nsec);
	sfs_le_put64(b + 72, (uint64_t)j->rw_times[1].tv_sec);
	p = b + JNL_HEAD;
	memcpy(p, j->lower, ll);
	memcpy(p + ll, j->stage, sl);
	p += ll + sl;
	for (size_t i = 0; i < j->nmv; i++) {
		size_t a = strlen(j->mv[i].src), d = strlen(j->mv[i].dst);

		sfs_le_put64(p, j->mv[i].ino);
		sfs_le_put16(p + 8, (uint16_t)a);
		sfs_le_put16(p + 10, (uint16_t)d);
		memcpy(p + JNL_MOVE, j->mv[i].src, a);
		memcpy(p + JNL_MOVE + a, j->mv[i].dst, d);
		p += JNL_MOVE + a + d;
	}
	sfs_le_put32(p, sfs_crc32c(0, b, n - 4));
	*buf = b;
	*len = n;
	return 0;
}

void sfs_jnl_free(struct sfs_journal *j)
{
	for (size_t i = 0; i < j->nmv; i++) {
		free(j->mv[i].src);
		free(j->mv[i].dst);
	}
	free(j->mv);
	free(j->lower);
	free(j->stage);
	memset(j, 0, sizeof(*j));
}

static int parse_moves(const uint8_t *p, size_t left, struct sfs_journal *j, char *err,
		       size_t errlen)
{
	const char *what = SFS_METADIR_NAME "/" SFS_META_COMMIT;

	for (size_t i = 0; i < j->nmv; i++) {
		size_t a, d;

		if (left < JNL_MOVE)
			return jbad(err, errlen, what, "truncated");
		a = sfs_le_get16(p + 8);
		d = sfs_le_get16(p + 10);
		if (sfs_le_get32(p + 12) || left < JNL_MOVE + a + d)
			return jbad(err, errlen, what, "a move record is out of bounds");
		if (!path_ok((const char *)p + JNL_MOVE, a) ||
		    !path_ok((const char *)p + JNL_MOVE + a, d))
			return jbad(err, errlen, what, "a moved directory's path is not a plain path");
		j->mv[i].ino = sfs_le_get64(p);
		j->mv[i].src = strndup((const char *)p + JNL_MOVE, a);
		j->mv[i].dst = strndup((const char *)p + JNL_MOVE + a, d);
		if (!j->mv[i].src || !j->mv[i].dst)
			return -ENOMEM;
		p += JNL_MOVE + a + d;
		left -= JNL_MOVE + a + d;
	}
	return left == 4 ? 0 : jbad(err, errlen, what, "bytes after the last move");
}

int sfs_jnl_parse(const void *buf, size_t len, struct sfs_journal *j, char *err,
		  size_t errlen)
{
	const char *what = SFS_METADIR_NAME "/" SFS_META_COMMIT;
	const uint8_t *b = buf;
	size_t ll, sl;
	int ret;

	memset(j, 0, sizeof(*j));
	ret = jenvelope(b, len, JNL_HEAD, JNL_MAGIC, what, err, errlen);
	if (ret < 0)
		return ret;
	j->phase = sfs_le_get32(b + 12);
	j->flags = sfs_le_get32(b + 16);
	j->pid = sfs_le_get32(b + 20);
	j->nmv = sfs_le_get32(b + 24);
	ll = sfs_le_get16(b + 28);
	sl = sfs_le_get16(b + 30);
	if ((j->phase != SFS_JNL_MOVING && j->phase != SFS_JNL_APPLIED) ||
	    (j->flags & ~SFS_JNL_KNOWN_FLAGS) || j->nmv > SFS_JNL_MAX_MOVES ||
	    !jzeros(b + 80, JNL_HEAD - 80) || sfs_le_get32(b + 64) >= 1000000000u ||
	    sfs_le_get32(b + 68) >= 1000000000u)
		return jbad(err, errlen, what, "a field is out of range");
	if (len < JNL_HEAD + ll + sl + 4 || !path_ok((const char *)b + JNL_HEAD, ll) ||
	    !stage_ok((const char *)b + JNL_HEAD + ll, sl))
		return jbad(err, errlen, what, "the lower branch or staging name is not valid");
	memcpy(j->lower_fs_uuid, b + 32, 16);
	j->lower_ino = sfs_le_get64(b + 48);
	j->rw_times[0].tv_sec = (time_t)sfs_le_get64(b + 56);
	j->rw_times[0].tv_nsec = sfs_le_get32(b + 64);
	j->rw_times[1].tv_nsec = sfs_le_get32(b + 68);
	j->rw_times[1].tv_sec = (time_t)sfs_le_get64(b + 72);
	j->lower = strndup((const char *)b + JNL_HEAD, ll);
	j->stage = strndup((const char *)b + JNL_HEAD + ll, sl);
	j->mv = calloc(j->nmv ? j->nmv : 1, sizeof(*j->mv));
	ret = !j->lower || !j->stage || !j->mv ? -ENOMEM
		: parse_moves(b + JNL_HEAD + ll + sl, len - JNL_HEAD - ll - sl, j, err, errlen);
	if (ret < 0)
		sfs_jnl_free(j);
	return ret;
}

int sfs_jmark_encode(const struct sfs_jnl_mark *m, uint8_t **buf, size_t *len)
{
	size_t pl = strlen(m->rw), n = MARK_HEAD + pl + 4;
	uint8_t *b;

	if (!path_ok(m->rw, pl))
		return -EINVAL;
	b = calloc(1, n);
	if (!b)
		return -ENOMEM;
	memcpy(b, MARK_MAGIC, 8);
	sfs_le_put32(b + 8, JNL_VERSION);
	sfs_le_put16(b + 12, (uint16_t)pl);
	memcpy(b + 16, m->rw_uuid, 16);
	memcpy(b + 32, m->rw_fs_uuid, 16);
	sfs_le_put64(b + 48, m->rw_ino);
	memcpy(b + MARK_HEAD, m->rw, pl);
	sfs_le_put32(b + n - 4, sfs_crc32c(0, b, n - 4));
	*buf = b;
	*len = n;
	return 0;
}

int sfs_jmark_parse(const void *buf, size_t len, struct sfs_jnl_mark *m, char *err,
		    size_t errlen)
{
	const char *what = SFS_METADIR_NAME "/" SFS_META_COMMIT_FROM;
	const uint8_t *b = buf;
	size_t pl;
	int ret;

	memset(m, 0, sizeof(*m));
	ret = jenvelope(b, len, MARK_HEAD, MARK_MAGIC, what, err, errlen);
	if (ret < 0)
		return ret;
	pl = sfs_le_get16(b + 12);
	if (sfs_le_get16(b + 14) || len != MARK_HEAD + pl + 4 || !path_ok((const char *)b + MARK_HEAD, pl))
		return jbad(err, errlen, what, "the rw branch's path is not valid");
	memcpy(m->rw_uuid, b + 16, 16);
	memcpy(m->rw_fs_uuid, b + 32, 16);
	m->rw_ino = sfs_le_get64(b + 48);
	m->rw = strndup((const char *)b + MARK_HEAD, pl);
	return m->rw ? 0 : -ENOMEM;
}

void sfs_jmark_free(struct sfs_jnl_mark *m)
{
	free(m->rw);
	memset(m, 0, sizeof(*m));
}

/* ------------------------------------------------------------ files */

/* The largest records the bounds allow: reading stops there (-EFBIG). */
#define JNL_FILE_MAX ((size_t)JNL_HEAD + SFS_JNL_PATH_MAX + STAGE_MAX + 4 + \
		      (size_t)SFS_JNL_MAX_MOVES * (JNL_MOVE + 2 * SFS_JNL_PATH_MAX))
#define MARK_FILE_MAX ((size_t)MARK_HEAD + SFS_JNL_PATH_MAX + 4)

static int read_rec(int at_fd, const char *name, size_t max, uint8_t **buf, size_t *len,
		    char *err, size_t errlen)
{
	int meta = sfs_meta_dir_open(at_fd, err, errlen);
	int ret = meta < 0 ? meta : sfs_meta_read_file(meta, name, max, buf, len);

	if (meta >= 0)
		close(meta);
	if (meta == -EPERM)
		return meta; /* not trusted: never acted on (err says why) */
	/* a .stackfs that is no directory may have held the record: damage,
	 * never "nothing pending" (a marker judged stale would go) */
	if (ret == -ENOTDIR && meta < 0)
		snprintf(err, errlen, "%s is not a directory: corrupt", SFS_METADIR_NAME);
	else if (ret < 0 && ret != -ENOENT)
		snprintf(err, errlen, "%s/%s: %s", SFS_METADIR_NAME, name,
			 ret == -EINVAL ? "not a regular file" :
			 ret == -EFBIG ? "is corrupt (longer than its bounds allow)" : strerror(-ret));
	return ret == -EINVAL || ret == -EFBIG || ret == -ENOTDIR ? -EUCLEAN : ret;
}

int sfs_jnl_read(int at_fd, struct sfs_journal *j, char *err, size_t errlen)
{
	uint8_t *buf;
	size_t len;
	int ret = read_rec(at_fd, SFS_META_COMMIT, JNL_FILE_MAX, &buf, &len, err, errlen);

	if (ret < 0)
		return ret;
	ret = sfs_jnl_parse(buf, len, j, err, errlen);
	free(buf);
	return ret;
}

int sfs_jmark_read(int at_fd, struct sfs_jnl_mark *m, char *err, size_t errlen)
{
	uint8_t *buf;
	size_t len;
	int ret = read_rec(at_fd, SFS_META_COMMIT_FROM, MARK_FILE_MAX, &buf, &len, err,
			   errlen);

	if (ret < 0)
		return ret;
	ret = sfs_jmark_parse(buf, len, m, err, errlen);
	free(buf);
	return ret;
}

static int write_rec(int at_fd, const char *name, const uint8_t *buf, size_t len,
		     bool create, bool *made)
{
	int meta, ret;

	if (made)
		*made = false;
	meta = sfs_meta_dir_open(at_fd, NULL, 0);
	if (meta == -ENOENT && create) {
		if (sfs_do_mkdirat(at_fd, SFS_METADIR_NAME, 0700) < 0)
			return -errno;
		if (made)
			*made = true;
		ret = sfs_meta_fsync_dir(at_fd);
		if (ret < 0)
			return ret;
		meta = sfs_meta_dir_open(at_fd, NULL, 0);
	}
	if (meta < 0)
		return meta;
	ret = sfs_meta_write_file(meta, name, buf, len);
	close(meta);
	return ret;
}

int sfs_jnl_write(int at_fd, const struct sfs_journal *j)
{
	uint8_t *buf;
	size_t len;
	int ret = sfs_jnl_encode(j, &buf, &len);

	if (ret < 0)
		return ret;
	ret = write_rec(at_fd, SFS_META_COMMIT, buf, len, false, NULL);
	free(buf);
	return ret;
}

int sfs_jmark_write(int at_fd, const struct sfs_jnl_mark *m, bool *made)
{
	uint8_t *buf;
	size_t len;
	int ret = sfs_jmark_encode(m, &buf, &len);

	if (ret < 0)
		return ret;
	ret = write_rec(at_fd, SFS_META_COMMIT_FROM, buf, len, true, made);
	free(buf);
	return ret;
}

/* ------------------------------------------------------------ mend */

/* A journal or marker whose one damaged byte the checksum finds is put
 * back (whiteout/mend.c), so a commit a flipped byte stopped can still be
 * recovered. Each candidate is parsed whole: a byte the checksum alone
 * accepts is not enough. Records above this size are not tried (each
 * of 256 values at each byte is a pass over the record). */
#define MEND_MAX 2048u

static bool jnl_whole(const uint8_t *buf, size_t len, void *arg)
{
	bool mark = *(const bool *)arg;
	struct sfs_jnl_mark m;
	struct sfs_journal j;
	char err[8];

	if (sfs_le_get32(buf + len - 4) != sfs_crc32c(0, buf, len - 4))
		return false;
	if (mark ? sfs_jmark_parse(buf, len, &m, err, sizeof(err))
		 : sfs_jnl_parse(buf, len, &j, err, sizeof(err)))
		return false;
	if (mark)
		sfs_jmark_free(&m);
	else
		sfs_jnl_free(&j);
	return true;
}

int sfs_jnl_mend(int at_fd, bool mark, bool apply, size_t *at, uint8_t *was)
{
	const char *name = mark ? SFS_META_COMMIT_FROM : SFS_META_COMMIT;
	char err[256];
	uint8_t *buf;
	size_t len;
	int ret = read_rec(at_fd, name, mark ? MARK_FILE_MAX : JNL_FILE_MAX, &buf, &len,
			   err, sizeof(err));

	if (ret < 0)
		return ret;
	ret = len >= 8 && len <= MEND_MAX ? sfs_mend_byte(buf, len, jnl_whole, &mark, at, was)
					  : 0;
	if (ret == 1 && apply) {
		int w = write_rec(at_fd, name, buf, len, false, NULL);

		ret = w < 0 ? w : 1;
	}
	free(buf);
	return ret == -1 ? 0 : ret; /* -1: two candidates, no mend */
}

int sfs_jnl_pending(int at_fd, char *err, size_t errlen)
{
	int meta = sfs_meta_dir_open(at_fd, NULL, 0);
	bool jnl, mark;

	if (meta < 0)
		return 0;
	jnl = sfs_do_stat(meta, SFS_META_COMMIT, &(struct stat){ 0 }) == 0;
	mark = sfs_do_stat(meta, SFS_META_COMMIT_FROM, &(struct stat){ 0 }) == 0;
	close(meta);
	if (jnl) {
		snprintf(err, errlen, "an unfinished stackfs commit from this branch "
			 "(%s/%s): run stackfs commit again or stackfs fsck --repair on it",
			 SFS_METADIR_NAME, SFS_META_COMMIT);
		return -EINPROGRESS;
	}
	if (mark) {
		snprintf(err, errlen, "an unfinished stackfs commit into this branch "
			 "(%s/%s): run stackfs commit again or stackfs fsck --repair on it",
			 SFS_METADIR_NAME, SFS_META_COMMIT_FROM);
		return -EINPROGRESS;
	}
	return 0;
}

bool sfs_jnl_same_branch(int fd, const uint8_t fs_uuid[16], uint64_t ino)
{
	uint8_t u[16];
	struct stat st;

	return fstat(fd, &st) == 0 && (uint64_t)st.st_ino == ino &&
	       sfs_fs_uuid(fd, u) == 0 && !memcmp(u, fs_uuid, 16);
}
