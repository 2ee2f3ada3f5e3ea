/*
 * op_build.c - the helpers operator rules use (attributes, outputs, saved
 * tensors, constraints) and the step that appends a finished operator to
 * the model graph with its liveness (see op_build.h).
 *
 * Invariant kept here: storage.last_use, storage.first_saver and
 * tensor.last_use are updated for every read, following views and choice
 * alternatives down to the storages that really hold the data, and each
 * such read or keep is recorded with the condition under which it happens
 * (struct cm_use, in op order);
 * storage.kept_if is where some operator keeps the storage: the guards of
 * the operators keeping it, each with the conditions under which a kept
 * choice output stands for it (keep_tensor).
 */
#include "model_build_priv.h"
#include "dn_deadline.h"
#include "dn_grow.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- graph containers ---- */

/* room for one more element of arr (dn_grow_int), or return -1 */
#define GROW(arr, n, cap) do {                                           \
	if (dn_grow_int(&(arr), &(cap), (n) + 1, sizeof *(arr)) != 0)    \
		return -1;                                               \
} while (0)

int
cm_graph_add_storage(struct cm_graph *m, expr_id bytes, expr_id guard, int producer)
{
	GROW(m->storages, m->nstorages, m->capstorages);
	m->storages[m->nstorages].bytes = bytes;
	m->storages[m->nstorages].guard = guard;
	m->storages[m->nstorages].producer = producer;
	m->storages[m->nstorages].last_use = producer;
	m->storages[m->nstorages].first_saver = INT_MAX;
	m->storages[m->nstorages].kept_if = EXPR_NONE;
	m->storages[m->nstorages].extra = 0;
	return m->nstorages++;
}

int
cm_graph_add_tensor(struct cm_graph *m, const struct cm_tensor *proto)
{
	GROW(m->tensors, m->ntensors, m->captensors);
	m->tensors[m->ntensors] = *proto;
	m->tensors[m->ntensors].visit = 0;     /* not reached by any walk yet */
	m->tensors[m->ntensors].act_bytes = (uint8_t)m->act_bytes;
	return m->ntensors++;
}

int
cm_graph_add_op(struct cm_graph *m, const struct cm_op *proto)
{
	GROW(m->ops, m->nops, m->capops);
	m->ops[m->nops] = *proto;
	m->ops[m->nops].prec = (uint8_t)m->prec;
	return m->nops++;
}

int
cm_graph_add_constraint(struct cm_graph *m, expr_id guard, expr_id ok,
    const char *path, const char *text, int nvals, const char *const *names,
    const expr_id *vals)
{
	struct cm_constraint *c;

	if (ok < 0 || guard < 0)
		return -1;
	ok = expr_or(&m->g, expr_not(&m->g, guard), ok);
	if (expr_is_int_const(&m->g, ok, 1))
		return 0;       /* always satisfied */
	GROW(m->cons, m->ncons, m->capcons);
	c = &m->cons[m->ncons];
	memset(c, 0, sizeof *c);
	c->ok = ok;
	c->path = strdup(path);
	c->text = strdup(text);
	if (c->path == NULL || c->text == NULL) {
		free(c->path);
		free(c->text);
		return -1;
	}
	for (int i = 0; i < nvals && i < 4; i++) {
		c->val_names[i] = strdup(names[i]);
		c->vals[i] = vals[i];
		c->val_real[i] = vals[i] >= 0 && m->g.nodes[vals[i]].type == EXPR_REAL;
		if (c->val_names[i] == NULL)
			return -1;
		c->nvals = i + 1;
	}
	m->ncons++;
	return 0;
}

void
cm_graph_free(struct cm_graph *m)
{
	for (int i = 0; i < m->ntensors; i++)
		if (m->tensors[i].owns_alts) {
			free(m->tensors[i].alts);
			free(m->tensors[i].alt_conds);
		}
	for (int i = 0; i < m->nops; i++)
		free(m->ops[i].path);
	for (int i = 0; i < m->ncons; i++) {
		free(m->cons[i].path);
		free(m->cons[i].text);
		for (int j = 0; j < m->cons[i].nvals; j++)
			free(m->cons[i].val_names[j]);
	}
	free(m->tensors);
	free(m->storages);
	free(m->reads);
	free(m->treads);
	free(m->keeps);
	free(m->ops);
	free(m->cons);
	expr_graph_free(&m->g);
	memset(m, 0, sizeof *m);
}

int
cm_dtype_bytes(const struct cm_graph *m, enum cm_dtype dt)
{
	switch (dt) {
	case CM_DT_ACT:  return m->act_bytes;
	case CM_DT_F32:  return 4;
	case CM_DT_I64:  return 8;
	case CM_DT_BOOL: return 1;
	}
	return 4;
}

int
cm_tensor_bytes(const struct cm_tensor *t)
{
	switch ((enum cm_dtype)t->dtype) {
	case CM_DT_ACT:  return t->act_bytes;
	case CM_DT_F32:  return 4;
	case CM_DT_I64:  return 8;
	case CM_DT_BOOL: return 1;
	}
	return 4;
}

/* ---- attributes ---- */

