/* A rw branch's changes as an OCI image layer (ocilayer.c, ocientry.c):
 * what `stackfs diff --format=oci` writes. The list sfs_changes_list made
 * (changes.h) becomes the tar changeset of the OCI image spec's layer
 * format: applied over the union of the branches below, it gives the
 * view. Added and changed entries with their content and attributes,
 * deletions as ".wh.NAME", a replaced directory as ".wh..wh..opq" and
 * all of its content, a moved one as a whiteout and all of its content,
 * the parents of every entry before it. See docs/diff-commit.md "The OCI layer". */
#ifndef SFS_UNION_OCILAYER_H
#define SFS_UNION_OCILAYER_H

#include <stdint.h>

#include "union/changes.h"

struct sfs_oci_opts {
	/* called for each entry written (may be NULL) */
	void (*progress)(void *arg, uint64_t entries, const char *path);
	/* an entry no tar archive can hold (a socket): left out, said here;
	 * the layer goes on (may be NULL) */
	void (*left_out)(void *arg, const char *path, const char *why);
	/* once, for the error that stopped the layer: the path in the view
	 * (NULL when writing the archive failed), the errno, and what
	 * happened when the errno alone does not say it (else NULL) */
	void (*error)(void *arg, const char *path, int err, const char *why);
	void *arg;
};

struct sfs_oci_stats {
	uint64_t entries;              /* tar entries of the view's entries */
	uint64_t markers;              /* whiteouts and opaque markers */
	uint64_t left_out;             /* sockets */
	uint64_t bytes;                /* the archive's size */
};

/* Writes the layer of the changes c of the union u (the ones
 * sfs_changes_list gave for it) to fd, ending it as a whole archive only
 * when everything was written. 0, or the -errno of the first error, the
 * stream then left visibly incomplete (sfs_tar_abandon). */
int sfs_oci_write(struct sfs_ch_union *u, const struct sfs_changes *c, int fd,
		  const struct sfs_oci_opts *o, struct sfs_oci_stats *stats);

#endif
