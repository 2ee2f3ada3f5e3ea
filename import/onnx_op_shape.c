/*
 * onnx_op_shape.c - the shape and tensor plumbing of ONNX graphs: Shape,
 * Gather, Concat, Slice, Split, Reshape, (Un)Squeeze, Transpose, Constant,
 * ConstantOfShape, Expand, Range, Where, and DepthToSpace (nn.PixelShuffle:
 * reshape, permute, copy, reshape). On SYM values they compute
 * dimensions (so that a Reshape's target is an expression over the
 * hyperparameters); on activations they append the model format's views
 * (reshape, permute, slice, concat); on tensors that do not depend on the
 * inputs they only track the shape (and whether the values count 0, 1, ...).
 * Rank-2 shape tensors (torch's F.pad export) go to onnx_op_sym2.c. A size
 * times a float constant (torch's F.interpolate(scale_factor=s,
 * recompute_scale_factor=True): Cast to float, Mul, Floor, Cast back) is
 * held as the sizes with their scale (unknown values to every other
 * reader) until floored: floor(size * s), exact integer arithmetic where s
 * is dyadic.
 */
#include "onnx_op.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int
onnx_op_shape(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o)
{
	int64_t start = onnx_op_attr_i(im, "start", 0), end = onnx_op_attr_i(im, "end", x->rank);
	if (start < 0)
		start += x->rank;
	if (end < 0)
		end += x->rank;
	if (end > x->rank)
		end = x->rank;
	if (start < 0)
		start = 0;
	if (end < start)
		end = start;
	if (onnx_op_new_sym(im, o, (int)(end - start), 1) < 0)
		return -1;
	for (int64_t i = start; i < end; i++)
		o->e[i - start] = x->shape[i];
	return 0;
}

int
onnx_op_sym_binary(struct onnx_imp *im, const char *op, struct onnx_val *a, struct onnx_val *b, struct onnx_val *o)
{
	int n = a->n > b->n ? a->n : b->n;
	enum onnx_dim_op dop;

	if (a->n != b->n && a->n != 1 && b->n != 1)
		return onnx_imp_fail(im, DN_EINVAL, "shape tensors of %d and %d entries do not broadcast", a->n, b->n);
	if (onnx_op_new_sym(im, o, n, a->rank > b->rank ? a->rank : b->rank) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		struct onnx_dim x = a->e[a->n == 1 ? 0 : i], y = b->e[b->n == 1 ? 0 : i];
		if (strcmp(op, "Equal") == 0) {
			if (onnx_dim_same(x, y))
				o->e[i] = onnx_dim_int(1);
			else if (x.expr == NULL && y.expr == NULL)
				o->e[i] = onnx_dim_int(0);
			else if ((x.expr == NULL && x.v <= 0) || (y.expr == NULL && y.v <= 0))
				o->e[i] = onnx_dim_int(0); /* a size is never <= 0 */
			else
				return onnx_imp_fail(im, DN_EINVAL, "cannot decide whether %s == %s", onnx_op_txt(im, x), onnx_op_txt(im, y));
			continue;
		}
		if (strcmp(op, "Max") == 0 || strcmp(op, "Min") == 0) {
			if (x.expr != NULL || y.expr != NULL) {
				const char *e = onnx_arena_printf(im->ar, "%s(%s, %s)", op[1] == 'a' ? "max" : "min",
				    onnx_op_txt(im, x), onnx_op_txt(im, y));
				o->e[i] = onnx_dim_sym(e);
			} else {
				o->e[i] = onnx_dim_int((op[1] == 'a') == (x.v > y.v) ? x.v : y.v);
			}
			continue;
		}
		dop = op[0] == 'A' ? ONNX_DIM_ADD : op[0] == 'S' ? ONNX_DIM_SUB : op[0] == 'M' && op[1] == 'u' ? ONNX_DIM_MUL :
		    op[0] == 'D' ? ONNX_DIM_DIV : ONNX_DIM_MOD;
		if (onnx_dim_arith(im->ar, dop, x, y, &o->e[i]) < 0)
			return onnx_imp_fail(im, DN_EINVAL, "shape arithmetic %s %s %s fails (overflow or division by zero)",
			    onnx_op_txt(im, x), op, onnx_op_txt(im, y));
	}
	return 0;
}

