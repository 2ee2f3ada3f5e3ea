/*
 * model_graph.h - the instantiated model: operators in execution order, the
 * tensors between them and the storages behind the tensors, every size and
 * cost an expression over the hyperparameters (private to costmodel/).
 *
 * Invariants:
 *  - ops[] is in forward execution order; an op only reads tensors produced
 *    by earlier ops or by the model inputs (producer -1).
 *  - Every op, storage and constraint carries a guard: a boolean expression
 *    that is 1 when the element exists in a configuration (choices, ifs and
 *    symbolic repeats instantiate every alternative under its guard). Costs
 *    are aggregated as sum(guard * cost); alternatives' guards are disjoint.
 *  - A tensor is backed by one storage, except the output of a choice, which
 *    stands for one of several tensors (`alts`), alts[i] where alt_conds[i]
 *    holds. An alternative may exist where it is not the one chosen (a
 *    repeat's output after k copies exists for every count >= k; the input
 *    of an operator that runs only under a condition exists either way), so
 *    an operator that keeps a choice output keeps alts[i]'s storage only
 *    where alt_conds[i] holds (storage.kept_if). Views (reshape, permute)
 *    and in-place ops share the storage of their input.
 *  - All memory is in bytes; `elems` counts elements.
 */
#ifndef DN_MODEL_GRAPH_H
#define DN_MODEL_GRAPH_H

#include <stdint.h>

#include "expr.h"
#include "costmodel.h"

#define CM_MAX_RANK 6
/* inputs of one operator: a concat's (DenseNet-201's densest block joins 49
 * tensors, torchvision's torch.cat of every earlier layer's features) */
#define CM_MAX_IN 64
#define CM_MAX_PARAM_TENSORS 16

enum cm_dtype { CM_DT_ACT, CM_DT_F32, CM_DT_I64, CM_DT_BOOL };

struct cm_tensor {
	int rank;
	expr_id dim[CM_MAX_RANK];
	expr_id elems;
	uint8_t dtype;
	uint8_t requires_grad;
	uint8_t contiguous;
	uint8_t owns_alts;      /* alts and alt_conds were allocated for this tensor */
	uint8_t act_bytes;      /* bytes of CM_DT_ACT where the tensor was made (the
	                         * graph's act_bytes then; cm_tensor_bytes) */
	int storage;            /* backing storage, or -1 for a choice output */
	int *alts;              /* choice output: the tensors it may stand for */
	expr_id *alt_conds;     /* ... alts[i] where alt_conds[i] holds (disjoint) */
	int nalts;
	int view_of;            /* tensor this is a view of, or -1 */
	int producer;           /* op index; -1 for model inputs */
	int last_use;           /* last op reading it or a view of it */
	expr_id id_end;         /* int64 ids: their values lie in [0, id_end);
	                         * EXPR_NONE when unknown (views keep it) */
	unsigned visit;         /* the graph's visit_clock when a liveness walk last reached it */
	expr_id walk_cond;      /* scratch of the walk that keeps a tensor (op_build.c):
	                         * where the kept tensor stands for this one */
};

struct cm_storage {
	expr_id bytes;
	expr_id guard;
	int producer;           /* op that allocates it; -1 for model inputs */
	int last_use;           /* last op reading it (forward) */
	int first_saver;        /* earliest op saving it for backward, or INT32_MAX */
	expr_id kept_if;        /* with a saver: kept for backward where this holds (1
	                         * unless it is kept only as a choice's alternative) */
	uint8_t extra;          /* made only to be kept for backward (masks, indices) */
	uint8_t recompute;      /* kept inside a checkpointed block: remade in backward (ckpt_plan.h) */
};

