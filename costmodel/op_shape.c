/*
 * op_shape.c - flatten, reshape, permute, transpose, contiguous, identity and
 * zero. Views share their input's storage and cost nothing; reshaping a
 * non-contiguous view copies it, as PyTorch's reshape does. Reshape checks
 * that the element count is preserved (Refty).
 */
#include "model_build_priv.h"
#include "op_rules.h"

#include <string.h>

static int
copy_or_view(struct op_build *ob, int rank, const expr_id *dims)
{
	const struct cm_tensor *x = ob_in(ob, 0);

	if (x->contiguous) {
		ob->op.kernels_fwd = ob->op.kernels_bwd = 0;
		return ob_out_view(ob, 0, rank, dims, 1) < 0 ? -1 : 0;
	}
	if (ob_out_new(ob, rank, dims, (enum cm_dtype)x->dtype) < 0)
		return -1;
	op_elementwise_costs(ob, 0);
	return 0;
}

static int
const_attr(struct op_build *ob, const char *name, int64_t dflt, int64_t *out)
{
	expr_id e = ob_int(ob, name, dflt);

	if (e < 0)
		return -1;
	if (!expr_is_const(&ob->m->g, e))
		return ob_fail(ob, name, "must be a constant");
	*out = ob->m->g.nodes[e].k.i;
	return 0;
}

static int
flatten_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x = ob_in(ob, 0);
	int64_t s = 0, e = 0;
	int start = 0, end = 0, r = 0;
	expr_id dims[CM_MAX_RANK];

	if (const_attr(ob, "start_dim", 1, &s) || const_attr(ob, "end_dim", -1, &e) ||
	    op_norm_dim(ob, "start_dim", s, x->rank, &start) || op_norm_dim(ob, "end_dim", e, x->rank, &end))
		return -1;
	if (start > end)
		return ob_fail(ob, "start_dim", "start_dim comes after end_dim");
	for (int i = 0; i < start; i++)
		dims[r++] = x->dim[i];
	dims[r] = expr_int(g, 1);
	for (int i = start; i <= end; i++)
		dims[r] = expr_mul(g, dims[r], x->dim[i]);
	r++;
	for (int i = end + 1; i < x->rank; i++)
		dims[r++] = x->dim[i];
	return copy_or_view(ob, r, dims);
}

static int
reshape_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x = ob_in(ob, 0);
	const json_t *shape = json_object_get(ob->item, "shape");
	expr_id dims[CM_MAX_RANK], known = expr_int(g, 1);
	int infer = -1, r;
	size_t i;
	const json_t *v;
	char name[32];

	if (!json_is_array(shape) || json_array_size(shape) == 0 || json_array_size(shape) > CM_MAX_RANK)
		return ob_fail(ob, "shape", "must list 1 to %d dimensions", CM_MAX_RANK);
	r = (int)json_array_size(shape);
	json_array_foreach(shape, i, v) {
		if (json_is_integer(v) && json_integer_value(v) == -1) {
			if (infer >= 0)
				return ob_fail(ob, "shape", "only one dimension may be -1");
			infer = (int)i;
			continue;
		}
		dn_fmt(name, sizeof name, "shape[%zu]", i);
		{
			char path[600];
			dn_fmt(path, sizeof path, "%s.%s", ob->file_path, name);
			dims[i] = mb_parse_value(ob->mb, v, path, ob->guard);
		}
		if (dims[i] < 0)
			return -1;
		if (expr_type_of(g, dims[i]) != EXPR_INT)
			return ob_fail(ob, name, "must be an integer");
		{
			const char *n[] = { name };
			ob_require(ob, expr_ge(g, dims[i], expr_int(g, 1)), "reshape dimensions >= 1", 1, n, &dims[i]);
		}
		known = expr_mul(g, known, dims[i]);
	}
	{
		const char *n[] = { "input elements", "product of the shape" };
		expr_id vals[] = { x->elems, known };
		if (infer >= 0) {
			dims[infer] = expr_div(g, x->elems, known);
			ob_require(ob, expr_eq(g, expr_mod(g, x->elems, known), expr_int(g, 0)),
			    "reshape preserves the element count (-1 must come out whole)", 2, n, vals);
		} else
			ob_require(ob, expr_eq(g, x->elems, known), "reshape preserves the element count", 2, n, vals);
	}
	return copy_or_view(ob, r, dims);
}

static int
permute_build(struct op_build *ob)
{
	const struct cm_tensor *x = ob_in(ob, 0);
	const json_t *dl = json_object_get(ob->item, "dims");
	expr_id dims[CM_MAX_RANK];
	int seen[CM_MAX_RANK] = { 0 }, identity = 1;
	size_t i;
	const json_t *v;

	if (!json_is_array(dl) || (int)json_array_size(dl) != x->rank)
		return ob_fail(ob, "dims", "must list all %d dimensions", x->rank);
	json_array_foreach(dl, i, v) {
		int d = 0;
		if (!json_is_integer(v) || op_norm_dim(ob, "dims", json_integer_value(v), x->rank, &d))
			return ob_has(ob, "dims") && json_is_integer(v) ? -1 : ob_fail(ob, "dims", "must be integers");
		if (seen[d]++)
			return ob_fail(ob, "dims", "dimension %d is listed twice", d);
		dims[i] = x->dim[d];
		if ((size_t)d != i)
			identity = 0;
	}
	ob->op.kernels_fwd = ob->op.kernels_bwd = 0;
	return ob_out_view(ob, 0, x->rank, dims, x->contiguous && identity) < 0 ? -1 : 0;
}

