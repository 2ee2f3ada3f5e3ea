/*
 * answer_explain.c - answers about single configurations and single values
 * (see answer.h): a configuration against every part of the query (the
 * /check call a trial generator makes per trial), why a value of a
 * parameter was removed, and the largest feasible value of a parameter.
 *
 * ans_check reads only: the engine's compiled tape of the whole graph and
 * the model; the explanations build fresh engines over the same query
 * (rooted at one part, or a pair of parts) under a deadline.
 */
#include "answer.h"
#include "cm_report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int32_t
ans_scratch_len(const struct fs_engine *e)
{
	return e->nnodes_graph + e->q->def->nhps + cm_model_scratch_len(e->q->model) + 1;
}

static json_t *
node_value_json(const struct expr_graph *g, expr_id id, const union expr_val *v)
{
	return g->nodes[id].type == EXPR_REAL ? json_real(v[id].r) : json_integer(v[id].i);
}

json_t *
ans_check(const struct fs_engine *e, const json_t *config, union expr_val *scratch, int with_costs,
    struct dn_error *err)
{
	const struct sq_query *q = e->q;
	const struct expr_graph *g = e->g;
	union expr_val *vals = scratch, *cfg = scratch + e->nnodes_graph, *ms = cfg + q->def->nhps;
	int64_t *pos = calloc((size_t)e->nvars + 1, sizeof *pos);
	json_t *parts, *violated, *out;
	int ok = 1;

