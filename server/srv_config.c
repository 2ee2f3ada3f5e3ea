/*
 * srv_config.c - the daemon's settings: defaults, then DNNSAT_* environment
 * variables, then flags (--name value or --name=value). Every setting is
 * checked for a sensible range here, so the rest of the server can trust
 * it; an error names the flag or variable and the accepted range.
 */
#include "srv.h"
#include "dn_suggest.h"
#include "dn_number.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum kind { K_LISTEN, K_STR, K_INT, K_SECONDS, K_BYTES, K_COUNT, K_BOOL };

struct option {
	const char *flag;       /* without "--" */
	enum kind kind;
	double min, max;
	const char *help;
};

static const struct option options[] = {
	{ "listen", K_LISTEN, 0, 0, "HOST:PORT to listen on (default 127.0.0.1:8080; port 0 picks a free one)" },
	{ "database-url", K_STR, 0, 0, "PostgreSQL connection string or URL (default: in-memory cache)" },
	{ "workers", K_INT, 1, 256, "solver worker threads (default: the number of cores)" },
	{ "count-threads", K_INT, 1, 1024, "threads one count may use, while solver workers are idle (default: the "
	  "number of cores; 1: one thread per count)" },
	{ "http-threads", K_INT, 1, 256, "HTTP threads (default: --workers; they never wait on the database)" },
	{ "max-queue", K_INT, 0, 100000, "solver jobs allowed to wait before 429 (default 64)" },
	{ "deadline", K_SECONDS, 0.001, 3600, "default solver deadline per request, seconds (default 10)" },
	{ "max-deadline", K_SECONDS, 0.001, 86400, "largest deadline a request may ask for (default 60)" },
	{ "max-compute", K_SECONDS, 1, 604800, "total solver time one reduction may use (default 600)" },
	{ "max-body", K_BYTES, 1024, 1073741824, "largest request body in bytes (default 1048576)" },
	{ "max-model-bytes", K_BYTES, 1024, 2147483648.0, "largest ONNX file POST /v1/models takes, in bytes (default "
	  "67108864; JSON models take --max-body)" },
	{ "max-buffered", K_BYTES, 1048576, 1e13, "bytes of request bodies and of answers above 64 KiB that all "
	  "connections may hold at once; beyond it 503 with Retry-After (default 536870912; at least --max-body and "
	  "--max-model-bytes)" },
	{ "max-space", K_COUNT, 1, 1e30, "configurations one listing may walk (default 1e9)" },
	{ "max-connections", K_INT, 2, 100000, "concurrent connections (default 1024)" },
	{ "max-connections-per-ip", K_INT, 1, 100000, "concurrent connections from one client address, below "
	  "--max-connections (default 128); more are closed at once" },
	{ "connection-timeout", K_INT, 1, 86400, "idle connection timeout, seconds (default 30)" },
	{ "request-timeout", K_SECONDS, 0.1, 3600, "seconds a client has to send a request's head and body, "
	  "from the connection's start or its previous answer; not reset by each byte (default 30)" },
	{ "reuse-port", K_BOOL, 0, 0, "share the port with another process (SO_REUSEPORT); without it a port "
	  "in use is an error at start (flag alone, or =yes/no)" },
	{ "cache-bytes", K_BYTES, 0, 1e12, "in-memory cache size in bytes (default 268435456)" },
	{ "registry-size", K_INT, 1, 100000, "compiled queries kept in memory (default 64)" },
	{ "max-query-bytes", K_BYTES, 0, 1e12, "memory one compiled query may hold, else 413 (default 268435456; 0: no limit)" },
	{ "registry-bytes", K_BYTES, 0, 1e13, "memory all compiled queries kept may hold (default 1073741824; 0: no limit)" },
	{ "compile-grace", K_SECONDS, 0, 3600, "seconds from a request's first byte that building its model and compiling its query may use even past its deadline (default 5)" },
	{ "progress-interval", K_SECONDS, 0, 86400, "seconds of counting between saves of a count's progress to the cache (default 10; 0: every slice)" },
	{ "distribute", K_BOOL, 0, 0, "cut a count still unfinished after its first second into jobs in PostgreSQL "
	  "that every --distribute replica's idle workers count (needs --database-url; flag alone, or =yes/no; "
	  "see docs/operations.md)" },
	{ "distribute-jobs", K_INT, 1, 100000, "jobs a distributed count is cut into, at least (default 64: 4 per "
	  "worker of 3 replicas of 4 workers, and more than one per worker so that uneven jobs even out)" },
	{ "job-lease", K_SECONDS, 0.5, 3600, "seconds a claimed job stays with its replica without a renewal "
	  "(renewed every third of it while counting); a killed replica's jobs go to others after it (default 30)" },
	{ "job-keep-finished", K_SECONDS, 60, 2592000, "seconds a finished distributed count's record (no jobs "
	  "left) is kept, from which followers fetch its final result, before the sweep deletes it (default 3600)" },
	{ "job-abandoned", K_SECONDS, 60, 31536000, "seconds without a committed or leased job after which an "
	  "unfinished distributed count is swept as abandoned; the next request counts it anew (default 86400)" },
	{ "db-pool", K_INT, 1, 256, "PostgreSQL connections, and as many database reader threads (default 8)" },
	{ "token-file", K_STR, 0, 0, "file of bearer tokens, one per line: 16 or more printable ASCII characters, "
	  "no spaces (default: no authentication)" },
	{ "access-log", K_STR, 0, 0, "access log: - (stderr, default), off, or a file" },
};
#define NOPTIONS ((int)(sizeof options / sizeof options[0]))

