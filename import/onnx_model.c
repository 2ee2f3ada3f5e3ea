/*
 * onnx_model.c - ModelProto, GraphProto, NodeProto, AttributeProto,
 * TensorProto and ValueInfoProto read from the wire (see onnx_model.h).
 * Field numbers are those of onnx.proto (onnx 1.12, as Debian's
 * python3-onnx installs it). Unknown fields are skipped, as protobuf does.
 * Repeated messages are counted in a first pass, then parsed into arrays of
 * that size, so no array ever grows.
 */
#include "onnx_model.h"
#include "onnx_wire.h"

#include <stdlib.h>
#include <string.h>

struct ctx {
	struct onnx_arena *a;
	struct dn_error *err;
	const char *where;      /* the message being read, for errors */
};

static int
fail(struct ctx *c, const char *what)
{
	return dn_error_set(c->err, DN_EINVAL, "", "corrupt ONNX file: %s: %s", c->where, what);
}

static int
nomem(struct ctx *c)
{
	return dn_error_set(c->err, DN_ENOMEM, "", "ONNX file: %s: out of memory (or over the import's memory limit)",
	    c->where);
}

/* 1 when s[0..len) is UTF-8 text without control characters (names end
 * up in JSON and in messages). */
static int
utf8_text(const uint8_t *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		uint8_t b = s[i];
		int n = b < 0x80 ? 0 : (b & 0xe0) == 0xc0 ? 1 : (b & 0xf0) == 0xe0 ? 2 : (b & 0xf8) == 0xf0 ? 3 : -1;
		if (n < 0 || b < 0x20 || b == 0x7f || (n == 1 && b < 0xc2) || i + (size_t)n >= len + (n == 0))
			return 0;
		for (int k = 1; k <= n; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
		if ((n == 2 && b == 0xe0 && s[i + 1] < 0xa0) || (n == 2 && b == 0xed && s[i + 1] >= 0xa0) ||
		    (n == 3 && b == 0xf0 && s[i + 1] < 0x90) || (n == 3 && (b > 0xf4 || (b == 0xf4 && s[i + 1] >= 0x90))))
			return 0;
		i += (size_t)n + 1;
	}
	return 1;
}

static int
str(struct ctx *c, const struct onnx_wire_field *f, const char **out)
{
	if (f->type != ONNX_WIRE_LEN)
		return fail(c, "a string field has the wrong wire type");
	if (!utf8_text(f->data, f->len))
		return fail(c, "a name or string is not UTF-8 text");
	if (f->len > ONNX_MAX_NAME)
		return dn_error_set(c->err, DN_ETOOBIG, "", "ONNX file: %s: a name of %zu bytes (limit %d)", c->where,
		    f->len, ONNX_MAX_NAME);
	*out = onnx_arena_strndup(c->a, (const char *)f->data, f->len);
	return *out == NULL ? nomem(c) : 0;
}

static int
varint_field(struct ctx *c, const struct onnx_wire_field *f, int64_t *out)
{
	if (f->type != ONNX_WIRE_VARINT)
		return fail(c, "an integer field has the wrong wire type");
	*out = (int64_t)f->u;
	return 0;
}

/* Counts the fields numbered `num` in a message (first pass). */
static int
count_fields(struct ctx *c, const uint8_t *data, size_t len, uint32_t num, int limit, const char *what)
{
	struct onnx_wire w;
	struct onnx_wire_field f;
	int n = 0, r;

	onnx_wire_init(&w, data, len);
	while ((r = onnx_wire_next(&w, &f)) == 1)
		if (f.num == num && ++n > limit)
			return dn_error_set(c->err, DN_ETOOBIG, "", "ONNX file: %s: more than %d %s", c->where,
			    limit, what);
	return r < 0 ? fail(c, "truncated or malformed message") : n;
}

/* A repeated int64 (packed or not) or float/double field into a growing
 * list: one call per wire field. */