int
ob_fail(struct op_build *ob, const char *name, const char *fmt, ...)
{
	char path[512], msg[400];
	va_list ap;

	if (name != NULL)
		dn_fmt(path, sizeof path, "%s.%s", ob->file_path, name);
	else
		dn_fmt(path, sizeof path, "%s", ob->file_path);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return dn_error_set(ob->err, DN_EINVAL, path, "%s: %s", ob->op.rule->name, msg);
}

int
ob_has(const struct op_build *ob, const char *name)
{
	return json_object_get(ob->item, name) != NULL;
}

static expr_id
attr_expr(struct op_build *ob, const json_t *v, const char *name)
{
	char path[512];

	dn_fmt(path, sizeof path, "%s.%s", ob->file_path, name);
	if (json_is_boolean(v))
		return expr_int(&ob->m->g, json_is_true(v));
	return mb_parse_value(ob->mb, v, path, ob->guard);
}

expr_id
ob_int(struct op_build *ob, const char *name, int64_t dflt)
{
	const json_t *v = json_object_get(ob->item, name);
	expr_id e;

	if (v == NULL) {
		if (dflt == OB_REQUIRED) {
			ob_fail(ob, NULL, "\"%s\" is required", name);
			return EXPR_NONE;
		}
		return expr_int(&ob->m->g, dflt);
	}
	if (json_is_array(v)) {
		ob_fail(ob, name, "must be one integer or expression, not a list");
		return EXPR_NONE;
	}
	e = attr_expr(ob, v, name);
	if (e >= 0 && expr_type_of(&ob->m->g, e) != EXPR_INT) {
		ob_fail(ob, name, "must be an integer (use floor(), ceil() or round() on real values)");
		return EXPR_NONE;
	}
	return e;
}

int
ob_int_list(struct op_build *ob, const char *name, int lo, int hi, expr_id *out)
{
	struct expr_graph *g = &ob->m->g;
	const json_t *list = json_object_get(ob->item, name), *v;
	char elt[64];
	size_t i;

	if (!json_is_array(list) || json_array_size(list) < (size_t)lo || json_array_size(list) > (size_t)hi)
		return ob_fail(ob, name, "must list %d to %d integers", lo, hi);
	json_array_foreach(list, i, v) {
		dn_fmt(elt, sizeof elt, "%s[%zu]", name, i);
		out[i] = attr_expr(ob, v, elt);
		if (out[i] < 0)
			return -1;
		if (expr_type_of(g, out[i]) != EXPR_INT)
			return ob_fail(ob, elt, "must be an integer");
	}
	return (int)json_array_size(list);
}

int
ob_dims(struct op_build *ob, const char *name, expr_id dims[CM_MAX_RANK])
{
	struct expr_graph *g = &ob->m->g;
	char elt[64];
	int n = ob_int_list(ob, name, 1, CM_MAX_RANK, dims);

	for (int i = 0; i < n; i++) {
		const char *nm[1] = { elt };
		dn_fmt(elt, sizeof elt, "%s[%d]", name, i);
		ob_require(ob, expr_ge(g, dims[i], expr_int(g, 1)), "dimensions >= 1", 1, nm, &dims[i]);
	}
	return n;
}

int
ob_pair(struct op_build *ob, const char *name, int64_t dflt, expr_id out[2])
{
	return ob_tuple(ob, name, dflt, 2, out);
}

int
ob_tuple(struct op_build *ob, const char *name, int64_t dflt, int n, expr_id *out)
{
	const json_t *v = json_object_get(ob->item, name);
	char sub[64];

	if (json_is_array(v)) {
		if (json_array_size(v) != (size_t)n)
			return ob_fail(ob, name, n == 3 ? "must be one value or a list of 3 (depth, height, width)" :
			    n == 2 ? "must be one value or a list of 2 (height, width)" : "must be one value");
		for (int i = 0; i < n; i++) {
			dn_fmt(sub, sizeof sub, "%s[%d]", name, i);
			out[i] = attr_expr(ob, json_array_get(v, (size_t)i), sub);
			if (out[i] < 0)
				return -1;
			if (expr_type_of(&ob->m->g, out[i]) != EXPR_INT)
				return ob_fail(ob, sub, "must be an integer");
		}
		return 0;
	}
	out[0] = ob_int(ob, name, dflt);
	for (int i = 1; i < n; i++)
		out[i] = out[0];
	return out[0] < 0 ? -1 : 0;
}

int
ob_bool(struct op_build *ob, const char *name, int dflt)
{
	const json_t *v = json_object_get(ob->item, name);

	if (v == NULL)
		return dflt;
	if (!json_is_boolean(v)) {
		ob_fail(ob, name, "must be true or false");
		return -1;
	}
	return json_is_true(v);
}

double
ob_number(struct op_build *ob, const char *name, double dflt, double lo, double hi)
{
	const json_t *v = json_object_get(ob->item, name);
	double x;

	if (v == NULL)
		return dflt;
	if (!json_is_number(v)) {
		ob_fail(ob, name, "must be a number");
		return NAN;
	}
	x = json_number_value(v);
	if (!(x >= lo && x <= hi)) {
		ob_fail(ob, name, "must be between %g and %g", lo, hi);
		return NAN;
	}
	return x;
}

