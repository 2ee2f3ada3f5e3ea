/*
 * test_onnx.c - the ONNX importer's parts on hand-made protobuf bytes: the
 * wire reader refuses what is not a message (overlong varints, lengths past
 * the end, groups, field 0), the model parser's limits and messages, a small
 * graph (MatMul by an initializer + bias, Relu, Reshape through Shape
 * arithmetic) imported with its symbolic batch kept as an expression,
 * every truncation of it an error or a model (never a crash), the memory
 * cap, unknown operators, and the dimension arithmetic's folding; the
 * attention core (BERT's pattern folded into attention_core, cross-attention
 * left as its nodes) and ConvTranspose (imported, and its malformed
 * attributes refused naming the node).
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_dim.h"
#include "onnx_import.h"
#include "onnx_model.h"
#include "onnx_wire.h"

/* ---- a tiny protobuf encoder ---- */
struct pb {
	uint8_t b[8192];
	size_t n;
};

static void
put_varint(struct pb *p, uint64_t v)
{
	do {
		uint8_t c = v & 0x7f;
		v >>= 7;
		p->b[p->n++] = c | (v ? 0x80 : 0);
	} while (v);
}

static void
put_int(struct pb *p, int field, int64_t v)
{
	put_varint(p, (uint64_t)field << 3);
	put_varint(p, (uint64_t)v);
}

static void
put_bytes(struct pb *p, int field, const void *d, size_t len)
{
	put_varint(p, (uint64_t)field << 3 | 2);
	put_varint(p, len);
	memcpy(p->b + p->n, d, len);
	p->n += len;
}

static void
put_str(struct pb *p, int field, const char *s)
{
	put_bytes(p, field, s, strlen(s));
}

static void
put_msg(struct pb *p, int field, const struct pb *m)
{
	put_bytes(p, field, m->b, m->n);
}

/* a TensorProto: float tensor of dims with raw data (zeros) */
static void
tensor(struct pb *t, const char *name, int rank, const int64_t *dims)
{
	static const uint8_t zeros[4096];
	int64_t n = 1;

	memset(t, 0, sizeof *t);
	for (int i = 0; i < rank; i++) {
		put_int(t, 1, dims[i]);
		n *= dims[i];
	}
	put_int(t, 2, 1);
	put_str(t, 8, name);
	put_bytes(t, 9, zeros, (size_t)n * 4);
}

static void
node(struct pb *g, const char *op, const char *name, const char *const *in, int nin, const char *out)
{
	struct pb n;

	memset(&n, 0, sizeof n);
	for (int i = 0; i < nin; i++)
		put_str(&n, 1, in[i]);
	put_str(&n, 2, out);
	put_str(&n, 3, name);
	put_str(&n, 4, op);
	put_msg(g, 1, &n);
}

/* x [batch, 8] -> MatMul(w [8,4]) -> Add(b [4]) -> Relu -> Reshape to
 * [Shape(x)[0] * 2, 2] -> second op `last` (Relu unless given) */