static int
ints_add(struct ctx *c, const struct onnx_wire_field *f, int64_t *vals, int *n, int limit)
{
	if (f->type == ONNX_WIRE_VARINT) {
		if (*n >= limit)
			return dn_error_set(c->err, DN_ETOOBIG, "", "ONNX file: %s: a list over %d entries", c->where, limit);
		vals[(*n)++] = (int64_t)f->u;
		return 0;
	}
	if (f->type == ONNX_WIRE_LEN) {
		struct onnx_wire w;
		uint64_t v;
		int r;

		onnx_wire_init(&w, f->data, f->len);
		while ((r = onnx_wire_varint(&w, &v)) == 1) {
			if (*n >= limit)
				return dn_error_set(c->err, DN_ETOOBIG, "", "ONNX file: %s: a list over %d entries",
				    c->where, limit);
			vals[(*n)++] = (int64_t)v;
		}
		return r < 0 ? fail(c, "a packed integer list is truncated") : 0;
	}
	return fail(c, "an integer list has the wrong wire type");
}

static double
f32(uint64_t bits)
{
	uint32_t b = (uint32_t)bits;
	float x;

	memcpy(&x, &b, sizeof x);
	return x;
}

static int
floats_add(struct ctx *c, const struct onnx_wire_field *f, double *vals, int *n, int limit)
{
	if (f->type == ONNX_WIRE_I32) {
		if (*n >= limit)
			return dn_error_set(c->err, DN_ETOOBIG, "", "ONNX file: %s: a list over %d entries", c->where, limit);
		vals[(*n)++] = f32(f->u);
		return 0;
	}
	if (f->type == ONNX_WIRE_LEN) {
		if (f->len % 4 != 0)
			return fail(c, "a packed float list is truncated");
		for (size_t i = 0; i < f->len; i += 4) {
			uint64_t b = (uint64_t)f->data[i] | (uint64_t)f->data[i + 1] << 8 |
			    (uint64_t)f->data[i + 2] << 16 | (uint64_t)f->data[i + 3] << 24;
			if (*n >= limit)
				return dn_error_set(c->err, DN_ETOOBIG, "", "ONNX file: %s: a list over %d entries",
				    c->where, limit);
			vals[(*n)++] = f32(b);
		}
		return 0;
	}
	return fail(c, "a float list has the wrong wire type");
}

static int
parse_external_entry(struct ctx *c, const struct onnx_wire_field *e, struct onnx_tensor *t)
{
	struct onnx_wire w;
	struct onnx_wire_field f;
	const char *key = NULL, *value = NULL;
	int r;

	onnx_wire_init(&w, e->data, e->len);
	while ((r = onnx_wire_next(&w, &f)) == 1) {
		if (f.num == 1 && str(c, &f, &key) < 0)
			return -1;
		if (f.num == 2 && str(c, &f, &value) < 0)
			return -1;
	}
	if (r < 0)
		return fail(c, "external_data entry truncated");
	if (key == NULL || value == NULL)
		return 0;
	if (strcmp(key, "location") == 0) {
		t->location = value;
	} else if (strcmp(key, "offset") == 0 || strcmp(key, "length") == 0) {
		char *endp;
		long long v = strtoll(value, &endp, 10);
		if (*value == '\0' || *endp != '\0' || v < 0)
			return fail(c, "external_data offset/length is not a non-negative integer");
		if (key[0] == 'o')
			t->ext_offset = v;
		else
			t->ext_length = v;
	}
	return 0;
}

