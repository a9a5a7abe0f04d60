/* Counters of a live mount, for `stackfs status`: cheap relaxed atomics
 * bumped on the paths they count. The errnos a request is answered with
 * are counted apart as *answers* (what callers ask and expect to be told:
 * no such name, no such attribute, exists, permission denied...) and
 * *failures* (everything else: the branch's I/O errors, no space, out of
 * memory...), and only failures are logged: getxattr probes alone answer
 * thousands of ENODATA, which status showed as if they were errors. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "stackfs/stackfs.h"

struct sfs_stats sfs_stats;

/* The errnos that answer a question rather than report a failure. The
 * caller asked for a name, an attribute or a change the view's state (or
 * its permissions, or a read-only union) does not allow; nothing went
 * wrong in the mount. ESTALE is the create that met a file the kernel
 * thought absent (docs/union.md "A create that meets an existing file answers ESTALE":
 * the VFS retries it); EXDEV a rename mv(1) does
 * by copying, or a mount point inside a branch (logged on its own). */
bool sfs_stats_is_answer(int err)
{
	switch (err) {
	case ENOENT: case ENODATA: case ERANGE: case EEXIST: case ENOTEMPTY:
	case ENOTDIR: case EISDIR: case ENAMETOOLONG: case ENOSYS: case EOPNOTSUPP:
	case ENOTTY: case EXDEV: case EACCES: case EPERM: case EROFS: case ESTALE:
		return true;
	default:
		return false;
	}
}

/* op is the handler's name (__func__): "sfs_op_write_buf" */
int sfs_reply_err_op(fuse_req_t req, int err, const char *op)
{
	if (err > 0 && err < SFS_STATS_ERRNO_MAX) {
		bool answer = sfs_stats_is_answer(err);

		atomic_fetch_add_explicit(answer ? &sfs_stats.answers[err] : &sfs_stats.errors[err],
					  1, memory_order_relaxed);
		if (!strncmp(op, "sfs_op_", 7))
			op += 7;
		if (!answer)
			sfs_log_failure(strcmp(op, "write_buf") ? op : "write", err);
	}
	return fuse_reply_err(req, err);
}

static uint64_t get(atomic_uint_fast64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

static uint64_t sum(atomic_uint_fast64_t *c)
{
	uint64_t t = 0;

	for (int e = 1; e < SFS_STATS_ERRNO_MAX; e++)
		t += get(&c[e]);
	return t;
}

/* "PREFIX.NAME\tcount" for each errno of c[] counted. Length or -ENOSPC. */
static int format_errnos(char *buf, size_t len, const char *prefix, atomic_uint_fast64_t *c)
{
	size_t pos = 0;

	for (int e = 1; e < SFS_STATS_ERRNO_MAX; e++) {
		uint64_t v = get(&c[e]);
		const char *name = strerrorname_np(e);
		int n;

		if (!v || !name)
			continue;
		n = snprintf(buf + pos, len - pos, "%s.%s\t%llu\n", prefix, name,
			     (unsigned long long)v);
		if (n < 0 || (size_t)n >= len - pos)
			return -ENOSPC;
		pos += (size_t)n;
	}
	return (int)pos;
}

/* "key\tvalue" lines; the totals of failures and answers, then failures
 * as "error.NAME\tcount", answers as "answer.NAME\tcount". */
int sfs_stats_format(char *buf, size_t len, uint64_t node_fds, unsigned fd_budget)
{
	size_t pos = 0;
	int n = snprintf(buf, len,
			 "lookups\t%llu\ncopyups\t%llu\ncopyup_bytes\t%llu\n"
			 "whiteouts\t%llu\nopen_files\t%llu\npassthrough_opens\t%llu\n"
			 "uring_requests\t%llu\n"
			 "node_fds\t%llu\nnode_fd_budget\t%u\nnode_fd_reopens\t%llu\n"
			 "listed_lookups\t%llu\ndirs_read_ahead\t%llu\n"
			 "dir_opens\t%llu\nlistings_read\t%llu\n"
			 "name_index_reads\t%llu\nname_index_listed\t%llu\n"
			 "failures\t%llu\nanswers\t%llu\n",
			 (unsigned long long)get(&sfs_stats.lookups),
			 (unsigned long long)get(&sfs_stats.copyups),
			 (unsigned long long)get(&sfs_stats.copyup_bytes),
			 (unsigned long long)get(&sfs_stats.whiteouts),
			 (unsigned long long)get(&sfs_stats.open_files),
			 (unsigned long long)get(&sfs_stats.passthrough_opens),
			 (unsigned long long)get(&sfs_stats.uring_requests),
			 (unsigned long long)node_fds, fd_budget,
			 (unsigned long long)get(&sfs_stats.node_fd_reopens),
			 (unsigned long long)get(&sfs_stats.listed_lookups),
			 (unsigned long long)get(&sfs_stats.dirs_read_ahead),
			 (unsigned long long)get(&sfs_stats.dir_opens),
			 (unsigned long long)get(&sfs_stats.listings_read),
			 (unsigned long long)get(&sfs_stats.name_index_reads),
			 (unsigned long long)get(&sfs_stats.name_index_listed),
			 (unsigned long long)sum(sfs_stats.errors),
			 (unsigned long long)sum(sfs_stats.answers));

	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	pos = (size_t)n;
	n = format_errnos(buf + pos, len - pos, "error", sfs_stats.errors);
	if (n < 0)
		return n;
	pos += (size_t)n;
	n = format_errnos(buf + pos, len - pos, "answer", sfs_stats.answers);
	if (n < 0)
		return n;
	return (int)(pos + (size_t)n);
}
