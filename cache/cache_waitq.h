/*
 * cache_waitq.h - a first-come, first-served queue of threads waiting for
 * something a pool lends out (cache_pg.c: database connections). A thing
 * given back while threads wait is handed straight to the one that has
 * waited longest, so a thread that arrives later cannot take it first
 * (no barging) and no waiter is passed over (no starvation).
 *
 * Every call is made with the pool's own mutex held; the queue has no
 * lock of its own. A waiter lives on its caller's stack for one
 * cache_waitq_wait call.
 */
#ifndef DN_CACHE_WAITQ_H
#define DN_CACHE_WAITQ_H

#include <pthread.h>

struct cache_waiter {
	pthread_cond_t cv;
	void *item;                     /* what cache_waitq_hand gave it, else NULL */
	int woken;                      /* cache_waitq_wake_all: look at the pool again */
	struct cache_waiter *next;
};

struct cache_waitq {
	struct cache_waiter *head, *tail;
	int len;
};

void cache_waitq_init(struct cache_waitq *q);

/* Queues the caller at the tail and waits (releasing `lock` meanwhile)
 * until a thing is handed to it, cache_waitq_wake_all is called, or the
 * CLOCK_MONOTONIC time `deadline_ms` passes. Returns the thing handed
 * over, or NULL (woken or timed out); either way the caller is off the
 * queue and holds `lock` again. */
void *cache_waitq_wait(struct cache_waitq *q, pthread_mutex_t *lock, long long deadline_ms);

/* Hands `item` (not NULL) to the longest waiting thread: 1, or 0 when no
 * thread waits (the caller keeps it). */
int cache_waitq_hand(struct cache_waitq *q, void *item);

/* Wakes every waiting thread with nothing handed to it, to look at the
 * pool again (it went down, say). */
void cache_waitq_wake_all(struct cache_waitq *q);

/* The number of waiting threads. */
int cache_waitq_len(const struct cache_waitq *q);

#endif
