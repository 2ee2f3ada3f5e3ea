/*
 * onnx_ops.c - one ONNX node at a time into the model file (see
 * onnx_import_priv.h for the kinds of values). Shape arithmetic (Shape,
 * Gather, Concat, Unsqueeze, Add, ... on SYM values) is evaluated here on
 * dimensions, so a Reshape's target is an expression over the
 * hyperparameters. Operators on activations append a layer to the model
 * file with explicit input(s) and name (the ONNX output's name), and set the
 * output's shape as the model format will compute it.
 */
#include "onnx_import_priv.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define NODE(im) (&(im)->m->graph.nodes[(im)->node])
#define BIG ((int64_t)1 << 62)

static struct onnx_val *
in(struct onnx_imp *im, int k)
{
	const struct onnx_node *n = NODE(im);
	if (k >= n->ninputs || n->inputs[k][0] == '\0')
		return NULL;
	return onnx_imp_find(im, n->inputs[k]);
}

static struct onnx_val *
out(struct onnx_imp *im, int k)
{
	return onnx_imp_find(im, NODE(im)->outputs[k]);
}

static int64_t
attr_i(struct onnx_imp *im, const char *name, int64_t def)
{
	const struct onnx_attr *a = onnx_node_attr(NODE(im), name);
	return a != NULL ? a->i : def;
}

static int
attr_ints(struct onnx_imp *im, const char *name, int64_t *v, int max)
{
	const struct onnx_attr *a = onnx_node_attr(NODE(im), name);
	if (a == NULL)
		return -1;
	if (a->nints > max)
		return -2;
	for (int i = 0; i < a->nints; i++)
		v[i] = a->ints[i];
	return a->nints;
}

/* A CONST int tensor of at most ONNX_SYM_MAX entries as SYM (in place). */
static int
as_sym(struct onnx_imp *im, struct onnx_val *v)
{
	int64_t n;

	if (v->kind == ONNX_V_SYM)
		return 0;
	if (v->kind != ONNX_V_CONST || v->rank > 1 ||
	    (v->t->dtype != ONNX_INT64 && v->t->dtype != ONNX_INT32 && v->t->dtype != ONNX_BOOL))
		return -1;
	n = onnx_tensor_numel(v->t);
	if (n > ONNX_SYM_MAX)
		return -1;
	{
		struct onnx_dim *e = onnx_arena_alloc(im->ar, (size_t)n + 1, sizeof *e);
		if (e == NULL)
			return -1;
		for (int64_t i = 0; i < n; i++) {
			int64_t iv;
			double fv;
			if (onnx_tensor_get(v->t, i, &iv, &fv) < 0)
				return -1;
			e[i] = onnx_dim_int(iv);
		}
		v->e = e;
		v->n = (int)n;
	}
	v->kind = ONNX_V_SYM;
	return 0;
}

static int
sym_of(struct onnx_imp *im, struct onnx_val *v)
{
	return v != NULL && as_sym(im, v) == 0;
}

/* A float scalar constant (or a one-element tensor): 1 with *x, else 0. */
static int
scalar(const struct onnx_val *v, double *x)
{
	int64_t iv;

	if (v == NULL)
		return 0;
	if (v->kind == ONNX_V_SYM && v->n == 1 && v->e[0].expr == NULL) {
		*x = (double)v->e[0].v;
		return 1;
	}
	return v->kind == ONNX_V_CONST && onnx_tensor_numel(v->t) == 1 && onnx_tensor_get(v->t, 0, &iv, x) == 0;
}

static int
new_sym(struct onnx_imp *im, struct onnx_val *o, int n, int rank)
{
	o->kind = ONNX_V_SYM;
	o->n = n;
	o->rank = rank;
	o->e = onnx_arena_alloc(im->ar, (size_t)n + 1, sizeof *o->e);
	if (o->e == NULL)
		return dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
	if (rank == 1)
		o->shape[0] = onnx_dim_int(n);
	return 0;
}

static void
copy_shape(struct onnx_val *o, const struct onnx_val *a)
{
	o->rank = a->rank;
	memcpy(o->shape, a->shape, sizeof o->shape);
}

/* Numpy broadcasting of a and b into o's shape; -1 when they disagree. */
static int
broadcast(struct onnx_val *o, const struct onnx_val *a, const struct onnx_val *b)
{
	int r = a->rank > b->rank ? a->rank : b->rank;
	struct onnx_dim s[ONNX_MAX_RANK];

	for (int i = 0; i < r; i++) {
		int ia = i - (r - a->rank), ib = i - (r - b->rank);
		struct onnx_dim da = ia >= 0 ? a->shape[ia] : onnx_dim_int(1);
		struct onnx_dim db = ib >= 0 ? b->shape[ib] : onnx_dim_int(1);
		if (da.expr == NULL && da.v == 1)
			s[i] = db;
		else if (db.expr == NULL && db.v == 1)
			s[i] = da;
		else if (onnx_dim_same(da, db))
			s[i] = da;
		else if (da.expr != NULL)
			s[i] = da; /* symbolic vs symbolic or integer: trust the exporter */
		else if (db.expr != NULL)
			s[i] = db;
		else
			return -1;
	}
	o->rank = r;
	memcpy(o->shape, s, sizeof s);
	return 0;
}

static const char *
txt(struct onnx_imp *im, struct onnx_dim d)
{
	return onnx_dim_text(im->ar, d);
}

static json_t *
dimj(struct onnx_imp *im, struct onnx_dim d)
{
	return d.expr == NULL ? json_integer(d.v) : json_string(txt(im, d));
}

/* Appends {"op": op, "input(s)": ..., "name": o} and makes o DATA. */
static json_t *
emit(struct onnx_imp *im, const char *op, struct onnx_val *o, const struct onnx_val *a, const struct onnx_val *b)
{
	json_t *l = json_object();

	json_object_set_new(l, "op", json_string(op));
	if (b == NULL)
		json_object_set_new(l, "input", json_string(a->ref));
	else
		json_object_set_new(l, "inputs", json_pack("[ss]", a->ref, b->ref));
	o->ref = onnx_imp_ref(im, o->name);
	if (o->ref == NULL)
		dn_error_set(im->err, DN_ENOMEM, "", "out of memory (or over the import's memory limit)");
	json_object_set_new(l, "name", json_string(o->ref ? o->ref : "?"));
	json_array_append_new(im->layers, l);
	o->kind = ONNX_V_DATA;
	return l;
}

static void alias(struct onnx_val *o, const struct onnx_val *x);

/* A parameter tensor used as an operand (ViT's class token and position
 * embedding, a free-standing bias): the model format has parameters only in
 * operators, so it becomes an embedding of numel/E rows of width E (its last
 * dimension) read by an int64 input of the operand's leading shape (`shape`,
 * which may be broadcast, e.g. the class token expanded over the batch);
 * the parameters count once, the lookup costs what the copy does.
 * Returns the new DATA value, or NULL with im->err. */
static struct onnx_val *
param_as_data(struct onnx_imp *im, const struct onnx_val *c, const struct onnx_val *shape)
{
	int64_t numel = onnx_tensor_numel(c->t), width;
	struct onnx_val *ids, *v;
	json_t *l;

	if (c->rank < 1 || c->t->dims[c->rank - 1] < 1 || shape->rank < 1 || shape->rank > ONNX_MAX_RANK) {
		onnx_imp_fail(im, DN_EINVAL, "initializer '%s' used as an operand has no width", c->name);
		return NULL;
	}
	width = c->t->dims[c->rank - 1];
	ids = onnx_imp_val(im, onnx_arena_printf(im->ar, "%s.ids", c->name));
	v = ids == NULL ? NULL : onnx_imp_val(im, onnx_arena_printf(im->ar, "%s.value", c->name));
	if (v == NULL || ids->name == NULL || v->name == NULL) {
		dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
		return NULL;
	}
	if (ids->kind == ONNX_V_NONE) {
		ids->kind = ONNX_V_DERIVED;
		ids->rank = shape->rank > 1 ? shape->rank - 1 : 1;
		for (int i = 0; i < ids->rank; i++)
			ids->shape[i] = shape->rank > 1 ? shape->shape[i] : onnx_dim_int(1);
		ids->iota = 1;
		ids->id_range = onnx_dim_int(numel / width);
		if (onnx_imp_add_index_input(im, ids) < 0)
			return NULL;
	}
	if (v->kind == ONNX_V_DATA)
		return v;
	l = emit(im, "embedding", v, ids, NULL);
	json_object_set_new(l, "num_embeddings", json_integer(numel / width));
	json_object_set_new(l, "embedding_dim", json_integer(width));
	copy_shape(v, ids);
	v->shape[v->rank++] = onnx_dim_int(width);
	onnx_imp_warn(im, "initializer '%s' (%lld values) is an operand of node %d '%s' (%s): imported as an embedding "
	    "table of %lld x %lld read by the int64 input '%s'", c->name, (long long)numel, im->node, NODE(im)->name,
	    NODE(im)->op_type, (long long)(numel / width), (long long)width, ids->ref);
	return v;
}