static void
model(struct pb *m, const char *last)
{
	struct pb g, t, vi, ty, tt, sh, d;
	const int64_t wd[2] = { 8, 4 }, bd[1] = { 4 };
	const char *mm[] = { "x", "w" }, *ad[] = { "h", "b" }, *re[] = { "a" }, *shp[] = { "x" },
		   *ga[] = { "s", "zero" }, *mu[] = { "n", "two" }, *un[] = { "m", "ax" }, *cc[] = { "mu", "twos" },
		   *rs[] = { "r", "tgt" }, *fin[] = { "y0" };
	const int64_t one[1] = { 1 };

	memset(m, 0, sizeof *m);
	memset(&g, 0, sizeof g);
	node(&g, "MatMul", "fc", mm, 2, "h");
	node(&g, "Add", "bias", ad, 2, "a");
	node(&g, "Relu", "act", re, 1, "r");
	node(&g, "Shape", "shape", shp, 1, "s");
	node(&g, "Gather", "gather", ga, 2, "n");
	node(&g, "Mul", "double", mu, 2, "m");
	node(&g, "Unsqueeze", "unsq", un, 2, "mu");
	node(&g, "Concat", "cat", cc, 2, "tgt");
	node(&g, "Reshape", "reshape", rs, 2, "y0");
	node(&g, last ? last : "Relu", "last", fin, 1, "y");
	tensor(&t, "w", 2, wd);
	put_msg(&g, 5, &t);
	tensor(&t, "b", 1, bd);
	put_msg(&g, 5, &t);
	/* int64 constants as initializers (int64_data, packed) */
	memset(&t, 0, sizeof t);
	put_int(&t, 2, 7);
	put_str(&t, 8, "zero");
	put_bytes(&t, 7, "\0", 1);
	put_msg(&g, 5, &t);
	memset(&t, 0, sizeof t);
	put_int(&t, 2, 7);
	put_str(&t, 8, "two");
	put_bytes(&t, 7, "\2", 1);
	put_msg(&g, 5, &t);
	memset(&t, 0, sizeof t);
	put_int(&t, 1, one[0]);
	put_int(&t, 2, 7);
	put_str(&t, 8, "ax");
	put_bytes(&t, 7, "\0", 1);
	put_msg(&g, 5, &t);
	memset(&t, 0, sizeof t);
	put_int(&t, 1, one[0]);
	put_int(&t, 2, 7);
	put_str(&t, 8, "twos");
	put_bytes(&t, 7, "\2", 1);
	put_msg(&g, 5, &t);
	/* input x: float [batch, 8] */
	memset(&sh, 0, sizeof sh);
	memset(&d, 0, sizeof d);
	put_str(&d, 2, "batch");
	put_msg(&sh, 1, &d);
	memset(&d, 0, sizeof d);
	put_int(&d, 1, 8);
	put_msg(&sh, 1, &d);
	memset(&tt, 0, sizeof tt);
	put_int(&tt, 1, 1);
	put_msg(&tt, 2, &sh);
	memset(&ty, 0, sizeof ty);
	put_msg(&ty, 1, &tt);
	memset(&vi, 0, sizeof vi);
	put_str(&vi, 1, "x");
	put_msg(&vi, 2, &ty);
	put_msg(&g, 11, &vi);
	put_str(&g, 2, "g");
	put_int(m, 1, 8);
	put_msg(m, 7, &g);
	memset(&t, 0, sizeof t);
	put_str(&t, 1, "");
	put_int(&t, 2, 13);
	put_msg(m, 8, &t);
}

static const struct onnx_import_opts no_opts;

/* ---- graphs with attributes (attention, ConvTranspose) ---- */

/* an AttributeProto of type INTS (7) or INT (2) into node n (field 5) */
static void
attr_ints(struct pb *n, const char *name, const int64_t *v, int k, int scalar)
{
	struct pb a;

	memset(&a, 0, sizeof a);
	put_str(&a, 1, name);
	if (scalar) {
		put_int(&a, 3, v[0]);
		put_int(&a, 20, 2);
	} else {
		for (int i = 0; i < k; i++)
			put_int(&a, 8, v[i]);
		put_int(&a, 20, 7);
	}
	put_msg(n, 5, &a);
}

/* a node whose attributes `attrs` were written with attr_ints */
static void
node_a(struct pb *g, const char *op, const char *name, const char *const *in, int nin, const char *out,
    const struct pb *attrs)
{
	struct pb n;

	memset(&n, 0, sizeof n);
	for (int i = 0; i < nin; i++)
		put_str(&n, 1, in[i]);
	put_str(&n, 2, out);
	put_str(&n, 3, name);
	put_str(&n, 4, op);
	if (attrs != NULL) {
		memcpy(n.b + n.n, attrs->b, attrs->n);
		n.n += attrs->n;
	}
	put_msg(g, 1, &n);
}

static void
perm_node(struct pb *g, const char *name, const char *in, const char *out, int a, int b, int c, int d)
{
	struct pb at;
	const int64_t perm[4] = { a, b, c, d };
	const char *i[] = { in };

	memset(&at, 0, sizeof at);
	attr_ints(&at, "perm", perm, 4, 0);
	node_a(g, "Transpose", name, i, 1, out, &at);
}

