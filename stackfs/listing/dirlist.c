/* The merged listing of a directory stack: every layer read with
 * getdents64, each visible name kept once (the union's listing rule,
 * union/listing.c), sorted by cookie for readdir
 * (docs/union.md "Merged readdir").
 *
 * Built for directories of many thousand entries (issue 20: a listing
 * of 20,000 merged names cost 1.5 µs a name, most of it in malloc and
 * qsort): names are copied into shared chunks, not strdup'ed one by one;
 * each name is hashed once, its cookie serving as the key of the merge's
 * index of names seen; and long listings are radix-sorted by cookie. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/bio.h"
#include "stackfs/listing/dirlist.h"
#include "stackfs/listing/nameset.h"
#include "stackfs/ops/ops.h"
#include "union/names.h"
#include "union/resolve.h"

/* ---- the names ------------------------------------------------------- */

#define CHUNK_BYTES (64 * 1024)

struct sfs_dirchunk {
	struct sfs_dirchunk *next;
	size_t used, cap;
	char buf[];
};

/* A copy of name (len bytes with its NUL) in the listing's chunks. */
static const char *names_copy(struct sfs_dirlist *l, const char *name, size_t len)
{
	struct sfs_dirchunk *c = l->names;
	char *p;

	if (!c || c->cap - c->used < len) {
		size_t cap = len > CHUNK_BYTES ? len : CHUNK_BYTES;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->next = l->names;
		c->used = 0;
		c->cap = cap;
		l->names = c;
	}
	p = c->buf + c->used;
	memcpy(p, name, len);
	c->used += len;
	return p;
}

void sfs_dirlist_free(struct sfs_dirlist *l)
{
	while (l->names) {
		struct sfs_dirchunk *next = l->names->next;

		free(l->names);
		l->names = next;
	}
	free(l->e);
	memset(l, 0, sizeof(*l));
}

/* A collision between two names of one directory (about one in 2^40 for
 * a million names) would hide one of them from a resumed listing. */
off_t sfs_dirlist_cookie(const char *name)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 1099511628211ULL;
	h &= INT64_MAX;
	return (off_t)(h < 3 ? h + 3 : h);
}

/* Appends an entry whose cookie the caller has computed already. */
static int add_hashed(struct sfs_dirlist *l, const char *name, ino_t ino, unsigned char type,
		      off_t cookie)
{
	struct sfs_dirent *e;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 32;

		e = realloc(l->e, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		l->e = e;
		l->cap = cap;
	}
	e = &l->e[l->n];
	e->name = names_copy(l, name, strlen(name) + 1);
	if (!e->name)
		return -ENOMEM;
	e->ino = ino;
	e->type = type;
	e->cookie = cookie;
	l->n++;
	return 0;
}

int sfs_dirlist_add(struct sfs_dirlist *l, const char *name, ino_t ino, unsigned char type)
{
	return add_hashed(l, name, ino, type, sfs_dirlist_cookie(name));
}

/* ---- the order ------------------------------------------------------- */

static int by_cookie(const void *a, const void *b)
{
	const struct sfs_dirent *x = a, *y = b;

	return x->cookie < y->cookie ? -1 : x->cookie > y->cookie;
}

#define RADIX_BITS 11
#define RADIX_PASSES 6            /* 66 bits cover the 63 of a cookie */
#define RADIX_MIN 512             /* below this qsort is as fast */

typedef size_t radix_counts[RADIX_PASSES][1u << RADIX_BITS];

/* LSD radix sort of e[0..n) by cookie through tmp, with count zeroed; a
 * pass whose digit is the same in every entry moves nothing. Stable, so
 * equal cookies keep their order. */
