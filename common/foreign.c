/* Options of the other union filesystems that stackfs does not take:
 * people come with an fstab line or a mount program's argv of mergerfs,
 * fuse-overlayfs or kernel overlayfs, and a bare "unknown option" does
 * not tell them what to write instead. Each entry says what stackfs does
 * there, or which of its options does it.
 *
 * To change: an option stackfs comes to accept moves from here to
 * optlist.c; the parser looks here for options that table does not
 * have, and for a value of one of its accepted kernel tunings that it
 * does not take (verity=on): a leftover entry is dead, never wrong. */
#include <stdio.h>
#include <string.h>

#include "common/optlist.h"

struct foreign {
	const char *name;   /* the option's name; ending in '.': a family (func.*) */
	const char *from;   /* whose option it is */
	const char *hint;   /* completes "FROM's NAME ..." */
};

#define NOEQ "has no stackfs equivalent: "
#define BRANCHES_HINT "is BRANCHES in stackfs (DIR=rw:DIR=ro..., highest first) or " \
	"-o lowerdir=A:B,upperdir=U"
#define TIMEOUT_HINT "is timeout=SECONDS in stackfs (one time for entries, negative " \
	"entries and attributes)"
#define INO_HINT "is not needed: stackfs keeps its own inode numbers, the same " \
	"across copy-up and remount"
/* libfuse's high-level API options, which mergerfs takes and the low-level
 * API (stackfs's) does not */
#define HL "(a high-level API option) "
#define THREADS_HINT NOEQ "the daemon runs libfuse's multi-threaded loop"

