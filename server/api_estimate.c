/*
 * api_estimate.c - POST /v1/estimate: every cost of one configuration of a
 * model (parameters, weight bytes, MACs/FLOPs, training and inference peak
 * memory with its per-category breakdown, latency, utilization), per
 * operator when "per_op" is true, and whether it fits the device's memory
 * and the optional budgets. Body: {"model", "device", "workload",
 * "config": {hyperparameter: value}, "budgets", "per_op"}.
 *
 * It is a query without a space whose fixed values are the
 * configuration, so the model, device, workload and budget fields are read
 * by the same parser (solver/query_parse.c) as every other request, and
 * errors name the same paths ("$.config.batch_size" for the configuration).
 */
#include "answer.h"
#include "cm_report.h"
#include "srv.h"

#include <stdlib.h>
#include <string.h>

static const char *const fields[] = { "model", "device", "workload", "config", "budgets", "per_op", NULL };

void
api_estimate(struct srv_request *r)
{
	json_t *body = r->json, *query, *costs, *fit, *v, *empty;
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;
	struct cm_result res;
	union expr_val *ms = NULL, *scratch = NULL;
	const char *key;
	int per_op = 0;

	memset(&err, 0, sizeof err);
	memset(&q, 0, sizeof q);
	memset(&e, 0, sizeof e);
	json_object_foreach(body, key, v) {
		int ok = 0;
		for (const char *const *f = fields; *f; f++)
			ok |= strcmp(*f, key) == 0;
		if (!ok) {
			srv_reply_problem(r, 422, "invalid-field", "Invalid field", "$", "unknown field \"%.64s\" (model, "
			    "device, workload, config, budgets, per_op)", key);
			return;
		}
	}
	v = json_object_get(body, "per_op");
	if (v != NULL && !json_is_boolean(v)) {
		srv_reply_problem(r, 422, "invalid-field", "Invalid field", "$.per_op", "$.per_op must be true or false");
		return;
	}
	per_op = json_is_true(v);
	v = json_object_get(body, "config");
	if (v != NULL && !json_is_object(v)) {
		srv_reply_problem(r, 422, "invalid-field", "Invalid field", "$.config",
		    "$.config must be an object of hyperparameter values");
		return;
	}
	query = json_deep_copy(body);
	json_object_del(query, "per_op");
	json_object_del(query, "config");
	if (v != NULL)
		json_object_set(query, "fixed", v);
	if (sq_parse_point(query, &r->srv->catalog, &q, &err) != 0 || fs_init(&e, &q, &err) != 0) {
		if (strncmp(err.path, "$.fixed", 7) == 0) {
			char p[256];
			dn_fmt(p, sizeof p, "$.config%s", err.path + 7);
			memcpy(err.path, p, sizeof err.path);
		}
		srv_reply_error(r, &err);
		goto out;
	}
	ms = calloc((size_t)cm_model_scratch_len(q.model) + 1, sizeof *ms);
	scratch = calloc((size_t)ans_scratch_len(&e), sizeof *scratch);
	if (ms == NULL || scratch == NULL) {
		dn_error_set(&err, DN_ENOMEM, NULL, "out of memory");
		srv_reply_error(r, &err);
		goto out;
	}
	if (cm_model_eval(q.model, q.fixed, ms, &res, &err) != 0) {
		srv_reply_error(r, &err);
		goto out;
	}
	costs = cm_result_to_json(q.model, q.fixed, ms, &res, per_op);
	empty = json_object();
	fit = ans_check(&e, empty, scratch, 0, &err);
	json_decref(empty);
	if (costs == NULL || fit == NULL) {
		json_decref(costs);
		json_decref(fit);
		srv_reply_error(r, &err);
		goto out;
	}
	json_object_set_new(fit, "config", cm_config_to_json(q.def, q.fixed));
	json_object_set_new(fit, "costs", costs);
	json_object_set_new(fit, "budgets", sq_budgets_json(&q));
	json_object_set_new(fit, "warnings", sq_warnings_json(&q));
	srv_reply_json(r, 200, fit);
out:
	free(ms);
	free(scratch);
	fs_free(&e);
	sq_free(&q);
	json_decref(query);
}
