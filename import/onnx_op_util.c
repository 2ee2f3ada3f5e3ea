/*
 * onnx_op_util.c - the helpers of the operator translations (onnx_op.h):
 * a node's inputs, outputs and attributes; small int64 constants as SYM
 * entries; numpy broadcasting of shapes; appending a layer (with a name the
 * model format accepts); reshape targets with ONNX's 0 and -1 resolved;
 * one-axis slices; parameter tensors used as operands turned into
 * embeddings. Invariant: a value made DATA here has its `ref` and shape set.
 */
#include "onnx_op.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

struct onnx_val *
onnx_op_in(struct onnx_imp *im, int k)
{
	const struct onnx_node *n = NODE(im);
	if (k >= n->ninputs || n->inputs[k][0] == '\0')
		return NULL;
	return onnx_imp_find(im, n->inputs[k]);
}

struct onnx_val *
onnx_op_out(struct onnx_imp *im, int k)
{
	return onnx_imp_find(im, NODE(im)->outputs[k]);
}

int64_t
onnx_op_attr_i(struct onnx_imp *im, const char *name, int64_t def)
{
	const struct onnx_attr *a = onnx_node_attr(NODE(im), name);
	return a != NULL ? a->i : def;
}

int
onnx_op_attr_ints(struct onnx_imp *im, const char *name, int64_t *v, int max)
{
	const struct onnx_attr *a = onnx_node_attr(NODE(im), name);
	if (a == NULL)
		return -1;
	if (a->nints > max)
		return -2;
	for (int i = 0; i < a->nints; i++)
		v[i] = a->ints[i];
	return a->nints;
}

/* A CONST int tensor of at most ONNX_SYM_MAX entries as SYM (in place). */
int
onnx_op_as_sym(struct onnx_imp *im, struct onnx_val *v)
{
	int64_t n;

	if (v->kind == ONNX_V_SYM)
		return v->rank <= 1 ? 0 : -1;  /* rank 2 (onnx_op_sym2.c) is not a list */
	if (v->kind != ONNX_V_CONST || v->rank > 1 ||
	    (v->t->dtype != ONNX_INT64 && v->t->dtype != ONNX_INT32 && v->t->dtype != ONNX_BOOL))
		return -1;
	n = onnx_tensor_numel(v->t);
	if (n > ONNX_SYM_MAX)
		return -1;
	{
		struct onnx_dim *e = onnx_arena_alloc(im->ar, (size_t)n + 1, sizeof *e);
		if (e == NULL)
			return -1;
		for (int64_t i = 0; i < n; i++) {
			int64_t iv;
			double fv;
			if (onnx_tensor_get(v->t, i, &iv, &fv) < 0)
				return -1;
			e[i] = onnx_dim_int(iv);
		}
		v->e = e;
		v->n = (int)n;
	}
	v->kind = ONNX_V_SYM;
	return 0;
}

int
onnx_op_sym_of(struct onnx_imp *im, struct onnx_val *v)
{
	return v != NULL && onnx_op_as_sym(im, v) == 0;
}

/* A float scalar constant (or a one-element tensor): 1 with *x, else 0. */
int
onnx_op_scalar(const struct onnx_val *v, double *x)
{
	int64_t iv;

	if (v == NULL)
		return 0;
	if (v->kind == ONNX_V_SYM && v->n == 1 && v->e[0].expr == NULL) {
		*x = (double)v->e[0].v;
		return 1;
	}
	return v->kind == ONNX_V_CONST && onnx_tensor_numel(v->t) == 1 && onnx_tensor_get(v->t, 0, &iv, x) == 0;
}

