/* The daemon's command line: BRANCHES, MOUNTPOINT, -f, -d and -o options.
 * What is accepted is sfs_optlist (optlist.c), the table --help prints:
 * anything else is refused here by name, with what to write instead when
 * it is another union filesystem's option (foreign.c); libfuse would have
 * taken options nobody documented. Options of our own are taken out here;
 * libfuse's go on to it, and fuse_session_new refuses their bad values
 * (main.c makes that a usage error too). An option given twice with
 * different values is refused, whoever it belongs to: the last one would
 * win silently, and
 * which one was meant is not ours to guess. The same value twice is fine
 * (an fstab line and a command line may both say it). */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/escape.h"
#include "common/optlist.h"
#include "stackfs/stackfs.h"
#include "xattr/records.h"

/* The fuse_opt templates (malloc'd), built from sfs_optlist (optlist.c):
 * that table is the one list of what is accepted. NULL on ENOMEM. */
static struct fuse_opt *templates(void)
{
	struct fuse_opt *t = calloc(sfs_optlist_n + 1, sizeof(*t));

	for (size_t i = 0; t && i < sfs_optlist_n; i++)
		t[i] = (struct fuse_opt)FUSE_OPT_KEY(sfs_optlist[i].templ, (int)sfs_optlist[i].key);
	return t;
}

/* Values of the "name=value" options seen so far, to refuse a second
 * one that says otherwise. Ours are compared by meaning (whiteout=wh and
 * whiteout=aufs agree, so do timeout=1 and timeout=1.0), libfuse's as
 * strings. */
static struct {
	char **v;
	size_t n;
	int whiteout_set, timeout_set, readahead_set, log_set;
	int writeback_off;            /* writeback=0 */
	const char *sync_by;          /* the option that set the sync mode */
} seen;

/* The user named the mount's source (fsname=): it is kept. */
static int fsname_given;

static void seen_free(void)
{
	for (size_t i = 0; i < seen.n; i++)
		free(seen.v[i]);
	free(seen.v);
	memset(&seen, 0, sizeof(seen));
}

int sfs_opt_conflict(const char *arg)
{
	sfs_errmsg("bad option '%s': %.*s= given twice with different values", arg,
		   (int)strcspn(arg, "="), arg);
	return -1;
}

/* A "name=value" option: refused (-1) if the name came before with
 * another value, 1 if with the same one, 0 the first time. Options
 * without '=' (flags) may repeat. */
static int seen_fuse_opt(const char *arg)
{
	size_t nlen = strcspn(arg, "=");
	char **nv;

	if (!arg[nlen])
		return 0;
	for (size_t i = 0; i < seen.n; i++) {
		if (strncmp(seen.v[i], arg, nlen + 1))
			continue;
		return strcmp(seen.v[i], arg) ? sfs_opt_conflict(arg) : 1;
	}
	nv = realloc(seen.v, (seen.n + 1) * sizeof(*nv));
	if (!nv)
		return -1;
	seen.v = nv;
	seen.v[seen.n] = strdup(arg);
	if (!seen.v[seen.n])
		return -1;
	seen.n++;
	return 0;
}

static int parse_whiteout(struct sfs_opts *o, const char *arg)
{
	const char *v = arg + strlen("whiteout=");
	enum sfs_whiteout_style w;

	if (strcmp(v, "wh") == 0 || strcmp(v, "aufs") == 0)
		w = SFS_WH_AUFS;
	else if (strcmp(v, "overlay") == 0)
		w = SFS_WH_OVERLAY;
	else {
		sfs_errmsg("bad option '%s': whiteout is wh or overlay", arg);
		return -1;
	}
	if (seen.whiteout_set && w != o->whiteout)
		return sfs_opt_conflict(arg);
	o->whiteout = w;
	seen.whiteout_set = 1;
	return 0;
}

