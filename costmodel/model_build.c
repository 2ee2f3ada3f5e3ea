/*
 * model_build.c - instantiating a model file: walks the layer list
 * (operators, branches, repeat, choice, if, use) and builds the operator
 * graph with every shape as an expression over the hyperparameters.
 *
 * Alternatives (choice options, if branches, repeat copies beyond a symbolic
 * count's minimum) are all instantiated, each under a guard; their outputs
 * are joined by a "select" tensor whose sizes are if-then-else expressions.
 * Guards that fold to constants prune alternatives at build time, so a fixed
 * hyperparameter costs nothing.
 *
 * Errors name the JSON path of the offending field in the model file; the
 * instance path (through defs and repeat copies) names operators in reports.
 */
#include "model_build_priv.h"
#include "dn_deadline.h"
#include "dn_grow.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEF_DEPTH 32
#define MAX_UNROLL 4096
#define MAX_OPS 200000

static const char *const item_common[] = { "name", "input", "inputs", "comment", "checkpoint", NULL };

/* ---- scopes ---- */

static int
scope_add_name(struct scope *sc, const char *name, int tensor)
{
	for (int i = 0; i < sc->nnames; i++)
		if (strcmp(sc->names[i].name, name) == 0) {
			sc->names[i].tensor = tensor;   /* rebinding in a scope: latest wins */
			return 0;
		}
	if (dn_grow_int(&sc->names, &sc->capnames, sc->nnames + 1, sizeof *sc->names) != 0)
		return -1;
	sc->names[sc->nnames].name = name;
	sc->names[sc->nnames].tensor = tensor;
	sc->nnames++;
	return 0;
}

static int
scope_add_bind(struct scope *sc, const char *name, expr_id value)
{
	if (dn_grow_int(&sc->binds, &sc->capbinds, sc->nbinds + 1, sizeof *sc->binds) != 0)
		return -1;
	sc->binds[sc->nbinds].name = name;
	sc->binds[sc->nbinds].value = value;
	sc->nbinds++;
	return 0;
}

static void
scope_free(struct scope *sc)
{
	free(sc->names);
	free(sc->binds);
}

static int
scope_find_tensor(const struct scope *sc, const char *name)
{
	for (; sc != NULL; sc = sc->parent)
		for (int i = sc->nnames - 1; i >= 0; i--)
			if (strcmp(sc->names[i].name, name) == 0)
				return sc->names[i].tensor;
	return -1;
}

/* ---- expressions in attributes ---- */

static int
resolve(void *ctx, const char *name, size_t len, struct expr_name_info *out)
{
	struct model_builder *mb = ctx;
	const struct scope *sc;
	const struct cm_model_def *def = mb->def;

	for (sc = mb->scope; sc != NULL; sc = sc->parent)
		for (int i = sc->nbinds - 1; i >= 0; i--)
			if (strlen(sc->binds[i].name) == len && strncmp(sc->binds[i].name, name, len) == 0) {
				out->id = sc->binds[i].value;
				return 0;
			}
	for (int i = 0; i < def->nhps; i++) {
		const struct cm_hparam *h = &def->hps[i];
		if (strlen(h->name) != len || strncmp(h->name, name, len) != 0)
			continue;
		/* a hyperparameter fixed by the bounds is a constant: guards fold */
		if (mb->bounds != NULL && h->type != CM_HP_REAL && mb->bounds[i].lo.i == mb->bounds[i].hi.i)
			out->id = expr_int(&mb->m->g, mb->bounds[i].lo.i);
		else if (mb->bounds != NULL && h->type == CM_HP_REAL && mb->bounds[i].lo.r == mb->bounds[i].hi.r)
			out->id = expr_real(&mb->m->g, mb->bounds[i].lo.r);
		else
			out->id = expr_var(&mb->m->g, i);
		if (h->type == CM_HP_CATEGORICAL) {
			out->enum_values = (const char *const *)h->values;
			out->n_enum = h->nvalues;
		}
		return 0;
	}
	return -1;
}

static void
on_divisor(void *ctx, expr_id divisor)
{
	struct model_builder *mb = ctx;

	if (mb->ndivisors < 16)
		mb->divisors[mb->ndivisors++] = divisor;
}

expr_id
mb_parse_value(struct model_builder *mb, const json_t *v, const char *path, expr_id guard)
{
	struct expr_graph *g = &mb->m->g;
	struct expr_parse_opts opts = { resolve, on_divisor, mb };
	expr_id e;

	if (json_is_integer(v))
		return expr_int(g, json_integer_value(v));
	if (json_is_real(v)) {
		double x = json_real_value(v);
		if (!isfinite(x) || fabs(x) > 1e300) {
			dn_error_set(mb->err, DN_ERANGE, path, "number out of range");
			return EXPR_NONE;
		}
		return expr_real(g, x);
	}
	if (!json_is_string(v)) {
		dn_error_set(mb->err, DN_EINVAL, path, "must be a number or an expression string");
		return EXPR_NONE;
	}
	mb->ndivisors = 0;
	e = expr_parse(g, json_string_value(v), &opts, path, mb->err);
	if (e < 0) {
		if (!dn_error_isset(mb->err))
			dn_error_set(mb->err, DN_EINVAL, path, "invalid expression");
		return EXPR_NONE;
	}
	for (int i = 0; i < mb->ndivisors; i++) {
		expr_id d = mb->divisors[i];
		const char *names[1] = { "divisor" };
		expr_id nz = expr_ne(g, d, expr_type_of(g, d) == EXPR_INT ? expr_int(g, 0) : expr_real(g, 0.0));
		char text[600];
		dn_fmt(text, sizeof text, "division by zero in \"%.500s\"", json_string_value(v));
		if (cm_graph_add_constraint(mb->m, guard, nz, path, text, 1, names, &d) != 0 &&
		    !expr_is_const(g, nz)) {
			dn_error_set(mb->err, DN_ENOMEM, path, "out of memory");
			return EXPR_NONE;
		}
		if (expr_is_int_const(g, nz, 0) && expr_is_int_const(g, guard, 1)) {
			dn_error_set(mb->err, DN_EINVAL, path, "division by zero in \"%.200s\"", json_string_value(v));
			return EXPR_NONE;
		}
	}
	return e;
}

/* ---- select tensors ---- */

/*
 * Joins alternatives: the result stands for tensor alts[i] where conds[i]
 * holds (the conds are disjoint and, together with the enclosing guard,
 * exhaustive; the last one is the shapes' fallback). alts[i] may exist
 * where it is not the one chosen (a repeat's output after k copies exists
 * for every count >= k): an operator keeping the result keeps alts[i]'s
 * storage only where conds[i] holds (op_build.c, keep_tensor). Returns the
 * result, or -1.
 */
int
mb_make_select(struct model_builder *mb, const char *path, int n, const int *alts,
    const expr_id *conds)
{
	struct cm_graph *m = mb->m;
	struct expr_graph *g = &m->g;
	struct cm_tensor t;
	const struct cm_tensor *last;
	int same = 1, idx;

	for (int i = 1; i < n; i++)
		if (alts[i] != alts[0])
			same = 0;
	if (same)
		return alts[0];
	last = &m->tensors[alts[n - 1]];
	memset(&t, 0, sizeof t);
	t.rank = last->rank;
	t.dtype = last->dtype;
	t.contiguous = 1;
	for (int i = 0; i < n; i++) {
		const struct cm_tensor *a = &m->tensors[alts[i]];
		if (a->rank != t.rank)
			return dn_error_set(mb->err, DN_EINVAL, path,
			    "alternatives produce tensors of different ranks (%d and %d)", a->rank, t.rank);
		if (a->dtype != t.dtype) {
			/* under autocast an alternative that passes the fp32 input
			 * through and one that convolves it differ in float type: the
			 * choice is the wider (its storages keep their own sizes) */
			int fa = a->dtype == CM_DT_ACT || a->dtype == CM_DT_F32, ft = t.dtype == CM_DT_ACT || t.dtype == CM_DT_F32;
			if (!fa || !ft)
				return dn_error_set(mb->err, DN_EINVAL, path, "alternatives produce tensors of different dtypes");
			t.dtype = CM_DT_F32;
		}
		t.requires_grad |= a->requires_grad;
		t.contiguous &= a->contiguous;
	}
	for (int d = 0; d < t.rank; d++) {
		expr_id e = last->dim[d];
		for (int i = n - 2; i >= 0; i--)
			e = expr_ite(g, conds[i], m->tensors[alts[i]].dim[d], e);
		t.dim[d] = e;
	}
	t.elems = expr_int(g, 1);
	for (int d = 0; d < t.rank; d++)
		t.elems = expr_mul(g, t.elems, t.dim[d]);
	t.storage = -1;
	t.view_of = -1;
	t.id_end = EXPR_NONE;
	t.producer = m->nops - 1;
	t.last_use = m->nops - 1;
	t.alts = malloc(sizeof(int) * (size_t)n);
	t.alt_conds = malloc(sizeof(expr_id) * (size_t)n);
	if (t.alts == NULL || t.alt_conds == NULL) {
		free(t.alts);
		free(t.alt_conds);
		return dn_error_set(mb->err, DN_ENOMEM, path, "out of memory");
	}
	memcpy(t.alts, alts, sizeof(int) * (size_t)n);
	memcpy(t.alt_conds, conds, sizeof(expr_id) * (size_t)n);
	t.nalts = n;
	t.owns_alts = 1;
	idx = cm_graph_add_tensor(m, &t);
	if (idx < 0) {
		free(t.alts);
		free(t.alt_conds);
		return dn_error_set(mb->err, DN_ENOMEM, path, "out of memory");
	}
	return idx;
}

