/* The OCI layer's private header: the state of one layer being written,
 * shared by the walk (ocilayer.c: which entries, in what order) and the
 * entry writer (ocientry.c: one entry's tar headers and data). */
#ifndef SFS_UNION_OCI_INT_H
#define SFS_UNION_OCI_INT_H

#include <stdbool.h>

#include "common/tar.h"
#include "union/model.h"
#include "union/ocilayer.h"

struct sfs_oci {
	struct sfs_ch_union *u;
	const struct sfs_oci_opts *o;
	struct sfs_oci_stats *stats;
	void *links;                   /* tsearch tree: (dev, ino) -> first name written */
	bool failed;                   /* the error was reported */
	struct sfs_tar tar;
};

/* ocientry.c */

/* The view's entry e at vpath ("/a/b", "/" for the root) as a tar entry:
 * its type, mode, owner, mtime, xattrs (not the union's private ones),
 * a symlink's target, a device's numbers, a file's data; a second name
 * of a file already written as a hard link to the first. dir is the
 * stack of its parent directory (a symlink's xattrs are read by name
 * from there), NULL for the root. A socket is left out (said). */
int sfs_oci_entry(struct sfs_oci *w, const char *vpath, const struct sfs_ch_stack *dir,
		  const char *name, const struct sfs_ch_stack *e);
/* The whiteout ".wh.NAME" of the entry name of directory vdir. */
int sfs_oci_whiteout(struct sfs_oci *w, const char *vdir, const char *name);
/* The opaque marker ".wh..wh..opq" of directory vdir. */
int sfs_oci_opaque(struct sfs_oci *w, const char *vdir);
/* Reports the error ret (-errno) of vpath once, and returns it. */
int sfs_oci_fail(struct sfs_oci *w, const char *vpath, int ret, const char *why);
void sfs_oci_links_free(struct sfs_oci *w);

#endif