int
ob_training(const struct op_build *ob)
{
	return ob->mb->wl->training;
}

int
ob_autocast(const struct op_build *ob)
{
	return ob->mb->wl->precision == CM_PREC_MIXED_FP16 || ob->mb->wl->precision == CM_PREC_MIXED_BF16;
}

enum cm_dtype
ob_autocast_f32(const struct op_build *ob)
{
	return ob_autocast(ob) ? CM_DT_F32 : CM_DT_ACT;
}

enum cm_dtype
ob_widest(const struct op_build *ob)
{
	for (int i = 0; ob_autocast(ob) && i < ob->nin; i++)
		if (ob_in(ob, i)->dtype == CM_DT_F32)
			return CM_DT_F32;
	return CM_DT_ACT;
}

void
ob_save_gemm_input(struct op_build *ob, int i)
{
	const struct cm_tensor *x = ob_in(ob, i);

	if (ob_autocast(ob) && x->dtype == CM_DT_F32)
		ob_save_new(ob, ob_bytes(ob, x->elems, CM_DT_ACT));     /* autocast's fp16/bf16 cast */
	else
		ob_save_input(ob, i);
}

void
ob_save_softmax_input(struct op_build *ob, int i)
{
	const struct cm_tensor *x = ob_in(ob, i);

	if (!ob->mb->wl->softmax_keeps_input)
		return;
	if (ob_autocast(ob) && x->dtype != CM_DT_F32)
		ob_save_new(ob, ob_bytes(ob, x->elems, CM_DT_F32));     /* autocast's fp32 cast */
	else
		ob_save_input(ob, i);
}

int
ob_weights_train(const struct op_build *ob)
{
	return !ob->op.frozen;   /* frozen is only ever set for training */
}

enum cm_attention
ob_attention(const struct op_build *ob)
{
	return ob->mb->attention;
}

int
ob_attention_alts(struct op_build *ob, int (*body)(struct op_build *ob, enum cm_attention kernel, void *arg),
    void *arg)
{
	struct model_builder *mb = ob->mb;
	struct expr_graph *g = &ob->m->g;
	const char *inst = ob->inst_path;
	expr_id guard = ob->guard, conds[CM_MAX_ATTN_CHOICES];
	int outs[CM_MAX_ATTN_CHOICES], n = 0;
	char path[512];

	if (mb->nattn == 0)
		return body(ob, mb->attention, arg);
	for (int j = 0; j < mb->nattn; j++) {
		enum cm_attention k = mb->attn_kernels[j];
		expr_id cond = mb->attn_conds[j];
		int seen = 0;
		/* the values that run kernel k, taken at the first of them */
		for (int i = 0; i < j; i++)
			seen |= mb->attn_kernels[i] == k;
		if (seen)
			continue;
		for (int i = j + 1; i < mb->nattn; i++)
			if (mb->attn_kernels[i] == k)
				cond = expr_or(g, cond, mb->attn_conds[i]);
		if (expr_is_int_const(g, expr_and(g, guard, cond), 0))
			continue;
		dn_fmt(path, sizeof path, "%s.%s", inst, cm_attention_name(k));
		ob->guard = expr_and(g, guard, cond);
		ob->inst_path = path;
		outs[n] = body(ob, k, arg);
		ob->guard = guard;
		ob->inst_path = inst;
		if (outs[n] < 0 || expr_graph_set_origin(g, inst) != 0)
			return -1;
		conds[n++] = cond;
	}
	if (n == 0)
		return ob_fail(ob, NULL, "no attention kernel can be chosen here");
	dn_fmt(path, sizeof path, "%s.kernel", inst);
	return n == 1 ? outs[0] : mb_make_select(mb, path, n, outs, conds);
}

int
ob_device_cc(const struct op_build *ob)
{
	return ob->mb->dev_cc;
}

/* ---- shapes and constraints ---- */

expr_id
ob_elems(struct op_build *ob, int rank, const expr_id *dims)
{
	expr_id e = expr_int(&ob->m->g, 1);

	for (int i = 0; i < rank; i++)
		e = expr_mul(&ob->m->g, e, dims[i]);
	return e;
}

expr_id
ob_bytes(struct op_build *ob, expr_id elems, enum cm_dtype dt)
{
	return expr_mul(&ob->m->g, elems, expr_int(&ob->m->g, cm_dtype_bytes(ob->m, dt)));
}

void
ob_require(struct op_build *ob, expr_id cond, const char *rule,
    int nvals, const char *const *names, const expr_id *vals)
{
	if (cond < 0)
		return;
	if (cm_graph_add_constraint(ob->m, ob->guard, cond, ob->inst_path, rule,
	    nvals, names, vals) != 0 && !dn_error_isset(ob->err))
		dn_error_set(ob->err, DN_ENOMEM, ob->file_path, "out of memory");
}

int
ob_need_rank(struct op_build *ob, int i, int lo, int hi)
{
	int r = ob_in(ob, i)->rank;

	if (r < lo || r > hi) {
		if (lo == hi)
			return ob_fail(ob, NULL, "input %d has %d dimensions; %s needs %d",
			    i, r, ob->op.rule->name, lo);
		return ob_fail(ob, NULL, "input %d has %d dimensions; %s needs %d to %d",
		    i, r, ob->op.rule->name, lo, hi);
	}
	return 0;
}

