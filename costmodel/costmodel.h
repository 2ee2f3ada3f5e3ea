/*
 * costmodel.h - public API of the cost model: load a model (a template or a
 * model file), build it once for a workload and a device, then evaluate any
 * configuration of its hyperparameters cheaply.
 *
 *   cm_def_load_*      JSON -> struct cm_model_def (hyperparameters, graph)
 *   cm_model_build     def + workload + device -> struct cm_model, whose
 *                      every cost is an expression over the hyperparameters
 *   cm_model_eval      one configuration -> struct cm_result
 *
 * Ownership: a cm_model_def is reference counted (cm_def_ref/unref); a
 * cm_model holds a reference to its def. Results are plain structs owned by
 * the caller. All functions report failures through struct dn_error (first
 * error wins) and never abort the process.
 */
#ifndef DN_COSTMODEL_H
#define DN_COSTMODEL_H

#include <stdint.h>

#include <jansson.h>

#include "dn_error.h"
#include "expr.h"

/* The cost model's version: part of every cached result's id, so a change
 * of what any answer says (a validity rule, a cost, the device's usable
 * memory, an answer's fields) must bump it, or a cache filled by the old
 * version would serve stale answers. 1.2.0: the safe memory estimate,
 * per-device CUDA context figures, the cuBLAS workspace. 1.1.0: token ids within their
 * embedding tables, the device's usable memory as the default memory
 * budget, budgets and warnings in answers, any JSON choice value. 1.2.0
 * also: attention kernels (sdpa by default), gradient accumulation, 8-bit
 * Adam, Adafactor and Lion, bf16 on a chip without it an invalid
 * configuration, the nb201 MACs convention. 1.3.0: operators rmsnorm,
 * swiglu, rotary and parameter, grouped-query attention (kv_heads, the
 * "kv_heads divides heads" rule) and rotary attention, eps on layernorm,
 * the llama and vit templates; fine-tuning (frozen weights, LoRA adapters:
 * trainable_params, no gradients or optimizer state for frozen weights,
 * nothing saved by operators nothing needs gradients through). 1.3.1:
 * rotary cos/sin tables saved once per model and shape, not per layer;
 * layernorm refuses an int64 input. 1.3.2: rmsnorm's "kernel" ("fused"
 * default, "eager": Hugging Face's LlamaRMSNorm, which the llama template
 * now uses, also keeps x^2 and the normalized product). 1.3.3: an operator
 * keeping a choice's output keeps each alternative only where it is the one
 * chosen (grouped-query attention no longer charges the unrepeated k and v,
 * nor LoRA the frozen embedding's output, nor Xception every middle Block's
 * input), and only where an operator keeping it runs (NB201's optional
 * pools); an eager rmsnorm whose input needs no gradient keeps only the
 * normalized product. 1.4.0: mixed precision as autocast runs it (fp32
 * softmax, norms, embeddings, loader batch and promoted sums; GEMMs keep
 * fp16 casts), the workload's zero_grad and optimizer_impl, the safe
 * estimate's displaced activations. 1.4.1: the CUDA context of Hugging Face's
 * "Model training anatomy" is 1343 MiB (its code prints used // 1024**2), not
 * 1343 MB: every expected estimate 62 MiB higher; the upper bound's 1000 MB
 * of eager kernel images (pytorch/pytorch issue #107667) likewise 1000 MiB.
 * 1.4.2: a storage lives until its last read that runs, a gradient is in
 * flight until its last consumer's backward that runs and a kept activation
 * until its earliest keeper's that runs, not until the last (earliest)
 * operator of any alternative or repeat copy; the gradient of an in-place
 * output of a choice counts: a configuration's costs are the same from a
 * model built over a space as from one built at the point. 1.4.3: the A100
 * catalog entries' CUDA context is 1790 MiB (derived from the A100
 * measurements and the allocator replay, docs/memory-accuracy.md), not the
 * V100's 1343: every A100 estimate 447 MiB higher. Query ids hash the
 * device by name, so a catalog change that alters answers bumps this.
 * 1.4.4: the fvcore MACs convention counts rotary's frequency product
 * (LLaMA: + L x head_dim / 2) and no longer counts SDPA's math path
 * (tests/cli/test_fvcore.py, against fvcore itself). 1.4.5: the workload
 * option softmax_saves (output_and_input: softmax and log_softmax keep
 * their input, as PyTorch <= 1.10 did); the default's answers are
 * unchanged. 1.4.6: measured on an H200 (tests/cli/test_h200.py): the
 * cross-entropy's backward holds one more logits-sized fp32 tensor (the
 * log-probabilities' gradient), Hugging Face's tanh GELU keeps fp32
 * tensors under autocast (pow runs in fp32), and the Hopper entries'
 * CUDA context is the measured 796.8 MiB and the H200's usable memory its
 * cudaMemGetInfo total. 1.4.9: FP32 convolutions without tensor cores
 * (Pascal, Volta, Turing, or no_cudnn_tf32) cost their implicit GEMM in
 * whole 128 x 64 tiles plus a fixed cost per tile output (perf_model.c's
 * conv_seconds, fitted on HELP and DeepBench): efficiency grows with the
 * channels instead of a 1x1 convolution's 9% of peak whatever its size;
 * ResNet-50 fp32 batch 128 inference on a V100 493 -> 141 ms (published
 * 109), backward passes at DeepBench's measured ratio. Also 1.4.9:
 * workload checkpointing checkpoints the resnet and mobilenet_v2
 * templates' residual blocks (layer items marked "checkpoint": true; it
 * changed nothing for them before), and the vit template's
 * image_size % patch == 0 is a validity rule (the model format's
 * "rules"): stored answers of either are stale. 1.4.10: an LSTM or GRU
 * layer's latency grows with its sequence length (a GPU time per timestep
 * fitted on DeepBench's measured recurrent layers per device class, before
 * Volta and from Volta on, perf_fit_rnn.h), where it was a fixed 255 host
 * launches (8.5 ms) whatever the sequence. Also 1.4.10: half precision
 * (fp16, autocast fp16) before Volta runs matrix products and
 * convolutions at the FP32 rate (PyTorch accumulates them in FP32), not the
 * chip's half rate: a GTX 1080 Ti's mixed-precision step was 40x its FP32
 * one. */
