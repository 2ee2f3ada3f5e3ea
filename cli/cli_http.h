/*
 * cli_http.h - the CLI's HTTP client for dnnsatd (libcurl): JSON requests
 * to one server, with a bearer token when given, answers parsed, and
 * problem details (RFC 9457, docs/api.md) turned into a dn_error that
 * names the field the server blames. One connection, reused; not for use
 * from several threads.
 */
#ifndef DN_CLI_HTTP_H
#define DN_CLI_HTTP_H

#include <stdio.h>

#include <curl/curl.h>
#include <jansson.h>

#include "dn_error.h"

struct cli_http {
	CURL *curl;
	int global;                     /* curl_global_init done: cli_http_close undoes it */
	char *base;                     /* "http://host:port" (no trailing slash) */
	struct curl_slist *headers;     /* Accept, Content-Type, Authorization */
	FILE *out;                      /* the answer being received (open_memstream on body) */
	char *body;                     /* the last answer's body (NUL-terminated) */
	size_t len, size;               /* its length; the stream's size */
	int has_token;                  /* an Authorization header is sent */
	double retry_after;             /* the last answer's Retry-After (seconds), 0 if none */
	char errbuf[CURL_ERROR_SIZE];
};

/* Prepares a client for the server at `url` ("http://127.0.0.1:8080",
 * with or without a trailing slash); token NULL or "" for none. No request
 * is made. 0 or -1 with err; cli_http_close either way. */
int cli_http_open(struct cli_http *h, const char *url, const char *token, struct dn_error *err);
void cli_http_close(struct cli_http *h);

/* Sends GET (body NULL) or POST (body as JSON) to base + path (path begins
 * with "/" and carries the query string) and waits up to wait_s seconds
 * plus a margin for the answer. Returns the HTTP status with *out the
 * answer parsed as JSON (a new reference; NULL when it is not JSON), or -1
 * with err (DN_EINTERNAL: cannot connect, no answer in time, a broken
 * answer), naming the server's URL. */
int cli_http_json(struct cli_http *h, const char *path, const json_t *body, double wait_s, json_t **out,
    struct dn_error *err);

/* Sets err from an error answer: the problem's "detail" (which starts with
 * the JSON path it blames) as the message, with DN_EINVAL for a 4xx (bad
 * input) and DN_EINTERNAL otherwise. Returns -1. */
int cli_http_problem(const struct cli_http *h, int status, const json_t *answer, struct dn_error *err);

/* `s` escaped for a query string: malloc'd, the caller frees; NULL when
 * out of memory. */
char *cli_http_escape(struct cli_http *h, const char *s);

#endif
