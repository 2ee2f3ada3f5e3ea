/*
 * cm_precision.c - the workload's precision: its names (the workload's own,
 * and the names Lightning and Accelerate give it, which a search space
 * uses: cm_precision_parse*), and the precisions a configuration may run
 * where a space searches it (cm_precision_alts), each under the condition
 * that picks it, for the model builder, which builds the model once per
 * precision under that condition (model_build.c).
 *
 * The frameworks' names, from their sources:
 *   Lightning     Trainer(precision=...) (lightning/fabric/plugins/
 *                 precision/precision.py, 2.x): "32-true", "16-mixed",
 *                 "bf16-mixed", "16-true", "bf16-true", "64-true",
 *                 "transformer-engine"; the aliases "32", "16", "bf16",
 *                 "64" and the integers 32, 16, 64 are "32-true",
 *                 "16-mixed", "bf16-mixed", "64-true"
 *                 (_PRECISION_INPUT_STR_ALIAS_CONVERSION)
 *   Accelerate    Accelerator(mixed_precision=...): "no", "fp16", "bf16",
 *                 "fp8"; fp16 and bf16 are autocast over fp32 weights
 *   transformers  TrainingArguments(fp16=..., bf16=...): autocast fp16 or
 *                 bf16 over fp32 weights, fp32 when neither; both true is
 *                 refused ("At most one of fp16 and bf16 can be True")
 * fp64 and Transformer Engine's fp8 are not modelled.
 */
#include "costmodel.h"

#include <string.h>
#include <strings.h>

int
cm_precision_parse(const char *s, enum cm_precision *out)
{
	static const struct { const char *name; enum cm_precision p; } t[] = {
		{ "fp32", CM_PREC_FP32 }, { "float32", CM_PREC_FP32 },
		{ "fp16", CM_PREC_FP16 }, { "float16", CM_PREC_FP16 },
		{ "bf16", CM_PREC_BF16 }, { "bfloat16", CM_PREC_BF16 },
		{ "mixed_fp16", CM_PREC_MIXED_FP16 }, { "amp", CM_PREC_MIXED_FP16 },
		{ "mixed_bf16", CM_PREC_MIXED_BF16 },
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (strcasecmp(s, t[i].name) == 0) {
			*out = t[i].p;
			return 0;
		}
	return -1;
}

const char *
cm_precision_name(enum cm_precision p)
{
	switch (p) {
	case CM_PREC_FP32: return "fp32";
	case CM_PREC_FP16: return "fp16";
	case CM_PREC_BF16: return "bf16";
	case CM_PREC_MIXED_FP16: return "mixed_fp16";
	case CM_PREC_MIXED_BF16: return "mixed_bf16";
	}
	return "?";
}

/* Names of one convention; "" precision -1: a name it has that dnnsat
 * does not model. */
struct prec_name {
	const char *name;
	int p;
};

static const struct prec_name lightning[] = {
	{ "32-true", CM_PREC_FP32 }, { "32", CM_PREC_FP32 },
	{ "16-mixed", CM_PREC_MIXED_FP16 }, { "16", CM_PREC_MIXED_FP16 },
	{ "bf16-mixed", CM_PREC_MIXED_BF16 }, { "bf16", CM_PREC_MIXED_BF16 },
	{ "16-true", CM_PREC_FP16 }, { "bf16-true", CM_PREC_BF16 },
	/* the workload's names that Lightning does not give another meaning */
	{ "fp32", CM_PREC_FP32 }, { "float32", CM_PREC_FP32 }, { "mixed_fp16", CM_PREC_MIXED_FP16 },
	{ "amp", CM_PREC_MIXED_FP16 }, { "mixed_bf16", CM_PREC_MIXED_BF16 }, { "float16", CM_PREC_FP16 },
	{ "bfloat16", CM_PREC_BF16 },
	{ "64-true", -1 }, { "64", -1 }, { "transformer-engine", -1 }, { "transformer-engine-float16", -1 },
	{ NULL, 0 }
};

static const struct prec_name accelerate[] = {
	{ "no", CM_PREC_FP32 }, { "fp16", CM_PREC_MIXED_FP16 }, { "bf16", CM_PREC_MIXED_BF16 },
	{ "fp8", -1 }, { NULL, 0 }
};

int
cm_precision_parse_as(enum cm_prec_names conv, const char *s, enum cm_precision *out, char *why, size_t len)
{
	const struct prec_name *t = conv == CM_PREC_NAMES_LIGHTNING ? lightning : accelerate;

	if (conv == CM_PREC_NAMES_WORKLOAD) {
		if (cm_precision_parse(s, out) == 0)
			return 0;
		dn_fmt(why, len, "\"%.64s\" is not a precision (fp32, fp16, bf16, mixed_fp16, mixed_bf16)", s);
		return -1;
	}
	for (int i = 0; t[i].name != NULL; i++) {
		if (strcasecmp(s, t[i].name) != 0)
			continue;
		if (t[i].p < 0) {
			dn_fmt(why, len, "\"%.64s\" is not modelled (fp64 and fp8 are not)", s);
			return -1;
		}
		*out = (enum cm_precision)t[i].p;
		return 0;
	}
	if (conv == CM_PREC_NAMES_LIGHTNING && strcasecmp(s, "fp16") == 0)
		dn_fmt(why, len, "\"fp16\" is not Lightning's: give \"16-mixed\" (autocast over fp32 weights) or "
		    "\"16-true\" (the model in half precision)");
	else
		dn_fmt(why, len, "\"%.64s\" is not one of %s", s, conv == CM_PREC_NAMES_LIGHTNING ?
		    "Lightning's precisions (32-true, 16-mixed, bf16-mixed, 16-true, bf16-true; 32, 16, bf16)" :
		    "Accelerate's mixed_precision values (no, fp16, bf16)");
	return -1;
}

int
cm_precision_alts(struct expr_graph *g, const struct cm_workload *wl, int *precs, expr_id *conds,
    expr_id *conflict)
{
	int n = 0;

	*conflict = expr_int(g, 0);
	if (wl->prec_hp > 0) {
		expr_id v = expr_var(g, wl->prec_hp - 1);
		for (int j = 0; j < wl->nprec_choices && j < CM_MAX_PREC_CHOICES; j++)
			cm_alt_add(g, wl->prec_choices[j], expr_eq(g, v, expr_int(g, j)), &n, precs, conds);
		return n;
	}
	if (wl->fp16_hp > 0 || wl->bf16_hp > 0) {
		int mixed = wl->precision == CM_PREC_MIXED_FP16 || wl->precision == CM_PREC_MIXED_BF16;
		expr_id f = cm_flag_on(g, wl->fp16_hp, wl->fp16_on, wl->precision == CM_PREC_MIXED_FP16);
		expr_id b = cm_flag_on(g, wl->bf16_hp, wl->bf16_on, wl->precision == CM_PREC_MIXED_BF16);
		cm_alt_add(g, CM_PREC_MIXED_FP16, expr_and(g, f, expr_not(g, b)), &n, precs, conds);
		cm_alt_add(g, CM_PREC_MIXED_BF16, expr_and(g, b, expr_not(g, f)), &n, precs, conds);
		/* neither: fp32, or the model cast to half where the workload says so */
		cm_alt_add(g, mixed ? CM_PREC_FP32 : (int)wl->precision, expr_and(g, expr_not(g, f), expr_not(g, b)), &n,
		    precs, conds);
		*conflict = expr_and(g, f, b);
		return n;
	}
	precs[0] = (int)wl->precision;
	conds[0] = expr_int(g, 1);
	return 1;
}
