/* What the kernel's mount of the view gets besides the user's options
 * (NOTES.md "allow_other, suid and dev when root mounts").
 *
 * When root mounts, the view is a system's filesystem as overlayfs's is:
 * allow_other (every user of a container, not only root, must reach it;
 * the kernel still checks permissions, default_permissions being always
 * on), and suid and dev (setuid programs such as su, sudo and ping, and
 * device nodes in a container's /dev). libfuse would make it nosuid and
 * nodev. Each is the caller's to refuse (nosuid, nodev, allow_root).
 * The view never grants by default what a branch's own mount denies: a
 * setuid file on a filesystem mounted nosuid (a user's stick) must not
 * become one that runs as root through the union; such a branch makes
 * the view nosuid (nodev) and a note says why. An explicit suid or dev
 * is root's to give. A user's mount goes through fusermount3, which
 * makes it nosuid and nodev whatever is asked: nothing is added then. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/escape.h"
#include "stackfs/stackfs.h"
#include "union/branch_spec.h"

/* What the user asked: -1 nothing, 0 the no- form, 1 the flag. */
static struct {
	int allow_other, allow_root, suid, dev;
} asked = { -1, -1, -1, -1 };

/* What was added without being asked (the check after the branches are
 * open must find them still allowed). */
static bool gave_suid, gave_dev;

static int set(int *slot, int v, const char *arg)
{
	if (*slot >= 0 && *slot != v) {
		sfs_errmsg("bad option '%s': its opposite was given too", arg);
		return -1;
	}
	*slot = v;
	return 0;
}

int sfs_mountflags_seen(const char *arg)
{
	int ret = !strcmp(arg, "allow_other") ? set(&asked.allow_other, 1, arg) :
		  !strcmp(arg, "allow_root") ? set(&asked.allow_root, 1, arg) :
		  !strcmp(arg, "suid") ? set(&asked.suid, 1, arg) :
		  !strcmp(arg, "nosuid") ? set(&asked.suid, 0, arg) :
		  !strcmp(arg, "dev") ? set(&asked.dev, 1, arg) :
		  set(&asked.dev, 0, arg);

	return ret < 0 ? -1 : 1; /* libfuse's to apply */
}

/* The first branch of spec whose mount has flag (ST_NOSUID, ST_NODEV),
 * or NULL. By path: the branches are opened later, and checked again
 * then (sfs_mountflags_check). */
static const char *branch_with(const struct sfs_branch_spec *v, size_t n, unsigned long flag)
{
	struct statvfs sv;

	for (size_t i = 0; i < n; i++)
		if (statvfs(v[i].path, &sv) == 0 && (sv.f_flag & flag))
			return v[i].path;
	return NULL;
}

/* suid or dev (flag ST_NOSUID or ST_NODEV) given by default when no
 * branch's mount denies it. */
static bool grant(const struct sfs_branch_spec *v, size_t n, unsigned long flag,
		  const char *what)
{
	const char *b = branch_with(v, n, flag);

	if (b)
		sfs_compat_note("the view is no%s: branch %s is on a no%s mount", what, b, what);
	return !b;
}

int sfs_mountflags_add(struct fuse_args *args, const char *branches)
{
	struct sfs_branch_spec *v = NULL;
	/* "-o" and ",allow_other,suid,dev": the first comma becomes the 'o' */
	char opts[64] = "-", err[SFS_MSG_MAX];
	size_t n = 0;

	if (geteuid() != 0)
		return 0;
	/* a bad spec is the branch checks' to report */
	if (branches && sfs_branch_spec_parse(branches, &v, &n, err, sizeof(err)) < 0)
		n = 0;
	if (asked.allow_other < 0 && asked.allow_root < 0)
		strcat(opts, ",allow_other");
	gave_suid = asked.suid < 0 && grant(v, n, ST_NOSUID, "suid");
	gave_dev = asked.dev < 0 && grant(v, n, ST_NODEV, "dev");
	sfs_branch_spec_free(v, n);
	if (gave_suid)
		strcat(opts, ",suid");
	if (gave_dev)
		strcat(opts, ",dev");
	if (!opts[1])
		return 0;
	opts[1] = 'o';
	return fuse_opt_add_arg(args, opts) < 0 ? -ENOMEM : 0;
}

int sfs_mountflags_check(const struct sfs_snap *s)
{
	struct statvfs sv;

	for (unsigned i = 0; i < s->n; i++) {
		if (fstatvfs(s->b[i]->root_fd, &sv) < 0)
			continue;
		if ((gave_suid && (sv.f_flag & ST_NOSUID)) || (gave_dev && (sv.f_flag & ST_NODEV))) {
			sfs_errmsg("branch %s: its mount became nosuid or nodev while the view "
				   "was being mounted", s->b[i]->path);
			return -EPERM;
		}
	}
	return 0;
}

void sfs_mountflags_reset(void)
{
	asked.allow_other = asked.allow_root = asked.suid = asked.dev = -1;
	gave_suid = gave_dev = false;
}
