/*
 * cm_optimizer.c - the optimizer's name (cm_optimizer_*): dnnsat's names,
 * the names Hugging Face's TrainingArguments.optim gives the same
 * optimizers (transformers' OptimizerNames), and the check of the step's
 * implementation against the optimizer.
 *
 * A Hugging Face name may imply the implementation too ("adamw_torch_fused"
 * is AdamW with fused=True): cm_optimizer_parse returns it and
 * cm_optimizer_settle applies it once every field is read, so an explicit
 * optimizer_impl that says otherwise is an error, not an order of keys.
 * Hugging Face names of optimizers the cost model does not know are
 * refused with that reason, not as a typo.
 */
#include "costmodel.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const struct {
	const char *name;
	enum cm_optimizer o;
	int impl;               /* the enum cm_optimizer_impl the name implies, or -1 */
	int states;             /* enum cm_optimizer_states */
	int hf;                 /* a name of Hugging Face's (kept to be written back) */
} names[] = {
	{ "sgd", CM_OPT_SGD, -1, 0, 0 }, { "sgd_momentum", CM_OPT_SGD_MOMENTUM, -1, 0, 0 },
	{ "momentum", CM_OPT_SGD_MOMENTUM, -1, 0, 0 }, { "adam", CM_OPT_ADAM, -1, 0, 0 },
	{ "adamw", CM_OPT_ADAMW, -1, 0, 0 }, { "adagrad", CM_OPT_ADAGRAD, -1, 0, 0 },
	{ "rmsprop", CM_OPT_RMSPROP, -1, 0, 0 }, { "adam_8bit", CM_OPT_ADAM_8BIT, -1, 0, 0 },
	{ "adam8bit", CM_OPT_ADAM_8BIT, -1, 0, 0 }, { "adamw_8bit", CM_OPT_ADAM_8BIT, -1, 0, 0 },
	{ "adafactor", CM_OPT_ADAFACTOR, -1, 0, 0 }, { "lion", CM_OPT_LION, -1, 0, 0 },
	/* Hugging Face's optim (sgd, adagrad, rmsprop, adafactor and
	 * adamw_8bit above are its names too: torch.optim.SGD without
	 * momentum, transformers' Adafactor, bitsandbytes' AdamW8bit) */
	{ "adamw_torch", CM_OPT_ADAMW, -1, 0, 1 },
	{ "adamw_torch_fused", CM_OPT_ADAMW, CM_OPT_IMPL_FUSED, 0, 1 },
	/* transformers' own AdamW (removed in 2025): one weight at a time */
	{ "adamw_hf", CM_OPT_ADAMW, CM_OPT_IMPL_FOR_LOOP, 0, 1 },
	/* NVIDIA apex's FusedAdam: states like the weights, updated in place */
	{ "adamw_apex_fused", CM_OPT_ADAMW, CM_OPT_IMPL_FUSED, 0, 1 },
	/* bitsandbytes (optim/optimizer.py Optimizer1State/Optimizer2State,
	 * each updated in place by one kernel): 32-bit states are fp32
	 * whatever the weights' dtype; 8-bit ones uint8 with an fp32 absmax
	 * per 256 values (fp32 under 4096 values). paged_*: the same states in
	 * CUDA unified memory, which the driver moves to the host only when
	 * the GPU runs out: counted on the GPU (what fits without paging) */
	{ "adamw_bnb_8bit", CM_OPT_ADAM_8BIT, -1, 0, 1 },
	{ "paged_adamw_8bit", CM_OPT_ADAM_8BIT, -1, 0, 1 },
	{ "paged_adamw_32bit", CM_OPT_ADAMW, CM_OPT_IMPL_FUSED, CM_OPT_STATES_FP32, 1 },
	{ "lion_32bit", CM_OPT_LION, CM_OPT_IMPL_FUSED, CM_OPT_STATES_FP32, 1 },
	{ "paged_lion_32bit", CM_OPT_LION, CM_OPT_IMPL_FUSED, CM_OPT_STATES_FP32, 1 },
	{ "lion_8bit", CM_OPT_LION, CM_OPT_IMPL_FUSED, CM_OPT_STATES_8BIT, 1 },
	{ "paged_lion_8bit", CM_OPT_LION, CM_OPT_IMPL_FUSED, CM_OPT_STATES_8BIT, 1 },
	{ "rmsprop_bnb", CM_OPT_RMSPROP, CM_OPT_IMPL_FUSED, CM_OPT_STATES_FP32, 1 },
	{ "rmsprop_bnb_32bit", CM_OPT_RMSPROP, CM_OPT_IMPL_FUSED, CM_OPT_STATES_FP32, 1 },
	{ "rmsprop_bnb_8bit", CM_OPT_RMSPROP, CM_OPT_IMPL_FUSED, CM_OPT_STATES_8BIT, 1 },
};
#define NNAMES ((int)(sizeof names / sizeof names[0]))

/* Hugging Face optim names of optimizers not modelled (transformers'
 * OptimizerNames, 2025-2026) */
