/* The BRANCHES syntax, "DIR[=rw|ro]:DIR[=rw|ro]...", highest priority
 * first: what the daemon mounts and what diff takes (branch_spec.c). */
#ifndef SFS_UNION_BRANCH_SPEC_H
#define SFS_UNION_BRANCH_SPEC_H

#include <stddef.h>

enum sfs_branch_mode { SFS_BRANCH_RO = 0, SFS_BRANCH_RW = 1 };

/* One element of a parsed "DIR[=MODE]:DIR[=MODE]..." spec. */
struct sfs_branch_spec {
	char *path;               /* unescaped, as written (maybe relative) */
	enum sfs_branch_mode mode;
};

/* Parses a BRANCHES spec. ':' separates branches, '=' introduces a mode
 * (rw|ro), '\' escapes the next character. The first branch defaults to
 * rw, the others to ro. Returns 0, or -EINVAL with a one-line message in
 * err. On success *out holds *n specs to free with sfs_branch_spec_free. */
int sfs_branch_spec_parse(const char *spec, struct sfs_branch_spec **out,
			  size_t *n, char *err, size_t errlen);
void sfs_branch_spec_free(struct sfs_branch_spec *v, size_t n);

#endif