int
onnx_op_sym_scale(const char *op, struct onnx_val *a, struct onnx_val *b, struct onnx_val *o)
{
	int mul = strcmp(op, "Mul") == 0;
	struct onnx_val *x, *c;
	double f;

	if (!mul && strcmp(op, "Div") != 0)
		return 0;
	c = b->kind == ONNX_V_CONST ? b : a;
	x = c == b ? a : b;
	if (c->kind != ONNX_V_CONST || (c->t->dtype != ONNX_FLOAT && c->t->dtype != ONNX_DOUBLE &&
	    c->t->dtype != ONNX_FLOAT16) || !onnx_op_scalar(c, &f) ||
	    !((x->kind == ONNX_V_SYM && x->rank <= 1) || (x->kind == ONNX_V_DERIVED && x->scale > 0)))
		return 0;
	/* a float over sizes, or a scale that is not above 0: not a size (the
	 * values stay unknown, as any other float arithmetic on sizes) */
	if ((!mul && x != a) || !(f > 0) || !isfinite(f))
		return 0;
	if (c->t->dtype == ONNX_FLOAT)
		f = onnx_dim_float32_decimal(f);
	onnx_op_alias(o, x);
	o->kind = ONNX_V_DERIVED;
	o->scale = (x->scale > 0 ? x->scale : 1.0) * (mul ? f : 1.0 / f);
	if (o->rank == 1)
		o->shape[0] = onnx_dim_int(o->n);
	return 1;
}

int
onnx_op_sym_floor(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o)
{
	struct onnx_val v = *x;

	if (x->kind == ONNX_V_SYM) {
		onnx_op_alias(o, x);
		return 0;
	}
	if (onnx_op_new_sym(im, o, v.n, v.rank) < 0)
		return -1;
	for (int i = 0; i < v.n; i++)
		if (onnx_dim_scaled(im->ar, v.e[i], v.scale, &o->e[i]) < 0)
			return onnx_imp_fail(im, DN_EINVAL, "floor(%s * %g) overflows", onnx_op_txt(im, v.e[i]), v.scale);
	return 0;
}

/* ---- activations ---- */

int
onnx_op_reshape(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o)
{
	struct onnx_val *s = onnx_op_in(im, 1);
	int64_t v[ONNX_MAX_RANK];
	int n;

	if (x->kind == ONNX_V_CONST && x->rank <= 1)
		(void)onnx_op_as_sym(im, x);
	if (x->kind == ONNX_V_SYM) {
		if (s != NULL && onnx_op_sym_of(im, s) && s->n == 2)
			return onnx_op_sym2_reshape(im, x, s, o);
		if (onnx_op_new_sym(im, o, x->n, 1) < 0)
			return -1;
		memcpy(o->e, x->e, sizeof *o->e * (size_t)x->n);
		return 0;
	}
	if (x->kind != ONNX_V_DATA) {
		if (s == NULL || !onnx_op_sym_of(im, s) || s->n > ONNX_MAX_RANK)
			return onnx_imp_fail(im, DN_EINVAL, "the target shape is not computable from the inputs' shapes");
		if (onnx_op_reshape_shape(im, x, o, s->e, s->n, 0, 0) < 0)
			return -1;
		o->kind = ONNX_V_DERIVED;
		o->iota = x->iota;
		o->id_range = x->id_range;
		return 0;
	}
	if (s != NULL) {
		if (!onnx_op_sym_of(im, s))
			return onnx_imp_fail(im, DN_EINVAL, "the target shape is not computable from the inputs' shapes");
		return onnx_op_reshape_to(im, x, o, s->e, s->n, (int)onnx_op_attr_i(im, "allowzero", 0));
	}
	n = onnx_op_attr_ints(im, "shape", v, ONNX_MAX_RANK);
	if (n < 0)
		return onnx_imp_fail(im, DN_EINVAL, "no target shape");
	{
		struct onnx_dim d[ONNX_MAX_RANK];
		for (int i = 0; i < n; i++)
			d[i] = onnx_dim_int(v[i]);
		return onnx_op_reshape_to(im, x, o, d, n, 0);
	}
}

/* Squeeze/Unsqueeze axes: from the attribute (opset < 13) or input 1. */
int
onnx_op_axes_of(struct onnx_imp *im, int64_t *axes, int max)
{
	struct onnx_val *a = onnx_op_in(im, 1);
	int n = onnx_op_attr_ints(im, "axes", axes, max);

	if (n >= 0)
		return n;
	if (a == NULL)
		return -1;
	if (!onnx_op_sym_of(im, a) || a->n > max)
		return onnx_imp_fail(im, DN_EINVAL, "axes must be constant"), -2;
	for (int i = 0; i < a->n; i++) {
		if (a->e[i].expr != NULL)
			return onnx_imp_fail(im, DN_EINVAL, "axes must be constant"), -2;
		axes[i] = a->e[i].v;
	}
	return a->n;
}

