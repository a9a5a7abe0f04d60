/* The lower branches fsck judges whiteouts, origin records and index
 * entries against (fsck.h): --lower, or those below the branch in
 * `lowers`, each verified to be the branch that was mounted (the
 * registry's records); and what they hold: the lower paths a directory
 * may be merged with (its candidates: the plain path, its redirect and
 * every redirect found below, without cutting at lower opaque
 * directories or whiteouts, so a whiteout that still hides something is
 * never taken away), the names there, the inodes origin records name. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bio.h"
#include "whiteout/fsck_int.h"
#include "whiteout/ondisk.h"
#include "whiteout/whiteout.h"

/* ------------------------------------------------------------ lower branches */

static bool root_numbered(int fd)
{
	uint8_t handle[SFS_HANDLE_MAX];
	unsigned hb = sizeof(handle);
	int type;

	return sfs_fs_handle(fd, "", &type, handle, &hb) == 0 && type == SFS_HANDLE_NUMBER;
}

static int add_lower(struct fsck *f, const char *path)
{
	struct lower_br *v = realloc(f->low, (f->nlow + 1) * sizeof(*v));
	struct lower_br *l;
	int fd;

	if (!v)
		return -ENOMEM;
	f->low = v;
	/* not O_PATH: open_by_handle_at wants a real fd of the filesystem */
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	l = &f->low[f->nlow++];
	memset(l, 0, sizeof(*l));
	l->fd = fd;
	l->path = strdup(path);
	l->uuid_ok = sfs_fs_uuid(fd, l->uuid) == 0;
	l->numbered = root_numbered(fd);
	return l->path ? 0 : -ENOMEM;
}

