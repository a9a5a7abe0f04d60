/* Rebuilding a metadata directory that is not the daemon's user's alone
 * (fsck --repair of SFS_PR_META_UNTRUSTED). A new directory is made
 * beside it, owned by that user; the records (header, registry, inode
 * map) are copied in, to be checked there by the rest of fsck where no
 * one else can change them; index entries that carry an origin record
 * (a trusted.* attribute: only root can have written it) are linked in;
 * the two directories are swapped in one rename. The old one is kept
 * beside as .stackfs.untrusted.TIME, never deleted: it may hold a
 * commit journal or records someone needs, and it is not ours to judge.
 * Not kept: work/ (staging, empty at every mount), lowers (the next
 * mount writes it), the lock, a commit's journal or marker (a hostile
 * one must never be acted on). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/bio.h"
#include "whiteout/metadir.h"
#include "whiteout/ondisk.h"
#include "whiteout/origin.h"

/* Copies the regular file old/name to new/name, at most max bytes (a
 * longer one is copied cut, and the checks that follow judge it). Its
 * absence is not an error: the checks say what is missing. */
static int copy_record(int old_fd, int new_fd, const char *name, uint64_t max)
{
	int in = sfs_meta_openat(old_fd, name, O_RDONLY | O_NONBLOCK, 0), out = -1, ret = 0;
	char buf[65536];
	uint64_t done = 0;
	struct stat st;
	ssize_t n = 0;

	if (in < 0)
		return in == -ENOENT || in == -ELOOP ? 0 : in;
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode))
		goto out; /* not a file: the checks report it missing */
	out = sfs_meta_openat(new_fd, name, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (out < 0) {
		ret = out;
		goto out;
	}
	while (done < max && (n = read(in, buf, max - done < sizeof(buf) ?
					(size_t)(max - done) : sizeof(buf))) > 0) {
		if (write(out, buf, (size_t)n) != n) {
			ret = -errno;
			goto out;
		}
		done += (uint64_t)n;
	}
	if (n < 0 || fsync(out) < 0)
		ret = -errno;
out:
	if (out >= 0)
		close(out);
	close(in);
	return ret;
}

/* Links the old index entry fd into new_idx as name when it is a
 * non-directory (of any type: copy-up indexes each) with an origin
 * record. It is linked first, through its fd (the inode is fd's, never
 * one swapped in under the old name between a check and the link), and
 * judged in new_idx, where no one else can change the name: a symlink's
 * record is reached by a name only. */
static int keep_index_entry(int fd, int new_idx, const char *name)
{
	struct sfs_origin o;
	struct stat st;
	char p[32];
	int ret;

	if (fstat(fd, &st) < 0 || S_ISDIR(st.st_mode))
		return 0;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	if (sfs_do_linkat(AT_FDCWD, p, new_idx, name, AT_SYMLINK_FOLLOW) < 0)
		return -errno;
	/* a damaged record is kept too: fsck reports it, never drops it */
	ret = sfs_origin_get(new_idx, name, &o);
	if (ret == 1 || ret == -EUCLEAN)
		return 0;
	return sfs_do_unlinkat(new_idx, name, 0) < 0 ? -errno : 0;
}

/* Links into new_idx each entry of the old index that keep_index_entry
 * keeps. */
static int copy_index(int old_fd, int new_fd)
{
	int old_idx = sfs_meta_openat(old_fd, SFS_META_INDEX, O_RDONLY | O_DIRECTORY, 0);
	int new_idx = sfs_meta_openat(new_fd, SFS_META_INDEX, O_PATH | O_DIRECTORY, 0);
	DIR *d = old_idx < 0 ? NULL : fdopendir(old_idx);
	struct dirent *e;
	int ret = new_idx < 0 ? new_idx : 0;

	if (!d && old_idx >= 0)
		close(old_idx);
	while (d && ret == 0 && (e = readdir(d))) {
		int fd = sfs_meta_openat(dirfd(d), e->d_name, O_PATH, 0);

		if (fd < 0)
			continue;
		ret = keep_index_entry(fd, new_idx, e->d_name);
		close(fd);
	}
	if (d)
		closedir(d);
	if (new_idx >= 0)
		close(new_idx);
	return ret;
}

/* Makes the new directory beside .stackfs under a fresh name, and an
 * O_PATH fd of it checked to be the one made (the branch root may be
 * another user's, who could put their own under the name meanwhile). */
