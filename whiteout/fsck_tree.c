/* fsck of the branch's tree (fsck.h): each .wh. name (an empty regular
 * file; not beside the entry it hides; hiding something below), each
 * overlay whiteout, .wh..wh..opq, the opaque xattrs, redirect values,
 * origin records, and a metadata directory below the root. A whiteout
 * "hides nothing" only when no lower branch has the name at any path
 * the directory could be merged with (fsck_lowers.c). */
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
#include "whiteout/journal.h"
#include "whiteout/lowername.h"
#include "whiteout/ondisk.h"
#include "whiteout/whiteout.h"
#include "xattr/xattr.h"

#define FSCK_TMP ".wh..wh..fsck" /* fsck's own temporary name */
#define MAX_DEPTH 4096

/* ------------------------------------------------------------ helpers */

/* A directory of the branch being checked: its fd, its listing (typed:
 * each name after its d_type byte, sorted by name), the lower
 * directories it merges with. */
struct dir {
	int fd;
	char **names;
	size_t n;
	const struct lower_fds *lf;
};

static int remove_xattr(int dfd, const char *name, const char *attr)
{
	int ret = sfs_xattr_remove(dfd, name, attr);

	return ret == -ENODATA ? 0 : ret;
}

/* Whether the directory's listing (sorted) holds name. */
static bool listed(const struct dir *d, const char *name)
{
	return sfs_fsck_typed_find(d->names, d->n, name) != NULL;
}

static bool is_empty_dir(int dfd, const char *name)
{
	int fd = sfs_meta_openat(dfd, name, O_PATH | O_DIRECTORY, 0);
	char **v;
	size_t n;
	bool empty = false;

	if (fd < 0)
		return false;
	if (sfs_fsck_list_dir(fd, &v, &n) == 0) {
		empty = n == 0;
		sfs_fsck_free_names(v, n);
	}
	close(fd);
	return empty;
}

/* Puts an empty regular file in place of dfd/name (an empty directory or
 * a non-regular file) without a moment where the name is missing. */
