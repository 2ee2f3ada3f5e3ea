/*
 * op_build.h - the contract between the model builder and the operator rules
 * (op_*.c): a rule reads its attributes, checks its inputs, states its
 * validity constraints, creates its output and fills its costs, all as
 * expressions (private to costmodel/).
 *
 * A rule returns 0, or -1 after recording an error in ob->err naming the
 * attribute's JSON path. Rules never evaluate anything: every size is an
 * expression, so one rule serves evaluation, bounds and Z3 alike.
 */
#ifndef DN_OP_BUILD_H
#define DN_OP_BUILD_H

#include <jansson.h>

#include "model_graph.h"

struct model_builder;

struct op_build {
	struct cm_graph *m;
	struct model_builder *mb;
	const json_t *item;             /* the operator's JSON object (may be a synthesized one) */
	const char *file_path;          /* JSON path of the item in the model file */
	const char *inst_path;          /* path of this instance (through defs and repeats) */
	expr_id guard;
	int nin;
	int in[CM_MAX_IN];              /* input tensor indices */
	struct cm_tensor inputs[CM_MAX_IN]; /* snapshots: stable while the tensor array grows */
	struct cm_op op;                /* costs being filled */
	int out;                        /* output tensor index, set by the rule */
	int nsaved;
	int saved[8];                   /* tensors saved for backward */
	int nextra;
	expr_id extra_saved[4];         /* new tensors saved for backward (bytes) */
	int tied_weight;                /* uses another operator's weight (a tied linear) */
	struct dn_error *err;
};

struct op_rule {
	const char *name;
	const char *const *attrs;       /* allowed attribute names, NULL-terminated */
	int min_in, max_in;             /* number of input tensors */
	enum cm_op_class op_class;
	int (*build)(struct op_build *ob);
};

/* The registry (op_registry.c). */
const struct op_rule *op_rule_find(const char *name);
int op_rule_count(void);
const char *op_rule_name(int i);

/* Attribute readers. `dflt` of OB_REQUIRED makes the attribute mandatory.
 * Integer attributes accept JSON integers or expression strings. */
#define OB_REQUIRED INT64_MIN
expr_id ob_int(struct op_build *ob, const char *name, int64_t dflt);
int ob_pair(struct op_build *ob, const char *name, int64_t dflt, expr_id out[2]);
/* One integer attribute per spatial dimension (n = 2: height, width; 3:
 * depth, height, width): a single value for all, or a list of n. 0 or -1. */
int ob_tuple(struct op_build *ob, const char *name, int64_t dflt, int n, expr_id *out);
int ob_bool(struct op_build *ob, const char *name, int dflt);
double ob_number(struct op_build *ob, const char *name, double dflt, double lo, double hi);
/* A list attribute of lo to hi integer expressions into out (hi entries):
 * returns the count, or -1 with an error naming the attribute or entry. */
int ob_int_list(struct op_build *ob, const char *name, int lo, int hi, expr_id *out);
/* A list attribute of 1 to CM_MAX_RANK integer expressions, each required
 * to be >= 1 (a parameter's shape): fills dims, returns the count or -1. */
