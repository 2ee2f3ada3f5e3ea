/*
 * srv_pool.c - a bounded pool of worker threads with a FIFO queue, used
 * twice: the solver workers and the database readers (srv_start.c).
 * Solver work (compiling a model, counting, listing) and PostgreSQL reads
 * never run on libmicrohttpd's threads: a handler queues it here and
 * suspends its connection. The queue is bounded
 * (max_queue waiting jobs): beyond it srv_pool_submit fails and the caller
 * answers 429, so a burst of slow requests cannot stall cheap ones or grow
 * memory without limit.
 *
 * Invariants: a job submitted successfully is either run exactly once or,
 * when the pool stops first, handed to `drop` exactly once.
 *
 * Counting threads: a count may borrow the threads of idle workers for one
 * slice (srv_pool_lend), so that workers + lent threads never exceed the
 * workers while nothing waits; a job that arrives meanwhile runs at once
 * and shares the cores for the rest of that slice (1 s at most). A job
 * that waits on other processes (srv_pool_idle_begin: a distributed count
 * it follows) counts as idle meanwhile, so its thread can be lent.
 */
#include "srv.h"

#include <stdlib.h>

struct job {
	void (*fn)(void *);
	void *arg;
	struct job *next;
};

struct srv_pool {
	pthread_mutex_t lock;
	pthread_cond_t more;
	struct job *head, *tail;
	int waiting, running, max_queue, stopping;
	int lent;                       /* idle workers' threads lent to counts (srv_pool_lend) */
	int nthreads;
	pthread_t *threads;
};

/* The pool of the job running on this thread, until it calls
 * srv_pool_job_done (then NULL). */
static _Thread_local struct srv_pool *current;

void
srv_pool_job_done(void)
{
	struct srv_pool *p = current;

	if (p == NULL)
		return;
	current = NULL;
	pthread_mutex_lock(&p->lock);
	p->running--;
	pthread_mutex_unlock(&p->lock);
}

/* Adds d to the running jobs of this thread's pool (none: a no-op). */
static void
running_add(int d)
{
	struct srv_pool *p = current;

	if (p == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	p->running += d;
	pthread_mutex_unlock(&p->lock);
}

void
srv_pool_idle_begin(void)
{
	running_add(-1);
}

void
srv_pool_idle_end(void)
{
	running_add(1);
}

static void *
worker_main(void *arg)
{
	struct srv_pool *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct job *j;
		while (p->head == NULL && !p->stopping)
			pthread_cond_wait(&p->more, &p->lock);
		if (p->head == NULL)
			break;
		j = p->head;
		p->head = j->next;
		if (p->head == NULL)
			p->tail = NULL;
		p->waiting--;
		p->running++;
		pthread_mutex_unlock(&p->lock);
		current = p;
		j->fn(j->arg);
		free(j);
		srv_pool_job_done();    /* unless the job said so itself */
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct srv_pool *
srv_pool_new(int workers, int max_queue)
{
	struct srv_pool *p = calloc(1, sizeof *p);

	if (p == NULL)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->more, NULL);
	p->max_queue = max_queue;
	p->threads = calloc((size_t)workers, sizeof *p->threads);
	if (p->threads == NULL) {
		free(p);
		return NULL;
	}
	for (int i = 0; i < workers; i++) {
		if (pthread_create(&p->threads[i], NULL, worker_main, p) != 0)
			break;
		p->nthreads++;
	}
	if (p->nthreads == 0) {
		free(p->threads);
		free(p);
		return NULL;
	}
	return p;
}

int
srv_pool_submit(struct srv_pool *p, void (*fn)(void *), void *arg)
{
	struct job *j = malloc(sizeof *j);
	int rc = -1;

	if (j == NULL)
		return -1;
	j->fn = fn;
	j->arg = arg;
	j->next = NULL;
	pthread_mutex_lock(&p->lock);
	/* a job waits only when every worker is busy; count it against the queue */
	if (!p->stopping && p->waiting + p->running - p->nthreads < p->max_queue) {
		if (p->tail)
			p->tail->next = j;
		else
			p->head = j;
		p->tail = j;
		p->waiting++;
		pthread_cond_signal(&p->more);
		rc = 0;
	}
	pthread_mutex_unlock(&p->lock);
	if (rc != 0)
		free(j);
	return rc;
}

int
srv_pool_lend(struct srv_pool *p, int want)
{
	int idle;

	pthread_mutex_lock(&p->lock);
	idle = p->waiting > 0 ? 0 : p->nthreads - p->running - p->lent;
	if (want > idle)
		want = idle;
	if (want < 0)
		want = 0;
	p->lent += want;
	pthread_mutex_unlock(&p->lock);
	return want;
}

void
srv_pool_unlend(struct srv_pool *p, int n)
{
	pthread_mutex_lock(&p->lock);
	p->lent -= n;
	pthread_mutex_unlock(&p->lock);
}

void
srv_pool_load(struct srv_pool *p, int *waiting, int *running)
{
	pthread_mutex_lock(&p->lock);
	*waiting = p->waiting;
	*running = p->running;
	pthread_mutex_unlock(&p->lock);
}

void
srv_pool_free(struct srv_pool *p, void (*drop)(void *))
{
	struct job *j;

	if (p == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = 1;
	j = p->head;
	p->head = p->tail = NULL;
	p->waiting = 0;
	pthread_cond_broadcast(&p->more);
	pthread_mutex_unlock(&p->lock);
	while (j != NULL) {
		struct job *next = j->next;
		if (drop)
			drop(j->arg);
		free(j);
		j = next;
	}
	for (int i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	pthread_cond_destroy(&p->more);
	pthread_mutex_destroy(&p->lock);
	free(p->threads);
	free(p);
}
