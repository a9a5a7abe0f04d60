/* Parsing the BRANCHES spec: "DIR[=MODE]:DIR[=MODE]...", highest priority
 * first. Linked by both the daemon and the command, so it only parses:
 * whether the directories exist is the validator's business (branch.c). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "union/branch_spec.h"
#include "common/escape.h"

/* A message is one line even when a path holds a newline or an escape
 * sequence, and keeps its reason behind a path of any length (escape.h). */
static void spec_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sfs_msg_vfit(err, errlen, fmt, ap);
	va_end(ap);
}

/* Number of elements: one more than the unescaped ':' separators. */
static size_t count_elements(const char *spec)
{
	size_t n = 1;

	for (const char *p = spec; *p; p++) {
		if (*p == '\\' && p[1])
			p++;
		else if (*p == ':')
			n++;
	}
	return n;
}

/* Parses the element starting at *pp (branch number idx, 1-based) up to
 * the next unescaped ':' or the end, leaving *pp on that separator. */
static int parse_element(const char **pp, size_t idx, struct sfs_branch_spec *out,
			 char *err, size_t errlen)
{
	const char *p = *pp;
	/* the element unescaped is never longer than the rest of the spec */
	char *path = malloc(strlen(p) + 1), *mode = NULL;
	char *dst = path;
	int ret = -EINVAL;

	if (!path)
		return -ENOMEM;
	for (; *p && *p != ':'; p++) {
		if (*p == '\\') {
			if (!p[1]) {
				spec_err(err, errlen, "branch %zu: trailing backslash", idx);
				goto out_free;
			}
			*dst++ = *++p;
		} else if (*p == '=') {
			if (mode) {
				*dst = '\0';
				spec_err(err, errlen,
					 "branch %zu (\"%s=%s\"): second '=' (write a '=' in a path as '\\=')",
					 idx, path, mode);
				goto out_free;
			}
			/* the path ends here; the rest goes to the mode */
			*dst++ = '\0';
			mode = dst;
		} else {
			*dst++ = *p;
		}
	}
	*dst = '\0';

	if (!path[0]) {
		spec_err(err, errlen, "branch %zu: empty path", idx);
		goto out_free;
	}
	if (!mode)
		out->mode = idx == 1 ? SFS_BRANCH_RW : SFS_BRANCH_RO;
	else if (!strcmp(mode, "rw"))
		out->mode = SFS_BRANCH_RW;
	else if (!strcmp(mode, "ro"))
		out->mode = SFS_BRANCH_RO;
	else if (!strcmp(mode, "data"))
		out->mode = SFS_BRANCH_DATA;
	else if (!mode[0]) {
		spec_err(err, errlen, "branch %zu (\"%s\"): empty mode after '=' (rw, ro or data)",
			 idx, path);
		goto out_free;
	} else {
		spec_err(err, errlen, "branch %zu (\"%s\"): unknown mode \"%s\" (rw, ro or data)",
			 idx, path, mode);
		goto out_free;
	}
	/* the mode, if any, was stored after the path: give the slack back */
	out->path = realloc(path, strlen(path) + 1) ?: path;
	*pp = p;
	return 0;

out_free:
	free(path);
	return ret;
}

const char *sfs_branch_mode_name(enum sfs_branch_mode m)
{
	return m == SFS_BRANCH_RW ? "rw" : m == SFS_BRANCH_DATA ? "data" : "ro";
}

/* Data-only branches hold no names of the view: below every other, and
 * never all of them. */
static int check_data_order(const struct sfs_branch_spec *v, size_t n, char *err,
			    size_t errlen)
{
	for (size_t i = 1; i < n; i++) {
		if (v[i - 1].mode == SFS_BRANCH_DATA && v[i].mode != SFS_BRANCH_DATA) {
			spec_err(err, errlen, "branch %zu (\"%s\"): below the data-only branch %zu "
				 "(data-only branches come last)", i + 1, v[i].path, i);
			return -EINVAL;
		}
	}
	if (v[0].mode == SFS_BRANCH_DATA) {
		spec_err(err, errlen, "branch 1 (\"%s\"): a data-only branch cannot be the "
			 "highest (it shows nothing of its own)", v[0].path);
		return -EINVAL;
	}
	return 0;
}

int sfs_branch_spec_parse(const char *spec, struct sfs_branch_spec **out,
			  size_t *n, char *err, size_t errlen)
{
	struct sfs_branch_spec *v;
	const char *p = spec;
	size_t cnt, i;
	int ret;

	if (!spec || !spec[0]) {
		spec_err(err, errlen, "empty branch list");
		return -EINVAL;
	}
	cnt = count_elements(spec);
	v = calloc(cnt, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < cnt; i++) {
		ret = parse_element(&p, i + 1, &v[i], err, errlen);
		if (ret) {
			if (ret == -ENOMEM)
				spec_err(err, errlen, "%s", strerror(ENOMEM));
			goto out_free;
		}
		if (*p == ':')
			p++;
	}
	ret = check_data_order(v, cnt, err, errlen);
	if (ret)
		goto out_free;
	*out = v;
	*n = cnt;
	return 0;

out_free:
	sfs_branch_spec_free(v, i);
	return ret;
}

void sfs_branch_spec_free(struct sfs_branch_spec *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i].path);
	free(v);
}
