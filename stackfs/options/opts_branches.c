/* The ways of giving the branches other than the BRANCHES operand:
 * overlay-style options (lowerdir=, lowerdir+=, upperdir=, workdir=) and
 * a branches file (branches=FILE). Each becomes a BRANCHES spec in
 * o->branches, the one form the rest of the daemon reads; only one way
 * may be used (opts.c takes the options to here). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/escape.h"
#include "common/optlist.h"
#include "stackfs/stackfs.h"

/* ---- overlay-style options: -o lowerdir=A:B,upperdir=U,workdir=W ----
 * Another way to give the branches, as kernel overlayfs and fuse-overlayfs
 * take them, so that stackfs can stand in where fuse-overlayfs is the
 * mount program. They become the BRANCHES spec "U=rw:A=ro:B=ro" (all ro
 * without upperdir), escaped for branch_spec.c. lowerdir separates its
 * directories with ':' and takes '\X' for a literal X (so "\:" is a ':'
 * in a path), as overlayfs does. workdir, as overlayfs requires, must be
 * a directory on U's filesystem: U's metadata dir goes there (W/.stackfs,
 * branch.c and whiteout/metaloc.c), so that U stays a clean overlayfs
 * upper. The operands are then [SOURCE] MOUNTPOINT: SOURCE is a label
 * such as "overlay" (mount.fuse3 passes one) and is ignored; one that
 * may be meant as BRANCHES (a '/', ':' or '=' in it, or the name of a
 * directory) is refused. */
static struct {
	char *lowerdir, *upperdir, *workdir;
	int plus;                 /* lowerdir is made of lowerdir+= */
} ovl;

static void ovl_free(void)
{
	free(ovl.lowerdir);
	free(ovl.upperdir);
	free(ovl.workdir);
	ovl.lowerdir = ovl.upperdir = ovl.workdir = NULL;
	ovl.plus = 0;
}

/* "name=value": given twice, the values must agree (see the top). */
static int ovl_set(char **slot, const char *arg)
{
	const char *v = strchr(arg, '=') + 1;

	if (*slot)
		return strcmp(*slot, v) ? sfs_opt_conflict(arg) : 0;
	*slot = strdup(v);
	return *slot ? 0 : -1;
}

/* lowerdir+=DIR (Linux 6.8): one more lower directory, below those
 * before, its path taken as it is: appended to lowerdir's list with its
 * ':' and '\' escaped. Not with lowerdir=, as the kernel says. */
static int ovl_plus(const char *arg)
{
	const char *v = arg + strlen("lowerdir+=");
	size_t old = ovl.lowerdir ? strlen(ovl.lowerdir) : 0;
	char *nl, *o;

	if (ovl.lowerdir && !ovl.plus) {
		sfs_errmsg("bad option '%s': lowerdir= and lowerdir+= both given", arg);
		return -1;
	}
	if (!*v) {
		sfs_errmsg("bad option '%s': no directory given", arg);
		return -1;
	}
	nl = realloc(ovl.lowerdir, old + 2 * strlen(v) + 2);
	if (!nl)
		return -1;
	ovl.lowerdir = nl;
	o = nl + old;
	if (old)
		*o++ = ':';
	for (; *v; v++) {
		if (*v == ':' || *v == '\\')
			*o++ = '\\';
		*o++ = *v;
	}
	*o = '\0';
	ovl.plus = 1;
	return 0;
}

/* Writes the path at *pp (up to an unescaped ':' when lower) to f escaped
 * as a BRANCHES element; leaves *pp on the separator. Length of the path,
 * or -1 on a trailing backslash. */
static long ovl_put_path(FILE *f, const char **pp, int lower)
{
	const char *p = *pp;
	long n = 0;

	for (; *p && !(lower && *p == ':'); p++, n++) {
		if (*p == '\\' && !*++p)
			return -1;
		if (*p == ':' || *p == '=' || *p == '\\')
			fputc('\\', f);
		fputc(*p, f);
	}
	*pp = p;
	return n;
}

/* Builds the BRANCHES spec from upperdir and lowerdir into *out. */
static int ovl_spec(char **out)
{
	const char *p = ovl.upperdir;
	size_t size;
	unsigned idx = 1;
	bool data = false;
	FILE *f = open_memstream(out, &size);
	int ret = -1;

	if (!f)
		return -1;
	if (p) {
		if (ovl_put_path(f, &p, 0) < 0) {
			sfs_errmsg("bad option 'upperdir=%s': trailing backslash", ovl.upperdir);
			goto out;
		}
		fputs("=rw:", f);
	}
	/* "a:b::c::d": the layers after the first "::" are data-only */
	for (p = ovl.lowerdir;; p++, idx++) {
		long n = ovl_put_path(f, &p, 1);

		if (n <= 0) {
			sfs_errmsg("bad option 'lowerdir=%s': %s (directory %u)",
				ovl.lowerdir, n < 0 ? "trailing backslash" : "empty path", idx);
			goto out;
		}
		fputs(data ? "=data" : "=ro", f);
		if (!*p)
			break;
		if (p[1] == ':') { /* "::" */
			data = true;
			p++;
		}
		fputc(':', f);
	}
	ret = 0;
out:
	if (fclose(f) != 0)
		ret = -1;
	if (ret < 0) {
		free(*out);
		*out = NULL;
	}
	return ret;
}

