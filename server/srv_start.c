/*
 * srv_start.c - bringing the service up and down (used by srv_main.c and by
 * the request fuzzer, which runs the real server in its own process).
 * Up: the device catalog and the template listing, bearer tokens, the
 * access log, the cache (PostgreSQL with a database URL, else in memory),
 * metrics, the solver pool (and with PostgreSQL the database readers, one
 * per pooled connection), the registry, the connection guard, the
 * claimers of distributed counts (--distribute), the database prober
 * (srv_ready.c), then
 * libmicrohttpd (a warning in the log when it listens beyond loopback
 * without tokens).
 * Down, in this order: stop accepting (readyz turns 503), let solver work
 * in flight stop at its next one-second slice (queued jobs are answered
 * 503; the readers first, as a reader may hand its request on to a solver
 * worker), give answered requests up to 3 s to reach their clients, stop
 * libmicrohttpd, close the database, free everything. srv_stop is safe
 * after a failed srv_start.
 */
#include "srv.h"
#include "dn_file.h"
#include "srv_digest.h"
#include "srv_registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

void srv_http_drop_job(void *arg);

/* Reads bearer tokens, one per line (blank lines and # comments skipped).
 * A token is printable ASCII without spaces (RFC 6750's b64token and
 * more): a line with spaces around or inside a token, or with other bytes,
 * makes the whole file an error naming the line, since such a token could
 * never match what a client sends. */
static int
load_tokens(struct srv *s, const char *file, struct dn_error *err)
{
	FILE *f = fopen(file, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t got;
	int n = 0, lineno = 0, rc = 0;

	if (f == NULL)
		return dn_error_set(err, DN_EINVAL, "--token-file", "cannot open %s", file);
	s->tokens = calloc(1, sizeof *s->tokens);
	if (s->tokens == NULL)
		rc = dn_error_set(err, DN_ENOMEM, "--token-file", "out of memory reading %s", file);
	while (rc == 0 && (got = getline(&line, &cap, f)) >= 0) {
		char **t;
		size_t len = (size_t)got;
		lineno++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			len--;
		line[len] = '\0';
		if (len == 0 || line[0] == '#')
			continue;
		for (size_t i = 0; i < len && rc == 0; i++)
			if ((unsigned char)line[i] <= 0x20 || (unsigned char)line[i] >= 0x7f)
				rc = dn_error_set(err, DN_EINVAL, "--token-file", "%s line %d: a token may hold only printable "
				    "ASCII characters without spaces (byte %zu is 0x%02x)", file, lineno, i + 1,
				    (unsigned)(unsigned char)line[i]);
		if (rc == 0 && len < 16)
			rc = dn_error_set(err, DN_EINVAL, "--token-file", "%s line %d: a token is shorter than 16 "
			    "characters", file, lineno);
		if (rc != 0)
			break;
		/* out of memory: fail, never serve with part of the tokens (the
		 * list stays NULL-terminated for srv_stop to free) */
		t = realloc(s->tokens, sizeof *t * (size_t)(n + 2));
		if (t != NULL)
			s->tokens = t;
		if (t == NULL || (t[n] = strdup(line)) == NULL) {
			rc = dn_error_set(err, DN_ENOMEM, "--token-file", "out of memory reading %s", file);
			break;
		}
		s->tokens[++n] = NULL;
	}
	free(line);
	fclose(f);
	if (rc == 0 && n == 0)
		return dn_error_set(err, DN_EINVAL, "--token-file", "%s holds no token", file);
	return rc;
}

/* Room for --max-connections sockets: the soft limit on open files is
 * raised toward the hard one when it is lower (a warning when it cannot). */
static void
raise_file_limit(const struct srv *s)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)s->cfg.max_connections + 64 + (rlim_t)s->cfg.db_pool;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < want)
		srv_log("warning: open files are limited to %llu, fewer than --max-connections %u needs",
		    (unsigned long long)rl.rlim_cur, s->cfg.max_connections);
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

/* Loads the device catalog and makes query ids hash its file's SHA-256
 * (srv_query_id_salt): the bytes are read once, hashed, then parsed. */