#define CM_VERSION "1.4.20"

/* Limits on a built model (DN_ERANGE naming the limit beyond them), far
 * above the largest real models: the resnet template at its maxima builds
 * 5.4k operators, GPT at 48 layers 1.4k, a llama-style 80-layer decoder
 * about 2.4k. They bound the time and memory one request's model costs.
 *   CM_MAX_UNROLLED   copies of the innermost body of nested repeats (the
 *                     product of their counts or maxima)
 *   CM_MAX_OPS        operators in the graph
 *   CM_MAX_TENSORS    tensors in the graph
 *   CM_MAX_EXPR_NODES nodes of the cost expressions */
#define CM_MAX_UNROLLED 10000
#define CM_MAX_OPS 50000
#define CM_MAX_TENSORS 100000
#define CM_MAX_EXPR_NODES 2000000

/* ---- devices (device_catalog.c) ---- */

struct cm_device {
	char name[64];
	char display_name[96];
	int64_t memory_bytes;
	int64_t usable_memory_bytes; /* what one process can allocate (<= memory_bytes) */
	double mem_bandwidth;      /* bytes/s */
	int sm_count;
	int max_threads_per_sm;
	double peak_fp32, peak_tf32, peak_fp16, peak_bf16, peak_int8; /* FLOP/s */
	int cc_major, cc_minor;    /* compute capability ("8.0"); 0.0 when not given */
	/* CUDA context with PyTorch's kernels, expected and upper bound, in
	 * bytes: the entry's "cuda_context_bytes" / "cuda_context_upper_bytes",
	 * 0 = the figures of its compute capability (mem_profile.c) */
	int64_t context_bytes, context_upper_bytes;
	int is_alias;              /* catalog entry that repeats another under an alias */
	int entry;                 /* index of the device's own (non-alias) catalog entry */
};

struct cm_device_catalog {
	struct cm_device *devices;
	int n;
};

/* Loads schemas/devices.json (or another catalog file). */
int cm_catalog_load(const char *path, struct cm_device_catalog *cat,
    struct dn_error *err);
/* The same from the file's `len` bytes (read by the caller, which also
 * hashes them: srv_start.c); `path` names the file in errors. */
int cm_catalog_parse(const char *path, const char *text, size_t len,
    struct cm_device_catalog *cat, struct dn_error *err);
/* The same from a parsed document {"devices": [...]} (a catalog file or
 * the GET /v1/devices answer). */
int cm_catalog_from_json(const json_t *root, struct cm_device_catalog *cat,
    struct dn_error *err);
void cm_catalog_free(struct cm_device_catalog *cat);
/* Finds a device by name or alias (case-insensitive); NULL if unknown. */
const struct cm_device *cm_catalog_find(const struct cm_device_catalog *cat,
    const char *name);
/* Resolves a name the user typed: the entry cm_catalog_find gives, else an
 * error at `path`: DN_EINVAL "ambiguous" listing every device whose name or
 * alias starts with `name` followed by '-' when there are two or more
 * ("a100": a100-40gb, a100-80gb, ...), DN_ENOENT with the closest names
 * ("did you mean") otherwise. 0 or -1. */
int cm_catalog_resolve(const struct cm_device_catalog *cat, const char *name,
    const char *path, const struct cm_device **out, struct dn_error *err);
/* Reads an inline device description; `path` names it in errors.
 * "usable_memory_bytes" is optional (default: memory_bytes) and at most
 * memory_bytes. "compute_capability" ("8.0") is optional; so are
 * "cuda_context_bytes" and "cuda_context_upper_bytes" (at least the
 * expected figure), which default to their compute capability's. */
int cm_device_from_json(const json_t *obj, const char *path,
    struct cm_device *out, struct dn_error *err);

/* ---- model definitions (model_def.c) ---- */

enum cm_hp_type { CM_HP_INT, CM_HP_REAL, CM_HP_CATEGORICAL };

struct cm_hparam {
	char *name;
	enum cm_hp_type type;
	union expr_val dflt;        /* categorical: index into values */
	int has_min, has_max;
	double min, max;
	char **values;              /* categorical values */
	int nvalues;
	char *description;
};

struct cm_model_def {
	int refs;
	json_t *root;
	char *name;
	char *description;
	struct cm_hparam *hps;
	int nhps;
};

/* Loads a model from JSON text / a file / a built-in template name (looked
 * up in the templates directory, see cm_templates_dir). */
int cm_def_load_json(json_t *root, struct cm_model_def **out, struct dn_error *err);
int cm_def_load_file(const char *path, struct cm_model_def **out, struct dn_error *err);
int cm_def_load_template(const char *name, struct cm_model_def **out, struct dn_error *err);
void cm_def_ref(struct cm_model_def *def);
void cm_def_unref(struct cm_model_def *def);
int cm_def_find_hp(const struct cm_model_def *def, const char *name);
/* Whether the n bytes at s are an identifier: a letter or '_', then
 * letters, digits and '_' (ASCII; n 0 is not). The shape of hyperparameter
 * names and of module names (a model item's "module", dnnsat import's). */
int cm_ident(const char *s, size_t n);
/* The hyperparameters of def close to `name` ("batch_size" for
 * "batch_sise"), as dn_suggest writes them into buf ("" when none is
 * close); returns how many. */
int cm_def_suggest_hp(const struct cm_model_def *def, const char *name, char *buf, size_t len);

