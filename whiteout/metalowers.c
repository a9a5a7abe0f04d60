/* `lowers` (docs/format.md "lowers"): the branch list of the last mount, one line per
 * branch, "rw PATH" or "ro PATH", PATH absolute with "\\" and "\n"
 * escaped. Written at every mount and live branch change; read by fsck,
 * diff and commit. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "whiteout/ondisk.h"

#define LOWERS_MAX SFS_LOWERS_MAX

void sfs_lowers_free(struct sfs_lower *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i].path);
	free(v);
}

int sfs_lowers_parse(const char *buf, size_t len, struct sfs_lower **out,
		     size_t *nout, char *err, size_t errlen)
{
	struct sfs_lower *v = NULL;
	size_t n = 0, line = 0, pos = 0;
	int ret = 0;

	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t end, k = 0;
		struct sfs_lower *nv;
		char *path;

		line++;
		if (!nl) {
			snprintf(err, errlen, "%s/%s: line %zu: no end of line (truncated)",
				 SFS_METADIR_NAME, SFS_META_LOWERS, line);
			ret = -EUCLEAN;
			goto out;
		}
		end = (size_t)(nl - buf);
		if (end - pos < 4 || (memcmp(buf + pos, "rw ", 3) && memcmp(buf + pos, "ro ", 3)) ||
		    buf[pos + 3] != '/') {
			snprintf(err, errlen, "%s/%s: line %zu: not \"rw PATH\" or \"ro PATH\" with an absolute PATH",
				 SFS_METADIR_NAME, SFS_META_LOWERS, line);
			ret = -EUCLEAN;
			goto out;
		}
		path = malloc(end - pos);
		if (!path) {
			ret = -ENOMEM;
			goto out;
		}
		for (size_t i = pos + 3; i < end; i++) {
			char c = buf[i];

			if (c == '\\') {
				c = i + 1 < end ? buf[++i] : 0;
				c = c == 'n' ? '\n' : c == '\\' ? '\\' : 0;
			}
			if (!c) {
				free(path);
				snprintf(err, errlen, "%s/%s: line %zu: bad escape or NUL byte",
					 SFS_METADIR_NAME, SFS_META_LOWERS, line);
				ret = -EUCLEAN;
				goto out;
			}
			path[k++] = c;
		}
		path[k] = 0;
		nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv) {
			free(path);
			ret = -ENOMEM;
			goto out;
		}
		v = nv;
		v[n].path = path;
		v[n].rw = buf[pos + 1] == 'w';
		n++;
		pos = end + 1;
	}
	/* a mount writes at least its own branch: nothing is a file cut short */
	if (!n) {
		snprintf(err, errlen, "%s/%s: empty (truncated)", SFS_METADIR_NAME,
			 SFS_META_LOWERS);
		ret = -EUCLEAN;
		goto out;
	}
	*out = v;
	*nout = n;
	v = NULL;
out:
	sfs_lowers_free(v, n);
	return ret;
}

int sfs_meta_read_lowers(int dir_fd, struct sfs_lower **v, size_t *n,
			 char *err, size_t errlen)
{
	uint8_t *buf;
	size_t len;
	int ret = sfs_meta_read_file(dir_fd, SFS_META_LOWERS, LOWERS_MAX, &buf, &len);

	if (ret) {
		snprintf(err, errlen, "%s/%s: %s", SFS_METADIR_NAME, SFS_META_LOWERS,
			 ret == -EINVAL ? "not a regular file: corrupt" :
			 ret == -EFBIG ? "larger than any list of branches: corrupt" : strerror(-ret));
		return ret == -EINVAL || ret == -EFBIG ? -EUCLEAN : ret;
	}
	ret = sfs_lowers_parse((const char *)buf, len, v, n, err, errlen);
	free(buf);
	return ret;
}

int sfs_meta_write_lowers(struct sfs_meta *m, const struct sfs_lower *v,
			  size_t n)
{
	size_t cap = 1, len = 0;
	char *buf;
	int ret;

	for (size_t i = 0; i < n; i++) {
		if (v[i].path[0] != '/')
			return -EINVAL;
		cap += 4 + 2 * strlen(v[i].path);
	}
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		memcpy(buf + len, v[i].rw ? "rw " : "ro ", 3);
		len += 3;
		for (const char *p = v[i].path; *p; p++) {
			if (*p == '\\' || *p == '\n') {
				buf[len++] = '\\';
				buf[len++] = *p == '\n' ? 'n' : '\\';
			} else {
				buf[len++] = *p;
			}
		}
		buf[len++] = '\n';
	}
	ret = sfs_meta_write_file(m->dir_fd, SFS_META_LOWERS, buf, len);
	free(buf);
	return ret;
}
