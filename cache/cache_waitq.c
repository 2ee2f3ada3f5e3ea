/*
 * cache_waitq.c - the first-come, first-served wait queue of
 * cache_waitq.h. Each waiter has a condition variable of its own, so a
 * hand-over wakes exactly the thread it is for (a shared condition
 * variable wakes an arbitrary thread, and a newcomer that takes the lock
 * before the woken one gets there first). The thing is set in the waiter
 * before it is woken: when it runs again it owns it, whatever other
 * threads did in between.
 *
 * Invariants: the list holds exactly the threads inside cache_waitq_wait
 * that have neither been handed a thing nor woken, oldest first; len is
 * its length.
 */
#include "cache_waitq.h"

#include <errno.h>
#include <stddef.h>
#include <time.h>

void
cache_waitq_init(struct cache_waitq *q)
{
	q->head = q->tail = NULL;
	q->len = 0;
}

/* Takes the oldest waiter off the list (NULL when none). */
static struct cache_waiter *
cache_waitq_pop(struct cache_waitq *q)
{
	struct cache_waiter *w = q->head;

	if (w != NULL) {
		q->head = w->next;
		if (q->head == NULL)
			q->tail = NULL;
		w->next = NULL;
		q->len--;
	}
	return w;
}

/* Takes `w` off the list wherever it is (a waiter that timed out). */
static void
cache_waitq_remove(struct cache_waitq *q, struct cache_waiter *w)
{
	struct cache_waiter **pp = &q->head, *prev = NULL;

	while (*pp != NULL && *pp != w) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	if (*pp == NULL)
		return;
	*pp = w->next;
	if (q->tail == w)
		q->tail = prev;
	w->next = NULL;
	q->len--;
}

void *
cache_waitq_wait(struct cache_waitq *q, pthread_mutex_t *lock, long long deadline_ms)
{
	struct cache_waiter w;
	pthread_condattr_t attr;
	struct timespec ts = { .tv_sec = deadline_ms / 1000, .tv_nsec = (deadline_ms % 1000) * 1000000 };
	int rc = 0;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&w.cv, &attr);
	pthread_condattr_destroy(&attr);
	w.item = NULL;
	w.woken = 0;
	w.next = NULL;
	if (q->tail != NULL)
		q->tail->next = &w;
	else
		q->head = &w;
	q->tail = &w;
	q->len++;
	while (w.item == NULL && !w.woken && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&w.cv, lock, &ts);
	if (w.item == NULL && !w.woken)
		cache_waitq_remove(q, &w);      /* timed out: still queued */
	pthread_cond_destroy(&w.cv);
	return w.item;
}

int
cache_waitq_hand(struct cache_waitq *q, void *item)
{
	struct cache_waiter *w = cache_waitq_pop(q);

	if (w == NULL)
		return 0;
	w->item = item;
	pthread_cond_signal(&w->cv);
	return 1;
}

void
cache_waitq_wake_all(struct cache_waitq *q)
{
	struct cache_waiter *w;

	while ((w = cache_waitq_pop(q)) != NULL) {
		w->woken = 1;
		pthread_cond_signal(&w->cv);
	}
}

int
cache_waitq_len(const struct cache_waitq *q)
{
	return q->len;
}
