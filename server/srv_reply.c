/*
 * srv_reply.c - how handlers answer: JSON bodies, text bodies, and errors
 * as application/problem+json (RFC 9457) carrying the JSON path of the
 * offending field. This is the one place where errors of the cost model and
 * the solver (struct dn_error) become HTTP statuses.
 *
 * Invariants: a reply replaces any earlier one of the same request (the
 * earlier body is freed); the body is owned by the request until sent.
 */
#include "srv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
srv_reply_owned(struct srv_request *r, int status, const char *ctype, char *body, size_t len)
{
	free(r->resp);
	r->status = status;
	r->content_type = ctype;
	r->resp = body;
	r->resp_len = len;
}

void
srv_reply_json(struct srv_request *r, int status, json_t *body)
{
	char *text = body ? json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;

	json_decref(body);
	if (text == NULL) {
		srv_reply_problem(r, 500, "internal", "Internal error", NULL, "the response could not be encoded");
		return;
	}
	srv_reply_owned(r, status, "application/json", text, strlen(text));
}

void
srv_reply_text(struct srv_request *r, int status, const char *ctype, const char *text, size_t len)
{
	char *copy = malloc(len + 1);

	if (copy == NULL) {
		srv_reply_owned(r, 503, "text/plain", NULL, 0);
		r->retry_after = 1;
		return;
	}
	memcpy(copy, text, len);
	copy[len] = '\0';
	srv_reply_owned(r, status, ctype, copy, len);
}

/* Length of the valid UTF-8 sequence at p (RFC 3629: no overlongs, no
 * surrogates, nothing above U+10FFFF), or 0. */
static int
utf8_len(const unsigned char *p)
{
	unsigned char c = p[0], lo = 0x80, hi = 0xBF;
	int n;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		n = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		n = 3;
		if (c == 0xE0)
			lo = 0xA0;
		if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4;
		if (c == 0xF0)
			lo = 0x90;
		if (c == 0xF4)
			hi = 0x8F;
	} else
		return 0;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (int k = 2; k < n; k++)
		if ((p[k] & 0xC0) != 0x80)
			return 0;
	return n;
}

void
srv_text_clean(const char *in, char *out, size_t cap)
{
	const unsigned char *p = (const unsigned char *)in;
	size_t o = 0;

	while (*p != '\0' && o + 1 < cap) {
		int n;
		if (*p >= 0x20 && *p < 0x7f) {  /* printable ASCII: as it is */
			out[o++] = (char)*p++;
			continue;
		}
		n = utf8_len(p);
		if (n == 0 || (n == 1 && (*p < 0x20 || *p == 0x7f)) || o + (size_t)n >= cap) {
			out[o++] = '?';
			p++;
			continue;
		}
		memcpy(out + o, p, (size_t)n);
		o += (size_t)n;
		p += n;
	}
	out[o] = '\0';
}

void
srv_reply_problem(struct srv_request *r, int status, const char *slug, const char *title, const char *path,
    const char *fmt, ...)
{
	char raw[768], detail[768], instance[512], where[300], type[128];
	va_list ap;
	json_t *j;
	char *text;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof raw, fmt, ap);
	va_end(ap);
	/* what the client sent may be any bytes: JSON strings must be UTF-8 */
	srv_text_clean(raw, detail, sizeof detail);
	srv_text_clean(r->path ? r->path : "", instance, sizeof instance);
	srv_text_clean(path ? path : "", where, sizeof where);
	snprintf(type, sizeof type, "https://dnnsat.dev/problems/%s", slug);
	j = json_pack("{s:s,s:s,s:i,s:s,s:s}", "type", type, "title", title, "status", status, "detail", detail,
	    "instance", instance);
	if (j != NULL && where[0] != '\0')
		json_object_set_new(j, "path", json_string(where));
	if (j != NULL && (status == 429 || status == 503) && r->retry_after == 0)
		r->retry_after = status == 429 ? 1 : 5;
	if (j != NULL && status == 429)
		json_object_set_new(j, "retry_after", json_integer(r->retry_after));
	text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (text == NULL) {
		static const char fallback[] = "{\"title\":\"Internal error\",\"status\":500}";
		srv_reply_text(r, 500, "application/problem+json", fallback, sizeof fallback - 1);
		return;
	}
	srv_reply_owned(r, status, "application/problem+json", text, strlen(text));
}

void
srv_reply_error(struct srv_request *r, const struct dn_error *err)
{
	char path[300];
	const char *p = err->path;

	/* solver paths are relative to the request ("cursor", "config.x") or already JSON paths;
	 * the engine names a configuration "$.configuration", the API's field is "config" */
	if (p[0] == '\0')
		path[0] = '\0';
	else if (strncmp(p, "$.configuration", 15) == 0)
		snprintf(path, sizeof path, "$.config%s", p + 15);
	else if (p[0] == '$')
		snprintf(path, sizeof path, "%s", p);
	else if (r->json != NULL && strcmp(p, "cursor") && strcmp(p, "offset") && strcmp(p, "param") &&
	    strcmp(p, "per") && strcmp(p, "value"))
		snprintf(path, sizeof path, "$.%s", p);
	else
		snprintf(path, sizeof path, "%s", p);
	if (err->code == DN_EINVAL && (strcmp(path, "cursor") == 0 || strcmp(path, "offset") == 0)) {
		/* a query parameter, not a field of a body */
		srv_reply_problem(r, 400, "bad-parameter", "Bad parameter", path, "%s: %s", path, err->message);
		return;
	}
	switch (err->code) {
	case DN_EINVAL:
	case DN_ERANGE:
		srv_reply_problem(r, 422, "invalid-field", "Invalid field", path, "%s%s%s", path, path[0] ? ": " : "",
		    err->message);
		break;
	case DN_ENOENT:
		srv_reply_problem(r, 422, "unknown-name", "Unknown name", path, "%s%s%s", path, path[0] ? ": " : "",
		    err->message);
		break;
	case DN_ETOOBIG:
		srv_metrics_too_large(r->srv->metrics);
		srv_reply_problem(r, 413, "query-too-large", "Query too large", path, "%s", err->message);
		break;
	case DN_ETIMEOUT:
		r->retry_after = 5;
		srv_reply_problem(r, 503, "deadline", "Solver deadline passed", path, "%s", err->message);
		break;
	case DN_ENOMEM:
		r->retry_after = 5;
		srv_reply_problem(r, 503, "out-of-memory", "Out of memory", path, "%s", err->message);
		break;
	default:
		srv_reply_problem(r, 500, "internal", "Internal error", path, "%s", err->message);
	}
}

const char *
srv_query_arg(struct srv_request *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}