int
onnx_op_unsqueeze(struct onnx_imp *im, int squeeze, struct onnx_val *x, struct onnx_val *o)
{
	int64_t axes[ONNX_MAX_RANK];
	int n = onnx_op_axes_of(im, axes, ONNX_MAX_RANK), r;
	int mark[ONNX_MAX_RANK] = { 0 };
	struct onnx_dim s[ONNX_MAX_RANK];

	if (n == -2)
		return -1;
	if (x->kind == ONNX_V_CONST && x->rank <= 1)
		(void)onnx_op_as_sym(im, x);
	if (x->kind == ONNX_V_SYM) {
		if (onnx_op_new_sym(im, o, x->n, squeeze ? 0 : 1) < 0)
			return -1;
		memcpy(o->e, x->e, sizeof *o->e * (size_t)x->n);
		if (x->rank > 1 || (!squeeze && x->rank != 0))
			return onnx_imp_fail(im, DN_EINVAL, "shape tensors of rank above 1 are not supported");
		return 0;
	}
	r = squeeze ? x->rank - (n < 0 ? 0 : n) : x->rank + n;
	if (n < 0) { /* squeeze every 1 */
		r = 0;
		for (int i = 0; i < x->rank; i++)
			if (!(x->shape[i].expr == NULL && x->shape[i].v == 1))
				s[r++] = x->shape[i];
	} else {
		if (r < 0 || r > ONNX_MAX_RANK)
			return onnx_imp_fail(im, DN_EINVAL, "rank out of range");
		for (int i = 0; i < n; i++) {
			int ax = 0;
			if (onnx_op_axis_norm(im, axes[i], squeeze ? x->rank : r, &ax) < 0)
				return -1;
			mark[ax] = 1;
		}
		for (int i = 0, k = 0, j = 0; i < (squeeze ? x->rank : r); i++) {
			if (squeeze) {
				if (!mark[i])
					s[j++] = x->shape[i];
			} else {
				s[i] = mark[i] ? onnx_dim_int(1) : x->shape[k++];
			}
		}
	}
	if (x->kind == ONNX_V_DATA)
		return onnx_op_reshape_to(im, x, o, s, r, 1);
	o->iota = x->iota;
	o->id_range = x->id_range;
	o->kind = ONNX_V_DERIVED;
	o->rank = r;
	memcpy(o->shape, s, sizeof s);
	return 0;
}

int
onnx_op_transpose(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o)
{
	int64_t perm[ONNX_MAX_RANK];
	int n = onnx_op_attr_ints(im, "perm", perm, ONNX_MAX_RANK);
	json_t *l, *dims;
	int seen[ONNX_MAX_RANK] = { 0 };

	if (n < 0) {
		n = x->rank;
		for (int i = 0; i < n; i++)
			perm[i] = n - 1 - i;
	}
	if (n != x->rank)
		return onnx_imp_fail(im, DN_EINVAL, "perm has %d entries for rank %d", n, x->rank);
	o->rank = n;
	for (int i = 0; i < n; i++) {
		if (perm[i] < 0 || perm[i] >= n || seen[perm[i]]++)
			return onnx_imp_fail(im, DN_EINVAL, "perm is not a permutation");
		o->shape[i] = x->shape[perm[i]];
	}
	if (x->kind == ONNX_V_SYM && x->rank == 2)
		return perm[0] == 0 ? (onnx_op_alias(o, x), 0) : onnx_op_sym2_transpose(im, x, o);
	dims = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(dims, json_integer(perm[i]));
	if (x->kind != ONNX_V_DATA) {
		json_decref(dims);
		if (x->kind == ONNX_V_CONST && x->rank == 2 && perm[0] == 1) {
			o->kind = ONNX_V_CONST;
			o->t = x->t;
			o->param = x->param;
			o->transposed = !x->transposed;
			return 0;
		}
		o->kind = ONNX_V_DERIVED;
		return 0;
	}
	l = onnx_op_emit(im, "permute", o, x, NULL);
	json_object_set_new(l, "dims", dims);
	for (int i = 0; i < n; i++)
		if (perm[i] != i)
			o->permuted = 1;
	return 0;
}

