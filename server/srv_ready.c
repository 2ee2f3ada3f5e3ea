/*
 * srv_ready.c - the database prober behind GET /readyz: with PostgreSQL, one
 * thread pings the database (cache_state with probe, a SELECT 1 bounded by
 * the cache's statement and connect timeouts) every SRV_READY_PROBE_MS and
 * logs each change of its state and reason ("readyz: database down: ...").
 * /readyz itself reads the state the cache keeps (every query updates it,
 * and so does this prober when no query runs), so it answers at once: a
 * hung database no longer holds a probe, nor a database reader per probe,
 * for the ping's timeout, and a storm of readiness probes sends nothing to
 * the database. The state lags a hang by at most one interval plus the
 * ping's timeout; an outage that breaks connections is seen at once.
 */
#include "srv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SRV_READY_PROBE_MS 1000

struct srv_ready {
	struct srv *srv;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;            /* signalled by srv_ready_free */
	int stop;
	char logged[320];               /* the state and reason last logged */
};

/* Logs the database's state when it or its reason changed since the last
 * line (the reason names hosts and roles: the log, not the answer, keeps it
 * for callers without a token). */
static void
note_state(struct srv_ready *p, const char *db, const char *detail)
{
	char line[sizeof p->logged];

	if (detail[0] == '\0')
		return;
	snprintf(line, sizeof line, "%s: %s", db, detail);
	if (strcmp(line, p->logged) != 0) {
		snprintf(p->logged, sizeof p->logged, "%s", line);
		srv_log("readyz: database %s", line);
	}
}

static void *
prober(void *arg)
{
	struct srv_ready *p = arg;

	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		char detail[256];
		const char *db;
		struct timespec until;

		pthread_mutex_unlock(&p->lock);
		db = cache_state(p->srv->cache, 1, detail, sizeof detail);
		note_state(p, db, detail);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += SRV_READY_PROBE_MS / 1000;
		until.tv_nsec += (long)(SRV_READY_PROBE_MS % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&p->lock);
		while (!p->stop && pthread_cond_timedwait(&p->wake, &p->lock, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct srv_ready *
srv_ready_new(struct srv *s)
{
	struct srv_ready *p = calloc(1, sizeof *p);

	if (p == NULL)
		return NULL;
	p->srv = s;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	if (pthread_create(&p->thread, NULL, prober, p) != 0) {
		pthread_cond_destroy(&p->wake);
		pthread_mutex_destroy(&p->lock);
		free(p);
		return NULL;
	}
	return p;
}

void
srv_ready_free(struct srv_ready *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
