/*
 * srv_route.c - the route table: every endpoint of docs/api.md, its handler
 * and how it runs (inline on the HTTP thread, or on a solver worker). A
 * newcomer reads this table to find the file that answers a URL.
 *
 * Matching: a pattern is split on '/'; "{}" matches one non-empty segment,
 * a final "*" matches the rest of the path. A path that matches a pattern
 * only with another method is a 405 with the methods in Allow. A route
 * that lists its query parameters refuses others with a 400 (srv_http.c).
 */
#include "srv.h"

#include <stdio.h>
#include <string.h>

static const struct srv_route routes[] = {
	{ "GET", "/", api_dashboard, SRV_R_PUBLIC, "dashboard" },
	{ "GET", "/ui/*", api_web_file, SRV_R_PUBLIC, "dashboard_files" },
	{ "GET", "/healthz", api_healthz, SRV_R_PUBLIC, "healthz" },
	/* the database's state (a probe) and size: on a database reader, as
	 * reduction reads, so that a hung database never holds an HTTP thread */
	{ "GET", "/readyz", api_readyz, SRV_R_PUBLIC, "readyz" },
	{ "GET", "/metrics", api_metrics, SRV_R_DB, "metrics" },
	{ "GET", "/openapi.json", api_openapi, SRV_R_PUBLIC, "openapi" },
	{ "GET", "/schemas/*", api_schema_file, SRV_R_PUBLIC, "schemas" },
	{ "GET", "/v1/templates", api_templates, 0, "templates", "timeout" },
	{ "GET", "/v1/templates/{}", api_template_one, 0, "template", "timeout" },
	{ "GET", "/v1/devices", api_devices, 0, "devices", "timeout" },
	{ "POST", "/v1/models", api_models_create, SRV_R_UPLOAD | SRV_R_POOL, "models_create" },
	{ "GET", "/v1/models/{}", api_models_get, 0, "models_get", "timeout" },
	{ "POST", "/v1/estimate", api_estimate, SRV_R_BODY | SRV_R_QUERY | SRV_R_POOL, "estimate", "timeout" },
	{ "POST", "/v1/check", api_check, SRV_R_BODY | SRV_R_QUERY, "check", "timeout" },
	{ "POST", "/v1/reductions", api_reduction_create, SRV_R_BODY | SRV_R_QUERY | SRV_R_DB, "reductions_create",
	  "timeout" },
	{ "GET", "/v1/reductions/{}", api_reduction_get, SRV_R_DB, "reductions_get", "timeout" },
	{ "POST", "/v1/reductions/{}/check", api_reduction_check, SRV_R_BODY, "reductions_check", "timeout" },
	{ "GET", "/v1/reductions/{}/check", api_reduction_check_get, 0, "reductions_check_query" },
	{ "GET", "/v1/reductions/{}/configurations", api_reduction_configurations, SRV_R_POOL,
	  "reductions_configurations", "limit offset cursor format timeout" },
	{ "GET", "/v1/reductions/{}/samples", api_reduction_samples, SRV_R_POOL, "reductions_samples",
	  "n seed timeout count_timeout" },
	{ "GET", "/v1/reductions/{}/explain", api_reduction_explain, SRV_R_POOL, "reductions_explain",
	  "param value timeout" },
	{ "POST", "/v1/reductions/{}/explain", api_reduction_explain, SRV_R_BODY | SRV_R_POOL,
	  "reductions_explain_config", "timeout" },
	{ "GET", "/v1/reductions/{}/max", api_reduction_max, SRV_R_POOL, "reductions_max", "param per timeout" },
	{ "GET", "/v1/reductions/{}/min", api_reduction_min, SRV_R_POOL, "reductions_min", "param per timeout" },
	{ "GET", "/v1/reductions/{}/heatmap", api_reduction_heatmap, SRV_R_POOL, "reductions_heatmap",
	  "x y timeout" },
};
#define NROUTES ((int)(sizeof routes / sizeof routes[0]))

int
srv_route_count(void)
{
	return NROUTES;
}

const struct srv_route *
srv_route_at(int i)
{
	return &routes[i];
}

/* Where a matched parameter lies in the path (copied only for the route
 * that is chosen). */
struct span {
	const char *at;
	size_t len;
};

static int route_match(const char *pattern, const char *path, struct span params[2]);

int
srv_route_of_path(const char *path)
{
	int found = -1;

	for (int i = 0; i < NROUTES; i++) {
		struct span at[2] = { { NULL, 0 }, { NULL, 0 } };
		if (!route_match(routes[i].pattern, path, at))
			continue;
		if (found >= 0)
			return -1;
		found = i;
	}
	return found;
}

/* 1 when `path` matches `pattern`, with the parameters' spans. */
static int
route_match(const char *pattern, const char *path, struct span params[2])
{
	const char *p = pattern, *s = path;
	int np = 0;

	while (*p != '\0') {
		if (p[0] == '{' && p[1] == '}') {
			const char *end = strchr(s, '/');
			size_t n = end ? (size_t)(end - s) : strlen(s);
			if (n == 0 || n >= 256 || np >= 2)
				return 0;
			params[np].at = s;
			params[np++].len = n;
			s += n;
			p += 2;
		} else if (p[0] == '*') {
			size_t n = strlen(s);
			if (n == 0 || n >= 256 || np >= 2)
				return 0;
			params[np].at = s;
			params[np++].len = n;
			return 1;
		} else if (*p++ != *s++)
			return 0;
	}
	return *s == '\0';
}

/* Does a request with `method` go to route r's handler (HEAD as GET)? */
static int
method_serves(const struct srv_route *r, const char *method)
{
	return strcmp(r->method, method) == 0 || (strcmp(method, "HEAD") == 0 && strcmp(r->method, "GET") == 0);
}

static const struct srv_route *
chosen(int i, const struct span at[2], int *status, char params[2][256])
{
	for (int k = 0; k < 2; k++) {
		if (at[k].at != NULL)
			memcpy(params[k], at[k].at, at[k].len);
		params[k][at[k].len] = '\0';
	}
	*status = 200;
	return &routes[i];
}

/* The route this thread matched last, tried first: a trial generator
 * calls one route over and over. Patterns of one method are disjoint (no
 * path matches two of them: test_routes checks every pair), so a hit is
 * the answer the scan in table order gives. */
static __thread int last_route = -1;

const struct srv_route *
srv_route_find(const char *method, const char *path, int *status, char *allow, size_t allow_len,
    char params[2][256])
{
	int any = 0;

	allow[0] = '\0';
	if (last_route >= 0 && method_serves(&routes[last_route], method)) {
		struct span at[2] = { { NULL, 0 }, { NULL, 0 } };
		if (route_match(routes[last_route].pattern, path, at))
			return chosen(last_route, at, status, params);
	}
	for (int i = 0; i < NROUTES; i++) {
		struct span at[2] = { { NULL, 0 }, { NULL, 0 } };
		if (!route_match(routes[i].pattern, path, at))
			continue;
		if (method_serves(&routes[i], method)) {
			last_route = i;
			return chosen(i, at, status, params);
		}
		if (strstr(allow, routes[i].method) == NULL) {
			size_t n = strlen(allow);
			snprintf(allow + n, allow_len - n, "%s%s", any ? ", " : "", routes[i].method);
		}
		any = 1;
	}
	*status = any ? 405 : 404;
	return NULL;
}