/* ---- walking the layer list ---- */

static int walk_list(struct model_builder *mb, const json_t *list, const char *fpath,
    const char *ipath, struct scope *sc, expr_id guard, int input, int *output);

static int
check_keys(struct model_builder *mb, const json_t *item, const char *fpath,
    const char *const *allowed, const char *const *allowed2, const char *what)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)item, key, v) {
		int ok = 0;
		for (const char *const *k = item_common; *k && !ok; k++)
			ok = strcmp(*k, key) == 0;
		for (const char *const *k = allowed; k && *k && !ok; k++)
			ok = strcmp(*k, key) == 0;
		for (const char *const *k = allowed2; k && *k && !ok; k++)
			ok = strcmp(*k, key) == 0;
		if (!ok)
			return dn_error_set(mb->err, DN_EINVAL, fpath, "unknown field \"%s\" for %s", key, what);
	}
	return 0;
}

static int
lookup_input(struct model_builder *mb, struct scope *sc, const json_t *v,
    const char *fpath, int *out)
{
	if (!json_is_string(v))
		return dn_error_set(mb->err, DN_EINVAL, fpath, "an input must name a tensor (a string)");
	*out = scope_find_tensor(sc, json_string_value(v));
	if (*out < 0)
		return dn_error_set(mb->err, DN_ENOENT, fpath, "no tensor named \"%.100s\" is visible here",
		    json_string_value(v));
	return 0;
}

static int
walk_op(struct model_builder *mb, const json_t *item, const char *fpath,
    const char *ipath, struct scope *sc, expr_id guard, int nin, const int *in)
{
	const char *opname = json_string_value(json_object_get(item, "op"));
	const json_t *module = json_object_get(item, "module");
	const struct op_rule *rule;
	static const char *const op_key[] = { "op", "module", NULL };
	char mpath[600];

	if (opname == NULL)
		return dn_error_set(mb->err, DN_EINVAL, fpath, "\"op\" must be an operator name");
	rule = op_rule_find(opname);
	if (rule == NULL)
		return dn_error_set(mb->err, DN_ENOENT, fpath, "unknown operator \"%.64s\"", opname);
	if (check_keys(mb, item, fpath, rule->attrs, op_key, opname) != 0)
		return -1;
	if (module != NULL) {
		/* the framework's module name (GPT2MLP's c_fc): the operator's
		 * instance path ends with it, as a sub-operator's does, so
		 * selectors and peft's target_modules names find it */
		if (!cm_ft_module_name(json_string_value(module)))
			return dn_error_set(mb->err, DN_EINVAL, fpath, "\"module\" must be a name of letters, digits and "
			    "underscores (not starting with a digit), at most %d characters", CM_FT_SEL_LEN - 1);
		dn_fmt(mpath, sizeof mpath, "%s.%s", ipath, json_string_value(module));
		ipath = mpath;
	}
	if (mb->m->nops >= MAX_OPS)
		return dn_error_set(mb->err, DN_ERANGE, fpath, "the model has more than %d operators", MAX_OPS);
	mb->scope = sc;
	return mb_run_rule(mb, rule, item, fpath, ipath, guard, nin, in);
}

static int
merge(struct model_builder *mb, const char *how, const json_t *item, const char *fpath,
    const char *ipath, expr_id guard, int n, const int *outs)
{
	char p[600];
	json_t *attrs;
	int r;

	if (n == 1)
		return outs[0];
	dn_fmt(p, sizeof p, "%s.merge", ipath);
	if (strcmp(how, "concat") == 0) {
		if (n > CM_MAX_IN)
			return dn_error_set(mb->err, DN_ERANGE, fpath, "concat of more than %d branches", CM_MAX_IN);
		attrs = json_object();
		if (json_object_get(item, "dim") != NULL)
			json_object_set(attrs, "dim", json_object_get(item, "dim"));
		r = mb_run_rule(mb, op_rule_find("concat"), attrs, fpath, p, guard, n, outs);
		json_decref(attrs);
		return r;
	}
	/* add / mul: a chain of binary operators, as PyTorch runs x + y + z */
	r = outs[0];
	attrs = json_object();
	for (int i = 1; i < n && r >= 0; i++) {
		int pair[2] = { r, outs[i] };
		dn_fmt(p, sizeof p, "%s.merge%s", ipath, n > 2 ? "" : "");
		if (n > 2)
			dn_fmt(p, sizeof p, "%s.merge[%d]", ipath, i - 1);
		r = mb_run_rule(mb, op_rule_find(how), attrs, fpath, p, guard, 2, pair);
	}
	json_decref(attrs);
	return r;
}

static int
walk_branches(struct model_builder *mb, const json_t *item, const char *fpath,
    const char *ipath, struct scope *sc, expr_id guard, int input)
{
	static const char *const keys[] = { "branches", "merge", "dim", NULL };
	const json_t *br = json_object_get(item, "branches");
	const char *how = json_string_value(json_object_get(item, "merge"));
	int outs[64], n = 0;
	size_t i;
	const json_t *list;
	char fp[600], ip[600];

	if (check_keys(mb, item, fpath, keys, NULL, "branches") != 0)
		return -1;
	if (!json_is_array(br) || json_array_size(br) == 0 || json_array_size(br) > 64)
		return dn_error_set(mb->err, DN_EINVAL, fpath, "\"branches\" must be a list of 1 to 64 layer lists");
	if (how == NULL)
		how = "add";
	if (strcmp(how, "add") != 0 && strcmp(how, "concat") != 0 && strcmp(how, "mul") != 0)
		return dn_error_set(mb->err, DN_EINVAL, fpath, "\"merge\" must be \"add\", \"concat\" or \"mul\"");
	json_array_foreach(br, i, list) {
		struct scope inner;
		int rc;
		memset(&inner, 0, sizeof inner);
		inner.parent = sc;
		dn_fmt(fp, sizeof fp, "%s.branches[%zu]", fpath, i);
		dn_fmt(ip, sizeof ip, "%s.branches[%zu]", ipath, i);
		rc = walk_list(mb, list, fp, ip, &inner, guard, input, &outs[n]);
		scope_free(&inner);
		if (rc != 0)
			return -1;
		n++;
	}
	return merge(mb, how, item, fpath, ipath, guard, n, outs);
}

/* The largest value `count` can take over the hyperparameters' domains. */
static int64_t
count_upper_bound(struct model_builder *mb, expr_id count)
{
	struct expr_graph *g = &mb->m->g;
	struct expr_ival *vars, *out;
	int64_t hi = INT64_MAX;

	vars = calloc((size_t)g->nvars + 1, sizeof *vars);
	out = calloc((size_t)g->n, sizeof *out);
	if (vars != NULL && out != NULL) {
		for (int i = 0; i < g->nvars; i++) {
			const struct cm_hparam *h = &mb->def->hps[i];
			if (mb->bounds != NULL) {
				vars[i] = mb->bounds[i];
			} else if (h->type == CM_HP_REAL) {
				vars[i].lo.r = h->has_min ? h->min : -INFINITY;
				vars[i].hi.r = h->has_max ? h->max : INFINITY;
			} else if (h->type == CM_HP_CATEGORICAL) {
				vars[i].lo.i = 0;
				vars[i].hi.i = h->nvalues - 1;
			} else {
				vars[i].lo.i = h->has_min ? (int64_t)h->min : INT64_MIN;
				vars[i].hi.i = h->has_max ? (int64_t)h->max : INT64_MAX;
			}
		}
		expr_bound(g, vars, out);
		hi = out[count].hi.i;
	}
	free(vars);
	free(out);
	return hi;
}