int
onnx_op_slice(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o)
{
	struct onnx_val *st = onnx_op_in(im, 1), *en = onnx_op_in(im, 2), *ax = onnx_op_in(im, 3), *sp = onnx_op_in(im, 4);
	struct onnx_val cur = *x;
	int n;

	if (st == NULL || en == NULL || !onnx_op_sym_of(im, st) || !onnx_op_sym_of(im, en) || st->n != en->n ||
	    (ax != NULL && (!onnx_op_sym_of(im, ax) || ax->n != st->n)) || (sp != NULL && (!onnx_op_sym_of(im, sp) || sp->n != st->n)))
		return onnx_imp_fail(im, DN_EINVAL, "starts, ends, axes and steps must be computable from the inputs' shapes");
	n = st->n;
	if (x->kind == ONNX_V_SYM && x->rank == 2)
		return onnx_op_sym2_slice(im, x, st, en, ax, sp, o);
	for (int i = 0; i < n; i++)
		if (sp != NULL && !(sp->e[i].expr == NULL && sp->e[i].v == 1))
			return onnx_imp_fail(im, DN_EINVAL, "only steps of 1 are supported");
	if (x->kind == ONNX_V_SYM) {
		int64_t s, e;
		if (n != 1 || st->e[0].expr != NULL || en->e[0].expr != NULL)
			return onnx_imp_fail(im, DN_EINVAL, "a symbolic slice of a shape tensor");
		s = st->e[0].v < 0 ? st->e[0].v + x->n : st->e[0].v;
		e = en->e[0].v < 0 ? en->e[0].v + x->n : en->e[0].v;
		s = s < 0 ? 0 : s > x->n ? x->n : s;
		e = e < s ? s : e > x->n ? x->n : e;
		if (onnx_op_new_sym(im, o, (int)(e - s), 1) < 0)
			return -1;
		memcpy(o->e, x->e + s, sizeof *o->e * (size_t)(e - s));
		return 0;
	}
	for (int i = 0; i < n; i++) {
		int axis = 0;
		if (ax != NULL && ax->e[i].expr != NULL)
			return onnx_imp_fail(im, DN_EINVAL, "axes must be constant");
		if (onnx_op_axis_norm(im, ax != NULL ? ax->e[i].v : i, x->rank, &axis) < 0)
			return -1;
		if (x->kind != ONNX_V_DATA) {
			/* a constant or derived tensor: positions when it counts 0, 1, ... */
			struct onnx_dim s = st->e[i], e = en->e[i], size = cur.shape[axis];
			int was_iota = cur.iota;
			if (x->kind == ONNX_V_CONST && axis == x->rank - 1 && s.expr == NULL && s.v == 0) {
				int64_t len = x->rank > 0 ? x->t->dims[x->rank - 1] : 0, iv;
				double fv;
				was_iota = len > 0;
				for (int64_t k = 0; k < len && k < 1 << 20 && was_iota; k++)
					if (onnx_tensor_get(x->t, k, &iv, &fv) < 0 || iv != k)
						was_iota = 0;
			}
			if (e.expr == NULL && e.v >= BIG / 4)
				e = size;
			if (onnx_dim_arith(im->ar, ONNX_DIM_SUB, e, s, &cur.shape[axis]) < 0)
				return -1;
			cur.iota = was_iota && axis == x->rank - 1 && s.expr == NULL && s.v == 0;
			cur.id_range = cur.shape[axis];
			cur.kind = ONNX_V_DERIVED;
			continue;
		}
		if (onnx_op_slice_axis(im, &cur, &cur, axis, st->e[i], en->e[i],
		        i == n - 1 ? o->name : onnx_arena_printf(im->ar, "%s.%d", o->name, i)) < 0)
			return -1;
	}
	o->kind = cur.kind;
	o->ref = cur.ref;
	o->iota = cur.iota;
	o->id_range = cur.id_range;
	onnx_op_copy_shape(o, &cur);
	return 0;
}