static int
axis_norm(struct onnx_imp *im, int64_t axis, int rank, int *out_axis)
{
	if (axis < 0)
		axis += rank;
	if (axis < 0 || axis >= rank)
		return onnx_imp_fail(im, DN_EINVAL, "axis %lld out of range for rank %d", (long long)axis, rank);
	*out_axis = (int)axis;
	return 0;
}

/* ---- shape arithmetic ---- */

static int
op_shape(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o)
{
	int64_t start = attr_i(im, "start", 0), end = attr_i(im, "end", x->rank);
	if (start < 0)
		start += x->rank;
	if (end < 0)
		end += x->rank;
	if (end > x->rank)
		end = x->rank;
	if (start < 0)
		start = 0;
	if (end < start)
		end = start;
	if (new_sym(im, o, (int)(end - start), 1) < 0)
		return -1;
	for (int64_t i = start; i < end; i++)
		o->e[i - start] = x->shape[i];
	return 0;
}

static int
sym_binary(struct onnx_imp *im, const char *op, struct onnx_val *a, struct onnx_val *b, struct onnx_val *o)
{
	int n = a->n > b->n ? a->n : b->n;
	enum onnx_dim_op dop;

	if (a->n != b->n && a->n != 1 && b->n != 1)
		return onnx_imp_fail(im, DN_EINVAL, "shape tensors of %d and %d entries do not broadcast", a->n, b->n);
	if (new_sym(im, o, n, a->rank > b->rank ? a->rank : b->rank) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		struct onnx_dim x = a->e[a->n == 1 ? 0 : i], y = b->e[b->n == 1 ? 0 : i];
		if (strcmp(op, "Equal") == 0) {
			if (onnx_dim_same(x, y))
				o->e[i] = onnx_dim_int(1);
			else if (x.expr == NULL && y.expr == NULL)
				o->e[i] = onnx_dim_int(0);
			else if ((x.expr == NULL && x.v <= 0) || (y.expr == NULL && y.v <= 0))
				o->e[i] = onnx_dim_int(0); /* a size is never <= 0 */
			else
				return onnx_imp_fail(im, DN_EINVAL, "cannot decide whether %s == %s", txt(im, x), txt(im, y));
			continue;
		}
		if (strcmp(op, "Max") == 0 || strcmp(op, "Min") == 0) {
			if (x.expr != NULL || y.expr != NULL) {
				const char *e = onnx_arena_printf(im->ar, "%s(%s, %s)", op[1] == 'a' ? "max" : "min",
				    txt(im, x), txt(im, y));
				o->e[i] = onnx_dim_sym(e);
			} else {
				o->e[i] = onnx_dim_int((op[1] == 'a') == (x.v > y.v) ? x.v : y.v);
			}
			continue;
		}
		dop = op[0] == 'A' ? ONNX_DIM_ADD : op[0] == 'S' ? ONNX_DIM_SUB : op[0] == 'M' && op[1] == 'u' ? ONNX_DIM_MUL :
		    op[0] == 'D' ? ONNX_DIM_DIV : ONNX_DIM_MOD;
		if (onnx_dim_arith(im->ar, dop, x, y, &o->e[i]) < 0)
			return onnx_imp_fail(im, DN_EINVAL, "shape arithmetic %s %s %s fails (overflow or division by zero)",
			    txt(im, x), op, txt(im, y));
	}
	return 0;
}

/* ---- activations ---- */

static int
conv_out(struct onnx_imp *im, struct onnx_dim h, int64_t k, int64_t s, int64_t p, int64_t d, int ceil_mode,
    struct onnx_dim *o)
{
	struct onnx_dim t;
	int64_t span = d * (k - 1) + 1;

	if (onnx_dim_arith(im->ar, ONNX_DIM_ADD, h, onnx_dim_int(2 * p - span + (ceil_mode ? s - 1 : 0)), &t) < 0 ||
	    onnx_dim_arith(im->ar, ONNX_DIM_DIV, t, onnx_dim_int(s), &t) < 0 ||
	    onnx_dim_arith(im->ar, ONNX_DIM_ADD, t, onnx_dim_int(1), o) < 0)
		return onnx_imp_fail(im, DN_EINVAL, "output size overflows");
	return 0;
}

/* kernel, stride, padding and dilation of Conv and pools: spatial dims
 * nsp; asymmetric padding is refused (the model format pads evenly). */
struct window {
	int nsp;
	int64_t k[2], s[2], p[2], d[2];
};

static int
window(struct onnx_imp *im, const struct onnx_val *x, const struct onnx_val *w, struct window *win)
{
	int64_t v[8];
	int n;
	const struct onnx_attr *ap = onnx_node_attr(NODE(im), "auto_pad");

	win->nsp = x->rank - 2;
	if (win->nsp < 1 || win->nsp > 2)
		return onnx_imp_fail(im, DN_EINVAL, "only 1-d and 2-d windows are supported (input rank %d)", x->rank);
	if (ap != NULL && ap->s != NULL && strcmp(ap->s, "NOTSET") != 0 && strcmp(ap->s, "VALID") != 0)
		return onnx_imp_fail(im, DN_EINVAL, "auto_pad %s is not supported (export with explicit pads)", ap->s);
	for (int i = 0; i < 2; i++)
		win->k[i] = win->s[i] = win->d[i] = 1, win->p[i] = 0;
	n = attr_ints(im, "kernel_shape", v, 2);
	if (n == win->nsp)
		memcpy(win->k, v, sizeof(int64_t) * (size_t)n);
	else if (w != NULL && w->rank == x->rank)
		for (int i = 0; i < win->nsp; i++)
			win->k[i] = w->t->dims[2 + i];
	else
		return onnx_imp_fail(im, DN_EINVAL, "kernel_shape missing or of the wrong length");
	if ((n = attr_ints(im, "strides", v, 2)) == win->nsp)
		memcpy(win->s, v, sizeof(int64_t) * (size_t)n);
	if ((n = attr_ints(im, "dilations", v, 2)) == win->nsp)
		memcpy(win->d, v, sizeof(int64_t) * (size_t)n);
	if ((n = attr_ints(im, "pads", v, 4)) == 2 * win->nsp) {
		for (int i = 0; i < win->nsp; i++) {
			if (v[i] != v[i + win->nsp])
				return onnx_imp_fail(im, DN_EINVAL, "asymmetric pads (%lld, %lld) on spatial axis %d",
				    (long long)v[i], (long long)v[i + win->nsp], i);
			win->p[i] = v[i];
		}
	}
	for (int i = 0; i < win->nsp; i++)
		if (win->k[i] < 1 || win->k[i] > 4096 || win->s[i] < 1 || win->s[i] > 4096 || win->d[i] < 1 ||
		    win->d[i] > 4096 || win->p[i] < 0 || win->p[i] > 4096)
			return onnx_imp_fail(im, DN_EINVAL, "kernel, stride, dilation or pads out of range");
	return 0;
}

static json_t *
pair(int nsp, const int64_t *v)
{
	if (nsp == 1 || v[0] == v[1])
		return json_integer(v[0]);
	return json_pack("[II]", (json_int_t)v[0], (json_int_t)v[1]);
}

static int
window_shape(struct onnx_imp *im, const struct onnx_val *x, const struct window *w, int ceil_mode,
    struct onnx_val *o)
{
	copy_shape(o, x);
	for (int i = 0; i < w->nsp; i++)
		if (conv_out(im, x->shape[2 + i], w->k[i], w->s[i], w->p[i], w->d[i], ceil_mode, &o->shape[2 + i]) < 0)
			return -1;
	return 0;
}

static int
op_conv(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o)
{
	struct onnx_val *w = in(im, 1);
	struct window win;
	int64_t groups = attr_i(im, "group", 1);
	json_t *l;

	if (w == NULL || w->kind != ONNX_V_CONST || w->rank != x->rank)
		return onnx_imp_fail(im, DN_EINVAL, "the weight must be an initializer of rank %d", x->rank);
	if (window(im, x, w, &win) < 0)
		return -1;
	if (groups < 1 || w->t->dims[0] % groups != 0)
		return onnx_imp_fail(im, DN_EINVAL, "group %lld does not divide %lld output channels", (long long)groups,
		    (long long)w->t->dims[0]);
	l = emit(im, win.nsp == 1 ? "conv1d" : "conv2d", o, x, NULL);
	json_object_set_new(l, "out_channels", json_integer(w->t->dims[0]));
	json_object_set_new(l, "kernel", pair(win.nsp, win.k));
	if (win.s[0] != 1 || win.s[1] != 1)
		json_object_set_new(l, "stride", pair(win.nsp, win.s));
	if (win.p[0] != 0 || win.p[1] != 0)
		json_object_set_new(l, "padding", pair(win.nsp, win.p));
	if (win.d[0] != 1 || win.d[1] != 1)
		json_object_set_new(l, "dilation", pair(win.nsp, win.d));
	if (groups != 1)
		json_object_set_new(l, "groups", json_integer(groups));
	json_object_set_new(l, "bias", json_boolean(in(im, 2) != NULL));
	if (window_shape(im, x, &win, 0, o) < 0)
		return -1;
	o->shape[1] = onnx_dim_int(w->t->dims[0]);
	return 0;
}

