/*
 * cli_explain.c - `dnnsat explain` and `dnnsat max`:
 *   explain --config '{"batch_size": 512, ...}'   every part of the query
 *       (validity, each budget, each user constraint) checked on one
 *       configuration, with the computed value against the limit;
 *   explain --param NAME --value V   why no feasible configuration has
 *       NAME = V: the parts that no configuration with it can satisfy on
 *       their own, else the pairs that cannot hold together;
 *   max --param NAME [--per OTHER]   the largest feasible value of NAME,
 *       overall or for each value of OTHER (the largest batch per depth).
 */
#include "cli.h"
#include "fset.h"
#include "query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *
parse_value(const char *text)
{
	json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);

	return v != NULL ? v : json_string(text);
}

static void
print_value(const struct expr_graph *g, expr_id e, const union expr_val *v)
{
	if (e < 0)
		return;
	if (g->nodes[e].type == EXPR_REAL)
		printf(" (value %.6g)", v[e].r);
	else
		printf(" (value %lld)", (long long)v[e].i);
}

static int
explain_config(struct fs_engine *e, struct sq_query *q, const char *text, int json_out)
{
	json_t *cfg = parse_value(text);
	struct dn_error err;
	int64_t *pos = calloc((size_t)e->nvars + 1, sizeof *pos);
	union expr_val *config = calloc((size_t)q->def->nhps + 1, sizeof *config);
	union expr_val *scratch;
	const struct expr_graph *g = cm_model_graph(q->model);
	struct cm_result r;
	int ok = 1;
	json_t *out = json_array();

	memset(&err, 0, sizeof err);
	if (fs_from_json(e, cfg, pos, &err) != 0) {
		json_decref(cfg);
		free(pos);
		free(config);
		json_decref(out);
		cli_print_error(&err);
		return 2;
	}
	json_decref(cfg);
	fs_config_of(e, pos, config);
	/* the whole graph, parts included (they were added after the model's tape) */
	scratch = calloc((size_t)g->n + 1, sizeof *scratch);
	if (scratch == NULL || expr_eval(g, config, scratch, NULL) != 0) {
		dn_error_set(&err, DN_ERANGE, "--config", "a value overflows 64 bits for this configuration");
		free(scratch);
		free(pos);
		free(config);
		json_decref(out);
		cli_print_error(&err);
		return 2;
	}
	for (int i = 0; i < q->nparts; i++) {
		const struct sq_part *p = &q->parts[i];
		int holds = scratch[p->ok].i != 0;
		ok &= holds;
		if (json_out) {
			json_t *o = json_pack("{s:s,s:s,s:b}", "constraint", p->label, "path", p->path, "holds", holds);
			if (p->value >= 0)
				json_object_set_new(o, "value", g->nodes[p->value].type == EXPR_REAL ?
				    json_real(scratch[p->value].r) : json_integer(scratch[p->value].i));
			json_array_append_new(out, o);
		} else {
			printf("%s %s", holds ? "ok  " : "FAIL", p->label);
			print_value(g, p->value, scratch);
			printf("\n");
		}
	}
	/* which shapes are invalid, from the model's own report */
	{
		union expr_val *ms = calloc((size_t)cm_model_scratch_len(q->model) + 1, sizeof *ms);
		memset(&err, 0, sizeof err);
		if (ms != NULL && cm_model_eval(q->model, config, ms, &r, &err) == 0 && !r.valid)
			for (int i = 0; i < r.nviolations && i < 8; i++) {
				const struct cm_violation *x = &r.violations[i];
				if (json_out)
					json_array_append_new(out, json_pack("{s:s,s:s,s:b}", "constraint", x->rule,
					    "path", x->path, "holds", 0));
				else {
					printf("     %s: %s (", x->path, x->rule);
					for (int j = 0; j < x->nvals; j++)
						printf("%s%s=%lld", j ? ", " : "", x->names[j], (long long)x->vals[j].i);
					printf(")\n");
				}
			}
		free(ms);
	}
	if (json_out) {
		json_t *o = json_pack("{s:b,s:o}", "feasible", ok, "constraints", out);
		json_dumpf(o, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(o);
	} else {
		json_decref(out);
		printf("%s\n", ok ? "feasible" : "infeasible");
	}
	free(scratch);
	free(pos);
	free(config);
	return ok ? 0 : 1;
}

/* 1 when some configuration with var v at position p satisfies `root`. */
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
	r = fs_first_in_box(&e, pos, err);
	fs_unrestrict(&e, mark);
	free(pos);
	fs_free(&e);
	return r < 0 ? -1 : r == 0;
}