static void
usage(FILE *f)
{
	fprintf(f, "usage: dnnsatd [options]\n\nThe dnnsat HTTP service (docs/api.md).\n\noptions "
	    "(each also an environment variable DNNSAT_NAME, e.g. DNNSAT_DATABASE_URL):\n");
	for (int i = 0; i < NOPTIONS; i++)
		fprintf(f, "  --%-24s %s\n", options[i].flag, options[i].help);
	fprintf(f, "  --%-24s %s\n", "help", "this text");
	fprintf(f, "  --%-24s %s\n", "version", "the version of dnnsatd and of its cost model");
}

static void
set_defaults(struct srv_config *c)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	memset(c, 0, sizeof *c);
	snprintf(c->host, sizeof c->host, "127.0.0.1");
	c->port = 8080;
	c->workers = cores > 0 && cores < 256 ? (int)cores : 2;
	/* a lone count on an idle server uses every core (srv_pool_lend) */
	c->count_threads = c->workers;
	c->http_threads = 0;            /* auto: see srv_start */
	c->max_queue = 64;
	c->deadline = 10;
	c->max_deadline = 60;
	c->max_compute = 600;
	c->max_body = 1 << 20;
	/* ONNX files carry their weights inline: 64 MiB holds the graphs of
	 * models up to about 16M fp32 parameters; larger ones are uploaded as
	 * the graph alone (saved with external data), whose weights the import
	 * never reads (docs/api.md, "Models") */
	c->max_model_bytes = (size_t)64 << 20;
	/* what the bodies and answers of all connections may hold: 1024
	 * connections x a 64 MiB upload would be 64 GiB */
	c->max_buffered = (size_t)512 << 20;
	c->max_space = 1e9;
	c->max_connections = 1024;
	c->max_per_ip = 128;
	c->connection_timeout = 30;
	c->request_timeout = 30;
	c->cache_bytes = (size_t)256 << 20;
	c->registry_size = 64;
	c->progress_interval = 10;
	c->compile_grace = 5;
	c->max_query_bytes = (size_t)256 << 20;
	c->registry_bytes = (size_t)1 << 30;
	c->db_pool = 8;
	c->distribute_jobs = 64;
	/* 30 s: far above a renewal's round trip (renewed every 10 s), and what a
	 * killed replica's jobs wait before others take them over */
	c->job_lease = 30;
	/* an hour: followers of a finished count poll 4 times a second, so
	 * they read the record long before; a day: 2880 leases of the default
	 * 30 s (a live claimer renews every 10 s), longer than any outage of
	 * every replica that a count should survive */
	c->job_keep_finished = 3600;
	c->job_abandoned = 86400;
}

/* "127.0.0.1:8080", "[::1]:8080", ":8080" */
static int
parse_listen(struct srv_config *c, const char *v, const char *who, struct dn_error *err)
{
	const char *colon = strrchr(v, ':');
	char *end;
	long port;
	size_t hl;

	if (colon == NULL)
		return dn_error_set(err, DN_EINVAL, who, "\"%s\" is not HOST:PORT", v);
	port = strtol(colon + 1, &end, 10);
	if (*end != '\0' || colon[1] == '\0' || port < 0 || port > 65535)
		return dn_error_set(err, DN_EINVAL, who, "the port of \"%s\" must be 0 to 65535", v);
	hl = (size_t)(colon - v);
	if (hl >= 2 && v[0] == '[' && v[hl - 1] == ']') {
		v++;
		hl -= 2;
	}
	if (hl >= sizeof c->host)
		return dn_error_set(err, DN_EINVAL, who, "host name too long");
	if (hl == 0)
		snprintf(c->host, sizeof c->host, "0.0.0.0");
	else {
		memcpy(c->host, v, hl);
		c->host[hl] = '\0';
	}
	c->port = (int)port;
	return 0;
}

