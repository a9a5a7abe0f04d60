/* The checker's own header (fsck.h is its interface): the state of one
 * run and what its files share, grouped by the file that defines it. */
#ifndef SFS_FSCK_INT_H
#define SFS_FSCK_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "whiteout/fsck.h"
#include "whiteout/origin.h"

#define MAX_CANDIDATES 16        /* lower paths of one directory */

struct lower_br {
	char *path;
	int fd;                  /* O_RDONLY|O_DIRECTORY of its root */
	uint8_t uuid[16];
	bool uuid_ok;
	bool numbered;            /* FUSE: its handles hold inode numbers,
				   * which open nothing (fsid.c) */
};

/* The lower paths a directory of the branch may be merged with. */
struct cands {
	char **v;
	size_t n;
	bool unknown;            /* too many, or a lower could not be read */
};

/* A lower directory's listing (sfs_fsck_list_dir_ext, typed), or none
 * (v NULL): its names are looked up one by one. */
struct lower_list {
	char **v;
	size_t n;
	bool listed;
};

/* Lower directory fds of one upper directory: fds[i * nlow + j], and
 * the listing of each (list[k]) where reading it costs less than the
 * lookups it saves. */
struct lower_fds {
	int *fd;
	struct lower_list *list;
	size_t n;
	bool unknown;
};

struct fsck {
	const struct sfs_fsck_opts *o;
	struct sfs_fsck_result *r;
	int root_fd;             /* O_PATH of the branch root */
	int meta_at;             /* the directory holding .stackfs (o->meta_at_fd) */
	int meta_fd;             /* O_PATH of .stackfs, or -1 */
	bool v0;                 /* a version 0 metadata dir */
	bool stop;               /* a newer format: check nothing more */
	bool pending;            /* an unfinished commit: the tree is half of it */
	bool marker_only;        /* .stackfs holds nothing but a commit's marker */
	struct lower_br *low;
	size_t nlow;
	bool lowers_known;
	bool reg_damaged;        /* fsck found the registry damaged */
	bool lowers_trusted;     /* verified against the records (or --force):
				  * what they show may be repaired */
	bool handle_warned;
	bool handle_denied;          /* EPERM in a user's fsck: origins not checked */
	uint8_t (*noted)[16];    /* filesystems named in a note already */
	size_t nnoted;
	uint64_t entries;
	struct sfs_fsck_reader *reader; /* fsck_helper.c, or NULL */
	struct sfs_fsck_fact *facts;    /* 2 * FSCK_FACTS_CHUNK of them */
};

/* ---- fsck.c: reporting, shared helpers -------------------------------- */