static bool same_dir(int a_fd, const char *b_path)
{
	struct stat a, b;

	return fstat(a_fd, &a) == 0 && stat(b_path, &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* The branch records of the registry (kind 2: filesystem UUID and root
 * file handle of every branch of a mount this branch was the highest rw
 * branch of). false when there are none to compare with. */
static bool load_branch_records(struct fsck *f, struct sfs_reg_table *t)
{
	char err[256];
	uint8_t *buf;
	size_t len;
	bool any = false;

	memset(t, 0, sizeof(*t));
	if (f->reg_damaged)
		return false;
	if (f->meta_fd < 0 || f->v0 ||
	    sfs_meta_read_file(f->meta_fd, SFS_META_REGISTRY, SFS_REG_MAX_BYTES, &buf, &len))
		return false;
	if (sfs_reg_parse(buf, len, t, err, sizeof(err)) == 0)
		for (size_t i = 0; i < t->n; i++)
			any |= t->v[i].kind == SFS_REG_BRANCH;
	free(buf);
	return any;
}

/* 1 when the directory fd is a branch the registry records, 0 when it is
 * another one, -errno when its identity cannot be read. */
static int recorded_branch(const struct sfs_reg_table *t, int fd)
{
	struct sfs_reg_entry key = { .kind = SFS_REG_BRANCH };
	unsigned hb = SFS_HANDLE_MAX;
	int type, ret = sfs_fs_uuid(fd, key.fs_uuid);

	if (!ret)
		ret = sfs_fs_handle(fd, "", &type, key.handle, &hb);
	if (ret)
		return ret;
	key.handle_type = type;
	key.handle_bytes = (uint16_t)hb;
	return sfs_reg_table_find(t, &key) != NULL;
}

/* --lower: opened before anything else (one that cannot be opened
 * stops the check: a whiteout would look as if it hid nothing). */
int sfs_fsck_open_given_lowers(struct fsck *f)
{
	for (size_t i = 0; i < f->o->nlowers; i++) {
		int ret = add_lower(f, f->o->lowers[i]);

		if (ret) {
			sfs_fsck_msg(f, true, "lower branch %s: %s", f->o->lowers[i],
				     strerror(-ret));
			return ret;
		}
	}
	f->lowers_known = f->lowers_trusted = true;
	return 0;
}

/* --lower taken as given; one the registry does not record is judged
 * against, but nothing it decides is repaired without --force. */
static void verify_given_lowers(struct fsck *f)
{
	struct sfs_reg_table t;
	bool records = load_branch_records(f, &t);

	for (size_t i = 0; records && i < f->nlow; i++) {
		if (recorded_branch(&t, f->low[i].fd) == 1)
			continue;
		if (f->o->force) {
			sfs_fsck_msg(f, false, "--lower %s is not a branch recorded in %s/%s: "
				     "judged against all the same (--force)", f->low[i].path,
				     SFS_METADIR_NAME, SFS_META_REGISTRY);
			continue;
		}
		sfs_fsck_msg(f, false, "--lower %s is not a branch recorded in %s/%s (never "
			     "mounted with this branch): whiteouts, origin records and index "
			     "entries are judged against it but not repaired (--force to repair)",
			     f->low[i].path, SFS_METADIR_NAME, SFS_META_REGISTRY);
		f->lowers_trusted = false;
	}
	sfs_reg_table_free(&t);
}

/* One branch of lowers below this one: opened, and the very branch that
 * was mounted (its identity in the registry), else an error saying that
 * nothing is judged. 0 or -1. */
static int recorded_lower(struct fsck *f, const struct sfs_reg_table *t, bool records,
			  const char *path)
{
	static const char tail[] = "whiteouts, origin records and index entries are not "
				   "checked against the lower branches (give them with --lower)";
	int ret = add_lower(f, path);

	if (ret) {
		sfs_fsck_msg(f, true, "lower branch %s (from %s/%s) %s: %s", path,
			     SFS_METADIR_NAME, SFS_META_LOWERS,
			     ret == -ENOENT ? "is missing" : "cannot be opened",
			     ret == -ENOENT ? tail : strerror(-ret));
		return -1;
	}
	if (!records)
		return 0;
	ret = recorded_branch(t, f->low[f->nlow - 1].fd);
	if (ret == 1)
		return 0;
	if (ret == 0)
		sfs_fsck_msg(f, true, "%s is not the lower branch of the last mount (its "
			     "filesystem UUID and root file handle are not in %s/%s: an empty "
			     "mount point, another directory in its place, or a record lost): %s",
			     path, SFS_METADIR_NAME, SFS_META_REGISTRY, tail);
	else
		sfs_fsck_msg(f, true, "lower branch %s: its identity cannot be read: %s: %s", path,
			     strerror(-ret), tail);
	return -1;
}

/* The lower branches: --lower, else those below this branch in lowers,
 * each checked to be the branch that was mounted there. */
int sfs_fsck_find_lowers(struct fsck *f)
{
	struct sfs_lower *v = NULL;
	struct sfs_reg_table t;
	size_t n = 0, self;
	bool records;
	char err[256];

	if (f->o->lowers) {
		verify_given_lowers(f);
		return 0;
	}
	if (f->meta_fd < 0 || sfs_meta_read_lowers(f->meta_fd, &v, &n, err, sizeof(err))) {
		sfs_fsck_msg(f, false, "the lower branches are unknown (no --lower, no readable "
			     "%s/%s): whiteouts and origin records are not checked against them",
			     SFS_METADIR_NAME, SFS_META_LOWERS);
		return 0;
	}
	records = load_branch_records(f, &t);
	for (self = 0; self < n && !same_dir(f->root_fd, v[self].path); self++)
		;
	if (self == n) {
		sfs_fsck_msg(f, false, "the branch is not in %s/%s (moved?): whiteouts and "
			     "origin records are not checked against lower branches; give them "
			     "with --lower", SFS_METADIR_NAME, SFS_META_LOWERS);
		goto out;
	}
	if (self + 1 == n) {
		sfs_fsck_msg(f, false, "the last mount had no branch below this one: whiteouts "
			     "and origin records are not checked against lower branches; give "
			     "them with --lower");
		goto out;
	}
	for (size_t i = self + 1; i < n; i++)
		if (recorded_lower(f, &t, records, v[i].path))
			goto out;
	f->lowers_known = true;
	/* without records the paths are all there is: reported, not repaired */
	f->lowers_trusted = records || f->o->force;
	if (!f->lowers_trusted)
		sfs_fsck_msg(f, false, "%s/%s %s: the branches of %s/%s cannot be checked against "
			     "it; what they decide is reported, not repaired (--force to repair)",
			     SFS_METADIR_NAME, SFS_META_REGISTRY,
			     f->reg_damaged ? "was damaged" : "records no branch",
			     SFS_METADIR_NAME, SFS_META_LOWERS);
out:
	sfs_reg_table_free(&t);
	sfs_lowers_free(v, n);
	return 0;
}

/* ------------------------------------------------------------ candidates */

void sfs_fsck_cands_free(struct cands *c)
{
	sfs_fsck_free_names(c->v, c->n);
	memset(c, 0, sizeof(*c));
}

void sfs_fsck_cands_add(struct cands *c, char *p)
{
	char **v;

	if (!p) {
		c->unknown = true;
		return;
	}
	for (size_t i = 0; i < c->n; i++) {
		if (!strcmp(c->v[i], p)) {
			free(p);
			return;
		}
	}
	if (c->n >= MAX_CANDIDATES || !(v = realloc(c->v, (c->n + 1) * sizeof(*v)))) {
		c->unknown = true;
		free(p);
		return;
	}
	c->v = v;
	c->v[c->n++] = p;
}

int sfs_fsck_lower_dir(struct fsck *f, size_t j, const char *p)
{
	int fd = sfs_meta_openat(f->low[j].fd, p[1] ? p + 1 : ".", O_PATH | O_DIRECTORY, 0);

	if (fd == -ENOTDIR || fd == -ELOOP || fd == -EXDEV)
		return -ENOENT;
	return fd;
}

/* A redirect of a directory (any of the three names), or NULL. */
static char *redirect_of(int dfd, const char *name)
{
	const char *const names[] = {
		SFS_REDIRECT_XATTR, SFS_OVL_REDIRECT_XATTR, SFS_OVL_USER_REDIRECT_XATTR,
	};
	char buf[4096];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (sfs_fsck_get_xattr(dfd, name, names[i], buf, sizeof(buf)) > 0)
			return strdup(buf);
	return NULL;
}

static char *dir_of(const char *p)
{
	const char *s = strrchr(p, '/');

	return s == p || !s ? strdup("/") : strndup(p, (size_t)(s - p));
}

/* The candidates of a subdirectory `name` of a directory with parent's
 * candidates, given whether it is opaque and its own redirect. */
void sfs_fsck_child_cands(struct fsck *f, const struct cands *parent, const char *name,
			  bool opaque, const char *redirect, struct cands *c)
{
	memset(c, 0, sizeof(*c));
	if (parent->unknown) {
		c->unknown = true;
		return;
	}
	if (opaque)
		return;
	for (size_t i = 0; i < parent->n; i++)
		sfs_fsck_cands_add(c, sfs_fsck_join(parent->v[i], name));
	if (redirect && redirect[0] == '/')
		sfs_fsck_cands_add(c, strdup(redirect));
	else if (redirect)
		for (size_t i = 0; i < parent->n; i++)
			sfs_fsck_cands_add(c, sfs_fsck_join(parent->v[i], redirect));
	/* keep the paths some lower has, adding the redirects found there */
	for (size_t i = 0; i < c->n && !c->unknown;) {
		bool exists = false;

		for (size_t j = 0; j < f->nlow && !c->unknown; j++) {
			int fd = sfs_fsck_lower_dir(f, j, c->v[i]);
			char *r;

			if (fd == -ENOENT)
				continue;
			if (fd < 0) {
				c->unknown = true;
				break;
			}
			exists = true;
			r = redirect_of(fd, "");
			close(fd);
			if (r && r[0] == '/') {
				sfs_fsck_cands_add(c, r);
				continue;
			}
			if (r) {
				char *d = dir_of(c->v[i]);

				sfs_fsck_cands_add(c, d ? sfs_fsck_join(d, r) : NULL);
				for (size_t k = 0; k < parent->n; k++)
					sfs_fsck_cands_add(c, sfs_fsck_join(parent->v[k], r));
				free(d);
				free(r);
			}
		}
		if (exists) {
			i++;
		} else {
			free(c->v[i]);
			c->v[i] = c->v[--c->n];
		}
	}
	if (c->unknown) {
		sfs_fsck_cands_free(c);
		c->unknown = true;
	}
}

/* Bytes of a lower directory (its st_size) worth reading once for each
 * whiteout judged against it: a lookup costs an open, a stat and a close
 * (and, cold, a read of the lower inode), a listed name a small part of
 * one getdents (ext4 takes 12 to 32 bytes a short name). It also bounds
 * a listing's memory by the upper directory's own. */
#define LIST_BYTES_PER_WH 128

/* Whether every lookup in a directory of this mode is allowed: a refused
 * one (EACCES) is "not known" to lower_has, which a listing could not
 * say. Group membership is not looked at: not sure, not listed. */
static bool may_search(const struct stat *st)
{
	uid_t u = geteuid();

	if (u == 0)
		return true;
	if (st->st_uid == u)
		return st->st_mode & S_IXUSR;
	return (st->st_mode & S_IXGRP) && (st->st_mode & S_IXOTH);
}

/* The listing of lower directory fd, when nwh whiteouts will be judged
 * against it and that costs less than their lookups; else none. */
static void list_lower(int fd, size_t nwh, struct lower_list *ll)
{
	struct stat st;

	memset(ll, 0, sizeof(*ll));
	if (fd < 0 || !nwh || sfs_do_fstat(fd, &st) < 0 || !may_search(&st) ||
	    (uint64_t)st.st_size > (uint64_t)nwh * LIST_BYTES_PER_WH)
		return;
	if (sfs_fsck_list_dir_ext(fd, true, &ll->v, &ll->n, NULL) < 0)
		memset(ll, 0, sizeof(*ll));
	else
		ll->listed = true;
}

void sfs_fsck_lower_fds_open(struct fsck *f, const struct cands *c, size_t nwh,
			     struct lower_fds *l)
{
	memset(l, 0, sizeof(*l));
	l->unknown = c->unknown || !f->lowers_known;
	if (l->unknown || !c->n || !f->nlow)
		return;
	l->fd = malloc(c->n * f->nlow * sizeof(int));
	l->list = calloc(c->n * f->nlow, sizeof(*l->list));
	if (!l->fd || !l->list) {
		free(l->fd);
		free(l->list);
		l->fd = NULL;
		l->list = NULL;
		l->unknown = true;
		return;
	}
	l->n = c->n * f->nlow;
	for (size_t i = 0; i < c->n; i++) {
		for (size_t j = 0; j < f->nlow; j++) {
			int fd = sfs_fsck_lower_dir(f, j, c->v[i]);

			if (fd < 0 && fd != -ENOENT)
				l->unknown = true;
			l->fd[i * f->nlow + j] = fd;
			list_lower(fd, nwh, &l->list[i * f->nlow + j]);
		}
	}
}

void sfs_fsck_lower_fds_close(struct lower_fds *l)
{
	for (size_t i = 0; i < l->n; i++) {
		if (l->fd[i] >= 0)
			close(l->fd[i]);
		sfs_fsck_free_names(l->list[i].v, l->list[i].n);
	}
	free(l->fd);
	free(l->list);
	memset(l, 0, sizeof(*l));
}

/* What a listing says of name without a lookup: 1 there (and no 0:0
 * device), 0 not there, -1 a lookup must say (a device, or a type
 * getdents does not give; or no listing). A mount point on the name is
 * listed, as the lookup's EXDEV says "there". */
static int listed_has(const struct lower_list *ll, const char *name)
{
	const char *e;

	if (!ll->listed)
		return -1;
	e = sfs_fsck_typed_find(ll->v, ll->n, name);
	if (!e)
		return 0;
	return e[0] == DT_CHR || e[0] == DT_UNKNOWN ? -1 : 1;
}

/* 1 when some lower has `name` where the directory merges, 0 when none
 * has, -1 when it cannot be known. */
int sfs_fsck_lower_has(const struct lower_fds *l, const char *name)
{
	if (l->unknown)
		return -1;
	for (size_t i = 0; i < l->n; i++) {
		struct stat st;
		int ls;

		if (l->fd[i] < 0)
			continue;
		ls = listed_has(&l->list[i], name);
		if (ls == 1)
			return 1;
		if (ls == 0)
			continue;
		int ret = sfs_do_stat(l->fd[i], name, &st);

		if (ret == -EXDEV)
			return 1; /* a mount point: a name there, not entered */
		if (ret == 0) {
			if (!sfs_wh_is_dev_whiteout(l->fd[i], name, &st))
				return 1;
		} else if (ret != -ENOENT && ret != -ENOTDIR) {
			return -1;
		}
	}
	return 0;
}

/* ------------------------------------------------------------ origins */

/* Whether the lower inode a valid record names is gone: 1 gone (why
 * says how), 0 still there, -1 not known (said in a note or error). */
int sfs_fsck_origin_gone(struct fsck *f, const struct sfs_origin *o, const char *path,
			 char *why, size_t whylen)
{
	struct file_handle *fh;
	struct stat st;
	size_t j;
	int ret, fd;

	if (o->version != SFS_ORIGIN_VERSION || !o->handle_bytes || !f->lowers_known)
		return -1;
	for (j = 0; j < f->nlow; j++)
		if (f->low[j].uuid_ok && !memcmp(f->low[j].uuid, o->fs_uuid, 16))
			break;
	if (j == f->nlow) {
		uint8_t (*v)[16];

		for (size_t k = 0; k < f->nnoted; k++)
			if (!memcmp(f->noted[k], o->fs_uuid, 16))
				return -1;
		v = realloc(f->noted, (f->nnoted + 1) * sizeof(*v));
		if (v) {
			f->noted = v;
			memcpy(f->noted[f->nnoted++], o->fs_uuid, 16);
		}
		sfs_fsck_msg(f, false, "%s (and maybe others): its origin is on a filesystem that "
			     "no lower branch is on: not checked", path);
		return -1;
	}
	/* FUSE: a handle names a node of the client, which may be another
	 * file's by now, or holds the inode number alone: nothing to open */
	if (f->handle_denied || f->low[j].numbered || o->handle_type == SFS_HANDLE_NUMBER)
		return -1;
	fh = malloc(sizeof(*fh) + o->handle_bytes);
	if (!fh) {
		sfs_fsck_msg(f, true, "out of memory");
		return -1;
	}
	fh->handle_bytes = o->handle_bytes;
	fh->handle_type = o->handle_type;
	memcpy(fh->f_handle, o->handle, o->handle_bytes);
	fd = sfs_do_open_by_handle(f->low[j].fd, fh, O_PATH | O_CLOEXEC);
	ret = fd < 0 ? -errno : 0;
	free(fh);
	if (ret == -ESTALE || ret == -ENOENT) {
		snprintf(why, whylen, "inode %llu of %s's filesystem", (unsigned long long)o->ino,
			 f->low[j].path);
		return 1;
	}
	if (ret == -EPERM && sfs_records_user()) {
		/* a user's fsck (rootless records): a limit, not a failure */
		sfs_fsck_msg(f, false, "origin records are not checked against the lower "
			     "inodes: open_by_handle_at needs CAP_DAC_READ_SEARCH, which this "
			     "fsck has not");
		f->handle_denied = true;
		return -1;
	}
	if (ret) {
		if (!f->handle_warned)
			sfs_fsck_msg(f, true, "%s: cannot check its origin: "
				     "open_by_handle_at: %s%s", path, strerror(-ret),
				     ret == -EPERM ? " (needs CAP_DAC_READ_SEARCH)" : "");
		f->handle_warned = true;
		return -1;
	}
	ret = fstat(fd, &st) < 0 ? -errno : 0;
	close(fd);
	if (ret || (uint64_t)st.st_ino == o->ino)
		return 0;
	snprintf(why, whylen, "the handle names inode %llu, the record says %llu",
		 (unsigned long long)st.st_ino, (unsigned long long)o->ino);
	return 1;
}
