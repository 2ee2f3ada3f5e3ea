/*
 * test_modern.c - the operators and templates of models people tune now
 * (cost model 1.3.0): rmsnorm, swiglu, rotary, parameter, grouped-query
 * attention, and the llama and vit templates. Parameter counts are checked
 * exactly against the published ones; MACs of a llama layer and the bytes
 * rmsnorm and rotary keep for backward against hand counts.
 */
#include "test_util.h"

/* Saved bytes of the first operator whose path ends with `suffix`. */
/* Saved bytes of the nth operator (from 0) whose path ends with suffix;
 * *params (when not NULL): its parameters. */
static int64_t
op_saved_nth(struct tmodel *t, const char *suffix, int nth, int64_t *params)
{
	size_t n = strlen(suffix);

	for (int k = 0; k < cm_model_nops(t->m); k++) {
		struct cm_op_report rep;
		size_t l;
		cm_model_op_report(t->m, t->scratch, k, &rep);
		l = strlen(rep.path);
		if (l >= n && strcmp(rep.path + l - n, suffix) == 0 && nth-- == 0) {
			if (params != NULL)
				*params = rep.params;
			return rep.saved_bytes;
		}
	}
	ck_abort_msg("too few operators ending with %s", suffix);
	return -1;
}

static int64_t
op_saved(struct tmodel *t, const char *suffix, int64_t *params)
{
	return op_saved_nth(t, suffix, 0, params);
}

static void
from_text(struct tmodel *t, const char *text, const struct cm_workload *wl)
{
	int rc = tmodel_from_text(t, text, wl);

	ck_assert_msg(rc == 0, "%s %s", t->err.path, t->err.message);
}

static void
from_preset(struct tmodel *t, const char *preset, const struct cm_workload *wl)
{
	int rc = tmodel_from_preset(t, preset, wl);

	ck_assert_msg(rc == 0, "%s: %s %s", preset, t->err.path, t->err.message);
}

START_TEST(test_published_params)
{
	static const struct { const char *preset; int64_t want; const char *gmacs; } cases[] = {
		/* Hugging Face meta-llama/Llama-2-7b-hf: 2 x 32000 x 4096 (embed_tokens,
		 * lm_head) + 32 x (4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096) + 4096;
		 * its model.safetensors.index.json total_size 13,476,839,424 bytes
		 * = 2 x 6,738,415,616 + 32 layers x 64 fp32 rotary inv_freq */
		{ "llama2-7b", 6738415616LL, NULL },
		/* TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T config.json
		 * (hidden 2048, intermediate 5632, 22 layers, 32 heads, 4 kv heads):
		 * 2 x 32000 x 2048 + 22 x (2 x 2048^2 + 2 x 2048 x 256 + 3 x 2048
		 * x 5632 + 2 x 2048) + 2048 */
		{ "tinyllama-1.1b", 1100048384LL, NULL },
		/* torchvision.models.ViT_B_16_Weights.IMAGENET1K_V1.meta: num_params,
		 * _ops (GFLOPS, counted as MACs) */
		{ "vit_b_16", 86567656LL, "17.564" },
		/* torchvision.models.ViT_L_16_Weights.IMAGENET1K_V1.meta */
		{ "vit_l_16", 304326632LL, "61.555" },
	};
	struct cm_workload wl = test_workload(1);

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct tmodel t;
		from_preset(&t, cases[i].preset, &wl);
		tmodel_set(&t, "batch_size", "1");
		tmodel_eval(&t);
		ck_assert(t.r.valid);
		ck_assert_msg(t.r.params == cases[i].want, "%s: %lld, published %lld", cases[i].preset,
		    (long long)t.r.params, (long long)cases[i].want);
		if (cases[i].gmacs != NULL) {
			char ours[32];
			snprintf(ours, sizeof ours, "%.3f", (double)t.r.macs / 1e9);
			ck_assert_msg(strcmp(ours, cases[i].gmacs) == 0, "%s: %s GMACs, torchvision %s",
			    cases[i].preset, ours, cases[i].gmacs);
		}
		printf("%-16s params %13lld (published %lld)\n", cases[i].preset, (long long)t.r.params,
		    (long long)cases[i].want);
		tmodel_free(&t);
	}
}
END_TEST

/* One llama layer at N=2, L=16, E=64, h=4 (d=16), kv=2, I=96, V=100. */
static void
small_llama(struct tmodel *t, const struct cm_workload *wl, const char *kv)
{
	from_preset(t, "llama2-7b", wl);
	tmodel_set(t, "batch_size", "2");
	tmodel_set(t, "seq_len", "16");
	tmodel_set(t, "hidden", "64");
	tmodel_set(t, "heads", "4");
	tmodel_set(t, "kv_heads", kv);
	tmodel_set(t, "intermediate", "96");
	tmodel_set(t, "vocab", "100");
	tmodel_set(t, "layers", "1");
	tmodel_eval(t);
}