static void radix_sort(struct sfs_dirent *e, struct sfs_dirent *tmp, size_t n,
		       radix_counts count)
{
	struct sfs_dirent *from = e, *to = tmp;

	for (size_t i = 0; i < n; i++) {
		for (unsigned p = 0; p < RADIX_PASSES; p++)
			count[p][((uint64_t)e[i].cookie >> (p * RADIX_BITS)) & ((1u << RADIX_BITS) - 1)]++;
	}
	for (unsigned p = 0; p < RADIX_PASSES; p++) {
		size_t sum = 0, *c = count[p];
		bool one_digit = false;

		for (size_t d = 0; d < (1u << RADIX_BITS); d++) {
			size_t k = c[d];

			one_digit = one_digit || k == n;
			c[d] = sum;
			sum += k;
		}
		if (one_digit)
			continue;
		for (size_t i = 0; i < n; i++) {
			uint64_t d = ((uint64_t)from[i].cookie >> (p * RADIX_BITS)) & ((1u << RADIX_BITS) - 1);

			to[c[d]++] = from[i];
		}
		struct sfs_dirent *t = from;

		from = to;
		to = t;
	}
	if (from != e)
		memcpy(e, from, n * sizeof(*e));
}

void sfs_dirlist_sort(struct sfs_dirlist *l, size_t from)
{
	size_t n = l->n > from ? l->n - from : 0;
	struct sfs_dirent *tmp = n >= RADIX_MIN ? malloc(n * sizeof(*tmp)) : NULL;
	size_t (*count)[1u << RADIX_BITS] = tmp ? calloc(RADIX_PASSES, sizeof(*count)) : NULL;

	if (count)
		radix_sort(l->e + from, tmp, n, count);
	else
		qsort(l->e + from, n, sizeof(l->e[0]), by_cookie);
	free(count);
	free(tmp);
}

/* ---- the merge ------------------------------------------------------- */

/* Names already in the listing, by cookie: open addressing over their
 * positions (position + 1; 0 is an empty slot), grown at half full. */
struct seen {
	uint32_t *slot;
	size_t cap, n;
};

/* What the merge of one listing needs as it goes down the layers. */
struct merge {
	struct sfs_dirlist *out;
	struct seen seen;
	struct sfs_nameset hidden;   /* whited out by layers above */
	struct sfs_nameset pending;  /* whiteouts of the current layer */
	const struct sfs_snap *snap;
	bool single;                 /* one layer: nothing to merge */
	struct sfs_unames *ix;       /* a name index filled on the way, or NULL */
	int ix_ret;                  /* its first failure (-E2BIG: too many) */
};

/* The slot of name (whose cookie is h): its entry's, or the empty one
 * where it would go. */
static size_t seen_slot(const struct merge *m, const char *name, off_t h)
{
	size_t mask = m->seen.cap - 1, i = (size_t)h & mask;

	for (; m->seen.slot[i]; i = (i + 1) & mask) {
		const struct sfs_dirent *e = &m->out->e[m->seen.slot[i] - 1];

		if (e->cookie == h && strcmp(e->name, name) == 0)
			break;
	}
	return i;
}

static bool seen_has(const struct merge *m, const char *name, off_t h)
{
	return m->seen.cap && m->seen.slot[seen_slot(m, name, h)];
}

/* Names are distinct in the index, so a grown copy only needs the first
 * empty slot from each cookie's home. */
static int seen_grow(struct merge *m)
{
	size_t cap = m->seen.cap ? m->seen.cap * 2 : 64;
	uint32_t *slot = calloc(cap, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < m->seen.cap; i++) {
		uint32_t pos = m->seen.slot[i];
		size_t j;

		if (!pos)
			continue;
		for (j = (size_t)m->out->e[pos - 1].cookie & (cap - 1); slot[j]; j = (j + 1) & (cap - 1))
			;
		slot[j] = pos;
	}
	free(m->seen.slot);
	m->seen.slot = slot;
	m->seen.cap = cap;
	return 0;
}

/* Records the listing's last entry as seen. */
static int seen_add_last(struct merge *m)
{
	const struct sfs_dirent *e = &m->out->e[m->out->n - 1];
	int ret = 0;

	if (m->out->n >= UINT32_MAX)
		return -EOVERFLOW;
	if ((m->seen.n + 1) * 2 > m->seen.cap)
		ret = seen_grow(m);
	if (ret == 0) {
		m->seen.slot[seen_slot(m, e->name, e->cookie)] = (uint32_t)m->out->n;
		m->seen.n++;
	}
	return ret;
}

/* The inode number the view shows for an entry of a rw branch with
 * branches below: a copy-up shows its origin's, as stat does. */
