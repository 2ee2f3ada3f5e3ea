/*
 * api_check.c - the call a trial generator makes for every trial:
 *   POST /v1/check                  a query plus "config" (an NNI sample)
 *   POST /v1/reductions/{id}/check  {"config": ...} on a reduction's query
 * Answer: {"id", "feasible", "violated":[{"constraint","path","value",
 * "limit"}], "costs":{...}} (every part with its value: POST
 * /v1/reductions/{id}/explain).
 *
 *   GET  /v1/reductions/{id}/check?name=value&...   the same, no body
 * Cheap by design: the compiled query is looked up in the registry by the
 * query's id and only evaluated, on the HTTP thread under the query's read
 * lock, by its check tape (what the answer reads: tabulated values copied
 * in, chains folded; see solver/answer_check.c). Only the first call of a
 * query goes to a solver worker to compile it.
 */
#include "srv_registry.h"
#include "dn_grow.h"

#include <stdlib.h>
#include <string.h>

/* One evaluation scratch per thread, kept between requests: a large
 * model's graph needs megabytes, which malloc would map and unmap on every
 * call. Freed by the key's destructor when the thread ends. */
struct thread_scratch {
	union expr_val *v;
	size_t n;
};

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void
scratch_free(void *p)
{
	struct thread_scratch *ts = p;

	free(ts->v);
	free(ts);
}

static void
scratch_key_init(void)
{
	pthread_key_create(&scratch_key, scratch_free);
}

static union expr_val *
thread_scratch(size_t n)
{
	struct thread_scratch *ts;

	pthread_once(&scratch_once, scratch_key_init);
	ts = pthread_getspecific(scratch_key);
	if (ts == NULL) {
		ts = calloc(1, sizeof *ts);
		if (ts == NULL || pthread_setspecific(scratch_key, ts) != 0) {
			free(ts);
			return NULL;
		}
	}
	if (dn_grow(&ts->v, &ts->n, n, sizeof *ts->v) != 0)
		return NULL;
	return ts->v;
}

/* The answer text with the query's warnings spliced in before its last
 * '}' (a capped memory budget, parameters that set nothing); the text as it
 * was when there are none, or when out of memory. */
static char *
with_warnings(char *text, size_t *len, const struct sq_query *q)
{
	json_t *w;
	char *a, *out;
	size_t alen, at = *len;

	if (q->nwarnings == 0)
		return text;
	while (at > 0 && text[at - 1] != '}')
		at--;
	w = sq_warnings_json(q);
	a = json_dumps(w, JSON_COMPACT);
	json_decref(w);
	if (at == 0 || a == NULL || (out = malloc(*len + strlen(a) + 16)) == NULL) {
		free(a);
		return text;
	}
	alen = strlen(a);
	memcpy(out, text, at - 1);
	memcpy(out + at - 1, ",\"warnings\":", 12);
	memcpy(out + at - 1 + 12, a, alen);
	memcpy(out + at - 1 + 12 + alen, text + at - 1, *len - (at - 1));
	*len += 12 + alen;
	out[*len] = '\0';
	free(a);
	free(text);
	return out;
}

/* Evaluates config on sq and replies. */
static void
check_on(struct srv_request *r, struct srv_query *sq, const json_t *config)
{
	union expr_val *scratch = thread_scratch((size_t)ans_scratch_len(&sq->e));
	struct dn_error err;
	char *text;
	size_t len;

	memset(&err, 0, sizeof err);
	if (scratch == NULL) {
		dn_error_set(&err, DN_ENOMEM, NULL, "out of memory");
		srv_reply_error(r, &err);
		return;
	}
	if (srv_query_lock(r, sq, 0) != 0)
		return;                 /* busy: on to a worker (status 0), or 503 there */
	text = ans_check_text(&sq->e, config, scratch, 1, 0, sq->id, &len, &err);
	pthread_rwlock_unlock(&sq->lock);
	if (text != NULL)
		text = with_warnings(text, &len, &sq->q);
	if (text == NULL)
		srv_reply_error(r, &err);
	else
		srv_reply_owned(r, 200, "application/json", text, len);
}

static const json_t *
config_of(struct srv_request *r)
{
	const json_t *c = json_object_get(r->json, "config");

	if (c == NULL) {
		srv_reply_problem(r, 422, "invalid-field", "Invalid field", "$.config",
		    "$.config: the configuration to check is missing (an NNI sample: {\"name\": value})");
		return NULL;
	}
	if (!json_is_object(c)) {
		srv_reply_problem(r, 422, "invalid-field", "Invalid field", "$.config", "$.config must be an object");
		return NULL;
	}
	return c;
}

void
api_check(struct srv_request *r)
{
	const json_t *config = config_of(r);
	struct srv_query *sq;
	struct dn_error err;
	json_t *canon;
	char id[33];

	if (config == NULL)
		return;
	memset(&err, 0, sizeof err);
	canon = srv_query_canonical(r->json, id, NULL);
	if (canon == NULL) {
		dn_error_set(&err, DN_ENOMEM, NULL, "out of memory");
		srv_reply_error(r, &err);
		return;
	}
	sq = srv_registry_get(r->srv->registry, id, r->in_worker ? canon : NULL, &err);
	json_decref(canon);
	if (sq == NULL) {
		if (!r->in_worker)
			r->status = 0;          /* compile it on a worker */
		else
			srv_reply_error(r, &err);
		return;
	}
	check_on(r, sq, config);
	srv_registry_release(r->srv->registry, sq);
}

/* The query string's pairs (MHD's strings, valid for the request), the
 * reserved "timeout" left out; more than ARGS_MAX of them: overflow set. */
