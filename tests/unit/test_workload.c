/*
 * test_workload.c - the workload choices against bytes computed by hand or
 * measured with PyTorch:
 *  - attention kernels: what each keeps for backward (eager and math against
 *    torch's autograd, the fused kernels against their saved tensors), how
 *    "sdpa" resolves per device and dtype, and the device rules (flash below
 *    compute capability 8.0 or in fp32, bf16 on a chip without it) as named
 *    violations;
 *  - optimizer state per weight (Adam, 8-bit Adam, Adafactor, Lion, SGD with
 *    and without momentum) on a two-layer MLP, allocation by allocation;
 *  - softmax_saves: PyTorch <= 1.10's softmax and log_softmax keeping their
 *    input; "pytorch": a release's defaults;
 *  - gradient accumulation: gradients alive through the next micro-batch,
 *    forward and backward once per micro-batch;
 *  - gradient checkpointing per block: what stays kept, the recompute's
 *    activations in the backward and its time; blocks marked
 *    "checkpoint": true (nested: the outermost), a top-level repeat's
 *    "checkpoint": false, and the warning where nothing is checkpointed;
 *  - fine-tuning: frozen weights (no gradient or optimizer state, a frozen
 *    prefix keeps nothing) and LoRA (trainable adapters only, their MACs
 *    and saved tensors, less memory than full fine-tuning).
 */
#include "test_util.h"
#include "mem_plan.h"

#include <math.h>

static struct cm_device
dev_v100(void)
{
	struct cm_device d = test_device();

	snprintf(d.name, sizeof d.name, "v100");
	d.cc_major = 7;
	d.cc_minor = 0;
	d.peak_tf32 = 0;
	d.peak_fp16 = 125e12;
	d.peak_bf16 = 0;
	return d;
}

static struct cm_device
dev_a100(void)
{
	struct cm_device d = test_device();

	d.cc_major = 8;
	d.cc_minor = 0;
	return d;
}

/* One attention layer on x [N, L, E] (no gradient for x), GPT-2's fused
 * qkv; `dropout` its attention dropout. */
static void
attn_model(struct tmodel *t, const struct cm_workload *wl, const struct cm_device *dev,
    int n, int l, int e, int heads, double dropout, int causal)
{
	char text[1024];
	json_error_t jerr;
	json_t *root;

	memset(t, 0, sizeof *t);
	snprintf(text, sizeof text, "{\"dnnsat_model\": 1, \"name\": \"attn\", \"hyperparameters\": {"
	    "\"n\": {\"type\": \"int\", \"default\": %d}, \"l\": {\"type\": \"int\", \"default\": %d},"
	    "\"e\": {\"type\": \"int\", \"default\": %d}, \"h\": {\"type\": \"int\", \"default\": %d}},"
	    "\"inputs\": [{\"name\": \"x\", \"shape\": [\"n\", \"l\", \"e\"], \"dtype\": \"float\"}],"
	    "\"layers\": [{\"op\": \"attention\", \"heads\": \"h\", \"qkv\": \"fused\", \"dropout\": %g,"
	    " \"causal\": %s}]}", n, l, e, heads, dropout, causal ? "true" : "false");
	root = json_loads(text, 0, &jerr);
	ck_assert_msg(root != NULL, "%s", jerr.text);
	ck_assert_msg(cm_def_load_json(root, &t->def, &t->err) == 0, "%s", t->err.message);
	json_decref(root);
	t->cfg = calloc((size_t)t->def->nhps + 1, sizeof *t->cfg);
	cm_config_defaults(t->def, t->cfg);
	ck_assert_msg(cm_model_build(t->def, wl, dev, NULL, &t->m, &t->err) == 0, "%s", t->err.message);
	t->scratch = calloc((size_t)cm_model_scratch_len(t->m), sizeof *t->scratch);
	tmodel_eval(t);
}

/* Bytes kept for backward by the attention layer's own operators (the loss
 * a training build appends is not part of it). */
static int64_t
attn_saved(struct tmodel *t)
{
	int64_t s = 0;

	for (int k = 0; k < cm_model_nops(t->m); k++) {
		struct cm_op_report r;
		cm_model_op_report(t->m, t->scratch, k, &r);
		if (strncmp(r.path, "$.layers[0]", 11) == 0)
			s += r.saved_bytes;
	}
	return s;
}

static int
has_violation(const struct cm_result *r, const char *text)
{
	for (int i = 0; i < r->nviolations && i < 8; i++)
		if (strstr(r->violations[i].rule, text) != NULL)
			return 1;
	return 0;
}

/* x [n, l, e] through `layers` (a JSON array's text). */
static void
layers_model(struct tmodel *t, const struct cm_workload *wl, const struct cm_device *dev, const char *layers)
{
	char text[2048];
	json_error_t jerr;
	json_t *root;

	memset(t, 0, sizeof *t);
	snprintf(text, sizeof text, "{\"dnnsat_model\": 1, \"name\": \"core\", \"hyperparameters\": {"
	    "\"n\": {\"type\": \"int\", \"default\": 2}, \"l\": {\"type\": \"int\", \"default\": 40},"
	    "\"e\": {\"type\": \"int\", \"default\": 64}},"
	    "\"inputs\": [{\"name\": \"x\", \"shape\": [\"n\", \"l\", \"e\"], \"dtype\": \"float\"}],"
	    "\"layers\": %s}", layers);
	root = json_loads(text, 0, &jerr);
	ck_assert_msg(root != NULL, "%s", jerr.text);
	ck_assert_msg(cm_def_load_json(root, &t->def, &t->err) == 0, "%s", t->err.message);
	json_decref(root);
	t->cfg = calloc((size_t)t->def->nhps + 1, sizeof *t->cfg);
	cm_config_defaults(t->def, t->cfg);
	ck_assert_msg(cm_model_build(t->def, wl, dev, NULL, &t->m, &t->err) == 0, "%s", t->err.message);
	t->scratch = calloc((size_t)cm_model_scratch_len(t->m), sizeof *t->scratch);
	tmodel_eval(t);
}

/* attention_core between three linears and an output linear (what the ONNX
 * importer writes for BERT) costs what attention does, under every kernel;
 * and it refuses what is not self-attention */
START_TEST(test_attention_core)
{
	static const char *const attention = "[{\"op\": \"attention\", \"heads\": 4, \"causal\": true,"
	    " \"dropout\": 0.1}]";
	static const char *const core = "[{\"op\": \"linear\", \"name\": \"q\", \"out_features\": \"e\"},"
	    "{\"op\": \"linear\", \"name\": \"k\", \"input\": \"x\", \"out_features\": \"e\"},"
	    "{\"op\": \"linear\", \"name\": \"v\", \"input\": \"x\", \"out_features\": \"e\"},"
	    "{\"op\": \"attention_core\", \"inputs\": [\"q\", \"k\", \"v\"], \"heads\": 4, \"causal\": true,"
	    " \"dropout\": 0.1},"
	    "{\"op\": \"linear\", \"out_features\": \"e\"}]";
	static const enum cm_attention kernels[] = { CM_ATTN_SDPA, CM_ATTN_EAGER, CM_ATTN_MATH,
		CM_ATTN_MEM_EFFICIENT, CM_ATTN_FLASH };
	struct cm_device a100 = dev_a100();

	for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
		struct cm_workload wl = test_workload(1);
		struct tmodel a, c;
		wl.attention = kernels[i];
		if (kernels[i] == CM_ATTN_FLASH)
			wl.precision = CM_PREC_MIXED_FP16;
		layers_model(&a, &wl, &a100, attention);
		layers_model(&c, &wl, &a100, core);
		ck_assert_msg(a.r.valid && c.r.valid, "kernel %zu", i);
		ck_assert_int_eq(a.r.params, c.r.params);
		ck_assert_int_eq(a.r.macs, c.r.macs);
		ck_assert_int_eq(a.r.train_flops, c.r.train_flops);
		ck_assert_int_eq(a.r.act_saved_bytes, c.r.act_saved_bytes);
		tmodel_free(&a);
		tmodel_free(&c);
	}
	{
		struct cm_workload wl = test_workload(1);
		struct tmodel t;
		/* heads must divide E; k of another length is cross-attention */
		layers_model(&t, &wl, &a100, "[{\"op\": \"attention_core\", \"inputs\": [\"x\", \"x\", \"x\"],"
		    " \"heads\": 3}]");
		ck_assert(!t.r.valid && has_violation(&t.r, "heads divides"));
		tmodel_free(&t);
		layers_model(&t, &wl, &a100, "[{\"op\": \"slice\", \"name\": \"k\", \"dim\": 1, \"length\": 8},"
		    "{\"op\": \"attention_core\", \"inputs\": [\"x\", \"k\", \"k\"], \"heads\": 4}]");
		ck_assert(!t.r.valid && has_violation(&t.r, "self-attention"));
		tmodel_free(&t);
	}
}
END_TEST