static int
op_pool(struct onnx_imp *im, const char *op, struct onnx_val *x, struct onnx_val *o)
{
	struct window win;
	int ceil_mode = (int)attr_i(im, "ceil_mode", 0);
	char name[32];
	json_t *l;

	if (window(im, x, NULL, &win) < 0)
		return -1;
	if (win.d[0] != 1 || win.d[1] != 1)
		return onnx_imp_fail(im, DN_EINVAL, "dilated pooling is not supported");
	dn_fmt(name, sizeof name, "%s%dd", op, win.nsp);
	l = emit(im, name, o, x, NULL);
	json_object_set_new(l, "kernel", pair(win.nsp, win.k));
	json_object_set_new(l, "stride", pair(win.nsp, win.s));
	if (win.p[0] != 0 || win.p[1] != 0)
		json_object_set_new(l, "padding", pair(win.nsp, win.p));
	if (ceil_mode)
		json_object_set_new(l, "ceil_mode", json_true());
	if (op[0] == 'a')
		json_object_set_new(l, "count_include_pad", json_boolean(attr_i(im, "count_include_pad", 0) != 0));
	return window_shape(im, x, &win, ceil_mode, o);
}

/* 1 when W (as stored: [in, out] when trans == 0, [out, in] when 1) holds
 * the same numbers as an embedding table [out, in] read earlier: a head tied
 * to the embedding (GPT-2's lm_head), whose weight PyTorch counts once. */
static int
tied(struct onnx_imp *im, const struct onnx_tensor *w, int trans)
{
	for (int e = 0; e < im->nembeddings; e++) {
		const struct onnx_tensor *t = im->embeddings[e];
		int64_t rows = t->dims[0], cols = t->dims[1];
		int same = 1;
		if (t == w)
			return 1;
		if (w->rank != 2 || w->dtype != ONNX_FLOAT || t->dtype != ONNX_FLOAT || w->raw == NULL || t->raw == NULL ||
		    (trans ? (w->dims[0] != rows || w->dims[1] != cols) : (w->dims[0] != cols || w->dims[1] != rows)))
			continue;
		for (int64_t r = 0; r < rows && same; r++)
			for (int64_t c = 0; c < cols && same; c++) {
				int64_t ti = r * cols + c, wi = trans ? ti : c * rows + r;
				if ((size_t)(ti + 1) * 4 > t->raw_len || (size_t)(wi + 1) * 4 > w->raw_len ||
				    memcmp(t->raw + ti * 4, w->raw + wi * 4, 4) != 0)
					same = 0;
			}
		if (same)
			return 1;
	}
	return 0;
}

/* MatMul or Gemm by an initializer: a linear layer; a following Add of a
 * bias initializer (the only reader of the product) is folded into it. */
static int
op_linear(struct onnx_imp *im, struct onnx_val *x, const struct onnx_val *w, int trans, int has_bias,
    struct onnx_val *o)
{
	int64_t outf = trans ? w->t->dims[0] : w->t->dims[1];
	int64_t inf = trans ? w->t->dims[1] : w->t->dims[0];
	struct onnx_val *fin = o;
	int is_tied;
	json_t *l;

	if (x->rank < 1)
		return onnx_imp_fail(im, DN_EINVAL, "a linear layer on a scalar");
	if (x->shape[x->rank - 1].expr == NULL && x->shape[x->rank - 1].v != inf)
		return onnx_imp_fail(im, DN_EINVAL, "the weight's %lld inputs do not match the last dimension %lld",
		    (long long)inf, (long long)x->shape[x->rank - 1].v);
	if (!has_bias && o->nconsumers == 1) {
		int k = o->consumers[0];
		const struct onnx_node *a = &im->m->graph.nodes[k];
		if (strcmp(a->op_type, "Add") == 0 && a->ninputs == 2 && im->fuse[k] == ONNX_FUSE_NONE) {
			struct onnx_val *b = onnx_imp_find(im, strcmp(a->inputs[0], o->name) == 0 ? a->inputs[1] : a->inputs[0]);
			if (b != NULL && b->kind == ONNX_V_CONST && b->param && b->rank == 1 && b->t->dims[0] == outf) {
				im->fuse[k] = ONNX_FUSE_SKIP;
				fin = onnx_imp_find(im, a->outputs[0]);
				has_bias = 1;
			}
		}
	}
	is_tied = tied(im, w->t, trans);
	l = emit(im, "linear", fin, x, NULL);
	json_object_set_new(l, "out_features", json_integer(outf));
	json_object_set_new(l, "bias", json_boolean(has_bias));
	if (is_tied)
		json_object_set_new(l, "tied", json_true());
	copy_shape(fin, x);
	fin->shape[x->rank - 1] = onnx_dim_int(outf);
	return 0;
}

static int
op_matmul(struct onnx_imp *im, struct onnx_val *a, struct onnx_val *o)
{
	struct onnx_val *b = in(im, 1);
	struct onnx_val ta, tb;

	if (b != NULL && b->kind == ONNX_V_CONST && b->rank == 2)
		return op_linear(im, a, b, b->transposed, 0, o);
	if (b == NULL || b->kind != ONNX_V_DATA || a->rank < 2 || b->rank < 2)
		return onnx_imp_fail(im, DN_EINVAL, "a product of two activations of rank >= 2 (or by a 2-d initializer) expected");
	emit(im, "matmul", o, a, b);
	ta = *a;
	tb = *b;
	ta.rank -= 2;
	tb.rank -= 2;
	if (broadcast(o, &ta, &tb) < 0)
		return onnx_imp_fail(im, DN_EINVAL, "batch dimensions do not broadcast");
	o->shape[o->rank++] = a->shape[a->rank - 2];
	o->shape[o->rank++] = b->shape[b->rank - 1];
	return 0;
}

static int
op_gemm(struct onnx_imp *im, struct onnx_val *a, struct onnx_val *o)
{
	struct onnx_val *b = in(im, 1), *c = in(im, 2);

	if (attr_i(im, "transA", 0) != 0 || a->rank != 2)
		return onnx_imp_fail(im, DN_EINVAL, "only Gemm of a 2-d activation, not transposed, is supported");
	if (b == NULL || b->kind != ONNX_V_CONST || b->rank != 2)
		return onnx_imp_fail(im, DN_EINVAL, "the weight B must be a 2-d initializer");
	return op_linear(im, a, b, (attr_i(im, "transB", 0) != 0) != (b->transposed != 0), c != NULL, o);
}

/* A shape (from a SYM) into a reshape layer, resolving ONNX's 0 (copy) and
 * -1 (the rest) so that the output shape is known. */
static int
reshape_shape(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o, const struct onnx_dim *s, int n,
    int allowzero, int layer)
{
	json_t *l, *shape;
	struct onnx_dim num = onnx_dim_int(1), den = onnx_dim_int(1), rest;
	int minus = -1;
	const char *syms_in[ONNX_MAX_RANK];
	int nin = 0;
	int64_t iin = 1, iden = 1;

	if (n > ONNX_MAX_RANK)
		return onnx_imp_fail(im, DN_EINVAL, "reshape to more than %d dimensions", ONNX_MAX_RANK);
	o->rank = n;
	for (int i = 0; i < x->rank; i++) {
		if (x->shape[i].expr != NULL)
			syms_in[nin++] = x->shape[i].expr;
		else if (__builtin_mul_overflow(iin, x->shape[i].v, &iin))
			return onnx_imp_fail(im, DN_EINVAL, "element count overflows");
	}
	for (int i = 0; i < n; i++) {
		struct onnx_dim d = s[i];
		if (d.expr == NULL && d.v == 0 && !allowzero) {
			if (i >= x->rank)
				return onnx_imp_fail(im, DN_EINVAL, "0 (copy) at axis %d beyond the input's rank", i);
			d = x->shape[i];
		}
		if (d.expr == NULL && d.v == -1) {
			if (minus >= 0)
				return onnx_imp_fail(im, DN_EINVAL, "two -1 entries in the target shape");
			minus = i;
			continue;
		}
		if (d.expr == NULL && d.v < 0)
			return onnx_imp_fail(im, DN_EINVAL, "negative entry %lld in the target shape", (long long)d.v);
		o->shape[i] = d;
		if (d.expr == NULL) {
			iden *= d.v ? d.v : 1;
		} else {
			int found = 0;
			for (int k = 0; k < nin && !found; k++)
				if (syms_in[k] != NULL && strcmp(syms_in[k], d.expr) == 0)
					syms_in[k] = NULL, found = 1;
			if (!found && onnx_dim_arith(im->ar, ONNX_DIM_MUL, den, d, &den) < 0)
				return onnx_imp_fail(im, DN_EINVAL, "element count overflows");
		}
	}
	if (minus >= 0) {
		/* rest = (input symbols left) * iin / iden / den */
		if (iden == 0 || iin % iden != 0)
			return onnx_imp_fail(im, DN_EINVAL, "the target shape does not divide the element count");
		num = onnx_dim_int(iin / iden);
		for (int k = 0; k < nin; k++)
			if (syms_in[k] != NULL && onnx_dim_arith(im->ar, ONNX_DIM_MUL, num, onnx_dim_sym(syms_in[k]), &num) < 0)
				return -1;
		if (onnx_dim_arith(im->ar, ONNX_DIM_DIV, num, den, &rest) < 0)
			return onnx_imp_fail(im, DN_EINVAL, "the target shape does not divide the element count");
		o->shape[minus] = rest;
	}
	if (!layer)
		return 0;
	if (x->permuted) {
		/* a reshape of a permuted view copies it, as PyTorch's .contiguous() or
		 * reshape does (torch exports drop the .contiguous()) */
		struct onnx_val *c = onnx_imp_val(im, onnx_arena_printf(im->ar, "%s.contiguous", o->name));
		if (c == NULL || c->name == NULL)
			return dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
		emit(im, "contiguous", c, x, NULL);
		copy_shape(c, x);
		x = c;
	}
	shape = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(shape, dimj(im, o->shape[i]));
	l = emit(im, "reshape", o, x, NULL);
	json_object_set_new(l, "shape", shape);
	return 0;
}