/* Directory of built-in templates and data (devices.json, templates/, api/):
 * $DNNSAT_DATA_DIR, else the build tree's or the installed schemas/ (see
 * dn_data_dir in dn_datadir.h). */
const char *cm_data_dir(void);

/* Names of the built-in templates (NULL-terminated, static). */
const char *const *cm_template_names(void);

/* A configuration: one value per hyperparameter, in def order. */
int cm_config_defaults(const struct cm_model_def *def, union expr_val *vals);
/* Applies a named preset ("resnet50"); -1 and err if unknown. */
int cm_config_apply_preset(const struct cm_model_def *def, const char *preset,
    union expr_val *vals, struct dn_error *err);
/* Sets one hyperparameter from text ("64", "0.75", "basic"). */
int cm_config_set(const struct cm_model_def *def, const char *name,
    const char *value, union expr_val *vals, struct dn_error *err);
/* Sets hyperparameters from a JSON object {"name": value}; unknown names and
 * wrong types are errors naming "<path>.name". */
int cm_config_from_json(const struct cm_model_def *def, const json_t *obj,
    const char *path, union expr_val *vals, struct dn_error *err);
/* Finds the template that defines `preset` and loads it ("resnet50" ->
 * resnet template); -1 if no template has that preset. */
int cm_def_load_preset(const char *preset, struct cm_model_def **out,
    struct dn_error *err);

/* ---- workloads ---- */

/* Optimizers, with the state each keeps per parameter element (the
 * element counts come from the model; see docs/training-techniques.md):
 *   sgd 0; sgd_momentum 1 copy; adam/adamw 2 copies; adagrad, rmsprop 1;
 *   adam_8bit  bitsandbytes Adam8bit (>= 0.44): 2 uint8 states + one fp32
 *              absmax per block of 256 elements per state, for tensors of >= 4096
 *              elements (min_8bit_size); smaller tensors keep 2 fp32 states
 *   adafactor  Hugging Face Adafactor (beta1=None): fp32 row and column
 *              second-moment factors for 2-D and larger weights, a full fp32
 *              second moment for 1-D ones
 *   lion       one momentum copy (exp_avg) */
enum cm_optimizer { CM_OPT_SGD, CM_OPT_SGD_MOMENTUM, CM_OPT_ADAM, CM_OPT_ADAMW,
	CM_OPT_ADAGRAD, CM_OPT_RMSPROP, CM_OPT_ADAM_8BIT, CM_OPT_ADAFACTOR, CM_OPT_LION };
enum cm_precision { CM_PREC_FP32, CM_PREC_FP16, CM_PREC_BF16, CM_PREC_MIXED_FP16,
	CM_PREC_MIXED_BF16 };
/* How attention layers compute softmax(QK^T)V (PyTorch 2.2+ kernels):
 *   sdpa           F.scaled_dot_product_attention, the Hugging Face default
 *                  (attn_implementation="sdpa" since transformers 4.36 with
 *                  torch >= 2.1.1): resolved per device and dtype by
 *                  cm_attention_resolve
 *   eager          the models' own Python code: scores, softmax, dropout
 *                  and the probabilities kept for backward (seq^2 tensors)
 *   math           SDPA's math fallback: the same seq^2 tensors, with q and
 *                  k scaled by sqrt(1/sqrt(d)) each before the product
 *   mem_efficient  the memory-efficient (xformers/cutlass) kernel: keeps
 *                  Q, K, V, O and an fp32 log-sum-exp, no seq^2 tensor
 *   flash          FlashAttention-2: keeps Q, K, V, O and an fp32
 *                  log-sum-exp; needs compute capability >= 8.0 and fp16 or
 *                  bf16 */
enum cm_attention { CM_ATTN_SDPA, CM_ATTN_EAGER, CM_ATTN_MATH, CM_ATTN_MEM_EFFICIENT,
	CM_ATTN_FLASH };

/* Fine-tuning (cm_finetune.c, docs/training-techniques.md): which weights
 * are frozen (requires_grad=False: no gradient, no optimizer state) and
 * which linears get LoRA adapters. Operators are picked by selectors:
 *   "all"                   every operator with weights
 *   an operator type        "embedding", "layernorm", "linear", "conv2d", ...;
 *                           a composite's type ("attention") picks its
 *                           sub-operators too
 *   "attention.q" / ".k" / ".v" / ".qkv" / ".out"
 *                           attention's projections (q, k and v on a
 *                           fused projection pick the fused c_attn)
 *   "$.layers[4]"           a JSON path prefix of operator paths (as
 *                           --per-op lists them), ending at a component
 * An operator is frozen when a `freeze` selector picks it and no `train`
 * selector does; LoRA (lora_rank set) freezes every base weight (as peft's
 * get_peft_model does) except those `train` picks (modules_to_save).
 * A tied linear's weight is the embedding's: frozen with every embedding
 * (an "embedding" or "all" selector, or LoRA) unless `train` picks it. */
#define CM_FT_MAX_SEL 8         /* selectors per list */
#define CM_FT_SEL_LEN 64        /* bytes per selector, NUL included */
#define CM_FT_MAX_TGT_CHOICES 8 /* target lists a space may pick among */
/* The quantization of the base linears a search space picks per
 * configuration (cm_quant_alts): by name, hyperparameter hp - 1, a
 * categorical whose value j is mode choices[j] (enum cm_quant; "none"
 * CM_QUANT_NONE); or by Hugging Face's BitsAndBytesConfig fields, each a
 * hyperparameter index + 1 (0: as the workload's quantize implies) and,
 * for a flag, the index of its true value (-1: none): load_in_4bit (l4),
 * load_in_8bit (l8), bnb_4bit_use_double_quant (dq), and
 * bnb_4bit_quant_type (type_hp, bit j of type_nf4 set where value j is
 * "nf4"). */