static int
parse_tensor(struct ctx *c, const uint8_t *data, size_t len, struct onnx_tensor *t)
{
	struct onnx_wire w;
	struct onnx_wire_field f;
	int64_t v = 0;
	int r;

	t->ext_offset = t->ext_length = -1;
	t->dtype = 0;
	onnx_wire_init(&w, data, len);
	while ((r = onnx_wire_next(&w, &f)) == 1) {
		switch (f.num) {
		case 1:
			if (ints_add(c, &f, t->dims, &t->rank, ONNX_MAX_RANK) < 0)
				return -1;
			break;
		case 2:
			if (varint_field(c, &f, &v) < 0)
				return -1;
			t->dtype = (int)v;
			break;
		case 4: case 5: case 7: case 10: case 11:
			if (t->typed_count++ == 0) {
				t->typed_field = (int)f.num;
				t->typed_packed = f.type == ONNX_WIRE_LEN;
				t->typed = f.data;
				t->typed_len = f.len;
				t->typed_value = f.u;
			}
			break;
		case 8:
			if (str(c, &f, &t->name) < 0)
				return -1;
			break;
		case 9:
			if (f.type != ONNX_WIRE_LEN)
				return fail(c, "raw_data has the wrong wire type");
			t->raw = f.data;
			t->raw_len = f.len;
			break;
		case 13:
			if (f.type != ONNX_WIRE_LEN)
				return fail(c, "external_data has the wrong wire type");
			t->external = 1;
			if (parse_external_entry(c, &f, t) < 0)
				return -1;
			break;
		case 14:
			if (varint_field(c, &f, &v) < 0)
				return -1;
			if (v == 1)
				t->external = 1;
			break;
		default:
			break;
		}
	}
	if (r < 0)
		return fail(c, "tensor truncated");
	for (int i = 0; i < t->rank; i++)
		if (t->dims[i] < 0)
			return fail(c, "a tensor has a negative dimension");
	if (onnx_tensor_numel(t) < 0)
		return dn_error_set(c->err, DN_ETOOBIG, "", "ONNX file: %s: tensor '%s' has more elements than fit in 64 bits",
		    c->where, t->name ? t->name : "");
	if (t->name == NULL)
		t->name = "";
	return 0;
}

/* Upper bounds of the entries of an attribute's ints (field 8) and floats
 * (field 7), capped one past the limit so that ints_add reports it. */
static int
list_sizes(struct ctx *c, const uint8_t *data, size_t len, size_t *nints, size_t *nfloats)
{
	struct onnx_wire w;
	struct onnx_wire_field f;
	int r;

	*nints = *nfloats = 0;
	onnx_wire_init(&w, data, len);
	while ((r = onnx_wire_next(&w, &f)) == 1) {
		if (f.num == 8)
			*nints += f.type == ONNX_WIRE_LEN ? f.len : 1;
		if (f.num == 7)
			*nfloats += f.type == ONNX_WIRE_LEN ? f.len / 4 : 1;
		if (*nints > ONNX_MAX_LIST)
			*nints = ONNX_MAX_LIST + 1;
		if (*nfloats > ONNX_MAX_LIST)
			*nfloats = ONNX_MAX_LIST + 1;
	}
	return r < 0 ? fail(c, "attribute truncated") : 0;
}