struct cm_op {
	const struct op_rule *rule;
	char *path;
	expr_id guard;
	int nin;
	int in0;                /* the first input tensor, -1 with none (cm_macs.c) */
	int out;
	/* weights */
	int nparam_tensors;
	expr_id param_elems[CM_MAX_PARAM_TENSORS];
	/* Adafactor's factored second moment of weight i: param_rows[i] and
	 * param_cols[i] values (the weight's dims folded as Hugging Face's
	 * Adafactor folds them), when param_factored[i]; else it is 1-D */
	expr_id param_rows[CM_MAX_PARAM_TENSORS], param_cols[CM_MAX_PARAM_TENSORS];
	uint8_t param_factored[CM_MAX_PARAM_TENSORS];
	expr_id params;         /* sum of param_elems, 0 when tied */
	expr_id buffer_elems;   /* non-learnable persistent fp32 state */
	/* compute */
	expr_id macs;           /* forward multiply-accumulates (conv, linear, matmul, attention, rnn) */
	expr_id flops_other;    /* other forward FLOPs (elementwise, norms, softmax, pooling) */
	expr_id bwd_macs;       /* backward multiply-accumulates */
	expr_id fwd_bytes;      /* forward memory traffic, bytes */
	expr_id bwd_bytes;
	expr_id parallel;       /* independent work items (output elements or GEMM tiles) */
	uint8_t op_class;       /* enum cm_op_class */
	uint8_t kernels_fwd, kernels_bwd;
	uint8_t lib_calls;      /* forward calls into cuDNN/cuBLAS (host cost beyond a launch) */
	expr_id kernel_area;    /* conv: kh * kw (its efficiency class); 0 otherwise */
	expr_id tile_out;       /* conv: outputs of its implicit GEMM in whole 128 x 64
	                         * tiles (rows N*Ho*Wo, columns Cout, each rounded
	                         * up to its tile); 0 otherwise */
	expr_id tile_tap_macs;  /* conv: MACs of one kernel tap over those tiles
	                         * (tile_out * Cin / groups); 0 otherwise */
	uint8_t bwd_passes;     /* conv: backward convolutions (input and weight
	                         * gradients, 0 to 2: bwd_macs = macs * bwd_passes) */
	/* rnn (op_rnn.c; 0 otherwise): the timesteps run one after another
	 * (sequence length * layers * directions: cuDNN may overlap layers and
	 * directions, so an upper bound), one step's recurrent multiply-adds
	 * (N * gates * H * H) and recurrent weight bytes (gates * H * H), and
	 * the input projections' multiply-adds, one GEMM over all timesteps per
	 * layer and direction (macs less the recurrent ones) */
	expr_id rnn_steps, rnn_step_macs, rnn_step_wbytes, rnn_proj_macs;
	expr_id bias_adds;      /* bias additions (output elements of a biased conv or
	                         * linear), counted as MACs under CM_MACS_NB201 */
	/* memory */
	expr_id ws_fwd, ws_bwd; /* transient workspace bytes */
	expr_id ws_bound;       /* an upper bound of either pass's workspace where
	                         * the library may ask more than ws_fwd/ws_bwd
	                         * (the safe estimate's; 0: none) */
	expr_id bwd_extra;      /* bytes of backward temporaries beyond gradients */
	/* gradient checkpointing (ckpt_plan.h): the checkpoint segment the
	 * builder put the operator in (1, 2, ...: the outermost layer item
	 * with "checkpoint" true, a copy of such a repeat or of a top-level
	 * repeat; 0: none), its block number + 1 (0: none) and the block's
	 * last operator (-1: none) */
	int ckpt_seg, ckpt, ckpt_last;
	/* fine-tuning: the weights are frozen (requires_grad=False: no
	 * gradient, no optimizer state, no autocast cache); the operator is a
	 * LoRA adapter (its weights are not the model's "params") */
	uint8_t frozen, adapter;
	/* enum cm_quant: the weight (param_elems[0]) is stored in that
	 * bitsandbytes layout (cm_quant.c; op_linear.c builds it, mem_plan.c
	 * sizes it); CM_QUANT_NONE for every other operator */
	uint8_t quant;
	/* a 4-bit linear (op_linear.c): 1 where bitsandbytes' gemv_4bit runs
	 * its forward instead of dequantizing the weight for a cuBLAS GEMM (one
	 * row that needs no gradient): one kernel launch and no library call
	 * fewer (perf_model.c); 0 for every other operator */
	expr_id gemv_row;
	/* multiply-accumulates of small products inside an operator that the
	 * torchvision and nb201 conventions count as elementwise work (rotary's
	 * frequency table, an [d/2, 1] x [1, L] outer product), which fvcore's
	 * matmul handle sees, and the count of fvcore's elementwise handles for
	 * upsampling (cm_macs.c) */
	expr_id aux_macs;
	/* a step of SDPA's math path (op_attention.c): PyTorch traces
	 * F.scaled_dot_product_attention as one aten op whatever its kernel,
	 * which fvcore's counter does not count (cm_macs.c) */
	uint8_t inside_sdpa;
	/* enum cm_precision the operator runs in: the workload's, or, where a
	 * search space picks the precision, that of the copy of the model it
	 * belongs to (cm_precision_alts; stamped by cm_graph_add_op) */
	uint8_t prec;
};