#define CM_QUANT_MAX_CHOICES 8
struct cm_quant_search {
	int hp, nchoices;
	uint8_t choices[CM_QUANT_MAX_CHOICES];
	int l4_hp, l4_on, l8_hp, l8_on, dq_hp, dq_on, type_hp;
	uint8_t type_nf4;
};

struct cm_finetune {
	int nfreeze, ntrain, ntargets;
	char freeze[CM_FT_MAX_SEL][CM_FT_SEL_LEN];
	char train[CM_FT_MAX_SEL][CM_FT_SEL_LEN];
	char targets[CM_FT_MAX_SEL][CM_FT_SEL_LEN];   /* LoRA's target linears */
	int lora_rank;              /* > 0: LoRA of this rank (or rank_expr when set) */
	char rank_expr[CM_FT_SEL_LEN]; /* an expression over hyperparameters, "" = lora_rank */
	double lora_dropout;        /* peft's lora_dropout, 0 <= p < 1 (0: nn.Identity) */
	int use_dora;               /* peft's use_dora: DoRA's magnitude and
	                             * weight norm on every adapted linear
	                             * (op_dora.c) */
	int dora_hp, dora_on;       /* > 0: categorical hyperparameter dora_hp -
	                             * 1 picks it per configuration, DoRA where
	                             * its value is dora_on (-1: none; a space
	                             * that searches use_dora; use_dora is then
	                             * unused) */
	int dropout_hp;             /* > 0: hyperparameter dropout_hp - 1 (a real)
	                             * is each configuration's lora_dropout (a
	                             * space that searches it; lora_dropout is
	                             * then unused) */
	uint8_t quant;              /* enum cm_quant: the base linears' storage */
	struct cm_quant_search qs;  /* a space that searches it (all zero: none) */
	int targets_hp;             /* > 0: hyperparameter targets_hp - 1, a
	                             * categorical, picks each configuration's
	                             * targets: value j targets tgt_choices[j]
	                             * (ntgt[j] selectors; a space that searches
	                             * them; targets is then unused) */
	int ntgt_choices;
	int ntgt[CM_FT_MAX_TGT_CHOICES];
	char tgt_choices[CM_FT_MAX_TGT_CHOICES][CM_FT_MAX_SEL][CM_FT_SEL_LEN];
};

/* bitsandbytes' quantized base weights, as Hugging Face's
 * BitsAndBytesConfig makes them (cm_quant.c): every nn.Linear but the
 * output layer becomes
 *  - with load_in_4bit (bnb_4bit_quant_type, bnb_4bit_use_double_quant) a
 *    Linear4bit whose weight is packed two values a byte with an fp32 scale
 *    per block of 64 (double quantization: a uint8 scale per block, an fp32
 *    scale per 256 blocks), dequantized to the compute dtype on every call;
 *    nf4 and fp4 differ only in the 16 values a code stands for: the same
 *    costs;
 *  - with load_in_8bit (LLM.int8(), llm_int8_threshold 6.0) a Linear8bitLt:
 *    an int8 weight with an fp32 scale per output row, the input quantized
 *    to int8 per row on every call and multiplied in int8.
 * Names as Lightning's BitsandbytesPrecision modes. */
enum cm_quant { CM_QUANT_NONE, CM_QUANT_NF4, CM_QUANT_NF4_DQ, CM_QUANT_FP4, CM_QUANT_FP4_DQ, CM_QUANT_INT8 };
/* Reads a mode name ("nf4", "nf4-dq", "fp4", "fp4-dq", "int8") into *q; 0,
 * -1 for an unknown name, or -2 for a mode of Lightning's that is not
 * modelled ("int8-training", CM_QUANT_UNMODELLED says why). */
int cm_quant_parse(const char *name, uint8_t *q);
#define CM_QUANT_UNMODELLED "Lightning's int8-training (Linear8bitLt with has_fp16_weights=True: " \
	"trainable weights re-quantized every step) is not modelled"
/* The name of mode q ("" for CM_QUANT_NONE). */
const char *cm_quant_name(int q);
/* Whether mode q quantizes the block scales again (the "-dq" modes). */
int cm_quant_double(int q);
/* The quantization modes a configuration may run, each under the
 * condition that picks it (disjoint): the values of a space's quantize
 * (ft->qs.hp), or what Hugging Face's load_in_4bit, load_in_8bit,
 * bnb_4bit_quant_type and bnb_4bit_use_double_quant make (the fields not
 * searched as ft->quant implies, else as BitsAndBytesConfig defaults
 * them: fp4, no double quantization), or ft->quant under the constant 1.
 * Returns how many (at most 6) into quants and conds (room for
 * CM_QUANT_MAX_CHOICES); *conflict is the condition that none applies
 * (load_in_4bit and load_in_8bit both true) or the constant 0. */
int cm_quant_alts(struct expr_graph *g, const struct cm_finetune *ft, int *quants, expr_id *conds,
    expr_id *conflict);
/* Whether a space searches the quantization (cm_quant_alts has more than
 * the workload's). */
int cm_quant_searched(const struct cm_finetune *ft);
/* The bits of a weight value under mode q: 4, 8 (int8), 0 (none). */
int cm_quant_bits(int q);

/* Adds the comma-separated selectors of `list` to `sel` (one of the three
 * lists, with its count `*n`); DN_EINVAL at `path` for an empty or unknown
 * selector, or one too many. 0 or -1. */
int cm_ft_add_selectors(char (*sel)[CM_FT_SEL_LEN], int *n, const char *list,
    const char *path, struct dn_error *err);
/* Sets peft's lora_dropout to p; DN_EINVAL at `path` unless 0 <= p < 1
 * (give p < 0 for a value that is not a number). 0 or -1. */
int cm_ft_set_dropout(struct cm_finetune *ft, double p, const char *path, struct dn_error *err);
/* Reads "freeze", "train", "lora" or "quantize" (`key`) of a JSON workload
 * into `ft`; errors name $.workload.<key>... 0, or -1 with err (also for
 * another key). */