static int
reshape_to(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o, const struct onnx_dim *s, int n, int allowzero)
{
	return reshape_shape(im, x, o, s, n, allowzero, 1);
}

static int
op_reshape(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o)
{
	struct onnx_val *s = in(im, 1);
	int64_t v[ONNX_MAX_RANK];
	int n;

	if (x->kind == ONNX_V_CONST && x->rank <= 1)
		(void)as_sym(im, x);
	if (x->kind == ONNX_V_SYM) {
		if (new_sym(im, o, x->n, 1) < 0)
			return -1;
		memcpy(o->e, x->e, sizeof *o->e * (size_t)x->n);
		return 0;
	}
	if (x->kind != ONNX_V_DATA) {
		if (s == NULL || !sym_of(im, s) || s->n > ONNX_MAX_RANK)
			return onnx_imp_fail(im, DN_EINVAL, "the target shape is not computable from the inputs' shapes");
		if (reshape_shape(im, x, o, s->e, s->n, 0, 0) < 0)
			return -1;
		o->kind = ONNX_V_DERIVED;
		o->iota = x->iota;
		o->id_range = x->id_range;
		return 0;
	}
	if (s != NULL) {
		if (!sym_of(im, s))
			return onnx_imp_fail(im, DN_EINVAL, "the target shape is not computable from the inputs' shapes");
		return reshape_to(im, x, o, s->e, s->n, (int)attr_i(im, "allowzero", 0));
	}
	n = attr_ints(im, "shape", v, ONNX_MAX_RANK);
	if (n < 0)
		return onnx_imp_fail(im, DN_EINVAL, "no target shape");
	{
		struct onnx_dim d[ONNX_MAX_RANK];
		for (int i = 0; i < n; i++)
			d[i] = onnx_dim_int(v[i]);
		return reshape_to(im, x, o, d, n, 0);
	}
}

/* Squeeze/Unsqueeze axes: from the attribute (opset < 13) or input 1. */
static int
axes_of(struct onnx_imp *im, int64_t *axes, int max)
{
	struct onnx_val *a = in(im, 1);
	int n = attr_ints(im, "axes", axes, max);

	if (n >= 0)
		return n;
	if (a == NULL)
		return -1;
	if (!sym_of(im, a) || a->n > max)
		return onnx_imp_fail(im, DN_EINVAL, "axes must be constant"), -2;
	for (int i = 0; i < a->n; i++) {
		if (a->e[i].expr != NULL)
			return onnx_imp_fail(im, DN_EINVAL, "axes must be constant"), -2;
		axes[i] = a->e[i].v;
	}
	return a->n;
}

static int
op_unsqueeze(struct onnx_imp *im, int squeeze, struct onnx_val *x, struct onnx_val *o)
{
	int64_t axes[ONNX_MAX_RANK];
	int n = axes_of(im, axes, ONNX_MAX_RANK), r;
	int mark[ONNX_MAX_RANK] = { 0 };
	struct onnx_dim s[ONNX_MAX_RANK];

	if (n == -2)
		return -1;
	if (x->kind == ONNX_V_CONST && x->rank <= 1)
		(void)as_sym(im, x);
	if (x->kind == ONNX_V_SYM) {
		if (new_sym(im, o, x->n, squeeze ? 0 : 1) < 0)
			return -1;
		memcpy(o->e, x->e, sizeof *o->e * (size_t)x->n);
		if (x->rank > 1 || (!squeeze && x->rank != 0))
			return onnx_imp_fail(im, DN_EINVAL, "shape tensors of rank above 1 are not supported");
		return 0;
	}
	r = squeeze ? x->rank - (n < 0 ? 0 : n) : x->rank + n;
	if (n < 0) { /* squeeze every 1 */
		r = 0;
		for (int i = 0; i < x->rank; i++)
			if (!(x->shape[i].expr == NULL && x->shape[i].v == 1))
				s[r++] = x->shape[i];
	} else {
		if (r < 0 || r > ONNX_MAX_RANK)
			return onnx_imp_fail(im, DN_EINVAL, "rank out of range");
		for (int i = 0; i < n; i++) {
			int ax = 0;
			if (axis_norm(im, axes[i], squeeze ? x->rank : r, &ax) < 0)
				return -1;
			mark[ax] = 1;
		}
		for (int i = 0, k = 0, j = 0; i < (squeeze ? x->rank : r); i++) {
			if (squeeze) {
				if (!mark[i])
					s[j++] = x->shape[i];
			} else {
				s[i] = mark[i] ? onnx_dim_int(1) : x->shape[k++];
			}
		}
	}
	if (x->kind == ONNX_V_DATA)
		return reshape_to(im, x, o, s, r, 1);
	o->iota = x->iota;
	o->id_range = x->id_range;
	o->kind = ONNX_V_DERIVED;
	o->rank = r;
	memcpy(o->shape, s, sizeof s);
	return 0;
}

static int
op_transpose(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o)
{
	int64_t perm[ONNX_MAX_RANK];
	int n = attr_ints(im, "perm", perm, ONNX_MAX_RANK);
	json_t *l, *dims;
	int seen[ONNX_MAX_RANK] = { 0 };

	if (n < 0) {
		n = x->rank;
		for (int i = 0; i < n; i++)
			perm[i] = n - 1 - i;
	}
	if (n != x->rank)
		return onnx_imp_fail(im, DN_EINVAL, "perm has %d entries for rank %d", n, x->rank);
	o->rank = n;
	for (int i = 0; i < n; i++) {
		if (perm[i] < 0 || perm[i] >= n || seen[perm[i]]++)
			return onnx_imp_fail(im, DN_EINVAL, "perm is not a permutation");
		o->shape[i] = x->shape[perm[i]];
	}
	dims = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(dims, json_integer(perm[i]));
	if (x->kind != ONNX_V_DATA) {
		json_decref(dims);
		if (x->kind == ONNX_V_CONST && x->rank == 2 && perm[0] == 1) {
			o->kind = ONNX_V_CONST;
			o->t = x->t;
			o->param = x->param;
			o->transposed = !x->transposed;
			return 0;
		}
		o->kind = ONNX_V_DERIVED;
		return 0;
	}
	l = emit(im, "permute", o, x, NULL);
	json_object_set_new(l, "dims", dims);
	for (int i = 0; i < n; i++)
		if (perm[i] != i)
			o->permuted = 1;
	return 0;
}

/* One slice along one axis of an activation: a `slice` layer. */
static int
slice_axis(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o, int axis, struct onnx_dim start,
    struct onnx_dim end, const char *name)
{
	struct onnx_dim size = x->shape[axis], len;
	json_t *l;

	if (start.expr == NULL && start.v < 0 && onnx_dim_arith(im->ar, ONNX_DIM_ADD, size, start, &start) < 0)
		return -1;
	if (end.expr == NULL && end.v < 0 && onnx_dim_arith(im->ar, ONNX_DIM_ADD, size, end, &end) < 0)
		return -1;
	if (end.expr == NULL && end.v >= BIG / 4)
		end = size;
	if (size.expr == NULL && end.expr == NULL && end.v > size.v)
		end = size;
	if (onnx_dim_arith(im->ar, ONNX_DIM_SUB, end, start, &len) < 0)
		return -1;
	if (len.expr == NULL && len.v <= 0)
		return onnx_imp_fail(im, DN_EINVAL, "an empty slice");
	l = json_object();
	json_object_set_new(l, "op", json_string("slice"));
	json_object_set_new(l, "input", json_string(x->ref));
	name = name != NULL ? onnx_imp_ref(im, name) : NULL;
	if (name == NULL)
		return dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
	json_object_set_new(l, "name", json_string(name));
	json_object_set_new(l, "dim", json_integer(axis));
	json_object_set_new(l, "start", dimj(im, start));
	json_object_set_new(l, "length", dimj(im, len));
	json_array_append_new(im->layers, l);
	copy_shape(o, x);
	o->shape[axis] = len;
	o->kind = ONNX_V_DATA;
	o->ref = name;
	return 0;
}

