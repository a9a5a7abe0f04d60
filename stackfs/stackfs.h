/* stackfs daemon: private header. Prototypes are grouped by the file that
 * defines them. Functions return 0 or a negative errno. */
#ifndef SFS_STACKFS_H
#define SFS_STACKFS_H

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>

#include "common/bio.h"
#include "stackfs/branches/branch.h"
#include "stackfs/listing/dirlist.h"
#include "union/copy.h"

/* ---- opts.c: mount options ------------------------------------------ */
#include "whiteout/origin.h"
#include "whiteout/whiteout.h"

/* Where the daemon logs (-o log=): by default syslog in the background
 * and stderr in the foreground. */
enum sfs_log_to { SFS_LOG_TO_DEFAULT, SFS_LOG_TO_SYSLOG, SFS_LOG_TO_STDERR, SFS_LOG_TO_FILE };
/* What the union makes durable, and when (-o sync=, sync.c). */
enum sfs_sync_mode {
	SFS_SYNC_NORMAL,          /* copies before they are placed; fsync covers the path */
	SFS_SYNC_ALWAYS,          /* every change before the reply */
	SFS_SYNC_VOLATILE,        /* nothing; a flag refuses the branch after a crash */
};

struct sfs_opts {
	char *branches;           /* the BRANCHES argument */
	char *mountpoint;
	char *workdir;            /* overlay-style workdir= with upperdir=: where
				   * the upper's metadata dir is, or NULL */
	int foreground;
	int debug;
	double timeout;           /* entry and attribute cache timeout, s */
	enum sfs_sync_mode sync;
	int accept_unclean;       /* mount a branch a volatile mount left */
	int upgrade;              /* upgrade an older metadata format */
	int writeback;            /* the kernel's writeback cache */
	int nopassthrough;        /* serve all data by requests */
	int nouring;              /* -o nouring: requests through /dev/fuse only */
	int uring_asked;          /* -o uring: say why when it cannot be */
	int trace;                /* log every call into a branch */
	int coherent;             /* watch the ro branches (coherent.c) */
	int noacl;                /* no POSIX ACLs in the view */
	int noxattrs;             /* no xattrs at all in the view */
	int userxattr;            /* overlayfs's userxattr (accepted, whiteout=wh) */
	int metacopy_off;         /* -o metacopy=off: copy-up copies whole files */
	int nfs_export;           /* persistent node ids and generations (export.c) */
	unsigned readahead_kb;    /* readahead window; 0: the kernel's */
	enum sfs_whiteout_style whiteout;
	enum sfs_log_to log_to;   /* -o log= */
	char *log_file;           /* its FILE */
	int show_help;
	int show_version;
};

/* Parses argv into opts and leaves the FUSE options in *fargs. An option
 * that is not in sfs_optlist (optlist.c) is refused, named, -EINVAL. */
int sfs_opts_parse(struct fuse_args *args, struct sfs_opts *o);
/* Frees what sfs_opts_parse allocated in o. */
void sfs_opts_free(struct sfs_opts *o);
/* arg is "name=value", the second value of name that says otherwise:
 * refused with a message (-1). */
int sfs_opt_conflict(const char *arg);

/* ---- opts_branches.c: the branches by options, not BRANCHES --------- */
/* Takes a lowerdir=, lowerdir+=, upperdir=, workdir= or branches= option
 * (its sfs_optkey): 0, or -1 with a message. */
int sfs_optb_take(const char *arg, int key);
/* After parsing: the branches those options give, as o->branches, and
 * the operands sorted out (the mount point alone, or SOURCE MOUNTPOINT).
 * 0, or -1 with a message. Frees what was taken. */
int sfs_optb_finish(struct sfs_opts *o);
/* Forgets what was taken (a failed parse). */
void sfs_optb_reset(void);
void sfs_opts_usage(const char *prog);

/* ---- node.c: the inode table ---------------------------------------- */

/* One real entry standing behind a union inode: an O_PATH fd in branch
 * `bidx` of the snapshot the stack was resolved against. */
struct sfs_layer {
	int fd;
	unsigned bidx;
	unsigned char xwh;        /* SFS_XWH_* (union/resolve.h): a directory
				   * layer's xattr-whiteout mark, as read at its
				   * lookup or asked later; kept for read-only
				   * branches only; read and written atomically
				   * (sfs_layer_keep_xwh) */
};

/* The layers of one union inode, highest first: one for a non-directory,
 * one per contributing branch for a merged directory. Immutable and
 * refcounted: a copy-up or a new upper directory replaces a node's stack
 * while requests still use the old one, whose fds stay open until the
 * last of them is done. */
struct sfs_saved;
struct sfs_stack {
	atomic_uint refs;
	/* under the lock of the node holding it (fdcache.c): */
	bool used;                /* got since the last sweep */
	bool closed;              /* fds closed; only its node holds it */
	bool nohandle;            /* no file handles: its fds stay open */
	bool pending;             /* closed, never opened (lookup_listed.c) */
	struct sfs_snap *snap;
	unsigned n;
	uint32_t nlink;           /* st_nlink to show, 0: the top layer's */
	bool indexed;             /* the top layer is a lower name whose fd is
				   * its inode's copy in the index */
	bool metacopy;            /* l[0] is a kernel overlayfs metacopy file:
				   * its data is l[1], or nowhere when n is 1
				   * (metacopy.c) */
	/* under the lock of the node holding it (dirnames.c): */
	bool names_reading;       /* a thread is reading its name index */
	bool names_dropped;       /* a layer changed while it was read */
	struct sfs_dirnames *names; /* its name index, or NULL */
	struct sfs_layer l[];
};

