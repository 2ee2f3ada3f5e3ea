/*
 * api_health.c - what operators poll: GET /healthz (the process answers),
 * GET /readyz (ready for traffic, with the database's state: "memory"
 * without one, "ok", or "down"; 503 only while stopping, since a server
 * whose database is down still answers, uncached). libpq's reason names
 * hosts, ports, roles and socket paths: it goes to the log (once per
 * change) and into the answer only for a caller with a valid token)
 * and GET /metrics (Prometheus text).
 */
#include "srv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
api_healthz(struct srv_request *r)
{
	static const char ok[] = "{\"status\":\"ok\"}";

	srv_reply_text(r, 200, "application/json", ok, sizeof ok - 1);
}

void
api_readyz(struct srv_request *r)
{
	char detail[256] = "";
	const char *db = cache_state(r->srv->cache, 1, detail, sizeof detail);
	int stopping = atomic_load(&r->srv->stopping);
	json_t *j = json_pack("{s:s,s:s}", "status", stopping ? "stopping" : strcmp(db, "down") == 0 ? "degraded" :
	    "ready", "database", db);

	if (detail[0] != '\0') {
		static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
		static char logged[256];
		pthread_mutex_lock(&lock);
		if (strcmp(logged, detail) != 0) {
			snprintf(logged, sizeof logged, "%s", detail);
			srv_log("readyz: database %s: %s", db, detail);
		}
		pthread_mutex_unlock(&lock);
		if (r->authenticated)
			json_object_set_new(j, "detail", json_string(detail));
	}
	if (stopping)
		r->retry_after = 5;
	srv_reply_json(r, stopping ? 503 : 200, j);
}

void
api_metrics(struct srv_request *r)
{
	size_t len = 0;
	char *text = srv_metrics_render(r->srv, &len);

	if (text == NULL) {
		srv_reply_problem(r, 503, "out-of-memory", "Out of memory", NULL, "metrics could not be rendered");
		return;
	}
	srv_reply_owned(r, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
}