static int
op_slice(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o)
{
	struct onnx_val *st = in(im, 1), *en = in(im, 2), *ax = in(im, 3), *sp = in(im, 4);
	struct onnx_val cur = *x;
	int n;

	if (st == NULL || en == NULL || !sym_of(im, st) || !sym_of(im, en) || st->n != en->n ||
	    (ax != NULL && (!sym_of(im, ax) || ax->n != st->n)) || (sp != NULL && (!sym_of(im, sp) || sp->n != st->n)))
		return onnx_imp_fail(im, DN_EINVAL, "starts, ends, axes and steps must be computable from the inputs' shapes");
	n = st->n;
	for (int i = 0; i < n; i++)
		if (sp != NULL && !(sp->e[i].expr == NULL && sp->e[i].v == 1))
			return onnx_imp_fail(im, DN_EINVAL, "only steps of 1 are supported");
	if (x->kind == ONNX_V_SYM) {
		int64_t s, e;
		if (n != 1 || st->e[0].expr != NULL || en->e[0].expr != NULL)
			return onnx_imp_fail(im, DN_EINVAL, "a symbolic slice of a shape tensor");
		s = st->e[0].v < 0 ? st->e[0].v + x->n : st->e[0].v;
		e = en->e[0].v < 0 ? en->e[0].v + x->n : en->e[0].v;
		s = s < 0 ? 0 : s > x->n ? x->n : s;
		e = e < s ? s : e > x->n ? x->n : e;
		if (new_sym(im, o, (int)(e - s), 1) < 0)
			return -1;
		memcpy(o->e, x->e + s, sizeof *o->e * (size_t)(e - s));
		return 0;
	}
	for (int i = 0; i < n; i++) {
		int axis = 0;
		if (ax != NULL && ax->e[i].expr != NULL)
			return onnx_imp_fail(im, DN_EINVAL, "axes must be constant");
		if (axis_norm(im, ax != NULL ? ax->e[i].v : i, x->rank, &axis) < 0)
			return -1;
		if (x->kind != ONNX_V_DATA) {
			/* a constant or derived tensor: positions when it counts 0, 1, ... */
			struct onnx_dim s = st->e[i], e = en->e[i], size = cur.shape[axis];
			int was_iota = cur.iota;
			if (x->kind == ONNX_V_CONST && axis == x->rank - 1 && s.expr == NULL && s.v == 0) {
				int64_t len = x->rank > 0 ? x->t->dims[x->rank - 1] : 0, iv;
				double fv;
				was_iota = len > 0;
				for (int64_t k = 0; k < len && k < 1 << 20 && was_iota; k++)
					if (onnx_tensor_get(x->t, k, &iv, &fv) < 0 || iv != k)
						was_iota = 0;
			}
			if (e.expr == NULL && e.v >= BIG / 4)
				e = size;
			if (onnx_dim_arith(im->ar, ONNX_DIM_SUB, e, s, &cur.shape[axis]) < 0)
				return -1;
			cur.iota = was_iota && axis == x->rank - 1 && s.expr == NULL && s.v == 0;
			cur.id_range = cur.shape[axis];
			cur.kind = ONNX_V_DERIVED;
			continue;
		}
		if (slice_axis(im, &cur, &cur, axis, st->e[i], en->e[i],
		        i == n - 1 ? o->name : onnx_arena_printf(im->ar, "%s.%d", o->name, i)) < 0)
			return -1;
	}
	o->kind = cur.kind;
	o->ref = cur.ref;
	o->iota = cur.iota;
	o->id_range = cur.id_range;
	copy_shape(o, &cur);
	return 0;
}

static int
op_gather(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o)
{
	struct onnx_val *idx = in(im, 1);
	int axis = 0;

	if (idx == NULL)
		return onnx_imp_fail(im, DN_EINVAL, "no indices");
	if (x->kind == ONNX_V_CONST && x->param && x->rank == 2 && idx->kind != ONNX_V_CONST && idx->kind != ONNX_V_SYM) {
		json_t *l;
		if (idx->kind == ONNX_V_DERIVED && onnx_imp_add_index_input(im, idx) < 0)
			return -1;
		im->embeddings[im->nembeddings++] = x->t;
		l = emit(im, "embedding", o, idx, NULL);
		json_object_set_new(l, "num_embeddings", json_integer(x->t->dims[0]));
		json_object_set_new(l, "embedding_dim", json_integer(x->t->dims[1]));
		copy_shape(o, idx);
		o->shape[o->rank++] = onnx_dim_int(x->t->dims[1]);
		return 0;
	}
	if (axis_norm(im, attr_i(im, "axis", 0), x->kind == ONNX_V_SYM ? 1 : x->rank, &axis) < 0)
		return -1;
	if (x->kind == ONNX_V_SYM || (x->kind == ONNX_V_CONST && sym_of(im, x))) {
		if (!sym_of(im, idx))
			return onnx_imp_fail(im, DN_EINVAL, "indices into a shape must be constant");
		if (new_sym(im, o, idx->n, idx->rank) < 0)
			return -1;
		for (int i = 0; i < idx->n; i++) {
			int64_t k = idx->e[i].v;
			if (idx->e[i].expr != NULL || k < -x->n || k >= x->n)
				return onnx_imp_fail(im, DN_EINVAL, "index out of range of a shape of %d entries", x->n);
			o->e[i] = x->e[k < 0 ? k + x->n : k];
		}
		return 0;
	}
	if (x->kind == ONNX_V_DATA && sym_of(im, idx) && idx->n == 1 && idx->e[0].expr == NULL) {
		struct onnx_val tmp;
		struct onnx_dim s[ONNX_MAX_RANK];
		int64_t k = idx->e[0].v;
		int r = 0;
		tmp.name = o->name;
		if (slice_axis(im, x, &tmp, axis, onnx_dim_int(k), onnx_dim_int(k < 0 ? (k == -1 ? BIG : k + 1) : k + 1),
		        onnx_arena_printf(im->ar, "%s.slice", o->name)) < 0)
			return -1;
		if (idx->rank == 1)
			return o->kind = ONNX_V_DATA, o->ref = tmp.ref, copy_shape(o, &tmp), 0;
		for (int i = 0; i < tmp.rank; i++)
			if (i != axis)
				s[r++] = tmp.shape[i];
		return reshape_to(im, &tmp, o, s, r, 1);
	}
	if (x->kind != ONNX_V_DATA) {
		o->kind = ONNX_V_DERIVED;
		copy_shape(o, idx);
		return 0;
	}
	return onnx_imp_fail(im, DN_EINVAL, "gathering an activation by computed indices is not supported");
}

static int
op_concat(struct onnx_imp *im, struct onnx_val *o)
{
	const struct onnx_node *n = NODE(im);
	struct onnx_val *vals[ONNX_MAX_IO];
	int all_sym = 1, ndata = 0, axis = 0, total = 0;
	json_t *l, *ins;

	if (n->ninputs < 1)
		return onnx_imp_fail(im, DN_EINVAL, "no inputs");
	for (int k = 0; k < n->ninputs; k++) {
		struct onnx_val *v = vals[k] = in(im, k);
		if (v == NULL)
			return onnx_imp_fail(im, DN_EINVAL, "input %d is missing", k);
		if (!sym_of(im, v))
			all_sym = 0;
		if (v->kind == ONNX_V_DATA)
			ndata++;
	}
	if (all_sym) {
		for (int k = 0; k < n->ninputs; k++)
			total += vals[k]->n;
		if (total > ONNX_SYM_MAX)
			return onnx_imp_fail(im, DN_ETOOBIG, "a shape tensor over %d entries", ONNX_SYM_MAX);
		if (new_sym(im, o, total, 1) < 0)
			return -1;
		total = 0;
		for (int k = 0; k < n->ninputs; k++) {
			memcpy(o->e + total, vals[k]->e, sizeof *o->e * (size_t)vals[k]->n);
			total += vals[k]->n;
		}
		return 0;
	}
	if (ndata == 0) {
		o->kind = ONNX_V_DERIVED;
		copy_shape(o, vals[0]);
		return 0;
	}
	for (int k = 0; k < n->ninputs; k++) {
		if (vals[k]->kind == ONNX_V_CONST && vals[k]->param && !vals[k]->transposed) {
			if ((vals[k] = param_as_data(im, vals[k], vals[k])) == NULL)
				return -1;
		} else if (vals[k]->kind != ONNX_V_DATA) {
			return onnx_imp_fail(im, DN_EINVAL, "concatenating activations with computed constant tensors is not supported");
		}
	}
	if (axis_norm(im, attr_i(im, "axis", 0), vals[0]->rank, &axis) < 0)
		return -1;
	copy_shape(o, vals[0]);
	for (int k = 1; k < n->ninputs; k++)
		if (onnx_dim_arith(im->ar, ONNX_DIM_ADD, o->shape[axis], vals[k]->shape[axis], &o->shape[axis]) < 0)
			return onnx_imp_fail(im, DN_EINVAL, "the concatenated size overflows");
	ins = json_array();
	for (int k = 0; k < n->ninputs; k++)
		json_array_append_new(ins, json_string(vals[k]->ref));
	{
		struct onnx_dim keep = o->shape[axis];
		l = emit(im, "concat", o, vals[0], NULL);
		o->shape[axis] = keep;
	}
	json_object_del(l, "input");
	json_object_set_new(l, "inputs", ins);
	json_object_set_new(l, "dim", json_integer(axis));
	return 0;
}