START_TEST(test_attention_saved_bytes)
{
	struct cm_workload wl = test_workload(1);
	struct cm_device a100 = dev_a100();
	struct tmodel t;
	/* N=2, L=64, E=64, h=4, fp32, no dropout. torch 1.13's autograd
	 * (saved_tensors_hooks, storages once, the weights left out) keeps
	 * 294,920 bytes for GPT-2's eager attention and 294,928 for SDPA's math
	 * path written op by op as aten's _scaled_dot_product_attention_math
	 * runs it (q * sqrt(scale), k^T * sqrt(scale), matmul, add_(mask),
	 * softmax, matmul): both are x 32,768 + the q, k and v copies
	 * 3 x 32,768 + the probabilities 131,072 + c_proj's input 32,768 =
	 * 294,912, plus 0-dim scalar tensors (8 and 16 bytes) not modelled. */
	const int64_t eager = 294912;
	/* fused: x 32,768 + the c_attn output behind the q, k, v views
	 * 98,304 + O 32,768 + fp32 log-sum-exp 2 * 4 * 64 * 4 = 2,048 */
	const int64_t fused = 32768 + 98304 + 32768 + 2048;

	wl.attention = CM_ATTN_EAGER;
	attn_model(&t, &wl, &a100, 2, 64, 64, 4, 0.0, 0);
	ck_assert_int_eq(attn_saved(&t), eager);
	tmodel_free(&t);
	wl.attention = CM_ATTN_MATH;
	attn_model(&t, &wl, &a100, 2, 64, 64, 4, 0.0, 0);
	ck_assert_int_eq(attn_saved(&t), eager);
	tmodel_free(&t);
	wl.attention = CM_ATTN_MEM_EFFICIENT;
	attn_model(&t, &wl, &a100, 2, 64, 64, 4, 0.0, 0);
	ck_assert_int_eq(attn_saved(&t), fused);
	ck_assert(t.r.valid);
	tmodel_free(&t);

	/* L=40: flash keeps 40 log-sum-exp rows, the memory-efficient kernel
	 * pads them to 64; dropout adds flash's philox seed and offset (16) */
	wl.precision = CM_PREC_MIXED_FP16;
	wl.attention = CM_ATTN_FLASH;
	attn_model(&t, &wl, &a100, 2, 40, 64, 4, 0.1, 1);
	ck_assert(t.r.valid);
	ck_assert_int_eq(attn_saved(&t), (2 * 40 * 64 + 2 * 40 * 192 + 2 * 40 * 64) * 2 + 2 * 4 * 40 * 4 + 16);
	tmodel_free(&t);
	wl.attention = CM_ATTN_MEM_EFFICIENT;
	attn_model(&t, &wl, &a100, 2, 40, 64, 4, 0.1, 1);
	ck_assert_int_eq(attn_saved(&t), (2 * 40 * 64 + 2 * 40 * 192 + 2 * 40 * 64) * 2 + 2 * 4 * 64 * 4 + 16);
	tmodel_free(&t);
	/* eager with dropout: + the bool keep mask and the dropped copy of the
	 * probabilities (which the second matmul keeps instead) */
	wl.attention = CM_ATTN_EAGER;
	attn_model(&t, &wl, &a100, 2, 40, 64, 4, 0.1, 1);
	ck_assert_int_gt(attn_saved(&t), 2 * 4 * 40 * 40 * 2 * 2);
	tmodel_free(&t);
}
END_TEST

/* softmax_saves output_and_input (PyTorch <= 1.10: derivatives.yaml's
 * _softmax and _log_softmax formulas named `self`): softmax keeps its input
 * beside its result, an fp32 copy of it under autocast, and the loss's
 * log_softmax keeps the logits; the default keeps neither. The HF bert-large
 * runs of 2022 (tests/cli/test_hf_bert.py) were 11-15% low without it. */
START_TEST(test_softmax_keeps_input)
{
	struct cm_device a100 = dev_a100();
	/* N=2, h=4, L=64: the scores softmax reads, 2 * 4 * 64 * 64 elements */
	const int64_t scores = 2 * 4 * 64 * 64;

	for (int mixed = 0; mixed <= 1; mixed++) {
		struct cm_workload wl = test_workload(1);
		struct tmodel t;
		int64_t saved, total;

		wl.attention = CM_ATTN_EAGER;
		if (mixed)
			wl.precision = CM_PREC_MIXED_FP16;
		attn_model(&t, &wl, &a100, 2, 64, 64, 4, 0.0, 0);
		saved = attn_saved(&t);
		total = t.r.act_saved_bytes;
		if (!mixed)
			ck_assert_int_eq(saved, 294912);    /* test_attention_saved_bytes */
		tmodel_free(&t);
		wl.softmax_keeps_input = 1;
		attn_model(&t, &wl, &a100, 2, 64, 64, 4, 0.0, 0);
		/* fp32: the scores themselves; mixed: the fp16 scores stay
		 * transient, autocast's fp32 copy is kept */
		ck_assert_int_eq(attn_saved(&t) - saved, scores * 4);
		/* the loss on the [2, 64, 64] output: log_softmax's input, the
		 * logits (fp16 under autocast: its fp32 copy) */
		ck_assert_int_eq(t.r.act_saved_bytes - total, scores * 4 + 2 * 64 * 64 * 4);
		ck_assert(t.r.valid);
		tmodel_free(&t);
	}
}
END_TEST

/* "pytorch": a release's defaults (cm_pytorch.c): softmax keeps its input
 * up to 1.10; zero_grad zeros, for-loop optimizers and eager attention up
 * to 1.13; SDPA from 2.0, where an SDPA kernel with an older release is
 * refused */
START_TEST(test_pytorch_release)
{
	static const struct { const char *s; int v; } parse[] = {
		{ "1.10", 110 }, { "1.10.2", 110 }, { "1.13", 113 }, { "2.0", 200 }, { "2.4.1", 204 },
		{ "13", -1 }, { "1.", -1 }, { "1.x", -1 }, { "0.4", -1 }, { "1.100", -1 }, { "2.4.", -1 },
		{ "v2.4", -1 }, { "", -1 }, { "2.4 ", -1 },
	};
	struct dn_error err;

	dn_error_clear(&err);
	for (size_t i = 0; i < sizeof parse / sizeof parse[0]; i++)
		ck_assert_msg(cm_pytorch_parse(parse[i].s) == parse[i].v, "\"%s\" -> %d", parse[i].s,
		    cm_pytorch_parse(parse[i].s));
	{
		struct cm_workload wl = test_workload(1);
		cm_pytorch_apply(110, &wl);
		ck_assert(wl.softmax_keeps_input && wl.keep_grads && wl.optimizer_impl == CM_OPT_IMPL_FOR_LOOP);
		ck_assert_int_eq(wl.attention, CM_ATTN_EAGER);
		ck_assert_int_eq(cm_pytorch_check(&wl, "--attention", &err), 0);
		cm_pytorch_apply(111, &wl);
		ck_assert(!wl.softmax_keeps_input && wl.keep_grads && wl.optimizer_impl == CM_OPT_IMPL_FOR_LOOP);
		wl.attention = CM_ATTN_FLASH;       /* given explicitly after the release */
		ck_assert_int_eq(cm_pytorch_check(&wl, "--attention", &err), -1);
		ck_assert_str_eq(err.path, "--attention");
		cm_pytorch_apply(200, &wl);
		ck_assert(!wl.softmax_keeps_input && !wl.keep_grads && wl.optimizer_impl == CM_OPT_IMPL_FOREACH);
		ck_assert_int_eq(wl.attention, CM_ATTN_SDPA);
		ck_assert_int_eq(wl.pytorch, 200);
		ck_assert_int_eq(cm_pytorch_check(&wl, "--attention", &err), 0);
	}
}
END_TEST

