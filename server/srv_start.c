/*
 * srv_start.c - bringing the service up and down (used by srv_main.c and by
 * the request fuzzer, which runs the real server in its own process).
 * Up: the device catalog and the template listing, bearer tokens, the
 * access log, the cache (PostgreSQL with a database URL, else in memory),
 * metrics, the solver pool, the registry, then libmicrohttpd.
 * Down, in this order: stop accepting (readyz turns 503), let solver work
 * in flight stop at its next one-second slice (queued jobs are answered
 * 503), give answered requests up to 3 s to reach their clients, stop
 * libmicrohttpd, close the database, free everything. srv_stop is safe
 * after a failed srv_start.
 */
#include "srv.h"
#include "srv_registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void srv_http_drop_job(void *arg);

/* Reads bearer tokens, one per line (blank lines and # comments skipped). */
static int
load_tokens(struct srv *s, const char *file, struct dn_error *err)
{
	FILE *f = fopen(file, "r");
	char line[1024];
	int n = 0;

	if (f == NULL)
		return dn_error_set(err, DN_EINVAL, "--token-file", "cannot open %s", file);
	s->tokens = calloc(1, sizeof *s->tokens);
	if (s->tokens == NULL) {
		fclose(f);
		return dn_error_set(err, DN_ENOMEM, "--token-file", "out of memory reading %s", file);
	}
	while (fgets(line, sizeof line, f) != NULL) {
		char **t;
		size_t len = strcspn(line, "\r\n");
		line[len] = '\0';
		if (len == 0 || line[0] == '#')
			continue;
		if (len < 16) {
			fclose(f);
			return dn_error_set(err, DN_EINVAL, "--token-file", "a token of %s is shorter than 16 characters",
			    file);
		}
		/* out of memory: fail, never serve with part of the tokens (the
		 * list stays NULL-terminated for srv_stop to free) */
		t = realloc(s->tokens, sizeof *t * (size_t)(n + 2));
		if (t == NULL || (t[n] = strdup(line)) == NULL) {
			if (t != NULL)
				s->tokens = t;
			fclose(f);
			return dn_error_set(err, DN_ENOMEM, "--token-file", "out of memory reading %s", file);
		}
		s->tokens = t;
		s->tokens[++n] = NULL;
	}
	fclose(f);
	if (n == 0)
		return dn_error_set(err, DN_EINVAL, "--token-file", "%s holds no token", file);
	return 0;
}

static int
open_access_log(struct srv *s, struct dn_error *err)
{
	const char *a = s->cfg.access_log;

	if (a == NULL || strcmp(a, "-") == 0)
		s->access_log = stderr;
	else if (strcmp(a, "off") == 0)
		s->access_log = NULL;
	else {
		s->access_log = fopen(a, "a");
		if (s->access_log == NULL)
			return dn_error_set(err, DN_EINVAL, "--access-log", "cannot open %s for appending", a);
		setvbuf(s->access_log, NULL, _IOLBF, 0);
	}
	return 0;
}

int
srv_start(struct srv *s, struct dn_error *err)
{
	char path[1024];

	pthread_mutex_init(&s->log_lock, NULL);
	s->started = srv_now();
	snprintf(path, sizeof path, "%s/devices.json", cm_data_dir());
	if (cm_catalog_load(path, &s->catalog, err) != 0 || api_templates_load(s, err) != 0)
		return -1;
	if (s->cfg.token_file != NULL && load_tokens(s, s->cfg.token_file, err) != 0)
		return -1;
	if (open_access_log(s, err) != 0)
		return -1;
	if (s->cfg.http_threads == 0) {
		/* a database read blocks its HTTP thread: keep enough threads to
		 * have every pooled connection busy */
		s->cfg.http_threads = s->cfg.workers;
		if (s->cfg.database_url != NULL && s->cfg.http_threads < s->cfg.db_pool)
			s->cfg.http_threads = s->cfg.db_pool;
	}
	if (s->cfg.database_url != NULL) {
		s->cache = cache_pg_new(s->cfg.database_url, s->cfg.db_pool, err);
		if (s->cache == NULL)
			return -1;
	} else
		s->cache = cache_mem_new(s->cfg.cache_bytes);
	s->metrics = srv_metrics_new();
	s->pool = srv_pool_new(s->cfg.workers, s->cfg.max_queue);
	s->registry = srv_registry_new(&s->catalog, s->cfg.registry_size);
	if (s->registry != NULL)
		srv_registry_set_bytes(s->registry, s->cfg.max_query_bytes, s->cfg.registry_bytes);
	if (s->cache == NULL || s->metrics == NULL || s->pool == NULL || s->registry == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory at start");
	return srv_http_start(s, err);
}

void
srv_stop(struct srv *s)
{
	atomic_store(&s->stopping, 1);
	srv_http_quiesce(s);
	if (s->pool != NULL)
		srv_pool_free(s->pool, srv_http_drop_job);
	s->pool = NULL;
	/* let answered requests reach their clients (at most 3 s) */
	for (int i = 0; i < 300 && s->mhd != NULL && atomic_load(&s->inflight) > 0; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	srv_http_stop(s);
	srv_registry_free(s->registry);
	if (s->cache != NULL)
		cache_free(s->cache);
	srv_metrics_free(s->metrics);
	json_decref(s->templates);
	cm_catalog_free(&s->catalog);
	for (char **t = s->tokens; t && *t; t++)
		free(*t);
	free(s->tokens);
	if (s->access_log != NULL && s->access_log != stderr)
		fclose(s->access_log);
	pthread_mutex_destroy(&s->log_lock);
	srv_config_free(&s->cfg);
}