/* sync=always|normal|volatile; "fsync" says always, "volatile" volatile
 * (kernel overlayfs's and podman's word) and fuse-overlayfs's fsync=0
 * volatile, fsync=1 normal (it syncs what is asked), so each is refused
 * beside another mode, as a second sync= would be. fsync=0 keeps the
 * volatile flag: after a crash the branch is refused rather than
 * trusted with what may be lost (docs/durability.md "The sync modes"). */
static int parse_sync(struct sfs_opts *o, const char *arg, int key)
{
	static const char *const names[] = {
		[SFS_SYNC_NORMAL] = "normal", [SFS_SYNC_ALWAYS] = "always",
		[SFS_SYNC_VOLATILE] = "volatile",
	};
	enum sfs_sync_mode m = key == SFS_OPTK_FSYNC ? SFS_SYNC_ALWAYS : SFS_SYNC_VOLATILE;
	const char *v = arg + strlen("sync=");

	if (key == SFS_OPTK_FSYNC_NUM) {
		if (strcmp(arg, "fsync=0") && strcmp(arg, "fsync=1")) {
			sfs_errmsg("bad option '%s': fsync is 0 (sync=volatile) or 1 (sync=normal)",
				   arg);
			return -1;
		}
		m = arg[6] == '0' ? SFS_SYNC_VOLATILE : SFS_SYNC_NORMAL;
	} else if (key == SFS_OPTK_SYNC) {
		for (m = 0; m < 3 && strcmp(v, names[m]); m++)
			;
		if (m == 3) {
			sfs_errmsg("bad option '%s': sync is always, normal or volatile", arg);
			return -1;
		}
	}
	if (seen.sync_by && m != o->sync) {
		sfs_errmsg("bad option '%s': the sync mode is %s already (%s)", arg,
			   names[o->sync], seen.sync_by);
		return -1;
	}
	o->sync = m;
	seen.sync_by = key == SFS_OPTK_SYNC ? "sync=" : key == SFS_OPTK_FSYNC ? "fsync" :
		       key == SFS_OPTK_FSYNC_NUM ? "fsync=" : "volatile";
	return 0;
}

/* fuse-overlayfs's writeback=0|1: the flag writeback, or not. */
static int parse_writeback(struct sfs_opts *o, const char *arg, int key)
{
	int on = key == SFS_OPTK_WRITEBACK || !strcmp(arg, "writeback=1");

	if (key == SFS_OPTK_WRITEBACK_NUM && !on && strcmp(arg, "writeback=0")) {
		sfs_errmsg("bad option '%s': writeback is 0 or 1", arg);
		return -1;
	}
	if ((on && seen.writeback_off) || (!on && o->writeback)) {
		sfs_errmsg("bad option '%s': writeback was %s before", arg, on ? "off" : "on");
		return -1;
	}
	if (on)
		o->writeback = 1;
	else
		seen.writeback_off = 1;
	return 0;
}

/* uidmapping=, gidmapping=, squash_to_uid=, squash_to_gid=,
 * squash_to_root (idmap.c). */
static int squash_root;

static int parse_owner(const char *arg, int key)
{
	const char *v = strchr(arg, '=');
	int which = key == SFS_OPTK_UIDMAP || key == SFS_OPTK_SQUASH_UID ?
		    SFS_IDMAP_UID : SFS_IDMAP_GID;
	char *end;
	long long id;
	int ret;

	if (key == SFS_OPTK_SQUASH_ROOT) {
		squash_root = 1; /* squash_to_uid= and squash_to_gid= come first */
		return 0;
	}
	ret = seen_fuse_opt(arg);
	if (ret)
		return ret < 0 ? -1 : 0;
	if (key == SFS_OPTK_UIDMAP || key == SFS_OPTK_GIDMAP) {
		ret = sfs_idmap_parse(which, v + 1);
		if (ret < 0)
			sfs_errmsg("bad option '%s': %s", arg, ret == -EEXIST ?
				   "a mapping was given before" : ret == -E2BIG ?
				   "more than 340 ranges" :
				   "expected FROM:TO:LEN triples (ids below 2^32, LEN > 0, "
				   "no two ranges overlapping)");
		return ret < 0 ? -1 : 0;
	}
	errno = 0;
	id = strtoll(v + 1, &end, 10);
	if (end == v + 1 || *end || errno || sfs_idmap_squash(which, id) < 0) {
		sfs_errmsg("bad option '%s': expected an id, 0 to 4294967295", arg);
		return -1;
	}
	return 0;
}