static int
values_of(struct onnx_imp *im, const struct onnx_val *v, double *out, int max, int depth)
{
	const struct onnx_node *n;
	const char *op;

	if (v == NULL || depth > 16)
		return -1;
	if (v->kind == ONNX_V_CONST) {
		int64_t cnt = onnx_tensor_numel(v->t), iv;
		if (cnt < 0 || cnt > max)
			return -1;
		for (int64_t i = 0; i < cnt; i++)
			if (onnx_tensor_get(v->t, i, &iv, &out[i]) < 0)
				return -1;
		return (int)cnt;
	}
	if (v->kind == ONNX_V_SYM) {
		if (v->rank > 1 || v->n > max)
			return -1;
		for (int i = 0; i < v->n; i++) {
			if (v->e[i].expr != NULL)
				return -1;
			out[i] = (double)v->e[i].v;
		}
		return v->n;
	}
	if (v->producer < 0)
		return -1;
	n = &im->m->graph.nodes[v->producer];
	op = n->op_type;
	if (strcmp(op, "Constant") == 0) {
		const struct onnx_attr *a = onnx_node_attr(n, "value");
		if (a != NULL && a->t != NULL) {
			struct onnx_val c = { .kind = ONNX_V_CONST, .t = a->t };
			return values_of(im, &c, out, max, depth + 1);
		}
		if ((a = onnx_node_attr(n, "value_ints")) != NULL) {
			if (a->nints > max)
				return -1;
			for (int i = 0; i < a->nints; i++)
				out[i] = (double)a->ints[i];
			return a->nints;
		}
		if ((a = onnx_node_attr(n, "value_int")) != NULL && max >= 1) {
			out[0] = (double)a->i;
			return 1;
		}
		a = onnx_node_attr(n, "value_floats");
		if (a != NULL) {
			if (a->nfloats > max)
				return -1;
			for (int i = 0; i < a->nfloats; i++)
				out[i] = a->floats[i];
			return a->nfloats;
		}
		if ((a = onnx_node_attr(n, "value_float")) != NULL && max >= 1) {
			out[0] = a->f;
			return 1;
		}
		return -1;
	}
	if (strcmp(op, "Concat") == 0) {
		int total = 0;
		for (int k = 0; k < n->ninputs; k++) {
			int c = values_of(im, onnx_imp_find(im, n->inputs[k]), out + total, max - total, depth + 1);
			if (c < 0)
				return -1;
			total += c;
		}
		return total;
	}
	if (strcmp(op, "Cast") == 0 || strcmp(op, "Identity") == 0 || strcmp(op, "Unsqueeze") == 0 ||
	    strcmp(op, "Squeeze") == 0 || strcmp(op, "Reshape") == 0)
		return n->ninputs > 0 ? values_of(im, onnx_imp_find(im, n->inputs[0]), out, max, depth + 1) : -1;
	return -1;
}

int
onnx_op_values(struct onnx_imp *im, const struct onnx_val *v, double *out, int max)
{
	return values_of(im, v, out, max, 0);
}

int
onnx_op_new_sym(struct onnx_imp *im, struct onnx_val *o, int n, int rank)
{
	o->kind = ONNX_V_SYM;
	o->n = n;
	o->rank = rank;
	o->scale = 0;
	o->e = onnx_arena_alloc(im->ar, (size_t)n + 1, sizeof *o->e);
	if (o->e == NULL)
		return dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
	if (rank == 1)
		o->shape[0] = onnx_dim_int(n);
	return 0;
}

void
onnx_op_copy_shape(struct onnx_val *o, const struct onnx_val *a)
{
	o->rank = a->rank;
	memcpy(o->shape, a->shape, sizeof o->shape);
}

/* Numpy broadcasting of a and b into o's shape; -1 when they disagree. */
int
onnx_op_broadcast(struct onnx_val *o, const struct onnx_val *a, const struct onnx_val *b)
{
	int r = a->rank > b->rank ? a->rank : b->rank;
	struct onnx_dim s[ONNX_MAX_RANK];

	for (int i = 0; i < r; i++) {
		int ia = i - (r - a->rank), ib = i - (r - b->rank);
		struct onnx_dim da = ia >= 0 ? a->shape[ia] : onnx_dim_int(1);
		struct onnx_dim db = ib >= 0 ? b->shape[ib] : onnx_dim_int(1);
		if (da.expr == NULL && da.v == 1)
			s[i] = db;
		else if (db.expr == NULL && db.v == 1)
			s[i] = da;
		else if (onnx_dim_same(da, db))
			s[i] = da;
		else if (da.expr != NULL)
			s[i] = da; /* symbolic vs symbolic or integer: trust the exporter */
		else if (db.expr != NULL)
			s[i] = db;
		else
			return -1;
	}
	o->rank = r;
	memcpy(o->shape, s, sizeof s);
	return 0;
}