int
onnx_op_gather(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o)
{
	struct onnx_val *idx = onnx_op_in(im, 1);
	int axis = 0;

	if (idx == NULL)
		return onnx_imp_fail(im, DN_EINVAL, "no indices");
	if (x->kind == ONNX_V_CONST && x->param && x->rank == 2 && idx->kind != ONNX_V_CONST && idx->kind != ONNX_V_SYM) {
		json_t *l;
		if (idx->kind == ONNX_V_DERIVED && onnx_imp_add_index_input(im, idx) < 0)
			return -1;
		im->embeddings[im->nembeddings++] = x->t;
		l = onnx_op_emit(im, "embedding", o, idx, NULL);
		json_object_set_new(l, "num_embeddings", json_integer(x->t->dims[0]));
		json_object_set_new(l, "embedding_dim", json_integer(x->t->dims[1]));
		onnx_op_copy_shape(o, idx);
		o->shape[o->rank++] = onnx_dim_int(x->t->dims[1]);
		return 0;
	}
	if (onnx_op_axis_norm(im, onnx_op_attr_i(im, "axis", 0), x->kind == ONNX_V_SYM ? 1 : x->rank, &axis) < 0)
		return -1;
	if (x->kind == ONNX_V_SYM || (x->kind == ONNX_V_CONST && onnx_op_sym_of(im, x))) {
		if (!onnx_op_sym_of(im, idx))
			return onnx_imp_fail(im, DN_EINVAL, "indices into a shape must be constant");
		if (onnx_op_new_sym(im, o, idx->n, idx->rank) < 0)
			return -1;
		for (int i = 0; i < idx->n; i++) {
			int64_t k = idx->e[i].v;
			if (idx->e[i].expr != NULL || k < -x->n || k >= x->n)
				return onnx_imp_fail(im, DN_EINVAL, "index out of range of a shape of %d entries", x->n);
			o->e[i] = x->e[k < 0 ? k + x->n : k];
		}
		return 0;
	}
	if (x->kind == ONNX_V_DATA && onnx_op_sym_of(im, idx) && idx->n == 1 && idx->e[0].expr == NULL) {
		struct onnx_val tmp;
		struct onnx_dim s[ONNX_MAX_RANK];
		int64_t k = idx->e[0].v;
		int r = 0;
		tmp.name = o->name;
		if (onnx_op_slice_axis(im, x, &tmp, axis, onnx_dim_int(k), onnx_dim_int(k < 0 ? (k == -1 ? BIG : k + 1) : k + 1),
		        onnx_arena_printf(im->ar, "%s.slice", o->name)) < 0)
			return -1;
		if (idx->rank == 1)
			return o->kind = ONNX_V_DATA, o->ref = tmp.ref, onnx_op_copy_shape(o, &tmp), 0;
		for (int i = 0; i < tmp.rank; i++)
			if (i != axis)
				s[r++] = tmp.shape[i];
		return onnx_op_reshape_to(im, &tmp, o, s, r, 1);
	}
	if (x->kind != ONNX_V_DATA) {
		o->kind = ONNX_V_DERIVED;
		onnx_op_copy_shape(o, idx);
		return 0;
	}
	return onnx_imp_fail(im, DN_EINVAL, "gathering an activation by computed indices is not supported");
}

int
onnx_op_concat(struct onnx_imp *im, struct onnx_val *o)
{
	const struct onnx_node *n = NODE(im);
	struct onnx_val *vals[ONNX_MAX_IO];
	int all_sym = 1, ndata = 0, axis = 0, total = 0;
	json_t *l, *ins;

	if (n->ninputs < 1)
		return onnx_imp_fail(im, DN_EINVAL, "no inputs");
	for (int k = 0; k < n->ninputs; k++) {
		struct onnx_val *v = vals[k] = onnx_op_in(im, k);
		if (v == NULL)
			return onnx_imp_fail(im, DN_EINVAL, "input %d is missing", k);
		if (!onnx_op_sym_of(im, v))
			all_sym = 0;
		if (v->kind == ONNX_V_DATA)
			ndata++;
	}
	if (all_sym) {
		for (int k = 0; k < n->ninputs; k++)
			total += vals[k]->n;
		if (total > ONNX_SYM_MAX)
			return onnx_imp_fail(im, DN_ETOOBIG, "a shape tensor over %d entries", ONNX_SYM_MAX);
		if (onnx_op_new_sym(im, o, total, 1) < 0)
			return -1;
		total = 0;
		for (int k = 0; k < n->ninputs; k++) {
			memcpy(o->e + total, vals[k]->e, sizeof *o->e * (size_t)vals[k]->n);
			total += vals[k]->n;
		}
		return 0;
	}
	if (ndata == 0) {
		o->kind = ONNX_V_DERIVED;
		onnx_op_copy_shape(o, vals[0]);
		return 0;
	}
	for (int k = 0; k < n->ninputs; k++) {
		if (vals[k]->kind == ONNX_V_CONST && vals[k]->param && !vals[k]->transposed) {
			if ((vals[k] = onnx_op_param_as_data(im, vals[k], vals[k])) == NULL)
				return -1;
		} else if (vals[k]->kind != ONNX_V_DATA) {
			return onnx_imp_fail(im, DN_EINVAL, "concatenating activations with computed constant tensors is not supported");
		}
	}
	if (onnx_op_axis_norm(im, onnx_op_attr_i(im, "axis", 0), vals[0]->rank, &axis) < 0)
		return -1;
	onnx_op_copy_shape(o, vals[0]);
	for (int k = 1; k < n->ninputs; k++)
		if (onnx_dim_arith(im->ar, ONNX_DIM_ADD, o->shape[axis], vals[k]->shape[axis], &o->shape[axis]) < 0)
			return onnx_imp_fail(im, DN_EINVAL, "the concatenated size overflows");
	ins = json_array();
	for (int k = 0; k < n->ninputs; k++)
		json_array_append_new(ins, json_string(vals[k]->ref));
	{
		struct onnx_dim keep = o->shape[axis];
		l = onnx_op_emit(im, "concat", o, vals[0], NULL);
		o->shape[axis] = keep;
	}
	json_object_del(l, "input");
	json_object_set_new(l, "inputs", ins);
	json_object_set_new(l, "dim", json_integer(axis));
	return 0;
}

