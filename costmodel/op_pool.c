/*
 * op_pool.c - max and average pooling (1-d, 2-d, 3-d, with padding and
 * ceil_mode as PyTorch computes output sizes) and adaptive pooling (2-d,
 * 3-d). Max pooling keeps its input and int64 argmax indices for backward;
 * average pooling keeps its input.
 */
#include "op_rules.h"

/* PyTorch's pooling_output_shape: floor or ceil of
 * (in + 2p - d(k-1) - 1) / s + 1, minus one when ceil_mode would start the
 * last window inside the right padding. */
static expr_id
pool_out(struct expr_graph *g, expr_id in, expr_id k, expr_id s, expr_id p, int ceil_mode)
{
	expr_id one = expr_int(g, 1);
	/* the window terms grouped, as in op_conv.c */
	expr_id num = expr_add(g, in, expr_sub(g, expr_sub(g, expr_mul(g, expr_int(g, 2), p),
	    expr_sub(g, k, one)), one));
	expr_id o;

	if (!ceil_mode)
		return expr_add(g, expr_div(g, num, s), one);
	o = expr_add(g, expr_cdiv(g, num, s), one);
	/* if ((o - 1) * s >= in + p) o-- */
	return expr_ite(g, expr_ge(g, expr_mul(g, expr_sub(g, o, one), s), expr_add(g, in, p)),
	    expr_sub(g, o, one), o);
}

/* Every pooling's output (x's rank and dtype, sizes dims) and what it
 * keeps for backward: its input, and max pooling's int64 argmax indices
 * (one per output element); elementwise costs. 0 or -1. */
static int
pool_output(struct op_build *ob, const struct cm_tensor *x, const expr_id *dims, int is_max)
{
	if (ob_out_new(ob, x->rank, dims, (enum cm_dtype)x->dtype) < 0)
		return -1;
	ob_save_input(ob, 0);
	if (is_max)
		ob_save_new(ob, ob_bytes(ob, ob->m->tensors[ob->out].elems, CM_DT_I64));
	op_elementwise_costs(ob, 1);
	return 0;
}

static int
pool_build(struct op_build *ob, int spatial, int is_max)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x;
	expr_id k[3], s[3], p[3], dims[CM_MAX_RANK], win;
	int ceil_mode;

	if (ob_need_rank(ob, 0, spatial + 1, spatial + 2) != 0)
		return -1;
	x = ob_in(ob, 0);
	if (spatial >= 2) {
		if (ob_tuple(ob, "kernel", OB_REQUIRED, spatial, k))
			return -1;
		if (ob_has(ob, "stride")) {
			if (ob_tuple(ob, "stride", 1, spatial, s))
				return -1;
		} else
			for (int i = 0; i < spatial; i++)
				s[i] = k[i];
		if (ob_tuple(ob, "padding", 0, spatial, p))
			return -1;
	} else {
		k[0] = k[1] = ob_int(ob, "kernel", OB_REQUIRED);
		if (k[0] < 0)
			return -1;
		s[0] = s[1] = ob_has(ob, "stride") ? ob_int(ob, "stride", 1) : k[0];
		p[0] = p[1] = ob_int(ob, "padding", 0);
		if (s[0] < 0 || p[0] < 0)
			return -1;
	}
	ceil_mode = ob_bool(ob, "ceil_mode", 0);
	if (ceil_mode < 0 || ob_bool(ob, "count_include_pad", 1) < 0)
		return -1;
	for (int i = 0; i < x->rank - spatial; i++)
		dims[i] = x->dim[i];
	for (int i = 0; i < spatial; i++) {
		int a = spatial >= 2 ? i : 0, d = x->rank - spatial + i;
		expr_id o = pool_out(g, x->dim[d], k[a], s[a], p[a], ceil_mode);
		const char *nk[] = { "kernel" }, *ns[] = { "stride" };
		const char *np[] = { "padding", "kernel" };
		const char *no[] = { "input size", "kernel", "output size" };
		expr_id vp[] = { p[a], k[a] }, vo[] = { x->dim[d], k[a], o };
		ob_require(ob, expr_ge(g, k[a], expr_int(g, 1)), "kernel >= 1", 1, nk, &k[a]);
		ob_require(ob, expr_ge(g, s[a], expr_int(g, 1)), "stride >= 1", 1, ns, &s[a]);
		ob_require(ob, expr_and(g, expr_ge(g, p[a], expr_int(g, 0)),
		    expr_le(g, expr_mul(g, p[a], expr_int(g, 2)), k[a])),
		    "0 <= padding <= kernel / 2", 2, np, vp);
		ob_require(ob, expr_ge(g, o, expr_int(g, 1)),
		    "pooling output size >= 1 (window larger than the padded input)", 3, no, vo);
		dims[d] = o;
	}
	if (pool_output(ob, x, dims, is_max) != 0)
		return -1;
	{
		/* PyTorch's pooling kernels (NCHW) run one thread per output that
		 * loads every element of its window: the memory traffic is the
		 * window's loads plus the output's store, not one read of the
		 * input (the loads hit the cache, but each is a transaction) */
		expr_id out = ob->m->tensors[ob->out].elems;
		win = k[0];
		for (int i = 1; i < spatial; i++)
			win = expr_mul(g, win, k[i]);
		ob->op.flops_other = expr_mul(g, out, win);
		ob->op.fwd_bytes = ob_bytes(ob, expr_mul(g, out, expr_add(g, win, expr_int(g, 1))),
		    (enum cm_dtype)x->dtype);
	}
	return 0;
}

