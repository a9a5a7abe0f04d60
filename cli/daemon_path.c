/* Finding the daemon binary: an override for tests, the build tree when
 * run from it, the install location otherwise. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

/* /proc/self/exe, whatever its length. */
static char *self_exe(void)
{
	size_t cap = 256;
	char *buf = NULL, *nb;
	ssize_t len;

	for (;;) {
		nb = realloc(buf, cap);
		if (!nb)
			goto out_free;
		buf = nb;
		len = readlink("/proc/self/exe", buf, cap);
		if (len < 0)
			goto out_free;
		if ((size_t)len < cap) {
			buf[len] = '\0';
			return buf;
		}
		cap *= 2;
	}
out_free:
	free(buf);
	return NULL;
}

char *sfs_daemon_path(void)
{
	const char *env = getenv("STACKFS_DAEMON");
	char *exe, *slash, *path = NULL;

	if (env && env[0])
		return strdup(env);
	exe = self_exe();
	if (exe && (slash = strrchr(exe, '/'))) {
		*slash = '\0';
		if (asprintf(&path, "%s/stackfsd", exe) < 0)
			path = NULL;
		else if (access(path, X_OK) < 0) {
			free(path);
			path = NULL;
		}
	}
	free(exe);
	return path ? path : strdup(SFS_LIBEXECDIR "/stackfsd");
}
