/* Recovery of an interrupted commit from its journal (journal.h), for
 * `stackfs commit` (a re-run, or its own error path) and `stackfs fsck
 * --repair` of either branch.
 *
 * Phase MOVING: RW is as it was, so the union is whole again as soon as
 * every lower directory the commit moved is back at the path RW's
 * redirect names; everything else the commit did to LOWER is hidden by
 * RW (a copy of an RW entry under it, a deletion under a whiteout or an
 * opaque directory). Each step is found from the tree, not from a
 * progress record: a directory is, by its inode, at its old path (never
 * moved), in the staging directory, or at its new path; every rename is
 * one step, so a recovery killed at any point is recovered again.
 * Phase APPLIED: LOWER is complete and synced, RW is (re-)emptied. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bio.h"
#include "whiteout/journal.h"
#include "whiteout/ondisk.h"
#include "whiteout/whiteout.h"
#include "xattr/xattr.h"

int sfs_jnl_open_path(int root_fd, const char *path)
{
	char *copy = strdup(path), *save = NULL, *comp;
	int fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 0);

	if (!copy) {
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	for (comp = strtok_r(copy, "/", &save); fd >= 0 && comp; comp = strtok_r(NULL, "/", &save)) {
		int next = sfs_do_open(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);

		close(fd);
		fd = next;
	}
	free(copy);
	return fd < 0 ? -errno : fd;
}

/* The parent directory of path (an O_PATH fd) and its last component. */
static int open_parent(int root_fd, const char *path, char base[256])
{
	const char *slash = strrchr(path, '/');
	char *dir = strndup(path, (size_t)(slash - path));
	int fd;

	if (!dir)
		return -ENOMEM;
	snprintf(base, 256, "%s", slash + 1);
	fd = sfs_jnl_open_path(root_fd, dir[0] ? dir : "/");
	free(dir);
	return fd;
}

/* Whether dirfd/name is the directory with inode ino. */
static bool is_dir_ino(int dirfd, const char *name, uint64_t ino)
{
	struct stat st;

	return sfs_do_stat(dirfd, name, &st) == 0 && S_ISDIR(st.st_mode) &&
	       (uint64_t)st.st_ino == ino;
}

static bool at_path(int root_fd, const char *path, uint64_t ino)
{
	char base[256];
	int pfd = open_parent(root_fd, path, base);
	bool r = pfd >= 0 && is_dir_ino(pfd, base, ino);

	if (pfd >= 0)
		close(pfd);
	return r;
}

/* The parent of path as a directory: a missing component is made, a
 * non-directory there (only a copy the commit put there: the old tree
 * had directories on this path) is replaced. */
