/*
 * model_build_priv.h - state shared by the model builder (model_build.c) and
 * the operator-rule helpers (op_build.c): name scopes, the parse context for
 * attribute expressions and the per-build settings (private).
 */
#ifndef DN_MODEL_BUILD_PRIV_H
#define DN_MODEL_BUILD_PRIV_H

#include "costmodel.h"
#include "op_build.h"

struct scope_name {
	const char *name;       /* borrowed from the JSON */
	int tensor;
};

struct scope_bind {
	const char *name;       /* borrowed from the JSON */
	expr_id value;
};

/* A lexical scope: tensor names and expression bindings (def arguments,
 * repeat indices). `parent` chains to the enclosing scope; a def body's
 * scope has no parent for tensor names but keeps hyperparameters visible. */
struct scope {
	struct scope *parent;
	struct scope_name *names;
	int nnames, capnames;
	struct scope_bind *binds;
	int nbinds, capbinds;
};

struct model_builder {
	struct cm_model_def *def;
	struct cm_graph *m;
	const struct cm_workload *wl;
	enum cm_attention attention;        /* the kernel attention layers run (resolved) */
	/* a space that picks the kernel (wl->attn_hp): each value's kernel,
	 * resolved, and the condition that picks it (else nattn 0) */
	int nattn;
	enum cm_attention attn_kernels[CM_MAX_ATTN_CHOICES];
	expr_id attn_conds[CM_MAX_ATTN_CHOICES];
	int dev_cc;                         /* the device's compute capability (cm_device_cc) */
	const struct expr_ival *bounds;     /* per hyperparameter */
	struct scope *scope;                /* scope for name resolution */
	expr_id guard;                      /* guard of the item being parsed */
	const char *cur_path;               /* path of the attribute being parsed */
	const char *cur_text;
	int ndivisors;
	expr_id divisors[16];
	int def_depth;
	int64_t unrolled;                   /* product of the enclosing repeats' copies */
	int item_depth;                     /* layer items enclosing the one being walked (1: top level) */
	/* gradient checkpointing: the segment of the enclosing checkpointed
	 * item (0: none; the operators built get it, cm_op.ckpt_seg) and the
	 * segments opened so far */
	int ckpt_seg, nckpt_segs;
	/* fine-tuning (cm_finetune.c): the composite whose sub-operators are
	 * being built (its rule name, NULL at the top level); while a LoRA
	 * composite builds its parts, ft_force is 1 (frozen base) or 0
	 * (trainable adapter) and ft_adapter marks the adapters, else -1 / 0;
	 * lora_rank is the rank as an expression (EXPR_NONE without LoRA) */
	const char *parent_rule;
	int ft_force, ft_adapter;
	/* the operator being built uses another's weight again (DoRA's second
	 * convolution with a dropout): its weights are not parameters of the
	 * model a second time (mb_finish_op), though autocast casts them */
	int ft_shared;
	expr_id lora_rank;
	int lora_hits;           /* linear layers that got LoRA adapters */
	/* quantized base weights (cm_quant.c): the linears quantized so far,
	 * whether a tied linear was built, the instance path of the last
	 * operator with weights and whether it was quantized, and the path
	 * left unquantized (the output layer: NULL on the first build;
	 * model_build.c builds again with it when the model ties nothing and
	 * its last weights are a quantized linear's) */
	int quant_hits, quant_tied, quant_last_q;
	char quant_last[512];
	const char *quant_skip;     /* the output layer's path (a LoRA composite's, not its base_layer's) */
	/* the path of an embedding built frozen whose weight a later tied
	 * linear trains ("" none): its output needed a gradient, so
	 * model_build.c builds again with the embedding trained from the
	 * start (op_linear.c, tied_settle) */
	char tied_train[CM_FT_SEL_LEN];
	struct dn_error *err;
};

/* Parses an integer or real attribute value (JSON number or expression
 * string) in the builder's current scope, adding "divisor != 0" validity
 * constraints for non-constant divisors. Returns EXPR_NONE on error. */