static int
walk_repeat(struct model_builder *mb, const json_t *item, const char *fpath,
    const char *ipath, struct scope *sc, expr_id guard, int input)
{
	static const char *const keys[] = { "repeat", "max", "index", "body", NULL };
	struct expr_graph *g = &mb->m->g;
	const json_t *body = json_object_get(item, "body");
	const char *index = json_string_value(json_object_get(item, "index"));
	const json_t *ck = json_object_get(item, "checkpoint");
	/* each copy one checkpoint segment (ckpt_plan.h): "checkpoint": true,
	 * and a top-level repeat unless "checkpoint": false, as Hugging Face's
	 * gradient_checkpointing_enable() checkpoints every layer; not inside
	 * a segment already (the outermost wins) */
	int seg_copies = mb->ckpt_seg == 0 && (ck != NULL ? json_is_true(ck) : mb->item_depth == 1);
	char p[600], fp[600], ip[600];
	expr_id count;
	int64_t copies, maxv = INT64_MAX;
	int64_t outer_unrolled;
	int *outs = NULL, cur = input, rc = -1;
	expr_id *conds = NULL;

	if (check_keys(mb, item, fpath, keys, NULL, "repeat") != 0)
		return -1;
	if (!json_is_array(body))
		return dn_error_set(mb->err, DN_EINVAL, fpath, "\"body\" must be a layer list");
	if (json_object_get(item, "index") != NULL && index == NULL)
		return dn_error_set(mb->err, DN_EINVAL, fpath, "\"index\" must be a name");
	dn_fmt(p, sizeof p, "%s.repeat", fpath);
	mb->scope = sc;
	count = mb_parse_value(mb, json_object_get(item, "repeat"), p, guard);
	if (count < 0)
		return -1;
	if (expr_type_of(g, count) != EXPR_INT)
		return dn_error_set(mb->err, DN_EINVAL, p, "the repeat count must be an integer");
	if (json_object_get(item, "max") != NULL) {
		const json_t *mx = json_object_get(item, "max");
		if (!json_is_integer(mx) || json_integer_value(mx) < 0 || json_integer_value(mx) > MAX_UNROLL)
			return dn_error_set(mb->err, DN_EINVAL, fpath, "\"max\" must be an integer from 0 to %d", MAX_UNROLL);
		maxv = json_integer_value(mx);
	}
	if (expr_is_const(g, count)) {
		copies = g->nodes[count].k.i;
		if (copies < 0)
			return dn_error_set(mb->err, DN_EINVAL, p, "the repeat count is negative (%lld)", (long long)copies);
	} else {
		copies = count_upper_bound(mb, count);
		if (copies > maxv)
			copies = maxv;
		if (copies == INT64_MAX)
			return dn_error_set(mb->err, DN_EINVAL, fpath,
			    "a symbolic repeat count needs a \"max\" (or a hyperparameter with a max)");
		if (copies < 0)
			copies = 0;
		/* a count beyond the unrolled copies is invalid, not silently capped */
		{
			const char *names[1] = { "count" };
			char text[128];
			dn_fmt(text, sizeof text, "repeat count <= %lld (the unrolled maximum)", (long long)copies);
			if (cm_graph_add_constraint(mb->m, guard, expr_le(g, count, expr_int(g, copies)),
			    p, text, 1, names, &count) != 0)
				return dn_error_set(mb->err, DN_ENOMEM, fpath, "out of memory");
		}
	}
	if (copies > MAX_UNROLL)
		return dn_error_set(mb->err, DN_ERANGE, p, "repeat count %lld exceeds %d", (long long)copies, MAX_UNROLL);
	/* nested repeats multiply: bound the copies of the innermost body */
	if (copies > 0 && mb->unrolled * copies > CM_MAX_UNROLLED)
		return dn_error_set(mb->err, DN_ERANGE, p, "nested repeats unroll to %lld copies of their body, "
		    "more than the limit of %d (CM_MAX_UNROLLED)", (long long)(mb->unrolled * copies), CM_MAX_UNROLLED);
	outer_unrolled = mb->unrolled;
	if (copies > 0)
		mb->unrolled *= copies;
	outs = malloc(sizeof *outs * (size_t)(copies + 1));
	conds = malloc(sizeof *conds * (size_t)(copies + 1));
	if (outs == NULL || conds == NULL) {
		dn_error_set(mb->err, DN_ENOMEM, fpath, "out of memory");
		goto done;
	}
	/* outs[k] = output after k copies; conds[k] = (count == k) */
	outs[0] = input;
	conds[0] = expr_le(g, count, expr_int(g, 0));
	for (int64_t k = 0; k < copies; k++) {
		struct scope inner;
		expr_id present = expr_and(g, guard, expr_gt(g, count, expr_int(g, k)));
		int out;
		memset(&inner, 0, sizeof inner);
		inner.parent = sc;
		if (index != NULL && scope_add_bind(&inner, index, expr_int(g, k)) != 0) {
			scope_free(&inner);
			dn_error_set(mb->err, DN_ENOMEM, fpath, "out of memory");
			goto done;
		}
		dn_fmt(fp, sizeof fp, "%s.body", fpath);
		dn_fmt(ip, sizeof ip, "%s[%lld].body", ipath, (long long)k);
		if (seg_copies)
			mb->ckpt_seg = ++mb->nckpt_segs;
		rc = walk_list(mb, body, fp, ip, &inner, present, cur, &out);
		if (seg_copies)
			mb->ckpt_seg = 0;
		scope_free(&inner);
		if (rc != 0)
			goto done;
		rc = -1;
		cur = out;
		outs[k + 1] = out;
		conds[k + 1] = expr_eq(g, count, expr_int(g, k + 1));
	}
	rc = mb_make_select(mb, ipath, (int)copies + 1, outs, conds);
done:
	mb->unrolled = outer_unrolled;
	free(outs);
	free(conds);
	return rc;
}

static int
walk_choice(struct model_builder *mb, const json_t *item, const char *fpath,
    const char *ipath, struct scope *sc, expr_id guard, int input)
{
	static const char *const keys[] = { "choice", "options", NULL };
	struct expr_graph *g = &mb->m->g;
	const char *hpname = json_string_value(json_object_get(item, "choice"));
	const json_t *opts = json_object_get(item, "options");
	const struct cm_hparam *h;
	int hi, n = 0, rc;
	int outs[256];
	expr_id conds[256], var, covered;
	const char *key;
	json_t *list;
	char fp[600], ip[600];

	if (check_keys(mb, item, fpath, keys, NULL, "choice") != 0)
		return -1;
	if (hpname == NULL)
		return dn_error_set(mb->err, DN_EINVAL, fpath, "\"choice\" must name a hyperparameter");
	hi = cm_def_find_hp(mb->def, hpname);
	if (hi < 0)
		return dn_error_set(mb->err, DN_ENOENT, fpath, "\"choice\": no hyperparameter named \"%.64s\"", hpname);
	h = &mb->def->hps[hi];
	if (h->type == CM_HP_REAL)
		return dn_error_set(mb->err, DN_EINVAL, fpath, "\"choice\" needs a categorical or int hyperparameter, not a real");
	if (!json_is_object(opts) || json_object_size(opts) == 0 || json_object_size(opts) > 255)
		return dn_error_set(mb->err, DN_EINVAL, fpath, "\"options\" must be an object of 1 to 255 layer lists");
	{
		struct expr_name_info info;
		mb->scope = sc;
		if (resolve(mb, h->name, strlen(h->name), &info) != 0)
			return -1;
		var = info.id;
	}
	covered = expr_int(g, 0);
	json_object_foreach((json_t *)opts, key, list) {
		int64_t v;
		expr_id cond, present;
		struct scope inner;
		if (strcmp(key, "default") == 0)
			continue;
		dn_fmt(fp, sizeof fp, "%s.options.%s", fpath, key);
		if (h->type == CM_HP_CATEGORICAL) {
			v = -1;
			for (int j = 0; j < h->nvalues; j++)
				if (strcmp(h->values[j], key) == 0)
					v = j;
			if (v < 0)
				return dn_error_set(mb->err, DN_EINVAL, fp, "\"%.64s\" is not a value of %s", key, h->name);
		} else {
			char *end;
			long long x = strtoll(key, &end, 10);
			if (*key == '\0' || *end != '\0')
				return dn_error_set(mb->err, DN_EINVAL, fp, "option keys of an int choice must be integers");
			v = x;
		}
		cond = expr_eq(g, var, expr_int(g, v));
		covered = expr_or(g, covered, cond);
		present = expr_and(g, guard, cond);
		if (expr_is_int_const(g, present, 0))
			continue;       /* pruned: this option cannot be chosen here */
		memset(&inner, 0, sizeof inner);
		inner.parent = sc;
		dn_fmt(ip, sizeof ip, "%s.options.%s", ipath, key);
		rc = walk_list(mb, list, fp, ip, &inner, present, input, &outs[n]);
		scope_free(&inner);
		if (rc != 0)
			return -1;
		conds[n++] = cond;
	}
	list = json_object_get(opts, "default");
	if (list != NULL) {
		expr_id cond = expr_not(g, covered), present = expr_and(g, guard, cond);
		if (!expr_is_int_const(g, present, 0)) {
			struct scope inner;
			memset(&inner, 0, sizeof inner);
			inner.parent = sc;
			dn_fmt(fp, sizeof fp, "%s.options.default", fpath);
			dn_fmt(ip, sizeof ip, "%s.options.default", ipath);
			rc = walk_list(mb, list, fp, ip, &inner, present, input, &outs[n]);
			scope_free(&inner);
			if (rc != 0)
				return -1;
			conds[n++] = cond;
		}
	} else {
		/* every value the hyperparameter can take must have an option */
		const char *names[1] = { h->name };
		char text[200];
		if (h->type == CM_HP_CATEGORICAL) {
			for (int j = 0; j < h->nvalues; j++)
				if (json_object_get(opts, h->values[j]) == NULL)
					return dn_error_set(mb->err, DN_EINVAL, fpath,
					    "no option for value \"%s\" of %s (add it or a \"default\")", h->values[j], h->name);
		}
		dn_fmt(text, sizeof text, "%s must be one of the choice's options", h->name);
		if (cm_graph_add_constraint(mb->m, guard, covered, ipath, text, 1, names, &var) != 0)
			return dn_error_set(mb->err, DN_ENOMEM, fpath, "out of memory");
	}
	if (n == 0)
		return input;   /* no option can be chosen here: the guard is false */
	return mb_make_select(mb, ipath, n, outs, conds);
}

