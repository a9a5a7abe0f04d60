/* fsck of a branch (see fsck.h): the metadata directory record by
 * record (fsck_meta.c, fsck_records.c), an unfinished commit
 * (fsck_commit.c), the lower branches to judge against (fsck_lowers.c),
 * then the tree (fsck_tree.c). Nothing is changed without repair; with
 * it, only what the problem table (problem.c) calls fixable. Here: the
 * order of the checks, the reporting, and helpers they share. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bio.h"
#include "whiteout/fsck_int.h"
#include "whiteout/ondisk.h"
#include "xattr/xattr.h"

/* ------------------------------------------------------------ reporting */

void sfs_fsck_msg(struct fsck *f, bool error, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (error)
		f->r->op_error = true;
	if (f->o->message)
		f->o->message(f->o->arg, error, buf);
}

static void emit(struct fsck *f, struct sfs_fsck_problem *p)
{
	f->r->found++;
	if (p->fixed)
		f->r->fixed++;
	else
		f->r->left++;
	if (f->o->report)
		f->o->report(f->o->arg, p);
	free(p->path);
	free(p->detail);
	free(p);
}

struct sfs_fsck_problem *sfs_fsck_found(struct fsck *f, enum sfs_problem_code code,
					bool can_fix, const char *path, const char *fmt, ...)
{
	struct sfs_fsck_problem *p = calloc(1, sizeof(*p));
	va_list ap;

	if (!p) {
		sfs_fsck_msg(f, true, "out of memory");
		return NULL;
	}
	p->code = code;
	p->path = strdup(path);
	if (fmt) {
		va_start(ap, fmt);
		if (vasprintf(&p->detail, fmt, ap) < 0)
			p->detail = NULL;
		va_end(ap);
	}
	if (f->o->repair && can_fix && sfs_problem_desc(code)->fixable)
		return p;
	emit(f, p);
	return NULL;
}

/* Reports the outcome of a fix (0 or -errno) and returns it. */
int sfs_fsck_done(struct fsck *f, struct sfs_fsck_problem *p, int ret)
{
	p->fix_tried = true;
	p->fixed = ret == 0;
	p->fix_err = ret;
	emit(f, p);
	return ret;
}

/* ------------------------------------------------------------ helpers */