static int
explain_value(struct fs_engine *e, struct sq_query *q, const char *param, const char *text,
    double timeout, int json_out)
{
	struct dn_error err;
	int v = fs_var_named(e, param);
	json_t *val = parse_value(text), *reasons = json_array();
	int64_t p;
	int alone = 0, x;

	memset(&err, 0, sizeof err);
	if (v < 0) {
		json_decref(val);
		json_decref(reasons);
		dn_error_set(&err, DN_ENOENT, "--param", "the space has no discrete parameter \"%s\"", param);
		cli_print_error(&err);
		return 2;
	}
	p = fs_position_of(e, v, val);
	json_decref(val);
	if (p < 0) {
		json_decref(reasons);
		dn_error_set(&err, DN_EINVAL, "--value", "%s is not a value of \"%s\" in the space", text, param);
		cli_print_error(&err);
		return 2;
	}
	x = exists_with(q, q->feasible, v, p, timeout, &err);
	if (x < 0) {
		json_decref(reasons);
		cli_print_error(&err);
		return 2;
	}
	if (x == 1) {
		printf("%s = %s is kept: some configuration with it fits\n", param, text);
		json_decref(reasons);
		return 0;
	}
	for (int i = 0; i < q->nparts; i++) {
		int r = exists_with(q, q->parts[i].ok, v, p, timeout, &err);
		if (r < 0) {
			json_decref(reasons);
			cli_print_error(&err);
			return 2;
		}
		if (r == 0) {
			alone++;
			json_array_append_new(reasons, json_pack("{s:s,s:s}", "constraint", q->parts[i].label,
			    "path", q->parts[i].path));
		}
	}
	if (alone == 0) {
		/* each part can hold alone: find the pairs that cannot hold together */
		struct expr_graph *g = (struct expr_graph *)cm_model_graph(q->model);
		for (int i = 0; i < q->nparts; i++)
			for (int j = i + 1; j < q->nparts; j++) {
				expr_id both = expr_and(g, q->parts[i].ok, q->parts[j].ok);
				int r = exists_with(q, both, v, p, timeout, &err);
				if (r == 0) {
					char label[1300];
					snprintf(label, sizeof label, "%s AND %s", q->parts[i].label, q->parts[j].label);
					json_array_append_new(reasons, json_pack("{s:s,s:s}", "constraint", label,
					    "path", q->parts[i].path));
				}
			}
	}
	if (json_out) {
		json_t *o = json_pack("{s:s,s:s,s:b,s:o}", "param", param, "value", text, "kept", 0, "because", reasons);
		json_dumpf(o, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(o);
	} else {
		size_t i;
		json_t *r;
		printf("%s = %s is removed: no configuration with it satisfies %s\n", param, text,
		    alone ? "these on their own:" : "these together:");
		json_array_foreach(reasons, i, r)
			printf("  %s  [%s]\n", json_string_value(json_object_get(r, "constraint")),
			    json_string_value(json_object_get(r, "path")));
		if (json_array_size(reasons) == 0)
			printf("  (three or more parts together: see explain --config on a configuration)\n");
		json_decref(reasons);
	}
	return 1;
}

/* Largest position of var v with a feasible configuration in the current box. */
static int64_t
max_position(struct sq_query *q, int v, int u, int64_t pu, double timeout, struct dn_error *err)
{
	struct fs_engine e;
	int64_t best = -1, *pos;

	if (fs_init(&e, q, err) != 0) {
		fs_free(&e);
		return -2;
	}
	pos = calloc((size_t)e.nvars + 1, sizeof *pos);
	e.deadline = fs_now_plus(timeout);
	{
		int64_t mu = u >= 0 ? fs_restrict(&e, u, pu, pu) : -1;
		for (int64_t p = e.vars[v].n - 1; p >= 0 && best < 0; p--) {
			int64_t m = fs_restrict(&e, v, p, p);
			int r = fs_first_in_box(&e, pos, err);
			fs_unrestrict(&e, m);
			if (r < 0) {
				best = -2;
				break;
			}
			if (r == 0)
				best = p;
		}
		fs_unrestrict(&e, mu);
	}
	free(pos);
	fs_free(&e);
	return best;
}

static int
cmd_max(struct fs_engine *e, struct sq_query *q, const char *param, const char *per, double timeout,
    int json_out)
{
	struct dn_error err;
	int v = fs_var_named(e, param), u = per ? fs_var_named(e, per) : -1;
	const struct sp_dim *d, *ud = NULL;
	json_t *out = json_array();

	memset(&err, 0, sizeof err);
	if (v < 0 || (per != NULL && u < 0)) {
		json_decref(out);
		dn_error_set(&err, DN_ENOENT, v < 0 ? "--param" : "--per", "the space has no discrete parameter \"%s\"",
		    v < 0 ? param : per);
		cli_print_error(&err);
		return 2;
	}
	d = &q->space.dims[e->vars[v].dim];
	if (u >= 0)
		ud = &q->space.dims[e->vars[u].dim];
	for (int64_t pu = 0; pu < (u >= 0 ? e->vars[u].n : 1); pu++) {
		int64_t best = max_position(q, v, u, pu, timeout, &err);
		json_t *row = json_object(), *bv;
		if (best == -2) {
			json_decref(row);
			json_decref(out);
			cli_print_error(&err);
			return 2;
		}
		bv = best >= 0 ? sp_value_json(d, fs_dim_index_of(e, v, best)) : json_null();
		if (u >= 0)
			json_object_set_new(row, per, sp_value_json(ud, fs_dim_index_of(e, u, pu)));
		json_object_set_new(row, param, bv);
		json_array_append_new(out, row);
	}
	if (json_out) {
		json_dumpf(out, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
	} else {
		size_t i;
		json_t *row;
		json_array_foreach(out, i, row) {
			char *a = json_dumps(json_object_get(row, param), JSON_ENCODE_ANY);
			if (per != NULL) {
				char *b = json_dumps(json_object_get(row, per), JSON_ENCODE_ANY);
				printf("%s = %s: largest %s = %s\n", per, b, param, json_is_null(json_object_get(row, param)) ?
				    "none fits" : a);
				free(b);
			} else
				printf("largest %s = %s\n", param, json_is_null(json_object_get(row, param)) ? "none fits" : a);
			free(a);
		}
	}
	json_decref(out);
	return 0;
}

int
cli_solve_more(const char *cmd, struct fs_engine *e, struct sq_query *q, double timeout,
    const char *config, const char *param, const char *value, const char *per, int json_out)
{
	struct dn_error err;

	memset(&err, 0, sizeof err);
	if (strcmp(cmd, "explain") == 0) {
		if (config != NULL)
			return explain_config(e, q, config, json_out);
		if (param != NULL && value != NULL)
			return explain_value(e, q, param, value, timeout, json_out);
		dn_error_set(&err, DN_EINVAL, "explain", "give --config JSON, or --param NAME --value V");
	} else if (strcmp(cmd, "max") == 0) {
		if (param != NULL)
			return cmd_max(e, q, param, per, timeout, json_out);
		dn_error_set(&err, DN_EINVAL, "max", "give --param NAME (and --per NAME)");
	} else
		dn_error_set(&err, DN_EINVAL, cmd, "unknown command");
	cli_print_error(&err);
	return 2;
}