static int
op_split(struct onnx_imp *im, struct onnx_val *x)
{
	const struct onnx_node *n = NODE(im);
	struct onnx_val *sp = in(im, 1);
	int64_t sizes[ONNX_MAX_IO];
	struct onnx_dim start = onnx_dim_int(0), each;
	int axis = 0, ns = attr_ints(im, "split", sizes, ONNX_MAX_IO);

	if (axis_norm(im, attr_i(im, "axis", 0), x->rank, &axis) < 0)
		return -1;
	if (ns < 0 && sp != NULL) {
		if (!sym_of(im, sp) || sp->n != n->noutputs)
			return onnx_imp_fail(im, DN_EINVAL, "split sizes must be constant, one per output");
		ns = sp->n;
		for (int i = 0; i < ns; i++) {
			if (sp->e[i].expr != NULL)
				return onnx_imp_fail(im, DN_EINVAL, "split sizes must be constant");
			sizes[i] = sp->e[i].v;
		}
	}
	if (ns >= 0 && ns != n->noutputs)
		return onnx_imp_fail(im, DN_EINVAL, "%d split sizes for %d outputs", ns, n->noutputs);
	if (ns < 0 && onnx_dim_arith(im->ar, ONNX_DIM_DIV, x->shape[axis], onnx_dim_int(n->noutputs), &each) < 0)
		return -1;
	for (int k = 0; k < n->noutputs; k++) {
		struct onnx_val *o = out(im, k);
		struct onnx_dim len = ns >= 0 ? onnx_dim_int(sizes[k]) : each, end;
		if (onnx_dim_arith(im->ar, ONNX_DIM_ADD, start, len, &end) < 0 ||
		    slice_axis(im, x, o, axis, start, end, o->name) < 0)
			return -1;
		start = end;
	}
	return 0;
}

/* Elementwise arithmetic: on shapes, on constants, or on activations. */
static int
op_binary(struct onnx_imp *im, const char *op, struct onnx_val *o)
{
	struct onnx_val *a = in(im, 0), *b = in(im, 1), *x, *c;
	double f = 1.0;
	json_t *l;

	if (a == NULL || b == NULL)
		return onnx_imp_fail(im, DN_EINVAL, "two inputs expected");
	if (a->kind != ONNX_V_DATA && b->kind != ONNX_V_DATA && a->kind != ONNX_V_DERIVED && b->kind != ONNX_V_DERIVED &&
	    sym_of(im, a) && sym_of(im, b))
		return sym_binary(im, op, a, b, o);
	if (a->kind == ONNX_V_DATA && b->kind == ONNX_V_DATA) {
		int mul = strcmp(op, "Mul") == 0 || strcmp(op, "Div") == 0;
		emit(im, mul ? "mul" : "add", o, a, b);
		if (broadcast(o, a, b) < 0)
			return onnx_imp_fail(im, DN_EINVAL, "shapes do not broadcast");
		return 0;
	}
	if (a->kind != ONNX_V_DATA && b->kind != ONNX_V_DATA) {
		struct onnx_val sa = *a, sb = *b;
		if (sa.kind == ONNX_V_SYM)
			sa.rank = a->rank, sa.shape[0] = onnx_dim_int(a->n);
		if (sb.kind == ONNX_V_SYM)
			sb.rank = b->rank, sb.shape[0] = onnx_dim_int(b->n);
		o->kind = ONNX_V_DERIVED;
		if (broadcast(o, &sa, &sb) < 0)
			return onnx_imp_fail(im, DN_EINVAL, "shapes do not broadcast");
		return 0;
	}
	x = a->kind == ONNX_V_DATA ? a : b;
	c = x == a ? b : a;
	if (c->kind == ONNX_V_CONST && c->param && !c->transposed && onnx_tensor_numel(c->t) > 1) {
		struct onnx_val *p = param_as_data(im, c, c);
		int mul = strcmp(op, "Mul") == 0 || strcmp(op, "Div") == 0;
		if (p == NULL)
			return -1;
		emit(im, mul ? "mul" : "add", o, x == a ? x : p, x == a ? p : x);
		if (broadcast(o, x, p) < 0)
			return onnx_imp_fail(im, DN_EINVAL, "shapes do not broadcast");
		return 0;
	}
	if (scalar(c, &f)) {
		if (strcmp(op, "Div") == 0 && x == a)
			f = f != 0 ? 1.0 / f : 1.0;
		else if (strcmp(op, "Mul") != 0)
			f = 1.0;
	} else {
		f = 1.0;
		if (c->kind == ONNX_V_CONST && c->param && onnx_tensor_numel(c->t) > 1)
			onnx_imp_warn(im, "node %d '%s' (%s): initializer '%s' (%lld values) is an operand of arithmetic "
			    "that the model format has no parameter for; its values are not counted", im->node,
			    NODE(im)->name, op, c->name, (long long)onnx_tensor_numel(c->t));
	}
	if (broadcast(o, x, c) < 0)
		return onnx_imp_fail(im, DN_EINVAL, "shapes do not broadcast");
	if (o->rank != x->rank)
		return onnx_imp_fail(im, DN_EINVAL, "a constant operand widens the activation (not supported)");
	for (int i = 0; i < o->rank; i++)
		if (!onnx_dim_same(o->shape[i], x->shape[i]))
			return onnx_imp_fail(im, DN_EINVAL, "a constant operand widens the activation (not supported)");
	l = emit(im, "scale", o, x, NULL);
	json_object_set_new(l, "factor", json_real(isfinite(f) ? f : 1.0));
	return 0;
}

static int
op_simple(struct onnx_imp *im, const char *op, struct onnx_val *x, struct onnx_val *o)
{
	emit(im, op, o, x, NULL);
	copy_shape(o, x);
	return 0;
}

static void
alias(struct onnx_val *o, const struct onnx_val *x)
{
	const char *name = o->name;
	int nc = o->nconsumers, prod = o->producer;
	int cons[4];

	memcpy(cons, o->consumers, sizeof cons);
	*o = *x;
	o->name = name;
	o->nconsumers = nc;
	o->producer = prod;
	memcpy(o->consumers, cons, sizeof cons);
}

static int
op_constant(struct onnx_imp *im, struct onnx_val *o)
{
	const struct onnx_node *n = NODE(im);

	for (int i = 0; i < n->nattrs; i++) {
		const struct onnx_attr *a = &n->attrs[i];
		if (strcmp(a->name, "value") == 0 && a->t != NULL) {
			o->kind = ONNX_V_CONST;
			o->t = a->t;
			o->rank = a->t->rank;
			for (int d = 0; d < o->rank; d++)
				o->shape[d] = onnx_dim_int(a->t->dims[d]);
			return 0;
		}
		if (strcmp(a->name, "value_int") == 0) {
			if (new_sym(im, o, 1, 0) < 0)
				return -1;
			o->e[0] = onnx_dim_int(a->i);
			return 0;
		}
		if (strcmp(a->name, "value_ints") == 0) {
			if (a->nints > ONNX_SYM_MAX)
				return onnx_imp_fail(im, DN_ETOOBIG, "value_ints over %d entries", ONNX_SYM_MAX);
			if (new_sym(im, o, a->nints, 1) < 0)
				return -1;
			for (int k = 0; k < a->nints; k++)
				o->e[k] = onnx_dim_int(a->ints[k]);
			return 0;
		}
		if (strncmp(a->name, "value_float", 11) == 0) {
			o->kind = ONNX_V_DERIVED;
			o->rank = strcmp(a->name, "value_floats") == 0;
			o->shape[0] = onnx_dim_int(a->nfloats);
			return 0;
		}
	}
	return onnx_imp_fail(im, DN_EINVAL, "no value attribute this importer reads");
}

