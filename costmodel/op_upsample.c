/*
 * op_upsample.c - upsample: nn.Upsample / F.interpolate on [N, C, L],
 * [N, C, H, W] or [N, C, D, H, W], by an output `size` or a `scale_factor`
 * per spatial dimension, in `mode` nearest (any rank), linear (3-d input),
 * bilinear or bicubic (4-d), trilinear (5-d), as PyTorch pairs modes and
 * ranks (another pairing raises NotImplementedError there, an error here).
 *
 * Output size: `size` itself, or floor(in * scale_factor) (F.interpolate's
 * _interp_output_size and aten's compute_output_size, in doubles): an
 * integer factor is in * s, a factor with a power-of-two denominator up to
 * 1024 (0.5, 1.5) is the exact (in * p) / q, any other floor(in * s) over
 * reals. align_corners changes which input pixels are read, not how many:
 * it is accepted (only with the interpolating modes, as PyTorch requires)
 * and costs nothing.
 *
 * No parameters. MACs: none under the torchvision and nb201 conventions
 * (they count conv, linear, matmul, attention and recurrent layers only);
 * under fvcore the counts of its default handles (fvcore/nn/flop_count.py
 * _DEFAULT_SUPPORTED_OPS): aten::upsample_nearest2d
 * elementwise_flop_counter(0, 1), one per output element, and
 * aten::upsample_bilinear2d elementwise_flop_counter(0, 4), four per output
 * element; fvcore has no handle for the 1-d, 3-d and bicubic kernels, which
 * count 0 (op->aux_macs, cm_macs.c).
 *
 * Backward: aten's upsample_*_backward take the gradient and the sizes (and
 * scales) only, so nothing of the input or output is saved: checked on
 * Debian's torch 1.13 with torch.autograd.graph.saved_tensors_hooks around
 * nn.Upsample in every mode (tests/reference/upsample_saved.json, written by
 * tests/reference/gen_upsample_saved.py: no tensor packed). A convolution
 * after it saves the upsampled tensor as its input, which is where an
 * upsampling network's memory goes.
 *
 * Kernels: one forward (a gather of 1, 2, 4, 8 or 16 input values per output
 * element); backward one for nearest, two for the interpolating modes (the
 * gradient zeroed, then atomically accumulated into). Priced by bytes as
 * elementwise work: the input and output read and written once, with the
 * interpolation's multiply-adds as other FLOPs.
 */
#include "op_rules.h"

#include <math.h>
#include <string.h>

struct upsample_mode {
	const char *name;
	int rank;               /* the input rank it takes, 0: 3 to 5 */
	int taps;               /* input values read per output element */
	int fvcore;             /* fvcore's count per output element (2-d only) */
};

static const struct upsample_mode modes[] = {
	{ "nearest", 0, 1, 1 },
	{ "linear", 3, 2, 0 },
	{ "bilinear", 4, 4, 4 },
	{ "bicubic", 4, 16, 0 },
	{ "trilinear", 5, 8, 0 },
};

/* floor(in * s) as an expression (see the top). */
static expr_id
scaled(struct expr_graph *g, expr_id in, double s)
{
	for (int64_t q = 1; q <= 1024; q *= 2) {
		double p = s * (double)q;
		if (p == floor(p) && p < 1e15)
			return q == 1 ? expr_mul(g, in, expr_int(g, (int64_t)p)) :
			    expr_div(g, expr_mul(g, in, expr_int(g, (int64_t)p)), expr_int(g, q));
	}
	return expr_floor(g, expr_mul(g, expr_to_real(g, in), expr_real(g, s)));
}

/* The scale factors (one number or a list of `spatial`) into s. 0 or -1. */
static int
scale_factors(struct op_build *ob, int spatial, double *s)
{
	const json_t *v = json_object_get(ob->item, "scale_factor"), *e;
	size_t i;

	if (json_is_number(v)) {
		for (int k = 0; k < spatial; k++)
			s[k] = json_number_value(v);
	} else if (json_is_array(v) && (json_array_size(v) == 1 || json_array_size(v) == (size_t)spatial)) {
		json_array_foreach(v, i, e) {
			if (!json_is_number(e))
				return ob_fail(ob, "scale_factor", "must list numbers");
			s[i] = json_number_value(e);
		}
		for (int k = (int)json_array_size(v); k < spatial; k++)
			s[k] = s[0];
	} else {
		return ob_fail(ob, "scale_factor", "must be a number or a list of 1 or %d numbers (one per spatial "
		    "dimension)", spatial);
	}
	for (int k = 0; k < spatial; k++)
		if (!(s[k] > 0 && s[k] <= 1e6))
			return ob_fail(ob, "scale_factor", "must be above 0 (and at most 1e6)");
	return 0;
}