int cm_ft_from_json(struct cm_finetune *ft, const char *key, const json_t *v,
    struct dn_error *err);
/* Checks what only the whole workload shows (LoRA without targets); 0 or -1. */
int cm_ft_check(const struct cm_finetune *ft, struct dn_error *err);
/* Adds the fine-tuning fields of `ft` to a JSON workload object (none when
 * it trains every weight); 0, or -1 when out of memory. */
int cm_ft_to_json(const struct cm_finetune *ft, json_t *workload);
/* Whether fine-tuning settings are given at all. */
int cm_ft_active(const struct cm_finetune *ft);

/* One optimizer a search space may pick (wl->opt_choices): the optimizer,
 * its step (enum cm_optimizer_impl) and its states' storage. */
struct cm_opt_choice {
	uint8_t optimizer, impl, states;
};
#define CM_MAX_OPT_CHOICES 16
#define CM_MAX_ATTN_CHOICES 8
#define CM_MAX_PREC_CHOICES 8

struct cm_workload {
	int training;               /* 1: a training step, 0: inference */
	enum cm_optimizer optimizer;
	enum cm_precision precision;
	int tf32;                   /* fp32 matmuls may use TF32 tensor cores
	                             * (torch.backends.cuda.matmul.allow_tf32:
	                             * PyTorch's default in 1.7-1.11, not since) */
	int no_cudnn_tf32;          /* fp32 convolutions on the FP32 units
	                             * (torch.backends.cudnn.allow_tf32 = False);
	                             * 0, PyTorch's default since 1.7: cuDNN runs
	                             * them on TF32 tensor cores where the GPU has
	                             * them (Ampere and newer) */
	int macs_convention;        /* enum cm_macs_convention: how "macs"/"flops" count */
	enum cm_attention attention; /* CM_ATTN_SDPA (0) is the default */
	int grad_accum;             /* micro-batches per optimizer step; 0 or 1: none.
	                             * The model's batch is one micro-batch */
	int checkpointing;          /* gradient checkpointing of every block (each
	                             * iteration of a top-level repeat, each item
	                             * marked "checkpoint": true; ckpt_plan.h) */
	int keep_grads;             /* zero_grad(set_to_none=False), the default before
	                             * PyTorch 2.0: weight gradients stay allocated
	                             * (zeroed) across steps, as with grad_accum */
	int optimizer_impl;         /* enum cm_optimizer_impl: how the step runs */
	int optimizer_states;       /* enum cm_optimizer_states (bitsandbytes' names) */
	char optimizer_as[24];      /* the optimizer's Hugging Face name as given
	                             * ("paged_adamw_32bit"), written back; "" */
	int opt_hp;                 /* > 0: hyperparameter opt_hp - 1 picks each
	                             * configuration's optimizer, opt_choices[its
	                             * value] (a space that searches the
	                             * optimizer); 0: the fields above for all */
	int nopt_choices;
	struct cm_opt_choice opt_choices[CM_MAX_OPT_CHOICES];
	int attn_hp;                /* > 0: hyperparameter attn_hp - 1, a
	                             * categorical, picks each configuration's
	                             * attention kernel: value j runs
	                             * attn_choices[j] (a space that searches it;
	                             * the field attention is then unused) */
	int nattn_choices;
	uint8_t attn_choices[CM_MAX_ATTN_CHOICES];      /* enum cm_attention */
	int prec_hp;                /* > 0: hyperparameter prec_hp - 1, a
	                             * categorical, picks each configuration's
	                             * precision: value j runs prec_choices[j]
	                             * (a space that searches it; the field
	                             * precision is then unused) */
	int nprec_choices;
	uint8_t prec_choices[CM_MAX_PREC_CHOICES];      /* enum cm_precision */
	int fp16_hp, fp16_on;       /* > 0: Hugging Face's fp16 flag is
	                             * hyperparameter fp16_hp - 1, a categorical,
	                             * true at its value fp16_on (-1: never);
	                             * cm_precision_alts */
	int bf16_hp, bf16_on;       /* the same of the bf16 flag */
	int ckpt_hp;                /* > 0: hyperparameter ckpt_hp - 1, a
	                             * categorical, sets each configuration's
	                             * checkpointing: on where it picks value
	                             * ckpt_on (a space that searches it; the
	                             * field checkpointing is then unused) */
	int ckpt_on;
	/* optimizer arguments that change what torch.optim keeps, where a
	 * space searches them: momentum (SGD's and RMSprop's momentum_buffer
	 * where it is not 0: hyperparameter momentum_hp - 1, a real, or, with
	 * momentum_all, every configuration's), amsgrad (Adam's and AdamW's
	 * max_exp_avg_sq where categorical amsgrad_hp - 1 picks its value
	 * amsgrad_on) and centered (RMSprop's grad_avg, the same); mem_plan.c */
	int momentum_hp, momentum_all;
	int amsgrad_hp, amsgrad_on;
	int centered_hp, centered_on;
	int accum_hp;               /* > 0: hyperparameter accum_hp - 1 is each
	                             * configuration's grad_accum (a space that
	                             * searches it); 0: grad_accum for all */
	int softmax_keeps_input;    /* autograd keeps softmax's and log_softmax's input
	                             * beside their result until the backward, as
	                             * PyTorch <= 1.10 did (its derivative formulas
	                             * named `self`: pytorch/pytorch issue 64000,
	                             * fixed by pull 66018 for 1.11) */
	int pytorch;                /* the PyTorch release the workload names
	                             * (major * 100 + minor; 0: none named):
	                             * cm_pytorch_apply set the defaults above */
	struct cm_finetune ft;      /* frozen weights and LoRA (all zero: full training) */
};

