/*
 * answer_estimate.c - the answer of POST /v1/estimate and of `dnnsat
 * estimate --json`, one function for both so that they cannot differ:
 * every cost of one configuration of a model (parameters, weight bytes,
 * MACs/FLOPs, training and inference peak memory with its per-category
 * breakdown, latency, utilization; per operator when "per_op" is true), and
 * whether it fits the device's memory and the optional budgets. Body:
 * {"model", "device", "workload", "config": {hyperparameter: value},
 * "budgets", "per_op"}.
 *
 * It is a query without a space whose fixed values are the configuration,
 * so the model, device, workload and budget fields are read by the same
 * parser (query_parse.c) as every other request, and errors name the same
 * paths ("$.config.batch_size" for the configuration).
 */
#include "answer.h"
#include "cm_report.h"
#include "query.h"

#include <stdlib.h>
#include <string.h>

static const char *const fields[] = { "model", "device", "workload", "config", "budgets", "per_op", NULL };

/* The body's own fields: no unknown one, per_op a boolean, config an object. */
static int
check_fields(const json_t *body, struct dn_error *err)
{
	const char *key;
	json_t *v;

	if (!json_is_object(body))
		return dn_error_set(err, DN_EINVAL, "$", "the body must be a JSON object");
	json_object_foreach((json_t *)body, key, v) {
		int ok = 0;
		for (const char *const *f = fields; *f; f++)
			ok |= strcmp(*f, key) == 0;
		if (!ok)
			return dn_error_set(err, DN_EINVAL, "$", "unknown field \"%.64s\" (model, device, workload, "
			    "config, budgets, per_op)", key);
	}
	v = json_object_get(body, "per_op");
	if (v != NULL && !json_is_boolean(v))
		return dn_error_set(err, DN_EINVAL, "$.per_op", "must be true or false");
	v = json_object_get(body, "config");
	if (v != NULL && !json_is_object(v))
		return dn_error_set(err, DN_EINVAL, "$.config", "must be an object of hyperparameter values");
	return 0;
}

/* {"feasible","constraints"} of the check, then "config", "costs",
 * "budgets", "warnings". */
static json_t *
answer(struct sq_query *q, struct fs_engine *e, int per_op, struct dn_error *err)
{
	union expr_val *ms = calloc((size_t)cm_model_scratch_len(q->model) + 1, sizeof *ms);
	union expr_val *scratch = calloc((size_t)ans_scratch_len(e), sizeof *scratch);
	json_t *costs = NULL, *fit = NULL, *empty;
	struct cm_result res;

	if (ms == NULL || scratch == NULL) {
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		goto out;
	}
	if (cm_model_eval(q->model, q->fixed, ms, &res, err) != 0)
		goto out;
	costs = cm_result_to_json(q->model, q->fixed, ms, &res, per_op);
	empty = json_object();
	fit = ans_check(e, empty, scratch, 0, err);
	json_decref(empty);
	if (costs == NULL || fit == NULL) {
		if (!dn_error_isset(err))
			dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		json_decref(fit);
		fit = NULL;
		goto out;
	}
	json_object_set_new(fit, "config", cm_config_to_json(q->def, q->fixed));
	json_object_set(fit, "costs", costs);
	json_object_set_new(fit, "budgets", sq_budgets_json(q));
	json_object_set_new(fit, "warnings", sq_warnings_json(q));
out:
	json_decref(costs);
	free(ms);
	free(scratch);
	return fit;
}

json_t *
ans_cost_estimate(const json_t *body, const struct cm_device_catalog *catalog, struct dn_error *err)
{
	json_t *query, *config, *out = NULL;
	struct sq_query q;
	struct fs_engine e;

	memset(&q, 0, sizeof q);
	memset(&e, 0, sizeof e);
	if (check_fields(body, err) != 0)
		return NULL;
	config = json_object_get(body, "config");
	query = json_deep_copy(body);
	if (query == NULL) {
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	json_object_del(query, "per_op");
	json_object_del(query, "config");
	if (config != NULL)
		json_object_set(query, "fixed", config);
	if (sq_parse_point(query, catalog, &q, err) != 0 || fs_init(&e, &q, err) != 0) {
		if (strncmp(err->path, "$.fixed", 7) == 0) {
			char p[256];
			dn_fmt(p, sizeof p, "$.config%s", err->path + 7);
			memcpy(err->path, p, sizeof err->path);
		}
	} else
		out = answer(&q, &e, json_is_true(json_object_get(body, "per_op")), err);
	fs_free(&e);
	sq_free(&q);
	json_decref(query);
	return out;
}