int
onnx_op_split(struct onnx_imp *im, struct onnx_val *x)
{
	const struct onnx_node *n = NODE(im);
	struct onnx_val *sp = onnx_op_in(im, 1);
	int64_t sizes[ONNX_MAX_IO];
	struct onnx_dim start = onnx_dim_int(0), each;
	int axis = 0, ns = onnx_op_attr_ints(im, "split", sizes, ONNX_MAX_IO);

	if (onnx_op_axis_norm(im, onnx_op_attr_i(im, "axis", 0), x->rank, &axis) < 0)
		return -1;
	if (ns < 0 && sp != NULL) {
		if (!onnx_op_sym_of(im, sp) || sp->n != n->noutputs)
			return onnx_imp_fail(im, DN_EINVAL, "split sizes must be constant, one per output");
		ns = sp->n;
		for (int i = 0; i < ns; i++) {
			if (sp->e[i].expr != NULL)
				return onnx_imp_fail(im, DN_EINVAL, "split sizes must be constant");
			sizes[i] = sp->e[i].v;
		}
	}
	if (ns >= 0 && ns != n->noutputs)
		return onnx_imp_fail(im, DN_EINVAL, "%d split sizes for %d outputs", ns, n->noutputs);
	if (ns < 0 && onnx_dim_arith(im->ar, ONNX_DIM_DIV, x->shape[axis], onnx_dim_int(n->noutputs), &each) < 0)
		return -1;
	for (int k = 0; k < n->noutputs; k++) {
		struct onnx_val *o = onnx_op_out(im, k);
		struct onnx_dim len = ns >= 0 ? onnx_dim_int(sizes[k]) : each, end;
		if (onnx_dim_arith(im->ar, ONNX_DIM_ADD, start, len, &end) < 0 ||
		    onnx_op_slice_axis(im, x, o, axis, start, end, o->name) < 0)
			return -1;
		start = end;
	}
	return 0;
}

int
onnx_op_constant(struct onnx_imp *im, struct onnx_val *o)
{
	const struct onnx_node *n = NODE(im);

	for (int i = 0; i < n->nattrs; i++) {
		const struct onnx_attr *a = &n->attrs[i];
		if (strcmp(a->name, "value") == 0 && a->t != NULL) {
			o->kind = ONNX_V_CONST;
			o->t = a->t;
			o->rank = a->t->rank;
			for (int d = 0; d < o->rank; d++)
				o->shape[d] = onnx_dim_int(a->t->dims[d]);
			return 0;
		}
		if (strcmp(a->name, "value_int") == 0) {
			if (onnx_op_new_sym(im, o, 1, 0) < 0)
				return -1;
			o->e[0] = onnx_dim_int(a->i);
			return 0;
		}
		if (strcmp(a->name, "value_ints") == 0) {
			if (a->nints > ONNX_SYM_MAX)
				return onnx_imp_fail(im, DN_ETOOBIG, "value_ints over %d entries", ONNX_SYM_MAX);
			if (onnx_op_new_sym(im, o, a->nints, 1) < 0)
				return -1;
			for (int k = 0; k < a->nints; k++)
				o->e[k] = onnx_dim_int(a->ints[k]);
			return 0;
		}
		if (strncmp(a->name, "value_float", 11) == 0) {
			o->kind = ONNX_V_DERIVED;
			o->rank = strcmp(a->name, "value_floats") == 0;
			o->shape[0] = onnx_dim_int(a->nfloats);
			return 0;
		}
	}
	return onnx_imp_fail(im, DN_EINVAL, "no value attribute this importer reads");
}

int
onnx_op_constant_of_shape(struct onnx_imp *im, struct onnx_val *s, struct onnx_val *o)
{
	const struct onnx_attr *a = onnx_node_attr(NODE(im), "value");
	int64_t iv = 0;
	double fv = 0;
	int ints = a == NULL || a->t == NULL || a->t->dtype == ONNX_INT64 || a->t->dtype == ONNX_INT32;

	if (!onnx_op_sym_of(im, s) || s->n > ONNX_MAX_RANK)
		return onnx_imp_fail(im, DN_EINVAL, "the shape must be computable from the inputs' shapes");
	if (a != NULL && a->t != NULL && onnx_tensor_get(a->t, 0, &iv, &fv) < 0)
		ints = 0;
	if (ints && s->n == 1 && s->e[0].expr == NULL && s->e[0].v <= ONNX_SYM_MAX && s->e[0].v >= 0) {
		if (onnx_op_new_sym(im, o, (int)s->e[0].v, 1) < 0)
			return -1;
		for (int i = 0; i < o->n; i++)
			o->e[i] = onnx_dim_int(iv);
		return 0;
	}
	o->kind = ONNX_V_DERIVED;
	o->rank = s->n;
	memcpy(o->shape, s->e, sizeof *s->e * (size_t)s->n);
	return 0;
}