static int
load_catalog(struct srv *s, const char *path, struct dn_error *err)
{
	char hex[SRV_SHA256_HEX], *text;
	size_t len;
	int rc;

	text = dn_file_read(path, 0, "devices", &len, err);
	if (text == NULL)
		return -1;
	srv_sha256_hex(text, len, hex);
	rc = cm_catalog_parse(path, text, len, &s->catalog, err);
	free(text);
	if (rc == 0)
		srv_query_id_salt(hex);
	return rc;
}

int
srv_start(struct srv *s, struct dn_error *err)
{
	char path[1024];

	pthread_mutex_init(&s->log_lock, NULL);
	s->started = srv_now();
	snprintf(path, sizeof path, "%s/devices.json", cm_data_dir());
	if (load_catalog(s, path, err) != 0 ||
	    api_templates_load(s, err) != 0)
		return -1;
	if (s->cfg.token_file != NULL && load_tokens(s, s->cfg.token_file, err) != 0)
		return -1;
	if (open_access_log(s, err) != 0)
		return -1;
	/* no HTTP thread waits on the database (the readers do): as many
	 * HTTP threads as cores, which --workers defaults to */
	if (s->cfg.http_threads == 0)
		s->cfg.http_threads = s->cfg.workers;
	if (s->cfg.database_url != NULL) {
		s->cache = cache_pg_new(s->cfg.database_url, s->cfg.db_pool, err);
		if (s->cache == NULL)
			return -1;
	} else
		s->cache = cache_mem_new(s->cfg.cache_bytes);
	s->metrics = srv_metrics_new();
	s->pool = srv_pool_new(s->cfg.workers, s->cfg.max_queue);
	/* one reader per pooled connection: the readers alone never exhaust
	 * the pool (solver workers, readyz and metrics share it, FIFO); a
	 * connection has one request in flight at most, so the readers' queue
	 * cannot fill up */
	if (s->cfg.database_url != NULL)
		s->readers = srv_pool_new(s->cfg.db_pool, (int)s->cfg.max_connections);
	s->registry = srv_registry_new(&s->catalog, s->cfg.registry_size);
	if (s->registry != NULL)
		srv_registry_set_bytes(s->registry, s->cfg.max_query_bytes, s->cfg.registry_bytes);
	s->guard = srv_guard_new(s->cfg.request_timeout, srv_http_timed_out, s);
	if (s->cache == NULL || s->metrics == NULL || s->pool == NULL || s->registry == NULL || s->guard == NULL ||
	    (s->cfg.database_url != NULL && s->readers == NULL))
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory at start");
	if (s->cfg.distribute && (s->dist = srv_dist_new(s)) == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory at start");
	if (s->cfg.database_url != NULL && (s->ready = srv_ready_new(s)) == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory at start (the database prober)");
	raise_file_limit(s);
	if (srv_http_start(s, err) != 0)
		return -1;
	if (srv_config_exposed(&s->cfg))
		srv_log("warning: listening on %s beyond loopback without --token-file: anyone who reaches port %d "
		    "can use every endpoint", s->cfg.host, s->cfg.port);
	return 0;
}

void
srv_stop(struct srv *s)
{
	atomic_store(&s->stopping, 1);
	srv_http_quiesce(s);
	if (s->readers != NULL)
		srv_pool_free(s->readers, srv_http_drop_job);
	s->readers = NULL;
	/* the claimers borrow the pool's workers and use the registry and
	 * the cache: they stop (giving back the job they count) before those go */
	srv_dist_free(s->dist);
	s->dist = NULL;
	srv_ready_free(s->ready);
	s->ready = NULL;
	if (s->pool != NULL)
		srv_pool_free(s->pool, srv_http_drop_job);
	s->pool = NULL;
	/* let answered requests reach their clients (at most 3 s) */
	for (int i = 0; i < 300 && s->mhd != NULL && atomic_load(&s->inflight) > 0; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	srv_http_stop(s);
	srv_guard_free(s->guard);
	s->guard = NULL;
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