/* a 1-d int64 initializer of small non-negative values (packed varints) */
static void
i64_init(struct pb *g, const char *name, const int64_t *v, int k)
{
	struct pb t;
	uint8_t packed[16];

	memset(&t, 0, sizeof t);
	put_int(&t, 1, k);
	put_int(&t, 2, 7);
	put_str(&t, 8, name);
	for (int i = 0; i < k; i++)
		packed[i] = (uint8_t)v[i];
	put_bytes(&t, 7, packed, (size_t)k);
	put_msg(g, 5, &t);
}

/* a float graph input [batch, dims...] */
static void
input(struct pb *g, const char *name, int rank, const int64_t *dims)
{
	struct pb vi, ty, tt, sh, d;

	memset(&sh, 0, sizeof sh);
	memset(&d, 0, sizeof d);
	put_str(&d, 2, "batch");
	put_msg(&sh, 1, &d);
	for (int i = 0; i < rank; i++) {
		memset(&d, 0, sizeof d);
		put_int(&d, 1, dims[i]);
		put_msg(&sh, 1, &d);
	}
	memset(&tt, 0, sizeof tt);
	put_int(&tt, 1, 1);
	put_msg(&tt, 2, &sh);
	memset(&ty, 0, sizeof ty);
	put_msg(&ty, 1, &tt);
	memset(&vi, 0, sizeof vi);
	put_str(&vi, 1, name);
	put_msg(&vi, 2, &ty);
	put_msg(g, 11, &vi);
}

static void
finish(struct pb *m, struct pb *g)
{
	struct pb t;

	put_str(g, 2, "g");
	memset(m, 0, sizeof *m);
	put_int(m, 1, 8);
	put_msg(m, 7, g);
	memset(&t, 0, sizeof t);
	put_str(&t, 1, "");
	put_int(&t, 2, 13);
	put_msg(m, 8, &t);
}

/* BERT's self-attention as torch exports it, on x [batch, 4, 8], 2 heads
 * of 4: q, k, v = x W; heads by Reshape [0, 0, 2, 4] + Transpose; scores
 * / scale; softmax; times v; Transpose back, Reshape [0, 0, 8]. With
 * `cross`, k and v read a second input m [batch, 6, 8] (cross-attention:
 * not one attention_core). */
static void
attention_model(struct pb *m, int cross)
{
	struct pb g, t;
	const int64_t wd[2] = { 8, 8 }, xd[2] = { 4, 8 }, md[2] = { 6, 8 }, one[1] = { 1 };
	const int64_t hs[4] = { 0, 0, 2, 4 }, ms[3] = { 0, 0, 8 };
	const char *kv = cross ? "m" : "x";
	const char *q[] = { "x", "wq" }, *k[] = { kv, "wk" }, *v[] = { kv, "wv" };
	const char *rq[] = { "q", "hs" }, *rk[] = { "k", "hs" }, *rv[] = { "v", "hs" };
	const char *sc[] = { "qh", "kt" }, *dv[] = { "s", "scale" }, *sm[] = { "s2" }, *pv[] = { "p", "vh" };
	const char *mg[] = { "ct", "ms" };
	struct pb at;
	const int64_t axis[1] = { -1 };

	memset(&g, 0, sizeof g);
	node(&g, "MatMul", "query", q, 2, "q");
	node(&g, "MatMul", "key", k, 2, "k");
	node(&g, "MatMul", "value", v, 2, "v");
	node(&g, "Reshape", "q_heads", rq, 2, "qr");
	perm_node(&g, "q_perm", "qr", "qh", 0, 2, 1, 3);
	node(&g, "Reshape", "k_heads", rk, 2, "kr");
	perm_node(&g, "k_perm", "kr", "kt", 0, 2, 3, 1);
	node(&g, "Reshape", "v_heads", rv, 2, "vr");
	perm_node(&g, "v_perm", "vr", "vh", 0, 2, 1, 3);
	node(&g, "MatMul", "scores", sc, 2, "s");
	node(&g, "Div", "scale", dv, 2, "s2");
	memset(&at, 0, sizeof at);
	attr_ints(&at, "axis", axis, 1, 1);
	node_a(&g, "Softmax", "softmax", sm, 1, "p", &at);
	node(&g, "MatMul", "context", pv, 2, "c");
	perm_node(&g, "merge_perm", "c", "ct", 0, 2, 1, 3);
	node(&g, "Reshape", "merge", mg, 2, "y");
	tensor(&t, "wq", 2, wd);
	put_msg(&g, 5, &t);
	tensor(&t, "wk", 2, wd);
	put_msg(&g, 5, &t);
	tensor(&t, "wv", 2, wd);
	put_msg(&g, 5, &t);
	tensor(&t, "scale", 1, one);
	put_msg(&g, 5, &t);
	i64_init(&g, "hs", hs, 4);
	i64_init(&g, "ms", ms, 3);
	input(&g, "x", 2, xd);
	if (cross)
		input(&g, "m", 2, md);
	finish(m, &g);
}

