/*
 * dn_deadline.c - the per-thread deadline of dn_deadline.h: two thread-local
 * values and a clock read.
 */
#include "dn_deadline.h"

#include <time.h>

static _Thread_local double tl_deadline;
static _Thread_local const atomic_int *tl_stop;

void
dn_deadline_set(double deadline, const atomic_int *stop)
{
	tl_deadline = deadline;
	tl_stop = stop;
}

void
dn_deadline_clear(void)
{
	tl_deadline = 0;
	tl_stop = NULL;
}

double
dn_deadline_narrow(double deadline)
{
	double previous = tl_deadline;

	if (deadline > 0 && (tl_deadline <= 0 || deadline < tl_deadline))
		tl_deadline = deadline;
	return previous;
}

void
dn_deadline_restore(double previous)
{
	tl_deadline = previous;
}

double
dn_deadline_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int
dn_deadline_check(struct dn_error *err, const char *path, const char *what)
{
	if (tl_stop != NULL && atomic_load(tl_stop))
		return dn_error_set(err, DN_ETIMEOUT, path, "%s stopped: the server is shutting down", what);
	if (tl_deadline > 0 && dn_deadline_now() >= tl_deadline)
		return dn_error_set(err, DN_ETIMEOUT, path, "%s passed the request's deadline", what);
	return 0;
}