/* What is worth knowing, or (error) a check that could not be done. */
void sfs_fsck_msg(struct fsck *f, bool error, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Records a problem at path (with a detail, or fmt NULL). Returns it
 * when a fix is to be tried now: the caller fixes and calls
 * sfs_fsck_done(). Otherwise (no --repair, not fixable, or can_fix false
 * for this instance) it is reported at once and NULL is returned. */
struct sfs_fsck_problem *sfs_fsck_found(struct fsck *f, enum sfs_problem_code code,
					bool can_fix, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* Reports the outcome of a fix (0 or -errno) and returns it. */
int sfs_fsck_done(struct fsck *f, struct sfs_fsck_problem *p, int ret);
/* dir + "/" + name (no doubled slash at the root), malloc'd. */
char *sfs_fsck_join(const char *dir, const char *name);
void sfs_fsck_free_names(char **v, size_t n);
/* The names in a directory (any fd of it), sorted, without . and .. */
int sfs_fsck_list_dir(int fd, char ***out, size_t *nout);
/* The same; typed: each name after its d_type byte (sorted by name);
 * nchr (or NULL): how many may be character devices (DT_CHR, or a type
 * getdents does not say). */
int sfs_fsck_list_dir_ext(int fd, bool typed, char ***out, size_t *nout, size_t *nchr);
/* The entry of name in a typed listing (its d_type byte, then the
 * name), or NULL. */
const char *sfs_fsck_typed_find(char *const *v, size_t n, const char *name);
/* An xattr value of dfd/name (not followed), NUL-terminated: its
 * length, -ENODATA, or -errno. */
ssize_t sfs_fsck_get_xattr(int dfd, const char *name, const char *attr, char *buf,
			   size_t len);

/* ---- fsck_meta.c: the metadata directory ------------------------------ */

/* 0 to go on with the metadata dir's content (f->meta_fd), else skip it. */
int sfs_fsck_open_meta(struct fsck *f);
void sfs_fsck_check_header(struct fsck *f);
void sfs_fsck_check_lowers_file(struct fsck *f);
void sfs_fsck_check_xnames_file(struct fsck *f);
void sfs_fsck_check_work(struct fsck *f);
void sfs_fsck_check_index(struct fsck *f);
void sfs_fsck_check_meta_entries(struct fsck *f);

/* ---- fsck_records.c: registry and inomap, record by record ------------ */

void sfs_fsck_check_registry(struct fsck *f);
void sfs_fsck_check_inomap(struct fsck *f);

/* ---- fsck_commit.c: an unfinished commit ------------------------------ */

void sfs_fsck_check_commit(struct fsck *f);

/* ---- fsck_lowers.c: the lower branches and what they hold ------------- */

/* --lower, opened before anything else: 0 or -errno (said). */
int sfs_fsck_open_given_lowers(struct fsck *f);
/* --lower verified, else those below the branch in lowers found and
 * verified against the registry. */
int sfs_fsck_find_lowers(struct fsck *f);
/* Whether the lower inode a valid origin record names is gone: 1 gone
 * (why says how), 0 still there, -1 not known (said in a note or error). */
int sfs_fsck_origin_gone(struct fsck *f, const struct sfs_origin *o, const char *path,
			 char *why, size_t whylen);
void sfs_fsck_cands_add(struct cands *c, char *p);
void sfs_fsck_cands_free(struct cands *c);
/* The candidates of a subdirectory `name` of a directory with parent's
 * candidates, given whether it is opaque and its own redirect. */
void sfs_fsck_child_cands(struct fsck *f, const struct cands *parent, const char *name,
			  bool opaque, const char *redirect, struct cands *c);
/* nwh: how many names of the upper directory lower_has may be asked
 * about (its whiteouts), which decides whether a lower directory is
 * listed once or its names looked up one by one. */
void sfs_fsck_lower_fds_open(struct fsck *f, const struct cands *c, size_t nwh,
			     struct lower_fds *l);
void sfs_fsck_lower_fds_close(struct lower_fds *l);
/* 1 when some lower has `name` where the directory merges, 0 when none
 * has, -1 when it cannot be known. */
int sfs_fsck_lower_has(const struct lower_fds *l, const char *name);
/* The directory at path p (absolute in the branch) of lower j: an
 * O_PATH fd, -ENOENT when it is not there, or -errno. */
int sfs_fsck_lower_dir(struct fsck *f, size_t j, const char *p);

/* fsck_metacopy.c: whether regular file dfd/name is a metacopy file
 * (then its data below is checked, lf: the lower directories its parent
 * merges with; a missing one is METACOPY_NO_DATA). */
bool sfs_fsck_metacopy(struct fsck *f, int dfd, const char *name, const char *path,
		       const struct lower_fds *lf);

/* ---- fsck_helper.c: the second thread -------------------------------- */

struct sfs_fsck_task {
	void (*fn)(struct sfs_fsck_task *t);
	struct sfs_fsck_task *next;
	int state;
};

/* The helper thread: NULL when none could be started (then each task is
 * run by sfs_fsck_wait). */
struct sfs_fsck_reader *sfs_fsck_reader_start(void);
/* Every task posted must have been waited for. */
void sfs_fsck_reader_stop(struct sfs_fsck_reader *r);
/* Queues t (fn set) for the helper, which runs tasks in posting order. */
void sfs_fsck_post(struct sfs_fsck_reader *r, struct sfs_fsck_task *t);
/* Returns when t is done: run here when the helper has not taken it. */
void sfs_fsck_wait(struct sfs_fsck_reader *r, struct sfs_fsck_task *t);

/* ---- fsck_facts.c: what is read of entries before they are judged ----- */

#define FSCK_FACTS_CHUNK 512      /* entries read, then judged, at a time */
#define SFS_FSCK_FACT_UNREAD 1    /* ret of an entry not stat'ed */

struct sfs_fsck_fact {
	int ret;                 /* of its statx: 0, -errno, or UNREAD */
	bool carry;              /* its xattr list may hold a mark or record */
	struct stat st;          /* when ret is 0 */
};

/* The facts of the n typed names of directory dfd, into out[0..n): a
 * .wh. name listed as a regular file is left UNREAD unless thorough. */
struct sfs_fsck_facts {
	struct sfs_fsck_task task; /* first: the helper's share */
	bool shared;
	int dfd;
	char *const *names;
	size_t n;
	bool thorough;
	struct sfs_fsck_fact *out;
	atomic_size_t next;      /* the first name no thread has taken */
};

/* Hands j to the helper (when it is worth waking it), which starts
 * reading; facts_end reads what is left and returns when all of j is
 * read. One j at a time per reader; the caller may work between. */
void sfs_fsck_facts_begin(struct sfs_fsck_reader *r, struct sfs_fsck_facts *j);
void sfs_fsck_facts_end(struct sfs_fsck_reader *r, struct sfs_fsck_facts *j);
/* Whether dfd/name's xattr list may hold a name the checks read. */
bool sfs_fsck_may_carry_marks(int dfd, const char *name);

/* ---- fsck_tree.c: the branch's tree ----------------------------------- */

void sfs_fsck_check_tree(struct fsck *f);

/* A damaged origin record of dfd/name: ORIGIN_CORRUPT, mended when one
 * byte the checksum finds does it, else removed when removable (an
 * entry of the tree keeps its data; an index entry is left). */
void sfs_fsck_origin_damaged(struct fsck *f, int dfd, const char *name, const char *path,
			     bool removable);

/* WORKDIR_CORRUPT (sfs_fsck_opts.workdir_record). */
void sfs_fsck_check_workdir_record(struct fsck *f);

#endif
