/* The branches of a live stackfs mount, highest first, as diff, commit,
 * fsck and branch need them to work on the branch directories: from the
 * daemon itself over its control channel, else from its command line
 * (BRANCHES, or overlay-style -o upperdir=,lowerdir=,workdir=), each
 * with the workdir that holds its metadata when it has one. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/escape.h"
#include "union/branch_spec.h"
#include "common/runtime.h"

void sfs_mbranches_free(struct mbranch *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].path);
		free(v[i].workdir);
	}
	free(v);
}

static int mb_push(struct mbranch **v, size_t *n, const char *path, size_t len, bool rw)
{
	struct mbranch *nv = realloc(*v, (*n + 1) * sizeof(**v));

	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[*n].path = strndup(path, len);
	nv[*n].rw = rw;
	nv[*n].workdir = NULL;
	if (!nv[*n].path)
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* The branches from the control channel's "list", read with the row
 * parser status and branch use: a path comes escaped (\ooo) and is
 * unescaped here (parsed a second time by hand, a branch path with a
 * backslash was taken as written, and not found). */
static int branches_from_ctl(const char *mp, struct mbranch **v, size_t *n)
{
	const char *words[] = { "list", NULL };
	char err[256], *body = NULL, *save = NULL;
	struct sfs_branch_row r;
	int ret = sfs_ctl_call(mp, words, &body, err, sizeof(err));

	if (ret < 0)
		return ret;
	for (char *l = strtok_r(body, "\n", &save); ret == 0 && l; l = strtok_r(NULL, "\n", &save)) {
		ret = sfs_branch_row(l, &r);
		if (ret < 0)
			break;
		sfs_unescape(r.path);
		if (!strcmp(r.mode, "data")) /* holds no names of the view */
			continue;
		ret = mb_push(v, n, r.path, strlen(r.path), !strcmp(r.mode, "rw"));
		if (ret == 0 && r.workdir) {
			sfs_unescape(r.workdir);
			if (!((*v)[*n - 1].workdir = strdup(r.workdir)))
				ret = -ENOMEM;
		}
	}
	free(body);
	if (ret == 0 && *n == 0)
		ret = -EPROTO;
	if (ret < 0) {
		sfs_mbranches_free(*v, *n);
		*v = NULL;
		*n = 0;
	}
	return ret;
}

/* "a\:b" → "a:b": the escapes of overlay-style lowerdir=, in place. */
static size_t unescape_next(const char **pp, char sep, char *dst)
{
	const char *p = *pp;
	size_t len = 0;

	for (; *p && *p != sep; p++) {
		if (*p == '\\' && p[1])
			p++;
		dst[len++] = *p;
	}
	*pp = p;
	return len;
}

/* What gives the branches in the daemon's -o options: upperdir=,
 * lowerdir=, branches=FILE (malloc'd). */
struct opt_branches {
	char *upper, *lower, *file;
};

static void keep_value(char **slot, const char *v)
{
	free(*slot);
	*slot = strdup(v);
}

/* Branches from one -o argument (FUSE options: ',' separates, "\," is
 * a comma). */
static int ovl_opts(const char *opts, struct opt_branches *ob)
{
	char *copy = strdup(opts), *o = copy, *w = copy;

	if (!copy)
		return -ENOMEM;
	/* split on unescaped commas, keeping other escapes for the value */
	for (const char *p = opts;; p++) {
		if (*p == '\\' && p[1] == ',') {
			*w++ = ',';
			p++;
			continue;
		}
		if (*p == ',' || !*p) {
			*w = '\0';
			if (!strncmp(o, "upperdir=", 9))
				keep_value(&ob->upper, o + 9);
			else if (!strncmp(o, "lowerdir=", 9))
				keep_value(&ob->lower, o + 9);
			else if (!strncmp(o, "branches=", 9))
				keep_value(&ob->file, o + 9);
			if (!*p)
				break;
			o = w = w + 1;
			continue;
		}
		*w++ = *p;
	}
	free(copy);
	return 0;
}