static int
walk_if(struct model_builder *mb, const json_t *item, const char *fpath,
    const char *ipath, struct scope *sc, expr_id guard, int input)
{
	static const char *const keys[] = { "if", "then", "else", NULL };
	struct expr_graph *g = &mb->m->g;
	const json_t *then_l = json_object_get(item, "then"), *else_l = json_object_get(item, "else");
	char p[600], fp[600], ip[600];
	expr_id c;
	int outs[2], n = 0;
	expr_id conds[2];

	if (check_keys(mb, item, fpath, keys, NULL, "if") != 0)
		return -1;
	if (!json_is_array(then_l))
		return dn_error_set(mb->err, DN_EINVAL, fpath, "\"then\" must be a layer list");
	if (else_l != NULL && !json_is_array(else_l))
		return dn_error_set(mb->err, DN_EINVAL, fpath, "\"else\" must be a layer list");
	dn_fmt(p, sizeof p, "%s.if", fpath);
	mb->scope = sc;
	c = mb_parse_value(mb, json_object_get(item, "if"), p, guard);
	if (c < 0)
		return -1;
	for (int branch = 0; branch < 2; branch++) {
		const json_t *list = branch == 0 ? then_l : else_l;
		expr_id cond = branch == 0 ? expr_and(g, c, expr_int(g, 1)) : expr_not(g, c);
		expr_id present = expr_and(g, guard, cond);
		struct scope inner;
		int rc;
		if (expr_is_int_const(g, present, 0))
			continue;
		if (list == NULL) {
			outs[n] = input;
			conds[n++] = cond;
			continue;
		}
		memset(&inner, 0, sizeof inner);
		inner.parent = sc;
		dn_fmt(fp, sizeof fp, "%s.%s", fpath, branch == 0 ? "then" : "else");
		dn_fmt(ip, sizeof ip, "%s.%s", ipath, branch == 0 ? "then" : "else");
		rc = walk_list(mb, list, fp, ip, &inner, present, input, &outs[n]);
		scope_free(&inner);
		if (rc != 0)
			return -1;
		conds[n++] = cond;
	}
	if (n == 0)
		return input;
	return mb_make_select(mb, ipath, n, outs, conds);
}

static int
walk_use(struct model_builder *mb, const json_t *item, const char *fpath,
    const char *ipath, struct scope *sc, expr_id guard, int input)
{
	static const char *const keys[] = { "use", "args", NULL };
	const char *name = json_string_value(json_object_get(item, "use"));
	const json_t *defs = json_object_get(mb->def->root, "defs");
	const json_t *def, *args = json_object_get(item, "args"), *formals, *body;
	struct scope inner;
	char fp[600], ip[700], p[700];
	size_t i;
	const json_t *f;
	int out = -1, rc;

	if (check_keys(mb, item, fpath, keys, NULL, "use") != 0)
		return -1;
	if (name == NULL)
		return dn_error_set(mb->err, DN_EINVAL, fpath, "\"use\" must name a def");
	def = json_object_get(defs, name);
	if (!json_is_object(def))
		return dn_error_set(mb->err, DN_ENOENT, fpath, "no def named \"%.64s\"", name);
	dn_fmt(fp, sizeof fp, "$.defs.%s", name);
	formals = json_object_get(def, "args");
	body = json_object_get(def, "body");
	{
		const char *key;
		json_t *v;
		json_object_foreach((json_t *)def, key, v) {
			if (strcmp(key, "args") != 0 && strcmp(key, "body") != 0 && strcmp(key, "description") != 0)
				return dn_error_set(mb->err, DN_EINVAL, fp, "unknown field \"%s\" in a def", key);
		}
	}
	if (formals != NULL && !json_is_array(formals))
		return dn_error_set(mb->err, DN_EINVAL, fp, "\"args\" must be a list of names");
	if (!json_is_array(body))
		return dn_error_set(mb->err, DN_EINVAL, fp, "a def needs a \"body\" layer list");
	if (args != NULL && !json_is_object(args))
		return dn_error_set(mb->err, DN_EINVAL, fpath, "\"args\" must be an object");
	if (mb->def_depth >= MAX_DEF_DEPTH)
		return dn_error_set(mb->err, DN_EINVAL, fpath, "defs nested more than %d deep (recursive use?)", MAX_DEF_DEPTH);
	{
		const char *key;
		json_t *v;
		json_object_foreach((json_t *)args, key, v) {
			int known = 0;
			json_array_foreach(formals, i, f)
				if (json_is_string(f) && strcmp(json_string_value(f), key) == 0)
					known = 1;
			if (!known)
				return dn_error_set(mb->err, DN_EINVAL, fpath, "def \"%s\" has no argument \"%s\"", name, key);
		}
	}
	memset(&inner, 0, sizeof inner);
	/* the def body sees its arguments and the hyperparameters, not the caller's tensors */
	json_array_foreach(formals, i, f) {
		const json_t *a;
		expr_id v;
		if (!json_is_string(f)) {
			scope_free(&inner);
			return dn_error_set(mb->err, DN_EINVAL, fp, "args[%zu] must be a name", i);
		}
		a = json_object_get(args, json_string_value(f));
		if (a == NULL) {
			scope_free(&inner);
			return dn_error_set(mb->err, DN_EINVAL, fpath, "missing argument \"%s\" of def \"%s\"",
			    json_string_value(f), name);
		}
		dn_fmt(p, sizeof p, "%s.args.%s", fpath, json_string_value(f));
		mb->scope = sc;
		v = mb_parse_value(mb, a, p, guard);
		if (v < 0 || scope_add_bind(&inner, json_string_value(f), v) != 0) {
			scope_free(&inner);
			return dn_error_set(mb->err, DN_ENOMEM, fpath, "out of memory");
		}
	}
	dn_fmt(fp, sizeof fp, "$.defs.%s.body", name);
	dn_fmt(ip, sizeof ip, "%s/%s", ipath, name);
	mb->def_depth++;
	rc = walk_list(mb, body, fp, ip, &inner, guard, input, &out);
	mb->def_depth--;
	scope_free(&inner);
	return rc != 0 ? -1 : out;
}

