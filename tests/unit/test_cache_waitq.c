/*
 * test_cache_waitq.c - the database pool's wait queue (cache/cache_waitq.c)
 * without a database: threads that wait are served in the order they
 * came (a thing given back goes to the oldest waiter, never to a later
 * one), a waiter that gives up leaves the queue without taking anything,
 * and waking everyone empties the queue. No wall-clock assertion: the
 * tests wait for the queue's length, however slow the machine.
 */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>

#include "cache_waitq.h"

#define NWAITERS 8

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct cache_waitq q;

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
pause_briefly(void)
{
	struct timespec ts = { 0, 1000 * 1000 };

	nanosleep(&ts, NULL);
}

/* Waits (without a time limit) until `n` threads are queued. */
static void
await_len(int n)
{
	for (;;) {
		int len;

		pthread_mutex_lock(&lock);
		len = cache_waitq_len(&q);
		pthread_mutex_unlock(&lock);
		if (len == n)
			return;
		pause_briefly();
	}
}

struct waiter_arg {
	long long deadline;
	void *got;
};

static void *
waiter_main(void *arg)
{
	struct waiter_arg *a = arg;

	pthread_mutex_lock(&lock);
	a->got = cache_waitq_wait(&q, &lock, a->deadline);
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* Starts waiters one at a time (each queued behind those already waiting
 * before the next starts). The length awaited counts the waiters queued
 * before the call: awaiting i + 1 with one already queued could return
 * before the new one was queued, or, once it was, never. */
static void
start_waiters(pthread_t *t, struct waiter_arg *a, int n, long long deadline)
{
	int before;

	pthread_mutex_lock(&lock);
	before = cache_waitq_len(&q);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < n; i++) {
		a[i].deadline = deadline;
		a[i].got = NULL;
		ck_assert_int_eq(pthread_create(&t[i], NULL, waiter_main, &a[i]), 0);
		await_len(before + i + 1);
	}
}

START_TEST(test_waiters_served_in_arrival_order)
{
	pthread_t t[NWAITERS];
	struct waiter_arg a[NWAITERS];
	static int items[NWAITERS];

	cache_waitq_init(&q);
	start_waiters(t, a, NWAITERS, now_ms() + 3600 * 1000);
	/* hand things back one at a time, the first while all wait, and in
	 * reverse order of their addresses, so that a LIFO or an arbitrary
	 * wake-up would pair them differently */
	for (int i = 0; i < NWAITERS; i++) {
		pthread_mutex_lock(&lock);
		ck_assert_int_eq(cache_waitq_hand(&q, &items[NWAITERS - 1 - i]), 1);
		ck_assert_int_eq(cache_waitq_len(&q), NWAITERS - 1 - i);
		pthread_mutex_unlock(&lock);
	}
	for (int i = 0; i < NWAITERS; i++) {
		pthread_join(t[i], NULL);
		ck_assert_ptr_eq(a[i].got, &items[NWAITERS - 1 - i]);
	}
	pthread_mutex_lock(&lock);
	ck_assert_int_eq(cache_waitq_hand(&q, &items[0]), 0);  /* nobody waits: the caller keeps it */
	pthread_mutex_unlock(&lock);
}
END_TEST

/* Many threads share few things through the queue, each taking a thing,
 * giving it back to the queue (or keeping it free when nobody waits) many
 * times: every thread finishes every round (nobody is passed over for
 * good), and the things all come back. */
#define NSHARERS 12
#define NTHINGS 3
#define NROUNDS 200

static int free_things[NTHINGS], nfree;
static int things[NTHINGS];

static void *
sharer_main(void *arg)
{
	int *done = arg;

	for (int r = 0; r < NROUNDS; r++) {
		void *got = NULL;

		pthread_mutex_lock(&lock);
		if (cache_waitq_len(&q) == 0 && nfree > 0)
			got = &things[free_things[--nfree]];
		while (got == NULL)
			got = cache_waitq_wait(&q, &lock, now_ms() + 3600 * 1000);
		pthread_mutex_unlock(&lock);
		sched_yield();
		pthread_mutex_lock(&lock);
		if (!cache_waitq_hand(&q, got))
			free_things[nfree++] = (int)((int *)got - things);
		pthread_mutex_unlock(&lock);
		(*done)++;
	}
	return NULL;
}

START_TEST(test_no_waiter_starves)
{
	pthread_t t[NSHARERS];
	int done[NSHARERS] = { 0 };

	cache_waitq_init(&q);
	nfree = NTHINGS;
	for (int i = 0; i < NTHINGS; i++)
		free_things[i] = i;
	for (int i = 0; i < NSHARERS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, sharer_main, &done[i]), 0);
	for (int i = 0; i < NSHARERS; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(done[i], NROUNDS);
	}
	ck_assert_int_eq(nfree, NTHINGS);
	ck_assert_int_eq(cache_waitq_len(&q), 0);
}
END_TEST

START_TEST(test_timed_out_waiter_leaves_the_queue)
{
	pthread_t t[3];
	struct waiter_arg a[3];
	static int item;

	cache_waitq_init(&q);
	start_waiters(t, a, 2, now_ms() + 3600 * 1000);
	/* a third waiter whose deadline has passed already gives up at once */
	a[2].deadline = now_ms() - 1;
	a[2].got = NULL;
	ck_assert_int_eq(pthread_create(&t[2], NULL, waiter_main, &a[2]), 0);
	pthread_join(t[2], NULL);
	ck_assert_ptr_null(a[2].got);
	pthread_mutex_lock(&lock);
	ck_assert_int_eq(cache_waitq_len(&q), 2);
	/* wake everyone: nothing handed over, the queue is empty */
	cache_waitq_wake_all(&q);
	ck_assert_int_eq(cache_waitq_len(&q), 0);
	ck_assert_int_eq(cache_waitq_hand(&q, &item), 0);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		ck_assert_ptr_null(a[i].got);
	}
}
END_TEST

/* A waiter in the middle of the queue that gives up: the ones before and
 * after it keep their places. */
START_TEST(test_middle_waiter_times_out)
{
	pthread_t t[3];
	struct waiter_arg a[3];
	static int items[2];

	cache_waitq_init(&q);
	start_waiters(t, a, 1, now_ms() + 3600 * 1000);
	/* the second's deadline is near: it leaves while the others stay
	 * (started without awaiting its place: it may have left already) */
	a[1].deadline = now_ms() + 50;
	a[1].got = NULL;
	ck_assert_int_eq(pthread_create(&t[1], NULL, waiter_main, &a[1]), 0);
	pthread_join(t[1], NULL);
	ck_assert_ptr_null(a[1].got);
	await_len(1);
	start_waiters(t + 2, a + 2, 1, now_ms() + 3600 * 1000);
	await_len(2);
	pthread_mutex_lock(&lock);
	ck_assert_int_eq(cache_waitq_hand(&q, &items[0]), 1);
	ck_assert_int_eq(cache_waitq_hand(&q, &items[1]), 1);
	pthread_mutex_unlock(&lock);
	pthread_join(t[0], NULL);
	pthread_join(t[2], NULL);
	ck_assert_ptr_eq(a[0].got, &items[0]);
	ck_assert_ptr_eq(a[2].got, &items[1]);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cache_waitq");
	TCase *tc = tcase_create("waitq");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_waiters_served_in_arrival_order);
	tcase_add_test(tc, test_no_waiter_starves);
	tcase_add_test(tc, test_timed_out_waiter_leaves_the_queue);
	tcase_add_test(tc, test_middle_waiter_times_out);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