static int make_parent(int root_fd, const char *path, char base[256])
{
	char *copy = strdup(path), *save = NULL, *comp, *next;
	int fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 0), ret = 0;

	if (!copy || fd < 0) {
		free(copy);
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	comp = strtok_r(copy, "/", &save);
	while (comp && (next = strtok_r(NULL, "/", &save))) {
		int nfd = sfs_do_open(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);

		if (nfd < 0 && (errno == ENOTDIR || errno == ELOOP))
			ret = sfs_do_unlinkat(fd, comp, 0) < 0 ? -errno : 0;
		if (nfd < 0 && ret == 0 && (errno == ENOENT || errno == ENOTDIR || errno == ELOOP)) {
			if (sfs_do_mkdirat(fd, comp, 0755) < 0 && errno != EEXIST)
				ret = -errno;
			else
				nfd = sfs_do_open(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
		}
		if (nfd < 0 && ret == 0)
			ret = -errno;
		close(fd);
		fd = nfd;
		if (ret < 0)
			break;
		comp = next;
	}
	if (ret == 0)
		snprintf(base, 256, "%s", comp ? comp : "");
	free(copy);
	if (ret < 0) {
		if (fd >= 0)
			close(fd);
		return ret;
	}
	return fd;
}

static int depth(const char *p)
{
	int n = 0;

	for (; *p; p++)
		n += *p == '/';
	return n;
}

/* Pass 1: every moved directory at its new path goes back into the
 * staging directory, deepest new path first (a directory moved into one
 * moved itself is reached before its parent leaves). */
static int unplace(int lower_fd, int stage_fd, const struct sfs_journal *j, char *err,
		   size_t errlen)
{
	int maxd = 0;

	for (size_t i = 0; i < j->nmv; i++)
		if (depth(j->mv[i].dst) > maxd)
			maxd = depth(j->mv[i].dst);
	for (int dd = maxd; dd > 0; dd--) {
		for (size_t i = 0; i < j->nmv; i++) {
			const struct sfs_jnl_move *m = &j->mv[i];
			char name[24], base[256];
			int pfd, ret = 0;

			snprintf(name, sizeof(name), "%zu", i);
			if (depth(m->dst) != dd || is_dir_ino(stage_fd, name, m->ino) ||
			    at_path(lower_fd, m->src, m->ino))
				continue;
			pfd = open_parent(lower_fd, m->dst, base);
			if (pfd >= 0 && is_dir_ino(pfd, base, m->ino) &&
			    sfs_do_renameat2(pfd, base, stage_fd, name, RENAME_NOREPLACE) < 0)
				ret = -errno;
			if (pfd >= 0)
				close(pfd);
			if (ret < 0) {
				snprintf(err, errlen, "moving %s back into the staging directory: %s",
					 m->dst, strerror(-ret));
				return ret;
			}
		}
	}
	return 0;
}

/* The aufs whiteout ".wh.NAME" beside a directory put back at path goes.
 * The commit makes one in LOWER for RW's whiteout of the old name when a
 * branch below LOWER still shows that name (the moved directory's old
 * place; docs/diff-commit.md "diff and commit": Branches below LOWER), after the directory has left for
 * the staging directory. Left beside the directory put back, the pair
 * would mean (union/resolve.c, the OCI rule) "this directory is LOWER's
 * alone, as if opaque": the lower branches' part of the directory that
 * RW's redirect merges would be hidden (a power cut or a kill mid-commit
 * lost dB/a3 of the explorer's workload that way). The commit refuses a
 * pair that was there before it (commit_journal.c), so any such
 * whiteout is the commit's own. Done also when the directory is found
 * back already (a recovery stopped between the rename and this). */
static int unwhite(int lower_fd, const char *path)
{
	char base[256];
	int pfd = open_parent(lower_fd, path, base), ret;

	if (pfd < 0)
		return pfd;
	ret = sfs_wh_remove_aufs(pfd, base);
	close(pfd);
	return ret < 0 ? ret : 0;
}

/* Pass 2: every staged directory back to its old path, shallowest first
 * (a parent before what goes into it). What the commit put at that path
 * meanwhile is a copy of RW's entry there (RW still has it): it goes; so
 * does the commit's whiteout of the name beside it (unwhite). */
static int unstage(int lower_fd, int stage_fd, const struct sfs_journal *j, char *err,
		   size_t errlen)
{
	int maxd = 0;

	for (size_t i = 0; i < j->nmv; i++)
		if (depth(j->mv[i].src) > maxd)
			maxd = depth(j->mv[i].src);
	for (int dd = 1; dd <= maxd; dd++) {
		for (size_t i = 0; i < j->nmv; i++) {
			const struct sfs_jnl_move *m = &j->mv[i];
			char name[24], base[256];
			int pfd, ret = 0;

			snprintf(name, sizeof(name), "%zu", i);
			if (depth(m->src) != dd)
				continue;
			if (!is_dir_ino(stage_fd, name, m->ino)) {
				if (at_path(lower_fd, m->src, m->ino)) {
					ret = unwhite(lower_fd, m->src);
					if (ret < 0) {
						snprintf(err, errlen, "removing the whiteout beside %s: %s",
							 m->src, strerror(-ret));
						return ret;
					}
					continue;
				}
				snprintf(err, errlen, "the lower directory moved from %s is neither "
					 "in the staging directory, at %s nor back", m->src, m->dst);
				return -EUCLEAN;
			}
			pfd = make_parent(lower_fd, m->src, base);
			ret = pfd < 0 ? pfd : 0;
			if (ret == 0 && sfs_do_renameat2(stage_fd, name, pfd, base, RENAME_NOREPLACE) < 0) {
				ret = -errno;
				if (ret == -EEXIST || ret == -ENOTEMPTY) {
					ret = sfs_meta_remove_tree(pfd, base);
					if (ret == 0 && sfs_do_renameat2(stage_fd, name, pfd, base,
								  RENAME_NOREPLACE) < 0)
						ret = -errno;
				}
			}
			if (ret == 0) {
				ret = sfs_wh_remove_aufs(pfd, base);
				ret = ret < 0 ? ret : 0;
			}
			if (pfd >= 0)
				close(pfd);
			if (ret < 0) {
				snprintf(err, errlen, "moving a lower directory back to %s: %s", m->src,
					 strerror(-ret));
				return ret;
			}
		}
	}
	return 0;
}

int sfs_jnl_syncfs(int fd)
{
	int sfd = sfs_do_open(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	int ret = sfd < 0 || syncfs(sfd) < 0 ? -errno : 0;

	if (sfd >= 0)
		close(sfd);
	return ret;
}

static int roll_back(int lower_fd, const struct sfs_journal *j, char *err, size_t errlen)
{
	int stage_fd, ret;

	stage_fd = sfs_do_open(lower_fd, j->stage, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (stage_fd < 0 && errno == ENOENT && j->nmv) {
		/* removed after the last directory was placed */
		if (sfs_do_mkdirat(lower_fd, j->stage, 0700) < 0 && errno != EEXIST) {
			snprintf(err, errlen, "making %s: %s", j->stage, strerror(errno));
			return -errno;
		}
		stage_fd = sfs_do_open(lower_fd, j->stage, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	}
	if (stage_fd < 0) {
		ret = -errno;
		if (ret == -ENOENT)
			return sfs_jnl_syncfs(lower_fd); /* no move: nothing to put back */
		snprintf(err, errlen, "%s: %s", j->stage, strerror(-ret));
		return ret;
	}
	ret = unplace(lower_fd, stage_fd, j, err, errlen);
	if (ret == 0)
		ret = unstage(lower_fd, stage_fd, j, err, errlen);
	close(stage_fd);
	if (ret == 0 && sfs_do_unlinkat(lower_fd, j->stage, AT_REMOVEDIR) < 0 && errno != ENOENT) {
		ret = -errno;
		snprintf(err, errlen, "removing the staging directory %s: %s", j->stage,
			 strerror(-ret));
	}
	if (ret == 0 && (ret = sfs_jnl_syncfs(lower_fd)) < 0)
		snprintf(err, errlen, "syncfs: %s", strerror(-ret));
	return ret;
}

/* ------------------------------------------------------------ emptying */

/* Removes every entry of dir (but .stackfs when root). */
static int empty_dir(int dir, bool root)
{
	int fd = sfs_do_open(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0), ret = 0;
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *e;

	if (!d) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		return ret;
	}
	while (ret == 0 && (errno = 0, e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    (root && !strcmp(e->d_name, SFS_METADIR_NAME)))
			continue;
		ret = sfs_meta_remove_tree(dir, e->d_name);
	}
	if (ret == 0 && errno)
		ret = -errno;
	closedir(d);
	return ret;
}

int sfs_jnl_empty_rw(const struct sfs_jnl_branch *rw, const struct timespec times[2],
		     char *err, size_t errlen)
{
	static const char *const subs[] = { SFS_META_WORK, SFS_META_INDEX };
	int rw_fd = rw->root_fd, ret = empty_dir(rw_fd, true);

	for (size_t i = 0; ret == 0 && i < 2; i++) {
		char p[64];
		int fd;

		snprintf(p, sizeof(p), "/%s/%s", SFS_METADIR_NAME, subs[i]);
		fd = sfs_jnl_open_path(rw->at_fd, p);
		if (fd == -ENOENT || fd == -ENOTDIR)
			continue;
		ret = fd < 0 ? fd : empty_dir(fd, false);
		if (fd >= 0)
			close(fd);
	}
	if (ret == 0)
		ret = sfs_dirmark_clear(rw_fd);
	if (ret == 0 && sfs_do_utimensat(rw_fd, ".", times, 0) < 0)
		ret = -errno;
	if (ret < 0)
		snprintf(err, errlen, "emptying the rw branch: %s", strerror(-ret));
	return ret;
}

/* ------------------------------------------------------------ the end */

/* The marker in LOWER's .stackfs (at_fd holds it), and the .stackfs if
 * the commit made it for the marker, the times of the directory that
 * held it kept. */
static int remove_marker(int at_fd, const struct sfs_journal *j)
{
	int meta = sfs_meta_dir_open(at_fd, NULL, 0), ret = 0;
	struct timespec tv[2];
	struct stat st;

	if (meta == -ENOENT)
		return 0;
	if (meta < 0)
		return meta;
	if (sfs_do_unlinkat(meta, SFS_META_COMMIT_FROM, 0) < 0 && errno != ENOENT)
		ret = -errno;
	if (ret == 0)
		ret = sfs_meta_fsync_dir(meta);
	close(meta);
	if (ret < 0 || !(j->flags & SFS_JNL_F_MADE_META))
		return ret;
	/* the .stackfs made for the marker goes, what held it keeping its times */
	if (fstat(at_fd, &st) < 0)
		return -errno;
	tv[0] = st.st_atim;
	tv[1] = st.st_mtim;
	if (sfs_do_unlinkat(at_fd, SFS_METADIR_NAME, AT_REMOVEDIR) < 0 && errno != ENOENT &&
	    errno != ENOTEMPTY && errno != EEXIST)
		return -errno;
	if (sfs_do_utimensat(at_fd, ".", tv, 0) < 0)
		return -errno;
	return sfs_meta_fsync_dir(at_fd);
}

/* The journal goes first: it is what decides; a marker left after it is
 * stale, and commit and fsck of either branch remove it. */
int sfs_jnl_finish(const struct sfs_jnl_branch *rw, const struct sfs_jnl_branch *lower,
		   const struct sfs_journal *j)
{
	int ret = 0, meta;

	if (rw) {
		meta = sfs_meta_dir_open(rw->at_fd, NULL, 0);
		if (meta < 0)
			return meta;
		if (sfs_do_unlinkat(meta, SFS_META_COMMIT, 0) < 0 && errno != ENOENT)
			ret = -errno;
		if (ret == 0)
			ret = sfs_meta_fsync_dir(meta);
		close(meta);
	}
	if (ret == 0 && lower)
		ret = remove_marker(lower->at_fd, j);
	return ret;
}

/* Removes what the interrupted commit was building in LOWER: names
 * .wh..wh.sfs-commit.PID.N (hidden by the union, never part of it), in
 * every directory, not entering other filesystems nor following
 * symlinks. */
static int remove_tmps(int dir_fd, const char *prefix, size_t plen, int depth)
{
	int fd = sfs_meta_openat(dir_fd, ".", O_RDONLY | O_DIRECTORY, 0), ret = 0;
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return fd < 0 ? fd : -errno;
	}
	while (ret == 0 && (errno = 0, e = readdir(d))) {
		int sub;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    (depth == 0 && !strcmp(e->d_name, SFS_METADIR_NAME)))
			continue;
		if (!strncmp(e->d_name, prefix, plen)) {
			ret = sfs_meta_remove_tree(fd, e->d_name);
			continue;
		}
		if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN)
			continue;
		sub = sfs_meta_openat(fd, e->d_name, O_PATH | O_DIRECTORY, 0);
		if (sub < 0)
			continue; /* not a directory, a symlink, another filesystem */
		ret = depth < 4096 ? remove_tmps(sub, prefix, plen, depth + 1) : 0;
		close(sub);
	}
	if (ret == 0 && errno)
		ret = -errno;
	closedir(d);
	return ret;
}

