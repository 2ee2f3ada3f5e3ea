/*
 * onnx_model.h - the parts of an ONNX ModelProto the importer reads, parsed
 * from the wire without copying weights: tensors point into the caller's
 * buffer, names are NUL-terminated copies in the arena. Subgraphs (If,
 * Loop) are not read; sparse initializers are refused.
 *
 * Limits (ONNX_MAX_*) are enforced while parsing, with an error naming the
 * message and field, so an absurd file is refused before it costs memory.
 */
#ifndef DN_ONNX_MODEL_H
#define DN_ONNX_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "dn_error.h"
#include "onnx_arena.h"

#define ONNX_MAX_NODES 200000
#define ONNX_MAX_TENSORS 200000
#define ONNX_MAX_RANK 16
#define ONNX_MAX_IO 64      /* inputs or outputs of one node */
#define ONNX_MAX_ATTRS 64   /* attributes of one node */
#define ONNX_MAX_LIST 4096  /* entries of an ints/floats attribute */
#define ONNX_ATTR_STRINGS 8 /* entries of a strings attribute kept (RNN activations) */
#define ONNX_MAX_NAME 4096  /* bytes of a name */

/* TensorProto.DataType values the importer distinguishes */
enum onnx_dtype {
	ONNX_FLOAT = 1, ONNX_UINT8 = 2, ONNX_INT8 = 3, ONNX_INT32 = 6, ONNX_INT64 = 7,
	ONNX_BOOL = 9, ONNX_FLOAT16 = 10, ONNX_DOUBLE = 11, ONNX_BFLOAT16 = 16,
};

struct onnx_tensor {
	const char *name;
	int rank;
	int64_t dims[ONNX_MAX_RANK];
	int dtype;
	/* the values, one of: raw_data (little-endian, dtype-sized elements),
	 * or the typed repeated fields as found on the wire (packed bytes or
	 * one field at a time; onnx_tensor_get decodes both) */
	const uint8_t *raw;
	size_t raw_len;
	const uint8_t *typed;   /* the first typed-data field's bytes */
	size_t typed_len;
	int typed_field;        /* its field number (4 float, 5 int32, 7 int64, 10 double) */
	int typed_packed;       /* 1: packed bytes; 0: one value, in typed_value */
	uint64_t typed_value;
	int typed_count;        /* typed fields seen (>1 unpacked: only the first kept) */
	/* external data: location (file name), offset and length (-1 unset) */
	int external;
	const char *location;
	int64_t ext_offset, ext_length;
};

struct onnx_attr {
	const char *name;
	int type;               /* AttributeProto.AttributeType: 1 FLOAT 2 INT 3 STRING 4 TENSOR 6 FLOATS 7 INTS */
	double f;
	int64_t i;
	const char *s;
	const struct onnx_tensor *t;
	int nints, nfloats;
	int64_t *ints;
	double *floats;
	int has_graph;
	int nstrings;           /* strings (field 9) seen; the first ONNX_ATTR_STRINGS kept */
	const char *strings[ONNX_ATTR_STRINGS];
};

struct onnx_node {
	const char *name, *op_type, *domain;
	int ninputs, noutputs, nattrs;
	const char **inputs;    /* "" for an omitted optional input */
	const char **outputs;
	struct onnx_attr *attrs;
};

/* A graph input or output: element type and shape, each dimension a value
 * (dim_value >= 0, param NULL), a name (param), or unknown (-1, NULL). */
struct onnx_value_info {
	const char *name;
	int elem_type;
	int rank;               /* -1: no shape given */
	int64_t dim_value[ONNX_MAX_RANK];
	const char *dim_param[ONNX_MAX_RANK];
};

struct onnx_graph {
	const char *name;
	int nnodes, ninits, ninputs, noutputs;
	struct onnx_node *nodes;
	struct onnx_tensor *inits;
	struct onnx_value_info *inputs, *outputs;
};

struct onnx_model {
	int64_t ir_version;
	int64_t opset;          /* the default domain's version (0 if absent) */
	const char *producer;
	struct onnx_graph graph;
};

/* Parses data[0..len) (a ModelProto) into m, all allocations in a. The
 * tensors keep pointers into data, which must outlive m. 0, or -1 with err
 * naming what is wrong ("node 12 (Conv): attribute 3 truncated"). */
int onnx_model_parse(const void *data, size_t len, struct onnx_arena *a, struct onnx_model *m,
    struct dn_error *err);

/* Element count of t (product of dims), or -1 when it overflows. */
int64_t onnx_tensor_numel(const struct onnx_tensor *t);
/* Value i of t as an int64 (integer and bool types) or a double (float
 * types) in *iv / *fv (both set): 0, or -1 when t has no such value in the
 * file (external data, too short, an unsupported type). */
int onnx_tensor_get(const struct onnx_tensor *t, int64_t i, int64_t *iv, double *fv);

/* The attribute `name` of n, or NULL. */
const struct onnx_attr *onnx_node_attr(const struct onnx_node *n, const char *name);

#endif