static int
walk_item(struct model_builder *mb, const json_t *item, const char *fpath,
    const char *ipath, struct scope *sc, expr_id guard, int prev, int *out)
{
	const json_t *inputs = json_object_get(item, "inputs");
	const json_t *name = json_object_get(item, "name");
	const json_t *ck = json_object_get(item, "checkpoint");
	int in[CM_MAX_IN], nin = 1, r;
	int kinds = 0, seg = 0;
	static const char *const kind_keys[] = { "op", "branches", "repeat", "choice", "if", "use" };

	if (!json_is_object(item))
		return dn_error_set(mb->err, DN_EINVAL, fpath, "a layer must be an object");
	if (dn_error_isset(mb->err))
		return -1;
	for (size_t k = 0; k < sizeof kind_keys / sizeof kind_keys[0]; k++)
		if (json_object_get(item, kind_keys[k]) != NULL)
			kinds++;
	if (kinds != 1)
		return dn_error_set(mb->err, DN_EINVAL, fpath,
		    "a layer has exactly one of \"op\", \"branches\", \"repeat\", \"choice\", \"if\", \"use\"");
	in[0] = prev;
	if (json_object_get(item, "input") != NULL) {
		if (inputs != NULL)
			return dn_error_set(mb->err, DN_EINVAL, fpath, "give \"input\" or \"inputs\", not both");
		if (lookup_input(mb, sc, json_object_get(item, "input"), fpath, &in[0]) != 0)
			return -1;
	}
	if (inputs != NULL) {
		size_t i;
		const json_t *v;
		if (json_object_get(item, "op") == NULL)
			return dn_error_set(mb->err, DN_EINVAL, fpath, "\"inputs\" is only for operators");
		if (!json_is_array(inputs) || json_array_size(inputs) == 0 || json_array_size(inputs) > CM_MAX_IN)
			return dn_error_set(mb->err, DN_EINVAL, fpath, "\"inputs\" must list 1 to %d tensor names", CM_MAX_IN);
		nin = 0;
		json_array_foreach(inputs, i, v)
			if (lookup_input(mb, sc, v, fpath, &in[nin++]) != 0)
				return -1;
	}
	if (name != NULL && (!json_is_string(name) || json_string_length(name) == 0 || json_string_length(name) > 64))
		return dn_error_set(mb->err, DN_EINVAL, fpath, "\"name\" must be a non-empty string of at most 64 characters");
	if (ck != NULL && !json_is_boolean(ck))
		return dn_error_set(mb->err, DN_EINVAL, fpath, "\"checkpoint\" must be true or false");
	/* "checkpoint": true makes the item one checkpoint segment (a repeat:
	 * each copy, walk_repeat), unless it is inside one already */
	if (json_is_true(ck) && mb->ckpt_seg == 0 && json_object_get(item, "repeat") == NULL)
		seg = mb->ckpt_seg = ++mb->nckpt_segs;

	mb->item_depth++;
	if (json_object_get(item, "op") != NULL)
		r = walk_op(mb, item, fpath, ipath, sc, guard, nin, in);
	else if (json_object_get(item, "branches") != NULL)
		r = walk_branches(mb, item, fpath, ipath, sc, guard, in[0]);
	else if (json_object_get(item, "repeat") != NULL)
		r = walk_repeat(mb, item, fpath, ipath, sc, guard, in[0]);
	else if (json_object_get(item, "choice") != NULL)
		r = walk_choice(mb, item, fpath, ipath, sc, guard, in[0]);
	else if (json_object_get(item, "if") != NULL)
		r = walk_if(mb, item, fpath, ipath, sc, guard, in[0]);
	else
		r = walk_use(mb, item, fpath, ipath, sc, guard, in[0]);
	mb->item_depth--;
	if (seg)
		mb->ckpt_seg = 0;
	if (r < 0) {
		if (!dn_error_isset(mb->err))
			dn_error_set(mb->err, DN_EINTERNAL, fpath, "could not build this layer");
		return -1;
	}
	if (name != NULL && scope_add_name(sc, json_string_value(name), r) != 0)
		return dn_error_set(mb->err, DN_ENOMEM, fpath, "out of memory");
	*out = r;
	return 0;
}

static int
walk_list(struct model_builder *mb, const json_t *list, const char *fpath,
    const char *ipath, struct scope *sc, expr_id guard, int input, int *output)
{
	size_t i;
	const json_t *item;
	int cur = input;
	char fp[700], ip[700];

	if (!json_is_array(list))
		return dn_error_set(mb->err, DN_EINVAL, fpath, "must be a list of layers");
	if (strlen(ipath) > 400)
		return dn_error_set(mb->err, DN_ERANGE, fpath, "the model is nested too deeply");
	json_array_foreach(list, i, item) {
		dn_fmt(fp, sizeof fp, "%s[%zu]", fpath, i);
		dn_fmt(ip, sizeof ip, "%s[%zu]", ipath, i);
		if (walk_item(mb, item, fp, ip, sc, guard, cur, &cur) != 0)
			return -1;
	}
	*output = cur;
	return 0;
}

/* ---- inputs and the whole model ---- */

/* An int64 input's "id_range": the ids lie in [0, id_range), an integer
 * expression of at least 1 (the embeddings that read the input require it to
 * fit their tables). */
static int
input_id_range(struct model_builder *mb, const json_t *in, const char *path, struct cm_tensor *t)
{
	struct expr_graph *g = &mb->m->g;
	const char *names[1] = { "id_range" };
	char p[160];

	dn_fmt(p, sizeof p, "%s.id_range", path);
	if (t->dtype != CM_DT_I64)
		return dn_error_set(mb->err, DN_EINVAL, p, "\"id_range\" is only for int64 inputs (token ids)");
	t->id_end = mb_parse_value(mb, json_object_get(in, "id_range"), p, expr_int(g, 1));
	if (t->id_end < 0)
		return -1;
	if (expr_type_of(g, t->id_end) != EXPR_INT)
		return dn_error_set(mb->err, DN_EINVAL, p, "\"id_range\" must be an integer");
	if (cm_graph_add_constraint(mb->m, expr_int(g, 1), expr_ge(g, t->id_end, expr_int(g, 1)),
	    p, "id_range >= 1", 1, names, &t->id_end) != 0)
		return dn_error_set(mb->err, DN_ENOMEM, path, "out of memory");
	return 0;
}

static int
build_inputs(struct model_builder *mb, struct scope *sc, expr_id guard, int *first)
{
	const json_t *inputs = json_object_get(mb->def->root, "inputs");
	size_t i;
	const json_t *in;
	struct expr_graph *g = &mb->m->g;

	json_array_foreach(inputs, i, in) {
		char path[128], p2[160];
		const json_t *shape = json_object_get(in, "shape");
		const char *dtype = json_string_value(json_object_get(in, "dtype"));
		const char *name = json_string_value(json_object_get(in, "name"));
		struct cm_tensor t;
		size_t d;
		const json_t *dim;
		int idx;

		dn_fmt(path, sizeof path, "$.inputs[%zu]", i);
		if (expr_graph_set_origin(g, path) != 0)
			return dn_error_set(mb->err, DN_ENOMEM, path, "out of memory");
		if (!json_is_object(in))
			return dn_error_set(mb->err, DN_EINVAL, path, "an input must be an object with a shape");
		{
			const char *key;
			json_t *v;
			json_object_foreach((json_t *)in, key, v) {
				if (strcmp(key, "name") && strcmp(key, "shape") && strcmp(key, "dtype") &&
				    strcmp(key, "id_range") && strcmp(key, "description"))
					return dn_error_set(mb->err, DN_EINVAL, path, "unknown field \"%s\"", key);
			}
		}
		if (!json_is_array(shape) || json_array_size(shape) == 0 || json_array_size(shape) > CM_MAX_RANK)
			return dn_error_set(mb->err, DN_EINVAL, path, "\"shape\" must list 1 to %d dimensions", CM_MAX_RANK);
		memset(&t, 0, sizeof t);
		if (dtype == NULL || strcmp(dtype, "float") == 0)       /* the loader's batch: fp32 under autocast */
			t.dtype = mb->wl->precision == CM_PREC_MIXED_FP16 || mb->wl->precision == CM_PREC_MIXED_BF16 ?
			    CM_DT_F32 : CM_DT_ACT;
		else if (strcmp(dtype, "int64") == 0)
			t.dtype = CM_DT_I64;
		else
			return dn_error_set(mb->err, DN_EINVAL, path, "\"dtype\" must be \"float\" or \"int64\"");
		t.rank = (int)json_array_size(shape);
		mb->scope = sc;
		json_array_foreach(shape, d, dim) {
			const char *names[1] = { "size" };
			dn_fmt(p2, sizeof p2, "%s.shape[%zu]", path, d);
			t.dim[d] = mb_parse_value(mb, dim, p2, expr_int(g, 1));
			if (t.dim[d] < 0)
				return -1;
			if (expr_type_of(g, t.dim[d]) != EXPR_INT)
				return dn_error_set(mb->err, DN_EINVAL, p2, "a dimension must be an integer");
			if (cm_graph_add_constraint(mb->m, guard, expr_ge(g, t.dim[d], expr_int(g, 1)),
			    p2, "input dimension >= 1", 1, names, &t.dim[d]) != 0)
				return dn_error_set(mb->err, DN_ENOMEM, path, "out of memory");
		}
		t.id_end = EXPR_NONE;
		if (json_object_get(in, "id_range") != NULL && input_id_range(mb, in, path, &t) != 0)
			return -1;
		t.elems = expr_int(g, 1);
		for (int k = 0; k < t.rank; k++)
			t.elems = expr_mul(g, t.elems, t.dim[k]);
		t.storage = cm_graph_add_storage(mb->m,
		    expr_mul(g, t.elems, expr_int(g, cm_dtype_bytes(mb->m, (enum cm_dtype)t.dtype))),
		    guard, -1);
		t.view_of = -1;
		t.contiguous = 1;
		t.producer = -1;
		t.last_use = -1;
		if (t.storage < 0 || (idx = cm_graph_add_tensor(mb->m, &t)) < 0)
			return dn_error_set(mb->err, DN_ENOMEM, path, "out of memory");
		if (i == 0)
			*first = idx;
		if (name != NULL && scope_add_name(sc, name, idx) != 0)
			return dn_error_set(mb->err, DN_ENOMEM, path, "out of memory");
	}
	return 0;
}