int ob_dims(struct op_build *ob, const char *name, expr_id dims[CM_MAX_RANK]);
/* Whether the attribute is present. */
int ob_has(const struct op_build *ob, const char *name);
/* An error about attribute `name` (NULL: the operator itself). */
int ob_fail(struct op_build *ob, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Whether the model is built for a training step. */
int ob_training(const struct op_build *ob);
/* Whether this operator's weights get gradients (in a training step; the
 * backward costs an inference build reports assume they do): not frozen
 * (op.frozen, set from the workload's fine-tuning selectors, training only,
 * before the rule runs; a rule may refine it, as a tied linear does). */
int ob_weights_train(const struct op_build *ob);

/* Inputs. */
static inline const struct cm_tensor *
ob_in(const struct op_build *ob, int i)
{
	return &ob->inputs[i];
}
expr_id ob_elems(struct op_build *ob, int rank, const expr_id *dims);
expr_id ob_bytes(struct op_build *ob, expr_id elems, enum cm_dtype dt);

/* States "cond must hold" for this operator (guarded automatically). */
void ob_require(struct op_build *ob, expr_id cond, const char *rule,
    int nvals, const char *const *names, const expr_id *vals);
/* Requires input i to have `rank` dimensions. */
int ob_need_rank(struct op_build *ob, int i, int rank_lo, int rank_hi);

/* Outputs: a new storage, a view of input i, or input i modified in place. */
int ob_out_new(struct op_build *ob, int rank, const expr_id *dims, enum cm_dtype dt);
int ob_out_view(struct op_build *ob, int i, int rank, const expr_id *dims, int contiguous);
int ob_out_inplace(struct op_build *ob, int i);

/* Costs. */
void ob_param(struct op_build *ob, expr_id elems);
/* A weight of two or more dims, shape [..., rows_last, cols_last] folded
 * into `rows` = prod(shape[:-1]) and `cols` = prod(shape[:-2]) * shape[-1]
 * (what Adafactor keeps: rows + cols fp32 values instead of one per
 * element); its elements are rows * cols / prod(shape[:-2]), given as
 * `elems`. */
void ob_param_2d(struct op_build *ob, expr_id elems, expr_id rows, expr_id cols);
void ob_buffer(struct op_build *ob, expr_id elems);
void ob_save_input(struct op_build *ob, int i);
/*
 * Mixed precision runs under torch.autocast (CUDA's op lists, "Automatic
 * Mixed Precision package", torch.amp docs): matmul, linear, conv and the
 * recurrent cells run in fp16/bf16 on casts of their inputs; softmax,
 * log_softmax, layer_norm and group_norm run in fp32; every other op runs
 * in its inputs' type, and a binary op of an fp16 and an fp32 tensor gives
 * fp32 (type promotion). Weights are fp32 (embeddings and learned tensors
 * give fp32 outputs); the data loader's float batch is fp32.
 *   ob_autocast: the workload is mixed precision (mixed_fp16, mixed_bf16).
 *   ob_autocast_f32: the dtype of an op autocast runs in fp32 (CM_DT_F32
 *     under autocast, else CM_DT_ACT).
 *   ob_widest: the output dtype of an op that runs in its inputs' type
 *     (CM_DT_F32 when autocast is on and an input is fp32, else CM_DT_ACT).
 *   ob_save_gemm_input: a GEMM keeps input i for backward: the input itself,
 *     or under autocast, when it is fp32, the fp16/bf16 copy autocast made
 *     (a new tensor; the fp32 one is not kept by this op).
 *   ob_save_softmax_input: softmax or log_softmax keeps input i beside its
 *     result, when the workload says so (softmax_saves output_and_input,
 *     PyTorch <= 1.10): the input itself, or under autocast, when it is
 *     fp16/bf16, the fp32 copy autocast made; nothing otherwise.
 */
int ob_autocast(const struct op_build *ob);
enum cm_dtype ob_autocast_f32(const struct op_build *ob);
enum cm_dtype ob_widest(const struct op_build *ob);
void ob_save_gemm_input(struct op_build *ob, int i);
void ob_save_softmax_input(struct op_build *ob, int i);
void ob_save_output(struct op_build *ob);
void ob_save_new(struct op_build *ob, expr_id bytes);

/* Runs another rule as a sub-operator of this one (attention is built from
 * linear, matmul, softmax, ...): `attrs` is a JSON object the caller owns;
 * returns the sub-operator's output tensor or -1. */
int ob_sub(struct op_build *ob, const char *rule, const char *suffix,
    json_t *attrs, int nin, const int *in);
/* The same with a rule that is not in the registry (a composite's own
 * kernel that model files cannot name). */
int ob_sub_rule(struct op_build *ob, const struct op_rule *rule, const char *suffix,
    json_t *attrs, int nin, const int *in);
/* ob_sub taking over `attrs` (released here; NULL reports out of memory)
 * with input a, and b unless b < 0. */
int ob_sub_take(struct op_build *ob, const char *rule, const char *suffix,
    json_t *attrs, int a, int b);
/* ob_sub_rule taking over `attrs`, run on input a only where `cond` holds:
 * the sub-operator's costs and storages are guarded by cond, and where it
 * does not hold the result is input a itself (Hugging Face's repeat_kv
 * returns its input when there is nothing to repeat). Returns the result
 * (a select tensor of the two when cond is not constant) or -1. */
int ob_sub_rule_if(struct op_build *ob, expr_id cond, const struct op_rule *rule,
    const char *suffix, json_t *attrs, int a);
/* Runs body(ob, arg) with names[i] bound to vals[i] (i < n) in a private
 * scope, so that a composite's sub-operators can name its sizes in their
 * attributes ("__attn_e"); the names should start with "__" to stay clear
 * of model names. Restores the scope; returns body's result or -1. */
int ob_with_binds(struct op_build *ob, int n, const char *const *names, const expr_id *vals,
    int (*body)(struct op_build *ob, void *arg), void *arg);
/* The attention kernel of this build (cm_attention_resolve) and the
 * device's compute capability (cm_device_cc). */
enum cm_attention ob_attention(const struct op_build *ob);
int ob_device_cc(const struct op_build *ob);
/* Builds an attention layer's kernel part, body(ob, kernel, arg) returning
 * its result tensor: once with ob_attention's kernel, or, where a space
 * picks the kernel (cm_workload.attn_hp), once per kernel it can pick,
 * each under the guard of its values and with sub-operators named under
 * ".<kernel>" (two values that run one kernel share a build). Returns the
 * result (a select tensor of the kernels' where they differ) or -1. */
int ob_attention_alts(struct op_build *ob, int (*body)(struct op_build *ob, enum cm_attention kernel,
    void *arg), void *arg);

#endif