/* A number with an optional unit: bytes (KiB, MiB, GiB, KB, MB, GB), counts (e9). */
static int
parse_number(const char *v, enum kind kind, double *out)
{
	const char *end;
	double x;

	if (dn_decimal(v, &x, &end) != 0)
		return -1;      /* decimal only: not 0x10, inf, nan */
	while (*end == ' ')
		end++;
	if (kind == K_BYTES && *end != '\0') {
		static const struct { const char *u; double m; } units[] = {
			{ "B", 1 }, { "KiB", 1024.0 }, { "MiB", 1048576.0 }, { "GiB", 1073741824.0 },
			{ "KB", 1e3 }, { "MB", 1e6 }, { "GB", 1e9 } };
		int found = 0;
		for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
			if (strcmp(end, units[i].u) == 0) {
				x *= units[i].m;
				found = 1;
			}
		if (!found)
			return -1;
	} else if (kind == K_SECONDS && strcmp(end, "s") == 0)
		;
	else if (*end != '\0')
		return -1;
	*out = x;
	return 0;
}

static int
apply(struct srv_config *c, const struct option *o, const char *v, const char *who, struct dn_error *err)
{
	double x = 0;

	if (o->kind == K_LISTEN)
		return parse_listen(c, v, who, err);
	if (o->kind == K_BOOL) {
		int yes = strcmp(v, "1") == 0 || strcmp(v, "yes") == 0 || strcmp(v, "true") == 0;
		if (!yes && strcmp(v, "0") != 0 && strcmp(v, "no") != 0 && strcmp(v, "false") != 0)
			return dn_error_set(err, DN_EINVAL, who, "\"%s\" must be yes or no (1 or 0, true or false)", v);
		if (strcmp(o->flag, "distribute") == 0)
			c->distribute = yes;
		else
			c->reuse_port = yes;
		return 0;
	}
	if (o->kind == K_STR) {
		char **dst = strcmp(o->flag, "database-url") == 0 ? &c->database_url :
		    strcmp(o->flag, "token-file") == 0 ? &c->token_file : &c->access_log;
		free(*dst);
		*dst = v[0] != '\0' ? strdup(v) : NULL;
		return 0;
	}
	if (parse_number(v, o->kind, &x) != 0 || !(x >= o->min && x <= o->max) ||
	    (o->kind == K_INT && x != (double)(long)x))
		return dn_error_set(err, DN_EINVAL, who, "\"%s\" must be a %s from %g to %g", v,
		    o->kind == K_INT ? "whole number" : o->kind == K_SECONDS ? "number of seconds" :
		    o->kind == K_BYTES ? "size in bytes (units KiB, MiB, GiB allowed)" : "number", o->min, o->max);
	if (strcmp(o->flag, "workers") == 0) c->workers = (int)x;
	else if (strcmp(o->flag, "count-threads") == 0) c->count_threads = (int)x;
	else if (strcmp(o->flag, "http-threads") == 0) c->http_threads = (int)x;
	else if (strcmp(o->flag, "max-queue") == 0) c->max_queue = (int)x;
	else if (strcmp(o->flag, "deadline") == 0) c->deadline = x;
	else if (strcmp(o->flag, "max-deadline") == 0) c->max_deadline = x;
	else if (strcmp(o->flag, "max-compute") == 0) c->max_compute = x;
	else if (strcmp(o->flag, "max-body") == 0) c->max_body = (size_t)x;
	else if (strcmp(o->flag, "max-model-bytes") == 0) c->max_model_bytes = (size_t)x;
	else if (strcmp(o->flag, "max-buffered") == 0) c->max_buffered = (size_t)x;
	else if (strcmp(o->flag, "max-space") == 0) c->max_space = x;
	else if (strcmp(o->flag, "max-connections") == 0) c->max_connections = (unsigned)x;
	else if (strcmp(o->flag, "max-connections-per-ip") == 0) c->max_per_ip = (unsigned)x;
	else if (strcmp(o->flag, "connection-timeout") == 0) c->connection_timeout = (unsigned)x;
	else if (strcmp(o->flag, "request-timeout") == 0) c->request_timeout = x;
	else if (strcmp(o->flag, "cache-bytes") == 0) c->cache_bytes = (size_t)x;
	else if (strcmp(o->flag, "registry-size") == 0) c->registry_size = (int)x;
	else if (strcmp(o->flag, "progress-interval") == 0) c->progress_interval = x;
	else if (strcmp(o->flag, "compile-grace") == 0) c->compile_grace = x;
	else if (strcmp(o->flag, "max-query-bytes") == 0) c->max_query_bytes = (size_t)x;
	else if (strcmp(o->flag, "registry-bytes") == 0) c->registry_bytes = (size_t)x;
	else if (strcmp(o->flag, "db-pool") == 0) c->db_pool = (int)x;
	else if (strcmp(o->flag, "distribute-jobs") == 0) c->distribute_jobs = (int)x;
	else if (strcmp(o->flag, "job-lease") == 0) c->job_lease = x;
	else if (strcmp(o->flag, "job-keep-finished") == 0) c->job_keep_finished = x;
	else if (strcmp(o->flag, "job-abandoned") == 0) c->job_abandoned = x;
	return 0;
}

