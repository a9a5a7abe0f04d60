/* The options of kernel overlayfs and fuse-overlayfs that container
 * engines and their users pass
 * (docs/overlayfs.md "Options of overlayfs and fuse-overlayfs are taken").
 * Those with a meaning here are done by the parser
 * (opts.c) and idmap.c; a kernel tuning with no effect on what the view
 * shows (metacopy=, index=, xino=...) is accepted when its value is one
 * the kernel takes, and a note saying what stackfs does instead is logged
 * once the log is open: accepted silently, a user would believe it did
 * something. What stackfs cannot honour is refused by foreign.c's hints.
 *
 * Two forms of theirs do not survive libfuse's split of -o at commas,
 * and are joined first: a quoted value holding commas (SELinux's
 * context="u:r:t:s0:c1,c2") and fuse-overlayfs's mapping lists written
 * with commas between the triples (uidmapping=0:0:1,1:1:65534). */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/escape.h"
#include "common/optlist.h"
#include "stackfs/stackfs.h"

#define MAX_NOTES 32
#define NOTE_MAX 320

static char notes[MAX_NOTES][NOTE_MAX];
static unsigned nnotes;

/* The help of d on one line: its lines joined by spaces. */
static void one_line(const char *help, char *out, size_t len)
{
	size_t o = 0;

	for (; *help && o + 1 < len; help++)
		out[o++] = *help == '\n' ? ' ' : *help;
	while (o && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
}

void sfs_compat_note(const char *fmt, ...)
{
	va_list ap;

	if (nnotes == MAX_NOTES)
		return;
	va_start(ap, fmt);
	vsnprintf(notes[nnotes++], NOTE_MAX, fmt, ap);
	va_end(ap);
}

int sfs_compat_tuning(const char *arg)
{
	const struct sfs_optdef *d = sfs_optlist_find(arg);
	const char *eq = strchr(arg, '=');
	char help[NOTE_MAX - 64];

	if (!d)
		return -1;
	if ((eq && !sfs_optlist_value_ok(d, eq + 1)) || (!eq && d->arg)) {
		/* a value stackfs cannot honour (verity=require) says why */
		if (sfs_foreign_hint(arg, help, sizeof(help)))
			sfs_errmsg("bad option '%s': %s", arg, help);
		else
			sfs_errmsg("bad option '%s': %.*s takes %s", arg, (int)strcspn(arg, "="),
				   arg, d->arg ? d->arg : "no value");
		return -1;
	}
	one_line(d->help, help, sizeof(help));
	sfs_compat_note("option '%s' %s", arg, help);
	return 0;
}

void sfs_compat_reset(void)
{
	nnotes = 0;
}

void sfs_compat_log_notes(void)
{
	for (unsigned i = 0; i < nnotes; i++)
		sfs_log(SFS_LOG_INFO, "%s", notes[i]);
	nnotes = 0;
}

/* SELinux is on when its filesystem is mounted (what libselinux's
 * is_selinux_enabled looks at). */
static bool selinux_on(void)
{
	return access("/sys/fs/selinux/enforce", F_OK) == 0;
}

int sfs_compat_context(const char *arg)
{
	if (selinux_on())
		return 1;
	/* as mount(8) does without SELinux: the label is dropped */
	sfs_compat_note("option '%s' ignored: SELinux is not enabled", arg);
	return 0;
}

/* An element "N:N:N..." (digits and ':' only) continues a mapping list. */
static bool mapping_tail(const char *p, size_t len)
{
	return len && strspn(p, "0123456789:") >= len;
}

static bool is_mapping(const char *p)
{
	return !strncmp(p, "uidmapping=", 11) || !strncmp(p, "gidmapping=", 11);
}

/* Rewrites one -o value: a ',' inside double quotes becomes "\,", which
 * libfuse splits at no more and unescapes; a ',' before a mapping's
 * continuation becomes ':'. NULL without memory. */
static char *join(const char *v)
{
	char *out = malloc(strlen(v) * 2 + 1), *o = out;
	bool quoted = false, in_map = is_mapping(v);

	if (!out)
		return NULL;
	for (const char *p = v; *p; p++) {
		size_t next;

		if (*p == '\\' && p[1]) {
			*o++ = *p++;
			*o++ = *p;
			continue;
		}
		if (*p == '"')
			quoted = !quoted;
		if (*p != ',') {
			*o++ = *p;
			continue;
		}
		next = strcspn(p + 1, ",");
		if (quoted) {
			*o++ = '\\';
			*o++ = ',';
		} else if (in_map && mapping_tail(p + 1, next)) {
			*o++ = ':';
		} else {
			*o++ = ',';
			in_map = is_mapping(p + 1);
		}
	}
	*o = '\0';
	return out;
}

/* The -o value of argv[i] ("-o" "V" or "-oV"): V, and *attached. NULL
 * when argv[i] is no -o. */
static const char *o_value(const struct fuse_args *args, int i, bool *attached)
{
	const char *v = args->argv[i];

	*attached = !strncmp(v, "-o", 2) && v[2];
	if (*attached)
		return v + 2;
	return !strcmp(v, "-o") && i + 1 < args->argc ? args->argv[i + 1] : NULL;
}

/* args rebuilt (libfuse's own copies, freed by fuse_opt_free_args) with
 * each -o value joined; the old ones freed if they were libfuse's. */
static int rebuild(struct fuse_args *args)
{
	struct fuse_args na = FUSE_ARGS_INIT(0, NULL);
	int ret = 0;

	for (int i = 0; ret == 0 && i < args->argc; i++) {
		bool attached, ends = !strcmp(args->argv[i], "--");
		const char *v = ends ? NULL : o_value(args, i, &attached);
		char *j = v && strpbrk(v, "\",") ? join(v) : NULL, *a = NULL;

		if (v && strpbrk(v, "\",") && !j)
			ret = -ENOMEM;
		else if (j && attached && asprintf(&a, "-o%s", j) < 0)
			ret = -ENOMEM;
		else if (j && !attached)
			ret = fuse_opt_add_arg(&na, "-o") < 0 || fuse_opt_add_arg(&na, j) < 0 ?
			      -ENOMEM : 0;
		else
			ret = fuse_opt_add_arg(&na, a ? a : args->argv[i]) < 0 ? -ENOMEM : 0;
		if (j && !attached)
			i++; /* its value was added */
		free(a);
		free(j);
		for (; ends && ret == 0 && ++i < args->argc;)
			ret = fuse_opt_add_arg(&na, args->argv[i]) < 0 ? -ENOMEM : 0;
	}
	if (ret < 0) {
		fuse_opt_free_args(&na);
		return ret;
	}
	fuse_opt_free_args(args);
	*args = na;
	return 0;
}

int sfs_compat_join(struct fuse_args *args)
{
	/* most command lines have nothing to join: left as they are */
	for (int i = 1; i < args->argc && strcmp(args->argv[i], "--"); i++) {
		bool attached;
		const char *v = o_value(args, i, &attached);

		if (v && strpbrk(v, "\",")) {
			char *j = join(v);
			bool same = j && !strcmp(j, v);

			free(j);
			if (!same)
				return rebuild(args);
		}
	}
	return 0;
}
