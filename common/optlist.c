/* The daemon's options, the one list the parser and --help use
 * (optlist.h). libfuse's options are listed too, the ones stackfs passes
 * on: an option is accepted only when it is here, so nothing libfuse
 * would take silently goes undocumented. libfuse 3.14 takes the atime
 * flags atime and noatime only (not relatime, lazytime...), and its
 * max_read= makes the session end at the kernel's first request (the
 * low-level init must repeat the value): not listed. Changing an option is changing
 * this table; stackfs(8) and the README follow (tests/98-docs.bats). */
#include <stdio.h>
#include <string.h>

#include "common/optlist.h"

#define OURS(t, k, a, h) { t, SFS_OPTK_##k, SFS_OPTG_STACKFS, a, h }
#define OVL(t, k, a, h)  { t, SFS_OPTK_##k, SFS_OPTG_OVERLAY, a, h }
#define FUSE(t, a, h)    { t, SFS_OPTK_FUSE, SFS_OPTG_FUSE, a, h }
#define CMD(t, k, h)     { t, SFS_OPTK_##k, SFS_OPTG_CMDLINE, NULL, h }
#define COMPAT(t, k, a, h) { t, SFS_OPTK_##k, SFS_OPTG_COMPAT, a, h }
#define NOTE(t, a, h)    { t, SFS_OPTK_NOTE, SFS_OPTG_COMPAT, a, h }
#define SELINUX(t)       { t, SFS_OPTK_CONTEXT, SFS_OPTG_FUSE, "CONTEXT", NULL }
#define MFLAG(t, h)      { t, SFS_OPTK_MOUNTFLAG, SFS_OPTG_FUSE, NULL, h }