/* Removes overlayfs's '\X' escapes in place. */
static void ovl_unescape(char *s)
{
	char *d = s;

	for (; *s; s++)
		*d++ = *s == '\\' && s[1] ? *++s : *s;
	*d = '\0';
}

/* workdir: a directory on the filesystem of upperdir (whose own errors
 * the branch checks report). Unescapes both. */
static int ovl_check_workdir(void)
{
	struct stat ws, us;
	int err;

	ovl_unescape(ovl.workdir);
	ovl_unescape(ovl.upperdir);
	err = stat(ovl.workdir, &ws) < 0 ? errno : S_ISDIR(ws.st_mode) ? 0 : ENOTDIR;
	if (err) {
		sfs_errmsg("bad option 'workdir=%s': %s", ovl.workdir, strerror(err));
		return -1;
	}
	if (stat(ovl.upperdir, &us) == 0 && us.st_dev != ws.st_dev) {
		sfs_errmsg("bad option 'workdir=%s': not on the filesystem of upperdir %s",
			   ovl.workdir, ovl.upperdir);
		return -1;
	}
	return 0;
}

/* After parsing: turns the overlay-style options into o->branches and
 * sorts out the operands. Frees what it kept. */
static int ovl_finish(struct sfs_opts *o)
{
	int ret = -1;

	if (!ovl.lowerdir && !ovl.upperdir && !ovl.workdir)
		return 0;
	if (o->show_help || o->show_version) {
		ret = 0;
		goto out;
	}
	if (!ovl.lowerdir) {
		sfs_errmsg("bad option '%s=': needs lowerdir=", ovl.upperdir ? "upperdir" : "workdir");
		goto out;
	}
	if (!ovl.lowerdir[0] || (ovl.upperdir && !ovl.upperdir[0]) ||
	    (ovl.workdir && !ovl.workdir[0])) {
		sfs_errmsg("bad option '%s=': no directory given",
			!ovl.lowerdir[0] ? "lowerdir" : ovl.upperdir && !ovl.upperdir[0] ?
			"upperdir" : "workdir");
		goto out;
	}
	if (o->branches && !o->mountpoint) {
		/* one operand: the mount point */
		o->mountpoint = o->branches;
		o->branches = NULL;
	} else if (o->branches) {
		struct stat st;

		if (strpbrk(o->branches, "/:=") ||
		    (stat(o->branches, &st) == 0 && S_ISDIR(st.st_mode))) {
			sfs_errmsg("both BRANCHES (\"%s\") and lowerdir= given: give the branches one way",
				   o->branches);
			goto out;
		}
		free(o->branches); /* a SOURCE label */
		o->branches = NULL;
	}
	/* the spec first: the check unescapes upperdir */
	if (ovl_spec(&o->branches) == 0 &&
	    !(ovl.upperdir && ovl.workdir && ovl_check_workdir() < 0))
		ret = 0;
	/* without upperdir there is no rw branch to keep metadata for */
	if (ret == 0 && ovl.upperdir && ovl.workdir) {
		o->workdir = ovl.workdir;
		ovl.workdir = NULL;
	}
out:
	ovl_free();
	return ret;
}

/* ---- branches=FILE: the branches from a file (union/branch_file.c) ----
 * The operand is then the mount point alone. One way of giving the
 * branches: not with BRANCHES, nor with lowerdir=. */
static char *branches_file;

static int branches_file_finish(struct sfs_opts *o)
{
	char err[SFS_MSG_MAX];
	int ret = -1;

	if (!branches_file || o->show_help || o->show_version) {
		ret = 0;
		goto out;
	}
	if (!branches_file[0]) {
		sfs_errmsg("bad option 'branches=': no file given");
		goto out;
	}
	if (ovl.lowerdir || ovl.upperdir) {
		sfs_errmsg("both branches= and %s= given: give the branches one way",
			   ovl.lowerdir ? "lowerdir" : "upperdir");
		goto out;
	}
	if (o->branches && o->mountpoint) {
		sfs_errmsg("both BRANCHES (\"%s\") and branches= given: give the branches one way",
			   o->branches);
		goto out;
	}
	o->mountpoint = o->branches; /* the one operand */
	o->branches = NULL;
	if (sfs_branch_file_spec(branches_file, &o->branches, err, sizeof(err)) < 0) {
		sfs_errmsg("%s", err);
		goto out;
	}
	ret = 0;
out:
	free(branches_file);
	branches_file = NULL;
	return ret;
}

int sfs_optb_take(const char *arg, int key)
{
	switch (key) {
	case SFS_OPTK_LOWERDIR:
		if (ovl.plus) {
			sfs_errmsg("bad option '%s': lowerdir= and lowerdir+= both given", arg);
			return -1;
		}
		return ovl_set(&ovl.lowerdir, arg);
	case SFS_OPTK_LOWERDIR_PLUS:
		return ovl_plus(arg);
	case SFS_OPTK_UPPERDIR:
		return ovl_set(&ovl.upperdir, arg);
	case SFS_OPTK_WORKDIR:
		return ovl_set(&ovl.workdir, arg);
	default:
		return ovl_set(&branches_file, arg);
	}
}

void sfs_optb_reset(void)
{
	ovl_free();
	free(branches_file);
	branches_file = NULL;
}

int sfs_optb_finish(struct sfs_opts *o)
{
	if (branches_file_finish(o) < 0) {
		ovl_free();
		return -1;
	}
	return ovl_finish(o);
}