static int
parse_attr(struct ctx *c, const uint8_t *data, size_t len, struct onnx_attr *at)
{
	struct onnx_wire w;
	struct onnx_wire_field f;
	size_t cap_i, cap_f;
	int64_t v = 0;
	int r;

	if (list_sizes(c, data, len, &cap_i, &cap_f) < 0)
		return -1;
	onnx_wire_init(&w, data, len);
	while ((r = onnx_wire_next(&w, &f)) == 1) {
		switch (f.num) {
		case 1:
			if (str(c, &f, &at->name) < 0)
				return -1;
			break;
		case 2:
			if (f.type != ONNX_WIRE_I32)
				return fail(c, "attribute f has the wrong wire type");
			at->f = f32(f.u);
			break;
		case 3:
			if (varint_field(c, &f, &at->i) < 0)
				return -1;
			break;
		case 4:
			if (str(c, &f, &at->s) < 0)
				return -1;
			break;
		case 5: {
			struct onnx_tensor *t = onnx_arena_alloc(c->a, 1, sizeof *t);
			if (t == NULL)
				return nomem(c);
			if (f.type != ONNX_WIRE_LEN)
				return fail(c, "attribute t has the wrong wire type");
			if (parse_tensor(c, f.data, f.len, t) < 0)
				return -1;
			at->t = t;
			break;
		}
		case 6:
			at->has_graph = 1;
			break;
		case 7:
			if (at->floats == NULL && (at->floats = onnx_arena_alloc(c->a, cap_f, sizeof(double))) == NULL)
				return nomem(c);
			if (floats_add(c, &f, at->floats, &at->nfloats, cap_f < ONNX_MAX_LIST ? (int)cap_f : ONNX_MAX_LIST) < 0)
				return -1;
			break;
		case 8:
			if (at->ints == NULL && (at->ints = onnx_arena_alloc(c->a, cap_i, sizeof(int64_t))) == NULL)
				return nomem(c);
			if (ints_add(c, &f, at->ints, &at->nints, cap_i < ONNX_MAX_LIST ? (int)cap_i : ONNX_MAX_LIST) < 0)
				return -1;
			break;
		case 9:
			if (at->nstrings < ONNX_ATTR_STRINGS && str(c, &f, &at->strings[at->nstrings]) < 0)
				return -1;
			if (at->nstrings < ONNX_MAX_LIST)
				at->nstrings++;
			break;
		case 20:
			if (varint_field(c, &f, &v) < 0)
				return -1;
			at->type = (int)v;
			break;
		default:
			break;
		}
	}
	if (r < 0)
		return fail(c, "attribute truncated");
	if (at->name == NULL)
		return fail(c, "an attribute has no name");
	return 0;
}

static int
parse_node(struct ctx *c, const uint8_t *data, size_t len, struct onnx_node *n)
{
	struct onnx_wire w;
	struct onnx_wire_field f;
	int ni, no, na, r;

	if ((ni = count_fields(c, data, len, 1, ONNX_MAX_IO, "inputs of a node")) < 0 ||
	    (no = count_fields(c, data, len, 2, ONNX_MAX_IO, "outputs of a node")) < 0 ||
	    (na = count_fields(c, data, len, 5, ONNX_MAX_ATTRS, "attributes of a node")) < 0)
		return -1;
	n->inputs = onnx_arena_alloc(c->a, (size_t)ni + 1, sizeof *n->inputs);
	n->outputs = onnx_arena_alloc(c->a, (size_t)no + 1, sizeof *n->outputs);
	n->attrs = onnx_arena_alloc(c->a, (size_t)na + 1, sizeof *n->attrs);
	if (n->inputs == NULL || n->outputs == NULL || n->attrs == NULL)
		return nomem(c);
	onnx_wire_init(&w, data, len);
	while ((r = onnx_wire_next(&w, &f)) == 1) {
		int rc = 0;
		switch (f.num) {
		case 1: rc = str(c, &f, &n->inputs[n->ninputs++]); break;
		case 2: rc = str(c, &f, &n->outputs[n->noutputs++]); break;
		case 3: rc = str(c, &f, &n->name); break;
		case 4: rc = str(c, &f, &n->op_type); break;
		case 7: rc = str(c, &f, &n->domain); break;
		case 5:
			if (f.type != ONNX_WIRE_LEN)
				return fail(c, "an attribute has the wrong wire type");
			rc = parse_attr(c, f.data, f.len, &n->attrs[n->nattrs++]);
			break;
		default: break;
		}
		if (rc < 0)
			return -1;
	}
	if (r < 0)
		return fail(c, "node truncated");
	if (n->op_type == NULL || n->op_type[0] == '\0')
		return fail(c, "a node has no op_type");
	if (n->name == NULL)
		n->name = "";
	if (n->domain == NULL)
		n->domain = "";
	return 0;
}

