/*
 * answer_check.c - one configuration against every part of a query (see
 * answer.h): the /check call a trial generator makes for every trial, and
 * the per-configuration answer of the CLI and the estimate endpoint.
 *
 * Reads only: the engine's compiled tape of the whole graph, its space and
 * the model; the caller gives the evaluation scratch (one per thread), so
 * any number of threads may check against one engine at once. A
 * configuration comes as JSON (an NNI sample) or, on the service's hot
 * path, as query-string text pairs read without building JSON (the common
 * spaces; anything else falls back to the JSON reading, which gives the
 * same answer or error).
 */
#include "answer.h"
#include "cm_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int32_t
ans_scratch_len(const struct fs_engine *e)
{
	return e->nnodes_graph + e->q->def->nhps + 1;
}

/* Part i of the engine's query and its value in vals. Reads no graph
 * node (see ans_check_args_text). */
static void
write_part(struct jt *w, const struct fs_engine *e, int i, const union expr_val *vals)
{
	const struct sq_part *p = &e->q->parts[i];

	jt_lit(w, "{\"constraint\":");
	jt_str(w, p->label);
	jt_lit(w, ",\"path\":");
	jt_str(w, p->path);
	jt_lit(w, ",\"holds\":");
	jt_bool(w, vals[p->ok].i != 0);
	if (p->value >= 0) {
		jt_lit(w, ",\"value\":");
		if (e->check_part_real[i])
			jt_real(w, vals[p->value].r);
		else
			jt_int(w, vals[p->value].i);
	}
	if (p->kind == 1) {
		jt_lit(w, ",\"limit\":");
		/* a whole limit on a whole quantity (bytes, MACs) stays exact:
		 * 3221225472, not 3221225472.0 */
		if (!e->check_part_real[i] && p->limit == floor(p->limit) && fabs(p->limit) < 9.0e15)
			jt_int(w, (int64_t)p->limit);
		else
			jt_real(w, p->limit);
	}
	jt_lit(w, "}");
}

/* Evaluates what a check reads for the configuration at pos: the
 * tabulated nodes copied from their tables, the rest by the engine's check
 * tape (see fset_check.c). 0, or -1 when a value overflows. */
static int
check_eval(const struct fs_engine *e, const int64_t *pos, const union expr_val *cfg, union expr_val *vals)
{
	if (fs_check_fill(e, pos, vals) != 0)           /* not a grid position: the whole tape */
		return expr_tape_eval(&e->tape, e->g, cfg, vals, NULL);
	return expr_tape_eval(&e->check_tape, e->g, cfg, vals, NULL);
}

/* Evaluates the model configuration cfg (in scratch, after the graph's
 * values; pos: its grid positions) and writes the answer; see
 * ans_check_text. */
static char *
check_write(const struct fs_engine *e, const int64_t *pos, union expr_val *scratch, int with_costs,
    int all_parts, const char *id, size_t *len, struct dn_error *err)
{
	const struct sq_query *q = e->q;
	union expr_val *vals = scratch, *cfg = scratch + e->nnodes_graph;
	struct cm_result r;
	struct jt w;
	int ok = 1, first = 1;

	if (check_eval(e, pos, cfg, vals) != 0) {
		dn_error_set(err, DN_ERANGE, "config", "a cost of this configuration overflows 64 bits: it cannot run");
		return NULL;
	}
	for (int i = 0; i < q->nparts; i++)
		ok &= vals[q->parts[i].ok].i != 0;
	/* the query's graph extends the model's: its values are the model's too */
	cm_model_read(q->model, vals, &r);
	jt_init(&w, 1024);     /* an answer without violations fits: malloc's per-thread cache */
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
			write_part(&w, e, i, vals);
		}
		jt_lit(&w, "]");
	}
	jt_lit(&w, ",\"violated\":[");
	for (int i = 0; i < q->nparts; i++)
		if (vals[q->parts[i].ok].i == 0) {
			if (!first)
				jt_lit(&w, ",");
			first = 0;
			write_part(&w, e, i, vals);
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
		/* the caller knows the configuration: no echo of it on the hot path,
		 * nor the constant note on FLOPs (13% of the answer) */
		cm_result_write(&w, q->model, all_parts ? cfg : NULL, &r, all_parts);
	}
	jt_lit(&w, "}");
	{
		char *text = jt_take(&w, len);
		if (text == NULL)
			dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		return text;
	}
}

/* Position vectors of the usual spaces fit on the stack; larger ones are
 * allocated (NULL then means out of memory). */
#define CHECK_STACK_VARS 64

static int64_t *
positions(const struct fs_engine *e, int64_t *stack)
{
	return e->nvars < CHECK_STACK_VARS ? stack : calloc((size_t)e->nvars + 1, sizeof(int64_t));
}

char *
ans_check_text(const struct fs_engine *e, const json_t *config, union expr_val *scratch, int with_costs,
    int all_parts, const char *id, size_t *len, struct dn_error *err)
{
	union expr_val *cfg = scratch + e->nnodes_graph;
	int64_t stack[CHECK_STACK_VARS], *pos = positions(e, stack);
	int rc;

	if (pos == NULL) {
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	rc = fs_from_json((struct fs_engine *)e, config, pos, err);
	if (rc == 0) {
		fs_config_of((struct fs_engine *)e, pos, cfg);
		/* continuous hyperparameters bound to the model take the given value */
		rc = fs_real_values_from_json(e, config, pos, cfg, err);
	}
	{
		char *text = rc == 0 ? check_write(e, pos, scratch, with_costs, all_parts, id, len, err) : NULL;
		if (pos != stack)
			free(pos);
		return text;
	}
}

int
ans_check_args_text(const struct fs_engine *e, const char *const *names, const char *const *values, int n,
    union expr_val *scratch, int with_costs, int all_parts, const char *id, char **text, size_t *len,
    struct dn_error *err)
{
	int64_t stack[CHECK_STACK_VARS], *pos = positions(e, stack);
	int rc;

	if (pos == NULL)
		return 1;       /* the JSON form reports it */
	rc = fs_from_args(e, names, values, n, pos);
	if (rc == 0) {
		fs_config_of((struct fs_engine *)e, pos, scratch + e->nnodes_graph);
		*text = check_write(e, pos, scratch, with_costs, all_parts, id, len, err);
	}
	if (pos != stack)
		free(pos);
	if (rc != 0)
		return 1;
	return *text != NULL ? 0 : -1;
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