const char *
onnx_op_txt(struct onnx_imp *im, struct onnx_dim d)
{
	return onnx_dim_text(im->ar, d);
}

json_t *
onnx_op_dimj(struct onnx_imp *im, struct onnx_dim d)
{
	return d.expr == NULL ? json_integer(d.v) : json_string(onnx_op_txt(im, d));
}

/* Appends {"op": op, "input(s)": ..., "name": o} and makes o DATA. */
json_t *
onnx_op_emit(struct onnx_imp *im, const char *op, struct onnx_val *o, const struct onnx_val *a, const struct onnx_val *b)
{
	json_t *l = json_object();

	json_object_set_new(l, "op", json_string(op));
	if (b == NULL)
		json_object_set_new(l, "input", json_string(a->ref));
	else
		json_object_set_new(l, "inputs", json_pack("[ss]", a->ref, b->ref));
	o->ref = onnx_imp_ref(im, o->name);
	if (o->ref == NULL)
		dn_error_set(im->err, DN_ENOMEM, "", "out of memory (or over the import's memory limit)");
	json_object_set_new(l, "name", json_string(o->ref ? o->ref : "?"));
	json_array_append_new(im->layers, l);
	o->kind = ONNX_V_DATA;
	return l;
}

/* A parameter tensor used as an operand (ViT's class token and position
 * embedding, a free-standing bias): the model format has parameters only in
 * operators, so it becomes an embedding of numel/E rows of width E (its last
 * dimension) read by an int64 input of the operand's leading shape (`shape`,
 * which may be broadcast, e.g. the class token expanded over the batch);
 * the parameters count once, the lookup costs what the copy does.
 * Returns the new DATA value, or NULL with im->err. */
struct onnx_val *
onnx_op_param_as_data(struct onnx_imp *im, const struct onnx_val *c, const struct onnx_val *shape)
{
	int64_t numel = onnx_tensor_numel(c->t), width;
	struct onnx_val *ids, *v;
	json_t *l;

	if (c->rank < 1 || c->t->dims[c->rank - 1] < 1 || shape->rank < 1 || shape->rank > ONNX_MAX_RANK) {
		onnx_imp_fail(im, DN_EINVAL, "initializer '%s' used as an operand has no width", c->name);
		return NULL;
	}
	width = c->t->dims[c->rank - 1];
	ids = onnx_imp_val(im, onnx_arena_printf(im->ar, "%s.ids", c->name));
	v = ids == NULL ? NULL : onnx_imp_val(im, onnx_arena_printf(im->ar, "%s.value", c->name));
	if (v == NULL || ids->name == NULL || v->name == NULL) {
		dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
		return NULL;
	}
	if (ids->kind == ONNX_V_NONE) {
		ids->kind = ONNX_V_DERIVED;
		ids->rank = shape->rank > 1 ? shape->rank - 1 : 1;
		for (int i = 0; i < ids->rank; i++)
			ids->shape[i] = shape->rank > 1 ? shape->shape[i] : onnx_dim_int(1);
		ids->iota = 1;
		ids->id_range = onnx_dim_int(numel / width);
		if (onnx_imp_add_index_input(im, ids) < 0)
			return NULL;
	}
	if (v->kind == ONNX_V_DATA)
		return v;
	l = onnx_op_emit(im, "embedding", v, ids, NULL);
	json_object_set_new(l, "num_embeddings", json_integer(numel / width));
	json_object_set_new(l, "embedding_dim", json_integer(width));
	onnx_op_copy_shape(v, ids);
	v->shape[v->rank++] = onnx_dim_int(width);
	onnx_imp_warn(im, "initializer '%s' (%lld values) is an operand of node %d '%s' (%s): imported as an embedding "
	    "table of %lld x %lld read by the int64 input '%s'", c->name, (long long)numel, im->node, NODE(im)->name,
	    NODE(im)->op_type, (long long)(numel / width), (long long)width, ids->ref);
	return v;
}