static int
new_tensor(struct op_build *ob, int rank, const expr_id *dims, enum cm_dtype dt,
    int storage, int view_of, int contiguous, const struct cm_tensor *alias)
{
	struct cm_tensor t;
	int idx;

	if (rank > CM_MAX_RANK)
		return ob_fail(ob, NULL, "more than %d dimensions", CM_MAX_RANK);
	memset(&t, 0, sizeof t);
	t.rank = rank;
	for (int i = 0; i < rank; i++) {
		if (dims[i] < 0)
			return -1;
		t.dim[i] = dims[i];
	}
	t.elems = ob_elems(ob, rank, dims);
	t.dtype = (uint8_t)dt;
	t.storage = storage;
	t.view_of = view_of;
	t.contiguous = (uint8_t)contiguous;
	t.producer = ob->m->nops;
	t.last_use = ob->m->nops;
	t.id_end = alias != NULL ? alias->id_end : EXPR_NONE;
	if (alias != NULL && storage < 0) {
		t.alts = alias->alts;   /* borrowed: owned by the choice output */
		t.alt_conds = alias->alt_conds;
		t.nalts = alias->nalts;
	}
	idx = cm_graph_add_tensor(ob->m, &t);
	if (idx < 0)
		dn_error_set(ob->err, DN_ENOMEM, ob->file_path, "out of memory");
	ob->out = idx;
	return idx;
}

int
ob_out_new(struct op_build *ob, int rank, const expr_id *dims, enum cm_dtype dt)
{
	expr_id elems = ob_elems(ob, rank, dims);
	int s = cm_graph_add_storage(ob->m, ob_bytes(ob, elems, dt), ob->guard, ob->m->nops);

	if (s < 0)
		return dn_error_set(ob->err, DN_ENOMEM, ob->file_path, "out of memory");
	return new_tensor(ob, rank, dims, dt, s, -1, 1, NULL);
}

int
ob_out_view(struct op_build *ob, int i, int rank, const expr_id *dims, int contiguous)
{
	const struct cm_tensor *src = ob_in(ob, i);
	struct cm_tensor alias = *src;

	return new_tensor(ob, rank, dims, (enum cm_dtype)src->dtype, src->storage,
	    ob->in[i], contiguous, &alias);
}

int
ob_out_inplace(struct op_build *ob, int i)
{
	struct cm_tensor src = *ob_in(ob, i);

	return new_tensor(ob, src.rank, src.dim, (enum cm_dtype)src.dtype, src.storage,
	    -1, src.contiguous, &src);
}

void
ob_param(struct op_build *ob, expr_id elems)
{
	if (ob->op.nparam_tensors < CM_MAX_PARAM_TENSORS)
		ob->op.param_elems[ob->op.nparam_tensors++] = elems;
	ob->op.params = expr_add(&ob->m->g, ob->op.params, elems);
}

void
ob_param_2d(struct op_build *ob, expr_id elems, expr_id rows, expr_id cols)
{
	int i = ob->op.nparam_tensors;

	ob_param(ob, elems);
	if (i < CM_MAX_PARAM_TENSORS) {
		ob->op.param_rows[i] = rows;
		ob->op.param_cols[i] = cols;
		ob->op.param_factored[i] = 1;
	}
}

void
ob_buffer(struct op_build *ob, expr_id elems)
{
	ob->op.buffer_elems = expr_add(&ob->m->g, ob->op.buffer_elems, elems);
}

void
ob_save_input(struct op_build *ob, int i)
{
	if (ob->nsaved < 8)
		ob->saved[ob->nsaved++] = ob->in[i];
}

void
ob_save_output(struct op_build *ob)
{
	if (ob->nsaved < 8)
		ob->saved[ob->nsaved++] = -2;   /* resolved to ob->out when finished */
}

void
ob_save_new(struct op_build *ob, expr_id bytes)
{
	if (ob->nextra < 4)
		ob->extra_saved[ob->nextra++] = bytes;
}

/* ---- finishing an operator ---- */

/* Appends a use (struct cm_use) to *arr. 0 or -1 (out of memory). */
static int
add_use(struct cm_use **arr, int *n, int *cap, int id, int op, expr_id cond)
{
	if (dn_grow_int(arr, cap, *n + 1, sizeof **arr) != 0)
		return -1;
	(*arr)[*n].id = id;
	(*arr)[*n].op = op;
	(*arr)[*n].cond = cond;
	(*n)++;
	return 0;
}

/* Storage s is kept for backward by op where `cond` holds. 0 or -1. */
static int
mark_saved(struct cm_graph *m, int s, int op, expr_id cond)
{
	struct cm_storage *st = &m->storages[s];

	if (st->first_saver > op)
		st->first_saver = op;
	st->kept_if = st->kept_if == EXPR_NONE ? cond : expr_or(&m->g, st->kept_if, cond);
	return add_use(&m->keeps, &m->nkeeps, &m->capkeeps, s, op, cond);
}

static int
tensor_desc(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x < y) - (x > y);
}