/* One 3x3 convolution 256 -> 256 channels on 56 x 56 at batch 64 (60 G
 * MACs, compute bound), fp32, its training step on `dev`. */
static double
conv_step_seconds(const struct cm_workload *wl, const struct cm_device *dev)
{
	static const char text[] = "{\"dnnsat_model\": 1, \"name\": \"conv\", \"hyperparameters\": "
	    "{\"batch_size\": {\"type\": \"int\", \"default\": 64, \"min\": 1, \"max\": 1024}}, "
	    "\"inputs\": [{\"name\": \"x\", \"shape\": [\"batch_size\", 256, 56, 56]}], "
	    "\"layers\": [{\"op\": \"conv2d\", \"out_channels\": 256, \"kernel\": 3, \"padding\": 1}]}";
	json_error_t jerr;
	json_t *root = json_loads(text, 0, &jerr);
	struct tmodel t;
	double s;

	ck_assert_msg(root != NULL, "%s", jerr.text);
	memset(&t, 0, sizeof t);
	ck_assert_msg(cm_def_load_json(root, &t.def, &t.err) == 0, "%s", t.err.message);
	json_decref(root);
	ck_assert_msg(tmodel_build_def_on(&t, wl, dev) == 0, "%s", t.err.message);
	tmodel_eval(&t);
	s = t.r.lat_train;
	tmodel_free(&t);
	return s;
}

/* fp32 convolutions take TF32 tensor cores where the GPU has them, as
 * PyTorch's cuDNN does by default (torch.backends.cudnn.allow_tf32, on
 * since 1.7; h200_env.json records it on for the H200 runs); matrix
 * products have their own flag (tf32), off since 1.12. Until cost model
 * 1.4.7 fp32 convolutions ran at the FP32 rate unless tf32 was set, and an
 * H200's ResNet-50 training step at batch 256 was 398 ms against 117 ms
 * measured (tests/cli/test_h200.py). */
START_TEST(test_cudnn_tf32)
{
	struct cm_workload wl = test_workload(1);
	struct cm_device a100 = dev_a100(), v100 = dev_v100();
	double tf32, fp32;

	tf32 = conv_step_seconds(&wl, &a100);
	wl.no_cudnn_tf32 = 1;
	fp32 = conv_step_seconds(&wl, &a100);
	/* 156 TFLOP/s at the tensor-core efficiency against 19.5 at the FP32
	 * convolution's: faster, not the 8x of the peaks (2.25x since cost
	 * model 1.4.9 prices FP32 3x3 convolutions as cuDNN's Winograd
	 * reaches, DeepBench's 1.39 of the FP32 peak; 2.5x and more before) */
	ck_assert_msg(fp32 > 2.0 * tf32 && fp32 < 8.0 * tf32, "fp32 %g s, tf32 %g s", fp32, tf32);
	/* no TF32 on a V100: the flag changes nothing */
	wl.no_cudnn_tf32 = 0;
	tf32 = conv_step_seconds(&wl, &v100);
	wl.no_cudnn_tf32 = 1;
	ck_assert(conv_step_seconds(&wl, &v100) == tf32);
	/* the releases: no TF32 before 1.7; both flags on in 1.7-1.11; cuDNN's
	 * alone from 1.12 */
	cm_pytorch_apply(106, &wl);
	ck_assert(wl.no_cudnn_tf32 && !wl.tf32);
	cm_pytorch_apply(110, &wl);
	ck_assert(!wl.no_cudnn_tf32 && wl.tf32);
	cm_pytorch_apply(112, &wl);
	ck_assert(!wl.no_cudnn_tf32 && !wl.tf32);
	cm_pytorch_apply(211, &wl);
	ck_assert(!wl.no_cudnn_tf32 && !wl.tf32);
}
END_TEST

START_TEST(test_fused_attention_time)
{
	struct cm_workload wl = test_workload(1);
	struct cm_device a100 = dev_a100();
	struct tmodel t;
	int64_t macs_full, macs_causal;

	/* the two products: 2 * N * h * L^2 * d MACs; causal kernels skip the
	 * tiles above the diagonal: L(L+1)/2 pairs */
	wl.precision = CM_PREC_MIXED_BF16;
	wl.attention = CM_ATTN_FLASH;
	attn_model(&t, &wl, &a100, 2, 64, 64, 4, 0.0, 0);
	macs_full = t.r.macs;
	tmodel_free(&t);
	attn_model(&t, &wl, &a100, 2, 64, 64, 4, 0.0, 1);
	macs_causal = t.r.macs;
	tmodel_free(&t);
	ck_assert_int_eq(macs_full - macs_causal, 2LL * 2 * 4 * 16 * (64 * 64 - 64 * 65 / 2));
}
END_TEST

START_TEST(test_sdpa_dispatch)
{
	struct cm_workload wl = test_workload(1);
	struct cm_device a100 = dev_a100(), v100 = dev_v100(), unknown = test_device();

	wl.attention = CM_ATTN_SDPA;
	wl.precision = CM_PREC_MIXED_FP16;
	ck_assert_int_eq(cm_attention_resolve(&wl, &a100), CM_ATTN_FLASH);
	ck_assert_int_eq(cm_attention_resolve(&wl, &v100), CM_ATTN_MEM_EFFICIENT);
	wl.precision = CM_PREC_BF16;
	ck_assert_int_eq(cm_attention_resolve(&wl, &a100), CM_ATTN_FLASH);
	wl.precision = CM_PREC_FP32;
	ck_assert_int_eq(cm_attention_resolve(&wl, &a100), CM_ATTN_MEM_EFFICIENT);
	/* no compute capability given: bf16 arithmetic means sm80 or newer */
	unknown.cc_major = 0;
	unknown.cc_minor = 0;
	ck_assert_int_eq(cm_device_cc(&unknown), 80);
	unknown.peak_bf16 = 0;
	ck_assert_int_eq(cm_device_cc(&unknown), 70);
	/* an explicit choice stays */
	wl.attention = CM_ATTN_EAGER;
	ck_assert_int_eq(cm_attention_resolve(&wl, &a100), CM_ATTN_EAGER);
	wl.attention = CM_ATTN_FLASH;
	ck_assert_int_eq(cm_attention_resolve(&wl, &v100), CM_ATTN_FLASH);
	{
		enum cm_attention a;
		ck_assert_int_eq(cm_attention_parse("mem_efficient", &a), 0);
		ck_assert_int_eq(a, CM_ATTN_MEM_EFFICIENT);
		ck_assert_int_eq(cm_attention_parse("flash2", &a), -1);
		ck_assert_str_eq(cm_attention_name(CM_ATTN_SDPA), "sdpa");
	}
}
END_TEST