const struct sfs_optdef sfs_optlist[] = {
	OURS("whiteout=", WHITEOUT, "wh|overlay",
	     "the whiteout format written (default wh)\n"),
	OURS("timeout=", TIMEOUT, "SECONDS",
	     "how long the kernel caches entries and\n"
	     "attributes (default 60); a change made\n"
	     "directly in a branch shows in the view only\n"
	     "after it: 0 shows it at once\n"),
	OURS("readahead=", READAHEAD, "KIB",
	     "readahead window of the mount (default 512;\n"
	     "0: the kernel's)\n"),
	OURS("sync=", SYNC, "always|normal|volatile",
	     "what is durable when (default normal: copies\n"
	     "before they show, fsync covers the union's\n"
	     "records; always: every change at once;\n"
	     "volatile: nothing, a crash makes the branch\n"
	     "refused)\n"),
	OURS("fsync", FSYNC, NULL, "sync=always\n"),
	OURS("volatile", VOLATILE, NULL, "sync=volatile\n"),
	OURS("accept_unclean", ACCEPT_UNCLEAN, NULL,
	     "mount a branch a volatile mount left after a\n"
	     "crash, as it is\n"),
	OURS("upgrade", UPGRADE, NULL, "upgrade an older metadata format\n"),
	OURS("writeback", WRITEBACK, NULL,
	     "the kernel's writeback cache (faster writes;\n"
	     "errors of delayed writes show at fsync/close)\n"),
	OURS("nopassthrough", NOPASSTHROUGH, NULL,
	     "serve reads and writes of upper files by\n"
	     "requests, not by FUSE passthrough\n"),
	OURS("uring", URING, NULL,
	     "requests through FUSE over io_uring (Linux\n"
	     "6.14+) where the fuse module allows it\n"
	     "(enable_uring), else through /dev/fuse, and\n"
	     "the log says why\n"),
	OURS("nouring", NOURING, NULL,
	     "requests through /dev/fuse only (default)\n"),
	OURS("trace", TRACE, NULL,
	     "log every call into a branch (the branch\n"
	     "seam: operation, branch, path, result)\n"),
	OURS("coherent", COHERENT, NULL,
	     "watch the read-only branches (fanotify with\n"
	     "CAP_SYS_ADMIN, else inotify): a change made\n"
	     "directly in one shows in the view at once,\n"
	     "whatever timeout=\n"),
	OURS("branches=", BRANCHES_FILE, "FILE",
	     "the branches from FILE, one a line, highest\n"
	     "first (DIR[=rw|ro|data], ':' unescaped; empty\n"
	     "and '#' lines skipped), instead of BRANCHES;\n"
	     "the operand is then MOUNTPOINT\n"),
	OURS("log=", LOG, "FILE|syslog|stderr",
	     "where the daemon logs (default syslog, and\n"
	     "stderr with -f or -d); FILE is an absolute path\n"),
	OVL("lowerdir=", LOWERDIR, "DIR[:DIR...]",
	    "ro branches, highest first, instead of\n"
	    "BRANCHES; the operands are then\n"
	    "[SOURCE] MOUNTPOINT\n"),
	OVL("upperdir=", UPPERDIR, "DIR", "the rw branch over them\n"),
	OVL("workdir=", WORKDIR, "DIR", "on upperdir's filesystem: holds its metadata\n"
	    "(DIR/.stackfs), so upperdir stays a clean upper\n"),
	OVL("lowerdir+=", LOWERDIR_PLUS, "DIR",
	    "one more ro branch, below those before\n"
	    "(instead of lowerdir=)\n"),
	/* The options of kernel overlayfs and fuse-overlayfs that container
	 * engines and users pass. What has a meaning here is done; a kernel
	 * tuning is accepted, and its help is the note the daemon logs. */
	COMPAT("uidmapping=", UIDMAP, "FROM:TO:LEN[:...]",
	       "owners FROM.. in the branches are TO.. in\n"
	       "the view (and back when stored); others\n"
	       "show as 65534\n"),
	COMPAT("gidmapping=", GIDMAP, "FROM:TO:LEN[:...]", "the same for groups\n"),
	COMPAT("squash_to_root", SQUASH_ROOT, NULL,
	       "the view shows every entry owned by 0:0\n"),
	COMPAT("squash_to_uid=", SQUASH_UID, "UID",
	       "the view shows every entry owned by UID\n"),
	COMPAT("squash_to_gid=", SQUASH_GID, "GID",
	       "the view shows every entry's group as GID\n"),
	COMPAT("fsync=", FSYNC_NUM, "0|1",
	       "0: sync=volatile, 1: sync=normal\n"),
	COMPAT("writeback=", WRITEBACK_NUM, "0|1",
	       "1: the flag writeback, 0: without it\n"),
	COMPAT("noacl", NOACL, NULL,
	       "no POSIX ACLs in the view (the kernel checks\n"
	       "mode bits only; ACL xattrs are refused)\n"),
	COMPAT("noxattrs=", NOXATTRS, "0|1",
	       "1: no extended attributes in the view\n"),
	COMPAT("nfs_export=", NFS_EXPORT, "on|off",
	       "on: file handles of the view survive a\n"
	       "remount and a restart of the daemon (NFS\n"
	       "export; ext4 and XFS branches only)\n"),
	COMPAT("userxattr", USERXATTR, NULL,
	       "accepted with whiteout=wh: user.overlay.*\n"
	       "is read in every branch; stackfs's own\n"
	       "records stay trusted.* when root mounts\n"
	       "(a user's mount writes user.* ones)\n"),
	COMPAT("metacopy=", METACOPY, "on|off",
	       "on (default): a chmod, chown, utimes,\n"
	       "setxattr or chattr of a lower file copies\n"
	       "its metadata only, the data at its first\n"
	       "write; off: the whole file. Metacopy files\n"
	       "of lower layers are read either way\n"),
	NOTE("redirect_dir=", "on|off|follow|nofollow",
	     "accepted: a renamed directory always gets a\n"
	     "redirect record; those below are followed\n"),
	NOTE("index=", "on|off",
	     "accepted: hard links of lower files are\n"
	     "always kept together (.stackfs/index)\n"),
	NOTE("xino=", "on|off|auto",
	     "accepted: stackfs keeps its own inode\n"
	     "numbers, stable across copy-up and remount\n"),
	NOTE("uuid=", "on|off|null|auto",
	     "accepted: branches are known by their\n"
	     "registry ids\n"),
	NOTE("verity=", "off", "accepted: fs-verity digests are not checked\n"),
	NOTE("static_nlink", NULL,
	     "accepted: merged directories show 1 link\n"),
	NOTE("fast_ino=", "0|1", "accepted: inode numbers are always stackfs's\n"),
	NOTE("threaded=", "0|1", "accepted: the daemon is always multi-threaded\n"),
	NOTE("xattr_permissions=", "0",
	     "accepted: permissions are the kernel's, on\n"
	     "the branches' owners and modes\n"),
	{ "fsname=", SFS_OPTK_FSNAME, SFS_OPTG_FUSE, "NAME",
	  "the mount's source in /proc/mounts\n(default stackfs)\n" },
	{ "subtype=", SFS_OPTK_SUBTYPE, SFS_OPTG_FUSE, "stackfs",
	  "always stackfs; another value is refused\n" },
	FUSE("default_permissions", NULL, "always on: the kernel checks permissions\n"),
	MFLAG("allow_other", "let other users use the view (the default\n"
	      "when root mounts)\n"),
	MFLAG("allow_root", "let root use a view another user mounted\n"),
	FUSE("auto_unmount", NULL, "unmount the view when the daemon ends\n"),
	FUSE("ro", NULL, "a read-only view\n"),
	FUSE("rw", NULL, "a read-write view (the default)\n"),
	MFLAG("suid", "as for mount(8); when root mounts, suid is\n"
	      "the default unless a branch's own mount is\n"
	      "nosuid; nodev always is\n"),
	MFLAG("nosuid", NULL), MFLAG("dev", NULL), MFLAG("nodev", NULL),
	FUSE("exec", NULL, NULL), FUSE("noexec", NULL, NULL),
	FUSE("sync", NULL, "as for mount(8)\n"),
	FUSE("async", NULL, NULL), FUSE("dirsync", NULL, NULL),
	FUSE("atime", NULL, "as for mount(8)\n"),
	FUSE("noatime", NULL, NULL),
	{ "debug", SFS_OPTK_DEBUG, SFS_OPTG_FUSE, NULL, "as -d\n" },
	{ "context=", SFS_OPTK_CONTEXT, SFS_OPTG_FUSE, "CONTEXT",
	  "SELinux labels, as for mount(8); a value\n"
	  "in \"quotes\" may hold commas; without\n"
	  "SELinux accepted and ignored (a note)\n" },
	SELINUX("fscontext="), SELINUX("defcontext="), SELINUX("rootcontext="),
	CMD("-f", FG, "stay in the foreground\n"),
	CMD("-d", DEBUG, "debug: stay in the foreground, log every\nrequest\n"),
	CMD("-h", HELP, "print this help\n"),
	CMD("--help", HELP, NULL),
	CMD("-V", VERSION, "print the versions of stackfs and libfuse\n"),
	CMD("--version", VERSION, NULL),
};
const size_t sfs_optlist_n = sizeof(sfs_optlist) / sizeof(sfs_optlist[0]);

