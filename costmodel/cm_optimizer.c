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

#include <string.h>
#include <strings.h>

static const struct {
	const char *name;
	enum cm_optimizer o;
	int impl;               /* the enum cm_optimizer_impl the name implies, or -1 */
} names[] = {
	{ "sgd", CM_OPT_SGD, -1 }, { "sgd_momentum", CM_OPT_SGD_MOMENTUM, -1 },
	{ "momentum", CM_OPT_SGD_MOMENTUM, -1 }, { "adam", CM_OPT_ADAM, -1 },
	{ "adamw", CM_OPT_ADAMW, -1 }, { "adagrad", CM_OPT_ADAGRAD, -1 },
	{ "rmsprop", CM_OPT_RMSPROP, -1 }, { "adam_8bit", CM_OPT_ADAM_8BIT, -1 },
	{ "adam8bit", CM_OPT_ADAM_8BIT, -1 }, { "adamw_8bit", CM_OPT_ADAM_8BIT, -1 },
	{ "adafactor", CM_OPT_ADAFACTOR, -1 }, { "lion", CM_OPT_LION, -1 },
	/* Hugging Face's optim (sgd, adagrad, rmsprop, adafactor and
	 * adamw_8bit above are its names too: torch.optim.SGD without
	 * momentum, transformers' Adafactor, bitsandbytes' AdamW8bit) */
	{ "adamw_torch", CM_OPT_ADAMW, -1 },
	{ "adamw_torch_fused", CM_OPT_ADAMW, CM_OPT_IMPL_FUSED },
	{ "adamw_bnb_8bit", CM_OPT_ADAM_8BIT, -1 },
	/* transformers' own AdamW (removed in 2025): one weight at a time */
	{ "adamw_hf", CM_OPT_ADAMW, CM_OPT_IMPL_FOR_LOOP },
	/* NVIDIA apex's FusedAdam: states like the weights, updated in place */
	{ "adamw_apex_fused", CM_OPT_ADAMW, CM_OPT_IMPL_FUSED },
	/* bitsandbytes' paged AdamW8bit: the same states, in CUDA unified
	 * memory that the driver moves to the host only when the GPU runs
	 * out; counted resident (an upper bound on what must fit) */
	{ "paged_adamw_8bit", CM_OPT_ADAM_8BIT, -1 },
};

/* Hugging Face optim names of optimizers not modelled (transformers'
 * OptimizerNames, 2025-2026) */
static const char *const unmodelled[] = {
	"paged_adamw_32bit", "lion_32bit", "paged_lion_32bit", "rmsprop_bnb", "rmsprop_bnb_32bit",
	"lion_8bit", "paged_lion_8bit", "rmsprop_bnb_8bit", "ademamix", "ademamix_8bit",
	"paged_ademamix_32bit", "paged_ademamix_8bit", "adamw_torch_xla", "adamw_torch_npu_fused",
	"adamw_anyprecision", "adamw_torch_4bit", "adamw_torch_8bit",
	"galore_adamw", "galore_adamw_8bit", "galore_adafactor", "galore_adamw_layerwise",
	"galore_adamw_8bit_layerwise", "galore_adafactor_layerwise", "lomo", "adalomo", "grokadamw",
	"schedule_free_radam", "schedule_free_adamw", "schedule_free_sgd", "apollo_adamw",
	"apollo_adamw_layerwise", "stable_adamw",
};

int
cm_optimizer_parse(const char *s, enum cm_optimizer *out, int *impl)
{
	*impl = -1;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcasecmp(s, names[i].name) == 0) {
			*out = names[i].o;
			*impl = names[i].impl;
			return 0;
		}
	for (size_t i = 0; i < sizeof unmodelled / sizeof unmodelled[0]; i++)
		if (strcasecmp(s, unmodelled[i]) == 0)
			return -2;
	return -1;
}

int
cm_optimizer_refuse(const char *s, int rc, const char *path, struct dn_error *err)
{
	if (rc == -2)
		return dn_error_set(err, DN_EINVAL, path, "Hugging Face's optim \"%s\" is not modelled%s (modelled: "
		    CM_OPTIMIZER_NAMES ")", s, strncasecmp(s, "paged_adamw_32bit", 17) == 0 ?
		    "; bitsandbytes' 32-bit AdamW keeps fp32 states whatever the weights' dtype and updates in "
		    "place: under mixed precision that is adamw with optimizer_impl fused" : "");
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

int
cm_optimizer_settle(struct cm_workload *wl, int implied, const char *implied_by, int impl_given,
    const char *impl_path, struct dn_error *err)
{
	static const char *const impl_names[] = { "foreach", "for_loop", "fused" };

	if (implied >= 0) {
		if (impl_given && wl->optimizer_impl != implied)
			return dn_error_set(err, DN_EINVAL, impl_path, "\"%s\" contradicts the optimizer \"%s\", "
			    "which is %s", impl_names[wl->optimizer_impl], implied_by, impl_names[implied]);
		wl->optimizer_impl = implied;
	}
	if (!wl->training || wl->optimizer_impl != CM_OPT_IMPL_FUSED)
		return 0;
	switch (wl->optimizer) {
	case CM_OPT_ADAM: case CM_OPT_ADAMW: case CM_OPT_SGD: case CM_OPT_SGD_MOMENTUM:
		return 0;
	default:
		return dn_error_set(err, DN_EINVAL, impl_path, "fused: torch.optim has fused CUDA steps for Adam, "
		    "AdamW and SGD, not %s", cm_optimizer_name(wl->optimizer));
	}
}
