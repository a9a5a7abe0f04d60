/* What fsck reads of a directory's entries before it judges them
 * (fsck_int.h, "fsck_facts.c"): each entry's statx, and whether its
 * xattr list holds a name the checks read. On a cold cache that reading
 * is most of a run's time, so the helper thread (fsck_helper.c) and the
 * walk's own thread read each chunk together, taking a few entries at a
 * time. Judging, reporting and repairing stay on the walk's thread, in
 * the listing's order, as before: the output and the order of repairs
 * do not depend on which thread read what. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/bio.h"
#include "whiteout/fsck_int.h"
#include "whiteout/whiteout.h"

/* Fewer entries than this are read by the caller alone: waking the
 * helper costs more than it saves. */
#define SHARE_MIN 48
#define BATCH 8 /* entries taken at once from a shared chunk */

/* The prefixes of every attribute the checks of an entry read: the
 * overlay marks (trusted.overlay.*, user.overlay.*) and the union's
 * records (trusted.stackfs.*, user.stackfs.*: origin, redirect,
 * metacopy, its kept times). */
static bool read_by_checks(const char *attr)
{
	static const char *const pre[] = {
		"trusted.overlay.", "user.overlay.", "trusted.stackfs.", "user.stackfs.",
	};

	for (size_t i = 0; i < sizeof(pre) / sizeof(pre[0]); i++)
		if (!strncmp(attr, pre[i], strlen(pre[i])))
			return true;
	return false;
}

/* False only when the list says it has none, so that the entries with
 * none (nearly all) cost one call, not a read per attribute (each would
 * answer ENODATA; trusted.* names, which a user's list leaves out, answer
 * a user ENODATA too). The name was just looked up by a statx that
 * refuses a mount point, so listing it by name crosses none. Anything
 * else (no such call, a long list) reads them all. */
bool sfs_fsck_may_carry_marks(int dfd, const char *name)
{
	char list[4096];
	ssize_t n = sfs_do_listxattrat(dfd, name, list, sizeof(list));

	if (n == -ENOTSUP)
		return false;           /* each read would answer the same */
	if (n < 0)
		return true;
	for (ssize_t i = 0; i < n; i += (ssize_t)strnlen(list + i, (size_t)(n - i)) + 1)
		if (read_by_checks(list + i))
			return true;
	return false;
}

/* Whether the inode of this entry is left unread: an aufs whiteout
 * .wh.X its directory lists as a regular file, unless thorough. Its
 * name is the whole record and it hides X whatever its inode holds;
 * all its inode could tell is data in it (WH_BAD_TYPE), which nothing
 * reads. Half of a branch's entries may be whiteouts (a deleted tree).
 * A .wh..wh. name (the opaque marker, fsck's and commit's own) is read:
 * there are few, and data in a marker is a finding (OPQ_MARKER_DATA). */
static bool unread(const char *typed, bool thorough)
{
	const char *name = typed + 1;

	return !thorough && (unsigned char)typed[0] == DT_REG && sfs_wh_reserved_name(name) &&
	       name[SFS_WH_PREFIX_LEN] && !sfs_wh_reserved_name(name + SFS_WH_PREFIX_LEN);
}

/* One entry (above). */
static void read_fact(int dfd, const char *typed, bool thorough, struct sfs_fsck_fact *fa)
{
	const char *name = typed + 1;

	fa->carry = false;
	if (unread(typed, thorough)) {
		fa->ret = SFS_FSCK_FACT_UNREAD;
		return;
	}
	fa->ret = sfs_do_statx_at(dfd, name, &fa->st);
	/* a 0:0 device is judged first as an overlay whiteout (fsck_tree.c
	 * lists a device-marked one itself) */
	if (fa->ret == 0 && !sfs_wh_reserved_name(name) && !sfs_wh_is_chr_whiteout(&fa->st))
		fa->carry = sfs_fsck_may_carry_marks(dfd, name);
}

static void work(struct sfs_fsck_facts *j)
{
	size_t i, end;

	while ((i = atomic_fetch_add(&j->next, BATCH)) < j->n) {
		end = i + BATCH < j->n ? i + BATCH : j->n;
		for (; i < end; i++)
			read_fact(j->dfd, j->names[i], j->thorough, &j->out[i]);
	}
}

static void facts_task(struct sfs_fsck_task *t)
{
	work((struct sfs_fsck_facts *)t);
}

void sfs_fsck_facts_begin(struct sfs_fsck_reader *r, struct sfs_fsck_facts *j)
{
	atomic_init(&j->next, 0);
	j->shared = r && j->n >= SHARE_MIN;
	j->task.fn = facts_task;
	if (j->shared)
		sfs_fsck_post(r, &j->task);
}

void sfs_fsck_facts_end(struct sfs_fsck_reader *r, struct sfs_fsck_facts *j)
{
	work(j);
	if (j->shared)
		sfs_fsck_wait(r, &j->task); /* the helper's last batch */
}