static int
op_constant_of_shape(struct onnx_imp *im, struct onnx_val *s, struct onnx_val *o)
{
	const struct onnx_attr *a = onnx_node_attr(NODE(im), "value");
	int64_t iv = 0;
	double fv = 0;
	int ints = a == NULL || a->t == NULL || a->t->dtype == ONNX_INT64 || a->t->dtype == ONNX_INT32;

	if (!sym_of(im, s) || s->n > ONNX_MAX_RANK)
		return onnx_imp_fail(im, DN_EINVAL, "the shape must be computable from the inputs' shapes");
	if (a != NULL && a->t != NULL && onnx_tensor_get(a->t, 0, &iv, &fv) < 0)
		ints = 0;
	if (ints && s->n == 1 && s->e[0].expr == NULL && s->e[0].v <= ONNX_SYM_MAX && s->e[0].v >= 0) {
		if (new_sym(im, o, (int)s->e[0].v, 1) < 0)
			return -1;
		for (int i = 0; i < o->n; i++)
			o->e[i] = onnx_dim_int(iv);
		return 0;
	}
	o->kind = ONNX_V_DERIVED;
	o->rank = s->n;
	memcpy(o->shape, s->e, sizeof *s->e * (size_t)s->n);
	return 0;
}

static int
op_expand(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o)
{
	struct onnx_val *s = in(im, 1), t;

	if (s == NULL || !sym_of(im, s) || s->n > ONNX_MAX_RANK)
		return onnx_imp_fail(im, DN_EINVAL, "the shape must be computable from the inputs' shapes");
	if (x->kind == ONNX_V_DATA)
		return onnx_imp_fail(im, DN_EINVAL, "expanding an activation is not supported");
	memset(&t, 0, sizeof t);
	t.rank = s->n;
	memcpy(t.shape, s->e, sizeof *s->e * (size_t)s->n);
	if (x->kind == ONNX_V_CONST && x->param && !x->transposed && x->rank >= 1) {
		struct onnx_val b, *p;
		if (broadcast(&b, x, &t) < 0)
			return onnx_imp_fail(im, DN_EINVAL, "shapes do not broadcast");
		if ((p = param_as_data(im, x, &b)) == NULL)
			return -1;
		alias(o, p);
		return 0;
	}
	if (x->kind == ONNX_V_SYM) {
		struct onnx_val xs = *x;
		xs.rank = x->rank;
		xs.shape[0] = onnx_dim_int(x->n);
		if (broadcast(o, &xs, &t) < 0)
			return onnx_imp_fail(im, DN_EINVAL, "shapes do not broadcast");
	} else if (broadcast(o, x, &t) < 0) {
		return onnx_imp_fail(im, DN_EINVAL, "shapes do not broadcast");
	}
	o->kind = ONNX_V_DERIVED;
	o->iota = x->iota;
	o->id_range = x->id_range;
	return 0;
}

static int
op_range(struct onnx_imp *im, struct onnx_val *o)
{
	struct onnx_val *s = in(im, 0), *l = in(im, 1), *d = in(im, 2);
	struct onnx_dim len;

	if (s == NULL || l == NULL || d == NULL || !sym_of(im, s) || !sym_of(im, l) || !sym_of(im, d) ||
	    d->e[0].expr != NULL || d->e[0].v == 0)
		return onnx_imp_fail(im, DN_EINVAL, "start, limit and delta must be computable from the inputs' shapes");
	if (onnx_dim_arith(im->ar, ONNX_DIM_SUB, l->e[0], s->e[0], &len) < 0 ||
	    onnx_dim_arith(im->ar, ONNX_DIM_DIV, len, d->e[0], &len) < 0)
		return -1;
	o->kind = ONNX_V_DERIVED;
	o->rank = 1;
	o->shape[0] = len;
	o->iota = s->e[0].expr == NULL && s->e[0].v == 0 && d->e[0].v == 1;
	o->id_range = len;
	return 0;
}

static int
op_where(struct onnx_imp *im, struct onnx_val *o)
{
	struct onnx_val *c = in(im, 0), *a = in(im, 1), *b = in(im, 2);
	json_t *l;

	if (c == NULL || a == NULL || b == NULL)
		return onnx_imp_fail(im, DN_EINVAL, "three inputs expected");
	if (a->kind != ONNX_V_DATA && b->kind != ONNX_V_DATA) {
		if (sym_of(im, c) && sym_of(im, a) && sym_of(im, b) && c->n == a->n && a->n == b->n) {
			if (new_sym(im, o, a->n, a->rank) < 0)
				return -1;
			for (int i = 0; i < a->n; i++) {
				if (c->e[i].expr != NULL)
					return onnx_imp_fail(im, DN_EINVAL, "a symbolic condition");
				o->e[i] = c->e[i].v ? a->e[i] : b->e[i];
			}
			return 0;
		}
		o->kind = ONNX_V_DERIVED;
		copy_shape(o, a->kind == ONNX_V_SYM ? c : a);
		return 0;
	}
	if (a->kind == ONNX_V_DATA && b->kind == ONNX_V_DATA)
		return onnx_imp_fail(im, DN_EINVAL, "a selection between two activations is not supported");
	{
		struct onnx_val *x = a->kind == ONNX_V_DATA ? a : b;
		l = emit(im, "scale", o, x, NULL);
		json_object_set_new(l, "factor", json_real(1.0));
		copy_shape(o, x);
	}
	return 0;
}

/* ReduceMean over the spatial axes with keepdims: a global average pool. */
static int
op_reduce_mean(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o)
{
	int64_t axes[ONNX_MAX_RANK];
	int n = axes_of(im, axes, ONNX_MAX_RANK);
	json_t *l;

	if (n == 2 && x->rank == 4 && ((axes[0] == 2 && axes[1] == 3) || (axes[0] == -2 && axes[1] == -1))) {
		l = emit(im, "adaptive_avgpool2d", o, x, NULL);
		json_object_set_new(l, "output_size", json_integer(1));
		copy_shape(o, x);
		o->shape[2] = o->shape[3] = onnx_dim_int(1);
		if (attr_i(im, "keepdims", 1) == 0) {
			struct onnx_val p = *o;
			return reshape_to(im, &p, o, x->shape, 2, 1);
		}
		return 0;
	}
	return onnx_imp_fail(im, DN_EINVAL, "a mean over axes other than the spatial ones has no model-format operator");
}

static int
op_fused(struct onnx_imp *im, int i, struct onnx_val *o)
{
	struct onnx_val *x = onnx_imp_find(im, im->fuse_x[i]);
	json_t *l;

	if (x == NULL || x->kind != ONNX_V_DATA)
		return onnx_imp_fail(im, DN_EINVAL, "a fused operator's input is not an activation");
	if (im->fuse[i] == ONNX_FUSE_GELU)
		return op_simple(im, "gelu", x, o);
	if (im->fuse[i] == ONNX_FUSE_GELU_TANH) {
		json_object_set_new(emit(im, "gelu", o, x, NULL), "approximate", json_string("tanh_python"));
		copy_shape(o, x);
		return 0;
	}
	l = emit(im, "layernorm", o, x, NULL);
	json_object_set_new(l, "affine", json_boolean(im->fuse_affine[i]));
	copy_shape(o, x);
	return 0;
}

/* Operators that are the identity on what the cost model sees. */
static const char *const passthrough[] = { "Identity", "Cast", "CastLike", "Contiguous", NULL };
/* Elementwise operators of one activation, priced as `scale`. */
static const char *const elementwise[] = { "Sqrt", "Erf", "Exp", "Log", "Neg", "Reciprocal", "Abs", "Floor",
	"Ceil", "Round", "Clip", "Not", "IsNaN", "Sign", NULL };

static int
in_list(const char *const *l, const char *s)
{
	for (; *l != NULL; l++)
		if (strcmp(*l, s) == 0)
			return 1;
	return 0;
}

static int
unknown(struct onnx_imp *im, const char *op, struct onnx_val *x, struct onnx_val *o)
{
	const struct onnx_node *n = NODE(im);
	json_t *l;
	int k;

	if (!im->opts->unknown_elementwise || x == NULL || x->kind != ONNX_V_DATA || n->noutputs != 1)
		return onnx_imp_fail(im, DN_ENOENT,
		    "unknown operator '%s%s%s' (node %d of %d; inputs: %s%s); `dnnsat import --unknown elementwise` "
		    "prices it as elementwise", n->domain, n->domain[0] ? "." : "", op, im->node, im->m->graph.nnodes,
		    n->ninputs > 0 ? n->inputs[0] : "none", n->ninputs > 1 ? ", ..." : "");
	for (k = 0; k < im->nwarned; k++)
		if (strcmp(im->warned[k], op) == 0)
			break;
	if (k == im->nwarned && im->nwarned < 64) {
		dn_fmt(im->warned[im->nwarned++], sizeof im->warned[0], "%s", op);
		onnx_imp_warn(im, "operator '%s' (first at node %d '%s') is priced as elementwise; its output is assumed "
		    "to have its input's shape", op, im->node, n->name);
	}
	l = emit(im, "scale", o, x, NULL);
	json_object_set_new(l, "factor", json_real(1.0));
	copy_shape(o, x);
	return 0;
}

