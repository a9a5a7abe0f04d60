/* The LOOKUP and FORGET requests: a name resolved and made a node
 * (nodes/resolve.c), "." and ".." of nfs_export=on decoded by
 * export_lookup.c; the kernel's references given back. */
#include <errno.h>

#include "stackfs/ops/ops.h"

void sfs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	int ret;

	if (sfs_export_dot(name)) {
		sfs_export_op_lookup(req, parent, name);
		return;
	}
	ret = sfs_lookup_entry(sfs_node_of(parent), name, &e);

	if (ret == -ENOENT) /* a negative entry the kernel may cache */
		fuse_reply_entry(req, &e);
	else if (ret < 0)
		sfs_reply_err(req, -ret);
	else if (fuse_reply_entry(req, &e) == -ENOENT)
		sfs_node_forget(sfs_node_of(e.ino), 1);
}

void sfs_op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	sfs_node_forget(sfs_node_of(ino), nlookup);
	fuse_reply_none(req);
}

void sfs_op_forget_multi(fuse_req_t req, size_t count,
			 struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		sfs_node_forget(sfs_node_of(forgets[i].ino), forgets[i].nlookup);
	fuse_reply_none(req);
}