/* A union inode. Its FUSE nodeid is its address (the root is 1). The
 * table holds it while the kernel has lookups on it or the daemon holds
 * references (children point at their parent, open files at their
 * node); it is freed when both reach zero. */
struct sfs_node {
	struct sfs_node *hnext;   /* hash chain, under the shard lock */
	uint64_t key_dev;         /* identity: the entry's identity layer */
	uint64_t key_ino;
	uint64_t nlookup;         /* kernel lookups, under the shard lock */
	uint64_t refs;            /* daemon references, under the shard lock */
	uint64_t ino;             /* st_ino shown in the view */
	uint64_t generation;      /* tells a reused nodeid apart */
	atomic_uint cu_gen;       /* bumped when the node is copied up */
	mode_t type;              /* S_IFMT bits, fixed for the node's life */
	pthread_mutex_t lock;     /* guards stack, parent and name */
	struct sfs_stack *stack;
	struct sfs_node *parent;  /* counted reference; NULL for the root */
	char *name;               /* last name it was reached by */
	/* open files, under lock (passthrough.c): */
	int pt_backing;           /* the backing id while pt_files > 0 */
	unsigned pt_files;        /* passed through */
	unsigned pt_cached;       /* served by requests */
	uint32_t lru_slot;        /* fdcache.c: 1 + its index there, or 0 */
	/* the handles of its stack's layers, under lock: made when the stack
	 * is first closed, dropped when another stack replaces it (in the
	 * node's malloc chunk's slack: no memory per node) */
	struct sfs_saved *saved;
};

int sfs_nodes_init(void);
int sfs_node_root_init(struct sfs_stack *st, const struct stat *idst);
void sfs_nodes_destroy(void);
struct sfs_node *sfs_node_root(void);
struct sfs_node *sfs_node_of(fuse_ino_t ino);
fuse_ino_t sfs_node_id(struct sfs_node *n);
/* Finds or adds the node for a resolved entry and counts one kernel
 * lookup on it. Takes over `st` (the stack). */
int sfs_node_lookup_insert(struct sfs_node *parent, const char *name,
			   struct sfs_stack *st, const struct stat *idst,
			   struct sfs_node **out);
void sfs_node_forget(struct sfs_node *n, uint64_t nlookup);
/* nfs_export=on: the node of id (the root for 1) with one more kernel
 * lookup counted, or NULL when none is cached. */
struct sfs_node *sfs_node_by_id(uint64_t id);
/* One more kernel lookup on n (a reply that names it). */
void sfs_node_count(struct sfs_node *n);
/* Every cached node's name into the names of export_names.c (the end). */
void sfs_nodes_remember(void);
/* The node of an identity, referenced, or NULL when none is cached. */
struct sfs_node *sfs_node_find(const struct stat *idst);
void sfs_node_ref(struct sfs_node *n);
void sfs_node_unref(struct sfs_node *n);
/* The node's current stack, referenced, with open fds: the reference
 * pins them (fdcache.c closes only stacks nobody else holds). Reopening
 * a closed one can fail (-ESTALE: the inode is gone from its branch);
 * *out is then the closed stack, whose fds are -1. */
int sfs_node_stack_open(struct sfs_node *n, struct sfs_stack **out);
/* The same where failing is left to the syscalls on the fds (EBADF);
 * never NULL. */
struct sfs_stack *sfs_node_stack(struct sfs_node *n);
struct sfs_stack *sfs_node_stack_peek(struct sfs_node *n); /* no reopening */
/* Replaces the node's stack (takes over `st`), e.g. after an upper
 * directory was created for it. */
void sfs_node_set_stack(struct sfs_node *n, struct sfs_stack *st);
/* A cached node's place, copied: see sfs_nodes_names. */
struct sfs_node_name {
	fuse_ino_t parent;
	char *name;
	fuse_ino_t self;          /* the node's own id */
};
int sfs_nodes_names(struct sfs_node_name **out, size_t *count);
/* Every cached node but the root, referenced (node.c); given back. */
int sfs_nodes_all(struct sfs_node ***out, size_t *count);
void sfs_nodes_put(struct sfs_node **v, size_t n);
/* Calls fn with every cached node but the root, holding a reference and
 * no lock (node_walk.c). */
void sfs_nodes_each(void (*fn)(struct sfs_node *n, void *arg), void *arg);
/* found[i]: the cached node whose place is want[i] (parent and name;
 * self ignored), referenced, or NULL. One pass over the table. */
int sfs_nodes_at(const struct sfs_node_name *want, size_t n, struct sfs_node **found);
/* Records a rename: the node now lives at parent/name. */
int sfs_node_move(struct sfs_node *n, struct sfs_node *parent, const char *name);

/* What a part above the node table hears of each node: its stack
 * installed (under the node's lock) and its end (no reference left).
 * Hooks are added before the mount serves (main.c), at most 4; a NULL
 * member is not called. */