static int
transpose_build(struct op_build *ob)
{
	const struct cm_tensor *x = ob_in(ob, 0);
	int64_t a = 0, b = 0;
	int da = 0, db = 0;
	expr_id dims[CM_MAX_RANK], t;

	if (const_attr(ob, "dim0", 0, &a) || const_attr(ob, "dim1", 1, &b) ||
	    op_norm_dim(ob, "dim0", a, x->rank, &da) || op_norm_dim(ob, "dim1", b, x->rank, &db))
		return -1;
	memcpy(dims, x->dim, sizeof dims);
	t = dims[da];
	dims[da] = dims[db];
	dims[db] = t;
	ob->op.kernels_fwd = ob->op.kernels_bwd = 0;
	return ob_out_view(ob, 0, x->rank, dims, x->contiguous && da == db) < 0 ? -1 : 0;
}

static int
contiguous_build(struct op_build *ob)
{
	const struct cm_tensor *x = ob_in(ob, 0);

	return copy_or_view(ob, x->rank, x->dim);
}

static int
identity_build(struct op_build *ob)
{
	ob->out = ob->in[0];
	ob->op.kernels_fwd = ob->op.kernels_bwd = 0;
	return 0;
}

static int
zero_build(struct op_build *ob)
{
	const struct cm_tensor *x = ob_in(ob, 0);

	/* NAS "none": x.mul(0.), a new tensor that keeps nothing for backward */
	if (ob_out_new(ob, x->rank, x->dim, (enum cm_dtype)x->dtype) < 0)
		return -1;
	op_elementwise_costs(ob, 1);
	return 0;
}

/* narrow(dim, start, length): a view. A slice keeps its rows' layout, so
 * later reshapes that only split its last dimension stay views (as
 * qkv.split(E, dim=2).view(N, L, h, d) does in GPT-2). */
static int
slice_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x = ob_in(ob, 0);
	int64_t d = 0;
	int dim = 0;
	expr_id start, len, dims[CM_MAX_RANK];

	if (const_attr(ob, "dim", 0, &d) || op_norm_dim(ob, "dim", d, x->rank, &dim))
		return -1;
	start = ob_int(ob, "start", 0);
	len = ob_int(ob, "length", OB_REQUIRED);
	if (start < 0 || len < 0)
		return -1;
	{
		const char *n[] = { "start", "length", "size" };
		expr_id v[] = { start, len, x->dim[dim] };
		ob_require(ob, expr_and(g, expr_ge(g, start, expr_int(g, 0)),
		    expr_and(g, expr_ge(g, len, expr_int(g, 1)),
		    expr_le(g, expr_add(g, start, len), x->dim[dim]))),
		    "0 <= start, 1 <= length, start + length <= size", 3, n, v);
	}
	memcpy(dims, x->dim, sizeof dims);
	dims[dim] = len;
	ob->op.kernels_fwd = ob->op.kernels_bwd = 0;
	return ob_out_view(ob, 0, x->rank, dims, x->contiguous) < 0 ? -1 : 0;
}

static const char *const flatten_attrs[] = { "start_dim", "end_dim", NULL };
static const char *const reshape_attrs[] = { "shape", NULL };
static const char *const permute_attrs[] = { "dims", NULL };
static const char *const transpose_attrs[] = { "dim0", "dim1", NULL };
static const char *const none_attrs[] = { NULL };
static const char *const slice_attrs[] = { "dim", "start", "length", NULL };

const struct op_rule op_rule_flatten = { "flatten", flatten_attrs, 1, 1, CM_CLASS_VIEW, flatten_build };
const struct op_rule op_rule_reshape = { "reshape", reshape_attrs, 1, 1, CM_CLASS_VIEW, reshape_build };
const struct op_rule op_rule_permute = { "permute", permute_attrs, 1, 1, CM_CLASS_VIEW, permute_build };
const struct op_rule op_rule_transpose = { "transpose", transpose_attrs, 1, 1, CM_CLASS_VIEW, transpose_build };
const struct op_rule op_rule_contiguous = { "contiguous", none_attrs, 1, 1, CM_CLASS_VIEW, contiguous_build };
const struct op_rule op_rule_identity = { "identity", none_attrs, 1, 1, CM_CLASS_VIEW, identity_build };
const struct op_rule op_rule_zero = { "zero", none_attrs, 1, 1, CM_CLASS_ELEMENTWISE, zero_build };
const struct op_rule op_rule_slice = { "slice", slice_attrs, 1, 1, CM_CLASS_VIEW, slice_build };