expr_id mb_parse_value(struct model_builder *mb, const json_t *v,
    const char *path, expr_id guard);

/* Finalizes an operator whose rule has run: appends it, its saved tensors
 * and its liveness to the graph. Returns the output tensor or -1. */
int mb_finish_op(struct model_builder *mb, struct op_build *ob);

/* Runs one operator rule on `in` (nin tensors). */
int mb_run_rule(struct model_builder *mb, const struct op_rule *rule,
    const json_t *item, const char *file_path, const char *inst_path,
    expr_id guard, int nin, const int *in);

/* A tensor standing for alts[i] where conds[i] holds (the conds disjoint
 * and, with the enclosing guard, exhaustive): a choice's or an if's result.
 * Returns alts[0] when all are one tensor, or -1 with mb->err set. */
int mb_make_select(struct model_builder *mb, const char *path, int n, const int *alts,
    const expr_id *conds);

/* Fine-tuning selections (cm_finetune.c); `parent` is the enclosing
 * composite's rule name or NULL, `path` the operator's instance path.
 *   cm_ft_match        whether any of the n selectors picks the operator
 *   cm_ft_frozen       whether its weights are frozen (training only)
 *   cm_ft_tied_frozen  whether a tied linear's (the embedding's) weight is
 *   cm_ft_lora_target  whether a linear or (rule) a convolution gets LoRA
 *                      adapters (training only; "all", "all-linear" and
 *                      "linear" pick linears alone) */
/* The length of a linear's instance path without the sub-operator that
 * holds its weight when LoRA wraps it (".base_layer"), so that
 * the output layer is known by its own path whichever form built it. */
size_t mb_linear_path_len(const char *path);

int cm_ft_match(const char (*sel)[CM_FT_SEL_LEN], int n, const char *rule, const char *parent,
    const char *path);
/* Whether s has the shape of a module name (letters, digits and
 * underscores, not starting with a digit, shorter than CM_FT_SEL_LEN): a
 * model item's "module", and a selector that names one. */
int cm_ft_module_name(const char *s);
/* After a build: each selector of the workload's lists (freeze, train,
 * LoRA's targets, a space's target lists) that is none dnnsat knows must be
 * a module of the model (a component of an operator's instance path), as
 * peft refuses a target it cannot find; else DN_EINVAL at the list's path,
 * with the closest names. 0 or -1. */
int cm_ft_check_modules(const struct cm_workload *wl, const struct cm_model_def *def, const struct cm_graph *m,
    struct dn_error *err);
int cm_ft_frozen(const struct cm_workload *wl, const char *rule, const char *parent, const char *path);
int cm_ft_tied_frozen(const struct cm_workload *wl, const char *path);
/* The rule cm_ft_lora_target is given for a linear whose weight is a
 * parameter of a larger module, not an nn.Linear module's (a linear with
 * "linear_module": false, such as nn.MultiheadAttention's in_proj_weight):
 * the selectors by kind ("all", "all-linear", "linear") leave it out, as
 * peft's all-linear takes nn.Linear and Conv1D modules only; a path, its
 * module name and the attention selectors still pick it. */
#define CM_FT_PARAM_LINEAR "linear_parameter"
/* peft's "all-linear" picks every linear but the LM head (module lm_head)
 * and those CM_FT_PARAM_LINEAR */
int cm_ft_lora_target(const struct cm_workload *wl, const char *rule, const char *parent, const char *path);
/* Where an adapted linear runs DoRA (op_dora.c): 1, 0, or the condition on
 * a space's use_dora (ft.dora_hp). */
expr_id cm_ft_dora_on(struct expr_graph *g, const struct cm_workload *wl);

/* Builds the operator graph of `def` into `m` (model_build.c). On error
 * returns -1 with err set; `m` must still be freed with cm_graph_free. */
int model_graph_build(struct cm_model_def *def, const struct cm_workload *wl,
    const struct cm_device *dev, const struct expr_ival *bounds, struct cm_graph *m,
    struct dn_error *err);

#endif