	if (pos == NULL) {
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	if (fs_from_json((struct fs_engine *)e, config, pos, err) != 0) {
		free(pos);
		return NULL;
	}
	fs_config_of((struct fs_engine *)e, pos, cfg);
	free(pos);
	if (expr_tape_eval(&e->tape, g, cfg, vals, NULL) != 0) {
		dn_error_set(err, DN_ERANGE, "config", "a cost of this configuration overflows 64 bits: it cannot run");
		return NULL;
	}
	parts = json_array();
	violated = json_array();
	for (int i = 0; i < q->nparts; i++) {
		const struct sq_part *p = &q->parts[i];
		int holds = vals[p->ok].i != 0;
		json_t *o = json_pack("{s:s,s:s,s:b}", "constraint", p->label, "path", p->path, "holds", holds);
		ok &= holds;
		if (p->value >= 0)
			json_object_set_new(o, "value", node_value_json(g, p->value, vals));
		if (p->kind == 1)
			json_object_set_new(o, "limit", json_real(p->limit));
		if (!holds)
			json_array_append(violated, o);
		json_array_append_new(parts, o);
	}
	out = json_pack("{s:b,s:o,s:o}", "feasible", ok, "constraints", parts, "violated", violated);
	if (with_costs || !ok) {
		struct cm_result r;
		struct dn_error e2;
		memset(&e2, 0, sizeof e2);
		if (cm_model_eval(q->model, cfg, ms, &r, &e2) == 0) {
			if (with_costs)
				json_object_set_new(out, "costs", cm_result_to_json(q->model, cfg, ms, &r, 0));
			/* which shapes are invalid, from the model's own report */
			for (int i = 0; i < r.nviolations && i < 8; i++)
				json_array_append_new(violated, json_pack("{s:s,s:s,s:b,s:s}", "constraint",
				    r.violations[i].rule, "path", r.violations[i].path, "holds", 0, "source", "shape"));
		}
	}
	return out;
}

/* 1 when some configuration with var v at position p satisfies `root`,
 * 0 when none does, -1 on error (a deadline that passed is an error). */
static int
exists_with(struct sq_query *q, expr_id root, int v, int64_t p, double timeout, struct dn_error *err)
{
	struct fs_engine e;
	int64_t *pos, mark;
	int r;

	if (fs_init_root(&e, q, root, err) != 0) {
		fs_free(&e);
		return -1;
	}
	e.deadline = fs_now_plus(timeout);
	pos = calloc((size_t)e.nvars + 1, sizeof *pos);
	mark = fs_restrict(&e, v, p, p);
	r = pos ? fs_first_in_box(&e, pos, err) : dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	fs_unrestrict(&e, mark);
	if (r == 1 && e.timed_out)
		r = dn_error_set(err, DN_ETIMEOUT, NULL, "the explanation did not finish in %g s", timeout);
	free(pos);
	fs_free(&e);
	return r < 0 ? -1 : r == 0;
}

json_t *
ans_explain_value(struct fs_engine *e, struct sq_query *q, const char *param, const json_t *value,
    double timeout, struct dn_error *err)
{
	int v = fs_var_named(e, param);
	json_t *because;
	int64_t p;
	int alone = 0, x;

	if (v < 0) {
		dn_error_set(err, DN_ENOENT, "param", "the space has no discrete parameter \"%s\"", param);
		return NULL;
	}
	p = fs_position_of(e, v, value);
	if (p < 0) {
		dn_error_set(err, DN_EINVAL, "value", "not a value of \"%s\" in the space", param);
		return NULL;
	}
	x = exists_with(q, q->feasible, v, p, timeout, err);
	if (x < 0)
		return NULL;
	because = json_array();
	if (x == 0) {
		for (int i = 0; i < q->nparts; i++) {
			int r = exists_with(q, q->parts[i].ok, v, p, timeout, err);
			if (r < 0) {
				json_decref(because);
				return NULL;
			}
			if (r == 0) {
				alone++;
				json_array_append_new(because, json_pack("{s:s,s:s}", "constraint", q->parts[i].label,
				    "path", q->parts[i].path));
			}
		}
	}
	if (x == 0 && alone == 0) {
		/* each part can hold alone: the pairs that cannot hold together */
		struct expr_graph *g = (struct expr_graph *)cm_model_graph(q->model);
		for (int i = 0; i < q->nparts; i++)
			for (int j = i + 1; j < q->nparts; j++) {
				expr_id both = expr_and(g, q->parts[i].ok, q->parts[j].ok);
				int r = exists_with(q, both, v, p, timeout, err);
				char label[1300];
				if (r < 0) {
					json_decref(because);
					return NULL;
				}
				if (r == 1)
					continue;
				snprintf(label, sizeof label, "%s AND %s", q->parts[i].label, q->parts[j].label);
				json_array_append_new(because, json_pack("{s:s,s:s}", "constraint", label,
				    "path", q->parts[i].path));
			}
	}
	return json_pack("{s:s,s:O,s:b,s:o}", "param", param, "value", value, "kept", x == 1, "because", because);
}

/* Largest position of var v with a feasible configuration (var u fixed at
 * pu when u >= 0); -1 none, -2 error. */
static int64_t
max_position(struct sq_query *q, int v, int u, int64_t pu, double timeout, struct dn_error *err)
{
	struct fs_engine e;
	int64_t best = -1, *pos, mu;

	if (fs_init(&e, q, err) != 0) {
		fs_free(&e);
		return -2;
	}
	pos = calloc((size_t)e.nvars + 1, sizeof *pos);
	e.deadline = fs_now_plus(timeout);
	mu = u >= 0 ? fs_restrict(&e, u, pu, pu) : -1;
	for (int64_t p = e.vars[v].n - 1; p >= 0 && best == -1 && pos != NULL; p--) {
		int64_t m = fs_restrict(&e, v, p, p);
		int r = fs_first_in_box(&e, pos, err);
		fs_unrestrict(&e, m);
		if (r < 0 || (r == 1 && e.timed_out)) {
			dn_error_set(err, DN_ETIMEOUT, NULL, "the maximum did not finish in %g s", timeout);
			best = -2;
		} else if (r == 0)
			best = p;
	}
	if (u >= 0)
		fs_unrestrict(&e, mu);
	if (pos == NULL)
		best = dn_error_set(err, DN_ENOMEM, NULL, "out of memory") - 1;
	free(pos);
	fs_free(&e);
	return best;
}

json_t *
ans_max(struct fs_engine *e, struct sq_query *q, const char *param, const char *per, double timeout,
    struct dn_error *err)
{
	int v = fs_var_named(e, param), u = per ? fs_var_named(e, per) : -1;
	const struct sp_dim *d, *ud = NULL;
	json_t *rows;

	if (v < 0 || (per != NULL && u < 0)) {
		dn_error_set(err, DN_ENOENT, v < 0 ? "param" : "per", "the space has no discrete parameter \"%s\"",
		    v < 0 ? param : per);
		return NULL;
	}
	d = &q->space.dims[e->vars[v].dim];
	if (u >= 0)
		ud = &q->space.dims[e->vars[u].dim];
	rows = json_array();
	for (int64_t pu = 0; pu < (u >= 0 ? e->vars[u].n : 1); pu++) {
		int64_t best = max_position(q, v, u, pu, timeout, err);
		json_t *row;
		if (best == -2) {
			json_decref(rows);
			return NULL;
		}
		row = json_object();
		if (u >= 0)
			json_object_set_new(row, per, sp_value_json(ud, fs_dim_index_of(e, u, pu)));
		json_object_set_new(row, param, best >= 0 ? sp_value_json(d, fs_dim_index_of(e, v, best)) : json_null());
		json_array_append_new(rows, row);
	}
	return rows;
}