int
cm_graph_inplace_on_choice(const struct cm_graph *m, int t)
{
	const struct cm_tensor *x = &m->tensors[t];

	return x->storage < 0 && x->producer >= 0 && x->producer < m->nops && m->ops[x->producer].out == t;
}

/* Collects into *set the tensors t may stand for: itself, down choice
 * alternatives and, with `views` (tensors, not storages), down what a view
 * is a view of but not into the alternatives under an in-place output
 * (each once: nested repeats and choices share them). */
static int
collect_alts(struct cm_graph *m, int t, int views, int **set, int *n, int *cap, int depth)
{
	struct cm_tensor *x = &m->tensors[t];

	if (depth > 256 || x->visit == m->visit_clock)
		return 0;
	x->visit = m->visit_clock;
	if (dn_grow_int(set, cap, *n + 1, sizeof **set) != 0)
		return -1;
	(*set)[(*n)++] = t;
	if (views && x->view_of >= 0 && collect_alts(m, x->view_of, views, set, n, cap, depth + 1) != 0)
		return -1;
	if (x->storage >= 0 || (views && cm_graph_inplace_on_choice(m, t)))
		return 0;
	for (int i = 0; i < x->nalts; i++)
		if (collect_alts(m, x->alts[i], views, set, n, cap, depth + 1) != 0)
			return -1;
	return 0;
}

/*
 * The tensors that an operator present where `guard` holds reaches when it
 * reads or keeps tensor t, each with the condition under which it does
 * (its walk_cond), into *set (malloc'd, *n of them): t where guard holds, a
 * choice output's alts[i] where alt_conds[i] also holds (a pool that is
 * one option of a choice reads its input only where that option is chosen,
 * though the input exists for every option) and, with `views`, the tensor
 * a view is a view of. An alternative reached along several paths (a
 * repeat's output after k copies is also the input of copy k + 1's choice)
 * is reached where any of them holds: the conditions flow in decreasing
 * tensor order, which puts every choice output before its alternatives
 * (mb_make_select appends it after them) and every view before what it
 * views. 0 or -1 (out of memory; an expression's error is left in m->g.err).
 */
static int
reach(struct cm_graph *m, int t, expr_id guard, int views, int **set, int *n)
{
	struct expr_graph *g = &m->g;
	int cap = 0;

	*set = NULL;
	*n = 0;
	m->visit_clock++;
	if (collect_alts(m, t, views, set, n, &cap, 0) != 0)
		return -1;
	qsort(*set, (size_t)*n, sizeof **set, tensor_desc);
	for (int i = 0; i < *n; i++)
		m->tensors[(*set)[i]].walk_cond = (*set)[i] == t ? guard : expr_int(g, 0);
	for (int i = 0; i < *n; i++) {
		const struct cm_tensor *x = &m->tensors[(*set)[i]];
		if (views && x->view_of >= 0) {
			struct cm_tensor *b = &m->tensors[x->view_of];
			b->walk_cond = expr_or(g, b->walk_cond, x->walk_cond);
		}
		if (x->storage >= 0 || (views && cm_graph_inplace_on_choice(m, (*set)[i])))
			continue;
		for (int j = 0; j < x->nalts; j++) {
			struct cm_tensor *a = &m->tensors[x->alts[j]];
			a->walk_cond = expr_or(g, a->walk_cond, expr_and(g, x->walk_cond, x->alt_conds[j]));
		}
	}
	return 0;
}

/* Op, present where `guard` holds, keeps tensor t for backward: the
 * storages t stands for, each where reach() reaches it. 0 or -1. */
static int
keep_tensor(struct cm_graph *m, int t, int op, expr_id guard)
{
	int *set, n, rc = 0;

	if (m->tensors[t].storage >= 0)
		return mark_saved(m, m->tensors[t].storage, op, guard);
	if (reach(m, t, guard, 0, &set, &n) != 0) {
		free(set);
		return -1;
	}
	for (int i = 0; i < n && rc == 0; i++) {
		const struct cm_tensor *x = &m->tensors[set[i]];
		if (x->storage >= 0)
			rc = mark_saved(m, x->storage, op, x->walk_cond);
	}
	free(set);
	return rc;
}

/* Op, present where `guard` holds, reads tensor t: the storages it stands
 * for (their last_use and read uses) and, through views, the tensors (their
 * last_use and uses, for gradients in flight). 0 or -1. */
static int
read_tensor(struct cm_graph *m, int t, int op, expr_id guard)
{
	int *set, n, rc = 0;

	if (reach(m, t, guard, 0, &set, &n) != 0) {
		free(set);
		return -1;
	}
	for (int i = 0; i < n && rc == 0; i++) {
		const struct cm_tensor *x = &m->tensors[set[i]];
		if (x->storage < 0)
			continue;
		if (m->storages[x->storage].last_use < op)
			m->storages[x->storage].last_use = op;
		rc = add_use(&m->reads, &m->nreads, &m->capreads, x->storage, op, x->walk_cond);
	}
	free(set);
	if (rc != 0 || reach(m, t, guard, 1, &set, &n) != 0) {
		free(set);
		return -1;
	}
	for (int i = 0; i < n && rc == 0; i++) {
		struct cm_tensor *x = &m->tensors[set[i]];
		if (x->last_use < op)
			x->last_use = op;
		rc = add_use(&m->treads, &m->ntreads, &m->captreads, set[i], op, x->walk_cond);
	}
	free(set);
	return rc;
}