/* timeout=SECONDS: a finite number, not negative, nothing after it.
 * (libfuse's "%lf" took "nan" and "1abc"; a NaN reached its conversion
 * of timeouts to integers, which is undefined.) */
static int parse_timeout(struct sfs_opts *o, const char *arg)
{
	const char *v = arg + strlen("timeout=");
	char *end;
	double t;

	errno = 0;
	t = strtod(v, &end);
	if (end == v || *end || !isfinite(t) || errno == ERANGE || t < 0) {
		sfs_errmsg("bad option '%s': timeout is a number of seconds, 0 or more", arg);
		return -1;
	}
	if (seen.timeout_set && t != o->timeout)
		return sfs_opt_conflict(arg);
	o->timeout = t;
	seen.timeout_set = 1;
	return 0;
}

/* readahead=KIB: decimal KiB, 0 (the kernel's window) to 65536. */
static int parse_readahead(struct sfs_opts *o, const char *arg)
{
	const char *v = arg + strlen("readahead=");
	unsigned long kib = 0;
	size_t i;

	for (i = 0; v[i] >= '0' && v[i] <= '9' && kib <= SFS_READAHEAD_MAX_KIB; i++)
		kib = kib * 10 + (unsigned long)(v[i] - '0');
	if (i == 0 || v[i] || kib > SFS_READAHEAD_MAX_KIB) {
		sfs_errmsg("bad option '%s': readahead is a number of KiB, 0 to %u", arg,
			   SFS_READAHEAD_MAX_KIB);
		return -1;
	}
	if (seen.readahead_set && kib != o->readahead_kb)
		return sfs_opt_conflict(arg);
	o->readahead_kb = (unsigned)kib;
	seen.readahead_set = 1;
	return 0;
}

/* userxattr asks for overlayfs's marks in user.overlay.*. A daemon
 * without trusted.* attributes writes every record and mark there
 * anyway (xattr/records.h), with either whiteout style. Root's stay
 * trusted.* (it must not follow user.* records, which anyone who may
 * write the branch can forge): with whiteout=overlay root writes
 * trusted.overlay.* marks, which kernel overlayfs mounted with
 * userxattr would not read, so that is refused; with whiteout=wh its
 * marks are files, read by anyone. */
static int userxattr_check(const struct sfs_opts *o)
{
	if (!o->userxattr)
		return 0;
	if (sfs_records_user()) {
		sfs_compat_note("option 'userxattr' accepted: this mount writes its records "
				"and overlay marks as user.* attributes already (no trusted.* "
				"attributes without CAP_SYS_ADMIN)");
		return 0;
	}
	if (o->whiteout == SFS_WH_OVERLAY) {
		sfs_errmsg("bad option 'userxattr': with whiteout=overlay stackfs run by root "
			   "writes trusted.overlay.* marks, which overlayfs with userxattr does "
			   "not read; use whiteout=wh or leave userxattr out");
		return -1;
	}
	sfs_compat_note("option 'userxattr' accepted: user.overlay.* marks are read in "
			"every branch; whiteouts and opaque marks are written as files "
			"(whiteout=wh); stackfs's own records stay trusted.* (root does not "
			"follow user.* records)");
	return 0;
}

/* subtype= makes the mount's type fuse.SUBTYPE, and fuse.stackfs is how
 * the commands (runtime.c, client.c, umount) and fstab recognise a
 * stackfs mount: anything else would be silently overridden or would
 * hide the mount from them, so it is refused. subtype=stackfs is what is
 * always set; saying it is harmless. */
