/*
 * onnx_import_priv.h - the importer's state, shared by onnx_import.c (the
 * driver: values, inputs, hyperparameters, the JSON document), onnx_ops.c
 * with onnx_op_*.c (the translation of each operator, onnx_op.h) and
 * onnx_fuse.c (expansions folded back).
 *
 * Every ONNX value is one of: DATA, an activation that depends on a graph
 * input (a layer of the model file, `ref` its name there, `shape` its
 * dimensions); CONST, a tensor known from the file (an initializer when
 * `param`); SYM, a small int64 tensor of rank 0 or 1 (2 only in torch's F.pad
 * export, onnx_op_sym2.c) whose entries are
 * dimensions (shape arithmetic); DERIVED, a tensor computed without the
 * inputs whose values are unknown (masks, ids), of known shape.
 */
#ifndef DN_ONNX_IMPORT_PRIV_H
#define DN_ONNX_IMPORT_PRIV_H

#include "onnx_arena.h"
#include "onnx_dim.h"
#include "onnx_import.h"
#include "onnx_model.h"

#define ONNX_SYM_MAX 64 /* entries of a shape tensor */

enum onnx_vkind { ONNX_V_NONE, ONNX_V_DATA, ONNX_V_CONST, ONNX_V_SYM, ONNX_V_DERIVED };

struct onnx_val {
	const char *name;
	enum onnx_vkind kind;
	int rank;
	struct onnx_dim shape[ONNX_MAX_RANK];   /* DATA, DERIVED, CONST */
	const char *ref;                        /* DATA: its name in the model file */
	const struct onnx_tensor *t;            /* CONST */
	int param;                              /* CONST: from an initializer */
	int transposed;                         /* CONST 2-d: the initializer's transpose */
	int permuted;                           /* DATA: a permuted (non-contiguous) view */
	int n;                                  /* SYM: entries (rank 0: one) */
	struct onnx_dim *e;                     /* SYM */
	double scale;                           /* DERIVED: 0, or above 0: the values are the
	                                         * real numbers e[0 .. n) * scale (sizes times
	                                         * a float, torch's F.interpolate(
	                                         * recompute_scale_factor=True)), which a Floor
	                                         * or a Cast to an integer type makes the SYM
	                                         * floor(e[i] * scale); to every other reader
	                                         * they are DERIVED: unknown values */
	int iota;                               /* DERIVED: 0, 1, ... along the last axis */
	struct onnx_dim id_range;               /* DERIVED iota: the count of distinct ids */
	int nconsumers;
	int consumers[4];                       /* the first nodes reading it */
	int producer;                           /* node index, -1 for inputs and initializers */
	int dyn;                                /* its values depend on a graph input's (onnx_fuse.c) */
	int rnn_bf;                             /* DATA: the batch-first [N, L, F] result of an LSTM or
	                                         * GRU layer standing for torch's seq-first [L, N, F]
	                                         * (onnx_op_rnn.c); read only by RNN nodes and a
	                                         * Transpose [1, 0, 2], which is that result */
};

enum onnx_fuse { ONNX_FUSE_NONE, ONNX_FUSE_SKIP, ONNX_FUSE_GELU, ONNX_FUSE_GELU_TANH, ONNX_FUSE_LAYERNORM,
	ONNX_FUSE_ATTENTION, ONNX_FUSE_SHADOW, ONNX_FUSE_HARDSWISH, ONNX_FUSE_SILU,
	ONNX_FUSE_MISH, ONNX_FUSE_GROUPNORM };

/* An attention core found by onnx_fuse.c: the nodes from the head splits of
 * q, k, v to the merge of the heads, translated at `last` (the merging
 * Reshape) as one attention_core layer. */
#define ONNX_ATTN_CHAIN 24
struct onnx_attn {
	int last;                   /* the merging Reshape */
	const char *q, *k, *v;      /* [N, L, E] each ([L, N, E] seqfirst), before the head split */
	int reshape[3];             /* the Reshapes splitting q, k, v into [N, L, h, d] ([L, N*h, d]) */
	int dropout;                /* the Dropout node on the probabilities, or -1 */
	int causal;                 /* a Where (causal mask) rather than an additive mask */
	int seqfirst;               /* nn.MultiheadAttention's layout: q, k, v [L, N, E], split
	                             * into [L, N*h, d] and the heads folded into the batch of
	                             * 3-d MatMuls; merged back to [L*N, E] or [L, N, E] */
	int chain[ONNX_ATTN_CHAIN]; /* every node folded, in graph order, `last` included */
	int nchain;
	json_t *shadow;             /* the layers its nodes translate to, one by one */
};

struct onnx_imp {
	struct onnx_arena *ar;
	const struct onnx_model *m;
	const struct onnx_import_opts *opts;
	struct dn_error *err;
	struct onnx_val **tab;      /* open-addressing table by name */
	size_t tabsize;
	json_t *doc, *hps, *inputs, *layers;
	int node;                   /* the node being translated */
	int *fuse;                  /* per node: enum onnx_fuse */
	const char **fuse_x;        /* per node: the fused operator's input */
	int *fuse_affine;           /* layernorm, groupnorm: affine; ONNX_FUSE_SHADOW: index into attns */
	int64_t *fuse_groups;       /* groupnorm: its groups */
	struct onnx_attn *attns;    /* attention cores found (onnx_fuse.c) */
	int nattns;
	const struct onnx_tensor **embeddings; /* the tables embeddings read (for tied heads) */
	int nembeddings;
	char warned[64][32];        /* op types warned about (--unknown elementwise) */
	int nwarned;
	int nrefs;                  /* names shortened so far */
};

/* The value named `name`, created (kind NONE) when new; NULL out of memory. */
struct onnx_val *onnx_imp_val(struct onnx_imp *im, const char *name);
/* The value, or NULL when unknown. */
struct onnx_val *onnx_imp_find(struct onnx_imp *im, const char *name);
/* The initializer value `name` is, directly or through Unsqueeze, Reshape,
 * Squeeze, Identity, Transpose, Slice or Split nodes (a scale reshaped to
 * broadcast: nn.PReLU's and nn.GroupNorm's weights; a part of one:
 * nn.MultiheadAttention's in_proj_weight split for cross-attention), or
 * NULL. Reads the graph only: usable before
 * translation. */
struct onnx_val *onnx_imp_param_source(struct onnx_imp *im, const char *name);
/* An error about the current node: "node 12 'name' (Conv): ...". -1. */
int onnx_imp_fail(struct onnx_imp *im, enum dn_error_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void onnx_imp_warn(struct onnx_imp *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Adds an int64 input to the model file for a DERIVED index tensor; its
 * value becomes DATA. 0 or -1. */
int onnx_imp_add_index_input(struct onnx_imp *im, struct onnx_val *v);

/* The model file's name for an ONNX value: the name itself when it fits
 * the format's 64 characters, else "tN." and the name's tail (unique by N);
 * NULL when out of memory. */
const char *onnx_imp_ref(struct onnx_imp *im, const char *name);
/* Translates node i (onnx_ops.c). 0 or -1 with im->err. */
int onnx_ops_translate(struct onnx_imp *im, int i);
/* Finds torch's LayerNorm and erf-GELU expansions (onnx_fuse.c), filling
 * im->fuse; runs after every value's consumers are known. */
void onnx_fuse_find(struct onnx_imp *im);
/* Whether node j is a Transpose [1, 0, 2], torch's batch-first swap around
 * an LSTM or GRU (onnx_op_rnn.c). */
int onnx_op_rnn_input_transpose(struct onnx_imp *im, int j);

#endif