static int
count_op(json_t *doc, const char *op)
{
	size_t i;
	json_t *l;
	int n = 0;

	json_array_foreach(json_object_get(doc, "layers"), i, l)
		n += strcmp(json_string_value(json_object_get(l, "op")), op) == 0;
	return n;
}

START_TEST(test_import_attention)
{
	struct pb m;
	struct dn_error err;
	json_t *doc, *l;

	attention_model(&m, 0);
	memset(&err, 0, sizeof err);
	doc = onnx_import(m.b, m.n, &no_opts, &err);
	ck_assert_msg(doc != NULL, "%s", err.message);
	/* three linears and the core: no matmul, softmax, reshape or permute left */
	ck_assert_int_eq(json_array_size(json_object_get(doc, "layers")), 4);
	ck_assert_int_eq(count_op(doc, "linear"), 3);
	ck_assert_int_eq(count_op(doc, "attention_core"), 1);
	l = json_array_get(json_object_get(doc, "layers"), 3);
	ck_assert_str_eq(json_string_value(json_object_get(l, "op")), "attention_core");
	ck_assert_int_eq(json_integer_value(json_object_get(l, "heads")), 2);
	ck_assert_int_eq(json_array_size(json_object_get(l, "inputs")), 3);
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(l, "inputs"), 0)), "q");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(l, "inputs"), 1)), "k");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(l, "inputs"), 2)), "v");
	ck_assert_str_eq(json_string_value(json_object_get(l, "name")), "y");
	ck_assert_ptr_null(json_object_get(l, "causal"));
	ck_assert_ptr_null(json_object_get(l, "dropout"));
	json_decref(doc);
	/* every truncation: an error or a model, never a crash */
	for (size_t cut = 0; cut < m.n; cut += 7) {
		memset(&err, 0, sizeof err);
		doc = onnx_import(m.b, cut, &no_opts, &err);
		ck_assert_msg(doc != NULL || dn_error_isset(&err), "cut %zu", cut);
		json_decref(doc);
	}
	/* cross-attention (k, v of another length): the nodes one by one */
	attention_model(&m, 1);
	memset(&err, 0, sizeof err);
	doc = onnx_import(m.b, m.n, &no_opts, &err);
	ck_assert_msg(doc != NULL, "%s", err.message);
	ck_assert_int_eq(count_op(doc, "attention_core"), 0);
	ck_assert_int_eq(count_op(doc, "matmul"), 2);
	ck_assert_int_eq(count_op(doc, "softmax"), 1);
	json_decref(doc);
}
END_TEST

/* x [batch, 4, 5, 5] -> ConvTranspose(W [4, 2, 3, 3]) with the attributes
 * `at` (and a bias when `bias`) */