#define ARGS_MAX 64

struct args {
	const char *names[ARGS_MAX], *values[ARGS_MAX];
	int n, overflow;
};

static enum MHD_Result
collect_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct args *a = cls;

	(void)kind;
	if (key[0] == 't' && strcmp(key, "timeout") == 0)
		return MHD_YES;
	if (a->n == ARGS_MAX) {
		a->overflow = 1;
		return MHD_NO;
	}
	a->names[a->n] = key;
	a->values[a->n++] = value;
	return MHD_YES;
}

struct args_to_json {
	json_t *config;
	const struct fs_engine *e;
};

static enum MHD_Result
add_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct args_to_json *a = cls;

	(void)kind;
	if (strcmp(key, "timeout") != 0)
		json_object_set_new(a->config, key, fs_arg_value(a->e, key, value));
	return MHD_YES;
}

/* The configuration of a query string as JSON, each value as the space's
 * parameter of its name reads it (fs_arg_value; NULL: out of memory). The
 * space is what compiling built: read without the query's lock. */
static json_t *
args_json(struct srv_request *r, const struct fs_engine *e)
{
	struct args_to_json a = { json_object(), e };

	if (a.config != NULL)
		MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, add_arg, &a);
	return a.config;
}

/* GET /v1/reductions/{id}/check?name=value&...: the same check with the
 * configuration in the query string - no body to parse, the cheapest form
 * of the per-trial call. Values are read as numbers when they are numbers
 * (a categorical whose values look like numbers needs the POST form). The
 * usual spaces are read straight from the text pairs; the others (nested
 * choices, continuous parameters bound to the model) and every error go
 * through the JSON form, which answers the same. */
void
api_reduction_check_get(struct srv_request *r)
{
	/* a query in memory, on the HTTP thread: pinned to it (no lock, no
	 * shared write per check); else found (or compiled) as usual */
	struct srv_query *pinned = r->in_worker ? NULL : srv_registry_pinned(r->srv->registry, r->params[0]);
	struct srv_query *sq = pinned != NULL ? pinned : api_reduction_query(r);
	struct args a;
	json_t *config;

	if (sq == NULL)
		return;
	a.n = a.overflow = 0;
	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, collect_arg, &a);
	for (int i = 0; i < a.n; i++)
		if (a.values[i] == NULL) {
			/* "?lr" without "=": MHD gives no value, not an empty one;
			 * neither form may read it (it is no text and no null) */
			struct dn_error err;
			char path[512];
			memset(&err, 0, sizeof err);
			snprintf(path, sizeof path, "$.config.%s", a.names[i]);
			dn_error_set(&err, DN_EINVAL, path, "'%.200s' has no value: write %.200s=VALUE", a.names[i],
			    a.names[i]);
			srv_reply_error(r, &err);
			if (pinned == NULL)
				srv_registry_release(r->srv->registry, sq);
			return;
		}
	if (!a.overflow) {
		union expr_val *scratch = thread_scratch((size_t)ans_scratch_len(&sq->e));
		struct dn_error err;
		char *text = NULL;
		size_t len = 0;
		int rc = 1;
		memset(&err, 0, sizeof err);
		/* no query lock: the text path reads only what compiling built */
		if (scratch != NULL)
			rc = ans_check_args_text(&sq->e, a.names, a.values, a.n, scratch, 1, 0, sq->id, &text, &len,
			    &err);
		if (rc == 0) {
			text = with_warnings(text, &len, &sq->q);
			srv_reply_owned(r, 200, "application/json", text, len);
		} else if (rc < 0)
			srv_reply_error(r, &err);
		if (rc <= 0) {
			if (pinned == NULL)
				srv_registry_release(r->srv->registry, sq);
			return;
		}
	}
	if (!a.overflow) {
		struct dn_error err;
		int rc;
		memset(&err, 0, sizeof err);
		if (srv_query_lock(r, sq, 0) != 0) {
			if (pinned == NULL)
				srv_registry_release(r->srv->registry, sq);
			return;         /* busy: on to a worker (status 0), or 503 there */
		}
		rc = fs_args_readable(&sq->e, a.names, a.values, a.n, &err);
		pthread_rwlock_unlock(&sq->lock);
		if (rc != 0) {
			srv_reply_error(r, &err);
			if (pinned == NULL)
				srv_registry_release(r->srv->registry, sq);
			return;
		}
	}
	config = args_json(r, &sq->e);
	if (config == NULL)
		srv_reply_problem(r, 503, "out-of-memory", "Out of memory", NULL, "out of memory");
	else
		check_on(r, sq, config);
	json_decref(config);
	if (pinned == NULL)
		srv_registry_release(r->srv->registry, sq);
}

void
api_reduction_check(struct srv_request *r)
{
	const json_t *config = config_of(r), *v;
	struct srv_query *sq;
	const char *key;

	if (config == NULL)
		return;
	/* the query is the reduction's: a field beside config (a budget, a
	 * space) would be silently ignored */
	json_object_foreach(r->json, key, v) {
		char path[80];
		if (strcmp(key, "config") == 0 || strcmp(key, "timeout") == 0)
			continue;
		srv_text_clean(key, path + 2, sizeof path - 2);
		path[0] = '$';
		path[1] = '.';
		srv_reply_problem(r, 422, "invalid-field", "Invalid field", path, "%s: unknown field (the body holds "
		    "only \"config\"; the query is the reduction's)", path);
		return;
	}
	sq = api_reduction_query(r);
	if (sq == NULL)
		return;
	check_on(r, sq, config);
	srv_registry_release(r->srv->registry, sq);
}
