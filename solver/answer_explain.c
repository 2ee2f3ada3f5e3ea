/*
 * answer_explain.c - answers about single values (see answer.h): why a
 * value of a parameter was removed, and feasibility over two parameters
 * (heat map). They build fresh engines over the same query (rooted at one
 * part, or a pair of parts) under a deadline. When the model's validity is
 * a reason, the shape rules no configuration with the value satisfies are
 * named under it (ans_failing_rules), as a conflict names them.
 */
#include "answer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value to explain: discrete var v at position p, or continuous space
 * dim `dim` at x (bound to the model: its engine var restricted to exactly
 * x; passing through: x changes nothing), nested under the choice var
 * `parent` at `active_pos` (-1: top level). */
struct fixed {
	int v;
	int64_t p;
	int dim, parent;
	int64_t active_pos;
	double x;
};

/* Narrows engine e to the configurations with the fixed value (a nested
 * one: its enclosing choices at the options that activate it, so that it
 * takes part): the mark to give fs_unrestrict (a restricted continuous var
 * keeps its range: the engine is freed afterwards), -1 out of memory. */
static int64_t
narrow_fixed(struct fs_engine *e, const struct fixed *f)
{
	int64_t mark = -2, m;
	int c;

	if (f->v >= 0)
		return fs_restrict_active(e, f->v, f->p, f->p);
	if (f->parent >= 0 && (mark = fs_restrict_active(e, f->parent, f->active_pos, f->active_pos)) < 0)
		return -1;
	c = e->dim_cvar[f->dim];
	if (c < 0)
		return mark;
	m = fs_real_restrict(e, c, f->x, f->x);
	if (m < 0) {
		fs_unrestrict(e, mark);
		return -1;
	}
	return mark >= 0 ? mark : m;
}

/* 1 when some configuration with the fixed value satisfies `root`, 0 when
 * none does, -1 on error (a deadline that passed is an error). */
static int
exists_with(struct sq_query *q, expr_id root, const struct fixed *f, double timeout, struct dn_error *err)
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
	mark = narrow_fixed(&e, f);
	r = pos == NULL || mark == -1 ? dn_error_set(err, DN_ENOMEM, NULL, "out of memory") :
	    fs_first_in_box(&e, pos, err);
	fs_unrestrict(&e, mark);
	if (r == 1 && e.timed_out)
		r = dn_error_set(err, DN_ETIMEOUT, NULL, "the explanation did not finish in %g s", timeout);
	free(pos);
	fs_free(&e);
	return r < 0 ? -1 : r == 0;
}

/* ans_failing_rules' question for a removed value: among the
 * configurations with the fixed value, each check within timeout (one
 * that runs out is undecided, not an error). */
struct rules_ctx {
	struct sq_query *q;
	const struct fixed *f;
	double timeout;
};

static int
exists_fixed(void *ctx, expr_id root, struct dn_error *err)
{
	const struct rules_ctx *c = ctx;
	int r = exists_with(c->q, root, c->f, c->timeout, err);

	if (r < 0 && err->code == DN_ETIMEOUT) {
		dn_error_clear(err);
		return 2;
	}
	return r;
}

/* Reads `param` = `value` into f: 0, or -1 with err naming "param" (no
 * such parameter, an unbounded continuous one) or "value" (not on the
 * grid, not a number, outside the range). */
static int
fixed_of(struct fs_engine *e, struct sq_query *q, const char *param, const json_t *value, struct fixed *f,
    struct dn_error *err)
{
	const struct sp_dim *d;
	int k = sp_dim_lookup(&q->space, param, "param", err);

	memset(f, 0, sizeof *f);
	f->dim = f->parent = -1;
	if (k < 0)
		return -1;
	param = q->space.dims[k].name;
	f->v = e->dim_var[k];
	if (f->v >= 0) {
		f->p = fs_position_of(e, f->v, value);
		return f->p >= 0 ? 0 : dn_error_set(err, DN_EINVAL, "value", "not a value of \"%s\" in the space", param);
	}
	f->dim = k;
	d = &q->space.dims[f->dim];
	if (d->type != SP_UNIFORM && d->type != SP_LOGUNIFORM)
		return dn_error_set(err, DN_EINVAL, "param", "\"%s\" is %s: explanations take parameters with a "
		    "grid or a bounded range", param, sp_type_name(d->type));
	if (!json_is_number(value))
		return dn_error_set(err, DN_EINVAL, "value", "\"%s\" is continuous (%s): the value must be a number",
		    param, sp_type_name(d->type));
	f->x = json_number_value(value);
	if (!(f->x >= d->lo && f->x <= d->hi))
		return dn_error_set(err, DN_EINVAL, "value", "%.17g is outside the range of \"%s\" [%.17g, %.17g]",
		    f->x, param, d->lo, d->hi);
	f->parent = fs_dim_parent(e, f->dim, &f->active_pos);
	return 0;
}

