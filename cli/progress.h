/* The progress line of long commands; see progress.c. */
#ifndef SFS_CLI_PROGRESS_H
#define SFS_CLI_PROGRESS_H

#include <stdbool.h>

struct sfs_progress {
	bool tty, shown;
	long long start_ns, last_ns, delay_ns;
};

/* Shows nothing before delay_ns have passed (a quick run shows none). */
void sfs_progress_init(struct sfs_progress *p, long long delay_ns);
/* Whether a new line is due now (a terminal, the delay and the rate). */
bool sfs_progress_due(struct sfs_progress *p);
/* Writes "PREFIX PATH" in place of the previous line. */
void sfs_progress_show(struct sfs_progress *p, const char *prefix, const char *path);
/* Erases the line, if one is shown. */
void sfs_progress_erase(struct sfs_progress *p);

#endif
