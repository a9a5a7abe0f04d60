/* The stable ids of a snapshot's branches and filesystems, kept in the
 * registry of its highest rw branch (whiteout/registry.c), so that inode
 * numbers and the seam's names stay the same across remounts and branch
 * changes; written once per snapshot. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/escape.h"
#include "stackfs/branches/branch.h"
#include "stackfs/stackfs.h"
#include "whiteout/metadir.h"

/* The stable ids of a branch: its filesystem's and its own, from the
 * registry of `reg` (the highest rw branch's metadata). */
static int branch_ids(struct sfs_branch *b, struct sfs_meta *reg)
{
	uint8_t handle[SFS_HANDLE_MAX];
	unsigned hbytes = sizeof(handle);
	int htype, ret = sfs_fs_uuid(b->root_fd, b->fs_uuid);

	if (ret == 0)
		ret = sfs_meta_fs_id(reg, b->fs_uuid, &b->fs_id);
	if (ret == 0)
		ret = sfs_fs_handle(b->root_fd, "", &htype, handle, &hbytes);
	if (ret == 0)
		ret = sfs_meta_branch_id(reg, b->fs_uuid, htype, handle, hbytes, &b->id);
	return ret;
}

/* Without a rw branch there is no registry: ids by order of appearance,
 * stable only as long as the branch list is. */
static void ids_by_order(struct sfs_snap *s)
{
	uint32_t nfs = 0;

	for (unsigned i = 0; i < s->n; i++) {
		struct sfs_branch *b = s->b[i];

		sfs_fs_uuid(b->root_fd, b->fs_uuid);
		b->id = i + 1;
		b->fs_id = 0;
		for (unsigned j = 0; j < i && !b->fs_id; j++)
			if (s->b[j]->dev == b->dev)
				b->fs_id = s->b[j]->fs_id;
		if (!b->fs_id)
			b->fs_id = ++nfs;
	}
}

int sfs_snap_ids(struct sfs_snap *s, char *err, size_t errlen)
{
	int ret = 0;

	if (s->top_rw < 0) {
		ids_by_order(s);
		return 0;
	}
	s->reg = s->b[s->top_rw]->meta;
	sfs_meta_reg_hold(s->reg);
	for (unsigned i = 0; ret == 0 && i < s->n; i++) {
		ret = branch_ids(s->b[i], s->reg);
		if (ret < 0)
			sfs_msg_fit(err, errlen, "branch #%u (\"%s\"): registering its id: %s",
				    i, s->b[i]->path, strerror(-ret));
	}
	if (sfs_meta_reg_release(s->reg) < 0 && ret == 0) {
		ret = -EIO;
		sfs_msg_fit(err, errlen, "branch #%d (\"%s\"): writing its registry of ids failed",
			    s->top_rw, s->b[s->top_rw]->path);
	}
	return ret;
}

/* Every branch below a rw branch gets a record in that branch's own
 * registry too (the highest rw branch's has them all already): fsck
 * checks that the directories its lowers names are those branches. */
void sfs_snap_register_below(struct sfs_snap *s)
{
	for (unsigned i = 0; i < s->n; i++) {
		if (!s->b[i]->meta || s->b[i]->meta == s->reg)
			continue;
		sfs_meta_reg_hold(s->b[i]->meta);
		for (unsigned j = i + 1; j < s->n; j++) {
			uint8_t handle[SFS_HANDLE_MAX];
			unsigned hbytes = sizeof(handle);
			uint32_t id;
			int htype;

			if (sfs_fs_handle(s->b[j]->root_fd, "", &htype, handle, &hbytes) == 0)
				sfs_meta_branch_id(s->b[i]->meta, s->b[j]->fs_uuid, htype, handle,
						   hbytes, &id);
		}
		sfs_meta_reg_release(s->b[i]->meta);
	}
}

/* Names the branch roots for the seam's traces and logs ("b3 /a/b"). */
void sfs_snap_register_roots(const struct sfs_snap *s)
{
	for (unsigned i = 0; i < s->n; i++)
		sfs_do_register(s->b[i]->id, s->b[i]->path);
}

/* The registry stays the one of the snapshot before while its branch is
 * kept (ids, and so inode numbers, do not move); else the new highest
 * rw branch's, and every id is taken again. */
int sfs_snap_change_ids(struct sfs_snap *s, const struct sfs_snap *old)
{
	bool kept = false;
	int ret = 0;

	for (unsigned i = 0; i < s->n; i++)
		kept |= old->reg && s->b[i]->meta == old->reg;
	s->reg = kept ? old->reg : s->top_rw >= 0 ? s->b[s->top_rw]->meta : NULL;
	if (!s->reg) {
		ids_by_order(s);
		return 0;
	}
	sfs_meta_reg_hold(s->reg);
	for (unsigned i = 0; ret == 0 && i < s->n; i++)
		if (!kept || !s->b[i]->id)
			ret = branch_ids(s->b[i], s->reg);
	if (sfs_meta_reg_release(s->reg) < 0 && ret == 0)
		ret = -EIO;
	return ret;
}
