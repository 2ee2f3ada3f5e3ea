/*
 * test_macs_convention.c - the MACs conventions (costmodel/cm_macs.c) on
 * small networks whose counts are worked out by hand from each convention's
 * formulas:
 *  - fvcore's own docstring example (fvcore/nn/flop_count.py,
 *    FlopCountAnalysis: Conv2d(3, 10, 1) + ReLU + Linear(1000, 10) on a
 *    1 x 3 x 10 x 10 input, flops.total() == 13000);
 *  - conv (biased) + batch norm + ReLU + max pool + adaptive average pool +
 *    linear (biased) + layer norm, in inference and training mode, with and
 *    without batch norm weights, under fvcore, torchvision and nb201;
 *  - upsampling: fvcore's upsample_nearest2d (1 per output element) and
 *    upsample_bilinear2d (4) handles, nothing for the 1-d kernels and
 *    under the other conventions;
 *  - one attention layer under each kernel: fvcore counts eager attention's
 *    matmuls, and no SDPA kernel (the math path included);
 *  - the conventions' names.
 * NAS-Bench-201's published counts are checked in test_latency.c.
 */
#include "test_util.h"

/* Builds `text` for the test workload (training or not) with attention
 * kernel `a` and answers its "macs" under `c` at the defaults. */
static int64_t
macs_with(const char *text, int training, enum cm_attention a, enum cm_macs_convention c)
{
	struct cm_workload wl = test_workload(training);
	struct tmodel t;
	int64_t macs;

	wl.attention = a;
	wl.macs_convention = (int)c;
	ck_assert_msg(tmodel_from_text(&t, text, &wl) == 0, "%s: %s", t.err.path, t.err.message);
	tmodel_eval(&t);
	ck_assert(t.r.valid);
	macs = t.r.macs;
	tmodel_free(&t);
	return macs;
}

static int64_t
macs_of(const char *text, int training, enum cm_macs_convention c)
{
	return macs_with(text, training, CM_ATTN_SDPA, c);
}

START_TEST(test_fvcore_docstring)
{
	static const char model[] =
	    "{\"dnnsat_model\": 1, \"name\": \"fvdoc\", \"hyperparameters\": {},"
	    " \"inputs\": [{\"name\": \"x\", \"shape\": [1, 3, 10, 10], \"dtype\": \"float\"}],"
	    " \"layers\": [{\"op\": \"conv2d\", \"out_channels\": 10, \"kernel\": 1}, {\"op\": \"relu\"},"
	    " {\"op\": \"flatten\", \"start_dim\": 1}, {\"op\": \"linear\", \"out_features\": 10}]}";

	/* conv 10 x 3 x 100 = 3,000 and linear 1,000 x 10 = 10,000 */
	ck_assert_int_eq(macs_of(model, 0, CM_MACS_FVCORE), 13000);
	ck_assert_int_eq(macs_of(model, 1, CM_MACS_FVCORE), 13000);
}
END_TEST

/* x [2, 3, 8, 8] -> conv 3x3 pad 1 to 4 channels (bias) -> batch norm ->
 * relu -> max pool 2 -> adaptive avg pool 1x1 -> flatten -> linear 5
 * (bias) -> layer norm. */
static void
small_net(char *buf, size_t len, const char *bn_affine)
{
	snprintf(buf, len,
	    "{\"dnnsat_model\": 1, \"name\": \"small\", \"hyperparameters\": {},"
	    " \"inputs\": [{\"name\": \"x\", \"shape\": [2, 3, 8, 8], \"dtype\": \"float\"}],"
	    " \"layers\": [{\"op\": \"conv2d\", \"out_channels\": 4, \"kernel\": 3, \"padding\": 1, \"bias\": true},"
	    " {\"op\": \"batchnorm\", \"affine\": %s}, {\"op\": \"relu\"},"
	    " {\"op\": \"maxpool2d\", \"kernel\": 2, \"stride\": 2},"
	    " {\"op\": \"adaptive_avgpool2d\", \"output_size\": [1, 1]}, {\"op\": \"flatten\", \"start_dim\": 1},"
	    " {\"op\": \"linear\", \"out_features\": 5}, {\"op\": \"layernorm\"}]}", bn_affine);
}