json_t *
ans_explain_value(struct fs_engine *e, struct sq_query *q, const char *param, const json_t *value,
    double timeout, struct dn_error *err)
{
	json_t *because;
	struct fixed f;
	int alone = 0, x;

	if (fixed_of(e, q, param, value, &f, err) != 0)
		return NULL;
	x = exists_with(q, q->feasible, &f, timeout, err);
	if (x < 0)
		return NULL;
	because = json_array();
	if (x == 0) {
		for (int i = 0; i < q->nparts; i++) {
			int r = exists_with(q, q->parts[i].ok, &f, timeout, err);
			if (r < 0) {
				json_decref(because);
				return NULL;
			}
			if (r == 0) {
				json_t *item = json_pack("{s:s,s:s}", "constraint", q->parts[i].label, "path", q->parts[i].path);
				struct rules_ctx c = { q, &f, timeout };

				alone++;
				if (item == NULL || json_array_append_new(because, item) != 0 ||
				    ans_failing_rules(q, i, exists_fixed, &c, item, err) != 0) {
					if (!dn_error_isset(err))
						dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
					json_decref(because);
					return NULL;
				}
			}
		}
	}
	if (x == 0 && alone == 0) {
		/* each part can hold alone: the pairs that cannot hold together */
		struct expr_graph *g = (struct expr_graph *)cm_model_graph(q->model);
		for (int i = 0; i < q->nparts; i++)
			for (int j = i + 1; j < q->nparts; j++) {
				expr_id both = expr_and(g, q->parts[i].ok, q->parts[j].ok);
				int r = exists_with(q, both, &f, timeout, err);
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
	return json_pack("{s:s,s:O,s:b,s:o}", "param", sp_dim_address(&q->space, param), "value", value,
	    "kept", x == 1, "because", because);
}

json_t *
ans_heatmap(struct fs_engine *e, struct sq_query *q, const char *xname, const char *yname, double timeout,
    struct dn_error *err)
{
	int kx = sp_dim_lookup(&q->space, xname, "x", err), ky = kx < 0 ? -1 : sp_dim_lookup(&q->space, yname, "y", err);
	int x = kx < 0 ? -1 : e->dim_var[kx], y = ky < 0 ? -1 : e->dim_var[ky];
	struct fs_engine h;
	json_t *xs, *ys, *rows;
	int64_t *pos;

	if (kx < 0 || ky < 0)
		return NULL;
	if (x < 0 || y < 0 || x == y) {
		dn_error_set(err, x == y && x >= 0 ? DN_EINVAL : DN_ENOENT, x < 0 ? "x" : "y",
		    x == y && x >= 0 ? "x and y must be two different parameters" :
		    "the space has no discrete parameter \"%s\"", x < 0 ? xname : yname);
		return NULL;
	}
	xname = q->space.dims[kx].name;
	yname = q->space.dims[ky].name;
	if (e->vars[x].n * e->vars[y].n > 4096) {
		dn_error_set(err, DN_ERANGE, "x", "%lld x %lld cells: at most 4096",
		    (long long)e->vars[x].n, (long long)e->vars[y].n);
		return NULL;
	}
	/* a fresh engine: the reduction's own keeps its count tree untouched */
	if (fs_init_root(&h, q, q->feasible, err) != 0) {
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
		/* nested x or y: their enclosing choices at the options that
		 * activate them (-2: none can, the cell is false) */
		int64_t my = fs_restrict_active(&h, y, py, py);
		json_t *row = json_array();
		json_array_append_new(ys, sp_value_json(&q->space.dims[h.vars[y].dim], fs_dim_index_of(&h, y, py)));
		for (int64_t px = 0; px < h.vars[x].n; px++) {
			int64_t mx = my == -2 ? -2 : fs_restrict_active(&h, x, px, px);
			int r = my == -1 || mx == -1 ? dn_error_set(err, DN_ENOMEM, NULL, "out of memory") :
			    mx == -2 ? 1 : fs_first_in_box(&h, pos, err);
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
