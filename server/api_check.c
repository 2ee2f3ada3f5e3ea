/*
 * api_check.c - the call a trial generator makes for every trial:
 *   POST /v1/check                  a query plus "config" (an NNI sample)
 *   POST /v1/reductions/{id}/check  {"config": ...} on a reduction's query
 * Answer: {"id", "feasible", "violated":[...], "constraints":[...],
 * "costs":{...}}.
 *
 * Cheap by design: the compiled query is looked up in the registry by the
 * query's id and only evaluated (two passes over the expression graph, on
 * the HTTP thread, under the query's read lock). Only the first call of a
 * query goes to a solver worker to compile it.
 */
#include "srv_registry.h"

#include <stdlib.h>
#include <string.h>

/* Evaluates config on sq and replies. */
static void
check_on(struct srv_request *r, struct srv_query *sq, const json_t *config)
{
	union expr_val *scratch = malloc(sizeof *scratch * (size_t)ans_scratch_len(&sq->e));
	struct dn_error err;
	json_t *out;

	memset(&err, 0, sizeof err);
	if (scratch == NULL) {
		dn_error_set(&err, DN_ENOMEM, NULL, "out of memory");
		srv_reply_error(r, &err);
		return;
	}
	pthread_rwlock_rdlock(&sq->lock);
	out = ans_check(&sq->e, config, scratch, 1, &err);
	pthread_rwlock_unlock(&sq->lock);
	free(scratch);
	if (out == NULL) {
		if (strncmp(err.path, "$.configuration", 15) == 0) {
			char p[256];
			dn_fmt(p, sizeof p, "$.config%s", err.path + 15);
			memcpy(err.path, p, sizeof err.path);
		}
		srv_reply_error(r, &err);
		return;
	}
	json_object_set_new(out, "id", json_string(sq->id));
	srv_reply_json(r, 200, out);
}

static const json_t *
config_of(struct srv_request *r)
{
	const json_t *c = json_object_get(r->json, "config");

	if (c == NULL) {
		srv_reply_problem(r, 400, "missing-field", "Missing field", "$.config",
		    "$.config: the configuration to check is missing (an NNI sample: {\"name\": value})");
		return NULL;
	}
	if (!json_is_object(c)) {
		srv_reply_problem(r, 400, "wrong-type", "Wrong type", "$.config", "$.config must be an object");
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

void
api_reduction_check(struct srv_request *r)
{
	const json_t *config = config_of(r);
	struct srv_query *sq;

	if (config == NULL)
		return;
	sq = api_reduction_query(r);
	if (sq == NULL)
		return;
	check_on(r, sq, config);
	srv_registry_release(r->srv->registry, sq);
}