/* Shows the workload's LoRA rank in the configuration: where wl has LoRA
 * of an integer rank (not an expression) and the model has an int
 * hyperparameter lora_r (the templates', read only when the rank names
 * it), that hyperparameter's value becomes the rank (within its range),
 * so that a configuration does not read "lora_r=8" beside a rank of 16.
 * Costs do not change. Call after the defaults and the preset, before the
 * user's values. */
void cm_ft_config_rank(const struct cm_model_def *def, const struct cm_workload *wl, union expr_val *vals);

/* How torch.optim runs a step (the workload's optimizer_impl):
 *   foreach   over all weights at once (PyTorch >= 2.0 on CUDA): each
 *             temporary made for every weight together
 *   for_loop  one weight at a time (PyTorch < 2.0 torch.optim,
 *             transformers.AdamW): the temporaries of one weight
 *   fused     fused=True: a CUDA kernel updates weights and state in place,
 *             no temporaries (Adam, AdamW, SGD: cm_optimizer_check) */
enum cm_optimizer_impl { CM_OPT_IMPL_FOREACH, CM_OPT_IMPL_FOR_LOOP, CM_OPT_IMPL_FUSED };
/* The optimizer states' storage (set from the optimizer's name):
 *   native  the dtype of the state above (fp32, the weights' in pure
 *           fp16/bf16)
 *   fp32    bitsandbytes' 32-bit optimizers: fp32 whatever the weights
 *   8bit    bitsandbytes' 8-bit ones: uint8 and an fp32 absmax per 256
 *           values, fp32 for tensors under 4096 values (as adam_8bit) */
enum cm_optimizer_states { CM_OPT_STATES_NATIVE, CM_OPT_STATES_FP32, CM_OPT_STATES_8BIT };

#define CM_CHOICE_MAX 3         /* values a choice may have */
/* The workload options that pick one of a few named values, the first the
 * default: zero_grad (set_to_none|zeros -> keep_grads), optimizer_impl
 * (foreach|for_loop|fused -> optimizer_impl) and softmax_saves
 * (output|output_and_input -> softmax_keeps_input). One table (cm_choice.c)
 * for the query parser, the CLI and the JSON they write. */
struct cm_choice;
/* The choice of a JSON workload field ("zero_grad"), or NULL. */
const struct cm_choice *cm_choice_by_field(const char *field);
/* The choice of a command-line option ("--zero-grad"), or NULL. */
const struct cm_choice *cm_choice_by_option(const char *option);
/* The JSON workload field of a choice ("zero_grad"). */
const char *cm_choice_field(const struct cm_choice *c);
/* Sets wl's member from a JSON value (one of the value names); DN_EINVAL
 * at "$.workload.<field>" listing the values (and the closest one). 0 or -1. */
int cm_choice_from_json(const struct cm_choice *c, const json_t *v, struct cm_workload *wl,
    struct dn_error *err);
/* The same from an option's text; DN_EINVAL at the option. 0 or -1. */
int cm_choice_from_option(const struct cm_choice *c, const char *v, struct cm_workload *wl,
    struct dn_error *err);
/* Adds to a JSON workload object every choice of wl that is not the
 * default ("zero_grad": "zeros"); 0, or -1 when out of memory. */
int cm_choice_to_json(const struct cm_workload *wl, json_t *workload);

/* PyTorch's version as a workload preset (cm_pytorch.c, which lists what
 * changed in which release). cm_pytorch_parse: "MAJOR.MINOR" or
 * "MAJOR.MINOR.PATCH" (1.0 .. 9.99) -> major * 100 + minor, or -1.
 * cm_pytorch_apply: sets wl->pytorch and the defaults that release had
 * (softmax_keeps_input before 1.11; keep_grads, optimizer_impl for_loop and
 * eager attention before 2.0, SDPA from 2.0); a parser applies it first
 * and the fields given explicitly after it, so they win.
 * cm_pytorch_check: DN_EINVAL at attention_path when an SDPA kernel is
 * chosen with a release before 2.0; 0 or -1. */
int cm_pytorch_parse(const char *s);
void cm_pytorch_apply(int version, struct cm_workload *wl);
int cm_pytorch_check(const struct cm_workload *wl, const char *attention_path, struct dn_error *err);

/* How MACs are counted (cm_macs.c has each convention's rules and sources).
 * TORCHVISION (the default; torchvision's published "GFLOPS" count this
 * way): multiply-accumulates of conv, linear, matmul, attention and recurrent
 * layers, no bias. NB201: NAS-Bench-201's counter (xautodl
 * get_model_infos), which also adds each biased conv's and linear's bias, one
 * per output element. FVCORE: fvcore's FlopCountAnalysis with its default
 * handles: conv, linear, matmul and bmm MACs, plus batch norm (1 or 2 per
 * element in inference, 4 or 5 in training), layer and group norm (4 or 5 per
 * element) and adaptive average pooling (1 per input element); recurrent
 * layers, fused attention kernels and everything elementwise count 0. */
enum cm_macs_convention { CM_MACS_TORCHVISION, CM_MACS_NB201, CM_MACS_FVCORE };

/* "torchvision", "nb201" (also "nas-bench-201") or "fvcore", any case; 0, or
 * -1 when unknown. */
int cm_macs_convention_parse(const char *s, enum cm_macs_convention *out);
const char *cm_macs_convention_name(enum cm_macs_convention c);

/* The optimizers' names (cm_optimizer.c), any case: dnnsat's and those
 * of Hugging Face's TrainingArguments.optim for the same optimizers.
 * cm_optimizer_parse: 0 with *out and *impl (the enum cm_optimizer_impl
 * the name implies, "adamw_torch_fused": fused, or -1); -2 for a Hugging
 * Face name not modelled; -1 for an unknown name. cm_optimizer_refuse:
 * DN_EINVAL at path for parse's rc (-1 or -2), listing the names; -1.
 * cm_optimizer_settle, once the workload is read (implied_by: the name
 * given, "" for none): keeps a Hugging Face name and its states' storage,
 * applies the implied implementation (DN_EINVAL at impl_path when
 * impl_given says otherwise) and refuses fused for an optimizer
 * torch.optim has no fused step for; 0 or -1. cm_optimizer_label: the
 * name to show and write back (the Hugging Face name as given, else
 * cm_optimizer_name). */
