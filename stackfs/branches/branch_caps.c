/* What a branch's filesystem can do (branch_caps.h). The probes run in
 * the rw branch's staging directory, which the mount empties anyway, on
 * names of this process: nothing a user of the branch can see or swap
 * for something of theirs (an O_EXCL create, never a name followed). */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/bio.h"
#include "common/runtime.h"
#include "stackfs/branches/branch.h"
#include "stackfs/branches/branch_caps.h"
#include "xattr/records.h"
#include "xattr/xattr.h"

/* What mountinfo's type of the branch's filesystem says: shared with
 * other hosts; FUSE, whose handles name the client's nodes
 * (whiteout/fsid.c). Nothing is asked of the filesystem itself: the
 * branch may be this daemon's own mount, refused only later. mountinfo
 * is read once per filesystem, not per branch: a mount of 1,000 branches
 * has them on a few filesystems, mostly one after the other (the last
 * answer is kept, per thread) */
static unsigned type_bits(const struct sfs_branch *b)
{
	static __thread dev_t last_dev;
	static __thread unsigned last_bits, known;
	char type[64];

	if (known && last_dev == b->dev)
		return last_bits;
	last_bits = 0;
	if (sfs_runtime_fstype_of(major(b->dev), minor(b->dev), type, sizeof(type)) == 0) {
		if (sfs_fstype_shared(type))
			last_bits |= SFS_SHARED_FS;
		if (!strcmp(type, "fuse") || !strcmp(type, "fuseblk") || !strncmp(type, "fuse.", 5) ||
		    !strncmp(type, "fuseblk.", 8))
			last_bits |= SFS_LACKS_INODE_HANDLES;
	}
	last_dev = b->dev;
	known = 1;
	return last_bits;
}

static unsigned probe_tmpfile(int work_fd)
{
	int fd = sfs_do_tmpfile(work_fd, O_WRONLY, 0600);

	if (fd < 0)
		return SFS_LACKS_TMPFILE;
	close(fd);
	return 0;
}

/* One probe file made, renamed with NOREPLACE (no flags at all: EINVAL),
 * then with WHITEOUT (which leaves a 0:0 device behind it) and swapped
 * with EXCHANGE; all three names removed after. */
static unsigned probe_renames(int work_fd, const char *a, const char *b, const char *c)
{
	unsigned lacks = 0;
	int fd = sfs_do_open(work_fd, a, O_CREAT | O_EXCL | O_WRONLY, 0600);

	if (fd < 0)
		return 0; /* cannot tell: the ways taken then fail with their errno */
	close(fd);
	if (sfs_do_rename_probe(work_fd, a, b, RENAME_NOREPLACE) < 0)
		lacks = SFS_LACKS_RENAME_FLAGS | SFS_LACKS_WHITEOUT;
	else if (sfs_do_rename_probe(work_fd, b, c, RENAME_WHITEOUT) < 0 ||
		 sfs_do_rename_probe(work_fd, b, c, RENAME_EXCHANGE) < 0)
		lacks = SFS_LACKS_WHITEOUT;
	sfs_do_unlinkat(work_fd, a, 0);
	sfs_do_unlinkat(work_fd, b, 0);
	sfs_do_unlinkat(work_fd, c, 0);
	return lacks;
}

/* Only where the union's records are trusted.* ones (a user's daemon
 * keeps them in user.*, which every filesystem with xattrs takes). */
static unsigned probe_trusted(int work_fd, const char *a)
{
	unsigned lacks = 0;
	int fd;

	if (!sfs_records_privileged())
		return 0;
	fd = sfs_do_open(work_fd, a, O_CREAT | O_EXCL | O_WRONLY, 0600);
	if (fd < 0)
		return 0;
	if (sfs_xattr_set(fd, "", "trusted.stackfs.probe", "1", 1, 0) < 0)
		lacks = SFS_LACKS_TRUSTED;
	close(fd);
	sfs_do_unlinkat(work_fd, a, 0);
	return lacks;
}

void sfs_branch_caps_probe_fs(struct sfs_branch *b)
{
	b->lacks = type_bits(b);
	b->caps_known = true;
}

void sfs_snap_caps(struct sfs_snap *s)
{
	s->pin_fds = false;
	for (unsigned i = 0; i < s->n; i++)
		s->pin_fds |= (s->b[i]->lacks & SFS_LACKS_INODE_HANDLES) != 0;
}

void sfs_branch_caps_probe_rw(struct sfs_branch *b, int work_fd)
{
	char a[64], bn[64], c[64];
	long pid = (long)getpid();

	snprintf(a, sizeof(a), "caps.%ld.a", pid);
	snprintf(bn, sizeof(bn), "caps.%ld.b", pid);
	snprintf(c, sizeof(c), "caps.%ld.c", pid);
	b->lacks |= probe_tmpfile(work_fd) | probe_renames(work_fd, a, bn, c) |
		    probe_trusted(work_fd, a);
}

static void add(char *buf, size_t len, const char *part)
{
	size_t used = strlen(buf);

	if (used < len)
		snprintf(buf + used, len - used, "%s%s", used ? "; " : "", part);
}

void sfs_branch_caps_line(const struct sfs_branch *b, double timeout, bool coherent, char *buf,
			  size_t len)
{
	char shared[160];

	buf[0] = '\0';
	if (b->lacks & SFS_LACKS_TMPFILE)
		add(buf, len, "no O_TMPFILE: copies are staged under a name in the work directory");
	if (b->lacks & SFS_LACKS_RENAME_FLAGS)
		add(buf, len, "no renameat2 flags: RENAME_NOREPLACE is kept by link and unlink");
	if (b->lacks & SFS_LACKS_WHITEOUT)
		add(buf, len, "no RENAME_WHITEOUT or RENAME_EXCHANGE: whiteouts are written as "
			      ".wh.NAME files, never 0:0 devices");
	if (b->lacks & SFS_LACKS_INODE_HANDLES)
		add(buf, len, "file handles name the FUSE client's nodes, not inodes: identities "
			      "are kept by inode number, origin records are not checked against "
			      "lower inodes, and node fds stay open");
	if (b->lacks & SFS_LACKS_TRUSTED)
		add(buf, len, "no trusted.* xattrs: renaming a lower directory, metadata-only "
			      "copies and origin records fail there with the filesystem's errno");
	/* without -o coherent a change made beside the view shows within
	 * that bound on any filesystem: only coherent's promise differs */
	if ((b->lacks & SFS_SHARED_FS) && coherent) {
		snprintf(shared, sizeof(shared), "shared with other hosts: -o coherent gets no "
			 "events of their changes, which show within timeout (%g s) + 1 s", timeout);
		add(buf, len, shared);
	}
}
