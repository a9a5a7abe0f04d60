/* A set of names (open addressing), for merging directory listings. */
#ifndef SFS_NAMESET_H
#define SFS_NAMESET_H

#include <stdbool.h>
#include <stddef.h>

struct sfs_nameset {
	char **slot;              /* owned copies */
	size_t *val;              /* a value per name (listing index) */
	size_t cap, n;
};

/* Returns the value stored for name, or (size_t)-1. */
size_t sfs_nameset_get(const struct sfs_nameset *s, const char *name);
/* Adds name with value (replacing the value if present). 0 or -ENOMEM. */
int sfs_nameset_put(struct sfs_nameset *s, const char *name, size_t val);
void sfs_nameset_free(struct sfs_nameset *s);

#endif