struct sfs_node_hooks {
	void (*stack_set)(const struct sfs_node *n, const struct sfs_stack *st);
	void (*freed)(const struct sfs_node *n);
};
int sfs_nodes_hook(const struct sfs_node_hooks *h);
/* Namespace locks: a mutex per directory node (striped), held by every
 * change of what a name of the directory shows (create, mkdir, mknod,
 * symlink, link, unlink, rmdir, rename) and by a copy-up while it checks
 * that the name it copies to still shows its node and places the copy
 * there. The kernel already serialises the namespace changes of one
 * directory, so they only wait for copy-ups. Never held while copying up
 * (a copy-up takes one); a rename takes its two with sfs_ns_lock2. */
void sfs_ns_lock(struct sfs_node *dir);
void sfs_ns_unlock(struct sfs_node *dir);
void sfs_ns_lock2(struct sfs_node *a, struct sfs_node *b);
void sfs_ns_unlock2(struct sfs_node *a, struct sfs_node *b);

struct sfs_stack *sfs_stack_new(struct sfs_snap *snap, unsigned n);
/* Where layer l of a stack of snapshot s keeps what its directory said
 * of xattr whiteouts once asked: its xwh for a read-only branch, NULL
 * for a rw one (a rw layer's marks are its to clear: a rename's). */
unsigned char *sfs_layer_keep_xwh(const struct sfs_snap *s, const struct sfs_layer *l);
/* Whether directory layer l holds xattr whiteouts (sfs_u_dir_xwhiteouts,
 * the answer kept as above). */
bool sfs_layer_xwhiteouts(const struct sfs_snap *s, const struct sfs_layer *l);
struct sfs_stack *sfs_stack_get(struct sfs_stack *st);
void sfs_stack_put(struct sfs_stack *st);
/* Branches are named by identity, never by position across stacks: two
 * stacks may be resolved on different snapshots (a branch added on top
 * moves every position), and a request that mixed a node's older stack
 * with its parent's newer one indexed the wrong branch. The identity of
 * a branch directory is its `shared` object, the same in every snapshot.
 * The layer of st in branch b (of any snapshot), or NULL. */
const struct sfs_layer *sfs_stack_in(const struct sfs_stack *st, const struct sfs_branch *b);
/* The position of branch b in snapshot s, or -1 when s has no such. */
int sfs_snap_pos(const struct sfs_snap *s, const struct sfs_branch *b);
/* The branch of a layer of st. */
static inline struct sfs_branch *sfs_layer_branch(const struct sfs_stack *st,
						  const struct sfs_layer *l)
{
	return st->snap->b[l->bidx];
}
/* The highest rw branch of s, or NULL. */
static inline struct sfs_branch *sfs_snap_top_rw(const struct sfs_snap *s)
{
	return s->top_rw < 0 ? NULL : s->b[s->top_rw];
}
/* st's layers on snapshot s (positions of s, fds duplicated; layers of
 * branches s no longer has dropped), with room for `extra` more (n counts
 * the layers filled). NULL without memory or fds. */
struct sfs_stack *sfs_stack_rebase(const struct sfs_stack *st, struct sfs_snap *s,
				   unsigned extra);

/* ---- fdcache.c: the budget of node fds ------------------------------ */
/* Sets the budget from RLIMIT_NOFILE (after it was raised). */
void sfs_fdcache_init(void);
unsigned sfs_fdcache_budget(void);
/* fds held by the stacks of cached nodes, other than pinned ones. */
uint64_t sfs_fdcache_count(void);
/* Under n's lock: n's (open) stack counts from now on / no longer. */
void sfs_fdcache_add(struct sfs_node *n);
void sfs_fdcache_del(struct sfs_node *n);
/* With no lock held, after an add: closes stacks when over budget. */
void sfs_fdcache_trim(void);
/* Under n's lock: a new open stack for n's closed one, from its handles. */
int sfs_fdcache_reopen(struct sfs_node *n, struct sfs_stack **out);
void sfs_saved_free(struct sfs_saved *sv);
void sfs_fdcache_destroy(void);

/* ---- layer.c: layers seen from outside a request -------------------- */
/* "/proc/self/fd/N" for syscalls that take no fd. */
void sfs_fd_path(int fd, char buf[static 32]);
int sfs_raise_nofile(void);
/* O_PATH fd of a file handle on the filesystem of mount_fd. */
int sfs_open_handle(int mount_fd, int type, const void *handle, unsigned bytes);
/* The same on branch b's mount, through its root kept open for it. */
int sfs_branch_open_handle(const struct sfs_branch *b, int type, const void *handle, unsigned bytes);
/* The path of a layer's entry from its branch root ("/a/b"), for
 * redirect records. -ESTALE when it is no longer beneath the root. */
int sfs_layer_path(const struct sfs_snap *s, const struct sfs_layer *l,
		   char *buf, size_t len);

/* ---- dirnames.c: name indexes of directories in many branches ------- */
/* The name index for lookups in directory node n whose stack is st
 * (union/names.h): referenced, or NULL when there is none to use (every
 * layer is then looked at). Made when st has enough read-only layers,
 * kept a second, never with timeout=0. */
struct sfs_dirnames;
struct sfs_dirnames *sfs_dirnames_get(struct sfs_node *n, struct sfs_stack *st);
const struct sfs_unames *sfs_dirnames_ix(const struct sfs_dirnames *d);
void sfs_dirnames_put(struct sfs_dirnames *d);
/* For a listing about to read every layer of st (n's stack): a new
 * index to fill (names.h) with the layers with (*take)[i], or NULL when
 * none is wanted; sfs_dirnames_end then installs it (ret: what the
 * filling returned) or drops it, and frees take. */
