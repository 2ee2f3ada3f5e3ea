/*
 * answer_explain.c - answers about single configurations and single values
 * (see answer.h): a configuration against every part of the query (the
 * /check call a trial generator makes per trial), why a value of a
 * parameter was removed, and feasibility over two parameters (heat map).
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
	return e->nnodes_graph + e->q->def->nhps + 1;
}

static void
write_value(struct jt *w, const struct expr_graph *g, expr_id id, const union expr_val *v)
{
	if (g->nodes[id].type == EXPR_REAL)
		jt_real(w, v[id].r);
	else
		jt_int(w, v[id].i);
}

static void
write_part(struct jt *w, const struct expr_graph *g, const struct sq_part *p, const union expr_val *vals)
{
	jt_lit(w, "{\"constraint\":");
	jt_str(w, p->label);
	jt_lit(w, ",\"path\":");
	jt_str(w, p->path);
	jt_lit(w, ",\"holds\":");
	jt_bool(w, vals[p->ok].i != 0);
	if (p->value >= 0) {
		jt_lit(w, ",\"value\":");
		write_value(w, g, p->value, vals);
	}
	if (p->kind == 1) {
		jt_lit(w, ",\"limit\":");
		jt_real(w, p->limit);
	}
	jt_lit(w, "}");
}

char *
ans_check_text(const struct fs_engine *e, const json_t *config, union expr_val *scratch, int with_costs,
    int all_parts, const char *id, size_t *len, struct dn_error *err)
{
	const struct sq_query *q = e->q;
	const struct expr_graph *g = e->g;
	union expr_val *vals = scratch, *cfg = scratch + e->nnodes_graph;
	int64_t *pos = calloc((size_t)e->nvars + 1, sizeof *pos);
	struct cm_result r;
	struct jt w;
	int ok = 1, first = 1;

	if (pos == NULL) {
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	if (fs_from_json((struct fs_engine *)e, config, pos, err) != 0) {
		free(pos);
		return NULL;
	}
	fs_config_of((struct fs_engine *)e, pos, cfg);
	/* continuous hyperparameters bound to the model take the given value */
	if (fs_real_values_from_json(e, config, pos, cfg, err) != 0) {
		free(pos);
		return NULL;
	}
	free(pos);
	if (expr_tape_eval(&e->tape, g, cfg, vals, NULL) != 0) {
		dn_error_set(err, DN_ERANGE, "config", "a cost of this configuration overflows 64 bits: it cannot run");
		return NULL;
	}
	for (int i = 0; i < q->nparts; i++)
		ok &= vals[q->parts[i].ok].i != 0;
	/* the query's graph extends the model's: its values are the model's too */
	cm_model_read(q->model, vals, &r);
	jt_init(&w, 4096);
	if (id != NULL) {
		jt_lit(&w, "{\"id\":");
		jt_str(&w, id);
		jt_lit(&w, ",\"feasible\":");
	} else
		jt_lit(&w, "{\"feasible\":");
	jt_bool(&w, ok);
	if (all_parts) {
		jt_lit(&w, ",\"constraints\":[");
		for (int i = 0; i < q->nparts; i++) {
			if (i > 0)
				jt_lit(&w, ",");
			write_part(&w, g, &q->parts[i], vals);
		}
		jt_lit(&w, "]");
	}
	jt_lit(&w, ",\"violated\":[");
	for (int i = 0; i < q->nparts; i++)
		if (vals[q->parts[i].ok].i == 0) {
			if (!first)
				jt_lit(&w, ",");
			first = 0;
			write_part(&w, g, &q->parts[i], vals);
		}
	/* which shapes are invalid, from the model's own report */
	for (int i = 0; i < r.nviolations && i < 8; i++) {
		if (!first)
			jt_lit(&w, ",");
		first = 0;
		jt_lit(&w, "{\"constraint\":");
		jt_str(&w, r.violations[i].rule);
		jt_lit(&w, ",\"path\":");
		jt_str(&w, r.violations[i].path);
		jt_lit(&w, ",\"holds\":false,\"source\":\"shape\"}");
	}
	jt_lit(&w, "]");
	if (with_costs) {
		jt_lit(&w, ",\"costs\":");
		/* the caller knows the configuration: no echo of it on the hot path */
		cm_result_write(&w, q->model, all_parts ? cfg : NULL, &r);
	}
	jt_lit(&w, "}");
	{
		char *text = jt_take(&w, len);
		if (text == NULL)
			dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		return text;
	}
}