int
onnx_op_axis_norm(struct onnx_imp *im, int64_t axis, int rank, int *out_axis)
{
	if (axis < 0)
		axis += rank;
	if (axis < 0 || axis >= rank)
		return onnx_imp_fail(im, DN_EINVAL, "axis %lld out of range for rank %d", (long long)axis, rank);
	*out_axis = (int)axis;
	return 0;
}

/* ---- shape arithmetic ---- */

void
onnx_op_alias(struct onnx_val *o, const struct onnx_val *x)
{
	const char *name = o->name;
	int nc = o->nconsumers, prod = o->producer;
	int cons[4];

	memcpy(cons, o->consumers, sizeof cons);
	*o = *x;
	o->name = name;
	o->nconsumers = nc;
	o->producer = prod;
	memcpy(o->consumers, cons, sizeof cons);
}

/* A shape (from a SYM) into a reshape layer, resolving ONNX's 0 (copy) and
 * -1 (the rest) so that the output shape is known. */
int
onnx_op_reshape_shape(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o, const struct onnx_dim *s, int n,
    int allowzero, int layer)
{
	json_t *l, *shape;
	struct onnx_dim num = onnx_dim_int(1), den = onnx_dim_int(1), rest;
	int minus = -1;
	const char *syms_in[ONNX_MAX_RANK];
	int nin = 0;
	int64_t iin = 1, iden = 1;

	if (n > ONNX_MAX_RANK)
		return onnx_imp_fail(im, DN_EINVAL, "reshape to more than %d dimensions", ONNX_MAX_RANK);
	o->rank = n;
	for (int i = 0; i < x->rank; i++) {
		if (x->shape[i].expr != NULL)
			syms_in[nin++] = x->shape[i].expr;
		else if (__builtin_mul_overflow(iin, x->shape[i].v, &iin))
			return onnx_imp_fail(im, DN_EINVAL, "element count overflows");
	}
	for (int i = 0; i < n; i++) {
		struct onnx_dim d = s[i];
		if (d.expr == NULL && d.v == 0 && !allowzero) {
			if (i >= x->rank)
				return onnx_imp_fail(im, DN_EINVAL, "0 (copy) at axis %d beyond the input's rank", i);
			d = x->shape[i];
		}
		if (d.expr == NULL && d.v == -1) {
			if (minus >= 0)
				return onnx_imp_fail(im, DN_EINVAL, "two -1 entries in the target shape");
			minus = i;
			continue;
		}
		if (d.expr == NULL && d.v < 0)
			return onnx_imp_fail(im, DN_EINVAL, "negative entry %lld in the target shape", (long long)d.v);
		o->shape[i] = d;
		if (d.expr == NULL) {
			if (__builtin_mul_overflow(iden, d.v ? d.v : 1, &iden))
				return onnx_imp_fail(im, DN_EINVAL, "element count overflows");
		} else {
			int found = 0;
			for (int k = 0; k < nin && !found; k++)
				if (syms_in[k] != NULL && strcmp(syms_in[k], d.expr) == 0)
					syms_in[k] = NULL, found = 1;
			if (!found && onnx_dim_arith(im->ar, ONNX_DIM_MUL, den, d, &den) < 0)
				return onnx_imp_fail(im, DN_EINVAL, "element count overflows");
		}
	}
	if (minus >= 0) {
		/* rest = (input symbols left) * iin / iden / den */
		if (iden == 0 || iin % iden != 0)
			return onnx_imp_fail(im, DN_EINVAL, "the target shape does not divide the element count");
		num = onnx_dim_int(iin / iden);
		for (int k = 0; k < nin; k++)
			if (syms_in[k] != NULL && onnx_dim_arith(im->ar, ONNX_DIM_MUL, num, onnx_dim_sym(syms_in[k]), &num) < 0)
				return -1;
		if (onnx_dim_arith(im->ar, ONNX_DIM_DIV, num, den, &rest) < 0)
			return onnx_imp_fail(im, DN_EINVAL, "the target shape does not divide the element count");
		o->shape[minus] = rest;
	}
	if (!layer)
		return 0;
	if (x->permuted) {
		/* a reshape of a permuted view copies it, as PyTorch's .contiguous() or
		 * reshape does (torch exports drop the .contiguous()) */
		struct onnx_val *c = onnx_imp_val(im, onnx_arena_printf(im->ar, "%s.contiguous", o->name));
		if (c == NULL || c->name == NULL)
			return dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
		onnx_op_emit(im, "contiguous", c, x, NULL);
		onnx_op_copy_shape(c, x);
		x = c;
	}
	shape = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(shape, onnx_op_dimj(im, o->shape[i]));
	l = onnx_op_emit(im, "reshape", o, x, NULL);
	json_object_set_new(l, "shape", shape);
	return 0;
}

