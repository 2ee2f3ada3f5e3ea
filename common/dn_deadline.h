/*
 * dn_deadline.h - the deadline of the work running on this thread, for the
 * phases that have no deadline argument of their own (model building, query
 * compilation): a server worker sets it before it parses and compiles a
 * request and clears it afterwards; long loops call dn_deadline_check.
 *
 * Invariants: the state is per thread (a worker's deadline never stops
 * another thread's work); with nothing set, checks never fail, so the CLI
 * and the tests run as before. A stop flag (the server's "stopping") counts
 * as a passed deadline, so SIGTERM ends a build within one check interval.
 */
#ifndef DN_DEADLINE_H
#define DN_DEADLINE_H

#include <stdatomic.h>

#include "dn_error.h"

/* Sets this thread's deadline (CLOCK_MONOTONIC seconds, 0 = none) and stop
 * flag (may be NULL). dn_deadline_clear removes both. */
void dn_deadline_set(double deadline, const atomic_int *stop);
void dn_deadline_clear(void);

/* For one phase with a deadline of its own (compiling for Z3 within its
 * share of a request): sets this thread's deadline to `deadline` when that
 * is sooner than the one set or none is set (0: no change), the stop flag
 * kept, and returns the deadline it replaced, for dn_deadline_restore. */
double dn_deadline_narrow(double deadline);
void dn_deadline_restore(double previous);

/* CLOCK_MONOTONIC seconds. */
double dn_deadline_now(void);

/* 0 while the deadline has not passed and the stop flag is clear, else -1
 * with DN_ETIMEOUT in err: "<what> passed the request's deadline" (or "...
 * stopped: the server is shutting down"). Reads the clock once per call. */
int dn_deadline_check(struct dn_error *err, const char *path, const char *what);

#endif