int
onnx_op_expand(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o)
{
	struct onnx_val *s = onnx_op_in(im, 1), t;

	if (s == NULL || !onnx_op_sym_of(im, s) || s->n > ONNX_MAX_RANK)
		return onnx_imp_fail(im, DN_EINVAL, "the shape must be computable from the inputs' shapes");
	memset(&t, 0, sizeof t);
	t.rank = s->n;
	memcpy(t.shape, s->e, sizeof *s->e * (size_t)s->n);
	if (x->kind == ONNX_V_DATA) {
		/* a view (torch's expand_as: F.normalize's denominator) that only
		 * broadcasting arithmetic reads, each time with an operand of the
		 * expanded shape already: that arithmetic broadcasts the
		 * activation itself, the same values and no memory */
		struct onnx_val b;
		if (onnx_op_broadcast(&b, x, &t) < 0)
			return onnx_imp_fail(im, DN_EINVAL, "shapes do not broadcast");
		for (int k = 0; k < o->nconsumers; k++) {
			const struct onnx_node *c = k < 4 ? &im->m->graph.nodes[o->consumers[k]] : NULL;
			const struct onnx_val *y = c != NULL && c->ninputs == 2 ?
			    onnx_imp_find(im, strcmp(c->inputs[0], o->name) == 0 ? c->inputs[1] : c->inputs[0]) : NULL;
			int full = y != NULL && y->kind == ONNX_V_DATA && y->rank == b.rank;
			for (int d = 0; full && d < b.rank; d++)
				full = onnx_dim_same(y->shape[d], b.shape[d]);
			if (c == NULL || (strcmp(c->op_type, "Add") != 0 && strcmp(c->op_type, "Sub") != 0 &&
			    strcmp(c->op_type, "Mul") != 0 && strcmp(c->op_type, "Div") != 0) || !full)
				return onnx_imp_fail(im, DN_EINVAL, "expanding an activation is supported only before "
				    "arithmetic (Add, Sub, Mul, Div) with an operand of the expanded shape");
		}
		onnx_op_alias(o, x);
		return 0;
	}
	if (x->kind == ONNX_V_CONST && x->param && !x->transposed && x->rank >= 1) {
		struct onnx_val b, *p;
		if (onnx_op_broadcast(&b, x, &t) < 0)
			return onnx_imp_fail(im, DN_EINVAL, "shapes do not broadcast");
		if ((p = onnx_op_param_as_data(im, x, &b)) == NULL)
			return -1;
		onnx_op_alias(o, p);
		return 0;
	}
	if (x->kind == ONNX_V_SYM) {
		struct onnx_val xs = *x;
		xs.rank = x->rank;
		xs.shape[0] = onnx_dim_int(x->n);
		if (onnx_op_broadcast(o, &xs, &t) < 0)
			return onnx_imp_fail(im, DN_EINVAL, "shapes do not broadcast");
	} else if (onnx_op_broadcast(o, x, &t) < 0) {
		return onnx_imp_fail(im, DN_EINVAL, "shapes do not broadcast");
	}
	o->kind = ONNX_V_DERIVED;
	o->iota = x->iota;
	o->id_range = x->id_range;
	return 0;
}

int
onnx_op_range(struct onnx_imp *im, struct onnx_val *o)
{
	struct onnx_val *s = onnx_op_in(im, 0), *l = onnx_op_in(im, 1), *d = onnx_op_in(im, 2);
	struct onnx_dim len;

	if (s == NULL || l == NULL || d == NULL || !onnx_op_sym_of(im, s) || !onnx_op_sym_of(im, l) || !onnx_op_sym_of(im, d) ||
	    d->e[0].expr != NULL || d->e[0].v == 0)
		return onnx_imp_fail(im, DN_EINVAL, "start, limit and delta must be computable from the inputs' shapes");
	if (onnx_dim_arith(im->ar, ONNX_DIM_SUB, l->e[0], s->e[0], &len) < 0 ||
	    onnx_dim_arith(im->ar, ONNX_DIM_DIV, len, d->e[0], &len) < 0)
		return -1;
	o->kind = ONNX_V_DERIVED;
	o->rank = 1;
	o->shape[0] = len;
	o->iota = s->e[0].expr == NULL && s->e[0].v == 0 && d->e[0].v == 1;
	o->id_range = len;
	return 0;
}