START_TEST(test_device_rules)
{
	struct cm_workload wl = test_workload(1);
	struct cm_device a100 = dev_a100(), v100 = dev_v100();
	struct tmodel t;

	/* flash on a V100: invalid, the rule named */
	wl.precision = CM_PREC_MIXED_FP16;
	wl.attention = CM_ATTN_FLASH;
	attn_model(&t, &wl, &v100, 2, 64, 64, 4, 0.0, 0);
	ck_assert(!t.r.valid);
	ck_assert(has_violation(&t.r, "flash attention needs compute capability >= 8.0"));
	tmodel_free(&t);
	/* flash in fp32 */
	wl.precision = CM_PREC_FP32;
	attn_model(&t, &wl, &a100, 2, 64, 64, 4, 0.0, 0);
	ck_assert(!t.r.valid);
	ck_assert(has_violation(&t.r, "flash attention needs fp16 or bf16"));
	tmodel_free(&t);
	/* head_dim 512 > 256 */
	wl.precision = CM_PREC_FP16;
	attn_model(&t, &wl, &a100, 1, 8, 1024, 2, 0.0, 0);
	ck_assert(!t.r.valid);
	ck_assert(has_violation(&t.r, "head_dim <= 256"));
	tmodel_free(&t);
	/* sdpa on a V100 in fp16: the memory-efficient kernel, valid */
	wl.attention = CM_ATTN_SDPA;
	attn_model(&t, &wl, &v100, 2, 64, 64, 4, 0.0, 0);
	ck_assert(t.r.valid);
	tmodel_free(&t);
	/* bf16 on a V100: invalid whatever the kernel */
	wl.attention = CM_ATTN_EAGER;
	wl.precision = CM_PREC_MIXED_BF16;
	attn_model(&t, &wl, &v100, 2, 64, 64, 4, 0.0, 0);
	ck_assert(!t.r.valid);
	ck_assert(has_violation(&t.r, "bf16 needs a GPU with bf16"));
	tmodel_free(&t);
	attn_model(&t, &wl, &a100, 2, 64, 64, 4, 0.0, 0);
	ck_assert(t.r.valid);
	tmodel_free(&t);
}
END_TEST

/* ---- optimizers and accumulation: x [B, 4096] -> linear 1024 -> linear 10 ---- */

static const char mlp_text[] =
    "{\"dnnsat_model\": 1, \"name\": \"mlp2\", \"hyperparameters\": {"
    "\"b\": {\"type\": \"int\", \"default\": 65536}},"
    "\"inputs\": [{\"name\": \"x\", \"shape\": [\"b\", 4096], \"dtype\": \"float\"}],"
    "\"layers\": [{\"op\": \"linear\", \"out_features\": 1024}, {\"op\": \"relu\"},"
    " {\"op\": \"linear\", \"out_features\": 10}]}";

/* what the caching allocator gives a request of `b` bytes (mem_profile) */
static int64_t
alloc(int64_t b)
{
	struct cm_device d = test_device();
	struct mem_profile p;
	int64_t r;

	mem_profile_pytorch(&d, &p);
	r = b <= p.small_limit ? p.round_bytes : p.large_round;

	return (b + r - 1) / r * r;
}

/* Builds and evaluates the model of `text` trained with optimizer o,
 * `accum` micro-batches and step implementation impl. */
static void
optimizer_eval(struct tmodel *t, const char *text, enum cm_optimizer o, int accum, int impl)
{
	struct cm_workload wl = test_workload(1);

	wl.optimizer = o;
	wl.grad_accum = accum;
	wl.optimizer_impl = impl;
	ck_assert_msg(tmodel_from_text(t, text, &wl) == 0, "%s", t->err.message);
	tmodel_eval(t);
}

static void
mlp_eval(struct tmodel *t, enum cm_optimizer o, int accum)
{
	optimizer_eval(t, mlp_text, o, accum, CM_OPT_IMPL_FOREACH);
}

START_TEST(test_optimizer_state)
{
	/* the weights: W1 [1024, 4096], b1 [1024], W2 [10, 1024], b2 [10] */
	const int64_t w1 = 1024 * 4096, b1 = 1024, w2 = 10 * 1024, b2 = 10;
	const int64_t one = alloc(w1 * 4) + alloc(b1 * 4) + alloc(w2 * 4) + alloc(b2 * 4);
	/* bitsandbytes (>= 0.44): uint8 states + fp32 absmax per 256 elements
	 * for tensors of >= 4096 elements (W1, W2), fp32 states below (b1, b2) */
	const int64_t adam8 = 2 * (alloc(w1) + alloc(w1 / 256 * 4)) + 2 * alloc(b1 * 4) +
	    2 * (alloc(w2) + alloc(40 * 4)) + 2 * alloc(b2 * 4);
	/* Adafactor: fp32 row (out) and column (in) factors of W1 and W2, the
	 * full fp32 second moment of the biases */
	const int64_t adafactor = alloc(1024 * 4) + alloc(4096 * 4) + alloc(b1 * 4) +
	    alloc(10 * 4) + alloc(1024 * 4) + alloc(b2 * 4);
	static const struct { enum cm_optimizer o; int copies; } cases[] = {
		{ CM_OPT_SGD, 0 }, { CM_OPT_SGD_MOMENTUM, 1 }, { CM_OPT_LION, 1 }, { CM_OPT_ADAM, 2 },
		{ CM_OPT_ADAMW, 2 }, { CM_OPT_ADAM_8BIT, -1 }, { CM_OPT_ADAFACTOR, -2 },
	};
	struct tmodel t;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int64_t want = cases[i].copies >= 0 ? cases[i].copies * one :
		    cases[i].copies == -1 ? adam8 : adafactor;
		mlp_eval(&t, cases[i].o, 1);
		/* batch 65536: activations dwarf everything, the peak is in
		 * backward, where the breakdown's optimizer share is the state */
		ck_assert_int_ne(t.r.peak_phase, CM_PHASE_OPTIMIZER);
		ck_assert_msg(t.r.mem_breakdown[CM_MEM_OPTIMIZER] == want, "%s: %lld, want %lld",
		    cm_optimizer_name(cases[i].o), (long long)t.r.mem_breakdown[CM_MEM_OPTIMIZER],
		    (long long)want);
		tmodel_free(&t);
	}
	/* 8-bit Adam: about a quarter of Adam's state */
	ck_assert(adam8 * 4 < 2 * one * 1.05 && adam8 * 4 > 2 * one * 0.95);
	{
		enum cm_optimizer o;
		int impl;
		ck_assert_int_eq(cm_optimizer_parse("adam_8bit", &o, &impl), 0);
		ck_assert_int_eq(o, CM_OPT_ADAM_8BIT);
		ck_assert_int_eq(cm_optimizer_parse("lion", &o, &impl), 0);
		ck_assert_str_eq(cm_optimizer_name(CM_OPT_ADAFACTOR), "adafactor");
	}
}
END_TEST

START_TEST(test_grad_accum)
{
	const int64_t grads = alloc(1024 * 4096 * 4) + alloc(1024 * 4) + alloc(10 * 1024 * 4) + alloc(10 * 4);
	struct tmodel t1, t2, t4;

	mlp_eval(&t1, CM_OPT_ADAM, 1);
	mlp_eval(&t2, CM_OPT_ADAM, 2);
	mlp_eval(&t4, CM_OPT_ADAM, 4);
	/* the same micro-batch: the same activations */
	ck_assert_int_eq(t1.r.act_saved_bytes, t2.r.act_saved_bytes);
	/* every weight gradient is alive wherever the peak of a later
	 * micro-batch falls; without accumulation the forward has none */
	ck_assert_int_ge(t2.r.mem_breakdown[CM_MEM_GRADIENTS], grads);
	ck_assert_int_ge(t2.r.mem_train, t1.r.mem_train);
	ck_assert_int_eq(t2.r.mem_train, t4.r.mem_train);
	/* time: forward + backward per micro-batch, one optimizer step */
	{
		double fb = t2.r.lat_train - t1.r.lat_train;
		ck_assert(fb > 0);
		ck_assert(fabs((t4.r.lat_train - t1.r.lat_train) - 3 * fb) <= 1e-9 * t4.r.lat_train);
		ck_assert(t1.r.lat_train - fb > 0);     /* the optimizer step */
	}
	tmodel_free(&t1);
	tmodel_free(&t2);
	tmodel_free(&t4);
}
END_TEST