char *sfs_fsck_join(const char *dir, const char *name)
{
	char *s;

	if (asprintf(&s, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", name) < 0)
		return NULL;
	return s;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_typed(const void *a, const void *b)
{
	return strcmp(*(char *const *)a + 1, *(char *const *)b + 1);
}

void sfs_fsck_free_names(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

/* One entry of a listing: its name, or (typed) its d_type byte and its
 * name. */
static char *entry_of(const struct dirent *e, bool typed)
{
	size_t len = strlen(e->d_name) + 1;
	char *s = malloc(len + typed);

	if (s && typed)
		s[0] = (char)e->d_type;
	if (s)
		memcpy(s + typed, e->d_name, len);
	return s;
}

/* Whether getdents leaves a 0:0 character device possible: a device, or
 * a type it does not say. */
static bool may_be_chr(const struct dirent *e)
{
	return e->d_type == DT_CHR || e->d_type == DT_UNKNOWN;
}

int sfs_fsck_list_dir_ext(int fd, bool typed, char ***out, size_t *nout, size_t *nchr)
{
	DIR *d = sfs_do_opendir(fd, ".");
	char **v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	int ret = 0;

	if (!d)
		return -errno;
	if (nchr)
		*nchr = 0;
	errno = 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (n == cap) {
			char **nv = realloc(v, (cap = cap ? cap * 2 : 32) * sizeof(*v));

			if (!nv) {
				ret = -ENOMEM;
				goto out;
			}
			v = nv;
		}
		if (!(v[n] = entry_of(e, typed))) {
			ret = -ENOMEM;
			goto out;
		}
		n++;
		if (nchr && may_be_chr(e))
			(*nchr)++;
		errno = 0;
	}
	if (errno)
		ret = -errno;
out:
	closedir(d);
	if (ret) {
		sfs_fsck_free_names(v, n);
		return ret;
	}
	if (n)
		qsort(v, n, sizeof(*v), typed ? cmp_typed : cmp_str);
	*out = v;
	*nout = n;
	return 0;
}

/* The names in a directory (any fd of it), sorted, without . and .. */
int sfs_fsck_list_dir(int fd, char ***out, size_t *nout)
{
	return sfs_fsck_list_dir_ext(fd, false, out, nout, NULL);
}

static int cmp_typed_key(const void *key, const void *elt)
{
	return strcmp(key, *(char *const *)elt + 1);
}

const char *sfs_fsck_typed_find(char *const *v, size_t n, const char *name)
{
	char *const *e = n ? bsearch(name, v, n, sizeof(*v), cmp_typed_key) : NULL;

	return e ? *e : NULL;
}

/* An xattr value of dfd/name (not followed), NUL-terminated: its length,
 * -ENODATA, or -errno. By the xattr library, which reaches the name
 * without crossing a mount point. */
ssize_t sfs_fsck_get_xattr(int dfd, const char *name, const char *attr, char *buf,
			   size_t len)
{
	ssize_t n = sfs_xattr_get(dfd, name, attr, buf, len - 1);

	if (n < 0)
		return n == -ENOTSUP ? -ENODATA : n;
	buf[n] = 0;
	return n;
}

/* ------------------------------------------------------------ entry */

int sfs_fsck_run(const struct sfs_fsck_opts *o, struct sfs_fsck_result *r)
{
	struct fsck f = { .o = o, .r = r, .root_fd = o->root_fd, .meta_at = o->meta_at_fd,
			  .meta_fd = -1 };
	bool meta_gone = false;
	int status;

	memset(r, 0, sizeof(*r));
	if (o->workdir_record != SFS_FSCK_WDREC_OK) {
		sfs_fsck_check_workdir_record(&f);
		if (o->workdir_record == SFS_FSCK_WDREC_LOST)
			goto out;
	}
	/* explicit lower branches that cannot be opened: check nothing, as
	 * a whiteout would look as if it hid nothing */
	if (o->lowers && sfs_fsck_open_given_lowers(&f))
		goto out;
	if (sfs_fsck_open_meta(&f) == 0) {
		sfs_fsck_check_commit(&f);
		/* the commit's own .stackfs may have gone with its marker */
		meta_gone = sfs_do_stat(f.meta_at, SFS_METADIR_NAME, &(struct stat){ 0 }) < 0;
		if (!meta_gone)
			sfs_fsck_check_header(&f);
		if (!meta_gone && !f.stop && !f.v0 && !f.marker_only) {
			sfs_fsck_check_registry(&f);
			sfs_fsck_check_inomap(&f);
			sfs_fsck_check_lowers_file(&f);
			sfs_fsck_check_xnames_file(&f);
		}
	}
	/* the index is judged against the lower branches too */
	if (!f.stop)
		sfs_fsck_find_lowers(&f);
	if (f.meta_fd >= 0 && !meta_gone && !f.stop && !f.marker_only) {
		if (!f.v0)
			sfs_fsck_check_index(&f);
		sfs_fsck_check_work(&f);
		sfs_fsck_check_meta_entries(&f);
	}
	if (!f.stop && f.pending) {
		/* a whiteout would seem to hide nothing where the commit moved
		 * or deleted the lower entry: its removal would lose it */
		sfs_fsck_msg(&f, false, "the tree is not checked while a commit is unfinished");
	} else if (!f.stop) {
		sfs_fsck_check_tree(&f);
	}
out:
	r->lowers_known = f.lowers_known;
	r->lowers = calloc(f.nlow ? f.nlow : 1, sizeof(char *));
	for (size_t i = 0; i < f.nlow; i++) {
		if (r->lowers)
			r->lowers[r->nlowers++] = f.low[i].path;
		else
			free(f.low[i].path);
		close(f.low[i].fd);
	}
	free(f.low);
	free(f.noted);
	if (f.meta_fd >= 0)
		close(f.meta_fd);
	status = (r->fixed ? SFS_FSCK_FIXED : 0) | (r->left ? SFS_FSCK_LEFT : 0) |
		 (r->op_error ? SFS_FSCK_OPERR : 0);
	return status;
}

void sfs_fsck_result_free(struct sfs_fsck_result *r)
{
	sfs_fsck_free_names(r->lowers, r->nlowers);
	memset(r, 0, sizeof(*r));
}