static int replace_with_empty_file(int dfd, const char *name, bool is_dir)
{
	int fd, ret = 0;

	fd = sfs_meta_openat(dfd, FSCK_TMP, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return fd;
	if (fsync(fd) < 0)
		ret = -errno;
	close(fd);
	if (!ret && is_dir) {
		if (sfs_do_renameat2(dfd, FSCK_TMP, dfd, name, RENAME_EXCHANGE) < 0)
			ret = -errno;
		else if (sfs_do_unlinkat(dfd, FSCK_TMP, AT_REMOVEDIR) < 0)
			ret = -errno;
	} else if (!ret && sfs_do_renameat2(dfd, FSCK_TMP, dfd, name, 0) < 0) {
		ret = -errno;
	}
	if (ret)
		sfs_do_unlinkat(dfd, FSCK_TMP, 0);
	else
		ret = sfs_meta_fsync_dir(dfd);
	return ret;
}

/* ------------------------------------------------------------ the tree */

static bool opaque_value_ok(const char *v)
{
	return !strcmp(v, "y") || !strcmp(v, "x");
}

void sfs_fsck_origin_damaged(struct fsck *f, int dfd, const char *name, const char *path,
			     bool removable)
{
	struct sfs_fsck_problem *p;
	size_t at;
	uint8_t was;
	int mend = sfs_origin_mend(dfd, name, false, &at, &was) == 1, ret;

	if (mend)
		p = sfs_fsck_found(f, SFS_PR_ORIGIN_CORRUPT, true, path, "byte %zu is damaged: "
				   "the checksum holds with 0x%02x there", at, was);
	else
		p = sfs_fsck_found(f, SFS_PR_ORIGIN_CORRUPT, removable, path, "%s",
				   removable ? "no single byte mends it" :
				   "no single byte mends it; an index entry is not judged without it");
	if (!p)
		return;
	ret = mend ? sfs_origin_mend(dfd, name, true, &at, &was) : sfs_origin_remove(dfd, name);
	sfs_fsck_done(f, p, ret < 0 ? ret : ret == 0 && mend ? -EUCLEAN : 0);
}

/* A lower-name record (whiteout/lowername.h) that does not decode is
 * removed: it is a hint the view can do without. */
static void check_lowername(struct fsck *f, int dfd, const char *name, const char *path)
{
	struct sfs_fsck_problem *p;
	char lp[SFS_LOWERNAME_PATH_MAX + 1];
	int ret = sfs_lowername_get(dfd, name, lp, sizeof(lp));

	if (ret < 0 && ret != -EUCLEAN) {
		sfs_fsck_msg(f, true, "%s: lower-name record: %s", path, strerror(-ret));
		return;
	}
	if (ret != -EUCLEAN)
		return;
	p = sfs_fsck_found(f, SFS_PR_LOWERNAME_CORRUPT, true, path, "%s",
			   "its checksum or its path does not hold");
	if (p)
		sfs_fsck_done(f, p, sfs_lowername_remove(dfd, name));
}

static void check_origin(struct fsck *f, int dfd, const char *name, const char *path,
			 bool metacopy)
{
	struct sfs_fsck_problem *p;
	struct sfs_origin o;
	char why[PATH_MAX + 64];
	int ret = sfs_origin_get(dfd, name, &o);

	check_lowername(f, dfd, name, path);
	if (ret == -EUCLEAN) {
		sfs_fsck_origin_damaged(f, dfd, name, path, true);
		return;
	}
	if (ret < 0) {
		sfs_fsck_msg(f, true, "%s: origin record: %s", path, strerror(-ret));
		return;
	}
	/* a metacopy's record tells its data from another file at the name:
	 * removing it would show that file; METACOPY_NO_DATA says it */
	if (ret == 0 || metacopy || sfs_fsck_origin_gone(f, &o, path, why, sizeof(why)) != 1)
		return;
	p = sfs_fsck_found(f, SFS_PR_ORIGIN_DANGLING, f->lowers_trusted, path, "%s", why);
	if (p)
		sfs_fsck_done(f, p, sfs_origin_remove(dfd, name));
}

/* A bad redirect (attr) of dfd/name removed. A directory is made opaque
 * first, by the mark of attr's namespace: where its lower layers were
 * cannot be read from the damaged record, so it shows its own entries
 * only (and nothing of a lower directory it was never moved from); the
 * branches below keep theirs. A crash between leaves it still bad. */
static int drop_redirect(int dfd, const char *name, const char *attr, bool dir)
{
	const char *opq = !strncmp(attr, "user.", 5) ? SFS_OVL_USER_OPAQUE_XATTR
						     : SFS_OVL_OPAQUE_XATTR;
	int ret = dir ? sfs_xattr_set(dfd, name, opq, "y", 1, 0) : 0;

	if (ret == 0)
		ret = remove_xattr(dfd, name, attr);
	if (ret == 0 && dir)
		ret = sfs_meta_fsync_dir(dfd);
	return ret;
}

/* The xattrs of a real entry: opaque markers, redirects, origin. */
static void check_xattrs(struct fsck *f, int dfd, const char *name, const char *path,
			 const struct stat *st, const struct lower_fds *lf)
{
	/* a metacopy's redirect names its data: a record of a file */
	bool mc = S_ISREG(st->st_mode) && sfs_fsck_metacopy(f, dfd, name, path, lf);
	static const char *const opq[] = { SFS_OVL_OPAQUE_XATTR, SFS_OVL_USER_OPAQUE_XATTR };
	const char *const rdr[] = {
		SFS_REDIRECT_XATTR, SFS_OVL_REDIRECT_XATTR, SFS_OVL_USER_REDIRECT_XATTR,
	};
	struct sfs_fsck_problem *p;
	char buf[4096];
	ssize_t n;

	for (size_t i = 0; i < 2; i++) {
		n = sfs_fsck_get_xattr(dfd, name, opq[i], buf, sizeof(buf));
		if (n == -ENODATA)
			continue;
		if (n == -ERANGE)
			buf[0] = 0;             /* a long value: not "y" */
		else if (n < 0) {
			sfs_fsck_msg(f, true, "%s: %s: %s", path, opq[i], strerror((int)-n));
			continue;
		}
		if (!S_ISDIR(st->st_mode))
			p = sfs_fsck_found(f, SFS_PR_OPQ_NOT_DIR, true, path, "%s", opq[i]);
		else if (!opaque_value_ok(buf))
			p = sfs_fsck_found(f, SFS_PR_OPQ_VALUE, true, path, "%s=\"%.40s\"", opq[i],
					   buf);
		else
			continue;
		if (p)
			sfs_fsck_done(f, p, remove_xattr(dfd, name, opq[i]));
	}
	for (size_t i = 0; i < 3; i++) {
		n = sfs_fsck_get_xattr(dfd, name, rdr[i], buf, sizeof(buf));
		if (n == -ENODATA)
			continue;
		if (n < 0 && n != -ERANGE) {
			sfs_fsck_msg(f, true, "%s: %s: %s", path, rdr[i], strerror((int)-n));
			continue;
		}
		if (mc && i == 1) /* overlay.redirect: where its data is (checked there) */
			continue;
		if (n != -ERANGE && S_ISDIR(st->st_mode) && sfs_redirect_ok(buf, (size_t)n))
			continue;
		p = sfs_fsck_found(f, SFS_PR_REDIRECT_BAD, true, path, "%s%s", rdr[i],
				   S_ISDIR(st->st_mode) ? "" : " on a non-directory");
		if (p)
			sfs_fsck_done(f, p, drop_redirect(dfd, name, rdr[i], S_ISDIR(st->st_mode)));
	}
	if (!S_ISDIR(st->st_mode))
		check_origin(f, dfd, name, path, mc);
}

/* Removes the whiteout `name` beside the entry `target` it names, the
 * view unchanged: a directory beside its whiteout is the layer's alone
 * (union/resolve.c, the OCI rule), so it is made opaque first. */
static int remove_beside(int dfd, const char *name, const char *target, bool dir)
{
	int fd, ret = 0;

	if (dir) {
		fd = sfs_do_open(dfd, target, O_PATH | O_DIRECTORY, 0);
		ret = fd < 0 ? fd : sfs_wh_set_opaque(fd, SFS_WH_AUFS);
		if (fd >= 0)
			close(fd);
	}
	if (ret == 0 && sfs_do_unlinkat(dfd, name, 0) < 0)
		ret = -errno;
	return ret;
}

/* A .wh.X that is not an empty regular file: true when that was said
 * (data in it, or under it, is kept: WH_BAD_TYPE) or its repair failed;
 * false to judge it on (an empty directory replaced by an empty file). */
static bool wh_type_bad(struct fsck *f, int dfd, const char *name, const char *path,
			const struct stat *st)
{
	struct sfs_fsck_problem *p;

	if (S_ISREG(st->st_mode) && !st->st_size)
		return false;
	if (!S_ISDIR(st->st_mode) || !is_empty_dir(dfd, name)) {
		sfs_fsck_found(f, SFS_PR_WH_BAD_TYPE, false, path, "%s",
			       S_ISDIR(st->st_mode) ? "a directory with entries" :
			       S_ISREG(st->st_mode) ? "a file with data" : "not a regular file");
		return true;
	}
	p = sfs_fsck_found(f, SFS_PR_WH_EMPTY_DIR, true, path, NULL);
	return !p || sfs_fsck_done(f, p, replace_with_empty_file(dfd, name, true)) != 0;
}

/* An aufs whiteout .wh.X (or a .wh..wh. name) in a directory; st NULL:
 * a .wh.X its listing says is a regular file, its inode not read
 * (fsck_facts.c) unless something is found; a .wh..wh. name is always
 * read. */
static void check_aufs_name(struct fsck *f, const struct dir *d, const char *name,
			    const char *path, const struct stat *st)
{
	const struct lower_fds *lf = d->lf;
	int dfd = d->fd;
	const char *target = name + SFS_WH_PREFIX_LEN;
	struct sfs_fsck_problem *p;
	struct stat tst, own;
	bool empty_dir;
	int has;

	if (!strcmp(name, SFS_WH_OPQ)) {
		if (S_ISREG(st->st_mode) && st->st_size == 0)
			return;
		empty_dir = S_ISDIR(st->st_mode) && is_empty_dir(dfd, name);
		if (S_ISREG(st->st_mode) || (S_ISDIR(st->st_mode) && !empty_dir)) {
			sfs_fsck_found(f, SFS_PR_OPQ_MARKER_DATA, false, path, "%s",
				       S_ISDIR(st->st_mode) ? "a directory with entries"
							    : "a file with data");
			return;
		}
		p = sfs_fsck_found(f, SFS_PR_OPQ_MARKER_TYPE, true, path, NULL);
		if (p)
			sfs_fsck_done(f, p, replace_with_empty_file(dfd, name,
								    S_ISDIR(st->st_mode)));
		return;
	}
	if (!strcmp(name, FSCK_TMP)) {
		p = sfs_fsck_found(f, SFS_PR_META_TMP, true, path, NULL);
		if (p)
			sfs_fsck_done(f, p, sfs_meta_remove_tree(dfd, name));
		return;
	}
	if (!strncmp(name, SFS_JNL_TMP_PREFIX, strlen(SFS_JNL_TMP_PREFIX))) {
		p = sfs_fsck_found(f, SFS_PR_COMMIT_TMP, true, path, NULL);
		if (p)
			sfs_fsck_done(f, p, sfs_meta_remove_tree(dfd, name));
		return;
	}
	if (!strncmp(name, SFS_JNL_STAGE_PREFIX, strlen(SFS_JNL_STAGE_PREFIX))) {
		sfs_fsck_found(f, SFS_PR_COMMIT_STAGED, false, path, NULL);
		return;
	}
	if (!target[0] || !strncmp(target, SFS_WH_PREFIX, SFS_WH_PREFIX_LEN)) {
		sfs_fsck_found(f, SFS_PR_WH_RESERVED, false, path, NULL);
		return;
	}
	if (st && wh_type_bad(f, dfd, name, path, st))
		return;
	/* a name the listing lacks is not there (the listing was read just
	 * now): no lookup for it, the case of nearly every whiteout */
	int ret = listed(d, target) ? sfs_do_stat(dfd, target, &tst) : -ENOENT;
	bool beside = ret == 0 || ret == -EXDEV;

	has = beside ? 1 : sfs_fsck_lower_has(lf, target);
	if (!beside && has != 0)
		return;
	/* either finding removes the name: one whose inode was not read is
	 * read now, so that one holding data is reported and kept, as when
	 * every whiteout was read */
	if (!st) {
		int r = sfs_do_statx_at(dfd, name, &own);

		if (r == -EXDEV)
			sfs_fsck_msg(f, false, "%s: a mount point: not crossed", path);
		else if (r < 0 && r != -ENOENT)
			sfs_fsck_msg(f, true, "%s: %s", path, strerror(-r));
		if (r < 0 || wh_type_bad(f, dfd, name, path, &own))
			return;
	}
	if (beside) {
		p = sfs_fsck_found(f, SFS_PR_WH_BESIDE, true, path, NULL);
		if (p)
			sfs_fsck_done(f, p, remove_beside(dfd, name, target, ret == 0 &&
							   S_ISDIR(tst.st_mode)));
		return;
	}
	p = sfs_fsck_found(f, SFS_PR_WH_NOTHING, f->lowers_trusted, path, NULL);
	if (p)
		sfs_fsck_done(f, p, sfs_do_unlinkat(dfd, name, 0) < 0 ? -errno : 0);
}

struct subdir {
	char *name;
	bool opaque;
	char *redirect;
};

/* A subdirectory of the branch: its marks, for the walk into it. */
static void note_subdir(struct fsck *f, int dfd, const char *name, const char *path,
			struct subdir *s)
{
	struct sfs_dirmark m;
	struct stat hs;
	int fd = sfs_meta_openat(dfd, name, O_PATH | O_DIRECTORY, 0);

	s->name = strdup(name);
	s->opaque = false;
	s->redirect = NULL;
	if (fd >= 0 && sfs_dirmark_read(fd, &m) == 0) {
		s->opaque = m.opaque;
		s->redirect = m.redirect;
	}
	if (fd >= 0)
		close(fd);
	if (!strcmp(name, SFS_METADIR_NAME) &&
	    (sfs_do_stat(dfd, ".stackfs/header", &hs) == 0 ||
	     sfs_do_stat(dfd, ".stackfs/work", &hs) == 0))
		sfs_fsck_found(f, SFS_PR_NESTED_META, false, path, NULL);
}

/* One entry of a directory of the branch, with what was read of it
 * (fa: one statx that refuses a mount point's root, the walk never
 * crossing one, and its xattr list); a subdirectory is added to subs
 * (walked once the directory is done). */
static void check_entry(struct fsck *f, const struct dir *d, const char *name,
			const char *path, const struct sfs_fsck_fact *fa, struct subdir *subs,
			size_t *nsubs)
{
	const struct lower_fds *lf = d->lf;
	const struct stat *st = &fa->st;
	int dfd = d->fd;
	struct sfs_fsck_problem *p;
	int ret = fa->ret;

	if (ret == SFS_FSCK_FACT_UNREAD) {
		check_aufs_name(f, d, name, path, NULL);
	} else if (ret == -EXDEV) {
		sfs_fsck_msg(f, false, "%s: a mount point: not crossed", path);
	} else if (ret < 0) {
		if (ret != -ENOENT)
			sfs_fsck_msg(f, true, "%s: %s", path, strerror(-ret));
	} else if (sfs_wh_reserved_name(name)) {
		check_aufs_name(f, d, name, path, st);
	} else if (sfs_wh_is_chr_whiteout(st) && (ret = sfs_wh_device_mark(dfd, name)) < 0) {
		/* the marker exists only on a real device: written again */
		p = ret == -EUCLEAN ? sfs_fsck_found(f, SFS_PR_DEVICE_BAD, true, path, NULL) : NULL;
		if (ret != -EUCLEAN)
			sfs_fsck_msg(f, true, "%s: device marker: %s", path, strerror(-ret));
		if (p)
			sfs_fsck_done(f, p, sfs_wh_mark_device(dfd, name));
	} else if (sfs_wh_is_dev_whiteout(dfd, name, st)) {
		if (sfs_fsck_lower_has(lf, name) != 0)
			return;
		p = sfs_fsck_found(f, SFS_PR_WH_NOTHING, f->lowers_trusted, path,
				   "overlay whiteout");
		if (p)
			sfs_fsck_done(f, p, sfs_do_unlinkat(dfd, name, 0) < 0 ? -errno : 0);
	} else {
		/* a 0:0 device marked as a device: its list was not read */
		if (fa->carry || (sfs_wh_is_chr_whiteout(st) && sfs_fsck_may_carry_marks(dfd, name)))
			check_xattrs(f, dfd, name, path, st, lf);
		if (S_ISDIR(st->st_mode))
			note_subdir(f, dfd, name, path, &subs[(*nsubs)++]);
	}
}

/* The entries at..at+n of d, their facts read, judged in order. False
 * when out of memory (said). */
static bool judge_chunk(struct fsck *f, const struct dir *d, const char *dpath, size_t at,
			const struct sfs_fsck_facts *j, struct subdir *subs, size_t *nsubs)
{
	for (size_t i = 0; i < j->n; i++) {
		const char *name = d->names[at + i] + 1;
		char *path;

		if (!strcmp(dpath, "/") && !strcmp(name, SFS_METADIR_NAME))
			continue;
		path = sfs_fsck_join(dpath, name);
		if (!path) {
			sfs_fsck_msg(f, true, "out of memory");
			return false;
		}
		f->entries++;
		if (f->o->progress)
			f->o->progress(f->o->arg, f->entries, path);
		check_entry(f, d, name, path, &j->out[i], subs, nsubs);
		free(path);
	}
	return true;
}

static void facts_of(struct fsck *f, const struct dir *d, size_t at, struct sfs_fsck_facts *j,
		     struct sfs_fsck_fact *out)
{
	j->dfd = d->fd;
	j->names = d->names + at;
	j->n = d->n - at < FSCK_FACTS_CHUNK ? d->n - at : FSCK_FACTS_CHUNK;
	j->thorough = f->o->thorough;
	j->out = out;
	sfs_fsck_facts_begin(f->reader, j);
}

/* The entries of d, a chunk at a time: the helper thread reads the
 * facts of each next chunk while this one is judged, and both read each
 * (fsck_facts.c). Judging keeps the listing's order. */
static void check_entries(struct fsck *f, const struct dir *d, const char *dpath,
			  struct subdir *subs, size_t *nsubs)
{
	struct sfs_fsck_facts j[2];
	bool ok = true;
	size_t k = 0;

	facts_of(f, d, 0, &j[0], f->facts);
	for (size_t at = 0; at < d->n || at == 0; at += FSCK_FACTS_CHUNK, k ^= 1) {
		sfs_fsck_facts_end(f->reader, &j[k]);
		if (at + FSCK_FACTS_CHUNK < d->n)
			facts_of(f, d, at + FSCK_FACTS_CHUNK, &j[k ^ 1],
				 f->facts + (k ^ 1) * FSCK_FACTS_CHUNK);
		ok = ok && judge_chunk(f, d, dpath, at, &j[k], subs, nsubs);
	}
}

/* A directory of the branch made ready to check: opened, listed, its
 * lower directories opened (and listed where that is cheaper than the
 * lookups); the helper thread prepares the next subdirectory while this
 * one is checked. */
struct prep {
	struct sfs_fsck_task task;   /* first */
	struct fsck *f;
	int pfd;                     /* its parent */
	const char *name;            /* in pfd ("." for the root) */
	char *path;                  /* in the branch */
	struct cands c;
	int fd;                      /* or -errno of its open */
	int list_ret;
	char **names;
	size_t n, nwh;
	struct lower_fds lf;
};

static void prep_run(struct sfs_fsck_task *t)
{
	struct prep *p = (struct prep *)t;

	p->names = NULL;
	p->n = p->nwh = 0;
	memset(&p->lf, 0, sizeof(p->lf));
	p->fd = p->path ? sfs_meta_openat(p->pfd, p->name, O_RDONLY | O_DIRECTORY, 0) : -ENOMEM;
	if (p->fd < 0)
		return;
	p->list_ret = sfs_fsck_list_dir_ext(p->fd, true, &p->names, &p->n, &p->nwh);
	if (p->list_ret)
		return;
	/* the names judged against the lower directories: .wh. names and
	 * devices (a 0:0 one is an overlay whiteout) */
	for (size_t i = 0; i < p->n; i++)
		p->nwh += !strncmp(p->names[i] + 1, SFS_WH_PREFIX, SFS_WH_PREFIX_LEN);
	sfs_fsck_lower_fds_open(p->f, &p->c, p->nwh, &p->lf);
}

static void prep_done(struct prep *p)
{
	sfs_fsck_lower_fds_close(&p->lf);
	sfs_fsck_free_names(p->names, p->n);
	if (p->fd >= 0)
		close(p->fd);
	sfs_fsck_cands_free(&p->c);
	free(p->path);
	p->path = NULL;
	p->fd = -1;
}

static void walk(struct fsck *f, struct prep *p, int depth);

/* Posts the preparing of subdirectory s of the directory at dpath (fd
 * pfd, its candidates c). */
static void prep_post(struct fsck *f, struct prep *p, int pfd, const char *dpath,
		      const struct cands *c, const struct subdir *s)
{
	p->f = f;
	p->pfd = pfd;
	p->name = s->name;
	p->path = s->name ? sfs_fsck_join(dpath, s->name) : NULL;
	sfs_fsck_child_cands(f, c, s->name ? s->name : "", s->opaque, s->redirect, &p->c);
	p->task.fn = prep_run;
	sfs_fsck_post(f->reader, &p->task);
}

/* The subdirectories of directory p, each walked in turn. */
static void walk_subs(struct fsck *f, const struct prep *p, struct subdir *subs, size_t nsubs,
		      int depth)
{
	struct prep sp[2];

	if (nsubs)
		prep_post(f, &sp[0], p->fd, p->path, &p->c, &subs[0]);
	for (size_t i = 0; i < nsubs; i++) {
		struct prep *cur = &sp[i & 1];

		sfs_fsck_wait(f->reader, &cur->task);
		if (i + 1 < nsubs)
			prep_post(f, &sp[(i + 1) & 1], p->fd, p->path, &p->c, &subs[i + 1]);
		if (cur->fd == -EXDEV)
			sfs_fsck_msg(f, false, "%s: a mount point: not crossed", cur->path);
		else if (cur->fd < 0 && cur->fd != -ENOENT)
			sfs_fsck_msg(f, true, "%s: %s", cur->path ? cur->path : p->path,
				     strerror(-cur->fd));
		else if (cur->fd >= 0)
			walk(f, cur, depth + 1);
		prep_done(cur);
	}
}

static void walk(struct fsck *f, struct prep *p, int depth)
{
	struct subdir *subs;
	size_t nsubs = 0;

	if (p->list_ret) {
		sfs_fsck_msg(f, true, "%s: cannot list: %s", p->path, strerror(-p->list_ret));
		return;
	}
	if (depth > MAX_DEPTH) {
		sfs_fsck_msg(f, true, "%s: deeper than %d directories: not checked", p->path,
			     MAX_DEPTH);
		return;
	}
	subs = calloc(p->n ? p->n : 1, sizeof(*subs));
	if (!subs) {
		sfs_fsck_msg(f, true, "out of memory");
		return;
	}
	check_entries(f, &(struct dir){ p->fd, p->names, p->n, &p->lf }, p->path, subs, &nsubs);
	/* the listing and lower fds are not needed below: the walk holds
	 * one set per level, not two */
	sfs_fsck_lower_fds_close(&p->lf);
	memset(&p->lf, 0, sizeof(p->lf));
	sfs_fsck_free_names(p->names, p->n);
	p->names = NULL;
	p->n = 0;
	walk_subs(f, p, subs, nsubs, depth);
	for (size_t i = 0; i < nsubs; i++) {
		free(subs[i].name);
		free(subs[i].redirect);
	}
	free(subs);
}

void sfs_fsck_check_tree(struct fsck *f)
{
	struct prep root = { .f = f, .pfd = f->root_fd, .name = ".", .path = strdup("/") };
	struct sfs_dirmark m;
	int fd = sfs_meta_openat(f->root_fd, ".", O_RDONLY | O_DIRECTORY, 0);

	if (fd < 0 || !root.path) {
		sfs_fsck_msg(f, true, "cannot open the branch: %s",
			     strerror(fd < 0 ? -fd : ENOMEM));
		goto out;
	}
	if (sfs_dirmark_read(fd, &m) == 0) {
		if (!m.opaque)
			sfs_fsck_cands_add(&root.c, strdup("/"));
		sfs_dirmark_free(&m);
	} else {
		root.c.unknown = true;
	}
	f->facts = malloc(2 * FSCK_FACTS_CHUNK * sizeof(*f->facts));
	if (!f->facts) {
		sfs_fsck_msg(f, true, "out of memory");
		goto out;
	}
	f->reader = sfs_fsck_reader_start();
	root.task.fn = prep_run;
	sfs_fsck_post(NULL, &root.task);
	sfs_fsck_wait(NULL, &root.task);
	if (root.fd >= 0)
		walk(f, &root, 0);
	else
		sfs_fsck_msg(f, true, "cannot open the branch: %s", strerror(-root.fd));
	prep_done(&root);
	sfs_fsck_reader_stop(f->reader);
	f->reader = NULL;
	free(f->facts);
	f->facts = NULL;
out:
	if (fd >= 0)
		close(fd);
	sfs_fsck_cands_free(&root.c);
	free(root.path);
}
