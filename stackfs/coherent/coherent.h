/* -o coherent: the read-only branches watched, and what their changes do
 * to the view. Included by stackfs/stackfs.h, after the types it uses. */
#ifndef SFS_COHERENT_H
#define SFS_COHERENT_H

/* ---- coherent.c: -o coherent, the read-only branches watched ---------- */
/* An event of a watched branch: a directory of it and a name in it
 * (NULL: the directory itself changed). */
struct sfs_coh_ev {
	uint32_t mask;            /* FAN_* (IN_* by inotify: the same bits) */
	int dirfd;                /* O_PATH */
	char *name;
};
struct sfs_coh_stats {
	atomic_uint_fast64_t events;
	atomic_uint_fast64_t notifications;
	atomic_uint_fast64_t overflows;
};
extern struct sfs_coh_stats sfs_coh_stats;
/* At mount, before the session is mounted: the watch set up on the
 * read-only branches of s, or -errno with the reason in err (the mount
 * is refused: -o coherent never falls back silently). */
int sfs_coherent_open(const struct sfs_snap *s, char *err, size_t len);
/* After a branch change: the filesystems of s's read-only branches not
 * watched yet are (0 or -errno, err). Nothing when coherent is off. */
int sfs_coherent_watch(const struct sfs_snap *s, char *err, size_t len);
/* The watcher thread (after the daemon went to the background). */
int sfs_coherent_start(void);
void sfs_coherent_stop(void);
bool sfs_coherent_on(void);
/* How the branches are watched: "fanotify", "inotify" or "off". */
const char *sfs_coherent_kind(void);

/* ---- coherent_inotify.c: -o coherent by inotify (no CAP_SYS_ADMIN) ---- */
/* On while the branches are watched by inotify: node.c then tells the
 * watch of each directory node's stack (one well-predicted branch; off
 * and with fanotify, nothing more). */
extern bool sfs_coh_ino;
/* The inotify instance made (0 or -errno); closed, with every watch. */
int sfs_cohino_open(void);
void sfs_cohino_close(void);
int sfs_cohino_fd(void);
/* Directory node n's read-only layers watched as those of st from now
 * on (the watches of its former stack given back); n freed. n's lock
 * held or n not yet shared; takes the module's lock, nothing else. */
void sfs_cohino_set(const struct sfs_node *n, const struct sfs_stack *st);
void sfs_cohino_drop(const struct sfs_node *n);
/* Those two as node hooks (while inotify watches are on). */
extern const struct sfs_node_hooks sfs_cohino_hooks;
/* The inotify events in buf into at most max events (dirfd and name
 * owned by the caller); *overflow set when events were lost. */
size_t sfs_cohino_parse(const char *buf, size_t len, struct sfs_coh_ev *ev, size_t max,
			bool *overflow);
/* Watches held, and refused since the mount. */
void sfs_cohino_counts(uint64_t *watches, uint64_t *refused);

/* ---- coherent_apply.c: what a change below does to the view ---------- */
/* A batch of events applied: the daemon's caches refreshed, the kernel
 * notified (no lock held). */
void sfs_coh_apply(const struct sfs_coh_ev *ev, size_t n);
/* Events were lost: everything the kernel caches dropped. */
void sfs_coh_overflow(void);
void sfs_coh_invalidate_all(void);

#endif