static void
convt_model(struct pb *m, const struct pb *at, int bias)
{
	struct pb g, t;
	const int64_t wd[4] = { 4, 2, 3, 3 }, bd[1] = { 4 }, xd[3] = { 4, 5, 5 };
	const char *in[] = { "x", "w", "b" };

	memset(&g, 0, sizeof g);
	node_a(&g, "ConvTranspose", "up", in, bias ? 3 : 2, "y", at);
	tensor(&t, "w", 4, wd);
	put_msg(&g, 5, &t);
	tensor(&t, "b", 1, bd);
	put_msg(&g, 5, &t);
	input(&g, "x", 3, xd);
	finish(m, &g);
}

START_TEST(test_import_conv_transpose)
{
	static const struct {
		const char *attr;
		int64_t v[4];
		int n;
		const char *want;       /* in the error, or NULL: imports */
		int64_t pad, opad;      /* imported: the padding and output_padding written */
	} cases[] = {
		{ "output_padding", { 1, 1 }, 2, NULL, 1, 1 },
		{ "output_padding", { 2, 2 }, 2, "output_padding 2" },
		{ "output_padding", { 1 }, 1, "output_padding has the wrong number of entries" },
		{ "output_padding", { 1, 1, 1 }, 3, "output_padding has the wrong number of entries" },
		{ "output_padding", { 0, 9 }, 2, "not smaller than the stride" },
		{ "group", { 3 }, 0, "group 3 does not divide" },
		{ "group", { 0 }, 0, "group 0" },
		/* total padding 3 on each axis: padding 2, output_padding 1 */
		{ "pads", { 1, 1, 2, 2 }, 4, NULL, 2, 1 },
		{ "pads", { 9, 9, 9, 9 }, 4, "pads larger than the output" },
		{ "kernel_shape", { 3 }, 1, "kernel_shape" },
		{ "strides", { 0, 2 }, 2, "out of range" },
		{ "strides", { 2 }, 1, "strides has the wrong number of entries" },
		{ "dilations", { 1, 1, 1 }, 3, "dilations has the wrong number of entries" },
		/* (5 - 1) * 2 + 3 - 10: total padding 1, whatever pads say */
		{ "output_shape", { 10, 10 }, 2, NULL, 1, 1 },
		{ "output_shape", { 30, 30 }, 2, "larger than the full transposed convolution" },
		{ "output_shape", { 10, 10, 10 }, 3, "output_shape has the wrong number of entries" },
	};
	const int64_t strides[2] = { 2, 2 }, pads[4] = { 1, 1, 1, 1 };

	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct pb m, at;
		struct dn_error err;
		json_t *doc;
		int custom_pads = strcmp(cases[c].attr, "pads") == 0, custom_strides = strcmp(cases[c].attr, "strides") == 0;

		memset(&at, 0, sizeof at);
		if (!custom_strides)
			attr_ints(&at, "strides", strides, 2, 0);
		if (!custom_pads)
			attr_ints(&at, "pads", pads, 4, 0);
		attr_ints(&at, cases[c].attr, cases[c].v, cases[c].n > 0 ? cases[c].n : 1, cases[c].n == 0);
		convt_model(&m, &at, 1);
		memset(&err, 0, sizeof err);
		doc = onnx_import(m.b, m.n, &no_opts, &err);
		if (cases[c].want == NULL) {
			json_t *l;
			ck_assert_msg(doc != NULL, "%s", err.message);
			l = json_array_get(json_object_get(doc, "layers"), 0);
			ck_assert_str_eq(json_string_value(json_object_get(l, "op")), "conv_transpose2d");
			/* W [4, 2, 3, 3], group 1: 2 output channels */
			ck_assert_int_eq(json_integer_value(json_object_get(l, "out_channels")), 2);
			ck_assert_int_eq(json_integer_value(json_object_get(l, "stride")), 2);
			ck_assert_int_eq(json_integer_value(json_object_get(l, "padding")), cases[c].pad);
			ck_assert_int_eq(json_integer_value(json_object_get(l, "output_padding")), cases[c].opad);
			ck_assert(json_is_true(json_object_get(l, "bias")));
			json_decref(doc);
			continue;
		}
		ck_assert_msg(doc == NULL, "case %zu imports", c);
		ck_assert_msg(strstr(err.message, "'up'") != NULL && strstr(err.message, "ConvTranspose") != NULL &&
		    strstr(err.message, cases[c].want) != NULL, "case %zu: %s", c, err.message);
	}
}
END_TEST