static const char *const unmodelled[] = {
	"ademamix", "ademamix_8bit", "paged_ademamix_32bit", "paged_ademamix_8bit", "adamw_torch_xla",
	"adamw_torch_npu_fused", "adamw_anyprecision", "adamw_torch_4bit", "adamw_torch_8bit",
	"galore_adamw", "galore_adamw_8bit", "galore_adafactor", "galore_adamw_layerwise",
	"galore_adamw_8bit_layerwise", "galore_adafactor_layerwise", "lomo", "adalomo", "grokadamw",
	"schedule_free_radam", "schedule_free_adamw", "schedule_free_sgd", "apollo_adamw",
	"apollo_adamw_layerwise", "stable_adamw",
};

/* The entry of name s, or -1. */
static int
lookup(const char *s)
{
	for (int i = 0; s != NULL && i < NNAMES; i++)
		if (strcasecmp(s, names[i].name) == 0)
			return i;
	return -1;
}

int
cm_optimizer_parse(const char *s, enum cm_optimizer *out, int *impl)
{
	int i = lookup(s);

	*impl = -1;
	if (i >= 0) {
		*out = names[i].o;
		*impl = names[i].impl;
		return 0;
	}
	for (size_t k = 0; k < sizeof unmodelled / sizeof unmodelled[0]; k++)
		if (strcasecmp(s, unmodelled[k]) == 0)
			return -2;
	return -1;
}

int
cm_optimizer_refuse(const char *s, int rc, const char *path, struct dn_error *err)
{
	if (rc == -2)
		return dn_error_set(err, DN_EINVAL, path, "Hugging Face's optim \"%s\" is not modelled (modelled: "
		    CM_OPTIMIZER_NAMES ")", s);
	return dn_error_set(err, DN_EINVAL, path, "unknown optimizer \"%s\" (" CM_OPTIMIZER_NAMES ")", s);
}

const char *
cm_optimizer_name(enum cm_optimizer o)
{
	switch (o) {
	case CM_OPT_SGD: return "sgd";
	case CM_OPT_SGD_MOMENTUM: return "sgd_momentum";
	case CM_OPT_ADAM: return "adam";
	case CM_OPT_ADAMW: return "adamw";
	case CM_OPT_ADAGRAD: return "adagrad";
	case CM_OPT_RMSPROP: return "rmsprop";
	case CM_OPT_ADAM_8BIT: return "adam_8bit";
	case CM_OPT_ADAFACTOR: return "adafactor";
	case CM_OPT_LION: return "lion";
	}
	return "?";
}

/* Whether torch.optim has a fused step for o. */
static int
fusable(enum cm_optimizer o)
{
	return o == CM_OPT_ADAM || o == CM_OPT_ADAMW || o == CM_OPT_SGD || o == CM_OPT_SGD_MOMENTUM;
}

int
cm_optimizer_choice(const char *s, const struct cm_workload *wl, struct cm_opt_choice *out)
{
	int i = lookup(s);

	if (i < 0)
		return -1;
	out->optimizer = (uint8_t)names[i].o;
	out->states = (uint8_t)names[i].states;
	out->impl = (uint8_t)(names[i].impl >= 0 ? names[i].impl :
	    wl->optimizer_impl == CM_OPT_IMPL_FUSED && !fusable(names[i].o) ? CM_OPT_IMPL_FOREACH : wl->optimizer_impl);
	return 0;
}

const char *
cm_optimizer_label(const struct cm_workload *wl)
{
	return wl->optimizer_as[0] != '\0' ? wl->optimizer_as : cm_optimizer_name(wl->optimizer);
}

int
cm_optimizer_settle(struct cm_workload *wl, int implied, const char *implied_by, int impl_given,
    const char *impl_path, struct dn_error *err)
{
	static const char *const impl_names[] = { "foreach", "for_loop", "fused" };
	int i = lookup(implied_by);

	wl->optimizer_as[0] = '\0';
	wl->optimizer_states = CM_OPT_STATES_NATIVE;
	if (i >= 0 && names[i].hf) {
		snprintf(wl->optimizer_as, sizeof wl->optimizer_as, "%s", names[i].name);
		wl->optimizer_states = names[i].states;
	}
	if (implied >= 0) {
		if (impl_given && wl->optimizer_impl != implied)
			return dn_error_set(err, DN_EINVAL, impl_path, "\"%s\" contradicts the optimizer \"%s\", "
			    "which is %s", impl_names[wl->optimizer_impl], implied_by, impl_names[implied]);
		wl->optimizer_impl = implied;
	}
	/* bitsandbytes' kernels are its own fused steps: only torch.optim's
	 * fused=True is checked */
	if (!wl->training || wl->optimizer_impl != CM_OPT_IMPL_FUSED || implied == CM_OPT_IMPL_FUSED)
		return 0;
	if (fusable(wl->optimizer))
		return 0;
	return dn_error_set(err, DN_EINVAL, impl_path, "fused: torch.optim has fused CUDA steps for Adam, "
	    "AdamW and SGD, not %s", cm_optimizer_name(wl->optimizer));
}
