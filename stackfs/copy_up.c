/* Making entries exist in a rw branch. Directories are built in the
 * branch's staging directory with the union's mode, owner and times, and
 * renamed into place, so a crash never leaves a half-made directory. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stackfs/stackfs.h"

/* Serialises the creation of upper directories; it happens once per
 * directory and branch, so one lock costs nothing measurable. */
static pthread_mutex_t dir_lock = PTHREAD_MUTEX_INITIALIZER;

bool sfs_stack_writable(const struct sfs_stack *st)
{
	return st->snap->b[st->l[0].bidx]->mode == SFS_BRANCH_RW;
}

int sfs_node_writable(struct sfs_node *n, struct sfs_stack **out)
{
	struct sfs_stack *st = sfs_node_stack(n);

	if (!sfs_stack_writable(st)) {
		sfs_stack_put(st);
		return -EROFS;
	}
	*out = st;
	return 0;
}

void sfs_temp_name(char buf[64], const char *what)
{
	static atomic_ulong seq;

	snprintf(buf, 64, "%s.%d.%lu", what, (int)getpid(),
		 atomic_fetch_add(&seq, 1));
}

/* Builds a copy of directory `src` in the staging dir; returns its name. */
static int stage_dir(int workfd, const struct stat *src, char tmp[64])
{
	struct timespec tv[2] = { src->st_atim, src->st_mtim };
	int fd, ret = 0;

	sfs_temp_name(tmp, "dir");
	if (mkdirat(workfd, tmp, 0700) < 0)
		return -errno;
	fd = sfs_path_fd(workfd, tmp);
	if (fd < 0) {
		ret = fd;
		goto fail;
	}
	if (fchownat(fd, "", src->st_uid, src->st_gid, AT_EMPTY_PATH) < 0 ||
	    fchmodat(workfd, tmp, src->st_mode & 07777, 0) < 0 ||
	    utimensat(fd, "", tv, AT_EMPTY_PATH) < 0)
		ret = -errno;
	close(fd);
	if (ret == 0)
		return 0;
fail:
	unlinkat(workfd, tmp, AT_REMOVEDIR);
	return ret;
}

/* Moves a staged directory to parentfd/name, leaving the parent's times
 * as they were: the union's view of the parent has not changed. */
static int place_dir(int workfd, const char *tmp, int parentfd, const char *name)
{
	struct stat pst;
	struct timespec tv[2];
	int ret = sfs_fstat(parentfd, &pst);

	if (ret < 0)
		return ret;
	if (renameat2(workfd, tmp, parentfd, name, RENAME_NOREPLACE) < 0)
		return -errno;
	tv[0] = pst.st_atim;
	tv[1] = pst.st_mtim;
	utimensat(parentfd, "", tv, AT_EMPTY_PATH); /* cosmetic: no failure */
	return 0;
}

/* A stack like st with one more layer for branch bidx, in branch order. */
static struct sfs_stack *stack_with(const struct sfs_stack *st, unsigned bidx, int fd)
{
	struct sfs_stack *ns = sfs_stack_new(st->snap, st->n + 1);
	unsigned j = 0;

	if (!ns)
		return NULL;
	for (unsigned i = 0; i < st->n; i++) {
		if (j == i && st->l[i].bidx > bidx)
			ns->l[j++] = (struct sfs_layer){ fd, bidx };
		ns->l[j].bidx = st->l[i].bidx;
		ns->l[j++].fd = fcntl(st->l[i].fd, F_DUPFD_CLOEXEC, 0);
	}
	if (j == st->n)
		ns->l[j] = (struct sfs_layer){ fd, bidx };
	for (unsigned i = 0; i < ns->n; i++) {
		if (ns->l[i].fd < 0) {
			sfs_stack_put(ns);
			return NULL;
		}
	}
	return ns;
}

/* Creates dir's directory in branch bidx, whose parent has one there. */
static int make_upper_dir(struct sfs_node *dir, const struct sfs_stack *st,
			  const struct sfs_layer *pl, unsigned bidx,
			  const char *name)
{
	int workfd = st->snap->b[bidx]->work_fd;
	struct sfs_stack *ns;
	struct stat src;
	char tmp[64];
	int fd, ret = sfs_fstat(st->l[0].fd, &src);

	if (ret == 0)
		ret = stage_dir(workfd, &src, tmp);
	if (ret < 0)
		return ret;
	ret = place_dir(workfd, tmp, pl->fd, name);
	if (ret < 0) {
		unlinkat(workfd, tmp, AT_REMOVEDIR);
		if (ret != -EEXIST)
			return ret;
	}
	/* placed now, by us or by a racing request before we took the lock */
	fd = sfs_path_fd(pl->fd, name);
	if (fd < 0)
		return fd;
	ns = stack_with(st, bidx, fd);
	if (!ns) {
		close(fd);
		return -ENOMEM;
	}
	sfs_node_set_stack(dir, ns);
	return 0;
}

int sfs_dir_ensure_layer(struct sfs_node *dir, unsigned bidx,
			 struct sfs_stack **out)
{
	struct sfs_stack *st = sfs_node_stack(dir), *pst = NULL;
	struct sfs_node *parent;
	char *name;
	int ret;

	if (sfs_stack_in(st, bidx) || dir == sfs_node_root()) {
		*out = st;
		return sfs_stack_in(st, bidx) ? 0 : -ENOENT;
	}
	sfs_stack_put(st);
	pthread_mutex_lock(&dir->lock);
	parent = dir->parent;
	name = strdup(dir->name);
	if (parent)
		sfs_node_ref(parent);
	pthread_mutex_unlock(&dir->lock);
	ret = name ? sfs_dir_ensure_layer(parent, bidx, &pst) : -ENOMEM;
	if (ret == 0) {
		pthread_mutex_lock(&dir_lock);
		st = sfs_node_stack(dir);
		if (!sfs_stack_in(st, bidx))
			ret = make_upper_dir(dir, st, sfs_stack_in(pst, bidx), bidx, name);
		sfs_stack_put(st);
		pthread_mutex_unlock(&dir_lock);
	}
	if (pst)
		sfs_stack_put(pst);
	sfs_node_unref(parent);
	free(name);
	if (ret == 0)
		*out = sfs_node_stack(dir);
	return ret;
}
