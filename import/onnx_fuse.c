/*
 * onnx_fuse.c - torch's exports of LayerNorm before opset 17 and of exact
 * GELU (before opset 20) are chains of primitive nodes; they are found here
 * before translation and folded back into one layernorm or gelu, so the
 * normalisation's scale and shift are counted as its parameters and the
 * chain is priced as the fused operator PyTorch runs. A chain is folded only
 * when each intermediate value has no reader outside it.
 *
 *   LayerNorm: m = ReduceMean(x, [-1]); d = Sub(x, m); v = ReduceMean(Pow(d, 2), [-1]);
 *              y = Div(d, Sqrt(Add(v, eps))) [; y = Mul(y, gamma) [; y = Add(y, beta)]]
 *   GELU:      y = Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5) (the 0.5 on either side)
 *   tanh GELU: y = Mul(Mul(x, 0.5), Add(Tanh(Mul(Add(x, Mul(Pow(x, 3), c)), k)), 1)), Hugging Face's
 *              NewGELUActivation (GPT-2) written as eager ops: gelu with approximate
 *              "tanh_python", which keeps the intermediate tensors PyTorch keeps
 * (operands of Add and Mul in either order)
 */
#include "onnx_import_priv.h"

#include <string.h>

static const struct onnx_node *
node(struct onnx_imp *im, int i)
{
	return &im->m->graph.nodes[i];
}

/* The only reader of value `name` when it is a node of type op, else -1. */
static int
sole(struct onnx_imp *im, const char *name, const char *op)
{
	struct onnx_val *v = onnx_imp_find(im, name);

	if (v == NULL || v->nconsumers != 1 || strcmp(node(im, v->consumers[0])->op_type, op) != 0)
		return -1;
	return v->consumers[0];
}

static int
is_param(struct onnx_imp *im, const char *name)
{
	struct onnx_val *v = onnx_imp_find(im, name);
	return v != NULL && v->kind == ONNX_V_CONST && v->param;
}

static int
last_axis_mean(struct onnx_imp *im, int i)
{
	const struct onnx_node *n = node(im, i);
	const struct onnx_attr *a = onnx_node_attr(n, "axes");
	const struct onnx_attr *k = onnx_node_attr(n, "keepdims");

	if (strcmp(n->op_type, "ReduceMean") != 0 || (k != NULL && k->i == 0))
		return 0;
	return a != NULL && a->nints == 1 && a->ints[0] == -1;
}

static void
find_layernorm(struct onnx_imp *im, int i)
{
	const struct onnx_node *n = node(im, i);
	const char *x = n->inputs[0];
	int sub, pw, m2, add, sq, dv, mul, badd, chain[9], nc = 0, last;
	struct onnx_val *d;

	if (!last_axis_mean(im, i) || (sub = sole(im, n->outputs[0], "Sub")) < 0 ||
	    strcmp(node(im, sub)->inputs[0], x) != 0)
		return;
	d = onnx_imp_find(im, node(im, sub)->outputs[0]);
	if (d == NULL || d->nconsumers != 2)
		return;
	pw = strcmp(node(im, d->consumers[0])->op_type, "Pow") == 0 ? d->consumers[0] : d->consumers[1];
	dv = pw == d->consumers[0] ? d->consumers[1] : d->consumers[0];
	if (strcmp(node(im, pw)->op_type, "Pow") != 0 || strcmp(node(im, dv)->op_type, "Div") != 0 ||
	    strcmp(node(im, dv)->inputs[0], d->name) != 0)
		return;
	if ((m2 = sole(im, node(im, pw)->outputs[0], "ReduceMean")) < 0 || !last_axis_mean(im, m2) ||
	    (add = sole(im, node(im, m2)->outputs[0], "Add")) < 0 ||
	    (sq = sole(im, node(im, add)->outputs[0], "Sqrt")) < 0 ||
	    sole(im, node(im, sq)->outputs[0], "Div") != dv)
		return;
	chain[nc++] = i;
	chain[nc++] = sub;
	chain[nc++] = pw;
	chain[nc++] = m2;
	chain[nc++] = add;
	chain[nc++] = sq;
	chain[nc++] = dv;
	last = dv;
	mul = sole(im, node(im, dv)->outputs[0], "Mul");
	if (mul >= 0 && node(im, mul)->ninputs == 2 && is_param(im, node(im, mul)->inputs[1])) {
		chain[nc++] = mul;
		last = mul;
		badd = sole(im, node(im, mul)->outputs[0], "Add");
		if (badd >= 0 && node(im, badd)->ninputs == 2 && is_param(im, node(im, badd)->inputs[1])) {
			chain[nc++] = badd;
			last = badd;
		}
	}
	for (int k = 0; k < nc; k++)
		if (im->fuse[chain[k]] != ONNX_FUSE_NONE)
			return;
	for (int k = 0; k < nc; k++)
		im->fuse[chain[k]] = ONNX_FUSE_SKIP;
	im->fuse[last] = ONNX_FUSE_LAYERNORM;
	im->fuse_x[last] = x;
	im->fuse_affine[last] = last != dv;
}