struct sfs_unames *sfs_dirnames_begin(struct sfs_node *n, struct sfs_stack *st, bool **take);
void sfs_dirnames_end(struct sfs_node *n, struct sfs_stack *st, struct sfs_unames *ix,
		      bool *take, int ret);
/* The index of n's stack forgotten (a read-only layer of it changed:
 * -o coherent); of every node's. */
void sfs_dirnames_drop(struct sfs_node *n);
void sfs_dirnames_drop_all(void);

/* ---- lookup.c: resolution across branches ---------------------------- */
/* Resolves name in the directory stack dst: the highest branch holding
 * the name wins; directories below it merge until an opaque one; a
 * whiteout stops the search. Returns 0 with a new stack, the stat of its
 * top layer and that of its identity layer (the lowest one of a merged
 * directory, so that creating an upper directory keeps st_ino), or
 * -ENOENT. */
int sfs_resolve(const struct sfs_stack *dst, const char *name,
		struct sfs_stack **out, struct stat *top, struct stat *idst);
/* The same, looking only at the layers that names (dst's name index,
 * dirnames.c; NULL: none) says may hold name. */
struct sfs_unames;
int sfs_resolve_in(const struct sfs_stack *dst, const struct sfs_unames *names,
		   const char *name, struct sfs_stack **out, struct stat *top,
		   struct stat *idst);
/* 1 when name is visible in the branches of dst below branch b (a
 * removal in b must leave a whiteout), 0 when not, or -errno (-ESTALE:
 * b is not in dst's snapshot). */
int sfs_resolve_below(const struct sfs_stack *dst, const struct sfs_branch *b,
		      const char *name);
/* Lookup for the kernel: resolve, insert, fill the entry. */
int sfs_lookup_entry(struct sfs_node *parent, const char *name,
		     struct fuse_entry_param *e);
/* lookup_listed.c: a READDIRPLUS entry from one statx, its node's stack
 * pending (0, -ENOENT, or -EAGAIN: use sfs_lookup_entry); a pending
 * node's stack by its name resolved in full (-ESTALE: another inode). */
int sfs_lookup_listed(struct sfs_node *dir, const char *name, struct fuse_entry_param *e);
int sfs_listed_resolve(struct sfs_node *n, struct sfs_node *parent, const char *name,
		       struct sfs_stack **out);

/* True when the name is reserved by the union (metadata dir at the root,
 * whiteout names). */
bool sfs_name_reserved(const struct sfs_node *parent, const char *name);

/* ---- inode.c: attributes --------------------------------------------- */
void sfs_stat_fill(const struct sfs_node *n, const struct sfs_stack *st,
		   const struct stat *real, struct stat *out);
uint64_t sfs_ino_of(const struct sfs_snap *snap, uint64_t dev, uint64_t ino);
/* The st_dev of the branch filesystem with this UUID, or 0. */
uint64_t sfs_dev_of_uuid(const struct sfs_snap *snap, const uint8_t uuid[16]);
/* The link count of the lower file a copy's origin names, opened by its
 * handle, or for a FUSE branch's number handle by the copy's lower-name
 * record (whiteout/lowername.h); 0 when neither opens it. */
uint32_t sfs_origin_nlink(const struct sfs_snap *snap, int dirfd, const char *name);
/* The identity (st_dev, st_ino) a copy's origin record names: 1 when
 * dirfd/name has a record of a filesystem of the mount, else 0; -ESTALE
 * (*dev, *ino set all the same) when the lower inode it names is gone (its
 * number may be reused): the copy is its own identity; -EUCLEAN damaged. */
int sfs_origin_identity(const struct sfs_snap *snap, int dirfd, const char *name,
			uint64_t *dev, uint64_t *ino);

/* ---- origin_alive.c: is an origin's lower inode still there ---------- */
/* false only when the record's file handle no longer opens an inode of
 * that number (open_by_handle_at, the verdict cached for the mount);
 * true also when it cannot be known (an old record, no handle). */
bool sfs_origin_alive(const struct sfs_snap *snap, const struct sfs_origin *o);
int sfs_node_getattr(struct sfs_node *n, struct stat *out);
extern double sfs_timeout;

/* ---- index.c: the hard-link index (its names: whiteout/index.c) ------- */
/* The index directory's fd (the mount's, not to close) with the name of
 * the entry of a lower inode in name, or -ENOENT when there is no index. */
int sfs_index_at(const struct sfs_snap *s, uint64_t dev, uint64_t ino,
		 char name[SFS_INDEX_NAME_MAX]);
/* O_PATH fd of the index entry of a lower inode, or -ENOENT. */
int sfs_index_open(const struct sfs_snap *s, uint64_t dev, uint64_t ino);
/* The same for the lower entry lower_fd (stat lst), only when the entry
 * is its copy: one whose origin record names another inode (the lower
 * file was replaced offline by one that reuses its number) is stale and
 * not used (-ENOENT). */
int sfs_index_open_of(const struct sfs_snap *s, int lower_fd, const struct stat *lst);
/* 1 when index entry dfd/name, open as fd, is the copy of the lower entry
 * lower_fd (its type, and its origin record names it or it has none); 0
 * when stale. */
int sfs_index_is_copy_of(int dfd, const char *name, int fd, int lower_fd);
/* Links a staged copy (fd, O_PATH) of the lower entry lower_fd (stat
 * lst) into the index, replacing a stale entry of that name. */
int sfs_index_link(const struct sfs_snap *s, int lower_fd, const struct stat *lst,
		   int fd);