static int parse_subtype(const char *arg)
{
	if (strcmp(arg, "subtype=stackfs") == 0)
		return 0;
	sfs_errmsg("bad option '%s': the subtype is always stackfs (the mount's type is "
		   "fuse.stackfs, by which the stackfs commands find it)", arg);
	return -1;
}

/* fsname= is the mount's source, as mount(8), findmnt and /proc/mounts
 * show it: the user's name is kept (a label for an fstab line), only the
 * default is ours. Checked for duplicates like every libfuse option. */
static int parse_fsname(const char *arg)
{
	if (!arg[strlen("fsname=")]) {
		sfs_errmsg("bad option 'fsname=': no name given");
		return -1;
	}
	if (seen_fuse_opt(arg) < 0)
		return -1;
	fsname_given = 1;
	return 1; /* libfuse's */
}

static int positional(struct sfs_opts *o, const char *arg)
{
	char **slot = !o->branches ? &o->branches : !o->mountpoint ? &o->mountpoint : NULL;

	if (!slot) {
		sfs_errmsg("unexpected argument '%s'", arg);
		return -1;
	}
	*slot = strdup(arg);
	return *slot ? 0 : -1;
}

/* log=FILE|syslog|stderr. FILE is absolute: the daemon leaves its
 * working directory, and a relative name would be resolved somewhere the
 * user did not look. It is opened (as root, by log.c's rules) only once
 * the branches are checked. */
static int parse_log(struct sfs_opts *o, const char *arg)
{
	const char *v = arg + strlen("log=");
	enum sfs_log_to to = !strcmp(v, "syslog") ? SFS_LOG_TO_SYSLOG :
			     !strcmp(v, "stderr") ? SFS_LOG_TO_STDERR : SFS_LOG_TO_FILE;

	if (to == SFS_LOG_TO_FILE && (v[0] != '/' || v[strlen(v) - 1] == '/')) {
		sfs_errmsg("bad option '%s': log is syslog, stderr or a FILE given by its "
			   "absolute path", arg);
		return -1;
	}
	if (seen.log_set)
		return to != o->log_to || (to == SFS_LOG_TO_FILE && strcmp(v, o->log_file)) ?
		       sfs_opt_conflict(arg) : 0;
	seen.log_set = 1;
	o->log_to = to;
	if (to == SFS_LOG_TO_FILE && !(o->log_file = strdup(v)))
		return -1;
	return 0;
}

/* An option that is not in sfs_optlist. One of another union
 * filesystem's gets what to write instead. An empty one ("-o ''",
 * "a,,b") is nothing, as for mount(8): dropped. */
static int unknown(const char *arg)
{
	char hint[512];

	if (!arg[0])
		return 0;
	if (arg[0] != '-' && sfs_foreign_hint(arg, hint, sizeof(hint)))
		sfs_errmsg("unknown option '%s': %s", arg, hint);
	else
		sfs_errmsg("unknown option '%s' (stackfs mount --help lists the options)", arg);
	return -1;
}

/* fuse-overlayfs's noxattrs=0|1. */
static int parse_noxattrs(struct sfs_opts *o, const char *arg)
{
	const char *v = arg + strlen("noxattrs=");

	if (strcmp(v, "0") && strcmp(v, "1")) {
		sfs_errmsg("bad option '%s': noxattrs is 0 or 1", arg);
		return -1;
	}
	if (seen_fuse_opt(arg) < 0)
		return -1;
	o->noxattrs = *v == '1';
	return 0;
}

/* metacopy=on|off (overlayfs's name): whether a metadata change of a
 * lower file copies its metadata alone
 * (docs/union.md "Metadata-only copy-up"). A second value that says otherwise
 * is refused. */
static int parse_metacopy(struct sfs_opts *o, const char *arg)
{
	const char *v = arg + strlen("metacopy=");

	if (strcmp(v, "on") && strcmp(v, "off")) {
		sfs_errmsg("bad option '%s': metacopy is on or off", arg);
		return -1;
	}
	if (seen_fuse_opt(arg) < 0)
		return -1;
	o->metacopy_off = !strcmp(v, "off");
	return 0;
}

