/* Counters of a live mount, for `stackfs status`: cheap relaxed atomics
 * bumped on the paths they count. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "stackfs/stackfs.h"

struct sfs_stats sfs_stats;

void sfs_stats_error(int err)
{
	if (err > 0 && err < SFS_STATS_ERRNO_MAX)
		atomic_fetch_add_explicit(&sfs_stats.errors[err], 1, memory_order_relaxed);
}

int sfs_reply_err(fuse_req_t req, int err)
{
	sfs_stats_error(err);
	return fuse_reply_err(req, err);
}

static uint64_t get(atomic_uint_fast64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

/* "key\tvalue" lines; errors as "error.NAME\tcount". */
int sfs_stats_format(char *buf, size_t len)
{
	size_t pos = 0;
	int n = snprintf(buf, len,
			 "lookups\t%llu\ncopyups\t%llu\ncopyup_bytes\t%llu\n"
			 "whiteouts\t%llu\nopen_files\t%llu\npassthrough_opens\t%llu\n"
			 "node_fds\t%llu\nnode_fd_budget\t%u\nnode_fd_reopens\t%llu\n",
			 (unsigned long long)get(&sfs_stats.lookups),
			 (unsigned long long)get(&sfs_stats.copyups),
			 (unsigned long long)get(&sfs_stats.copyup_bytes),
			 (unsigned long long)get(&sfs_stats.whiteouts),
			 (unsigned long long)get(&sfs_stats.open_files),
			 (unsigned long long)get(&sfs_stats.passthrough_opens),
			 (unsigned long long)sfs_fdcache_count(),
			 sfs_fdcache_budget() == ~0u ? 0 : sfs_fdcache_budget(),
			 (unsigned long long)get(&sfs_stats.node_fd_reopens));

	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	pos = (size_t)n;
	for (int e = 1; e < SFS_STATS_ERRNO_MAX; e++) {
		uint64_t c = get(&sfs_stats.errors[e]);
		const char *name = strerrorname_np(e);

		if (!c || !name)
			continue;
		n = snprintf(buf + pos, len - pos, "error.%s\t%llu\n", name, (unsigned long long)c);
		if (n < 0 || (size_t)n >= len - pos)
			return -ENOSPC;
		pos += (size_t)n;
	}
	return (int)pos;
}