static int
upsample_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const char *mname = json_string_value(json_object_get(ob->item, "mode"));
	const struct upsample_mode *md = NULL;
	const struct cm_tensor *x;
	expr_id dims[CM_MAX_RANK], size[3];
	double s[3];
	int spatial, n, align;

	if (ob_need_rank(ob, 0, 3, 5) != 0)
		return -1;
	x = ob_in(ob, 0);
	if (x->dtype == CM_DT_I64)
		return ob_fail(ob, NULL, "needs a float input");
	spatial = x->rank - 2;
	if (mname == NULL && ob_has(ob, "mode"))
		return ob_fail(ob, "mode", "must be a string");
	if (mname == NULL)
		mname = "nearest";
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
		if (strcmp(modes[i].name, mname) == 0)
			md = &modes[i];
	if (md == NULL)
		return ob_fail(ob, "mode", "must be \"nearest\", \"linear\", \"bilinear\", \"bicubic\" or \"trilinear\"");
	if (md->rank != 0 && md->rank != x->rank)
		return ob_fail(ob, "mode", "\"%s\" takes a %d-d input (PyTorch pairs linear with 3-d, bilinear and bicubic "
		    "with 4-d, trilinear with 5-d); the input is %d-d", md->name, md->rank, x->rank);
	align = ob_bool(ob, "align_corners", 0);
	if (align < 0)
		return -1;
	if (ob_has(ob, "align_corners") && md->rank == 0)
		return ob_fail(ob, "align_corners", "only with the interpolating modes (linear, bilinear, bicubic, "
		    "trilinear), as in PyTorch");
	if (ob_has(ob, "size") == ob_has(ob, "scale_factor"))
		return ob_fail(ob, NULL, "needs exactly one of \"size\" and \"scale_factor\"");
	memcpy(dims, x->dim, sizeof dims);
	if (ob_has(ob, "size")) {
		if (json_is_array(json_object_get(ob->item, "size"))) {
			n = ob_int_list(ob, "size", 1, spatial, size);
			if (n < 0)
				return -1;
			if (n != 1 && n != spatial)
				return ob_fail(ob, "size", "must list 1 or %d sizes (one per spatial dimension)", spatial);
		} else {
			size[0] = ob_int(ob, "size", OB_REQUIRED);
			if (size[0] < 0)
				return -1;
			n = 1;
		}
		for (int k = 0; k < spatial; k++)
			dims[2 + k] = size[n == 1 ? 0 : k];
	} else {
		if (scale_factors(ob, spatial, s) < 0)
			return -1;
		for (int k = 0; k < spatial; k++)
			dims[2 + k] = scaled(g, x->dim[2 + k], s[k]);
	}
	for (int k = 0; k < spatial; k++) {
		const char *nm[] = { "input size", "output size" };
		expr_id v[] = { x->dim[2 + k], dims[2 + k] };
		ob_require(ob, expr_ge(g, dims[2 + k], expr_int(g, 1)),
		    "upsample output size >= 1 (PyTorch: input and output sizes should be greater than 0)", 2, nm, v);
	}
	if (ob_out_new(ob, x->rank, dims, (enum cm_dtype)x->dtype) < 0)
		return -1;
	op_elementwise_costs(ob, md->taps == 1 ? 0 : 2 * md->taps - 1);
	if (md->fvcore > 0 && x->rank == 4)
		ob->op.aux_macs = expr_mul(g, ob->m->tensors[ob->out].elems, expr_int(g, md->fvcore));
	ob->op.kernels_fwd = 1;
	ob->op.kernels_bwd = md->taps == 1 ? 1 : 2;
	return 0;
}

static const char *const upsample_attrs[] = { "mode", "size", "scale_factor", "align_corners", NULL };

const struct op_rule op_rule_upsample = { "upsample", upsample_attrs, 1, 1, CM_CLASS_ELEMENTWISE, upsample_build };
