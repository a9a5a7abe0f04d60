/* The BRANCHES syntax, "DIR[=rw|ro|data]:DIR[=rw|ro|data]...", highest
 * priority first: what the daemon mounts and what diff takes
 * (branch_spec.c). A data-only branch (kernel overlayfs's "lowerdir=a::b")
 * shows nothing of its own: it only holds the data of metacopy files of
 * the branches above, reached by their absolute redirects; data-only
 * branches come below every other. */
#ifndef SFS_UNION_BRANCH_SPEC_H
#define SFS_UNION_BRANCH_SPEC_H

#include <stddef.h>

enum sfs_branch_mode { SFS_BRANCH_RO = 0, SFS_BRANCH_RW = 1, SFS_BRANCH_DATA = 2 };

/* "rw", "ro" or "data". */
const char *sfs_branch_mode_name(enum sfs_branch_mode m);

/* One element of a parsed "DIR[=MODE]:DIR[=MODE]..." spec. */
struct sfs_branch_spec {
	char *path;               /* unescaped, as written (maybe relative) */
	enum sfs_branch_mode mode;
	/* the workdir holding its metadata dir (an overlay-style mount's
	 * workdir=, set by the daemon for the upper), or NULL: not given */
	const char *workdir;
};

/* Parses a BRANCHES spec. ':' separates branches, '=' introduces a mode
 * (rw|ro|data), '\' escapes the next character. The first branch defaults to
 * rw, the others to ro. Returns 0, or -EINVAL with a one-line message in
 * err. On success *out holds *n specs to free with sfs_branch_spec_free. */
int sfs_branch_spec_parse(const char *spec, struct sfs_branch_spec **out,
			  size_t *n, char *err, size_t errlen);
void sfs_branch_spec_free(struct sfs_branch_spec *v, size_t n);

/* branch_file.c: the BRANCHES spec of a branches file (-o branches=FILE:
 * a branch a line, as an element of BRANCHES but ':' unescaped; empty
 * and '#' lines skipped) in *spec, to free. 0, or -errno with a one-line
 * message in err (a file missing, not regular, over 16 MiB, with a NUL
 * byte or no branch). */
int sfs_branch_file_spec(const char *path, char **spec, char *err, size_t errlen);

#endif
