/*
 * onnx_import.h - ONNX graphs to dnnsat model files (docs/model-format.md).
 *
 * Each symbolic dimension of the graph's inputs (dim_param) becomes an int
 * hyperparameter (renamable), and every shape computed from it (Shape,
 * Gather, Concat, arithmetic: the shape code of dynamic exports) is carried
 * as an expression over those hyperparameters, never a constant. Operators
 * on activations become model-format operators whose parameters come from
 * the initializers they read (Conv/Gemm/MatMul weights, embeddings,
 * normalisation scales); torch's LayerNorm and GELU expansions are folded
 * back into layernorm and gelu. Computations that do not depend on the
 * inputs (masks, position ids) are not layers; index tensors an embedding
 * reads become extra int64 inputs, with id_range when they are positions.
 */
#ifndef DN_ONNX_IMPORT_H
#define DN_ONNX_IMPORT_H

#include <jansson.h>
#include <stddef.h>

#include "dn_error.h"

struct onnx_import_opts {
	const char *name;          /* the model's name (NULL: the graph's) */
	const char *const *renames; /* "from=to" pairs for symbolic dims, NULL-terminated, or NULL */
	int unknown_elementwise;   /* price unknown operators as elementwise (with a warning) */
	const char *base_dir;      /* where external data files are looked for (NULL: not checked) */
	size_t memory_limit;       /* bytes the import may hold besides the file (0: 256 MiB) */
	/* warnings: called once per message (may be NULL) */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
};

/* The model file for the ONNX model in data[0..len): a new JSON object, or
 * NULL with err (a corrupt file, an unknown operator named with its node
 * and position, a graph over the limits). */
json_t *onnx_import(const void *data, size_t len, const struct onnx_import_opts *opts, struct dn_error *err);

/* onnx_import on a file (read whole, at most 2 GiB; external data looked
 * for beside it). */
json_t *onnx_import_file(const char *path, const struct onnx_import_opts *opts, struct dn_error *err);

#endif