/* Mixed precision as autocast runs it (ob_autocast, op_build.h): x [2, 40,
 * 64] (the loader's fp32 batch) through linear, softmax, layernorm, a
 * residual add of the linear's fp16 output to the fp32 norm, layernorm, linear. Pure
 * fp16 keeps 2 bytes an element everywhere; under autocast the first
 * linear keeps its 2-byte cast of x, softmax keeps its fp32 result, the
 * norm's result is fp32, so is its sum with the linear's fp16 output
 * (promotion), which a second norm keeps, and the last linear keeps a
 * 2-byte cast of that norm's fp32 result. Before autocast was modelled,
 * softmax and the norm kept half of this. */
static int64_t
op_saved(struct tmodel *t, int k)
{
	struct cm_op_report r;

	cm_model_op_report(t->m, t->scratch, k, &r);
	return r.saved_bytes;
}

START_TEST(test_autocast_dtypes)
{
	static const char layers[] = "[{\"op\": \"linear\", \"out_features\": 64, \"name\": \"a\"},"
	    " {\"op\": \"softmax\"}, {\"op\": \"layernorm\", \"name\": \"n\"},"
	    " {\"op\": \"add\", \"inputs\": [\"a\", \"n\"]}, {\"op\": \"layernorm\"},"
	    " {\"op\": \"linear\", \"out_features\": 64}]";
	struct cm_workload wl = test_workload(1);
	struct cm_device dev = dev_a100();
	struct tmodel h, m;
	const int64_t e = 2 * 40 * 64;

	wl.precision = CM_PREC_FP16;
	layers_model(&h, &wl, &dev, layers);
	wl.precision = CM_PREC_MIXED_FP16;
	layers_model(&m, &wl, &dev, layers);
	ck_assert_int_eq(op_saved(&h, 0), 2 * e);
	ck_assert_int_eq(op_saved(&m, 0), 2 * e);       /* the fp16 cast of the fp32 batch */
	ck_assert_int_eq(op_saved(&h, 1), 2 * e);
	ck_assert_int_eq(op_saved(&m, 1), 4 * e);       /* softmax's fp32 result */
	ck_assert_int_eq(op_saved(&m, 4) - op_saved(&h, 4), 2 * e);     /* the second norm's fp32 input: the sum */
	ck_assert_int_eq(op_saved(&m, 5), 2 * e);       /* the cast of the fp32 norm */
	ck_assert_int_gt(m.r.mem_train, h.r.mem_train);
	tmodel_free(&h);
	tmodel_free(&m);
}
END_TEST

/* ---- gradient checkpointing: 4 blocks of linear(4E), gelu, linear(E) ---- */

static const char blocks_text[] =
    "{\"dnnsat_model\": 1, \"name\": \"blocks\", \"hyperparameters\": {"
    "\"b\": {\"type\": \"int\", \"default\": 8}},"
    "\"inputs\": [{\"name\": \"x\", \"shape\": [\"b\", 128, 256], \"dtype\": \"float\"}],"
    "\"layers\": [{\"repeat\": 4, \"body\": [{\"op\": \"linear\", \"out_features\": 1024},"
    " {\"op\": \"gelu\"}, {\"op\": \"linear\", \"out_features\": 256}]}]}";

START_TEST(test_checkpointing)
{
	struct cm_workload wl = test_workload(1);
	struct tmodel t0, t1;
	double block_fwd = 0;

	ck_assert_msg(tmodel_from_text(&t0, blocks_text, &wl) == 0, "%s", t0.err.message);
	tmodel_eval(&t0);
	wl.checkpointing = 1;
	ck_assert_msg(tmodel_from_text(&t1, blocks_text, &wl) == 0, "%s", t1.err.message);
	tmodel_eval(&t1);
	/* each block keeps its input (the first linear's input, made outside
	 * it); the gelu's input and the second linear's input (8 x 128 x 1024
	 * fp32 each) are recomputed */
	ck_assert_int_eq(t0.r.act_saved_bytes - t1.r.act_saved_bytes, 4LL * 2 * 8 * 128 * 1024 * 4);
	ck_assert_int_lt(t1.r.mem_train, t0.r.mem_train);
	/* the backward of a block holds that block's recomputed activations */
	ck_assert_int_ge(t1.r.mem_breakdown[CM_MEM_ACTIVATIONS], 2LL * 8 * 128 * 1024 * 4);
	/* time: the blocks' forward once more */
	for (int k = 0; k < cm_model_nops(t1.m); k++) {
		struct cm_op_report r;
		cm_model_op_report(t1.m, t1.scratch, k, &r);
		if (strncmp(r.path, "$.layers[0][", 12) == 0)
			block_fwd += r.fwd_seconds;
	}
	ck_assert(block_fwd > 0);
	ck_assert_msg(fabs(t1.r.lat_train - t0.r.lat_train - block_fwd) <= 1e-9 * t1.r.lat_train,
	    "step %g vs %g + %g", t1.r.lat_train, t0.r.lat_train, block_fwd);
	tmodel_free(&t0);
	tmodel_free(&t1);
}
END_TEST

/* ---- "checkpoint": true on layer items (what the CNN templates mark) ---- */

/* x [b, 128, 256]; def blk: linear(1024), gelu, linear(256) (keeps, inside:
 * gelu's input and the second linear's input, 8 x 128 x 1024 fp32 each);
 * `layers` the model's layer list */
static int
marked_model(struct tmodel *t, const struct cm_workload *wl, const char *layers)
{
	char text[2048];

	snprintf(text, sizeof text, "{\"dnnsat_model\": 1, \"name\": \"marked\", \"hyperparameters\": {"
	    "\"b\": {\"type\": \"int\", \"default\": 8}},"
	    "\"inputs\": [{\"name\": \"x\", \"shape\": [\"b\", 128, 256], \"dtype\": \"float\"}],"
	    "\"defs\": {\"blk\": {\"body\": [{\"op\": \"linear\", \"out_features\": 1024},"
	    " {\"op\": \"gelu\"}, {\"op\": \"linear\", \"out_features\": 256}]},"
	    " \"stack\": {\"body\": [{\"repeat\": 3, \"checkpoint\": true, \"body\": [{\"use\": \"blk\"}]}]}},"
	    "\"layers\": %s}", layers);
	if (tmodel_from_text(t, text, wl) != 0)
		return -1;
	tmodel_eval(t);
	return 0;
}

/* act_saved_bytes without and with checkpointing, and the warning */
static void
marked_saved(const char *layers, int64_t *plain, int64_t *ckpt, int *warned)
{
	struct cm_workload wl = test_workload(1);
	struct tmodel t0, t1;

	ck_assert_msg(marked_model(&t0, &wl, layers) == 0, "%s", t0.err.message);
	wl.checkpointing = 1;
	ck_assert_msg(marked_model(&t1, &wl, layers) == 0, "%s", t1.err.message);
	*plain = t0.r.act_saved_bytes;
	*ckpt = t1.r.act_saved_bytes;
	*warned = cm_model_checkpointing_warning(t1.m) != NULL;
	ck_assert_ptr_null(cm_model_checkpointing_warning(t0.m));
	tmodel_free(&t0);
	tmodel_free(&t1);
}

