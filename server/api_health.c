/*
 * api_health.c - what operators poll: GET /healthz (the process answers),
 * GET /readyz (ready for traffic, with the database's state: "memory"
 * without one, "ok", or "down"; 503 only while stopping, since a server
 * whose database is down still answers, uncached). /readyz reads the state
 * the cache keeps, which every query and the database prober (srv_ready.c,
 * a ping a second) update: it never waits on the database. libpq's reason
 * names hosts, ports, roles and socket paths: the prober logs it (once per
 * change) and the answer carries it only for a caller with a valid token)
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
	const char *db = cache_state(r->srv->cache, 0, detail, sizeof detail);
	int stopping = atomic_load(&r->srv->stopping);
	json_t *j = json_pack("{s:s,s:s}", "status", stopping ? "stopping" : strcmp(db, "down") == 0 ? "degraded" :
	    "ready", "database", db);

	if (detail[0] != '\0' && r->authenticated)
		json_object_set_new(j, "detail", json_string(detail));
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