json_t *
ans_check(const struct fs_engine *e, const json_t *config, union expr_val *scratch, int with_costs,
    struct dn_error *err)
{
	char *text = ans_check_text(e, config, scratch, with_costs, 1, NULL, NULL, err);
	json_t *j = text ? json_loads(text, 0, NULL) : NULL;

	if (text != NULL && j == NULL)
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	free(text);
	return j;
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

json_t *
ans_heatmap(struct fs_engine *e, struct sq_query *q, const char *xname, const char *yname, double timeout,
    struct dn_error *err)
{
	int x = fs_var_named(e, xname), y = fs_var_named(e, yname);
	struct fs_engine h;
	json_t *xs, *ys, *rows;
	int64_t *pos;

	if (x < 0 || y < 0 || x == y) {
		dn_error_set(err, x == y && x >= 0 ? DN_EINVAL : DN_ENOENT, x < 0 ? "x" : "y",
		    x == y && x >= 0 ? "x and y must be two different parameters" :
		    "the space has no discrete parameter \"%s\"", x < 0 ? xname : yname);
		return NULL;
	}
	if (e->vars[x].n * e->vars[y].n > 4096) {
		dn_error_set(err, DN_ERANGE, "x", "%lld x %lld cells: at most 4096",
		    (long long)e->vars[x].n, (long long)e->vars[y].n);
		return NULL;
	}
	/* a fresh engine: the reduction's own keeps its count tree untouched */
	if (fs_init(&h, q, err) != 0) {
		fs_free(&h);
		return NULL;
	}
	pos = calloc((size_t)h.nvars + 1, sizeof *pos);
	xs = json_array();
	ys = json_array();
	rows = json_array();
	h.deadline = fs_now_plus(timeout);
	for (int64_t px = 0; px < h.vars[x].n; px++)
		json_array_append_new(xs, sp_value_json(&q->space.dims[h.vars[x].dim], fs_dim_index_of(&h, x, px)));
	for (int64_t py = 0; py < h.vars[y].n && pos != NULL; py++) {
		int64_t my = fs_restrict(&h, y, py, py);
		json_t *row = json_array();
		json_array_append_new(ys, sp_value_json(&q->space.dims[h.vars[y].dim], fs_dim_index_of(&h, y, py)));
		for (int64_t px = 0; px < h.vars[x].n; px++) {
			int64_t mx = fs_restrict(&h, x, px, px);
			int r = fs_first_in_box(&h, pos, err);
			fs_unrestrict(&h, mx);
			if (r < 0 || (r == 1 && h.timed_out)) {
				if (!dn_error_isset(err))
					dn_error_set(err, DN_ETIMEOUT, NULL, "the heat map did not finish in %g s", timeout);
				fs_unrestrict(&h, my);
				json_decref(row);
				json_decref(rows);
				json_decref(xs);
				json_decref(ys);
				free(pos);
				fs_free(&h);
				return NULL;
			}
			json_array_append_new(row, json_boolean(r == 0));
		}
		fs_unrestrict(&h, my);
		json_array_append_new(rows, row);
	}
	free(pos);
	fs_free(&h);
	return json_pack("{s:s,s:s,s:o,s:o,s:o}", "x", xname, "y", yname, "x_values", xs, "y_values", ys,
	    "feasible", rows);
}