/* overlayfs's nfs_export=on|off: node ids that outlive the daemon. */
static int parse_nfs_export(struct sfs_opts *o, const char *arg)
{
	const char *v = arg + strlen("nfs_export=");

	if (strcmp(v, "on") && strcmp(v, "off")) {
		sfs_errmsg("bad option '%s': nfs_export is on or off", arg);
		return -1;
	}
	if (seen_fuse_opt(arg) < 0)
		return -1;
	o->nfs_export = strcmp(v, "on") == 0;
	return 0;
}

/* The flags of our own: set, may repeat. */
static int flag(struct sfs_opts *o, int key)
{
	switch (key) {
	case SFS_OPTK_ACCEPT_UNCLEAN:
		o->accept_unclean = 1;
		break;
	case SFS_OPTK_UPGRADE:
		o->upgrade = 1;
		break;
	case SFS_OPTK_USERXATTR:
		o->userxattr = 1;
		break;
	case SFS_OPTK_NOACL:
		o->noacl = 1;
		break;
	case SFS_OPTK_NOPASSTHROUGH:
		o->nopassthrough = 1;
		break;
	case SFS_OPTK_URING:
		o->nouring = 0;
		o->uring_asked = 1;
		break;
	case SFS_OPTK_NOURING:
		o->nouring = 1;
		o->uring_asked = 0;
		break;
	case SFS_OPTK_TRACE:
		o->trace = 1;
		break;
	case SFS_OPTK_COHERENT:
		o->coherent = 1;
		break;
	}
	return 0;
}

static int opt_proc(void *data, const char *arg, int key, struct fuse_args *out)
{
	struct sfs_opts *o = data;

	switch (key) {
	case FUSE_OPT_KEY_NONOPT:
		return positional(o, arg) < 0 ? -1 : 0;
	case FUSE_OPT_KEY_OPT:
		return unknown(arg);
	case SFS_OPTK_FG:
		o->foreground = 1;
		return 0;
	case SFS_OPTK_DEBUG:
		o->debug = o->foreground = 1;
		return 1; /* libfuse prints the requests */
	case SFS_OPTK_HELP:
		o->show_help = 1;
		return 0;
	case SFS_OPTK_VERSION:
		o->show_version = 1;
		return 0;
	case SFS_OPTK_WHITEOUT:
		return parse_whiteout(o, arg);
	case SFS_OPTK_TIMEOUT:
		return parse_timeout(o, arg);
	case SFS_OPTK_READAHEAD:
		return parse_readahead(o, arg);
	case SFS_OPTK_LOG:
		return parse_log(o, arg);
	case SFS_OPTK_SYNC:
	case SFS_OPTK_FSYNC:
	case SFS_OPTK_FSYNC_NUM:
	case SFS_OPTK_VOLATILE:
		return parse_sync(o, arg, key);
	case SFS_OPTK_WRITEBACK:
	case SFS_OPTK_WRITEBACK_NUM:
		return parse_writeback(o, arg, key);
	case SFS_OPTK_NOTE:
		return seen_fuse_opt(arg) < 0 ? -1 : sfs_compat_tuning(arg);
	case SFS_OPTK_UIDMAP:
	case SFS_OPTK_GIDMAP:
	case SFS_OPTK_SQUASH_ROOT:
	case SFS_OPTK_SQUASH_UID:
	case SFS_OPTK_SQUASH_GID:
		return parse_owner(arg, key);
	case SFS_OPTK_CONTEXT:
		return seen_fuse_opt(arg) < 0 ? -1 : sfs_compat_context(arg);
	case SFS_OPTK_MOUNTFLAG:
		return sfs_mountflags_seen(arg);
	case SFS_OPTK_NOXATTRS:
		return parse_noxattrs(o, arg);
	case SFS_OPTK_METACOPY:
		return parse_metacopy(o, arg);
	case SFS_OPTK_NFS_EXPORT:
		return parse_nfs_export(o, arg);
	case SFS_OPTK_ACCEPT_UNCLEAN:
	case SFS_OPTK_UPGRADE:
	case SFS_OPTK_NOPASSTHROUGH:
	case SFS_OPTK_URING:
	case SFS_OPTK_NOURING:
	case SFS_OPTK_USERXATTR:
	case SFS_OPTK_NOACL:
	case SFS_OPTK_TRACE:
	case SFS_OPTK_COHERENT:
		return flag(o, key);
	case SFS_OPTK_LOWERDIR:
	case SFS_OPTK_LOWERDIR_PLUS:
	case SFS_OPTK_UPPERDIR:
	case SFS_OPTK_WORKDIR:
	case SFS_OPTK_BRANCHES_FILE:
		return sfs_optb_take(arg, key);
	case SFS_OPTK_SUBTYPE:
		return parse_subtype(arg);
	case SFS_OPTK_FSNAME:
		return parse_fsname(arg);
	case SFS_OPTK_FUSE:
		return seen_fuse_opt(arg) < 0 ? -1 : 1;
	default:
		return 1;
	}
}