static uint64_t entry_ino(const struct merge *m, int dirfd, unsigned bidx,
			  const char *name, ino_t real_ino)
{
	uint64_t dev = m->snap->b[bidx]->dev, odev, oino;

	if (bidx + 1 < m->snap->n && m->snap->b[bidx]->mode == SFS_BRANCH_RW &&
	    sfs_origin_identity(m->snap, dirfd, name, &odev, &oino) > 0)
		return sfs_ino_of(m->snap, odev, oino);
	return sfs_ino_of(m->snap, dev, real_ino);
}

/* One name of a layer (the union's listing rule: union/listing.c): a
 * whiteout hides the name in the layers below (in a single layer it
 * hides nothing, but is not shown either); an entry shows unless a
 * layer above hid or showed it already. */
static int merge_entry(struct merge *m, int dirfd, unsigned bidx, unsigned dirflags,
		       const char *name, ino_t real_ino, unsigned char type)
{
	const char *hides;
	int kind = sfs_u_dirent(dirfd, name, type, dirflags, &hides);
	off_t h;
	int ret;

	if (kind < 0 || kind == SFS_U_SKIP)
		return kind < 0 ? kind : 0;
	if (kind == SFS_U_WHITEOUT)
		return m->single ? 0 : sfs_nameset_put(&m->pending, hides, 0);
	h = sfs_dirlist_cookie(name);
	if (!m->single && (sfs_nameset_get(&m->hidden, name) != (size_t)-1 ||
			   seen_has(m, name, h)))
		return 0;
	ret = add_hashed(m->out, name, entry_ino(m, dirfd, bidx, name, real_ino), type, h);
	return ret < 0 || m->single ? ret : seen_add_last(m);
}

static int read_layer(struct merge *m, const struct sfs_layer *l, bool is_root, bool take)
{
	char buf[65536];
	int fd = sfs_do_reopen_dir(l->fd, O_RDONLY);
	long nread;
	int ret = 0;

	unsigned dirflags = (is_root ? SFS_U_AT_ROOT : 0) |
			    (sfs_layer_xwhiteouts(m->snap, l) ? SFS_U_XWHITEOUTS : 0);

	if (fd < 0)
		return fd;
	while (ret == 0 && (nread = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long pos = 0; ret == 0 && pos < nread;) {
			struct dirent64 *d = (struct dirent64 *)(buf + pos);

			pos += d->d_reclen;
			ret = merge_entry(m, fd, l->bidx, dirflags, d->d_name, d->d_ino, d->d_type);
			if (ret == 0 && take && m->ix_ret == 0)
				m->ix_ret = sfs_unames_add(m->ix, d->d_name, l->bidx);
		}
	}
	if (ret == 0 && nread < 0)
		ret = -errno;
	close(fd);
	if (ret == 0 && take && m->ix_ret == 0)
		sfs_unames_cover(m->ix, l->bidx);
	return ret;
}

/* Moves the whiteouts of the layer just read into the hidden set: they
 * hide names of the layers below, never the layer's own entries. */
static int merge_next_layer(struct merge *m)
{
	for (size_t i = 0; i < m->pending.cap; i++) {
		if (m->pending.slot[i] &&
		    sfs_nameset_put(&m->hidden, m->pending.slot[i], 0) < 0)
			return -ENOMEM;
	}
	sfs_nameset_free(&m->pending);
	return 0;
}

int sfs_dirlist_read_ix(const struct sfs_stack *st, bool is_root, struct sfs_dirlist *out,
			struct sfs_unames *ix, const bool *take, int *ix_ret)
{
	struct merge m = { .out = out, .snap = st->snap, .single = st->n == 1, .ix = ix };
	int ret = 0;

	for (unsigned i = 0; i < st->n && ret == 0; i++) {
		ret = read_layer(&m, &st->l[i], is_root, ix && take[i]);
		if (ret == 0)
			ret = merge_next_layer(&m);
	}
	free(m.seen.slot);
	sfs_nameset_free(&m.hidden);
	sfs_nameset_free(&m.pending);
	if (ix_ret)
		*ix_ret = ret ? ret : m.ix_ret;
	return ret;
}

int sfs_dirlist_read(const struct sfs_stack *st, bool is_root, struct sfs_dirlist *out)
{
	return sfs_dirlist_read_ix(st, is_root, out, NULL, NULL, NULL);
}