static const char *const headings[] = {
	[SFS_OPTG_STACKFS] = "stackfs options:",
	[SFS_OPTG_OVERLAY] = "the branches, overlayfs-style:",
	[SFS_OPTG_COMPAT] = "options of overlayfs and fuse-overlayfs:",
	[SFS_OPTG_FUSE] = "FUSE and mount options (passed on):",
	[SFS_OPTG_CMDLINE] = "other options:",
};

#define HELP_COLUMN 28
#define LINE_MAX_COLS 78

/* The spelling of one option: "-f", "-o timeout=SECONDS"; after a
 * first "-o ..." on the same entry, a name alone. */
static void spell(char *buf, size_t len, const struct sfs_optdef *d, int *had_o)
{
	if (d->templ[0] == '-') {
		snprintf(buf, len, "%s", d->templ);
		return;
	}
	snprintf(buf, len, "%s%s%s", *had_o ? "" : "-o ", d->templ, d->arg ? d->arg : "");
	*had_o = 1;
}

/* One entry and the spellings after it (", "-separated, wrapped under
 * the first name); its help in the right column, on the next line when
 * the spellings fill the left one. Returns the index after them. */
static size_t print_entry(FILE *f, size_t i)
{
	const char *h = sfs_optlist[i].help;
	int col = fprintf(f, "    "), had_o = 0;
	size_t j = i;
	char word[128];

	do {
		spell(word, sizeof(word), &sfs_optlist[j], &had_o);
		if (j > i && col + 2 + (int)strlen(word) > LINE_MAX_COLS)
			col = fprintf(f, ",\n       ") - 2;
		else if (j > i)
			col += fprintf(f, ", ");
		col += fprintf(f, "%s", word);
		j++;
	} while (j < sfs_optlist_n && !sfs_optlist[j].help);
	if (col + 2 > HELP_COLUMN) {
		fputc('\n', f);
		col = 0;
	}
	while (*h) {
		size_t len = strcspn(h, "\n");

		fprintf(f, "%*s%.*s\n", HELP_COLUMN - col, "", (int)len, h);
		col = 0;
		h += len + (h[len] == '\n');
	}
	return j;
}

const struct sfs_optdef *sfs_optlist_find(const char *arg)
{
	size_t len = strcspn(arg, "=");

	for (size_t i = 0; i < sfs_optlist_n; i++) {
		const char *t = sfs_optlist[i].templ;

		if (strlen(t) - (t[strlen(t) - 1] == '=') == len && !strncmp(t, arg, len))
			return &sfs_optlist[i];
	}
	return NULL;
}

int sfs_optlist_value_ok(const struct sfs_optdef *d, const char *value)
{
	const char *a = d->arg;
	size_t vlen = strlen(value);

	/* "FROM:TO:LEN", "UID": any value (checked by its parser) */
	if (!a || strpbrk(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
		return 1;
	while (*a) {
		size_t len = strcspn(a, "|");

		if (len == vlen && !strncmp(a, value, len))
			return 1;
		a += len + (a[len] == '|');
	}
	return 0;
}

void sfs_optlist_print(FILE *f, unsigned mask)
{
	for (unsigned g = SFS_OPTG_STACKFS; g <= SFS_OPTG_CMDLINE; g++) {
		if (!(mask & SFS_OPTG_MASK(g)))
			continue;
		fprintf(f, "\n%s\n", headings[g]);
		for (size_t i = 0; i < sfs_optlist_n;) {
			if (sfs_optlist[i].group == g && sfs_optlist[i].help)
				i = print_entry(f, i);
			else
				i++;
		}
	}
}