START_TEST(test_checkpoint_marks)
{
	const int64_t inner = 2LL * 8 * 128 * 1024 * 4, edge = 8LL * 128 * 256 * 4;
	int64_t p, c;
	int warned;
	struct tmodel t;
	struct cm_workload wl = test_workload(1);

	/* two marked uses are two blocks; the third, unmarked, keeps all */
	marked_saved("[{\"use\": \"blk\", \"checkpoint\": true}, {\"use\": \"blk\", \"checkpoint\": true},"
	    " {\"use\": \"blk\"}]", &p, &c, &warned);
	ck_assert_int_eq(p - c, 2 * inner);
	ck_assert(!warned);
	/* a marked repeat inside a def: each copy a block */
	marked_saved("[{\"use\": \"stack\"}]", &p, &c, &warned);
	ck_assert_int_eq(p - c, 3 * inner);
	ck_assert(!warned);
	/* nested marks: the outermost is the block, so the edge between the
	 * two inner blocks (kept by the second one's first linear) is
	 * recomputed too */
	marked_saved("[{\"branches\": [[{\"use\": \"blk\", \"checkpoint\": true}, {\"use\": \"blk\", \"checkpoint\": true}]],"
	    " \"merge\": \"add\", \"checkpoint\": true}]", &p, &c, &warned);
	ck_assert_int_eq(p - c, 2 * inner + edge);
	/* a top-level repeat is blocks unless it says "checkpoint": false */
	marked_saved("[{\"repeat\": 2, \"body\": [{\"use\": \"blk\"}]}]", &p, &c, &warned);
	ck_assert_int_eq(p - c, 2 * inner);
	marked_saved("[{\"repeat\": 2, \"checkpoint\": false, \"body\": [{\"use\": \"blk\"}]}]", &p, &c, &warned);
	ck_assert_int_eq(p - c, 0);
	ck_assert(warned);
	/* no block at all: the same estimate, said in a warning (not silently) */
	marked_saved("[{\"use\": \"blk\"}, {\"use\": \"blk\"}]", &p, &c, &warned);
	ck_assert_int_eq(p - c, 0);
	ck_assert(warned);
	/* inference: checkpointing does nothing, said too */
	wl = test_workload(0);
	wl.checkpointing = 1;
	ck_assert_msg(marked_model(&t, &wl, "[{\"use\": \"stack\"}]") == 0, "%s", t.err.message);
	ck_assert_ptr_nonnull(strstr(cm_model_checkpointing_warning(t.m), "training only"));
	tmodel_free(&t);
	/* the field must be a boolean: the error names the item */
	wl = test_workload(1);
	ck_assert_int_ne(marked_model(&t, &wl, "[{\"use\": \"blk\", \"checkpoint\": 1}]"), 0);
	ck_assert_str_eq(t.err.path, "$.layers[0]");
	ck_assert_str_eq(t.err.message, "\"checkpoint\" must be true or false");
	tmodel_free(&t);
}
END_TEST

/* ---- fine-tuning: frozen weights and LoRA ---- */

/* x [b, 1, 256] -> linear(1024), gelu, linear(256): activations so small
 * that the optimizer step is the peak, whose breakdown is exactly every
 * weight gradient plus the optimizer's state and temporaries */
static const char tiny_text[] =
    "{\"dnnsat_model\": 1, \"name\": \"tiny\", \"hyperparameters\": {"
    "\"b\": {\"type\": \"int\", \"default\": 1}, \"r\": {\"type\": \"int\", \"default\": 4}},"
    "\"inputs\": [{\"name\": \"x\", \"shape\": [\"b\", 1, 256], \"dtype\": \"float\"}],"
    "\"layers\": [{\"op\": \"linear\", \"out_features\": 1024}, {\"op\": \"gelu\"},"
    " {\"op\": \"linear\", \"out_features\": 256}]}";

static void
lora_workload(struct cm_workload *wl, const char *rank_expr, int rank, const char *targets)
{
	struct dn_error err;

	memset(&err, 0, sizeof err);
	wl->ft.lora_rank = rank;
	snprintf(wl->ft.rank_expr, sizeof wl->ft.rank_expr, "%s", rank_expr != NULL ? rank_expr : "");
	ck_assert_msg(cm_ft_add_selectors(wl->ft.targets, &wl->ft.ntargets, targets, "targets", &err) == 0,
	    "%s", err.message);
}

/* The step's implementation, on tiny_text (below: the optimizer step is
 * the peak): foreach makes Adam's sqrt of the second moment for every
 * weight at once, for_loop two copies of the largest weight, fused none;
 * the states are the same. Hugging Face's optim names and what they
 * imply, and fused refused where torch.optim has no fused step. */
START_TEST(test_optimizer_impl)
{
	const int64_t w = alloc(1024 * 256 * 4), one = 2 * w + alloc(1024 * 4) + alloc(256 * 4);
	struct tmodel fe, fl, fu;
	struct cm_workload wl = test_workload(1);
	struct dn_error err;
	enum cm_optimizer o;
	int impl;

	optimizer_eval(&fe, tiny_text, CM_OPT_ADAMW, 1, CM_OPT_IMPL_FOREACH);
	optimizer_eval(&fl, tiny_text, CM_OPT_ADAMW, 1, CM_OPT_IMPL_FOR_LOOP);
	optimizer_eval(&fu, tiny_text, CM_OPT_ADAMW, 1, CM_OPT_IMPL_FUSED);
	ck_assert_int_eq(fe.r.peak_phase, CM_PHASE_OPTIMIZER);
	ck_assert_int_eq(fe.r.mem_breakdown[CM_MEM_OPTIMIZER], 3 * one);
	ck_assert_int_eq(fl.r.mem_breakdown[CM_MEM_OPTIMIZER], 2 * one + 2 * w);
	ck_assert_int_eq(fu.r.mem_breakdown[CM_MEM_OPTIMIZER], 2 * one);
	/* without the temporary the step is no longer the peak: backward is */
	ck_assert_int_eq(fu.r.peak_phase, CM_PHASE_BACKWARD);
	ck_assert(fu.r.mem_train < fe.r.mem_train && fe.r.mem_train - fu.r.mem_train <= one);
	tmodel_free(&fe);
	tmodel_free(&fl);
	tmodel_free(&fu);

	ck_assert_int_eq(cm_optimizer_parse("adamw_torch_fused", &o, &impl), 0);
	ck_assert(o == CM_OPT_ADAMW && impl == CM_OPT_IMPL_FUSED);
	ck_assert_int_eq(cm_optimizer_parse("ADAMW_TORCH", &o, &impl), 0);
	ck_assert(o == CM_OPT_ADAMW && impl == -1);
	ck_assert_int_eq(cm_optimizer_parse("adamw_hf", &o, &impl), 0);
	ck_assert(o == CM_OPT_ADAMW && impl == CM_OPT_IMPL_FOR_LOOP);
	ck_assert_int_eq(cm_optimizer_parse("paged_adamw_8bit", &o, &impl), 0);
	ck_assert_int_eq(o, CM_OPT_ADAM_8BIT);
	ck_assert_int_eq(cm_optimizer_parse("paged_adamw_32bit", &o, &impl), 0);
	ck_assert(o == CM_OPT_ADAMW && impl == CM_OPT_IMPL_FUSED);
	ck_assert_int_eq(cm_optimizer_parse("galore_adamw", &o, &impl), -2);
	ck_assert_int_eq(cm_optimizer_parse("adamw_torch_fusd", &o, &impl), -1);
	memset(&err, 0, sizeof err);
	cm_optimizer_refuse("galore_adamw", -2, "--optimizer", &err);
	ck_assert_msg(strstr(err.message, "\"galore_adamw\" is not modelled") != NULL, "%s", err.message);

	/* the implied implementation: applied, or contradicted */
	wl.optimizer = CM_OPT_ADAMW;
	ck_assert_int_eq(cm_optimizer_settle(&wl, CM_OPT_IMPL_FUSED, "adamw_torch_fused", 0, "impl", &err), 0);
	ck_assert_int_eq(wl.optimizer_impl, CM_OPT_IMPL_FUSED);
	wl.optimizer_impl = CM_OPT_IMPL_FOR_LOOP;
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(cm_optimizer_settle(&wl, CM_OPT_IMPL_FUSED, "adamw_torch_fused", 1, "impl", &err), -1);
	ck_assert_msg(strstr(err.message, "contradicts") != NULL, "%s", err.message);
	/* fused: Adam, AdamW, SGD only (training) */
	wl.optimizer_impl = CM_OPT_IMPL_FUSED;
	wl.optimizer = CM_OPT_SGD_MOMENTUM;
	ck_assert_int_eq(cm_optimizer_settle(&wl, -1, "", 1, "impl", &err), 0);
	wl.optimizer = CM_OPT_RMSPROP;
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(cm_optimizer_settle(&wl, -1, "", 1, "impl", &err), -1);
	ck_assert_msg(strstr(err.message, "not rmsprop") != NULL, "%s", err.message);
	wl.training = 0;
	ck_assert_int_eq(cm_optimizer_settle(&wl, -1, "", 1, "impl", &err), 0);
}
END_TEST