static void
find_gelu(struct onnx_imp *im, int erf)
{
	const struct onnx_node *e = node(im, erf);
	struct onnx_val *q = onnx_imp_find(im, e->inputs[0]);
	const struct onnx_node *dn, *mn;
	const char *x;
	int add, mul, half, last;

	if (q == NULL || q->producer < 0 || q->nconsumers != 1)
		return;
	dn = node(im, q->producer);
	if ((strcmp(dn->op_type, "Div") != 0 && strcmp(dn->op_type, "Mul") != 0) || dn->ninputs != 2)
		return;
	x = dn->inputs[0];
	if ((add = sole(im, e->outputs[0], "Add")) < 0 || (mul = sole(im, node(im, add)->outputs[0], "Mul")) < 0)
		return;
	mn = node(im, mul);
	if (mn->ninputs != 2)
		return;
	last = mul;
	if (strcmp(mn->inputs[0], x) != 0 && strcmp(mn->inputs[1], x) != 0) {
		/* 0.5 * x first: Mul(Mul(x, 0.5), Add(...)) */
		struct onnx_val *h = onnx_imp_find(im, strcmp(mn->inputs[0], node(im, add)->outputs[0]) == 0 ?
		    mn->inputs[1] : mn->inputs[0]);
		if (h == NULL || h->producer < 0 || h->nconsumers != 1 ||
		    strcmp(node(im, h->producer)->op_type, "Mul") != 0 || strcmp(node(im, h->producer)->inputs[0], x) != 0)
			return;
		im->fuse[h->producer] = ONNX_FUSE_SKIP;
	} else if ((half = sole(im, mn->outputs[0], "Mul")) >= 0) {
		im->fuse[mul] = ONNX_FUSE_SKIP;
		last = half;
	}
	im->fuse[q->producer] = ONNX_FUSE_SKIP;
	im->fuse[erf] = ONNX_FUSE_SKIP;
	im->fuse[add] = ONNX_FUSE_SKIP;
	im->fuse[last] = ONNX_FUSE_GELU;
	im->fuse_x[last] = x;
}

/* The other input of a two-input node than `name`, or NULL. */
static const char *
other(const struct onnx_node *n, const char *name)
{
	if (n->ninputs != 2)
		return NULL;
	if (strcmp(n->inputs[0], name) == 0)
		return n->inputs[1];
	if (strcmp(n->inputs[1], name) == 0)
		return n->inputs[0];
	return NULL;
}

/* The producer of value `name` when it is a node of type op read only once. */
static int
made_by(struct onnx_imp *im, const char *name, const char *op)
{
	struct onnx_val *v = onnx_imp_find(im, name);

	if (v == NULL || v->producer < 0 || v->nconsumers != 1 || strcmp(node(im, v->producer)->op_type, op) != 0)
		return -1;
	return v->producer;
}

static void
find_tanh_gelu(struct onnx_imp *im, int th)
{
	const struct onnx_node *t = node(im, th);
	int mk, inner, mc, pw, add1, fin, half, chain[8], nc = 0;
	const char *x, *h;

	if ((mk = made_by(im, t->inputs[0], "Mul")) < 0)
		return;
	/* Mul(inner, k): inner = Add(x, Mul(Pow(x, 3), c)) */
	inner = made_by(im, node(im, mk)->inputs[0], "Add");
	if (inner < 0)
		inner = made_by(im, node(im, mk)->inputs[1], "Add");
	if (inner < 0 || node(im, inner)->ninputs != 2)
		return;
	for (int side = 0; side < 2; side++) {
		x = node(im, inner)->inputs[side];
		mc = made_by(im, node(im, inner)->inputs[1 - side], "Mul");
		if (mc < 0)
			continue;
		pw = made_by(im, node(im, mc)->inputs[0], "Pow");
		if (pw < 0)
			pw = made_by(im, node(im, mc)->inputs[1], "Pow");
		if (pw >= 0 && strcmp(node(im, pw)->inputs[0], x) == 0)
			break;
		pw = -1;
	}
	if (pw < 0 || (add1 = sole(im, t->outputs[0], "Add")) < 0 || (fin = sole(im, node(im, add1)->outputs[0], "Mul")) < 0)
		return;
	h = other(node(im, fin), node(im, add1)->outputs[0]);
	if (h == NULL)
		return;
	chain[nc++] = pw;
	chain[nc++] = mc;
	chain[nc++] = inner;
	chain[nc++] = mk;
	chain[nc++] = th;
	chain[nc++] = add1;
	if (strcmp(h, x) != 0) {
		/* (x * 0.5) * (1 + tanh(...)) */
		if ((half = made_by(im, h, "Mul")) < 0 || other(node(im, half), x) == NULL)
			return;
		chain[nc++] = half;
	} else {
		/* (x * (1 + tanh(...))) * 0.5 */
		int m2 = sole(im, node(im, fin)->outputs[0], "Mul");
		if (m2 < 0)
			return;
		chain[nc++] = fin;
		fin = m2;
	}
	for (int k = 0; k < nc; k++)
		if (im->fuse[chain[k]] != ONNX_FUSE_NONE)
			return;
	for (int k = 0; k < nc; k++)
		im->fuse[chain[k]] = ONNX_FUSE_SKIP;
	im->fuse[fin] = ONNX_FUSE_GELU_TANH;
	im->fuse_x[fin] = x;
}

void
onnx_fuse_find(struct onnx_imp *im)
{
	for (int i = 0; i < im->m->graph.nnodes; i++) {
		const struct onnx_node *n = node(im, i);
		if (n->ninputs < 1 || n->noutputs < 1 || n->domain[0] != '\0')
			continue;
		if (strcmp(n->op_type, "ReduceMean") == 0)
			find_layernorm(im, i);
		else if (strcmp(n->op_type, "Erf") == 0)
			find_gelu(im, i);
		else if (strcmp(n->op_type, "Tanh") == 0)
			find_tanh_gelu(im, i);
	}
}