/* The hyperparameters a rule's text names, each once, in the order met (at
 * most 4), with their values as expressions: what a violated rule shows.
 * Read from the text, since a build for one configuration folds them to
 * constants (cli_estimate.c). Returns how many, or -1 with mb->err set. */
static int
rule_vars(struct model_builder *mb, const char *text, const char *path, const char **names, expr_id *vals)
{
	int n = 0;
	char quote = 0;

	for (const char *s = text; *s && n < 4;) {
		size_t len = 0;
		int h, dup = 0;
		if (quote) {
			quote = *s == quote ? 0 : quote;
			s++;
			continue;
		}
		if (*s == '\'' || *s == '"') {
			quote = *s++;
			continue;
		}
		if (!(isalpha((unsigned char)*s) || *s == '_')) {
			s++;
			continue;
		}
		while (isalnum((unsigned char)s[len]) || s[len] == '_')
			len++;
		h = -1;
		for (int i = 0; i < mb->def->nhps && h < 0; i++)
			if (strlen(mb->def->hps[i].name) == len && strncmp(mb->def->hps[i].name, s, len) == 0)
				h = i;
		for (int i = 0; i < n && h >= 0; i++)
			dup |= strcmp(names[i], mb->def->hps[h].name) == 0;
		if (h >= 0 && !dup && mb->def->hps[h].type != CM_HP_CATEGORICAL) {
			json_t *v = json_string(mb->def->hps[h].name);
			if (v == NULL)
				return dn_error_set(mb->err, DN_ENOMEM, path, "out of memory");
			vals[n] = mb_parse_value(mb, v, path, expr_int(&mb->m->g, 1));
			json_decref(v);
			if (vals[n] < 0)
				return -1;
			names[n++] = mb->def->hps[h].name;
		}
		s += len;
	}
	return n;
}

/* The model's own validity rules ("rules": [{"require": COND, "message":
 * TEXT}], checked by model_def.c): a configuration where COND is false is
 * invalid, the violation named "$.rules[i]", the message and the condition,
 * with the values of the hyperparameters it reads (torchvision's ViT
 * asserting image_size % patch_size == 0 is one no operator states). */
static int
build_rules(struct model_builder *mb, struct scope *sc)
{
	const json_t *rules = json_object_get(mb->def->root, "rules");
	struct expr_graph *g = &mb->m->g;
	size_t i;
	const json_t *r;

	json_array_foreach(rules, i, r) {
		const json_t *req = json_object_get(r, "require");
		const char *msg = json_string_value(json_object_get(r, "message"));
		const char *names[4];
		expr_id vals[4], c;
		char path[64], p2[80], text[1024];
		int nv;

		dn_fmt(path, sizeof path, "$.rules[%zu]", i);
		dn_fmt(p2, sizeof p2, "%s.require", path);
		if (expr_graph_set_origin(g, path) != 0)
			return dn_error_set(mb->err, DN_ENOMEM, path, "out of memory");
		mb->scope = sc;
		c = mb_parse_value(mb, req, p2, expr_int(g, 1));
		if (c < 0)
			return -1;
		if (!expr_is_bool(g, c))
			return dn_error_set(mb->err, DN_EINVAL, p2, "must be a condition (a comparison such as "
			    "\"image_size %% patch == 0\"), not the value \"%.200s\"", json_string_value(req));
		nv = rule_vars(mb, json_string_value(req), p2, names, vals);
		if (nv < 0)
			return -1;
		if (msg != NULL)
			dn_fmt(text, sizeof text, "%s (%s)", msg, json_string_value(req));
		else
			dn_fmt(text, sizeof text, "%s", json_string_value(req));
		if (cm_graph_add_constraint(mb->m, expr_int(g, 1), c, path, text, nv, names, vals) != 0)
			return dn_error_set(mb->err, DN_ENOMEM, path, "out of memory");
	}
	return 0;
}

/* The workload's LoRA rank as an expression (a constant, or an expression
 * over the hyperparameters so that a search space can vary it), with the
 * validity rule rank >= 1. */
static int
lora_rank(struct model_builder *mb)
{
	const struct cm_finetune *ft = &mb->wl->ft;
	struct expr_graph *g = &mb->m->g;
	const char *names[] = { "rank" };
	json_t *v = ft->rank_expr[0] ? json_string(ft->rank_expr) : json_integer(ft->lora_rank);
	expr_id r;

	if (v == NULL)
		return dn_error_set(mb->err, DN_ENOMEM, "$", "out of memory");
	r = mb_parse_value(mb, v, "$.workload.lora.rank", expr_int(g, 1));
	json_decref(v);
	if (r < 0)
		return -1;
	if (expr_type_of(g, r) != EXPR_INT)
		return dn_error_set(mb->err, DN_EINVAL, "$.workload.lora.rank", "must be an integer expression "
		    "(use floor(), ceil() or round() on real values)");
	if (cm_graph_add_constraint(mb->m, expr_int(g, 1), expr_ge(g, r, expr_int(g, 1)), "$.workload.lora.rank",
	    "LoRA rank >= 1", 1, names, &r) < 0)
		return dn_error_set(mb->err, DN_ENOMEM, "$", "out of memory");
	mb->lora_rank = r;
	return 0;
}

/* What a build says of its quantized linears (cm_quant.c): how many, whether
 * the model ties a linear's weight, and the last operator with weights
 * (its path, whether it is a quantized linear); and the embedding a tied
 * linear trained after it was built frozen (mb.tied_train). */
struct build_info {
	int hits, tied, last_q;
	char last[512];
	char tied_train[CM_FT_SEL_LEN];
};

/* Two flags of a setting both true where the framework refuses it
 * (Hugging Face's fp16 and bf16, BitsAndBytesConfig's load_in_4bit and
 * load_in_8bit; conflict is cm_precision_alts' or cm_quant_alts'): those
 * configurations are invalid, the rule named with the flags the space
 * searches (hyperparameters hp1 - 1 and hp2 - 1; 0: not searched). */
static int
flags_conflict(struct model_builder *mb, expr_id conflict, int hp1, int hp2, const char *rule)
{
	struct expr_graph *g = &mb->m->g;
	const char *names[2];
	expr_id vals[2];
	int n = 0;

	if (expr_is_int_const(g, conflict, 0))
		return 0;
	for (int k = 0; k < 2; k++) {
		int hp = k == 0 ? hp1 : hp2;
		if (hp <= 0)
			continue;
		names[n] = mb->def->hps[hp - 1].name;
		vals[n++] = expr_var(g, hp - 1);
	}
	if (cm_graph_add_constraint(mb->m, expr_int(g, 1), expr_not(g, conflict), "$.space", rule, n, names, vals) < 0)
		return dn_error_set(mb->err, DN_ENOMEM, "$", "out of memory");
	return 0;
}

/* The path a rule of a setting the space searches is named at: the
 * space's parameter (hyperparameter hp - 1), else the workload's field. */
