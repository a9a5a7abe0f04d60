/* What a node shows the kernel: its attributes, filled from the real
 * entry of its stack, and how long the kernel may keep them. */
#include <errno.h>
#include <sys/stat.h>

#include "common/bio.h"
#include "stackfs/stackfs.h"

double sfs_timeout = 60.0;

void sfs_stat_fill(const struct sfs_node *n, const struct sfs_stack *st,
		   const struct stat *real, struct stat *out)
{
	struct stat data;

	*out = *real;
	out->st_ino = n->ino;
	sfs_idmap_stat(out);
	/* A merged directory's link count is not known without reading every
	 * layer; 1 tells find(1) and friends not to count on it. */
	if (S_ISDIR(real->st_mode) && st->n > 1)
		out->st_nlink = 1;
	else if (st->nlink)
		out->st_nlink = sfs_index_nlink(st->nlink, (uint32_t)real->st_nlink);
	/* a metacopy file holds no data itself: what its data takes */
	if (st->metacopy && st->n > 1 && sfs_do_fstat(st->l[1].fd, &data) == 0)
		out->st_blocks = data.st_blocks;
}

/* The kernel takes attributes of another type than its inode's for a
 * reused node id, and fails every later use of that inode with EIO. A
 * stack that came to hold another type is stale: said, never shown. */
static int same_type(const struct sfs_node *n, const struct stat *real)
{
	if ((real->st_mode & S_IFMT) == n->type)
		return 0;
	sfs_log(SFS_LOG_ERR, "node %llu: its stack holds an inode of type %o, the node's "
		"is %o: answered ESTALE", (unsigned long long)n->ino,
		(unsigned)(real->st_mode & S_IFMT) >> 12, (unsigned)n->type >> 12);
	return -ESTALE;
}

int sfs_node_getattr(struct sfs_node *n, struct stat *out)
{
	struct sfs_stack *st;
	struct stat real;
	int ret = sfs_node_stack_open(n, &st);

	if (ret == 0)
		ret = sfs_do_fstat(st->l[0].fd, &real);
	if (ret == 0)
		ret = same_type(n, &real);
	if (ret == 0)
		sfs_stat_fill(n, st, &real, out);
	sfs_stack_put(st);
	return ret;
}

void sfs_notify_attr(struct sfs_node *n)
{
	if (sfs_m.se)
		fuse_lowlevel_notify_inval_inode(sfs_m.se, sfs_node_id(n), -1, 0);
}