/* bitsandbytes' optimizers under Hugging Face's names, on mlp_text in
 * pure bf16 (the weights W1 [1024, 4096], b1 [1024], W2 [10, 1024], b2
 * [10]): its 32-bit ones keep fp32 states where torch.optim's and
 * lion-pytorch's are bf16; its 8-bit ones a uint8 state and an fp32
 * absmax per 256 values (fp32 under 4096 values); all update in place. */
static void
named_eval(struct tmodel *t, const char *name)
{
	struct cm_workload wl = test_workload(1);
	struct dn_error err;
	int impl;

	memset(&err, 0, sizeof err);
	wl.precision = CM_PREC_BF16;
	ck_assert_int_eq(cm_optimizer_parse(name, &wl.optimizer, &impl), 0);
	ck_assert_int_eq(cm_optimizer_settle(&wl, impl, name, 0, "impl", &err), 0);
	ck_assert_msg(tmodel_from_text(t, mlp_text, &wl) == 0, "%s", t->err.message);
	tmodel_eval(t);
}

START_TEST(test_bnb_optimizer_states)
{
	const int64_t w1 = 1024 * 4096, b1 = 1024, w2 = 10 * 1024, b2 = 10;
	const int64_t half = alloc(w1 * 2) + alloc(b1 * 2) + alloc(w2 * 2) + alloc(b2 * 2);
	const int64_t full = alloc(w1 * 4) + alloc(b1 * 4) + alloc(w2 * 4) + alloc(b2 * 4);
	const int64_t q8 = alloc(w1) + alloc(w1 / 256 * 4) + alloc(b1 * 4) + alloc(w2) + alloc(40 * 4) + alloc(b2 * 4);
	static const struct { const char *name; int copies; int64_t per; } cases[] = {
		{ "lion", 1, 0 }, { "lion_32bit", 1, 1 }, { "paged_lion_32bit", 1, 1 }, { "lion_8bit", 1, 2 },
		{ "paged_lion_8bit", 1, 2 }, { "rmsprop", 1, 0 }, { "rmsprop_bnb", 1, 1 }, { "rmsprop_bnb_32bit", 1, 1 },
		{ "rmsprop_bnb_8bit", 1, 2 }, { "adamw_torch", 2, 0 }, { "paged_adamw_32bit", 2, 1 },
		{ "adamw_bnb_8bit", 2, 2 }, { "paged_adamw_8bit", 2, 2 },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct tmodel t;
		int64_t want = cases[i].copies * (cases[i].per == 0 ? half : cases[i].per == 1 ? full : q8);
		named_eval(&t, cases[i].name);
		ck_assert_int_ne(t.r.peak_phase, CM_PHASE_OPTIMIZER);
		ck_assert_msg(t.r.mem_breakdown[CM_MEM_OPTIMIZER] == want, "%s: %lld, want %lld", cases[i].name,
		    (long long)t.r.mem_breakdown[CM_MEM_OPTIMIZER], (long long)want);
		tmodel_free(&t);
	}
}
END_TEST

START_TEST(test_lora_params_and_state)
{
	struct cm_workload wl = test_workload(1);
	struct tmodel full, lora, lora8;
	/* adapters of rank 4: A [4, in] and B [out, 4] per linear, fp32 */
	const int64_t a1 = 4 * 256, b1 = 1024 * 4, a2 = 4 * 1024, b2 = 256 * 4;
	const int64_t adapter_bytes = 4 * (a1 + b1 + a2 + b2);      /* each a multiple of 512 */

	ck_assert_msg(tmodel_from_text(&full, tiny_text, &wl) == 0, "%s", full.err.message);
	tmodel_eval(&full);
	lora_workload(&wl, NULL, 4, "linear");
	ck_assert_msg(tmodel_from_text(&lora, tiny_text, &wl) == 0, "%s", lora.err.message);
	tmodel_eval(&lora);
	/* the model's parameters are the same; only the adapters train */
	ck_assert_int_eq(full.r.params, 256 * 1024 + 1024 + 1024 * 256 + 256);
	ck_assert_int_eq(full.r.trainable_params, full.r.params);
	ck_assert_int_eq(lora.r.params, full.r.params);
	ck_assert_int_eq(lora.r.trainable_params, a1 + b1 + a2 + b2);
	/* extra forward MACs: rows * (in + out) * r per adapted linear */
	ck_assert_int_eq(lora.r.macs - full.r.macs, 1LL * (256 + 1024) * 4 + 1LL * (1024 + 256) * 4);
	/* the optimizer step: gradients and Adam's two fp32 states plus its
	 * foreach temporary for the adapters alone */
	ck_assert_int_eq(full.r.peak_phase, CM_PHASE_OPTIMIZER);
	ck_assert_int_eq(lora.r.peak_phase, CM_PHASE_OPTIMIZER);
	ck_assert_int_eq(lora.r.mem_breakdown[CM_MEM_GRADIENTS], adapter_bytes);
	ck_assert_int_eq(lora.r.mem_breakdown[CM_MEM_OPTIMIZER], 2 * adapter_bytes + adapter_bytes);
	ck_assert_int_eq(lora.r.mem_breakdown[CM_MEM_WEIGHTS], full.r.mem_breakdown[CM_MEM_WEIGHTS] + adapter_bytes);
	ck_assert_int_lt(lora.r.mem_train, full.r.mem_train);
	/* the rank as an expression over a hyperparameter: r=8 doubles them */
	wl.ft.ntargets = 0;
	lora_workload(&wl, "2 * r", 1, "linear");
	ck_assert_msg(tmodel_from_text(&lora8, tiny_text, &wl) == 0, "%s", lora8.err.message);
	tmodel_eval(&lora8);
	ck_assert_int_eq(lora8.r.trainable_params, 2 * (a1 + b1 + a2 + b2));
	lora8.cfg[1].i = 0;     /* r = 0: rank 0 breaks the rule rank >= 1 */
	tmodel_eval(&lora8);
	ck_assert(!lora8.r.valid);
	ck_assert_str_eq(lora8.r.violations[0].rule, "LoRA rank >= 1");
	tmodel_free(&full);
	tmodel_free(&lora);
	tmodel_free(&lora8);
}
END_TEST

/* What LoRA keeps for backward on one linear (b rows): the input once (by
 * lora_A), the r-wide intermediate (by lora_B); the frozen base keeps
 * nothing for itself */
START_TEST(test_lora_saved)
{
	struct cm_workload wl = test_workload(1);
	struct tmodel t;
	const char *text = "{\"dnnsat_model\": 1, \"name\": \"one\", \"hyperparameters\": {},"
	    "\"inputs\": [{\"name\": \"x\", \"shape\": [64, 512], \"dtype\": \"float\"}],"
	    "\"layers\": [{\"op\": \"linear\", \"out_features\": 512}, {\"op\": \"relu\"},"
	    " {\"op\": \"linear\", \"out_features\": 512}]}";
	int64_t base = 0, a = 0, b = 0, lin0 = 0;

	lora_workload(&wl, NULL, 16, "$.layers[2]");
	ck_assert_msg(tmodel_from_text(&t, text, &wl) == 0, "%s", t.err.message);
	tmodel_eval(&t);
	ck_assert_int_eq(t.r.trainable_params, 16 * 512 + 512 * 16);
	for (int k = 0; k < cm_model_nops(t.m); k++) {
		struct cm_op_report r;
		cm_model_op_report(t.m, t.scratch, k, &r);
		if (strcmp(r.path, "$.layers[0]") == 0)
			lin0 = r.saved_bytes;
		else if (strcmp(r.path, "$.layers[1]") == 0)
			ck_assert_int_eq(r.saved_bytes, 0);     /* relu: nothing upstream needs a gradient */
		else if (strcmp(r.path, "$.layers[2].base_layer") == 0)
			base = r.saved_bytes;
		else if (strcmp(r.path, "$.layers[2].lora_A") == 0)
			a = r.saved_bytes;
		else if (strcmp(r.path, "$.layers[2].lora_B") == 0)
			b = r.saved_bytes;
	}
	ck_assert_int_eq(lin0, 0);      /* frozen, on the input: no autograd node */
	ck_assert_int_eq(base, 0);
	ck_assert_int_eq(a, 64 * 512 * 4);
	ck_assert_int_eq(b, 64 * 16 * 4);
	tmodel_free(&t);
}
END_TEST