static int
parse_shape(struct ctx *c, const uint8_t *data, size_t len, struct onnx_value_info *v)
{
	struct onnx_wire w, wd;
	struct onnx_wire_field f, g;
	int r;

	v->rank = 0;
	onnx_wire_init(&w, data, len);
	while ((r = onnx_wire_next(&w, &f)) == 1) {
		if (f.num != 1 || f.type != ONNX_WIRE_LEN)
			continue;
		if (v->rank >= ONNX_MAX_RANK)
			return dn_error_set(c->err, DN_ETOOBIG, "", "ONNX file: %s: input '%s' has over %d dimensions",
			    c->where, v->name ? v->name : "", ONNX_MAX_RANK);
		v->dim_value[v->rank] = -1;
		onnx_wire_init(&wd, f.data, f.len);
		while ((r = onnx_wire_next(&wd, &g)) == 1) {
			if (g.num == 1 && varint_field(c, &g, &v->dim_value[v->rank]) < 0)
				return -1;
			if (g.num == 2 && str(c, &g, &v->dim_param[v->rank]) < 0)
				return -1;
		}
		if (r < 0)
			return fail(c, "a dimension is truncated");
		v->rank++;
	}
	return r < 0 ? fail(c, "a shape is truncated") : 0;
}

/* ValueInfoProto -> TypeProto -> TypeProto.Tensor -> elem_type, shape */
static int
parse_value_info(struct ctx *c, const uint8_t *data, size_t len, struct onnx_value_info *v)
{
	struct onnx_wire w, wt, wtt;
	struct onnx_wire_field f, g, h;
	int r;

	v->rank = -1;
	onnx_wire_init(&w, data, len);
	while ((r = onnx_wire_next(&w, &f)) == 1) {
		if (f.num == 1 && str(c, &f, &v->name) < 0)
			return -1;
		if (f.num != 2 || f.type != ONNX_WIRE_LEN)
			continue;
		onnx_wire_init(&wt, f.data, f.len);
		while ((r = onnx_wire_next(&wt, &g)) == 1) {
			if (g.num != 1 || g.type != ONNX_WIRE_LEN)
				continue;
			onnx_wire_init(&wtt, g.data, g.len);
			while ((r = onnx_wire_next(&wtt, &h)) == 1) {
				int64_t et = 0;
				if (h.num == 1) {
					if (varint_field(c, &h, &et) < 0)
						return -1;
					v->elem_type = (int)et;
				} else if (h.num == 2 && h.type == ONNX_WIRE_LEN) {
					if (parse_shape(c, h.data, h.len, v) < 0)
						return -1;
				}
			}
			if (r < 0)
				return fail(c, "a tensor type is truncated");
		}
		if (r < 0)
			return fail(c, "a type is truncated");
	}
	if (r < 0)
		return fail(c, "a value info is truncated");
	if (v->name == NULL)
		v->name = "";
	return 0;
}

