/* What the kernel's mount of the view gets besides the user's options
 * (docs/trust.md "allow_other and suid when root mounts").
 *
 * When root mounts, the view is a system's filesystem as overlayfs's is:
 * allow_other (every user of a container, not only root, must reach it;
 * the kernel still checks permissions, default_permissions being always
 * on) and suid (setuid programs such as su, sudo and ping). libfuse
 * would make it nosuid. nodev stays the default, as fuse-overlayfs and
 * podman's default mountopt have it: a container's /dev is a tmpfs of
 * its own, and a device node its root made in a layer must not open the
 * host's disk; `dev` gives it. Each default is the caller's to refuse
 * (nosuid, allow_root). The view never grants by default what a
 * branch's own mount denies: a setuid file on a filesystem mounted
 * nosuid (a user's stick) must not become one that runs as root through
 * the union; such a branch makes the view nosuid and a note says why. An
 * explicit suid is root's to give. A user's mount goes through
 * fusermount3, which makes it nosuid and nodev whatever is asked:
 * nothing is added then. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/escape.h"
#include "stackfs/stackfs.h"
#include "union/branch_spec.h"
#include "xattr/records.h"

/* What the user asked: -1 nothing, 0 the no- form, 1 the flag. */
static struct {
	int allow_other, allow_root, suid, dev;
} asked = { -1, -1, -1, -1 };

/* suid was added without being asked (the check after the branches are
 * open must find it still allowed). */
static bool gave_suid;

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

/* The first branch of spec whose mount has flag (ST_NOSUID), or NULL. By path: the branches are opened later, and checked again
 * then (sfs_mountflags_check). */
static const char *branch_with(const struct sfs_branch_spec *v, size_t n, unsigned long flag)
{
	struct statvfs sv;

	for (size_t i = 0; i < n; i++)
		if (statvfs(v[i].path, &sv) == 0 && (sv.f_flag & flag))
			return v[i].path;
	return NULL;
}

/* suid given by default when no branch's mount denies it. */
static bool grant_suid(const struct sfs_branch_spec *v, size_t n)
{
	const char *b = branch_with(v, n, ST_NOSUID);

	if (b)
		sfs_compat_note("the view is nosuid: branch %s is on a nosuid mount", b);
	return !b;
}

int sfs_mountflags_add(struct fuse_args *args, const char *branches)
{
	struct sfs_branch_spec *v = NULL;
	/* "-o" and ",allow_other,suid": the first comma becomes the 'o' */
	char opts[64] = "-", err[SFS_MSG_MAX];
	size_t n = 0;

	if (geteuid() != 0)
		return 0;
	/* a bad spec is the branch checks' to report */
	if (branches && sfs_branch_spec_parse(branches, &v, &n, err, sizeof(err)) < 0)
		n = 0;
	if (asked.allow_other < 0 && asked.allow_root < 0)
		strcat(opts, ",allow_other");
	gave_suid = asked.suid < 0 && grant_suid(v, n);
	sfs_branch_spec_free(v, n);
	if (gave_suid)
		strcat(opts, ",suid");
	if (!opts[1])
		return 0;
	opts[1] = 'o';
	return fuse_opt_add_arg(args, opts) < 0 ? -ENOMEM : 0;
}

int sfs_mountflags_check(const struct sfs_snap *s, char *err, size_t len)
{
	struct statvfs sv;

	for (unsigned i = 0; i < s->n; i++) {
		if (fstatvfs(s->b[i]->root_fd, &sv) < 0)
			continue;
		if (gave_suid && (sv.f_flag & ST_NOSUID)) {
			sfs_msg_fit(err, len, "%s: a nosuid mount under a view that is suid by "
				    "default (unmount the view and mount it with nosuid)",
				    s->b[i]->path);
			return -EPERM;
		}
	}
	return 0;
}

void sfs_mountflags_reset(void)
{
	asked.allow_other = asked.allow_root = asked.suid = asked.dev = -1;
	gave_suid = false;
}

/* What a mount without CAP_SYS_ADMIN on the host cannot do, said once
 * at mount on the terminal (unless the log is the terminal already)
 * and in the log (docs/trust.md "Rootless mounts"): a user finds out here,
 * not from a chown that failed or a file owned by her. */
void sfs_mountflags_rootless_note(const char *runtime)
{
	char msg[768];
	uid_t me = geteuid();

	if (!sfs_records_user())
		return;
	if (me == 0) /* the root of a user namespace: rootless podman */
		snprintf(msg, sizeof(msg), "running as root of a user namespace, without "
			 "CAP_SYS_ADMIN on the host: records in user.* attributes, owners "
			 "only within the namespace's mapped ranges (others stay uid 0 here), "
			 "no FUSE passthrough, the kernel's readahead; the control socket is "
			 "under %s", runtime);
	else
		snprintf(msg, sizeof(msg), "running as uid %u without CAP_SYS_ADMIN: records "
			 "in user.* attributes, files created and copied up owned by uid %u "
			 "(chown only to ids it may give), no allow_other, no suid or dev, no "
			 "FUSE passthrough, the kernel's readahead; the control socket is "
			 "under %s",
			 (unsigned)me, (unsigned)me, runtime);
	if (!sfs_log_keeps_stderr())
		fprintf(stderr, "stackfs: note: %s\n", msg);
	sfs_log(SFS_LOG_INFO, "%s", msg);
}