static int push_resolved(struct mbranch **v, size_t *n, const char *cwd, const char *path,
			 bool rw)
{
	char *abs = NULL;
	int ret;

	if (path[0] != '/' && asprintf(&abs, "%s/%s", cwd, path) < 0)
		return -ENOMEM;
	ret = mb_push(v, n, abs ? abs : path, strlen(abs ? abs : path), rw);
	free(abs);
	return ret;
}

/* The NUL-separated command line of process pid (malloc'd, ending in a
 * NUL) and its length. */
static int read_cmdline(pid_t pid, char **out, size_t *len, char *err, size_t errlen)
{
	char p[64], *args = NULL;
	size_t n = 0, cap = 0;
	ssize_t k;
	int fd, ret = 0;

	snprintf(p, sizeof(p), "/proc/%d/cmdline", (int)pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", p, strerror(errno));
		return -errno;
	}
	for (;;) {
		if (n + 4096 > cap) {
			char *na = realloc(args, cap + 65536);

			if (!na) {
				ret = -ENOMEM;
				break;
			}
			args = na;
			cap += 65536;
		}
		k = read(fd, args + n, cap - n - 1);
		if (k <= 0) {
			ret = k < 0 ? -errno : 0;
			break;
		}
		n += (size_t)k;
	}
	close(fd);
	if (ret < 0 || !args) {
		free(args);
		snprintf(err, errlen, "%s: %s", p, strerror(ret ? -ret : EIO));
		return ret ? ret : -EIO;
	}
	args[n] = '\0';
	*out = args;
	*len = n;
	return 0;
}

/* In a daemon's command line (args, len bytes): argv[0], then options
 * ("-o OPTS", "-oOPTS", flags), "--", operands. The options that give
 * the branches and the first operand, BRANCHES. */
static int scan_cmdline(const char *args, size_t len, const char **pos,
			struct opt_branches *ob)
{
	bool opts_only = false;
	int ret = 0;

	for (size_t i = strlen(args) + 1; ret == 0 && i < len; i += strlen(args + i) + 1) {
		const char *a = args + i;

		if (!opts_only && !strcmp(a, "--")) {
			opts_only = true;
		} else if (!opts_only && !strcmp(a, "-o")) {
			i += strlen(a) + 1;
			if (i < len)
				ret = ovl_opts(args + i, ob);
		} else if (!opts_only && !strncmp(a, "-o", 2)) {
			ret = ovl_opts(a + 2, ob);
		} else if ((opts_only || a[0] != '-') && !*pos) {
			*pos = a;
		}
	}
	return ret;
}

/* Overlay style: upperdir the rw branch, lowerdir the ro ones. */
static int ovl_branches(const char *cwd, const char *upper, const char *lower,
			struct mbranch **v, size_t *nv)
{
	char *buf = malloc((upper ? strlen(upper) : 0) + (lower ? strlen(lower) : 0) + 2);
	const char *q;
	int ret = buf ? 0 : -ENOMEM;

	if (ret == 0 && upper) {
		q = upper;
		buf[unescape_next(&q, '\0', buf)] = '\0';
		ret = push_resolved(v, nv, cwd, buf, true);
	}
	for (q = lower; ret == 0 && q && *q; q += *q == ':') {
		size_t l = unescape_next(&q, ':', buf);

		buf[l] = '\0';
		if (l)
			ret = push_resolved(v, nv, cwd, buf, false);
	}
	free(buf);
	return ret;
}

/* BRANCHES as the daemon parses it; a syntax error said in err. */
static int spec_branches(pid_t pid, const char *cwd, const char *pos, struct mbranch **v,
			 size_t *nv, char *err, size_t errlen)
{
	struct sfs_branch_spec *specs = NULL;
	size_t ns = 0;
	char perr[256];
	int ret = sfs_branch_spec_parse(pos, &specs, &ns, perr, sizeof(perr));

	if (ret < 0)
		snprintf(err, errlen, "command line of stackfsd pid %d: %s", (int)pid, perr);
	for (size_t i = 0; ret == 0 && i < ns; i++)
		if (specs[i].mode != SFS_BRANCH_DATA) /* holds no names of the view */
			ret = push_resolved(v, nv, cwd, specs[i].path, specs[i].mode == SFS_BRANCH_RW);
	sfs_branch_spec_free(specs, ns);
	return ret;
}