/* The link count to show for an indexed copy. */
uint32_t sfs_index_nlink(uint32_t lower, uint32_t upper);
/* Whether a lower entry (its stat) goes into the index at copy-up. */
bool sfs_index_worthy(const struct stat *src);
/* The copy the lower entry of st (its stat src) already has in the
 * index, as an fd to link: its own fd when the name shows it, else the
 * index entry, else -1. */
int sfs_index_copy_of(const struct sfs_stack *st, const struct stat *src);

/* ---- metacopy.c: kernel overlayfs metacopy files ---------------------- */
/* The layer whose data the node's file shows: l[0], or a metacopy's data
 * layer; NULL (logged) when a metacopy's data was found nowhere. */
const struct sfs_layer *sfs_stack_data(const struct sfs_stack *st);
/* Opens the file's data with flags: -EIO when there is none. */
int sfs_stack_data_open(const struct sfs_stack *st, int flags);
/* Puts the data of metacopy node n, whose top is in a rw branch, into
 * the file itself and ends the metacopy (nodata: the file is truncated to
 * nothing instead), before a change of its data. */
int sfs_metacopy_complete(struct sfs_node *n, bool nodata);
/* Whether a metadata change of the lower file of stack st (its stat
 * src) copies its metadata alone (-o metacopy=on, and a file that can
 * be one). */
bool sfs_metacopy_wanted(const struct sfs_stack *st, const struct stat *src);
/* The stack of a metacopy fd just made of st's file in branch pos of
 * snapshot s: fd, then st's data layer (duplicated). NULL without
 * memory (fd not taken). */
struct sfs_stack *sfs_metacopy_stack(const struct sfs_stack *st, struct sfs_snap *s,
				     unsigned pos, int fd);

/* ---- copy_up.c: making entries exist in a rw branch ------------------ */
/* The node's stack with its top layer in a rw branch, copying the entry
 * up first when it lives in a ro branch. Referenced. */
int sfs_node_writable(struct sfs_node *n, struct sfs_stack **out);
/* The same, with flags: SFS_CU_NODATA copies no data (O_TRUNC);
 * SFS_CU_DATA: the caller changes the data (a metacopy file in the rw
 * branch gets its data first). */
#define SFS_CU_NODATA 1u
#define SFS_CU_DATA 2u
int sfs_node_copy_up(struct sfs_node *n, unsigned flags, struct sfs_stack **out);
/* Gives parent/name, one of the names of non-directory n, an entry in the
 * highest rw branch (a copy, or a link to the copy another name of a hard
 * link made), whatever name the node was last reached by. */
int sfs_node_copy_up_at(struct sfs_node *n, struct sfs_node *parent,
			const char *name);
pthread_mutex_t *sfs_cu_lock(const struct sfs_node *n); /* a copy-up's */
void sfs_temp_name(char buf[64], const char *what); /* in a staging dir */
/* True when the stack's top layer is in a rw branch. */
bool sfs_stack_writable(const struct sfs_stack *st);
/* Makes sure directory node `dir` has a layer in branch tb, creating
 * the missing directories there with the union's mode, owner and times.
 * Returns the node's stack, referenced, which has a layer in tb. */
int sfs_dir_ensure_layer(struct sfs_node *dir, const struct sfs_branch *tb,
			 struct sfs_stack **out);
/* Takes (true) or drops the lock of directory copy-ups (an rmdir's). */
void sfs_dir_copyups_lock(bool lock);

/* ---- file.c: an open file ------------------------------------------- */
struct sfs_file {
	int fd;                   /* the real file, opened with the caller's flags */
	int flags;                /* those flags */
	unsigned cu_gen;          /* the node's cu_gen when fd was opened */
	int stale_fd;             /* the fd before a copy-up, kept for readers */
	struct sfs_node *node;    /* referenced */
	struct sfs_branch *br;    /* where fd is, referenced, counted */
	pthread_mutex_t lock;     /* guards a reopen after copy-up */
	int backing;              /* its node's backing id when passed through */
};
/* The file's fd, reopened on the copy if the node was copied up since. */
int sfs_file_fd(struct sfs_file *f);

/* ---- dir.c: namespace helpers ----------------------------------------- */
/* Where a new name of a directory goes: the directory's layer in a rw
 * branch (made if missing), and the whiteouts of the name there, which
 * the new entry replaces (sfs_place_make). Under the parent's namespace
 * lock. */
struct sfs_place {
	struct sfs_stack *pst;        /* the parent's stack, referenced */
	const struct sfs_layer *pl;   /* its layer in the target branch */
	struct sfs_branch *br;        /* the target branch */
	int wh;                       /* SFS_WH_HAS_* of the name there */
};
int sfs_place_at(struct sfs_node *parent, const char *name, const struct sfs_branch *tb,
		 struct sfs_place *p);
/* In the highest rw branch. */
int sfs_place_new(struct sfs_node *parent, const char *name, struct sfs_place *p);
/* Makes the entry dirfd/name (0 or -errno; nothing made on failure). */
typedef int (*sfs_make_fn)(int dirfd, const char *name, void *arg);
/* Makes name at the place with make(), owned by the caller of req (with
 * its umask; req NULL: as made, for a link). Over a whiteout, or for a
 * caller other than root, the entry is made complete (owner, a
 * directory's opaque mark over a whiteout) in a staging directory that
 * gives it the parent's group and default ACL, then takes the name in
 * one step. 0, or -errno with nothing left at the name. */