#define CM_OPTIMIZER_NAMES "sgd, sgd_momentum, adam, adamw, adagrad, rmsprop, adam_8bit, adafactor, lion; " \
	"Hugging Face's adamw_torch, adamw_torch_fused, adamw_hf, adamw_apex_fused, adamw_8bit, " \
	"adamw_bnb_8bit, paged_adamw_8bit, paged_adamw_32bit, lion_32bit, paged_lion_32bit, lion_8bit, " \
	"paged_lion_8bit, rmsprop_bnb, rmsprop_bnb_32bit, rmsprop_bnb_8bit"
int cm_optimizer_parse(const char *s, enum cm_optimizer *out, int *impl);
int cm_optimizer_refuse(const char *s, int rc, const char *path, struct dn_error *err);
int cm_optimizer_settle(struct cm_workload *wl, int implied, const char *implied_by, int impl_given,
    const char *impl_path, struct dn_error *err);
const char *cm_optimizer_label(const struct cm_workload *wl);
/* The optimizer of name s as one choice of a space over wl (its step: the
 * one the name implies, else wl's where torch.optim has it for that
 * optimizer, else foreach); 0, or -1 when s names no optimizer modelled. */
int cm_optimizer_choice(const char *s, const struct cm_workload *wl, struct cm_opt_choice *out);
const char *cm_optimizer_name(enum cm_optimizer o);
/* A true/false setting a space may search, as a condition: hyperparameter
 * hp - 1 at its true value `on` (-1: never true), or, hp 0, the constant
 * fixed (cm_choice.c). */
expr_id cm_flag_on(struct expr_graph *g, int hp, int on, int fixed);
/* Adds value under cond to the list of *n values and their conditions,
 * or ORs cond into value's; nothing when cond is the constant 0. The
 * caller gives room for every distinct value. */
void cm_alt_add(struct expr_graph *g, int value, expr_id cond, int *n, int *values, expr_id *conds);
/* The precision of the workload's name s (fp32, fp16, bf16, mixed_fp16,
 * mixed_bf16; float32, float16, bfloat16, amp); 0, or -1. */
int cm_precision_parse(const char *s, enum cm_precision *out);
const char *cm_precision_name(enum cm_precision p);
/* The precision a framework's name s means (cm_precision.c lists them):
 * the workload's names, Lightning's Trainer(precision=...) ("16-mixed",
 * "32", ...; where Lightning gives no meaning, the workload's names), or
 * Accelerate's mixed_precision ("no", "fp16", "bf16"). 0, or -1 with why
 * (len bytes) saying what is wrong: a name of none, one of fp64 or fp8. */
enum cm_prec_names { CM_PREC_NAMES_WORKLOAD, CM_PREC_NAMES_LIGHTNING, CM_PREC_NAMES_ACCELERATE };
int cm_precision_parse_as(enum cm_prec_names conv, const char *s, enum cm_precision *out, char *why, size_t len);
/* The precisions a configuration of wl may run, each under the condition
 * that picks it (disjoint): the values of a space's precision
 * (wl->prec_hp), or what Hugging Face's fp16/bf16 flags make
 * (wl->fp16_hp, bf16_hp: autocast fp16, autocast bf16, or, neither true,
 * fp32 or the workload's pure half precision), or the workload's precision
 * under the constant 1. Returns how many (1 to CM_MAX_PREC_CHOICES) into
 * precs (enum cm_precision) and conds (room for CM_MAX_PREC_CHOICES); *conflict is the
 * condition that none applies (both flags true) or the constant 0. */
int cm_precision_alts(struct expr_graph *g, const struct cm_workload *wl, int *precs, expr_id *conds,
    expr_id *conflict);
int cm_attention_parse(const char *s, enum cm_attention *out);
const char *cm_attention_name(enum cm_attention a);
/* The kernel an attention layer runs for a workload on a device:
 * CM_ATTN_SDPA becomes what PyTorch's dispatcher picks (flash when the
 * device has compute capability >= 8.0 and the dtype is fp16 or bf16, the
 * memory-efficient kernel otherwise); the other choices are returned as
 * given (whether the device can run them is a validity rule of the model). */
enum cm_attention cm_attention_resolve(const struct cm_workload *wl, const struct cm_device *dev);
/* The device's compute capability (major * 10 + minor): the catalog's, or,
 * when unknown, 80 for a device with bf16 arithmetic (which arrived with
 * sm80, Ampere) and 70 otherwise. */
int cm_device_cc(const struct cm_device *dev);

/* ---- building and evaluating ---- */

struct cm_model;

/* Builds every cost of `def` as expressions, for one workload and device.
 * `bounds` (may be NULL) gives an interval per hyperparameter to tighten
 * the unrolling of symbolic repeats; NULL uses the declared min/max. */
int cm_model_build(struct cm_model_def *def, const struct cm_workload *wl,
    const struct cm_device *dev, const struct expr_ival *bounds,
    struct cm_model **out, struct dn_error *err);
void cm_model_free(struct cm_model *m);

/* The expression graph of a built model (for the solver). */
const struct expr_graph *cm_model_graph(const struct cm_model *m);
const struct cm_model_def *cm_model_def(const struct cm_model *m);
/* The workload the model was built for. */
const struct cm_workload *cm_model_workload(const struct cm_model *m);