/* branches=FILE: the file as it is now (it may have changed since the
 * mount: the daemon's own list, asked first, is the one to trust). */
static int file_branches(pid_t pid, const char *cwd, const char *file, struct mbranch **v,
			 size_t *nv, char *err, size_t errlen)
{
	char *abs = NULL, *spec = NULL;
	int ret = 0;

	if (file[0] != '/' && asprintf(&abs, "%s/%s", cwd, file) < 0)
		return -ENOMEM;
	ret = sfs_branch_file_spec(abs ? abs : file, &spec, err, errlen);
	if (ret == 0)
		ret = spec_branches(pid, cwd, spec, v, nv, err, errlen);
	free(spec);
	free(abs);
	return ret;
}

int sfs_mbranches_of_daemon(pid_t pid, struct mbranch **out, size_t *n,
			     char *err, size_t errlen)
{
	char p[64], cwd[PATH_MAX], *args = NULL;
	struct opt_branches ob = { NULL, NULL, NULL };
	const char *pos = NULL;
	struct mbranch *v = NULL;
	size_t len = 0, nv = 0;
	ssize_t k;
	int ret;

	*out = NULL;
	*n = 0;
	snprintf(p, sizeof(p), "/proc/%d/cwd", (int)pid);
	k = readlink(p, cwd, sizeof(cwd) - 1);
	cwd[k > 0 ? k : 0] = '\0';
	ret = read_cmdline(pid, &args, &len, err, errlen);
	if (ret < 0)
		return ret;
	ret = scan_cmdline(args, len, &pos, &ob);
	if (ret == 0 && ob.file) {
		ret = file_branches(pid, cwd, ob.file, &v, &nv, err, errlen);
		goto out;
	}
	if (ret == 0 && !ob.upper && !ob.lower && pos) {
		ret = spec_branches(pid, cwd, pos, &v, &nv, err, errlen);
		goto out;
	}
	if (ret == 0)
		ret = ob.upper || ob.lower ? ovl_branches(cwd, ob.upper, ob.lower, &v, &nv) : -ENOENT;
	if (ret < 0)
		snprintf(err, errlen, "no branches in the command line of stackfsd pid %d%s%s",
			 (int)pid, ret == -ENOENT ? "" : ": ", ret == -ENOENT ? "" : strerror(-ret));
out:
	free(args);
	free(ob.upper);
	free(ob.lower);
	free(ob.file);
	if (ret < 0) {
		sfs_mbranches_free(v, nv);
		return ret;
	}
	*out = v;
	*n = nv;
	return 0;
}

/* The branches of the stackfs mount on mp, highest first: the daemon's
 * own list through its control channel, else its command line. */
int sfs_mbranches_of_mount(const char *mp, unsigned ma, unsigned mi, struct mbranch **v,
			    size_t *n, char *err, size_t errlen)
{
	pid_t pid;
	int ret = branches_from_ctl(mp, v, n);

	if (ret == 0)
		return 0;
	if (ret == -ENOTCONN && sfs_cli_gone_msg(mp, ma, mi, err, errlen))
		return ret;
	ret = sfs_runtime_pid(ma, mi, &pid);
	if (ret < 0) {
		snprintf(err, errlen, "%s: cannot find the daemon of the mount (%s/%u:%u/pid): %s",
			 mp, sfs_runtime_base_of(ma, mi), ma, mi, strerror(-ret));
		return ret;
	}
	return sfs_mbranches_of_daemon(pid, v, n, err, errlen);
}

/* ------------------------------------------------------------ command */

