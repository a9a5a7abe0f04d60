/* fsck's second thread (fsck_int.h, "fsck_helper.c"): it runs the tasks
 * the walk posts (reading the facts of a chunk of entries, listing the
 * next directory) in the order posted, while the walk's own thread goes
 * on. On a cold cache a run is CPU in the kernel (lookups, inode reads
 * and allocations, directory blocks), not waiting on the disk, so this
 * is what puts the second CPU to work. A task the helper has not taken
 * when the walk needs it is run by the walk itself: nothing waits on a
 * sleeping helper. */
#include <pthread.h>
#include <stdlib.h>

#include "whiteout/fsck_int.h"

enum { QUEUED = 1, RUNNING, DONE };

struct sfs_fsck_reader {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t posted;   /* a task to take, or quit */
	pthread_cond_t done;     /* a task the helper ran is done */
	struct sfs_fsck_task *head, *tail;
	bool quit;
};

static void *helper(void *arg)
{
	struct sfs_fsck_reader *r = arg;
	struct sfs_fsck_task *t;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		while (!r->quit && !r->head)
			pthread_cond_wait(&r->posted, &r->mu);
		if (r->quit)
			break;
		t = r->head;
		r->head = t->next;
		if (!r->head)
			r->tail = NULL;
		t->state = RUNNING;
		pthread_mutex_unlock(&r->mu);
		t->fn(t);
		pthread_mutex_lock(&r->mu);
		t->state = DONE;
		pthread_cond_broadcast(&r->done);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

struct sfs_fsck_reader *sfs_fsck_reader_start(void)
{
	struct sfs_fsck_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->posted, NULL);
	pthread_cond_init(&r->done, NULL);
	if (pthread_create(&r->thread, NULL, helper, r) != 0) {
		pthread_cond_destroy(&r->done);
		pthread_cond_destroy(&r->posted);
		pthread_mutex_destroy(&r->mu);
		free(r);
		return NULL;            /* the walk runs every task itself */
	}
	return r;
}

/* Every posted task was waited for: the queue is empty. */
void sfs_fsck_reader_stop(struct sfs_fsck_reader *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	r->quit = true;
	pthread_cond_signal(&r->posted);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->thread, NULL);
	pthread_cond_destroy(&r->done);
	pthread_cond_destroy(&r->posted);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

void sfs_fsck_post(struct sfs_fsck_reader *r, struct sfs_fsck_task *t)
{
	t->next = NULL;
	t->state = QUEUED;
	if (!r)
		return;                 /* run by sfs_fsck_wait */
	pthread_mutex_lock(&r->mu);
	if (r->tail)
		r->tail->next = t;
	else
		r->head = t;
	r->tail = t;
	pthread_cond_signal(&r->posted);
	pthread_mutex_unlock(&r->mu);
}

/* Takes t out of the queue (it is there): the queue is short, at most a
 * task per directory level of the walk and one chunk's. */
static void unqueue(struct sfs_fsck_reader *r, struct sfs_fsck_task *t)
{
	struct sfs_fsck_task **pp = &r->head, *prev = NULL;

	while (*pp != t) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	*pp = t->next;
	if (r->tail == t)
		r->tail = prev;
}

void sfs_fsck_wait(struct sfs_fsck_reader *r, struct sfs_fsck_task *t)
{
	bool mine = false;

	if (!r) {
		if (t->state == QUEUED)
			t->fn(t);
		t->state = DONE;
		return;
	}
	pthread_mutex_lock(&r->mu);
	if (t->state == QUEUED) {
		unqueue(r, t);
		t->state = RUNNING;
		mine = true;
	}
	while (!mine && t->state != DONE)
		pthread_cond_wait(&r->done, &r->mu);
	pthread_mutex_unlock(&r->mu);
	if (mine) {
		t->fn(t);
		t->state = DONE;
	}
}