int sfs_place_make(fuse_req_t req, const struct sfs_place *p, const char *name,
		   sfs_make_fn make, void *arg);
/* Creates the regular file name at the place as sfs_place_make does
 * (O_CREAT|O_EXCL with the caller's flags and mode), opened: *fd. */
int sfs_place_create(fuse_req_t req, const struct sfs_place *p, const char *name,
		     int flags, mode_t mode, int *fd);
/* Enters a just-made entry into the table and fills the kernel's reply:
 * it has one layer, the one just made (nothing below shows through a
 * name that was free, or whited out and then made opaque). */
int sfs_entry_new(struct sfs_node *parent, const struct sfs_place *p,
		  const char *name, struct fuse_entry_param *e);
/* Gives a new entry the caller's ownership, as if the caller had made it
 * (the daemon creates as root). */
int sfs_set_owner(int dirfd, const char *name, fuse_req_t req);
/* Around a creation: the caller's umask on this thread, then 0 again. */
void sfs_umask_begin(fuse_req_t req);
void sfs_umask_end(void);

/* ---- export.c, export_lookup.c, export_names.c: nfs_export=on ------- */
/* Set once at start from -o nfs_export=on: node ids are union inode
 * numbers and generations the identities' real ones
 * (docs/export.md "NFS export"). */
extern bool sfs_export;
/* Each branch's kind of file handle (b->fh_kind), refused with a message
 * naming the branch when its filesystem's handles cannot be rebuilt from
 * an inode number. At mount and branch add, with nfs_export=on. */
int sfs_export_check(struct sfs_snap *s, char *err, size_t errlen);
/* The real generation of the identity idst of a resolved stack st (one
 * of its layers, or the inode opened by number); 0 when unknown. */
uint32_t sfs_export_gen(const struct sfs_stack *st, const struct stat *idst);
/* An O_PATH fd of inode `ino` of branch b's filesystem, whatever its
 * generation; -ESTALE when there is none. */
int sfs_export_open_ino(const struct sfs_branch *b, uint64_t ino);
/* The replies to LOOKUP(id, ".") (the kernel decoding a file handle of
 * a node it no longer caches) and LOOKUP(id, "..") (its parent). */
int sfs_export_lookup_self(uint64_t id, struct fuse_entry_param *e);
int sfs_export_lookup_parent(uint64_t id, struct fuse_entry_param *e);
/* name is "." or ".." and nfs_export=on: sfs_export_op_lookup answers. */
bool sfs_export_dot(const char *name);
void sfs_export_op_lookup(fuse_req_t req, fuse_ino_t id, const char *name);
/* The names of forgotten nodes: where to look node `id` up again. */
void sfs_xnames_put(uint64_t id, uint64_t parent, const char *name);
/* Its parent's id and its name (NAME_MAX + 1 bytes); -ENOENT. */
int sfs_xnames_get(uint64_t id, uint64_t *parent, char *name);
/* The names kept by the last daemon (.stackfs/exportnames of the
 * highest rw branch), read at mount; written when the daemon ends. */
void sfs_xnames_load(const struct sfs_snap *s);
void sfs_xnames_save(const struct sfs_snap *s);

/* ---- dir.c / file.c / readdir.c / inode.c / xattrs.c: handlers ------- */
extern const struct fuse_lowlevel_ops sfs_ops;

/* ---- stats.c: counters for `stackfs status` -------------------------- */
#define SFS_STATS_ERRNO_MAX 134
struct sfs_stats {
	atomic_uint_fast64_t lookups;
	atomic_uint_fast64_t copyups;
	atomic_uint_fast64_t copyup_bytes;
	atomic_uint_fast64_t whiteouts;
	atomic_uint_fast64_t open_files;
	atomic_uint_fast64_t passthrough_opens;
	atomic_uint_fast64_t uring_requests;
	atomic_uint_fast64_t node_fd_reopens;   /* stacks reopened by handle */
	/* entries answered unopened; directories read ahead (dirahead.c) */
	atomic_uint_fast64_t listed_lookups, dirs_read_ahead;
	atomic_uint_fast64_t dir_opens, listings_read; /* OPENDIRs; dir_load */
	/* name indexes read layer by layer; filled by a listing (dirnames.c) */
	atomic_uint_fast64_t name_index_reads, name_index_listed;
	atomic_uint_fast64_t errors[SFS_STATS_ERRNO_MAX];   /* failures */
	atomic_uint_fast64_t answers[SFS_STATS_ERRNO_MAX];  /* expected answers */
};
extern struct sfs_stats sfs_stats;
#define sfs_count(field, n) \
	atomic_fetch_add_explicit(&sfs_stats.field, (n), memory_order_relaxed)
/* Whether errno err answers a question (ENOENT, ENODATA...) rather than
 * reports a failure (EIO, ENOSPC...): stats.c has the list. */
bool sfs_stats_is_answer(int err);
/* fuse_reply_err, counting err as an answer or a failure; a failure is
 * logged with op, the handler's name. sfs_reply_err names the caller. */
int sfs_reply_err_op(fuse_req_t req, int err, const char *op);
#define sfs_reply_err(req, err) sfs_reply_err_op(req, err, __func__)
/* The counters as "key\tvalue" lines, with the node fds held and their
 * budget (0: none), which the node table counts. Length or -ENOSPC. */