enum cm_mem_cat {
	CM_MEM_WEIGHTS, CM_MEM_GRADIENTS, CM_MEM_OPTIMIZER, CM_MEM_INPUTS,
	CM_MEM_ACTIVATIONS, CM_MEM_TEMPORARIES, CM_MEM_WORKSPACE,
	CM_MEM_ALLOCATOR, CM_MEM_CONTEXT, CM_MEM_NCAT
};
const char *cm_mem_cat_name(enum cm_mem_cat c);

enum cm_phase { CM_PHASE_FORWARD, CM_PHASE_BACKWARD, CM_PHASE_OPTIMIZER };

/* Root expressions of a built model, one per reported quantity. */
enum cm_metric {
	CM_M_VALID,             /* 1 when every validity constraint holds */
	CM_M_PARAMS, CM_M_MACS, CM_M_FLOPS, CM_M_TRAIN_FLOPS,
	CM_M_WEIGHT_BYTES,      /* in the workload's storage dtype */
	CM_M_ACT_SAVED,         /* bytes saved for backward (storages once) */
	CM_M_MEM_TRAIN,         /* peak training memory, device level */
	CM_M_MEM_INFER,         /* peak inference memory, device level */
	CM_M_MEM,               /* the workload's peak (training or inference) */
	CM_M_LAT_INFER,         /* seconds */
	CM_M_LAT_TRAIN,         /* seconds per training step */
	CM_M_UTIL,              /* estimated SM-busy share of the workload's step, 0..1 */
	CM_M_MEM_SAFE,          /* the workload's safe (upper) peak estimate, device level */
	CM_M_NMETRICS
};
const char *cm_metric_name(enum cm_metric m);
expr_id cm_model_metric(const struct cm_model *m, enum cm_metric which);
/* The model's shape rules (Refty constraints), whose conjunction is
 * CM_M_VALID: their number, and rule i's boolean node (1 where it holds,
 * its operator's guard folded in), with its instance path ("$.layers[7]")
 * and text ("heads divides the embedding size") in *path and *text (owned
 * by the model). Rules of several instances may share one node. */
int cm_model_nrules(const struct cm_model *m);
expr_id cm_model_rule(const struct cm_model *m, int i, const char **path, const char **text);

struct cm_violation {
	const char *path;       /* operator path, owned by the model */
	const char *rule;
	int nvals;
	const char *names[4];
	union expr_val vals[4];
	uint8_t real[4];
};

struct cm_result {
	int valid;
	int64_t params;                       /* the model's own (LoRA adapters excluded) */
	int64_t trainable_params;             /* what the optimizer updates (adapters included) */
	int64_t weight_bytes_fp32, weight_bytes_fp16, weight_bytes_int8;
	int64_t macs, flops, train_flops;
	int64_t act_saved_bytes;
	int64_t mem_train, mem_infer, mem;
	int64_t mem_safe;                     /* upper estimate of the workload's peak */
	int64_t mem_breakdown[CM_MEM_NCAT];   /* of the workload's peak */
	enum cm_phase peak_phase;
	int peak_op;                          /* op index at the peak, -1 none */
	double lat_infer, lat_train, util;
	int nviolations;                      /* total; the first few listed */
	struct cm_violation violations[8];
};

/* Size of the scratch array cm_model_eval needs (values per node). */
int32_t cm_model_scratch_len(const struct cm_model *m);

/*
 * Evaluates every cost of one configuration. `scratch` must hold
 * cm_model_scratch_len values (reused across calls; no allocation here).
 * Returns 0, or -1 with err set when a value overflows 64 bits (the error
 * names the expression's origin).
 */
int cm_model_eval(const struct cm_model *m, const union expr_val *config,
    union expr_val *scratch, struct cm_result *res, struct dn_error *err);

/* Fills `res` from values already computed for every node of the model's
 * graph (`vals` indexed by node id: a cm_model_eval scratch, or the
 * evaluation of a larger graph that extends the model's, as the solver's
 * queries do). No evaluation, no allocation, and no read of the graph
 * itself (which may grow meanwhile: a solver's explanation adds nodes). */
void cm_model_read(const struct cm_model *m, const union expr_val *vals, struct cm_result *res);

/* Sets need[id] for every node cm_model_read may read (need: one byte per
 * node of the graph, which may extend the model's): a partial tape that
 * computes these is enough for it (expr_tape_build_part). Keep in step
 * with cm_model_read; the tests compare both tapes' readings. */
void cm_model_mark_read(const struct cm_model *m, uint8_t *need);

/* Per-operator breakdown of the last evaluation held in `scratch`. */
struct cm_op_report {
	const char *path;
	const char *op;
	int present;
	int64_t params, macs, out_bytes, saved_bytes;
	int rank;
	int64_t shape[6];
	double fwd_seconds, bwd_seconds;
	/* the latency model's inputs (bench/latency/fit_latency.py reads them) */
	int64_t fwd_bytes, flops_other, kernel_area;
	int kernels_fwd, lib_calls, op_class;
};
int cm_model_nops(const struct cm_model *m);
/* 1 when the model has an attention layer (attention or attention_core), the
 * layers the workload's attention kernel applies to; else 0. */
int cm_model_has_attention(const struct cm_model *m);
/* Why the workload's gradient checkpointing changes nothing here, one
 * sentence (the warning the CLI prints and the API answers carry), or NULL
 * where it applies or was not asked for: an inference workload, or a model
 * without a checkpoint block (ckpt_plan.h). */
const char *cm_model_checkpointing_warning(const struct cm_model *m);

/* Shape of the model's output (the last layer's tensor, before the loss a
 * training build appends) for the configuration last evaluated in `scratch`;
 * returns its rank (at most 6). */
int cm_model_output_shape(const struct cm_model *m, const union expr_val *scratch,
    int64_t shape[6]);
void cm_model_op_report(const struct cm_model *m, const union expr_val *scratch,
    int op, struct cm_op_report *out);

#endif