static void
setting_path(const struct model_builder *mb, int hp, const char *field, char *path, size_t len)
{
	if (hp > 0)
		dn_fmt(path, len, "$.space.%s", mb->def->hps[hp - 1].name);
	else
		dn_fmt(path, len, "$.workload.%s", field);
}

/* Starts the copy of the model in precision p with base weights quantized
 * as q and LoRA on the space's target list t (-1: the workload's
 * targets), under cond: the builder's workload becomes *wa, wl in p and q
 * with those targets (so which tensors need a gradient, and which
 * activations autograd keeps, are the copy's own: before the first
 * adapter nothing does); the
 * graph's compute dtype and precision stamp, the attention kernels (the
 * SDPA default resolves by dtype) and the per-model rotary tables follow
 * it. A chip without bf16 arithmetic (its catalog bf16 rate 0, before
 * sm80) cannot run a bf16 copy, nor one older than bitsandbytes needs a
 * quantized one: its configurations are invalid, the rule named. */
static int
copy_begin(struct model_builder *mb, const struct cm_workload *wl, struct cm_workload *wa,
    enum cm_precision p, int q, int t, expr_id cond, const struct cm_device *dev)
{
	struct cm_graph *m = mb->m;
	struct expr_graph *g = &m->g;

	*wa = *wl;
	wa->precision = p;
	wa->ft.quant = (uint8_t)q;
	if (t >= 0) {
		wa->ft.targets_hp = 0;
		wa->ft.ntargets = wl->ft.ntgt[t];
		memcpy(wa->ft.targets, wl->ft.tgt_choices[t], sizeof wa->ft.targets);
	}
	mb->wl = wa;
	m->act_bytes = p == CM_PREC_FP32 ? 4 : 2;
	m->prec = p;
	memset(&m->rotary_made, 0, sizeof m->rotary_made);
	memset(&m->rotary_saved, 0, sizeof m->rotary_saved);
	mb->attention = cm_attention_resolve(wa, dev);
	mb->nattn = 0;
	for (int j = 0; wl->attn_hp > 0 && j < wl->nattn_choices && j < CM_MAX_ATTN_CHOICES; j++) {
		struct cm_workload wj = *wa;
		wj.attention = (enum cm_attention)wl->attn_choices[j];
		mb->attn_kernels[j] = cm_attention_resolve(&wj, dev);
		mb->attn_conds[j] = expr_eq(g, expr_var(g, wl->attn_hp - 1), expr_int(g, j));
		mb->nattn = j + 1;
	}
	if ((p == CM_PREC_BF16 || p == CM_PREC_MIXED_BF16) && dev->peak_bf16 <= 0) {
		const char *names[] = { "compute capability x10" };
		expr_id cc = expr_int(g, mb->dev_cc);
		char path[96];
		setting_path(mb, wl->prec_hp > 0 ? wl->prec_hp : wl->bf16_hp, "dtype", path, sizeof path);
		if (cm_graph_add_constraint(m, cond, expr_int(g, 0), path,
		    "bf16 needs a GPU with bf16 arithmetic (compute capability >= 8.0)", 1, names, &cc) < 0)
			return dn_error_set(mb->err, DN_ENOMEM, "$", "out of memory");
	}
	if (q != CM_QUANT_NONE && mb->dev_cc < (cm_quant_bits(q) == 8 ? 75 : 60)) {
		/* bitsandbytes' installation page: LLM.int8() needs compute
		 * capability 7.5 (Turing; its int8 cuBLASLt GEMM), the 4-bit
		 * kernels 6.0 (Pascal), as the library itself */
		const struct cm_quant_search *qs = &wl->ft.qs;
		const char *names[] = { "compute capability x10" };
		expr_id cc = expr_int(g, mb->dev_cc);
		char path[96];
		setting_path(mb, qs->hp > 0 ? qs->hp : cm_quant_bits(q) == 8 ? qs->l8_hp : qs->l4_hp, "quantize", path,
		    sizeof path);
		if (cm_graph_add_constraint(m, cond, expr_int(g, 0), path,
		    cm_quant_bits(q) == 8 ? "int8 (LLM.int8()) needs a GPU of compute capability >= 7.5 "
		    "(bitsandbytes' int8 matrix multiply: Turing or newer)" : "4-bit weights need a GPU of compute "
		    "capability >= 6.0 (bitsandbytes: Pascal or newer)", 1, names, &cc) < 0)
			return dn_error_set(mb->err, DN_ENOMEM, "$", "out of memory");
	}
	return 0;
}

/* A copy whose quantization (searched by the space) found no linear to
 * quantize: its configurations are invalid, with the reason the
 * workload's quantize would be refused for. */
static int
copy_no_quant(struct model_builder *mb, const struct cm_workload *wl, expr_id cond)
{
	const struct cm_quant_search *qs = &wl->ft.qs;
	const int hp = qs->hp > 0 ? qs->hp : qs->l4_hp > 0 ? qs->l4_hp : qs->l8_hp;
	const char *names[1];
	expr_id v = hp > 0 ? expr_var(&mb->m->g, hp - 1) : expr_int(&mb->m->g, 0);
	char path[96];

	names[0] = hp > 0 ? mb->def->hps[hp - 1].name : "";
	setting_path(mb, hp, "quantize", path, sizeof path);
	if (cm_graph_add_constraint(mb->m, cond, expr_int(&mb->m->g, 0), path, wl->training ? "the model has a linear "
	    "layer to quantize (quantized weights take no gradient, so only frozen linears are: LoRA's base layers, or those "
	    "\"freeze\" picks; the output layer stays in full precision)" : "the model has a linear layer to quantize "
	    "(the output layer stays in full precision)", hp > 0, names, &v) < 0)
		return dn_error_set(mb->err, DN_ENOMEM, "$", "out of memory");
	return 0;
}

/* A copy whose LoRA target list (value t of the space's parameter)
 * matches no linear: peft refuses it ("Target modules ... not found in the
 * base model"), so its configurations are invalid. */
static int
copy_no_targets(struct model_builder *mb, const struct cm_workload *wl, int t, expr_id cond)
{
	const struct cm_hparam *h = &mb->def->hps[wl->ft.targets_hp - 1];
	const char *names[] = { h->name };
	expr_id v = expr_var(&mb->m->g, wl->ft.targets_hp - 1);
	char rule[160];

	dn_fmt(rule, sizeof rule, "LoRA targets \"%.100s\" match a linear, convolution or embedding layer",
	    t < h->nvalues ? h->values[t] : "?");
	if (cm_graph_add_constraint(mb->m, cond, expr_int(&mb->m->g, 0), "$.space", rule, 1, names, &v) < 0)
		return dn_error_set(mb->err, DN_ENOMEM, "$", "out of memory");
	return 0;
}

/* A training step needs a loss: PyTorch's cross-entropy on the logits,
 * unless the model ends in one (out: the copy's output, under guard). */
static int
training_loss(struct model_builder *mb, expr_id guard, int out)
{
	struct cm_graph *m = mb->m;
	json_t *attrs;
	int in[1] = { out }, rc;

	if (!mb->wl->training || out < 0 || m->nops == 0 ||
	    strcmp(m->ops[m->nops - 1].rule->name, "cross_entropy") == 0 ||
	    m->tensors[out].dtype == CM_DT_I64 || m->tensors[out].rank < 2)
		return 0;
	attrs = json_object();
	rc = mb_run_rule(mb, op_rule_find("cross_entropy"), attrs, "$", "$.loss", guard, 1, in);
	json_decref(attrs);
	return rc < 0 ? -1 : 0;
}

static int
build_graph(struct cm_model_def *def, const struct cm_workload *wl, const struct cm_device *dev,
    const struct expr_ival *bounds, struct cm_graph *m, const char *quant_skip, struct build_info *qi,
    struct dn_error *err)
{
	struct model_builder mb;
	struct scope top;
	struct cm_workload wa;
	int precs[CM_MAX_PREC_CHOICES], quants[CM_QUANT_MAX_CHOICES];
	expr_id conds[CM_MAX_PREC_CHOICES], qconds[CM_QUANT_MAX_CHOICES], tconds[CM_FT_MAX_TGT_CHOICES];
	expr_id conflict, qconflict;
	int first = -1, out = -1, rc, nalt, nq, nt = 1, last_q = 0, ncopies = 0;
	const int tsearch = wl->training && wl->ft.lora_rank > 0 && wl->ft.targets_hp > 0;