int
srv_config_parse(int argc, char **argv, struct srv_config *c, struct dn_error *err)
{
	set_defaults(c);
	for (int i = 0; i < NOPTIONS; i++) {
		char name[64];
		const char *v;
		size_t n = (size_t)snprintf(name, sizeof name, "DNNSAT_%s", options[i].flag);
		for (size_t k = 7; k < n; k++)
			name[k] = options[i].flag[k - 7] == '-' ? '_' : (char)(options[i].flag[k - 7] & ~0x20);
		v = getenv(name);
		if (v != NULL && apply(c, &options[i], v, name, err) != 0)
			return -1;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *eq, *v;
		size_t n;
		int found = 0;
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 1;
		}
		if (strcmp(a, "--version") == 0) {
			printf("dnnsatd %s (cost model %s)\n", PACKAGE_VERSION, CM_VERSION);
			return 1;
		}
		if (strncmp(a, "--", 2) != 0)
			return dn_error_set(err, DN_EINVAL, a, "unexpected argument (see dnnsatd --help)");
		eq = strchr(a, '=');
		n = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
		for (int k = 0; k < NOPTIONS && !found; k++) {
			if (strlen(options[k].flag) != n || strncmp(options[k].flag, a + 2, n) != 0)
				continue;
			found = 1;
			if (eq)
				v = eq + 1;
			else if (options[k].kind == K_BOOL)
				v = "yes";      /* a switch: the flag alone turns it on */
			else if (i + 1 < argc)
				v = argv[++i];
			else
				return dn_error_set(err, DN_EINVAL, a, "needs a value");
			if (apply(c, &options[k], v, a, err) != 0)
				return -1;
		}
		if (!found) {
			const char *flags[NOPTIONS + 2];
			char name[64], hint[256];
			for (int k = 0; k < NOPTIONS; k++)
				flags[k] = options[k].flag;
			flags[NOPTIONS] = "help";
			flags[NOPTIONS + 1] = "version";
			snprintf(name, sizeof name, "%.*s", (int)(n < 63 ? n : 63), a + 2);
			if (dn_suggest(name, flags, NOPTIONS + 2, hint, sizeof hint) > 0) {
				/* "--listen, --max-space or --workers" */
				char dashed[300];
				size_t m = 0;
				for (const char *p = hint; *p != '\0' && m + 3 < sizeof dashed; p++) {
					if (p == hint || (p[-1] == ' ' && strncmp(p, "or ", 3) != 0))
						dashed[m++] = '-', dashed[m++] = '-';
					dashed[m++] = *p;
				}
				dashed[m] = '\0';
				return dn_error_set(err, DN_EINVAL, a, "unknown option; did you mean %s? (see dnnsatd --help)",
				    dashed);
			}
			return dn_error_set(err, DN_EINVAL, a, "unknown option (see dnnsatd --help)");
		}
	}
	if (c->deadline > c->max_deadline)
		c->deadline = c->max_deadline;
	if (c->distribute && c->database_url == NULL)
		return dn_error_set(err, DN_EINVAL, "--distribute", "needs --database-url: the jobs of a distributed "
		    "count are shared through PostgreSQL");
	if (c->max_buffered < c->max_body || c->max_buffered < c->max_model_bytes)
		return dn_error_set(err, DN_EINVAL, "--max-buffered", "%zu must be at least --max-body (%zu) and "
		    "--max-model-bytes (%zu): the largest body allowed must fit", c->max_buffered, c->max_body,
		    c->max_model_bytes);
	if (c->max_per_ip >= c->max_connections)
		return dn_error_set(err, DN_EINVAL, "--max-connections-per-ip", "%u must be below --max-connections "
		    "(%u): one client must not take every connection", c->max_per_ip, c->max_connections);
	return 0;
}

int
srv_config_exposed(const struct srv_config *c)
{
	int loopback = strncmp(c->host, "127.", 4) == 0 || strcmp(c->host, "::1") == 0 ||
	    strcmp(c->host, "::ffff:127.0.0.1") == 0;

	return !loopback && c->token_file == NULL;
}

void
srv_config_free(struct srv_config *c)
{
	free(c->database_url);
	free(c->token_file);
	free(c->access_log);
	memset(c, 0, sizeof *c);
}