static int
parse_graph(struct ctx *c, const uint8_t *data, size_t len, struct onnx_graph *g)
{
	struct onnx_wire w;
	struct onnx_wire_field f;
	int nn, ni, nin, nout, r;
	char where[96];

	if ((nn = count_fields(c, data, len, 1, ONNX_MAX_NODES, "nodes")) < 0 ||
	    (ni = count_fields(c, data, len, 5, ONNX_MAX_TENSORS, "initializers")) < 0 ||
	    (nin = count_fields(c, data, len, 11, ONNX_MAX_TENSORS, "graph inputs")) < 0 ||
	    (nout = count_fields(c, data, len, 12, ONNX_MAX_TENSORS, "graph outputs")) < 0)
		return -1;
	if (count_fields(c, data, len, 15, 0, "sparse initializers (not supported)") < 0)
		return -1;
	g->nodes = onnx_arena_alloc(c->a, (size_t)nn + 1, sizeof *g->nodes);
	g->inits = onnx_arena_alloc(c->a, (size_t)ni + 1, sizeof *g->inits);
	g->inputs = onnx_arena_alloc(c->a, (size_t)nin + 1, sizeof *g->inputs);
	g->outputs = onnx_arena_alloc(c->a, (size_t)nout + 1, sizeof *g->outputs);
	if (g->nodes == NULL || g->inits == NULL || g->inputs == NULL || g->outputs == NULL)
		return nomem(c);
	onnx_wire_init(&w, data, len);
	while ((r = onnx_wire_next(&w, &f)) == 1) {
		int rc = 0;
		if (f.num != 2 && f.num != 1 && f.num != 5 && f.num != 11 && f.num != 12)
			continue;
		if (f.type != ONNX_WIRE_LEN)
			return fail(c, "a graph field has the wrong wire type");
		switch (f.num) {
		case 1:
			dn_fmt(where, sizeof where, "node %d", g->nnodes);
			c->where = where;
			rc = parse_node(c, f.data, f.len, &g->nodes[g->nnodes++]);
			break;
		case 2: rc = str(c, &f, &g->name); break;
		case 5:
			dn_fmt(where, sizeof where, "initializer %d", g->ninits);
			c->where = where;
			rc = parse_tensor(c, f.data, f.len, &g->inits[g->ninits++]);
			break;
		case 11:
			c->where = "graph input";
			rc = parse_value_info(c, f.data, f.len, &g->inputs[g->ninputs++]);
			break;
		case 12:
			c->where = "graph output";
			rc = parse_value_info(c, f.data, f.len, &g->outputs[g->noutputs++]);
			break;
		}
		if (rc < 0)
			return -1;
	}
	c->where = "graph";
	if (r < 0)
		return fail(c, "truncated or malformed");
	if (g->name == NULL)
		g->name = "";
	return 0;
}

static int
parse_opset(struct ctx *c, const struct onnx_wire_field *f, struct onnx_model *m)
{
	struct onnx_wire w;
	struct onnx_wire_field g;
	const char *domain = "";
	int64_t version = 0;
	int r;

	onnx_wire_init(&w, f->data, f->len);
	while ((r = onnx_wire_next(&w, &g)) == 1) {
		if (g.num == 1 && str(c, &g, &domain) < 0)
			return -1;
		if (g.num == 2 && varint_field(c, &g, &version) < 0)
			return -1;
	}
	if (r < 0)
		return fail(c, "opset_import truncated");
	if (domain[0] == '\0' || strcmp(domain, "ai.onnx") == 0)
		m->opset = version;
	return 0;
}

int
onnx_model_parse(const void *data, size_t len, struct onnx_arena *a, struct onnx_model *m,
    struct dn_error *err)
{
	struct ctx c = { a, err, "model" };
	struct onnx_wire w;
	struct onnx_wire_field f;
	int r, graphs = 0;

	memset(m, 0, sizeof *m);
	onnx_wire_init(&w, data, len);
	while ((r = onnx_wire_next(&w, &f)) == 1) {
		c.where = "model";
		if (f.num == 1 && varint_field(&c, &f, &m->ir_version) < 0)
			return -1;
		if (f.num == 2 && str(&c, &f, &m->producer) < 0)
			return -1;
		if ((f.num == 7 || f.num == 8) && f.type != ONNX_WIRE_LEN)
			return fail(&c, "a field has the wrong wire type");
		if (f.num == 8 && parse_opset(&c, &f, m) < 0)
			return -1;
		if (f.num == 7) {
			if (graphs++ > 0)
				return fail(&c, "more than one graph");
			if (parse_graph(&c, f.data, f.len, &m->graph) < 0)
				return -1;
		}
	}
	c.where = "model";
	if (r < 0)
		return fail(&c, "truncated or not an ONNX model (protobuf) file");
	if (graphs == 0)
		return fail(&c, "no graph (is this an ONNX model file?)");
	if (m->ir_version <= 0)
		return fail(&c, "no ir_version (is this an ONNX model file?)");
	if (m->producer == NULL)
		m->producer = "";
	return 0;
}

int64_t
onnx_tensor_numel(const struct onnx_tensor *t)
{
	int64_t n = 1;

	for (int i = 0; i < t->rank; i++) {
		if (t->dims[i] != 0 && n > INT64_MAX / t->dims[i])
			return -1;
		n *= t->dims[i];
	}
	return n;
}