int sfs_jnl_recover(const struct sfs_jnl_branch *rw, const struct sfs_jnl_branch *lower,
		    const struct sfs_journal *j, const char **done, char *err,
		    size_t errlen)
{
	int ret = 0, lower_fd = lower->root_fd;

	if (!sfs_jnl_same_branch(lower_fd, j->lower_fs_uuid, j->lower_ino)) {
		snprintf(err, errlen, "%s is not the lower branch the journal names (another "
			 "filesystem or directory)", j->lower);
		return -ESTALE;
	}
	if (j->phase == SFS_JNL_MOVING) {
		*done = "rolled back (the moved lower directories were put back)";
		ret = roll_back(lower_fd, j, err, errlen);
	} else {
		*done = "completed (the lower branch holds the changes)";
		if (!(j->flags & SFS_JNL_F_KEEP)) {
			ret = sfs_jnl_empty_rw(rw, j->rw_times, err, errlen);
			if (ret == 0 && (ret = sfs_jnl_syncfs(rw->root_fd)) < 0)
				snprintf(err, errlen, "syncfs: %s", strerror(-ret));
		}
	}
	if (ret == 0) {
		char prefix[64];

		snprintf(prefix, sizeof(prefix), SFS_JNL_TMP_PREFIX "%u.", j->pid);
		ret = remove_tmps(lower_fd, prefix, strlen(prefix), 0);
		if (ret < 0)
			snprintf(err, errlen, "removing the commit's temporary copies: %s",
				 strerror(-ret));
	}
	if (ret == 0 && (ret = sfs_jnl_finish(rw, lower, j)) < 0)
		snprintf(err, errlen, "removing the journal: %s", strerror(-ret));
	return ret;
}