/* Expressions seen once each (hash-consed ids), at most 8; op_rotary.c */
struct cm_shape_set {
	expr_id id[8];
	int n;
};

enum cm_op_class { CM_CLASS_GEMM, CM_CLASS_CONV, CM_CLASS_ELEMENTWISE,
	CM_CLASS_REDUCTION, CM_CLASS_VIEW, CM_CLASS_RNN, CM_CLASS_COUNT };

struct cm_constraint {
	expr_id ok;             /* 1 when satisfied (guard already folded in) */
	char *path;
	char *text;             /* the rule, e.g. "output height >= 1" */
	int nvals;
	char *val_names[4];
	expr_id vals[4];        /* values shown when violated */
	uint8_t val_real[4];    /* their types (read without the graph) */
};

/* One use of a storage or tensor by an operator: op reads it (or keeps
 * it) where cond holds: the operator's guard and, through choice outputs,
 * the conditions under which the tensor read stands for this one. Uses are
 * recorded in op order (op_build.c); mem_plan.c ends a storage's life, a
 * gradient's flight and a kept activation's release at the last (first)
 * use that holds for the configuration, not at the last (first) operator
 * of any alternative. */
struct cm_use {
	int id;                 /* storage or tensor index */
	int op;
	expr_id cond;
};

struct cm_graph {
	struct expr_graph g;
	struct cm_tensor *tensors;
	int ntensors, captensors;
	struct cm_storage *storages;
	int nstorages, capstorages;
	struct cm_op *ops;
	int nops, capops;
	struct cm_constraint *cons;
	int ncons, capcons;
	int output;             /* the final tensor */
	int act_bytes;          /* bytes per element of the compute dtype */
	int prec;               /* enum cm_precision of the operators being added:
	                         * the builder sets both per copy of the model
	                         * (model_build.c) */
	int nattention;         /* attention layers built (attention, attention_core) */
	/* rotary cos/sin tables (op_rotary.c), one pair per model and shape, as
	 * Hugging Face computes them once per forward and every layer uses (and
	 * saves) the same two tensors: those already computed (their frequency
	 * product charged to an operator's aux_macs) and those already charged
	 * to a saved set */
	struct cm_shape_set rotary_made, rotary_saved;
	unsigned visit_clock;   /* bumped per liveness walk (op_build.c): each tensor once per walk */
	struct cm_use *reads;   /* storages read (forward liveness) */
	int nreads, capreads;
	struct cm_use *treads;  /* tensors read, through views (gradients in flight) */
	int ntreads, captreads;
	struct cm_use *keeps;   /* storages kept for backward */
	int nkeeps, capkeeps;
};

/* Appends elements; each returns the new index or -1 (out of memory). */
int cm_graph_add_storage(struct cm_graph *m, expr_id bytes, expr_id guard, int producer);
int cm_graph_add_tensor(struct cm_graph *m, const struct cm_tensor *proto);
int cm_graph_add_op(struct cm_graph *m, const struct cm_op *proto);
int cm_graph_add_constraint(struct cm_graph *m, expr_id guard, expr_id ok,
    const char *path, const char *text, int nvals, const char *const *names,
    const expr_id *vals);
void cm_graph_free(struct cm_graph *m);

/* 1 when tensor t is an operator's output that holds no storage of its
 * own: an in-place operator on a choice output (a ReLU(inplace=True) after
 * an optional batch norm) writes into the alternatives' storages, but its
 * output is a tensor of its own, with its own gradient. A choice output
 * made by mb_make_select is not (it stands for its alternatives). */
int cm_graph_inplace_on_choice(const struct cm_graph *m, int t);

/* Bytes of one element of a dtype, for this graph's compute dtype. */
/* Bytes per element: cm_dtype_bytes of the dtype in the copy being built
 * (while building), cm_tensor_bytes of a tensor built (any time). */
int cm_dtype_bytes(const struct cm_graph *m, enum cm_dtype dt);
int cm_tensor_bytes(const struct cm_tensor *t);

#endif