static int
dtype_size(int dtype)
{
	switch (dtype) {
	case ONNX_FLOAT: case ONNX_INT32: return 4;
	case ONNX_INT64: case ONNX_DOUBLE: return 8;
	case ONNX_UINT8: case ONNX_INT8: case ONNX_BOOL: return 1;
	case ONNX_FLOAT16: case ONNX_BFLOAT16: return 2;
	default: return 0;
	}
}

static uint64_t
le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* A float's integer part, saturated to int64's range (NaN: 0): a file's
 * float may be anything, and converting one outside the range is undefined
 * behaviour (the ONNX fuzzer found 1.2e33 in a Conv's constant). */
static int64_t
float_to_i64(double d)
{
	if (!(d == d))
		return 0;
	if (d >= 9223372036854775808.0)
		return INT64_MAX;
	if (d < -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)d;
}

static void
set_from_bits(int dtype, uint64_t b, int64_t *iv, double *fv)
{
	double d;

	switch (dtype) {
	case ONNX_FLOAT: d = f32(b); *iv = float_to_i64(d); *fv = d; return;
	case ONNX_DOUBLE: memcpy(&d, &b, sizeof d); *iv = float_to_i64(d); *fv = d; return;
	case ONNX_INT32: *iv = (int32_t)(uint32_t)b; break;
	case ONNX_INT8: *iv = (int8_t)(uint8_t)b; break;
	default: *iv = (int64_t)b; break;
	}
	*fv = (double)*iv;
}

int
onnx_tensor_get(const struct onnx_tensor *t, int64_t i, int64_t *iv, double *fv)
{
	int64_t n = onnx_tensor_numel(t);
	int sz = dtype_size(t->dtype);

	if (i < 0 || i >= n || t->external || sz == 0 || t->dtype == ONNX_FLOAT16 || t->dtype == ONNX_BFLOAT16)
		return -1;
	if (t->raw != NULL) {
		if ((uint64_t)(i + 1) * (uint64_t)sz > t->raw_len)
			return -1;
		set_from_bits(t->dtype, le(t->raw + i * sz, sz), iv, fv);
		return 0;
	}
	if (t->typed_count == 0)
		return -1;
	if (!t->typed_packed) {
		if (t->typed_count > 1 || i != 0)
			return -1;
		set_from_bits(t->typed_field == 4 ? ONNX_FLOAT : t->typed_field == 10 ? ONNX_DOUBLE : ONNX_INT64,
		    t->typed_value, iv, fv);
		if (t->typed_field == 10)
			set_from_bits(ONNX_DOUBLE, t->typed_value, iv, fv);
		return 0;
	}
	if (t->typed_field == 4 || t->typed_field == 10) {
		int w = t->typed_field == 4 ? 4 : 8;
		if ((uint64_t)(i + 1) * (uint64_t)w > t->typed_len)
			return -1;
		set_from_bits(w == 4 ? ONNX_FLOAT : ONNX_DOUBLE, le(t->typed + i * w, w), iv, fv);
		return 0;
	} else {
		struct onnx_wire w;
		uint64_t v = 0;
		onnx_wire_init(&w, t->typed, t->typed_len);
		for (int64_t k = 0; k <= i; k++)
			if (onnx_wire_varint(&w, &v) != 1)
				return -1;
		set_from_bits(t->typed_field == 5 ? ONNX_INT32 : ONNX_INT64, v, iv, fv);
		if (t->typed_field == 5 && t->dtype == ONNX_FLOAT16)
			return -1;
		return 0;
	}
}

const struct onnx_attr *
onnx_node_attr(const struct onnx_node *n, const char *name)
{
	for (int i = 0; i < n->nattrs; i++)
		if (strcmp(n->attrs[i].name, name) == 0)
			return &n->attrs[i];
	return NULL;
}