	memset(m, 0, sizeof *m);
	if (expr_graph_init(&m->g) != 0)
		return dn_error_set(err, DN_ENOMEM, "$", "out of memory");
	m->act_bytes = (wl->precision == CM_PREC_FP32) ? 4 : 2;
	m->prec = wl->precision;
	for (int i = 0; i < def->nhps; i++)
		if (expr_graph_add_var(&m->g, def->hps[i].name,
		    def->hps[i].type == CM_HP_REAL ? EXPR_REAL : EXPR_INT) != i)
			return dn_error_set(err, DN_ENOMEM, "$", "out of memory");
	nalt = cm_precision_alts(&m->g, wl, precs, conds, &conflict);
	nq = cm_quant_alts(&m->g, &wl->ft, quants, qconds, &qconflict);
	tconds[0] = expr_int(&m->g, 1);
	if (tsearch) {
		nt = wl->ft.ntgt_choices;
		for (int j = 0; j < nt; j++)
			tconds[j] = expr_eq(&m->g, expr_var(&m->g, wl->ft.targets_hp - 1), expr_int(&m->g, j));
	}
	memset(&mb, 0, sizeof mb);
	mb.def = def;
	mb.m = m;
	mb.wl = wl;
	mb.dev_cc = cm_device_cc(dev);
	mb.bounds = bounds;
	mb.err = err;
	mb.unrolled = 1;
	mb.ft_force = -1;
	mb.lora_rank = EXPR_NONE;
	mb.quant_skip = quant_skip;
	memset(&top, 0, sizeof top);
	if (wl->training && wl->ft.lora_rank > 0 && lora_rank(&mb) != 0)
		return -1;
	rc = build_rules(&mb, &top);
	if (rc == 0)
		rc = flags_conflict(&mb, conflict, wl->fp16_hp, wl->bf16_hp, "fp16 and bf16 are not both true "
		    "(transformers' TrainingArguments: at most one of fp16 and bf16 can be True)");
	if (rc == 0)
		rc = flags_conflict(&mb, qconflict, wl->ft.qs.l4_hp, wl->ft.qs.l8_hp, "load_in_4bit and load_in_8bit "
		    "are not both true (transformers' BitsAndBytesConfig: only one can be used at the same time)");
	for (int c = 0; c < nalt * nq * nt; c++)
		ncopies += !expr_is_int_const(&m->g, expr_and(&m->g, expr_and(&m->g, conds[c / (nq * nt)],
		    qconds[c / nt % nq]), tconds[c % nt]), 0);
	/* the model once per precision, quantization and LoRA target list a
	 * configuration may run (one, unless a space picks them), each copy
	 * under the condition that picks it */
	for (int c = 0; rc == 0 && c < nalt * nq * nt; c++) {
		struct scope inner;
		const int ip = c / (nq * nt), iq = c / nt % nq, it = c % nt;
		expr_id cond = expr_and(&m->g, expr_and(&m->g, conds[ip], qconds[iq]), tconds[it]);
		int out_c = -1, hits = mb.quant_hits, lhits = mb.lora_hits;
		if (expr_is_int_const(&m->g, cond, 0))
			continue;
		memset(&inner, 0, sizeof inner);
		inner.parent = &top;
		rc = copy_begin(&mb, wl, &wa, (enum cm_precision)precs[ip], quants[iq], tsearch ? it : -1,
		    cond, dev);
		if (rc == 0)
			rc = build_inputs(&mb, &inner, cond, &first);
		if (rc == 0)
			rc = walk_list(&mb, json_object_get(def->root, "layers"), "$.layers", "$.layers",
			    &inner, cond, first, &out_c);
		if (rc == 0)
			rc = training_loss(&mb, cond, out_c);
		if (rc == 0 && quants[iq] != CM_QUANT_NONE && cm_quant_searched(&wl->ft) && mb.quant_hits == hits)
			rc = copy_no_quant(&mb, wl, cond);
		if (rc == 0 && tsearch && mb.lora_hits == lhits)
			rc = copy_no_targets(&mb, wl, it, cond);
		last_q |= mb.quant_last_q;
		scope_free(&inner);
		if (out < 0)
			out = out_c;
	}
	mb.wl = wl;
	scope_free(&top);
	if (rc != 0 && err != NULL && err->code == DN_ERANGE && ncopies > 1) {
		/* the operator or expression limit, reached by the copies: say so */
		struct dn_error e = *err;
		memset(err, 0, sizeof *err);
		dn_error_set(err, e.code, e.path, "%.300s: the space's precision, quantization and LoRA target values "
		    "build the model once per combination (%d copies here); search fewer of them", e.message, ncopies);
	}
	if (rc != 0)
		return -1;
	if (dn_error_isset(&m->g.err))
		return dn_error_set(err, m->g.err.code, m->g.err.path, "%s", m->g.err.message);
	if (cm_ft_check_modules(wl, def, m, err) != 0)
		return -1;
	if (wl->training && wl->ft.lora_rank > 0 && mb.lora_hits == 0)
		/* peft: "Target modules ... not found in the base model"; every
		 * weight frozen and nothing trained is no fine-tuning run */
		return dn_error_set(err, DN_EINVAL, "$.workload.lora.targets", "the LoRA targets match no linear, "
		    "convolution or embedding layer of the model (dnnsat adapts nn.Linear, nn.Conv1d/2d/3d and "
		    "nn.Embedding layers, as peft's LoraLayer: give attention.q/k/v/qkv/out, peft's module names of them "
		    "(q_proj, query, c_attn, ...), of the MLP's (gate_proj, up_proj, down_proj; c_fc, c_proj; dense), "
		    "of the embeddings (embed_tokens, wte, word_embeddings, ...), the model's own module names, linear, "
		    "all-linear, all, conv2d, embedding (convolutions and embeddings are picked by their kind, their "
		    "module names or a path) or a path prefix such as $.layers[3])");
	qi->hits = mb.quant_hits;
	qi->tied = mb.quant_tied;
	qi->last_q = last_q;    /* in any copy */
	memcpy(qi->last, mb.quant_last, sizeof qi->last);
	memcpy(qi->tied_train, mb.tied_train, sizeof qi->tied_train);
	m->output = out;
	return 0;
}

/* Builds the graph; with quantized base weights (cm_quant.c) builds it again
 * leaving the output layer in full precision, as transformers'
 * get_keys_to_not_convert does: nothing more when the model ties weights
 * (the tied modules stay, and a tied linear here is the embedding's
 * weight), else the last module with weights when it is a linear. (LoRA
 * on peft's "all-linear" leaves out the LM head by its module name,
 * cm_ft_lora_target.) */
int
model_graph_build(struct cm_model_def *def, const struct cm_workload *wl,
    const struct cm_device *dev, const struct expr_ival *bounds, struct cm_graph *m,
    struct dn_error *err)
{
	struct build_info qi;
	struct cm_workload wt;
	char skip[sizeof qi.last];
	int quant = wl->ft.quant != CM_QUANT_NONE || cm_quant_searched(&wl->ft);

	memset(&qi, 0, sizeof qi);
	if (build_graph(def, wl, dev, bounds, m, NULL, &qi, err) != 0)
		return -1;
	if (qi.tied_train[0] != '\0' && wl->ft.ntrain < CM_FT_MAX_SEL) {
		/* a tied linear trains the embedding's weight: the embedding
		 * trains from the start (its output needs a gradient, so what
		 * follows it keeps its activations), as train picking it says */
		wt = *wl;
		memcpy(wt.ft.train[wt.ft.ntrain++], qi.tied_train, sizeof qi.tied_train);
		wl = &wt;
		cm_graph_free(m);
		memset(&qi, 0, sizeof qi);
		if (build_graph(def, wl, dev, bounds, m, NULL, &qi, err) != 0)
			return -1;
	}
	if (!quant)
		return 0;
	if (qi.hits > 0 && !qi.tied && qi.last_q) {
		/* the output layer's own path, not its LoRA base_layer's */
		memcpy(skip, qi.last, sizeof skip);
		skip[mb_linear_path_len(skip)] = '\0';
		cm_graph_free(m);
		if (build_graph(def, wl, dev, bounds, m, skip, &qi, err) != 0)
			return -1;
	}
	if (wl->ft.quant == CM_QUANT_NONE || cm_quant_searched(&wl->ft))
		return 0;       /* a space's copies that quantize nothing are invalid (copy_no_quant) */
	if (qi.hits == 0)
		return dn_error_set(err, DN_EINVAL, "$.workload.quantize", wl->training ? "no linear layer to quantize: "
		    "quantized weights take no gradient, so only frozen linears are (LoRA's base layers, or those "
		    "\"freeze\" picks), and the output layer stays in full precision" : "no linear layer to "
		    "quantize (the output layer stays in full precision)");
	return 0;
}