int
onnx_op_where(struct onnx_imp *im, struct onnx_val *o)
{
	struct onnx_val *c = onnx_op_in(im, 0), *a = onnx_op_in(im, 1), *b = onnx_op_in(im, 2);
	json_t *l;

	if (c == NULL || a == NULL || b == NULL)
		return onnx_imp_fail(im, DN_EINVAL, "three inputs expected");
	if (a->kind != ONNX_V_DATA && b->kind != ONNX_V_DATA) {
		if (onnx_op_sym_of(im, c) && onnx_op_sym_of(im, a) && onnx_op_sym_of(im, b) && c->n == a->n && a->n == b->n) {
			if (onnx_op_new_sym(im, o, a->n, a->rank) < 0)
				return -1;
			for (int i = 0; i < a->n; i++) {
				if (c->e[i].expr != NULL)
					return onnx_imp_fail(im, DN_EINVAL, "a symbolic condition");
				o->e[i] = c->e[i].v ? a->e[i] : b->e[i];
			}
			return 0;
		}
		o->kind = ONNX_V_DERIVED;
		onnx_op_copy_shape(o, a->kind == ONNX_V_SYM ? c : a);
		return 0;
	}
	if (a->kind == ONNX_V_DATA && b->kind == ONNX_V_DATA)
		return onnx_imp_fail(im, DN_EINVAL, "a selection between two activations is not supported");
	{
		struct onnx_val *x = a->kind == ONNX_V_DATA ? a : b;
		l = onnx_op_emit(im, "scale", o, x, NULL);
		json_object_set_new(l, "factor", json_real(1.0));
		onnx_op_copy_shape(o, x);
	}
	return 0;
}

/* DepthToSpace by r of x [N, C, H, W] (nn.PixelShuffle: mode CRD;
 * TensorFlow's depth_to_space and ONNX's default: DCR): the view
 * [N, C', r, r, H, W] (CRD) or [N, r, r, C', H, W] (DCR), permuted to
 * [N, C', H, r, W, r], copied and viewed as [N, C', H r, W r], as PyTorch's
 * pixel_shuffle computes it (its backward keeps nothing). */
int
onnx_op_depth_to_space(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o)
{
	int64_t r = onnx_op_attr_i(im, "blocksize", 0);
	const struct onnx_attr *m = onnx_node_attr(NODE(im), "mode");
	int dcr = m == NULL || m->s == NULL || strcmp(m->s, "CRD") != 0;
	struct onnx_dim rr, cr, s[6];
	struct onnx_val *v[3];
	static const char *const what[3] = { "blocks", "interleaved", "copy" };

	if (x->rank != 4 || r < 1 || r > 64)
		return onnx_imp_fail(im, DN_EINVAL, "DepthToSpace of a 4-d input by a blocksize of 1 to 64 expected");
	if (x->shape[1].expr != NULL || x->shape[1].v % (r * r) != 0)
		return onnx_imp_fail(im, DN_EINVAL, "the channels must be a known multiple of blocksize^2 (%lld)",
		    (long long)(r * r));
	for (int k = 0; k < 3; k++) {
		v[k] = onnx_imp_val(im, onnx_arena_printf(im->ar, "%s.%s", o->name, what[k]));
		if (v[k] == NULL || v[k]->name == NULL)
			return dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
	}
	rr = onnx_dim_int(r);
	cr = onnx_dim_int(x->shape[1].v / (r * r));
	s[0] = x->shape[0];
	s[1] = dcr ? rr : cr;
	s[2] = rr;
	s[3] = dcr ? cr : rr;
	s[4] = x->shape[2];
	s[5] = x->shape[3];
	if (onnx_op_reshape_to(im, x, v[0], s, 6, 0) < 0)
		return -1;
	json_object_set_new(onnx_op_emit(im, "permute", v[1], v[0], NULL), "dims",
	    dcr ? json_pack("[iiiiii]", 0, 3, 4, 1, 5, 2) : json_pack("[iiiiii]", 0, 1, 4, 2, 5, 3));
	onnx_op_copy_shape(v[1], v[0]);
	v[1]->shape[1] = cr;
	v[1]->shape[2] = x->shape[2];
	v[1]->shape[3] = rr;
	v[1]->shape[4] = x->shape[3];
	v[1]->shape[5] = rr;
	v[1]->permuted = 1;
	onnx_op_emit(im, "contiguous", v[2], v[1], NULL);
	onnx_op_copy_shape(v[2], v[1]);
	v[2]->permuted = 0;
	s[1] = cr;
	if (onnx_dim_arith(im->ar, ONNX_DIM_MUL, x->shape[2], rr, &s[2]) < 0 ||
	    onnx_dim_arith(im->ar, ONNX_DIM_MUL, x->shape[3], rr, &s[3]) < 0)
		return -1;
	return onnx_op_reshape_to(im, v[2], o, s, 4, 0);
}