START_TEST(test_fvcore_small_net)
{
	/* conv_flop_jit: batch 2 x weight 4*3*3*3 x output 8*8 */
	const int64_t conv = 2 * (4 * 3 * 3 * 3) * (8 * 8);
	/* batch norm input 2 x 4 x 8 x 8 */
	const int64_t bn_in = 2 * 4 * 8 * 8;
	/* adaptive_avg_pool2d: 1 per input element, 2 x 4 x 4 x 4 */
	const int64_t pool = 2 * 4 * 4 * 4;
	/* linear_flop_jit: prod(input 2 x 4) x 5 */
	const int64_t fc = 2 * 4 * 5;
	/* layer_norm with weights: 5 per input element, 2 x 5 */
	const int64_t ln = 5 * 2 * 5;
	char model[1024];

	small_net(model, sizeof model, "true");
	/* batchnorm_flop_jit: eval 2 per element with weights, training 5 */
	ck_assert_int_eq(macs_of(model, 0, CM_MACS_FVCORE), conv + 2 * bn_in + pool + fc + ln);
	ck_assert_int_eq(macs_of(model, 1, CM_MACS_FVCORE), conv + 5 * bn_in + pool + fc + ln);
	/* the others: conv and linear only; nb201 adds a bias per output */
	ck_assert_int_eq(macs_of(model, 0, CM_MACS_TORCHVISION), conv + fc);
	ck_assert_int_eq(macs_of(model, 0, CM_MACS_NB201), conv + fc + bn_in + 2 * 5);
	small_net(model, sizeof model, "false");
	/* without weights: eval 1 per element, training 4 */
	ck_assert_int_eq(macs_of(model, 0, CM_MACS_FVCORE), conv + bn_in + pool + fc + ln);
	ck_assert_int_eq(macs_of(model, 1, CM_MACS_FVCORE), conv + 4 * bn_in + pool + fc + ln);
}
END_TEST

/* MACs of one self-attention layer (GPT-2's fused qkv) on x [2, 16, 32],
 * 4 heads, with attention kernel `a`, under convention `c` */
static int64_t
attention_macs(enum cm_attention a, enum cm_macs_convention c)
{
	static const char model[] =
	    "{\"dnnsat_model\": 1, \"name\": \"attn\", \"hyperparameters\": {},"
	    " \"inputs\": [{\"name\": \"x\", \"shape\": [2, 16, 32], \"dtype\": \"float\"}],"
	    " \"layers\": [{\"op\": \"attention\", \"heads\": 4, \"qkv\": \"fused\", \"dropout\": 0.1}]}";

	return macs_with(model, 1, a, c);
}

START_TEST(test_fvcore_attention)
{
	/* c_attn 2 x 16 x 32 x 96, c_proj 2 x 16 x 32 x 32 */
	const int64_t linears = 2 * 16 * 32 * 96 + 2 * 16 * 32 * 32;
	/* QK^T and PV: 2 x 4 heads x 16 x 16 x head dim 8 each */
	const int64_t core = 2 * (2 * 4 * 16 * 16 * 8);

	/* torchvision counts the attention products whatever the kernel */
	ck_assert_int_eq(attention_macs(CM_ATTN_EAGER, CM_MACS_TORCHVISION), linears + core);
	ck_assert_int_eq(attention_macs(CM_ATTN_MATH, CM_MACS_TORCHVISION), linears + core);
	ck_assert_int_eq(attention_macs(CM_ATTN_MEM_EFFICIENT, CM_MACS_TORCHVISION), linears + core);
	/* fvcore: eager attention's torch.matmul calls count; any SDPA kernel,
	 * the math path included, is one aten::scaled_dot_product_attention,
	 * which fvcore has no handle for */
	ck_assert_int_eq(attention_macs(CM_ATTN_EAGER, CM_MACS_FVCORE), linears + core);
	ck_assert_int_eq(attention_macs(CM_ATTN_MATH, CM_MACS_FVCORE), linears);
	ck_assert_int_eq(attention_macs(CM_ATTN_MEM_EFFICIENT, CM_MACS_FVCORE), linears);
}
END_TEST