/* A frozen weight under autocast: torch's autocast caches the fp16/bf16
 * copy of a weight only when it requires grad (autocast_mode.cpp,
 * cached_cast: arg.requires_grad() && arg.is_leaf()), so a frozen GEMM or
 * convolution casts its weights on every call. The cast weight is kept for
 * backward when the input needs a gradient (mm keeps mat2 for grad of
 * mat1), else it is a temporary of the forward. */
static void
frozen_weight_copies(struct model_builder *mb, struct op_build *ob, int rg)
{
	struct expr_graph *g = &mb->m->g;
	enum cm_op_class c = (enum cm_op_class)ob->op.op_class;

	if ((mb->wl->precision != CM_PREC_MIXED_FP16 && mb->wl->precision != CM_PREC_MIXED_BF16) ||
	    ob->op.nparam_tensors == 0 || (c != CM_CLASS_GEMM && c != CM_CLASS_CONV && c != CM_CLASS_RNN) ||
	    ob->op.quant)       /* a quantized linear has its own casts (op_linear.c) */
		return;
	if (rg)
		ob_save_new(ob, expr_mul(g, ob->op.param_elems[0], expr_int(g, 2)));
	else
		ob->op.ws_fwd = expr_add(g, ob->op.ws_fwd, expr_mul(g, ob->op.params, expr_int(g, 2)));
}

/* Autocast's casts of a GEMM's, convolution's or recurrent op's weights:
 * each floating argument is cast to fp16/bf16 once per forward
 * (autocast_mode.cpp, cached_cast: cached for the step when it requires
 * grad, else on every call), one copy kernel per weight tensor reading
 * fp32 and writing the half copy; a trained weight's backward casts its
 * gradient back to fp32 (ToCopyBackward0), one more kernel each. Kernels
 * and bytes moved, for the latency model. */
static void
autocast_casts(struct model_builder *mb, struct op_build *ob, int trainable)
{
	struct expr_graph *g = &mb->m->g;
	enum cm_op_class c = (enum cm_op_class)ob->op.op_class;
	int n = ob->op.nparam_tensors;
	expr_id bytes;

	if ((mb->wl->precision != CM_PREC_MIXED_FP16 && mb->wl->precision != CM_PREC_MIXED_BF16) || n == 0 ||
	    (c != CM_CLASS_GEMM && c != CM_CLASS_CONV && c != CM_CLASS_RNN) || ob->op.kernels_fwd == 0 ||
	    ob->op.quant)
		return;
	bytes = expr_mul(g, ob->op.params, expr_int(g, 4 + 2));
	ob->op.kernels_fwd = (uint8_t)(ob->op.kernels_fwd + n > 255 ? 255 : ob->op.kernels_fwd + n);
	ob->op.fwd_bytes = expr_add(g, ob->op.fwd_bytes, bytes);
	if (!mb->wl->training || !trainable || ob->op.kernels_bwd == 0)
		return;
	ob->op.kernels_bwd = (uint8_t)(ob->op.kernels_bwd + n > 255 ? 255 : ob->op.kernels_bwd + n);
	ob->op.bwd_bytes = expr_add(g, ob->op.bwd_bytes, bytes);
}