static const struct foreign foreign[] = {
	/* mergerfs */
	{ "category.create", "mergerfs", NOEQ "new files and directories go to the highest "
	  "rw branch (choose it with stackfs branch add/mode)" },
	{ "category.action", "mergerfs", NOEQ "a change is made in the highest rw branch, "
	  "after a copy-up of what a ro branch holds" },
	{ "category.search", "mergerfs", NOEQ "a name is looked up from the highest "
	  "branch down; the first one holding it wins" },
	{ "category.", "mergerfs", NOEQ "lookups go from the highest branch down, "
	  "changes to the highest rw branch" },
	{ "func.", "mergerfs", NOEQ "each operation works on the highest branch holding "
	  "the name, changes on the highest rw branch" },
	{ "cache.attr", "mergerfs", TIMEOUT_HINT },
	{ "cache.entry", "mergerfs", TIMEOUT_HINT },
	{ "cache.negative_entry", "mergerfs", TIMEOUT_HINT },
	{ "cache.writeback", "mergerfs", "is the flag writeback in stackfs" },
	{ "cache.files", "mergerfs", NOEQ "the kernel keeps file pages across opens and "
	  "drops them when a file changes (the flag writeback adds the write cache)" },
	{ "cache.", "mergerfs", NOEQ "the kernel caches pages, listings and symlinks; "
	  "timeout=SECONDS sets the entry and attribute cache time" },
	{ "dropcacheonclose", "mergerfs", NOEQ "with FUSE passthrough (the default) reads "
	  "and writes of upper files go to the branch file itself" },
	{ "moveonenospc", "mergerfs", NOEQ "a write that finds the rw branch full fails "
	  "with ENOSPC; add room with stackfs branch add" },
	{ "minfreespace", "mergerfs", NOEQ "new files always go to the highest rw branch, "
	  "whatever its free space" },
	{ "use_ino", "mergerfs", INO_HINT },
	{ "inodecalc", "mergerfs", INO_HINT },
	{ "branches", "mergerfs", BRANCHES_HINT },
	{ "srcmounts", "mergerfs", BRANCHES_HINT },
	{ "direct_io", "libfuse", HL "is not supported: data goes through the page cache "
	  "or FUSE passthrough" },
	{ "kernel_cache", "libfuse", HL "is not needed: the kernel keeps file pages across "
	  "opens and drops them when a file changes" },
	{ "auto_cache", "libfuse", HL "is not needed: the kernel keeps file pages across "
	  "opens and drops them when a file changes" },
	{ "entry_timeout", "libfuse", HL TIMEOUT_HINT },
	{ "attr_timeout", "libfuse", HL TIMEOUT_HINT },
	{ "negative_timeout", "libfuse", HL TIMEOUT_HINT },
	{ "ac_attr_timeout", "libfuse", HL TIMEOUT_HINT },
	{ "threads", "mergerfs", THREADS_HINT },
	{ "read-thread-count", "mergerfs", THREADS_HINT },
	{ "process-thread-count", "mergerfs", THREADS_HINT },
	{ "pin-threads", "mergerfs", THREADS_HINT },
	{ "async_read", "mergerfs", "is not needed: reads are asynchronous" },
	{ "fuse_msg_size", "mergerfs", NOEQ "requests are libfuse's default size" },
	{ "symlinkify", "mergerfs", NOEQ "files are shown as they are" },
	{ "symlinkify_timeout", "mergerfs", NOEQ "files are shown as they are" },
	{ "nullrw", "mergerfs", NOEQ "reads and writes always reach the branch" },
	{ "ignorepponrename", "mergerfs", NOEQ "a rename stays in the branch it is in; "
	  "EXDEV only when a ro branch above shows the target" },
	{ "rename-exdev", "mergerfs", NOEQ "a directory with lower content is renamed "
	  "with a redirect record, without copying" },
	{ "link_cow", "mergerfs", NOEQ "a hard-linked lower file is copied up once, "
	  "its other names follow" },
	{ "security_capability", "mergerfs", NOEQ "xattrs pass through to the branches" },
	{ "xattr", "mergerfs", NOEQ "xattrs pass through to the branches" },
	{ "posix_acl", "mergerfs", "is not needed: POSIX ACLs are always on" },
	{ "statfs", "mergerfs", NOEQ "statfs reports the highest rw branch's filesystem" },
	{ "statfs_ignore", "mergerfs", NOEQ "statfs reports the highest rw branch's filesystem" },
	{ "follow-symlinks", "mergerfs", NOEQ "symlinks in a branch are shown as symlinks, "
	  "never followed by the daemon" },
	{ "export-support", "mergerfs", NOEQ "a view cannot be exported over NFS" },
	{ "lazy-umount-mountpoint", "mergerfs", NOEQ "stackfs umount waits for the daemon; "
	  "umount -l works as for any mount" },
	{ "passthrough.", "mergerfs", "is on by default in stackfs (nopassthrough turns "
	  "it off)" },
	{ "flush-on-close", "mergerfs", NOEQ "close sends no flush (locks are the kernel's)" },
	{ "parallel-direct-writes", "mergerfs", NOEQ "direct I/O is not supported" },
	{ "hard_remove", "libfuse", HL "is not needed: stackfs uses the "
	  "low-level API, which keeps removed open files" },
	{ "noforget", "libfuse", HL "is not needed: stackfs forgets by the "
	  "kernel's rules and keeps inode numbers on disk" },
	{ "remember", "libfuse", HL "is not needed: stackfs forgets by the "
	  "kernel's rules and keeps inode numbers on disk" },
	/* fuse-overlayfs and kernel overlayfs: those stackfs takes are in
	 * optlist.c; here what it cannot honour, and the values of taken
	 * options that it cannot (the parser looks here for those too) */
	{ "ino32_t", "fuse-overlayfs", "is not supported: stackfs's inode numbers are "
	  "64-bit, packed with the branch's filesystem id" },
	{ "plugins", "fuse-overlayfs", "is not supported: layers are directories, read as "
	  "they are" },
	{ "xattr_permissions", "fuse-overlayfs", "is not supported but as 0: permissions are "
	  "the branches' owners and modes, checked by the kernel, never kept in xattrs" },
	{ "verity", "overlayfs", "is not supported but as off: stackfs does not check "
	  "the fs-verity digests of metacopy files" },
	{ "datadir+", "overlayfs", "is not supported: data-only layers are not read" },
};

/* The entry for the option's name (up to '='), or NULL. */
static const struct foreign *find(const char *opt)
{
	size_t len = strcspn(opt, "=");

	for (size_t i = 0; i < sizeof(foreign) / sizeof(foreign[0]); i++) {
		const char *n = foreign[i].name;
		size_t nl = strlen(n);

		if (n[nl - 1] == '.' ? len > nl && !strncmp(opt, n, nl)
				     : len == nl && !strncmp(opt, n, nl))
			return &foreign[i];
	}
	return NULL;
}

int sfs_foreign_hint(const char *opt, char *msg, size_t len)
{
	const struct foreign *f = find(opt);

	if (!f)
		return 0;
	snprintf(msg, len, "%s's %.*s %s", f->from, (int)strcspn(opt, "="), opt, f->hint);
	return 1;
}
