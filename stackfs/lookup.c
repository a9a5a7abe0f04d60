/* Lookup across branches. The rules, in branch order from the highest:
 *  - a whiteout of the name (either format) ends the search: ENOENT;
 *  - the first entry found wins; a non-directory stands alone;
 *  - a directory merges with the directories of the same name below it,
 *    until one is opaque or a non-directory is met (which stays hidden).
 * Whiteouts are only looked for where there are branches below to hide. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "stackfs/stackfs.h"

bool sfs_name_reserved(const struct sfs_node *parent, const char *name)
{
	if (sfs_wh_reserved_name(name))
		return true;
	return parent == sfs_node_root() && strcmp(name, SFS_META_NAME) == 0;
}

/* State of one resolution, filled layer by layer. */
struct resolve {
	struct sfs_layer found[64];
	unsigned n;
	struct stat top, id;
};

static void resolve_drop(struct resolve *r)
{
	for (unsigned i = 0; i < r->n; i++)
		close(r->found[i].fd);
	r->n = 0;
}

/* Looks at one layer. Returns 1 to go on to the layer below, 0 to stop,
 * or -errno. */
static int resolve_layer(struct resolve *r, const struct sfs_layer *dl,
			 const char *name, bool below)
{
	struct stat st;
	int fd = sfs_path_fd(dl->fd, name), ret;

	if (fd == -ENOENT || fd == -ENOTDIR) {
		if (!below)
			return 0;
		ret = sfs_wh_has_aufs(dl->fd, name);
		return ret < 0 ? ret : !ret;
	}
	if (fd < 0)
		return fd;
	ret = sfs_fstat(fd, &st);
	if (ret < 0 || sfs_wh_is_chr_whiteout(&st) ||
	    (r->n > 0 && !S_ISDIR(st.st_mode)) ||
	    r->n == sizeof(r->found) / sizeof(r->found[0])) {
		close(fd);
		return ret < 0 ? ret : 0;
	}
	if (r->n == 0)
		r->top = st;
	r->id = st;
	r->found[r->n].fd = fd;
	r->found[r->n].bidx = dl->bidx;
	r->n++;
	if (!S_ISDIR(st.st_mode) || !below)
		return 0;
	ret = sfs_wh_is_opaque(fd);
	return ret < 0 ? ret : !ret;
}

/* A copied-up non-directory keeps the identity of its origin. Only an
 * entry with branches below it can be a copy. */
static int resolve_origin(struct resolve *r, const struct sfs_stack *dst)
{
	uint64_t dev, ino;
	int ret;

	if (r->n != 1 || S_ISDIR(r->top.st_mode) || S_ISLNK(r->top.st_mode) ||
	    r->found[0].bidx >= dst->l[dst->n - 1].bidx ||
	    dst->snap->b[r->found[0].bidx]->mode != SFS_BRANCH_RW)
		return 0;
	ret = sfs_origin_get(r->found[0].fd, &dev, &ino);
	if (ret == 1) {
		r->id.st_dev = (dev_t)dev;
		r->id.st_ino = (ino_t)ino;
	}
	return ret < 0 ? ret : 0;
}

int sfs_resolve(const struct sfs_stack *dst, const char *name,
		struct sfs_stack **out, struct stat *top, struct stat *idst)
{
	struct resolve r = { .n = 0 };
	struct sfs_stack *st;
	int ret = 1;

	for (unsigned i = 0; i < dst->n && ret > 0; i++)
		ret = resolve_layer(&r, &dst->l[i], name, i + 1 < dst->n);
	if (ret >= 0)
		ret = resolve_origin(&r, dst);
	if (ret < 0 || r.n == 0) {
		resolve_drop(&r);
		return ret < 0 ? ret : -ENOENT;
	}
	st = sfs_stack_new(dst->snap, r.n);
	if (!st) {
		resolve_drop(&r);
		return -ENOMEM;
	}
	memcpy(st->l, r.found, r.n * sizeof(r.found[0]));
	*top = r.top;
	*idst = r.id;
	*out = st;
	return 0;
}

int sfs_lookup_entry(struct sfs_node *parent, const char *name,
		     struct fuse_entry_param *e)
{
	struct sfs_stack *dst, *st;
	struct stat top, id;
	struct sfs_node *n;
	int ret;

	memset(e, 0, sizeof(*e));
	e->attr_timeout = sfs_timeout;
	e->entry_timeout = sfs_timeout;
	if (strlen(name) > 255)
		return -ENAMETOOLONG;
	if (sfs_name_reserved(parent, name))
		return -ENOENT;
	dst = sfs_node_stack(parent);
	ret = sfs_resolve(dst, name, &st, &top, &id);
	sfs_stack_put(dst);
	if (ret < 0)
		return ret;
	ret = sfs_node_lookup_insert(parent, name, st, &id, &n);
	if (ret < 0)
		return ret;
	st = sfs_node_stack(n);
	sfs_stat_fill(n, st, &top, &e->attr);
	sfs_stack_put(st);
	e->ino = sfs_node_id(n);
	e->generation = n->generation;
	return 0;
}

int sfs_resolve_below(const struct sfs_stack *dst, unsigned bidx, const char *name)
{
	struct resolve r = { .n = 0 };
	unsigned i = 0;
	int ret = 1;

	while (i < dst->n && dst->l[i].bidx <= bidx)
		i++;
	for (; i < dst->n && ret > 0; i++)
		ret = resolve_layer(&r, &dst->l[i], name, i + 1 < dst->n);
	ret = ret < 0 ? ret : r.n > 0;
	resolve_drop(&r);
	return ret;
}