int sfs_stats_format(char *buf, size_t len, uint64_t node_fds, unsigned fd_budget);

/* ---- log.c ------------------------------------------------------------ */
void sfs_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* One line of the branch seam's (common/bio.h) at a syslog level. */
void sfs_log_line(int level, const char *line);
/* Opens the FILE of -o log= (absolute) for appending, refusing a path
 * another user could redirect (log.c says how). 0 or -errno, err set. */
int sfs_log_open_file(const char *path, char *err, size_t errlen);
/* From now on lines go where o says (-o log=, -f, -d). */
void sfs_log_setup(const struct sfs_opts *o);
/* Whether lines go to stderr (which the background daemon then keeps). */
bool sfs_log_keeps_stderr(void);
/* The daemon is in the background: errors are no longer also shown on
 * the terminal it was started from. */
void sfs_log_detached(void);
/* A request answered with failure err (rate-limited). */
void sfs_log_failure(const char *op, int err);
/* Rate-limited: a mount point at NAME in layer DL; a metacopy file (layer
 * l) whose data was found nowhere; NAME's record WHAT damaged. */
void sfs_log_mountpoint(const struct sfs_snap *s, const struct sfs_layer *dl, const char *name);
void sfs_log_no_data(const struct sfs_snap *s, const struct sfs_layer *l);
void sfs_log_damaged(const struct sfs_snap *s, const struct sfs_layer *dl, const char *name,
		     const char *what);
/* The last errors and warnings logged, kept for `stackfs status`. */
#define SFS_LOG_RING 16
#define SFS_LOG_LINE_MAX 512
struct sfs_log_entry {
	time_t time;
	int level;
	char msg[SFS_LOG_LINE_MAX];   /* one line, control characters escaped */
};
/* Calls fn with each, oldest first. */
void sfs_log_recent(void (*fn)(void *arg, const struct sfs_log_entry *e), void *arg);
#define SFS_LOG_ERR 3
#define SFS_LOG_WARN 4
#define SFS_LOG_INFO 6
#define SFS_LOG_DEBUG 7

/* ---- compat.c: the options of overlayfs and fuse-overlayfs ----------- */
/* Joins what libfuse's split at commas would break in the -o values of
 * args: quoted values, mapping lists with commas. */
int sfs_compat_join(struct fuse_args *args);
/* An accepted kernel tuning (SFS_OPTK_NOTE): its value checked against
 * the table, its note kept. 0, or -1 with the message printed. */
int sfs_compat_tuning(const char *arg);
/* context= and the other SELinux labels: 1 to pass on to the kernel,
 * 0 when dropped (SELinux is off: a note). */
int sfs_compat_context(const char *arg);
/* A line logged once the log is open (what an accepted option does). */
void sfs_compat_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sfs_compat_log_notes(void);
void sfs_compat_reset(void);

/* ---- mountflags.c: allow_other and suid when root mounts ------------- */
/* allow_other, allow_root, suid, nosuid, dev or nodev given: 1 (passed
 * on), -1 when its opposite was given too. */
int sfs_mountflags_seen(const char *arg);
/* Adds to args what root's mount gets unless told otherwise. */
int sfs_mountflags_add(struct fuse_args *args, const char *branches);
/* Each branch of s allows suid if the view was given it by default (at
 * mount: the branches' mounts changed meanwhile; at branch add: the new
 * one's); -EPERM with a message in err. */
int sfs_mountflags_check(const struct sfs_snap *s, char *err, size_t len);
void sfs_mountflags_reset(void);
/* The line a mount without trusted.* attributes (a user's, a user
 * namespace's root) gets at mount: what it cannot do. */
void sfs_mountflags_rootless_note(const char *runtime);

/* ---- idmap.c: owners between the branches and the view ---------------- */
#define SFS_IDMAP_UID 0
#define SFS_IDMAP_GID 1
/* uidmapping=/gidmapping= (which: SFS_IDMAP_UID or _GID): FROM:TO:LEN
 * triples separated by ':'. -EINVAL when malformed or overlapping,
 * -EEXIST when given before. */
int sfs_idmap_parse(int which, const char *list);
/* squash_to_*: the view shows every entry owned by id. */
int sfs_idmap_squash(int which, int64_t id);
/* squash_to_root: 0 where squash_to_uid= or _gid= did not say. */
void sfs_idmap_squash_root(void);
bool sfs_idmap_active(void);
void sfs_idmap_free(void);
/* A stored id as the view shows it, and a view id as it is stored
 * (65534 when no range covers it; -1 stays -1). */
uint32_t sfs_idmap_to_view(int which, uint32_t id);
uint32_t sfs_idmap_to_disk(int which, uint32_t id);
/* st's owner and group as the view shows them. */
void sfs_idmap_stat(struct stat *st);

/* ---- mount.c: the state every part shares ---------------------------- */
struct sfs_mount {
	struct sfs_opts opts;
	struct fuse_session *se;          /* for notifications to the kernel */
	struct sfs_snap *snap;            /* current branch set, under snap_lock */
	pthread_mutex_t snap_lock;        /* serialises snapshot swaps */
};
extern struct sfs_mount sfs_m;
/* The current snapshot, referenced. */
struct sfs_snap *sfs_snap_current(void);
/* Tells the kernel the node's attributes changed behind its back (a
 * directory got its upper copy: a new ctime). */