int
onnx_ops_translate(struct onnx_imp *im, int i)
{
	const struct onnx_node *n = &im->m->graph.nodes[i];
	const char *op = n->op_type;
	struct onnx_val *x = in(im, 0), *o;

	if (im->fuse[i] == ONNX_FUSE_SKIP)
		return 0;
	if (n->noutputs < 1)
		return onnx_imp_fail(im, DN_EINVAL, "no output");
	o = out(im, 0);
	if (im->fuse[i] != ONNX_FUSE_NONE)
		return op_fused(im, i, o);
	if (n->domain[0] != '\0' && strcmp(n->domain, "ai.onnx") != 0)
		return unknown(im, op, x, o);
	if (strcmp(op, "Constant") == 0)
		return op_constant(im, o);
	if (strcmp(op, "Range") == 0)
		return op_range(im, o);
	if (strcmp(op, "Concat") == 0)
		return op_concat(im, o);
	if (strcmp(op, "Where") == 0)
		return op_where(im, o);
	if (x == NULL)
		return onnx_imp_fail(im, DN_EINVAL, "input 0 '%s' is not defined before the node",
		    n->ninputs > 0 ? n->inputs[0] : "");
	if (x->kind == ONNX_V_NONE)
		return onnx_imp_fail(im, DN_EINVAL, "input '%s' is not produced by any earlier node", x->name);
	if (strcmp(op, "Shape") == 0)
		return op_shape(im, x, o);
	if (strcmp(op, "Size") == 0) {
		if (new_sym(im, o, 1, 0) < 0)
			return -1;
		o->e[0] = onnx_dim_int(1);
		for (int k = 0; k < x->rank; k++)
			if (onnx_dim_arith(im->ar, ONNX_DIM_MUL, o->e[0], x->shape[k], &o->e[0]) < 0)
				return -1;
		return 0;
	}
	if (strcmp(op, "ConstantOfShape") == 0)
		return op_constant_of_shape(im, x, o);
	if (in_list(passthrough, op)) {
		alias(o, x);
		return 0;
	}
	if (strcmp(op, "Gather") == 0)
		return op_gather(im, x, o);
	if (strcmp(op, "Unsqueeze") == 0 || strcmp(op, "Squeeze") == 0)
		return op_unsqueeze(im, op[0] == 'S', x, o);
	if (strcmp(op, "Slice") == 0)
		return op_slice(im, x, o);
	if (strcmp(op, "Expand") == 0)
		return op_expand(im, x, o);
	if (strcmp(op, "Add") == 0 || strcmp(op, "Sub") == 0 || strcmp(op, "Mul") == 0 || strcmp(op, "Div") == 0 ||
	    strcmp(op, "Equal") == 0 || strcmp(op, "Mod") == 0 || strcmp(op, "Max") == 0 || strcmp(op, "Min") == 0)
		return op_binary(im, op, o);
	if (strcmp(op, "Transpose") == 0)
		return op_transpose(im, x, o);
	if (strcmp(op, "Reshape") == 0)
		return op_reshape(im, x, o);
	if (x->kind != ONNX_V_DATA) {
		/* anything else on tensors that do not depend on the inputs */
		o->kind = ONNX_V_DERIVED;
		copy_shape(o, x);
		return 0;
	}
	if (strcmp(op, "Clip") == 0) {
		/* ReLU6 (MobileNet) and ReLU exported as Clip(x, 0, 6) / Clip(x, 0) */
		double lo = -1, hi = -1;
		const struct onnx_attr *amin = onnx_node_attr(NODE(im), "min"), *amax = onnx_node_attr(NODE(im), "max");
		if (amin != NULL)
			lo = amin->f;
		else if (!scalar(in(im, 1), &lo))
			lo = -1;
		if (amax != NULL)
			hi = amax->f;
		else if (in(im, 2) == NULL)
			hi = INFINITY;
		else if (!scalar(in(im, 2), &hi))
			hi = -1;
		if (lo == 0 && (hi == 6 || isinf(hi)))
			return op_simple(im, hi == 6 ? "relu6" : "relu", x, o);
	}
	if (strcmp(op, "Dropout") == 0) {
		double p = 0.5;
		const struct onnx_attr *ratio = onnx_node_attr(NODE(im), "ratio");
		if (ratio != NULL)
			p = ratio->f;
		else if (!scalar(in(im, 1), &p))
			p = 0.5;
		json_object_set_new(emit(im, "dropout", o, x, NULL), "p", json_real(p >= 0 && p < 1 ? p : 0.5));
		copy_shape(o, x);
		return 0;
	}
	if (strcmp(op, "Conv") == 0)
		return op_conv(im, x, o);
	if (strcmp(op, "Gemm") == 0)
		return op_gemm(im, x, o);
	if (strcmp(op, "MatMul") == 0)
		return op_matmul(im, x, o);
	if (strcmp(op, "Relu") == 0)
		return op_simple(im, "relu", x, o);
	if (strcmp(op, "Sigmoid") == 0)
		return op_simple(im, "sigmoid", x, o);
	if (strcmp(op, "Tanh") == 0)
		return op_simple(im, "tanh", x, o);
	if (strcmp(op, "Gelu") == 0)
		return op_simple(im, "gelu", x, o);
	if (strcmp(op, "Softmax") == 0 || strcmp(op, "LogSoftmax") == 0) {
		int axis = 0;
		if (axis_norm(im, attr_i(im, "axis", im->m->opset >= 13 ? -1 : 1), x->rank, &axis) < 0)
			return -1;
		if (im->m->opset < 13 && axis != x->rank - 1)
			return onnx_imp_fail(im, DN_EINVAL, "softmax before opset 13 on an axis other than the last");
		json_object_set_new(emit(im, "softmax", o, x, NULL), "dim", json_integer(axis - x->rank));
		copy_shape(o, x);
		return 0;
	}
	if (strcmp(op, "BatchNormalization") == 0) {
		if (x->rank < 2)
			return onnx_imp_fail(im, DN_EINVAL, "batch norm on rank %d", x->rank);
		return op_simple(im, "batchnorm", x, o);
	}
	if (strcmp(op, "LayerNormalization") == 0) {
		int axis = 0;
		if (axis_norm(im, attr_i(im, "axis", -1), x->rank, &axis) < 0)
			return -1;
		if (axis != x->rank - 1)
			return onnx_imp_fail(im, DN_EINVAL, "layer norm over more than the last axis is not supported");
		json_object_set_new(emit(im, "layernorm", o, x, NULL), "affine", json_boolean(in(im, 1) != NULL));
		copy_shape(o, x);
		return 0;
	}
	if (strcmp(op, "MaxPool") == 0)
		return op_pool(im, "maxpool", x, o);
	if (strcmp(op, "AveragePool") == 0)
		return op_pool(im, "avgpool", x, o);
	if (strcmp(op, "GlobalAveragePool") == 0 || strcmp(op, "GlobalMaxPool") == 0) {
		if (x->rank != 4)
			return onnx_imp_fail(im, DN_EINVAL, "only 2-d global pooling is supported");
		json_object_set_new(emit(im, op[6] == 'A' ? "adaptive_avgpool2d" : "adaptive_maxpool2d", o, x, NULL),
		    "output_size", json_integer(1));
		copy_shape(o, x);
		o->shape[2] = o->shape[3] = onnx_dim_int(1);
		return 0;
	}
	if (strcmp(op, "Flatten") == 0) {
		int axis = 0;
		struct onnx_dim s[2] = { onnx_dim_int(1), onnx_dim_int(1) };
		if (axis_norm(im, attr_i(im, "axis", 1), x->rank + 1, &axis) < 0)
			return -1;
		for (int k = 0; k < x->rank; k++)
			if (onnx_dim_arith(im->ar, ONNX_DIM_MUL, s[k >= axis], x->shape[k], &s[k >= axis]) < 0)
				return -1;
		if (axis == 1) {
			json_object_set_new(emit(im, "flatten", o, x, NULL), "start_dim", json_integer(1));
			o->rank = 2;
			o->shape[0] = s[0];
			o->shape[1] = s[1];
			return 0;
		}
		return reshape_to(im, x, o, s, 2, 1);
	}
	if (strcmp(op, "Split") == 0)
		return op_split(im, x);
	if (strcmp(op, "ReduceMean") == 0)
		return op_reduce_mean(im, x, o);
	if (strcmp(op, "Pow") == 0) {
		double e;
		if (scalar(in(im, 1), &e) && e == 2.0) {
			emit(im, "mul", o, x, x);
			copy_shape(o, x);
			return 0;
		}
		json_object_set_new(emit(im, "scale", o, x, NULL), "factor", json_real(1.0));
		copy_shape(o, x);
		return 0;
	}
	if (in_list(elementwise, op)) {
		json_object_set_new(emit(im, "scale", o, x, NULL), "factor", json_real(1.0));
		copy_shape(o, x);
		return 0;
	}
	return unknown(im, op, x, o);
}