static int maxpool1d_build(struct op_build *ob) { return pool_build(ob, 1, 1); }
static int maxpool2d_build(struct op_build *ob) { return pool_build(ob, 2, 1); }
static int avgpool1d_build(struct op_build *ob) { return pool_build(ob, 1, 0); }
static int avgpool2d_build(struct op_build *ob) { return pool_build(ob, 2, 0); }
static int maxpool3d_build(struct op_build *ob) { return pool_build(ob, 3, 1); }
static int avgpool3d_build(struct op_build *ob) { return pool_build(ob, 3, 0); }

static int
adaptive_build(struct op_build *ob, int spatial, int is_max)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x;
	expr_id o[3], dims[CM_MAX_RANK];

	if (ob_need_rank(ob, 0, spatial + 1, spatial + 2) != 0)
		return -1;
	x = ob_in(ob, 0);
	if (ob_tuple(ob, "output_size", 1, spatial, o))
		return -1;
	for (int i = 0; i < x->rank - spatial; i++)
		dims[i] = x->dim[i];
	for (int i = 0; i < spatial; i++) {
		const char *n[] = { "output_size" };
		ob_require(ob, expr_ge(g, o[i], expr_int(g, 1)), "output_size >= 1", 1, n, &o[i]);
		dims[x->rank - spatial + i] = o[i];
	}
	if (pool_output(ob, x, dims, is_max) != 0)
		return -1;
	ob->op.flops_other = x->elems;
	return 0;
}

static int adaptive_avg_build(struct op_build *ob) { return adaptive_build(ob, 2, 0); }
static int adaptive_max_build(struct op_build *ob) { return adaptive_build(ob, 2, 1); }
static int adaptive_avg3d_build(struct op_build *ob) { return adaptive_build(ob, 3, 0); }
static int adaptive_max3d_build(struct op_build *ob) { return adaptive_build(ob, 3, 1); }

static const char *const pool_attrs[] = { "kernel", "stride", "padding", "ceil_mode", "count_include_pad", NULL };
static const char *const adaptive_attrs[] = { "output_size", NULL };

const struct op_rule op_rule_maxpool1d = { "maxpool1d", pool_attrs, 1, 1, CM_CLASS_REDUCTION, maxpool1d_build };
const struct op_rule op_rule_maxpool2d = { "maxpool2d", pool_attrs, 1, 1, CM_CLASS_REDUCTION, maxpool2d_build };
const struct op_rule op_rule_avgpool1d = { "avgpool1d", pool_attrs, 1, 1, CM_CLASS_REDUCTION, avgpool1d_build };
const struct op_rule op_rule_avgpool2d = { "avgpool2d", pool_attrs, 1, 1, CM_CLASS_REDUCTION, avgpool2d_build };
const struct op_rule op_rule_adaptive_avgpool2d = { "adaptive_avgpool2d", adaptive_attrs, 1, 1, CM_CLASS_REDUCTION, adaptive_avg_build };
const struct op_rule op_rule_adaptive_maxpool2d = { "adaptive_maxpool2d", adaptive_attrs, 1, 1, CM_CLASS_REDUCTION, adaptive_max_build };
const struct op_rule op_rule_maxpool3d = { "maxpool3d", pool_attrs, 1, 1, CM_CLASS_REDUCTION, maxpool3d_build };
const struct op_rule op_rule_avgpool3d = { "avgpool3d", pool_attrs, 1, 1, CM_CLASS_REDUCTION, avgpool3d_build };
const struct op_rule op_rule_adaptive_avgpool3d = { "adaptive_avgpool3d", adaptive_attrs, 1, 1, CM_CLASS_REDUCTION, adaptive_avg3d_build };
const struct op_rule op_rule_adaptive_maxpool3d = { "adaptive_maxpool3d", adaptive_attrs, 1, 1, CM_CLASS_REDUCTION, adaptive_max3d_build };