int
onnx_op_reshape_to(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o, const struct onnx_dim *s, int n, int allowzero)
{
	return onnx_op_reshape_shape(im, x, o, s, n, allowzero, 1);
}

/* One slice along one axis of an activation: a `slice` layer. */
int
onnx_op_slice_axis(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o, int axis, struct onnx_dim start,
    struct onnx_dim end, const char *name)
{
	struct onnx_dim size = x->shape[axis], len;
	json_t *l;

	if (start.expr == NULL && start.v < 0 && onnx_dim_arith(im->ar, ONNX_DIM_ADD, size, start, &start) < 0)
		return -1;
	if (end.expr == NULL && end.v < 0 && onnx_dim_arith(im->ar, ONNX_DIM_ADD, size, end, &end) < 0)
		return -1;
	if (end.expr == NULL && end.v >= BIG / 4)
		end = size;
	if (size.expr == NULL && end.expr == NULL && end.v > size.v)
		end = size;
	if (onnx_dim_arith(im->ar, ONNX_DIM_SUB, end, start, &len) < 0)
		return -1;
	if (len.expr == NULL && len.v <= 0)
		return onnx_imp_fail(im, DN_EINVAL, "an empty slice");
	l = json_object();
	json_object_set_new(l, "op", json_string("slice"));
	json_object_set_new(l, "input", json_string(x->ref));
	name = name != NULL ? onnx_imp_ref(im, name) : NULL;
	if (name == NULL)
		return dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
	json_object_set_new(l, "name", json_string(name));
	json_object_set_new(l, "dim", json_integer(axis));
	json_object_set_new(l, "start", onnx_op_dimj(im, start));
	json_object_set_new(l, "length", onnx_op_dimj(im, len));
	json_array_append_new(im->layers, l);
	onnx_op_copy_shape(o, x);
	o->shape[axis] = len;
	o->kind = ONNX_V_DATA;
	o->ref = name;
	return 0;
}

/* Dropout node i's ratio: the attribute (before opset 12), the constant
 * input 1, or ONNX's default 0.5; 0.5 when out of [0, 1). */
double
onnx_op_dropout_p(struct onnx_imp *im, int i)
{
	const struct onnx_node *n = &im->m->graph.nodes[i];
	const struct onnx_attr *ratio = onnx_node_attr(n, "ratio");
	struct onnx_val *r = n->ninputs > 1 && n->inputs[1][0] != '\0' ? onnx_imp_find(im, n->inputs[1]) : NULL;
	double p = 0.5;

	if (ratio != NULL)
		p = ratio->f;
	else if (r == NULL || !onnx_op_scalar(r, &p))
		p = 0.5;
	return p >= 0 && p < 1 ? p : 0.5;
}