START_TEST(test_convention_names)
{
	static const struct { const char *in, *name; enum cm_macs_convention c; } ok[] = {
		{ "torchvision", "torchvision", CM_MACS_TORCHVISION },
		{ "nb201", "nb201", CM_MACS_NB201 },
		{ "NAS-Bench-201", "nb201", CM_MACS_NB201 },
		{ "fvcore", "fvcore", CM_MACS_FVCORE },
	};
	enum cm_macs_convention c;

	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		ck_assert_int_eq(cm_macs_convention_parse(ok[i].in, &c), 0);
		ck_assert_int_eq(c, ok[i].c);
		ck_assert_str_eq(cm_macs_convention_name(c), ok[i].name);
	}
	ck_assert_int_eq(cm_macs_convention_parse("ptflops", &c), -1);
}
END_TEST

/* x [2, 3, 5, 7] -> conv 1x1 to 4 -> nearest x2 -> bilinear to 9 x 11 ->
 * bicubic x1.5 (13 x 16) -> conv 1x1 to 2; and a 1-d linear upsample */
START_TEST(test_fvcore_upsample)
{
	static const char model[] =
	    "{\"dnnsat_model\": 1, \"name\": \"up\", \"hyperparameters\": {},"
	    " \"inputs\": [{\"name\": \"x\", \"shape\": [2, 3, 5, 7], \"dtype\": \"float\"}],"
	    " \"layers\": [{\"op\": \"conv2d\", \"out_channels\": 4, \"kernel\": 1, \"bias\": false},"
	    " {\"op\": \"upsample\", \"scale_factor\": 2},"
	    " {\"op\": \"upsample\", \"mode\": \"bilinear\", \"size\": [9, 11], \"align_corners\": true},"
	    " {\"op\": \"upsample\", \"mode\": \"bicubic\", \"scale_factor\": 1.5},"
	    " {\"op\": \"conv2d\", \"out_channels\": 2, \"kernel\": 1, \"bias\": false}]}";
	static const char model1d[] =
	    "{\"dnnsat_model\": 1, \"name\": \"up1\", \"hyperparameters\": {},"
	    " \"inputs\": [{\"name\": \"x\", \"shape\": [2, 3, 5], \"dtype\": \"float\"}],"
	    " \"layers\": [{\"op\": \"upsample\", \"mode\": \"linear\", \"scale_factor\": 3},"
	    " {\"op\": \"upsample\", \"size\": 20}, {\"op\": \"scale\", \"factor\": 2.0}]}";
	const int64_t convs = 2 * 4 * 3 * 5 * 7 + 2 * 2 * 4 * 13 * 16;
	/* nearest: 2 x 4 x 10 x 14 outputs; bilinear: 4 x 2 x 4 x 9 x 11 */
	const int64_t fv = 2 * 4 * 10 * 14 + 4 * 2 * 4 * 9 * 11;

	ck_assert_int_eq(macs_of(model, 1, CM_MACS_TORCHVISION), convs);
	ck_assert_int_eq(macs_of(model, 1, CM_MACS_NB201), convs);
	ck_assert_int_eq(macs_of(model, 1, CM_MACS_FVCORE), convs + fv);
	ck_assert_int_eq(macs_of(model, 0, CM_MACS_FVCORE), convs + fv);
	ck_assert_int_eq(macs_of(model1d, 1, CM_MACS_FVCORE), 0);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("macs_convention");
	TCase *t = tcase_create("conventions");

	tcase_set_timeout(t, 120);
	tcase_add_test(t, test_fvcore_docstring);
	tcase_add_test(t, test_fvcore_small_net);
	tcase_add_test(t, test_fvcore_attention);
	tcase_add_test(t, test_fvcore_upsample);
	tcase_add_test(t, test_convention_names);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	return run_suite(suite(), 1);
}