static int make_new(int at_fd, char name[64])
{
	struct sfs_distrust d;
	struct stat root, st;
	int fd;

	snprintf(name, 64, "%s.rebuild.%d.%ld", SFS_METADIR_NAME, (int)getpid(),
		 (long)time(NULL));
	if (sfs_do_mkdirat(at_fd, name, 0700) < 0)
		return -errno;
	fd = sfs_meta_openat(at_fd, name, O_PATH | O_DIRECTORY, 0);
	if (fd < 0)
		return fd;
	if (fstat(at_fd, &root) < 0 || fstat(fd, &st) < 0 ||
	    sfs_meta_judge(&st, root.st_dev, &d) < 0 || st.st_nlink != 2) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

static int fill_new(int old_fd, int new_fd)
{
	int ret = copy_record(old_fd, new_fd, SFS_META_HEADER, SFS_HEADER_READ_MAX);

	if (ret == 0)
		ret = copy_record(old_fd, new_fd, SFS_META_REGISTRY, SFS_REG_MAX_BYTES);
	if (ret == 0)
		ret = copy_record(old_fd, new_fd, SFS_META_INOMAP, SFS_INO_MAX_BYTES);
	if (ret == 0 && (sfs_do_mkdirat(new_fd, SFS_META_WORK, 0700) < 0 ||
			 sfs_do_mkdirat(new_fd, SFS_META_INDEX, 0700) < 0))
		ret = -errno;
	if (ret == 0)
		ret = copy_index(old_fd, new_fd);
	return ret == 0 ? sfs_meta_fsync_dir(new_fd) : ret;
}

/* Takes a half-made new directory away: its content through its fd,
 * then the name, which rmdir removes only if empty (never another
 * user's content that was put under the name meanwhile). */
static void unmake_new(int at_fd, int new_fd, const char *tmp)
{
	static const char *const files[] = {
		SFS_META_HEADER, SFS_META_REGISTRY, SFS_META_INOMAP,
	};

	sfs_meta_remove_tree(new_fd, SFS_META_INDEX);
	sfs_meta_remove_tree(new_fd, SFS_META_WORK);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		sfs_do_unlinkat(new_fd, files[i], 0);
	sfs_do_unlinkat(at_fd, tmp, AT_REMOVEDIR);
}

/* Swaps the new directory in and moves the old one (now at tmp) to a
 * name of its own; checks that .stackfs is the new one afterwards. */
static int swap_in(int at_fd, int new_fd, const char *tmp, char *kept, size_t keptlen)
{
	struct stat a, b;
	int fd, ret;

	if (sfs_do_renameat2(at_fd, tmp, at_fd, SFS_METADIR_NAME, RENAME_EXCHANGE) < 0)
		return -errno;
	snprintf(kept, keptlen, "%s.untrusted.%ld", SFS_METADIR_NAME, (long)time(NULL));
	if (sfs_do_renameat2(at_fd, tmp, at_fd, kept, RENAME_NOREPLACE) < 0)
		snprintf(kept, keptlen, "%s", tmp); /* it stays where it is */
	ret = sfs_meta_fsync_dir(at_fd);
	fd = sfs_meta_openat(at_fd, SFS_METADIR_NAME, O_PATH | O_DIRECTORY, 0);
	if (ret == 0 && fd < 0)
		ret = fd;
	if (ret == 0 && (fstat(fd, &a) < 0 || fstat(new_fd, &b) < 0 ||
			 a.st_ino != b.st_ino || a.st_dev != b.st_dev))
		ret = -ESTALE; /* someone swapped it again: fsck says so */
	if (fd >= 0)
		close(fd);
	return ret;
}

int sfs_meta_rebuild(int at_fd, char *kept, size_t keptlen)
{
	int old_fd = sfs_meta_openat(at_fd, SFS_METADIR_NAME, O_PATH | O_DIRECTORY, 0);
	char tmp[64];
	int new_fd = -1, ret;

	kept[0] = '\0';
	if (old_fd < 0)
		return old_fd;
	new_fd = make_new(at_fd, tmp);
	ret = new_fd < 0 ? new_fd : fill_new(old_fd, new_fd);
	if (ret == 0)
		ret = swap_in(at_fd, new_fd, tmp, kept, keptlen);
	else if (new_fd >= 0)
		unmake_new(at_fd, new_fd, tmp);
	if (new_fd >= 0)
		close(new_fd);
	close(old_fd);
	return ret;
}
