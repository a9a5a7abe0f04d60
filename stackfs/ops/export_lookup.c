/* nfs_export=on: LOOKUP(id, ".") and LOOKUP(id, ".."), what the kernel
 * sends to decode a file handle of a node it no longer caches and to
 * find a directory's parent (NFS, open_by_handle_at).
 *
 * An id is hostile input (an NFS client may forge a handle): it is only
 * ever answered with a node the union's own lookup rules give for a name
 * of the view; anything else is ESTALE.
 * Order: a node still cached; the name a forgotten node had
 * (export_names.c), looked up again; a directory opened by its inode
 * number and looked up by its path in its branch. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stackfs/ops/ops.h"

/* How many forgotten parents one decoding may look up again. */
#define MAX_HOPS 64

static int find(uint64_t id, unsigned depth, struct sfs_node **out);

/* The entry of node n, which carries one kernel lookup for the reply. */
static int entry_of(struct sfs_node *n, struct fuse_entry_param *e)
{
	int ret;

	memset(e, 0, sizeof(*e));
	ret = sfs_node_getattr(n, &e->attr);
	if (ret < 0) {
		sfs_node_forget(n, 1);
		return ret;
	}
	e->ino = sfs_node_id(n);
	e->generation = n->generation;
	e->attr_timeout = sfs_timeout;
	e->entry_timeout = sfs_timeout;
	return 0;
}

/* The name lookup of the view gave node e->ino, counted: id's or not. */
static int named(const struct fuse_entry_param *e, uint64_t id, struct sfs_node **out)
{
	struct sfs_node *n = sfs_node_of(e->ino);

	if (e->ino != id) {
		sfs_node_forget(n, 1);
		return -ESTALE;
	}
	*out = n;
	return 0;
}

/* The last name of a forgotten node, looked up again in its parent. */
static int by_name(uint64_t id, unsigned depth, struct sfs_node **out)
{
	char name[NAME_MAX + 1];
	struct fuse_entry_param e;
	struct sfs_node *p;
	uint64_t pid;
	int ret = sfs_xnames_get(id, &pid, name);

	if (ret == 0)
		ret = find(pid, depth + 1, &p);
	if (ret < 0)
		return ret;
	ret = sfs_lookup_entry(p, name, &e);
	sfs_node_forget(p, 1); /* a child found holds its parent */
	if (ret == -ENOTDIR || ret == -ENAMETOOLONG)
		ret = -ESTALE; /* a record naming a file as a parent */
	return ret < 0 ? ret : named(&e, id, out);
}

/* The union's lookup of path (from a branch root, "/a/b"), counted. */
static int walk(char *path, uint64_t id, struct sfs_node **out)
{
	struct sfs_node *cur = sfs_node_root(), *next = NULL;
	struct fuse_entry_param e;
	char *save, *c;
	int ret = 0;

	for (c = strtok_r(path, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		ret = sfs_lookup_entry(cur, c, &e);
		next = ret == 0 ? sfs_node_of(e.ino) : NULL;
		sfs_node_forget(cur, 1); /* the root: nothing */
		if (ret < 0)
			return ret;
		cur = next;
	}
	e.ino = sfs_node_id(cur);
	return named(&e, id, out);
}

/* A directory: its path in whichever branch of its filesystem holds it
 * (the kernel keeps a directory's dentry connected), looked up through
 * the view. A name the view hides (a whiteout, an opaque or a moved
 * directory above) gives another node or none: ESTALE. */
static int dir_by_path(const struct sfs_snap *s, int fd, const struct stat *st,
		       uint64_t id, struct sfs_node **out)
{
	char *path = malloc(PATH_MAX);
	int ret = path ? -ESTALE : -ENOMEM;

	for (unsigned i = 0; path && ret == -ESTALE && i < s->n; i++) {
		struct sfs_layer l = { .fd = fd, .bidx = i };

		if (s->b[i]->dev == st->st_dev)
			ret = sfs_layer_path(s, &l, path, PATH_MAX);
	}
	if (ret == 0)
		ret = walk(path, id, out);
	free(path);
	return ret;
}

/* The inode of id opened by its number on its filesystem. Allocated
 * numbers (inomap) are not decoded. A non-directory has no path: its
 * inode alone cannot tell whether the view shows it (a whiteout or a
 * copy above it, a branch removed from the mount, a file outside the
 * branch on the same filesystem), so it is never served so: ESTALE, and
 * an NFS client looks its name up again. */
static int by_handle(uint64_t id, struct sfs_node **out)
{
	uint32_t fs_id = (uint32_t)(id >> 56);
	struct sfs_snap *s = sfs_snap_current();
	int fd = -ESTALE, ret;
	struct stat st;

	for (unsigned i = 0; fs_id && fs_id < 0xFF && i < s->n; i++) {
		if (s->b[i]->fs_id == fs_id) {
			fd = sfs_export_open_ino(s->b[i], id & SFS_INO_ALLOC_MASK);
			break;
		}
	}
	ret = fd < 0 ? fd : sfs_do_fstat(fd, &st);
	if (ret == 0)
		ret = S_ISDIR(st.st_mode) ? dir_by_path(s, fd, &st, id, out) : -ESTALE;
	if (fd >= 0)
		close(fd);
	sfs_snap_put(s);
	return ret;
}

/* Node id, with one kernel lookup counted. */
static int find(uint64_t id, unsigned depth, struct sfs_node **out)
{
	struct sfs_node *n = id ? sfs_node_by_id(id) : NULL;
	int ret;

	if (n) {
		*out = n;
		return 0;
	}
	if (id == 0 || depth > MAX_HOPS)
		return -ESTALE;
	ret = by_name(id, depth, out);
	if (ret == 0 || (ret != -ENOENT && ret != -ESTALE))
		return ret;
	return by_handle(id, out);
}

int sfs_export_lookup_self(uint64_t id, struct fuse_entry_param *e)
{
	struct sfs_node *n;
	int ret = find(id, 0, &n);

	return ret < 0 ? ret : entry_of(n, e);
}

int sfs_export_lookup_parent(uint64_t id, struct fuse_entry_param *e)
{
	struct sfs_node *n = sfs_node_of(id), *p;

	if (!n)
		return -ESTALE;
	pthread_mutex_lock(&n->lock);
	p = n->parent ? n->parent : sfs_node_root();
	sfs_node_ref(p);
	pthread_mutex_unlock(&n->lock);
	sfs_node_count(p);
	sfs_node_unref(p);
	return entry_of(p, e);
}

bool sfs_export_dot(const char *name)
{
	return sfs_export && name[0] == '.' &&
	       (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

void sfs_export_op_lookup(fuse_req_t req, fuse_ino_t id, const char *name)
{
	struct fuse_entry_param e;
	int ret = name[1] ? sfs_export_lookup_parent(id, &e) :
			    sfs_export_lookup_self(id, &e);

	/* ENOENT would be a negative entry of "." itself */
	if (ret < 0)
		sfs_reply_err(req, ret == -ENOENT ? ESTALE : -ret);
	else if (fuse_reply_entry(req, &e) == -ENOENT)
		sfs_node_forget(sfs_node_of(e.ino), 1);
}