START_TEST(test_llama_layer_macs)
{
	const int64_t n = 2, l = 16, e = 64, h = 4, d = 16, kvd = 2 * 16, i = 96, v = 100, rows = n * l;
	/* projections q, o (E x E), k, v (E x kv d), gate/up/down (E x I), lm_head */
	const int64_t linear = rows * (2 * e * e + 2 * e * kvd + 3 * e * i + e * v);
	struct cm_workload wl = test_workload(0);
	struct tmodel t;

	/* eager: q k^T and probs v over all L x L pairs */
	wl.attention = CM_ATTN_EAGER;
	small_llama(&t, &wl, "2");
	ck_assert(t.r.valid);
	ck_assert_int_eq(t.r.macs, linear + 2 * n * h * l * l * d);
	ck_assert_int_eq(t.r.params, 2 * v * e + (2 * e * e + 2 * e * kvd + 3 * e * i + 2 * e) + e);
	tmodel_free(&t);
	/* the memory-efficient kernel skips the pairs above the causal diagonal */
	wl.attention = CM_ATTN_MEM_EFFICIENT;
	small_llama(&t, &wl, "2");
	ck_assert_int_eq(t.r.macs, linear + 2 * n * h * (l * (l + 1) / 2) * d);
	tmodel_free(&t);
}
END_TEST

START_TEST(test_gqa_validity)
{
	struct cm_workload wl = test_workload(1);
	struct tmodel t;
	int64_t mha_saved;

	from_preset(&t, "tinyllama-1.1b", &wl);
	tmodel_set(&t, "batch_size", "1");
	tmodel_set(&t, "seq_len", "128");
	for (int kv = 1; kv <= 64; kv++) {
		char s[8];
		snprintf(s, sizeof s, "%d", kv);
		tmodel_set(&t, "kv_heads", s);
		tmodel_eval(&t);
		ck_assert_msg(t.r.valid == (32 % kv == 0), "kv_heads %d: valid %d", kv, t.r.valid);
	}
	tmodel_free(&t);

	/* kv_heads == heads is multi-head attention: no repeat_kv copy (HF
	 * returns its input), so fewer saved bytes than any kv_heads < heads
	 * keeps (the eager scores keep the repeated k, v) */
	wl.attention = CM_ATTN_EAGER;
	small_llama(&t, &wl, "4");
	mha_saved = t.r.act_saved_bytes;
	ck_assert_int_eq(op_saved(&t, "k_repeat", NULL), 0);
	tmodel_free(&t);
	small_llama(&t, &wl, "2");
	ck_assert(t.r.valid);
	ck_assert_int_lt(t.r.act_saved_bytes, mha_saved + 2 * (2 * 4 * 16 * 16) * 4);
	tmodel_free(&t);
	small_llama(&t, &wl, "3");
	ck_assert(!t.r.valid);
	tmodel_free(&t);
}
END_TEST

START_TEST(test_rmsnorm_saved)
{
	static const char model[] =
	    "{\"dnnsat_model\": 1, \"name\": \"rms\", \"hyperparameters\": {\"n\": {\"type\": \"int\", \"default\": 2,"
	    " \"min\": 1, \"max\": 64}}, \"inputs\": [{\"name\": \"x\", \"shape\": [\"n\", 8, 16], \"dtype\": \"float\"}],"
	    " \"layers\": [{\"op\": \"linear\", \"out_features\": 16}, {\"op\": \"rmsnorm\", \"eps\": 1e-6},"
	    " {\"op\": \"linear\", \"out_features\": 4}]}";
	struct cm_workload wl = test_workload(1);
	struct tmodel t;
	int64_t params;

	from_text(&t, model, &wl);
	tmodel_eval(&t);
	/* its input (2 x 8 x 16 fp32 = 1,024 bytes) and an fp32 rstd per row
	 * (16 rows x 4 = 64), as aten's _fused_rms_norm keeps them */
	ck_assert_int_eq(op_saved(&t, "[1]", &params), 1024 + 64);
	ck_assert_int_eq(params, 16);                   /* weight, no bias */
	tmodel_free(&t);
}
END_TEST