int
mb_finish_op(struct model_builder *mb, struct op_build *ob)
{
	struct cm_graph *m = mb->m;
	int idx = m->nops, rg = 0, has_params, trainable;
	struct cm_tensor *out;

	if (ob->out < 0)
		return dn_error_set(ob->err, DN_EINTERNAL, ob->file_path, "operator produced no output");
	if (m->nops >= CM_MAX_OPS)
		return dn_error_set(ob->err, DN_ERANGE, ob->file_path,
		    "the model builds more than %d operators (CM_MAX_OPS)", CM_MAX_OPS);
	if (m->ntensors > CM_MAX_TENSORS)
		return dn_error_set(ob->err, DN_ERANGE, ob->file_path,
		    "the model builds more than %d tensors (CM_MAX_TENSORS)", CM_MAX_TENSORS);
	if (m->g.n > CM_MAX_EXPR_NODES)
		return dn_error_set(ob->err, DN_ERANGE, ob->file_path,
		    "the model's cost expressions exceed %d nodes (CM_MAX_EXPR_NODES)", CM_MAX_EXPR_NODES);
	if (dn_deadline_check(ob->err, ob->file_path, "building the model") != 0)
		return -1;
	for (int i = 0; i < ob->nin; i++)
		rg |= m->tensors[ob->in[i]].requires_grad;
	has_params = !expr_is_int_const(&m->g, ob->op.params, 0) ||
	    ob->op.nparam_tensors > 0 || ob->tied_weight;
	trainable = has_params && !ob->op.frozen;
	if (has_params && !ob->op.adapter && !mb->ft_shared) {
		/* the model's last weights so far (cm_quant.c's output layer) */
		mb->quant_last_q = ob->op.quant != CM_QUANT_NONE;
		snprintf(mb->quant_last, sizeof mb->quant_last, "%s", ob->inst_path);
	}
	if (mb->wl->training && has_params && ob->op.frozen)
		frozen_weight_copies(mb, ob, rg);
	if (mb->wl->training && !rg && !trainable) {
		/* nothing here needs a gradient: autograd makes no node, so the
		 * operator keeps nothing and has no backward */
		ob->nsaved = 0;
		ob->nextra = 0;
		ob->op.bwd_macs = ob->op.bwd_bytes = ob->op.ws_bwd = ob->op.bwd_extra = expr_int(&m->g, 0);
		ob->op.kernels_bwd = 0;
	}
	autocast_casts(mb, ob, trainable);
	if (mb->ft_shared) {
		ob->op.params = expr_int(&m->g, 0);
		ob->op.nparam_tensors = 0;
	}
	ob->op.path = strdup(ob->inst_path);
	ob->op.guard = ob->guard;
	ob->op.ckpt_seg = mb->ckpt_seg;
	ob->op.nin = ob->nin;
	ob->op.in0 = ob->nin > 0 ? ob->in[0] : -1;
	ob->op.out = ob->out;
	if (ob->op.path == NULL || cm_graph_add_op(m, &ob->op) != idx) {
		free(ob->op.path);
		return dn_error_set(ob->err, DN_ENOMEM, ob->file_path, "out of memory");
	}
	for (int i = 0; i < ob->nin; i++)
		if (read_tensor(m, ob->in[i], idx, ob->guard) != 0)
			return dn_error_set(ob->err, DN_ENOMEM, ob->file_path, "out of memory");
	for (int i = 0; i < ob->nsaved; i++)
		if (keep_tensor(m, ob->saved[i] == -2 ? ob->out : ob->saved[i], idx, ob->guard) != 0)
			return dn_error_set(ob->err, DN_ENOMEM, ob->file_path, "out of memory");
	if (dn_error_isset(&m->g.err))
		return dn_error_set(ob->err, m->g.err.code, ob->file_path, "%s", m->g.err.message);
	for (int i = 0; i < ob->nextra; i++) {
		int s = cm_graph_add_storage(m, ob->extra_saved[i], ob->guard, idx);
		if (s < 0)
			return dn_error_set(ob->err, DN_ENOMEM, ob->file_path, "out of memory");
		if (mark_saved(m, s, idx, expr_int(&m->g, 1)) != 0)
			return dn_error_set(ob->err, DN_ENOMEM, ob->file_path, "out of memory");
		m->storages[s].extra = 1;
	}
	out = &m->tensors[ob->out];
	if (out->producer == idx)
		out->requires_grad = (uint8_t)((rg || trainable) &&
		    (out->dtype == CM_DT_ACT || out->dtype == CM_DT_F32));
	return ob->out;
}

static void
op_init(struct op_build *ob, struct model_builder *mb, const struct op_rule *rule)
{
	struct expr_graph *g = &mb->m->g;

	memset(&ob->op, 0, sizeof ob->op);
	ob->op.rule = rule;
	ob->op.op_class = (uint8_t)rule->op_class;
	ob->op.params = expr_int(g, 0);
	ob->op.buffer_elems = expr_int(g, 0);
	ob->op.macs = expr_int(g, 0);
	ob->op.flops_other = expr_int(g, 0);
	ob->op.bwd_macs = expr_int(g, 0);
	ob->op.fwd_bytes = expr_int(g, 0);
	ob->op.bwd_bytes = expr_int(g, 0);
	ob->op.parallel = expr_int(g, 1);
	ob->op.ws_fwd = expr_int(g, 0);
	ob->op.ws_bwd = expr_int(g, 0);
	ob->op.ws_bound = expr_int(g, 0);
	ob->op.bwd_extra = expr_int(g, 0);
	ob->op.kernel_area = expr_int(g, 0);
	ob->op.bias_adds = expr_int(g, 0);
	ob->op.aux_macs = expr_int(g, 0);
	ob->op.tile_out = expr_int(g, 0);
	ob->op.tile_tap_macs = expr_int(g, 0);
	ob->op.rnn_steps = expr_int(g, 0);
	ob->op.rnn_step_macs = expr_int(g, 0);
	ob->op.rnn_step_wbytes = expr_int(g, 0);
	ob->op.rnn_proj_macs = expr_int(g, 0);
	ob->op.gemv_row = expr_int(g, 0);
	ob->op.kernels_fwd = 1;
	ob->op.kernels_bwd = 1;
	ob->out = -1;
	ob->nsaved = 0;
	ob->nextra = 0;
}