START_TEST(test_frozen_prefix)
{
	struct cm_workload wl = test_workload(1);
	struct dn_error err;
	struct tmodel full, fr, all;
	const int64_t mib = 1 << 20;    /* 8 x 128 x 256 fp32 */

	memset(&err, 0, sizeof err);
	ck_assert_msg(tmodel_from_text(&full, blocks_text, &wl) == 0, "%s", full.err.message);
	tmodel_eval(&full);
	ck_assert_int_eq(cm_ft_add_selectors(wl.ft.freeze, &wl.ft.nfreeze, "$.layers[0][0],$.layers[0][1]",
	    "--freeze", &err), 0);
	ck_assert_msg(tmodel_from_text(&fr, blocks_text, &wl) == 0, "%s", fr.err.message);
	tmodel_eval(&fr);
	/* the frozen first two blocks need no backward: they keep nothing (in
	 * full training each keeps its input, 1 MiB, the gelu's input and the
	 * second linear's input, 4 MiB each); block 2 keeps its input either way */
	ck_assert_int_eq(full.r.act_saved_bytes - fr.r.act_saved_bytes, 2 * (mib + 4 * mib + 4 * mib));
	for (int k = 0; k < cm_model_nops(fr.m); k++) {
		struct cm_op_report r;
		cm_model_op_report(fr.m, fr.scratch, k, &r);
		if (strncmp(r.path, "$.layers[0][0]", 14) == 0 || strncmp(r.path, "$.layers[0][1]", 14) == 0)
			ck_assert_msg(r.saved_bytes == 0, "%s keeps %lld", r.path, (long long)r.saved_bytes);
	}
	ck_assert_int_eq(fr.r.params, full.r.params);
	ck_assert_int_eq(fr.r.trainable_params, full.r.params / 2);
	ck_assert_int_lt(fr.r.mem_train, full.r.mem_train);
	ck_assert(fr.r.train_flops < full.r.train_flops);
	/* everything frozen: nothing to keep, no gradients at all */
	wl.ft.nfreeze = 0;
	ck_assert_int_eq(cm_ft_add_selectors(wl.ft.freeze, &wl.ft.nfreeze, "all", "--freeze", &err), 0);
	ck_assert_msg(tmodel_from_text(&all, blocks_text, &wl) == 0, "%s", all.err.message);
	tmodel_eval(&all);
	ck_assert_int_eq(all.r.act_saved_bytes, 0);
	ck_assert_int_eq(all.r.trainable_params, 0);
	ck_assert_int_eq(all.r.train_flops, full.r.flops);
	/* --train takes a block back: "all but the last block" */
	wl.ft.ntrain = 0;
	ck_assert_int_eq(cm_ft_add_selectors(wl.ft.train, &wl.ft.ntrain, "$.layers[0][3]", "--train", &err), 0);
	tmodel_free(&all);
	ck_assert_msg(tmodel_from_text(&all, blocks_text, &wl) == 0, "%s", all.err.message);
	tmodel_eval(&all);
	ck_assert_int_eq(all.r.trainable_params, full.r.params / 4);
	ck_assert_int_eq(full.r.act_saved_bytes - all.r.act_saved_bytes, 3 * (mib + 4 * mib + 4 * mib));
	/* unknown selectors are named: one that is no name when read, one
	 * that names no module of the model when the model is built, with
	 * the closest names */
	ck_assert_int_eq(cm_ft_add_selectors(wl.ft.freeze, &wl.ft.nfreeze, "embed ding", "--freeze", &err), -1);
	ck_assert_str_eq(err.path, "--freeze");
	ck_assert(strstr(err.message, "unknown selector \"embed ding\"") != NULL);
	wl.ft.nfreeze = 0;
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(cm_ft_add_selectors(wl.ft.freeze, &wl.ft.nfreeze, "layernorm,embeding", "--freeze", &err), 0);
	tmodel_free(&all);
	ck_assert_int_eq(tmodel_from_text(&all, blocks_text, &wl), -1);
	ck_assert_str_eq(all.err.path, "$.workload.freeze[1]");
	ck_assert_msg(strstr(all.err.message, "unknown selector \"embeding\"") != NULL &&
	    strstr(all.err.message, "did you mean embedding") != NULL, "%s", all.err.message);
	tmodel_free(&full);
	tmodel_free(&fr);
	tmodel_free(&all);
}
END_TEST

/* LoRA fine-tuning of GPT-2 (2 layers, 2 x 128 tokens): less memory than
 * full fine-tuning, the adapters on c_attn alone */
START_TEST(test_lora_gpt)
{
	struct cm_workload wl = test_workload(1);
	struct tmodel full, lora;

	ck_assert_msg(tmodel_from_preset(&full, "gpt2", &wl) == 0, "%s", full.err.message);
	lora_workload(&wl, NULL, 8, "attention.q,attention.v");
	ck_assert_msg(tmodel_from_preset(&lora, "gpt2", &wl) == 0, "%s", lora.err.message);
	for (int i = 0; i < 2; i++) {
		struct tmodel *t = i ? &lora : &full;
		ck_assert_int_eq(cm_config_set(t->def, "n_layer", "2", t->cfg, &t->err), 0);
		ck_assert_int_eq(cm_config_set(t->def, "seq_len", "128", t->cfg, &t->err), 0);
		ck_assert_int_eq(cm_config_set(t->def, "batch_size", "2", t->cfg, &t->err), 0);
		tmodel_eval(t);
	}
	ck_assert_int_eq(lora.r.params, full.r.params);
	/* c_attn (fused: q and v pick it) per layer: A [8, 768] + B [2304, 8] */
	ck_assert_int_eq(lora.r.trainable_params, 2 * (8 * 768 + 2304 * 8));
	ck_assert_int_eq(lora.r.macs - full.r.macs, 2LL * 2 * 128 * (768 + 2304) * 8);
	ck_assert_int_lt(lora.r.act_saved_bytes, full.r.act_saved_bytes);
	ck_assert_int_lt(lora.r.mem_train, full.r.mem_train);
	tmodel_free(&full);
	tmodel_free(&lora);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("workload");
	TCase *t = tcase_create("workload");

	tcase_set_timeout(t, 120);
	tcase_add_test(t, test_attention_saved_bytes);
	tcase_add_test(t, test_attention_core);
	tcase_add_test(t, test_softmax_keeps_input);
	tcase_add_test(t, test_pytorch_release);
	tcase_add_test(t, test_fused_attention_time);
	tcase_add_test(t, test_cudnn_tf32);
	tcase_add_test(t, test_sdpa_dispatch);
	tcase_add_test(t, test_device_rules);
	tcase_add_test(t, test_optimizer_state);
	tcase_add_test(t, test_grad_accum);
	tcase_add_test(t, test_optimizer_impl);
	tcase_add_test(t, test_bnb_optimizer_states);
	tcase_add_test(t, test_checkpointing);
	tcase_add_test(t, test_checkpoint_marks);
	tcase_add_test(t, test_lora_params_and_state);
	tcase_add_test(t, test_lora_saved);
	tcase_add_test(t, test_frozen_prefix);
	tcase_add_test(t, test_lora_gpt);
	tcase_add_test(t, test_autocast_dtypes);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	return run_suite(suite(), 1);
}
