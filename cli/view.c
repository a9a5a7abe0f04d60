/* Whether a directory is inside a stackfs view rather than a branch:
 * commands that work on branches (fsck) refuse a view, whose merged tree
 * hides the marks they check. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include "cli/cli.h"

#define SFS_FUSE_SUPER_MAGIC 0x65735546

/* The mount point of the line of mountinfo (in place, octal escapes
 * undone) when it is a fuse.stackfs mount of device maj:min, else NULL. */
static char *stackfs_point(char *line, unsigned maj, unsigned min)
{
	char *save = NULL, *tok, *point = NULL;
	unsigned ma, mi;
	int field = 0;
	bool sep = false;

	for (tok = strtok_r(line, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save), field++) {
		if (field == 2 && (sscanf(tok, "%u:%u", &ma, &mi) != 2 || ma != maj || mi != min))
			return NULL;
		if (field == 4)
			point = tok;
		if (field > 5 && sep)
			return point && !strcmp(tok, "fuse.stackfs") ? point : NULL;
		if (field > 5 && !strcmp(tok, "-"))
			sep = true;
	}
	return NULL;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo */
static void unescape(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

int sfs_cli_stackfs_view(int fd, char *mp, size_t mplen)
{
	struct statfs sf;
	struct stat st;
	char *line = NULL, *point;
	size_t cap = 0;
	FILE *f;
	int ret = 0;

	if (fstatfs(fd, &sf) < 0 || fstat(fd, &st) < 0)
		return -errno;
	/* a FUSE filesystem first: only then is mountinfo worth reading */
	if (sf.f_type != SFS_FUSE_SUPER_MAGIC)
		return 0;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	while (!ret && getline(&line, &cap, f) > 0) {
		point = stackfs_point(line, major(st.st_dev), minor(st.st_dev));
		if (!point)
			continue;
		unescape(point);
		snprintf(mp, mplen, "%s", point);
		ret = 1;
	}
	free(line);
	fclose(f);
	return ret;
}