START_TEST(test_wire_rejects)
{
	static const struct {
		const char *bytes;
		size_t len;
	} bad[] = {
		{ "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 11 }, /* varint of 11 bytes */
		{ "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 11 }, /* 10th byte over 64 bits */
		{ "\x0a\x05" "ab", 4 },                                  /* length past the end */
		{ "\x0b", 1 },                                          /* group start */
		{ "\x00\x01", 2 },                                      /* field 0 */
		{ "\x09\x01\x02", 3 },                                  /* truncated fixed64 */
		{ "\x08", 1 },                                          /* truncated varint */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct onnx_wire w;
		struct onnx_wire_field f;
		int r;
		onnx_wire_init(&w, bad[i].bytes, bad[i].len);
		while ((r = onnx_wire_next(&w, &f)) == 1)
			;
		ck_assert_msg(r == -1, "case %zu accepted", i);
	}
	{
		struct onnx_wire w;
		struct onnx_wire_field f;
		onnx_wire_init(&w, "\x08\x96\x01\x12\x02hi", 7);
		ck_assert_int_eq(onnx_wire_next(&w, &f), 1);
		ck_assert_int_eq(f.num, 1);
		ck_assert_uint_eq(f.u, 150);
		ck_assert_int_eq(onnx_wire_next(&w, &f), 1);
		ck_assert_int_eq(f.len, 2);
		ck_assert_int_eq(memcmp(f.data, "hi", 2), 0);
		ck_assert_int_eq(onnx_wire_next(&w, &f), 0);
	}
}
END_TEST

START_TEST(test_parse_errors)
{
	struct onnx_arena a;
	struct onnx_model m;
	struct dn_error err;
	struct pb p, n, g;

	onnx_arena_init(&a, 1 << 20);
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(onnx_model_parse("", 0, &a, &m, &err), -1);
	ck_assert_msg(strstr(err.message, "no graph") != NULL, "%s", err.message);
	/* a node with 65 inputs */
	memset(&n, 0, sizeof n);
	for (int i = 0; i < 65; i++)
		put_str(&n, 1, "x");
	put_str(&n, 4, "Add");
	memset(&g, 0, sizeof g);
	put_msg(&g, 1, &n);
	memset(&p, 0, sizeof p);
	put_int(&p, 1, 8);
	put_msg(&p, 7, &g);
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(onnx_model_parse(p.b, p.n, &a, &m, &err), -1);
	ck_assert_int_eq(err.code, DN_ETOOBIG);
	ck_assert_msg(strstr(err.message, "node 0") && strstr(err.message, "inputs"), "%s", err.message);
	/* a name that is not UTF-8 */
	memset(&n, 0, sizeof n);
	put_str(&n, 4, "Re\xfflu");
	memset(&g, 0, sizeof g);
	put_msg(&g, 1, &n);
	memset(&p, 0, sizeof p);
	put_int(&p, 1, 8);
	put_msg(&p, 7, &g);
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(onnx_model_parse(p.b, p.n, &a, &m, &err), -1);
	ck_assert_msg(strstr(err.message, "UTF-8") != NULL, "%s", err.message);
	onnx_arena_free(&a);
}
END_TEST

START_TEST(test_import_small_graph)
{
	struct pb m;
	struct dn_error err;
	json_t *doc, *layers, *l;

	model(&m, NULL);
	memset(&err, 0, sizeof err);
	doc = onnx_import(m.b, m.n, &no_opts, &err);
	ck_assert_msg(doc != NULL, "%s", err.message);
	ck_assert_ptr_nonnull(json_object_get(json_object_get(doc, "hyperparameters"), "batch"));
	layers = json_object_get(doc, "layers");
	ck_assert_int_eq(json_array_size(layers), 4); /* linear (bias folded), relu, reshape, relu */
	l = json_array_get(layers, 0);
	ck_assert_str_eq(json_string_value(json_object_get(l, "op")), "linear");
	ck_assert_int_eq(json_integer_value(json_object_get(l, "out_features")), 4);
	ck_assert(json_is_true(json_object_get(l, "bias")));
	l = json_array_get(layers, 2);
	ck_assert_str_eq(json_string_value(json_object_get(l, "op")), "reshape");
	/* the batch stays symbolic: [batch * 2, 2] */
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(l, "shape"), 0)), "batch * 2");
	ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(l, "shape"), 1)), 2);
	json_decref(doc);
}
END_TEST