START_TEST(test_rotary_and_swiglu)
{
	struct cm_workload wl = test_workload(1);
	struct tmodel t;
	int64_t params;

	wl.attention = CM_ATTN_EAGER;
	small_llama(&t, &wl, "2");
	/* q's rotary holds cos and sin, [1, L, d] each (fp32): 2 x 16 x 16 x 4;
	 * k's reads the same tables and keeps nothing */
	ck_assert_int_eq(op_saved(&t, "q_rotary", &params), 2 * 16 * 16 * 4);
	ck_assert_int_eq(params, 0);
	ck_assert_int_eq(op_saved(&t, "k_rotary", NULL), 0);
	tmodel_free(&t);
	/* two layers share the tables, as LlamaModel computes them once per
	 * forward: the second layer's q_rotary keeps nothing, the first the
	 * same as alone */
	small_llama(&t, &wl, "2");
	tmodel_set(&t, "layers", "2");
	tmodel_eval(&t);
	ck_assert_int_eq(op_saved_nth(&t, "q_rotary", 0, NULL), 2 * 16 * 16 * 4);
	ck_assert_int_eq(op_saved_nth(&t, "q_rotary", 1, NULL), 0);
	tmodel_free(&t);
	small_llama(&t, &wl, "2");
	/* SwiGLU: three bias-free projections */
	op_saved(&t, "gate_proj", &params);
	ck_assert_int_eq(params, 64 * 96);
	op_saved(&t, "down_proj", &params);
	ck_assert_int_eq(params, 96 * 64);
	/* a head dim of 9 (hidden 36, 4 heads) cannot be rotated in halves */
	tmodel_set(&t, "hidden", "36");
	tmodel_eval(&t);
	ck_assert(!t.r.valid);
	tmodel_free(&t);
}
END_TEST

START_TEST(test_parameter_op)
{
	static const char model[] =
	    "{\"dnnsat_model\": 1, \"name\": \"tok\", \"hyperparameters\": {\"l\": {\"type\": \"int\", \"default\": 5,"
	    " \"min\": 1, \"max\": 64}, \"pl\": {\"type\": \"int\", \"default\": 6, \"min\": 1, \"max\": 64}},"
	    " \"inputs\": [{\"name\": \"x\", \"shape\": [2, \"l\", 8], \"dtype\": \"float\"}],"
	    " \"layers\": [{\"op\": \"parameter\", \"shape\": [1, 1, 8], \"combine\": \"prepend\"},"
	    " {\"op\": \"parameter\", \"shape\": [1, \"pl\", 8]}, {\"op\": \"linear\", \"out_features\": 3}]}";
	struct cm_workload wl = test_workload(1);
	struct tmodel t;
	int64_t shape[6];

	from_text(&t, model, &wl);
	tmodel_eval(&t);
	ck_assert(t.r.valid);
	/* class token 8 + position embedding 6 x 8 + linear 8 x 3 + 3 */
	ck_assert_int_eq(t.r.params, 8 + 48 + 27);
	ck_assert_int_eq(cm_model_output_shape(t.m, t.scratch, shape), 3);
	ck_assert_int_eq(shape[1], 6);
	/* the position table must match the 6 tokens (or be 1) */
	tmodel_set(&t, "pl", "7");
	tmodel_eval(&t);
	ck_assert(!t.r.valid);
	tmodel_set(&t, "pl", "1");
	tmodel_eval(&t);
	ck_assert(t.r.valid);
	tmodel_free(&t);
}
END_TEST

START_TEST(test_templates_honour_attention)
{
	static const char *const presets[] = { "llama2-7b", "vit_b_16" };
	struct cm_workload wl = test_workload(1);

	for (size_t i = 0; i < 2; i++) {
		struct tmodel t;
		int64_t eager;
		wl.attention = CM_ATTN_EAGER;
		from_preset(&t, presets[i], &wl);
		tmodel_set(&t, "batch_size", "1");
		tmodel_eval(&t);
		eager = t.r.act_saved_bytes;
		tmodel_free(&t);
		wl.attention = CM_ATTN_MEM_EFFICIENT;
		from_preset(&t, presets[i], &wl);
		tmodel_set(&t, "batch_size", "1");
		tmodel_eval(&t);
		/* no seq^2 probabilities kept */
		ck_assert_msg(t.r.act_saved_bytes < eager, "%s: %lld >= eager %lld", presets[i],
		    (long long)t.r.act_saved_bytes, (long long)eager);
		tmodel_free(&t);
	}
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("modern");
	TCase *t = tcase_create("modern");

	tcase_set_timeout(t, 120);
	tcase_add_test(t, test_published_params);
	tcase_add_test(t, test_llama_layer_macs);
	tcase_add_test(t, test_gqa_validity);
	tcase_add_test(t, test_rmsnorm_saved);
	tcase_add_test(t, test_rotary_and_swiglu);
	tcase_add_test(t, test_parameter_op);
	tcase_add_test(t, test_templates_honour_attention);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	return run_suite(suite(), 1);
}