int sfs_opts_parse(struct fuse_args *args, struct sfs_opts *o)
{
	struct fuse_opt *t = templates();
	int ret;

	memset(o, 0, sizeof(*o));
	o->timeout = 60.0;
	o->readahead_kb = SFS_READAHEAD_DEFAULT_KIB;
	o->whiteout = SFS_WH_AUFS;
	fsname_given = squash_root = 0;
	/* state of an earlier parse (the fuzzer parses many) */
	sfs_mountflags_reset();
	sfs_idmap_free();
	sfs_compat_reset();
	if (!t || sfs_compat_join(args) < 0) {
		free(t);
		return -ENOMEM;
	}
	ret = fuse_opt_parse(args, o, t, opt_proc);
	free(t);
	seen_free();
	if (ret < 0) {
		sfs_optb_reset();
		return -EINVAL;
	}
	if (sfs_optb_finish(o) < 0 || userxattr_check(o) < 0)
		return -EINVAL;
	if (squash_root)
		sfs_idmap_squash_root();
	if (!o->show_help && !o->show_version && sfs_mountflags_add(args, o->branches) < 0)
		return -ENOMEM;
	/* Permission checks are the kernel's, on the union's attributes: the
	 * daemon runs with the rights of its user and must not lend them. */
	if (fuse_opt_add_arg(args, fsname_given ? "-odefault_permissions,subtype=stackfs" :
			     "-odefault_permissions,subtype=stackfs,fsname=stackfs") < 0)
		return -ENOMEM;
	return 0;
}

void sfs_opts_free(struct sfs_opts *o)
{
	free(o->branches);
	free(o->mountpoint);
	free(o->log_file);
	free(o->workdir);
	o->branches = o->mountpoint = o->log_file = o->workdir = NULL;
}

void sfs_opts_usage(const char *prog)
{
	printf("usage: %s [-f] [-d] [-o OPTIONS] BRANCHES MOUNTPOINT\n"
	       "       %s [-f] [-d] -o branches=FILE[,OPTIONS] MOUNTPOINT\n"
	       "       %s [-f] [-d] -o lowerdir=DIR[:DIR...][,upperdir=DIR] [SOURCE] MOUNTPOINT\n"
	       "\n"
	       "BRANCHES is DIR[=rw|ro|data]:DIR[=rw|ro|data]..., highest priority first;\n"
	       "the first branch is rw unless told, the others ro. Write ':', '='\n"
	       "or '\\' inside a path with a backslash before it.\n", prog, prog, prog);
	sfs_optlist_print(stdout, SFS_OPTG_MOUNT_OPTS | SFS_OPTG_MASK(SFS_OPTG_CMDLINE));
}