START_TEST(test_import_truncations)
{
	struct pb m;

	model(&m, NULL);
	for (size_t cut = 0; cut < m.n; cut++) {
		struct dn_error err;
		json_t *doc;
		memset(&err, 0, sizeof err);
		doc = onnx_import(m.b, cut, &no_opts, &err);
		ck_assert_msg(doc != NULL || (dn_error_isset(&err) && err.message[0] != '\0'), "cut %zu", cut);
		json_decref(doc);
	}
}
END_TEST

START_TEST(test_import_memory_limit)
{
	struct pb m;
	struct dn_error err;
	struct onnx_import_opts o = no_opts;

	model(&m, NULL);
	o.memory_limit = 512;
	memset(&err, 0, sizeof err);
	ck_assert_ptr_null(onnx_import(m.b, m.n, &o, &err));
	ck_assert_msg(err.code == DN_ENOMEM || err.code == DN_ETOOBIG, "%d %s", err.code, err.message);
	ck_assert_msg(strstr(err.message, "limit") != NULL, "%s", err.message);
}
END_TEST

static int warnings;

static void
count_warning(void *ctx, const char *msg)
{
	(void)ctx;
	(void)msg;
	warnings++;
}

START_TEST(test_import_unknown)
{
	struct pb m;
	struct dn_error err;
	struct onnx_import_opts o = no_opts;
	json_t *doc;

	model(&m, "Shrink");     /* (Softplus until it was translated) */
	memset(&err, 0, sizeof err);
	ck_assert_ptr_null(onnx_import(m.b, m.n, &no_opts, &err));
	ck_assert_int_eq(err.code, DN_ENOENT);
	ck_assert_msg(strstr(err.message, "node 9 'last' (Shrink)") && strstr(err.message, "node 9 of 10") &&
	        strstr(err.message, "--unknown elementwise"), "%s", err.message);
	o.unknown_elementwise = 1;
	o.warn = count_warning;
	warnings = 0;
	memset(&err, 0, sizeof err);
	doc = onnx_import(m.b, m.n, &o, &err);
	ck_assert_msg(doc != NULL, "%s", err.message);
	ck_assert_int_eq(warnings, 1);
	json_decref(doc);
}
END_TEST

START_TEST(test_dim_arith)
{
	struct onnx_arena a;
	struct onnx_dim d;

	onnx_arena_init(&a, 1 << 16);
	ck_assert_int_eq(onnx_dim_arith(&a, ONNX_DIM_MUL, onnx_dim_sym("batch"), onnx_dim_int(1), &d), 0);
	ck_assert_str_eq(d.expr, "batch");
	ck_assert_int_eq(onnx_dim_arith(&a, ONNX_DIM_SUB, onnx_dim_sym("seq"), onnx_dim_sym("seq"), &d), 0);
	ck_assert(d.expr == NULL && d.v == 0);
	ck_assert_int_eq(onnx_dim_arith(&a, ONNX_DIM_DIV, onnx_dim_int(-7), onnx_dim_int(2), &d), 0);
	ck_assert_int_eq(d.v, -4); /* floor, as the model format's `/` */
	ck_assert_int_eq(onnx_dim_arith(&a, ONNX_DIM_MUL, onnx_dim_int(INT64_MAX), onnx_dim_int(2), &d), -1);
	ck_assert_int_eq(onnx_dim_arith(&a, ONNX_DIM_DIV, onnx_dim_sym("n"), onnx_dim_int(0), &d), -1);
	ck_assert_int_eq(onnx_dim_arith(&a, ONNX_DIM_ADD, onnx_dim_sym("a + b"), onnx_dim_int(-3), &d), 0);
	ck_assert_str_eq(d.expr, "(a + b) + (-3)");
	ck_assert_int_eq(onnx_dim_arith(&a, ONNX_DIM_MUL, onnx_dim_sym("a + b"), onnx_dim_sym("c"), &d), 0);
	ck_assert_str_eq(d.expr, "(a + b) * c");
	onnx_arena_free(&a);
}
END_TEST