int
mb_run_rule(struct model_builder *mb, const struct op_rule *rule,
    const json_t *item, const char *file_path, const char *inst_path,
    expr_id guard, int nin, const int *in)
{
	struct op_build ob;
	int nops_before = mb->m->nops;

	memset(&ob, 0, sizeof ob);
	ob.m = mb->m;
	ob.mb = mb;
	ob.item = item;
	ob.file_path = file_path;
	ob.inst_path = inst_path;
	ob.guard = guard;
	ob.err = mb->err;
	if (nin < rule->min_in || nin > rule->max_in) {
		if (rule->min_in == rule->max_in)
			return dn_error_set(mb->err, DN_EINVAL, file_path,
			    "%s takes %d input%s, got %d", rule->name, rule->min_in,
			    rule->min_in == 1 ? "" : "s", nin);
		return dn_error_set(mb->err, DN_EINVAL, file_path,
		    "%s takes %d to %d inputs, got %d", rule->name, rule->min_in, rule->max_in, nin);
	}
	ob.nin = nin;
	memcpy(ob.in, in, sizeof(int) * (size_t)nin);
	for (int i = 0; i < nin; i++)
		ob.inputs[i] = mb->m->tensors[in[i]];
	op_init(&ob, mb, rule);
	ob.op.frozen = (uint8_t)(mb->ft_force >= 0 ? mb->ft_force :
	    cm_ft_frozen(mb->wl, rule->name, mb->parent_rule, inst_path));
	ob.op.adapter = (uint8_t)mb->ft_adapter;
	if (expr_graph_set_origin(&mb->m->g, inst_path) != 0)
		return dn_error_set(mb->err, DN_ENOMEM, file_path, "out of memory");
	if (rule->build(&ob) != 0 || dn_error_isset(mb->err))
		return -1;
	if (dn_error_isset(&mb->m->g.err))
		return dn_error_set(mb->err, mb->m->g.err.code, file_path, "%s", mb->m->g.err.message);
	if (mb->m->nops != nops_before)
		return ob.out;          /* a composite: its sub-operators are the ops */
	return mb_finish_op(mb, &ob);
}

int
ob_sub(struct op_build *ob, const char *rule_name, const char *suffix,
    json_t *attrs, int nin, const int *in)
{
	const struct op_rule *rule = op_rule_find(rule_name);

	if (rule == NULL)
		return dn_error_set(ob->err, DN_EINTERNAL, ob->file_path, "no rule %s", rule_name);
	return ob_sub_rule(ob, rule, suffix, attrs, nin, in);
}

int
ob_sub_rule(struct op_build *ob, const struct op_rule *rule, const char *suffix,
    json_t *attrs, int nin, const int *in)
{
	char ipath[512];
	int r;

	const char *parent = ob->mb->parent_rule;

	dn_fmt(ipath, sizeof ipath, "%s.%s", ob->inst_path, suffix);
	/* attribute errors in a sub-operator point at the composite's item */
	ob->mb->parent_rule = ob->op.rule->name;
	r = mb_run_rule(ob->mb, rule, attrs, ob->file_path, ipath, ob->guard, nin, in);
	ob->mb->parent_rule = parent;
	if (expr_graph_set_origin(&ob->m->g, ob->inst_path) != 0)
		return -1;
	return r;
}

int
ob_sub_take(struct op_build *ob, const char *rule, const char *suffix, json_t *attrs, int a, int b)
{
	int in[2] = { a, b };
	int r;

	if (attrs == NULL)
		return dn_error_set(ob->err, DN_ENOMEM, ob->file_path, "out of memory");
	r = ob_sub(ob, rule, suffix, attrs, b >= 0 ? 2 : 1, in);
	json_decref(attrs);
	return r;
}

int
ob_sub_rule_if(struct op_build *ob, expr_id cond, const struct op_rule *rule,
    const char *suffix, json_t *attrs, int a)
{
	struct expr_graph *g = &ob->m->g;
	expr_id present = expr_and(g, ob->guard, cond), conds[2];
	char ipath[512];
	int alts[2];

	if (attrs == NULL)
		return dn_error_set(ob->err, DN_ENOMEM, ob->file_path, "out of memory");
	if (expr_is_int_const(g, present, 0)) {
		json_decref(attrs);
		return a;               /* never runs: the input itself */
	}
	dn_fmt(ipath, sizeof ipath, "%s.%s", ob->inst_path, suffix);
	alts[0] = mb_run_rule(ob->mb, rule, attrs, ob->file_path, ipath, present, 1, &a);
	json_decref(attrs);
	if (expr_graph_set_origin(g, ob->inst_path) != 0 || alts[0] < 0)
		return -1;
	if (expr_is_true(g, cond))
		return alts[0];
	alts[1] = a;
	conds[0] = cond;
	conds[1] = expr_not(g, cond);
	return mb_make_select(ob->mb, ipath, 2, alts, conds);
}

int
ob_with_binds(struct op_build *ob, int n, const char *const *names, const expr_id *vals,
    int (*body)(struct op_build *ob, void *arg), void *arg)
{
	struct model_builder *mb = ob->mb;
	struct scope sc, *saved = mb->scope;
	int rc;

	memset(&sc, 0, sizeof sc);
	sc.parent = saved;
	sc.binds = malloc(sizeof *sc.binds * (size_t)n);
	if (sc.binds == NULL)
		return dn_error_set(ob->err, DN_ENOMEM, ob->file_path, "out of memory");
	for (int i = 0; i < n; i++) {
		sc.binds[i].name = names[i];
		sc.binds[i].value = vals[i];
	}
	sc.nbinds = sc.capbinds = n;
	mb->scope = &sc;
	rc = body(ob, arg);
	mb->scope = saved;
	free(sc.binds);
	return rc;
}