void sfs_notify_attr(struct sfs_node *n);
/* The root's stack for a snapshot, and the identity of its lowest layer. */
int sfs_root_stack(struct sfs_snap *s, struct sfs_stack **out, struct stat *id);

/* ---- sync.c: the sync policy (docs/durability.md "Power loss") ------------------ */
struct sfs_meta;
/* A copy's data (fd of the staged file, open for writing), durable before
 * the copy is placed: fsync, but with sync=volatile. */
int sfs_sync_copy(int fd);
/* fd (O_PATH too) is an entry of a rw branch the union just changed (a
 * directory whose entries changed, an entry whose metadata changed).
 * always: synced now (fsync; syncfs for a symlink or device); normal: a
 * directory is remembered for sfs_sync_view; volatile: nothing. */
int sfs_sync_changed(int fd);
/* fsync (fdatasync) through the view of node n, whose real file or
 * directory fd is: that fd, then what the union changed on its path in
 * its branch (its directories up to the root, the index). Nothing with
 * sync=volatile. */
int sfs_sync_view(struct sfs_node *n, int fd, bool datasync);
/* ---- branch_sync.c: a rw branch's volatile flag ---------------------- */
/* syncfs of the filesystem of directory dirfd (O_PATH too). */
int sfs_syncfs_dir(int dirfd);
/* At mount and branch add, before anything is written: -EUCLEAN with a
 * message when the branch (its metadata dir beneath at_fd: the root or
 * a workdir) was left by a volatile mount that did not end cleanly,
 * unless -o accept_unclean. */
int sfs_sync_branch_check(int at_fd, char *why, size_t len);
/* After its metadata dir is opened: the volatile flag set (sync=volatile)
 * or, accepted, cleared. */
int sfs_sync_branch_open(struct sfs_meta *m);
/* Before it is closed: a volatile mount syncs the branch's filesystem and
 * clears the flag (a clean end). */
void sfs_sync_branch_close(struct sfs_meta *m);

/* ---- passthrough.c: data straight from the kernel to the branch ------- */
/* Puts the session's /dev/fuse traffic through the hooks that negotiate
 * passthrough (when `wanted`) and mark open replies. Before the loop. */
int sfs_pt_setup(struct fuse_session *se, bool wanted);
/* Whether the kernel took passthrough and backing files can be opened. */
bool sfs_pt_active(void);
/* Decides at open whether f passes through (f->backing >= 0): only a file
 * whose top layer is in a rw branch, and none of its node's other open
 * files is served by requests. Counts f on its node. */
void sfs_pt_open(struct sfs_file *f, bool writable);
/* Uncounts f at release; the node's backing id closes with its last. */
void sfs_pt_release(struct sfs_file *f);
/* The open or create reply this thread sends next is f's (NULL: none). */
void sfs_pt_reply_with(const struct sfs_file *f);

/* ---- uring.c: FUSE over io_uring, a transport beside /dev/fuse -------- */
/* Whether the options allow it, and whether they asked for it (a
 * warning then when the kernel does not offer it). Before the loop. */
void sfs_uring_want(bool wanted, bool asked);
/* The INIT request's flags2: does the kernel offer it? */
void sfs_uring_see_init(uint32_t flags2);
/* Offered and allowed: the INIT reply will take it (sfs_op_init turns
 * splice off then: ring replies are copied into the entry). */
bool sfs_uring_planned(void);
/* Adds the flag to the INIT reply's flags2 when planned and the rings and
 * their threads could be made (none is offered otherwise: the kernel
 * would hold every request for them). Returns whether it did. */
bool sfs_uring_patch_init(uint32_t *flags2, uint32_t max_write, uint16_t max_pages);
/* The session and its /dev/fuse fd (sfs_pt_setup, before the loop). */
void sfs_uring_attach(struct fuse_session *se, int devfd);
/* After that INIT reply is written: the prepared threads register. */
void sfs_uring_start(void);
/* After the loop: waits (at most 5 s) until no ring thread serves. */
void sfs_uring_stop(void);
/* Whether ring entries serve requests. */
bool sfs_uring_active(void);
/* A reply to a request that came through a ring entry goes into the
 * entry: returns the bytes taken, or -1 for a reply the device takes. */
ssize_t sfs_uring_take(const struct iovec *iov, int count);
/* Where a reply of up to len bytes of data may be built in place: the
 * payload of the ring entry this thread serves, or NULL (no entry, or
 * too small). A reply naming it is not copied. */
char *sfs_uring_reply_room(size_t len);

/* ---- readahead.c: the readahead window of the mount -------------------- */
#define SFS_READAHEAD_DEFAULT_KIB 512u
#define SFS_READAHEAD_MAX_KIB 65536u
int sfs_readahead_set(const char *mountpoint, unsigned kib);
void sfs_readahead_want(struct fuse_conn_info *conn, unsigned kib);

/* ---- control.c: the control channel ----------------------------------- */
/* Starts the control server of the mount (its thread), after publishing. */
int sfs_control_start(void);
void sfs_control_stop(void);

/* ---- branch_change.c: a live branch change ---------------------------- */
/* Applies a branch change to the live mount: the new snapshot, the root,
 * and the kernel told to drop what it cached. 0 or -errno + message. */
int sfs_branches_change(const struct sfs_change *c, bool force, char *err, size_t errlen);
/* The kernel told to drop every entry it caches (and, with inodes, every
 * inode's attributes and pages). */
void sfs_invalidate_all(bool inodes);

#include "stackfs/coherent/coherent.h"

#endif