START_TEST(test_arena_limit)
{
	struct onnx_arena a;

	onnx_arena_init(&a, 100);
	ck_assert_ptr_nonnull(onnx_arena_alloc(&a, 1, 64));
	ck_assert_ptr_null(onnx_arena_alloc(&a, 1, 64));
	ck_assert_ptr_null(onnx_arena_alloc(&a, SIZE_MAX / 2, 4));
	onnx_arena_free(&a);
}
END_TEST

/* A float value's integer view is saturated to int64's range: converting
 * 1.2e33 (the ONNX fuzzer's find in a Conv's constant, CI of 2026-12-05;
 * tests/fuzz/corpus/onnx/regression-float-beyond-int64) or an infinity was
 * undefined behaviour (UBSan aborts the sanitized build). The double view
 * keeps the value. */
START_TEST(test_tensor_float_beyond_int64)
{
	static const float fvals[] = { 1.2e33f, -1.2e33f, 3.75f, -2.5f };
	static const double dvals[] = { 1e300, -1e300, 9223372036854775807.0 };
	uint8_t raw[sizeof fvals + sizeof dvals];
	struct onnx_tensor t;
	int64_t iv;
	double fv;

	memcpy(raw, fvals, sizeof fvals);
	memset(&t, 0, sizeof t);
	t.rank = 1;
	t.dims[0] = 4;
	t.dtype = ONNX_FLOAT;
	t.raw = raw;
	t.raw_len = sizeof fvals;
	ck_assert_int_eq(onnx_tensor_get(&t, 0, &iv, &fv), 0);
	ck_assert(iv == INT64_MAX && fv > 1e33);
	ck_assert_int_eq(onnx_tensor_get(&t, 1, &iv, &fv), 0);
	ck_assert(iv == INT64_MIN && fv < -1e33);
	ck_assert_int_eq(onnx_tensor_get(&t, 2, &iv, &fv), 0);
	ck_assert(iv == 3 && fv == 3.75);
	ck_assert_int_eq(onnx_tensor_get(&t, 3, &iv, &fv), 0);
	ck_assert(iv == -2 && fv == -2.5);
	memcpy(raw, dvals, sizeof dvals);
	t.dims[0] = 3;
	t.dtype = ONNX_DOUBLE;
	t.raw_len = sizeof dvals;
	ck_assert_int_eq(onnx_tensor_get(&t, 0, &iv, &fv), 0);
	ck_assert(iv == INT64_MAX);
	ck_assert_int_eq(onnx_tensor_get(&t, 1, &iv, &fv), 0);
	ck_assert(iv == INT64_MIN);
	/* 2^63, the double nearest INT64_MAX, is out of range too */
	ck_assert_int_eq(onnx_tensor_get(&t, 2, &iv, &fv), 0);
	ck_assert(iv == INT64_MAX);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("onnx");
	TCase *t = tcase_create("import");
	SRunner *r;
	int failed;

	tcase_add_test(t, test_wire_rejects);
	tcase_add_test(t, test_parse_errors);
	tcase_add_test(t, test_import_small_graph);
	tcase_add_test(t, test_import_truncations);
	tcase_add_test(t, test_import_memory_limit);
	tcase_add_test(t, test_import_unknown);
	tcase_add_test(t, test_dim_arith);
	tcase_add_test(t, test_arena_limit);
	tcase_add_test(t, test_import_attention);
	tcase_add_test(t, test_import_conv_transpose);
	tcase_add_test(t, test_tensor_float_beyond_int64);
	suite_add_tcase(s, t);
	r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed == 0 ? 0 : 1;
}
