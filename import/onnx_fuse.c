/*
 * onnx_fuse.c - torch's exports of LayerNorm before opset 17, of exact
 * GELU (before opset 20), of Hardswish (before opset 14) and of SiLU are
 * chains of primitive nodes; they are found here
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
 *   Hardswish: y = Mul(x, HardSigmoid(x, alpha 1/6, beta 0.5)), torch's export of nn.Hardswish
 *              before opset 14 (MobileNetV3): one hardswish, which keeps x alone, where the
 *              two nodes would keep x and the gate
 *   GroupNorm: y = Add(Mul(Reshape(InstanceNormalization(Reshape(x, [N, G, -1]), ones, zeros),
 *              shape of x), weight), bias), torch's export of nn.GroupNorm (the scale and shift
 *              through Unsqueeze nodes): one groupnorm of G groups
 *   Mish:      y = Mul(x, Tanh(Softplus(x))), torch's export of nn.Mish before opset 18
 *   SiLU:      y = Mul(x, Sigmoid(x)), torch's export of nn.SiLU (ONNX has no SiLU operator;
 *              EfficientNet, LLaMA's MLP): one silu, which keeps x alone, where the two nodes
 *              would keep x and the sigmoid's result (EfficientNet-B0 saved 28 % too much)
 * (operands of Add and Mul in either order)
 *
 *   attention core (BERT, GPT-2 as torch exports them; onnx_op_layer.c checks the
 *   sizes at translation and falls back to the nodes one by one when they do not fit):
 *              qh = Transpose(Reshape(q, [N, L, h, d]), 0 2 1 3), vh likewise,
 *              kt = Transpose(Reshape(k, ...), 0 2 3 1) (or 0 2 1 3 then 0 1 3 2),
 *              s = MatMul(qh, kt) [/ or * a constant] [+ a mask, or Where(mask, s, c)],
 *              p = Softmax(s, last axis) [-> Dropout], c = MatMul(p, vh),
 *              out = Reshape(Transpose(c, 0 2 1 3), [N, L, E])
 *              the masks and the scale may not depend on the graph's inputs' values
 *              (a Where mask makes it causal: GPT-2's bias buffer); the Reshape of k may
 *              also feed Transposes nobody reads (GPT-2's `present` key), and Shape nodes
 *              may read any value of the chain (HF's view(x.size()[:-2] + (E,)))
 *   nn.MultiheadAttention (torchvision's ViT, nn.TransformerEncoderLayer; sequence first,
 *   the heads folded into the batch of 3-d MatMuls):
 *              qh = Transpose(Reshape(q, [L, N*h, d]), 1 0 2) [/ or * a constant], vh likewise,
 *              kt = Transpose(Reshape(k, ...), 1 2 0) (or 1 0 2 then 0 2 1),
 *              the scores, mask, Softmax and Dropout as above, c = MatMul(p, vh),
 *              out = Reshape(Transpose(c, 1 0 2), [L*N, E] or [L, N, E])
 *              The nodes before the merge are translated "in the shadow" (onnx_ops.c):
 *              as usual, so that their values have shapes for the Shape nodes, but
 *              into a layer list of their own, which the model file gets only when
 *              the sizes do not fit attention_core.
 */
#include "onnx_import_priv.h"

#include <math.h>
#include <stdlib.h>
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

/* Mul(x, gate), the gate node g read by that Mul alone: the gate skipped
 * and the Mul translated as `how` on x. 1 when folded, else 0. */
static int
find_gated(struct onnx_imp *im, int g, const char *x, enum onnx_fuse how)
{
	const struct onnx_node *h = node(im, g);
	const char *o;
	int mul = sole(im, h->outputs[0], "Mul");

	if (mul < 0 || (o = other(node(im, mul), h->outputs[0])) == NULL || strcmp(o, x) != 0 ||
	    im->fuse[g] != ONNX_FUSE_NONE || im->fuse[mul] != ONNX_FUSE_NONE)
		return 0;
	im->fuse[g] = ONNX_FUSE_SKIP;
	im->fuse[mul] = how;
	im->fuse_x[mul] = x;
	return 1;
}

/* The length of a 1-d Constant node's or initializer's value `name`, or 0. */
static int64_t
const_len(struct onnx_imp *im, const char *name)
{
	struct onnx_val *v = onnx_imp_find(im, name);
	const struct onnx_attr *a;

	if (v == NULL)
		return 0;
	if (v->kind == ONNX_V_CONST && v->t != NULL)
		return v->t->rank == 1 ? v->t->dims[0] : 0;
	if (v->producer < 0 || strcmp(node(im, v->producer)->op_type, "Constant") != 0 ||
	    (a = onnx_node_attr(node(im, v->producer), "value")) == NULL || a->t == NULL || a->t->rank != 1)
		return 0;
	return a->t->dims[0];
}

/* torch's nn.GroupNorm from its InstanceNormalization node: see the top. */
static void
find_groupnorm(struct onnx_imp *im, int in)
{
	const struct onnx_node *n = node(im, in);
	struct onnx_val *g = n->ninputs == 3 ? onnx_imp_find(im, n->inputs[0]) : NULL;
	int64_t groups = n->ninputs == 3 ? const_len(im, n->inputs[1]) : 0;
	int r2, mul, add, last;
	const char *w, *b;

	if (g == NULL || g->producer < 0 || g->nconsumers != 1 || groups < 1 || is_param(im, n->inputs[1]) ||
	    strcmp(node(im, g->producer)->op_type, "Reshape") != 0 || (r2 = sole(im, n->outputs[0], "Reshape")) < 0)
		return;
	last = r2;
	if ((mul = sole(im, node(im, r2)->outputs[0], "Mul")) >= 0 &&
	    (w = other(node(im, mul), node(im, r2)->outputs[0])) != NULL && onnx_imp_param_source(im, w) != NULL &&
	    (add = sole(im, node(im, mul)->outputs[0], "Add")) >= 0 &&
	    (b = other(node(im, add), node(im, mul)->outputs[0])) != NULL && onnx_imp_param_source(im, b) != NULL)
		last = add;
	if (im->fuse[g->producer] != ONNX_FUSE_NONE || im->fuse[in] != ONNX_FUSE_NONE || im->fuse[r2] != ONNX_FUSE_NONE ||
	    (last != r2 && (im->fuse[mul] != ONNX_FUSE_NONE || im->fuse[last] != ONNX_FUSE_NONE)))
		return;
	im->fuse[g->producer] = ONNX_FUSE_SKIP;
	im->fuse[in] = ONNX_FUSE_SKIP;
	if (last != r2) {
		im->fuse[r2] = ONNX_FUSE_SKIP;
		im->fuse[mul] = ONNX_FUSE_SKIP;
	}
	im->fuse[last] = ONNX_FUSE_GROUPNORM;
	im->fuse_x[last] = node(im, g->producer)->inputs[0];
	im->fuse_affine[last] = last != r2;
	im->fuse_groups[last] = groups;
}

/* Mul(x, Tanh(Softplus(x))): one mish (the gate is the Tanh of the
 * Softplus, read by it alone). */
static void
find_mish(struct onnx_imp *im, int sp)
{
	int th = sole(im, node(im, sp)->outputs[0], "Tanh");

	if (th >= 0 && im->fuse[sp] == ONNX_FUSE_NONE && find_gated(im, th, node(im, sp)->inputs[0], ONNX_FUSE_MISH))
		im->fuse[sp] = ONNX_FUSE_SKIP;
}

/* Mul(x, HardSigmoid(x)) at torch's slope and offset: one hardswish. */
static void
find_hardswish(struct onnx_imp *im, int hs)
{
	const struct onnx_node *h = node(im, hs);
	const struct onnx_attr *alpha = onnx_node_attr(h, "alpha"), *beta = onnx_node_attr(h, "beta");

	if (alpha != NULL && fabs(alpha->f - 1.0 / 6.0) <= 1e-6 && (beta == NULL || fabs(beta->f - 0.5) <= 1e-6))
		(void)find_gated(im, hs, h->inputs[0], ONNX_FUSE_HARDSWISH);
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

/* ---- attention ---- */

/* The one reader of v other than Shape nodes (which read only its shape), or
 * -1 when none or several. */
static int
data_reader(struct onnx_imp *im, const struct onnx_val *v)
{
	int r = -1;

	if (v == NULL || v->nconsumers > 4)
		return -1;
	for (int c = 0; c < v->nconsumers; c++) {
		if (strcmp(node(im, v->consumers[c])->op_type, "Shape") == 0)
			continue;
		if (r >= 0 && r != v->consumers[c])
			return -1;
		r = v->consumers[c];
	}
	return r;
}

/* sole() and made_by() where Shape nodes may read the value too */
static int
asole(struct onnx_imp *im, const char *name, const char *op)
{
	int r = data_reader(im, onnx_imp_find(im, name));

	return r >= 0 && strcmp(node(im, r)->op_type, op) == 0 ? r : -1;
}

static int
amade_by(struct onnx_imp *im, const char *name, const char *op)
{
	struct onnx_val *v = onnx_imp_find(im, name);

	if (v == NULL || v->producer < 0 || data_reader(im, v) < 0 || strcmp(node(im, v->producer)->op_type, op) != 0)
		return -1;
	return v->producer;
}

/* values that depend on the graph inputs' values: Shape and Size read
 * only the shape; everything else passes dependence on */
static void
mark_dyn(struct onnx_imp *im)
{
	for (int i = 0; i < im->m->graph.ninputs; i++) {
		struct onnx_val *v = onnx_imp_find(im, im->m->graph.inputs[i].name);
		if (v != NULL && v->kind == ONNX_V_DATA)
			v->dyn = 1;
	}
	for (int i = 0; i < im->m->graph.nnodes; i++) {
		const struct onnx_node *n = node(im, i);
		int dyn = 0;
		if (strcmp(n->op_type, "Shape") != 0 && strcmp(n->op_type, "Size") != 0)
			for (int k = 0; k < n->ninputs && !dyn; k++) {
				struct onnx_val *v = n->inputs[k][0] != '\0' ? onnx_imp_find(im, n->inputs[k]) : NULL;
				dyn = v != NULL && v->dyn;
			}
		for (int k = 0; k < n->noutputs; k++) {
			struct onnx_val *v = onnx_imp_find(im, n->outputs[k]);
			if (v != NULL)
				v->dyn = dyn;
		}
	}
}

static int
is_dyn(struct onnx_imp *im, const char *name)
{
	struct onnx_val *v = onnx_imp_find(im, name);
	return v != NULL && v->dyn;
}

/* node i is a Transpose with exactly this 4-entry perm */
static int
perm_is(struct onnx_imp *im, int i, int a, int b, int c, int d)
{
	const struct onnx_attr *p = onnx_node_attr(node(im, i), "perm");

	return strcmp(node(im, i)->op_type, "Transpose") == 0 && p != NULL && p->nints == 4 &&
	    p->ints[0] == a && p->ints[1] == b && p->ints[2] == c && p->ints[3] == d;
}

/* node i is a Transpose with exactly this 3-entry perm */
static int
perm3_is(struct onnx_imp *im, int i, int a, int b, int c)
{
	const struct onnx_attr *p = onnx_node_attr(node(im, i), "perm");

	return strcmp(node(im, i)->op_type, "Transpose") == 0 && p != NULL && p->nints == 3 &&
	    p->ints[0] == a && p->ints[1] == b && p->ints[2] == c;
}

static int
chain_add(struct onnx_attn *a, int i)
{
	if (a->nchain >= ONNX_ATTN_CHAIN)
		return -1;
	a->chain[a->nchain++] = i;
	return 0;
}

/* Transpose(Reshape(x), 0 2 1 3) read once, into `a`; the reshaped x, or NULL */
static const char *
head_split(struct onnx_imp *im, struct onnx_attn *a, const char *name, int *reshape)
{
	int t = amade_by(im, name, "Transpose"), r;

	if (t < 0 || node(im, t)->ninputs < 1 || !perm_is(im, t, 0, 2, 1, 3) ||
	    (r = amade_by(im, node(im, t)->inputs[0], "Reshape")) < 0 ||
	    node(im, r)->ninputs != 2 || chain_add(a, t) < 0 || chain_add(a, r) < 0)
		return NULL;
	*reshape = r;
	return node(im, r)->inputs[0];
}

/* K^T: Transpose(Reshape(k), 0 2 3 1), or 0 2 1 3 then 0 1 3 2; the Reshape
 * may have other readers: Transposes whose outputs only Shape nodes read
 * (folded too; GPT-2's `present` key, a graph output the model file has no
 * use for) */
static const char *
key_split(struct onnx_imp *im, struct onnx_attn *a, const char *name, int *reshape)
{
	struct onnx_val *t = onnx_imp_find(im, name), *kr;
	int ti, r;

	if (t == NULL || t->producer < 0 || data_reader(im, t) < 0)
		return NULL;
	ti = t->producer;
	if (perm_is(im, ti, 0, 1, 3, 2)) {
		int t2 = amade_by(im, node(im, ti)->inputs[0], "Transpose");
		if (t2 < 0 || !perm_is(im, t2, 0, 2, 1, 3) || chain_add(a, ti) < 0)
			return NULL;
		ti = t2;
	} else if (!perm_is(im, ti, 0, 2, 3, 1)) {
		return NULL;
	}
	if (chain_add(a, ti) < 0)
		return NULL;
	kr = onnx_imp_find(im, node(im, ti)->inputs[0]);
	if (kr == NULL || kr->producer < 0 || strcmp(node(im, kr->producer)->op_type, "Reshape") != 0 ||
	    node(im, kr->producer)->ninputs != 2 || kr->nconsumers > 4)
		return NULL;
	r = kr->producer;
	for (int c = 0; c < kr->nconsumers; c++) {
		int k = kr->consumers[c];
		const struct onnx_node *n = node(im, k);
		struct onnx_val *o;
		if (k == ti || strcmp(n->op_type, "Shape") == 0)
			continue;
		if (strcmp(n->op_type, "Transpose") != 0 || n->noutputs != 1 ||
		    (o = onnx_imp_find(im, n->outputs[0])) == NULL || o->nconsumers > 4 || data_reader(im, o) >= 0 ||
		    chain_add(a, k) < 0)
			return NULL;
	}
	if (chain_add(a, r) < 0)
		return NULL;
	*reshape = r;
	return node(im, r)->inputs[0];
}

/* Past a Div or Mul of value `name` by a constant (nn.MultiheadAttention
 * scales q before the product), adding it to the chain. */
static const char *
skip_scale(struct onnx_imp *im, struct onnx_attn *a, const char *name)
{
	int p = amade_by(im, name, "Div");
	const struct onnx_node *n;
	int x;

	if (p < 0)
		p = amade_by(im, name, "Mul");
	if (p < 0)
		return name;
	n = node(im, p);
	x = n->ninputs == 2 && n->op_type[0] == 'M' && is_dyn(im, n->inputs[1]);
	if (n->ninputs != 2 || !is_dyn(im, n->inputs[x]) || is_dyn(im, n->inputs[1 - x]) || chain_add(a, p) < 0)
		return name;
	return n->inputs[x];
}

/* The seq-first head split of q or v: Transpose(Reshape(x), 1 0 2) read
 * once (q: maybe scaled), into `a`; the reshaped x, or NULL */
static const char *
head_split3(struct onnx_imp *im, struct onnx_attn *a, const char *name, int *reshape)
{
	int t = amade_by(im, name, "Transpose"), r;

	if (t < 0 || !perm3_is(im, t, 1, 0, 2) || (r = amade_by(im, node(im, t)->inputs[0], "Reshape")) < 0 ||
	    node(im, r)->ninputs != 2 || chain_add(a, t) < 0 || chain_add(a, r) < 0)
		return NULL;
	*reshape = r;
	return node(im, r)->inputs[0];
}

/* The seq-first K^T: Transpose(Reshape(k), 1 2 0), or 1 0 2 then 0 2 1 */
static const char *
key_split3(struct onnx_imp *im, struct onnx_attn *a, const char *name, int *reshape)
{
	int t = amade_by(im, name, "Transpose"), r;

	if (t >= 0 && perm3_is(im, t, 0, 2, 1)) {
		if (chain_add(a, t) < 0)
			return NULL;
		return head_split3(im, a, node(im, t)->inputs[0], reshape);
	}
	if (t < 0 || !perm3_is(im, t, 1, 2, 0) || (r = amade_by(im, node(im, t)->inputs[0], "Reshape")) < 0 ||
	    node(im, r)->ninputs != 2 || chain_add(a, t) < 0 || chain_add(a, r) < 0)
		return NULL;
	*reshape = r;
	return node(im, r)->inputs[0];
}

/* Past the Casts (to a float type) producing (forward 0) or reading
 * (forward 1) value `name`, adding them to the chain. */
static const char *
skip_casts(struct onnx_imp *im, struct onnx_attn *a, const char *name, int forward)
{
	for (int n = 0; n < 4; n++) {
		int c = forward ? asole(im, name, "Cast") : amade_by(im, name, "Cast");
		if (c < 0 || chain_add(a, c) < 0)
			break;
		name = forward ? node(im, c)->outputs[0] : node(im, c)->inputs[0];
	}
	return name;
}

static int
cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static void
find_attention(struct onnx_imp *im, int sm)
{
	const struct onnx_node *s = node(im, sm);
	const struct onnx_attr *ax = onnx_node_attr(s, "axis");
	struct onnx_attn a;
	const char *cur;
	int p, m1, m2, tr, last, k;

	memset(&a, 0, sizeof a);
	a.dropout = -1;
	/* the last axis of the rank-4 scores: -1, or 3 (opset 13 and later) */
	if (im->attns == NULL || im->m->opset < 13 || (ax != NULL && ax->i != -1 && ax->i != 3) ||
	    chain_add(&a, sm) < 0)
		return;
	/* backwards: mask, scale, QK^T (Casts, identities to the cost model, anywhere) */
	cur = skip_casts(im, &a, s->inputs[0], 0);
	p = amade_by(im, cur, "Add");
	if (p < 0 && (p = amade_by(im, cur, "Where")) >= 0) {
		/* torch.where(mask, s, c) or s.masked_fill(mask, c) = Where(mask, c, s) */
		const struct onnx_node *w = node(im, p);
		if (w->ninputs != 3 || is_dyn(im, w->inputs[0]) || is_dyn(im, w->inputs[1]) == is_dyn(im, w->inputs[2]))
			return;
		a.causal = 1;
		cur = is_dyn(im, w->inputs[1]) ? w->inputs[1] : w->inputs[2];
		chain_add(&a, p);
	} else if (p >= 0) {
		const struct onnx_node *n = node(im, p);
		if (n->ninputs != 2 || (is_dyn(im, n->inputs[0]) && is_dyn(im, n->inputs[1])))
			return;
		cur = is_dyn(im, n->inputs[0]) ? n->inputs[0] : n->inputs[1];
		chain_add(&a, p);
	}
	cur = skip_casts(im, &a, cur, 0);
	if ((p = amade_by(im, cur, "Div")) >= 0 || (p = amade_by(im, cur, "Mul")) >= 0) {
		const struct onnx_node *n = node(im, p);
		/* s / c, s * c or c * s */
		int x = n->ninputs == 2 && n->op_type[0] == 'M' && is_dyn(im, n->inputs[1]);
		if (n->ninputs != 2 || !is_dyn(im, n->inputs[x]) || is_dyn(im, n->inputs[1 - x]))
			return;
		cur = n->inputs[x];
		chain_add(&a, p);
	}
	cur = skip_casts(im, &a, cur, 0);
	if ((m1 = amade_by(im, cur, "MatMul")) < 0 || node(im, m1)->ninputs != 2 || chain_add(&a, m1) < 0)
		return;
	/* forwards: dropout, PV, the merge of the heads */
	if (s->noutputs != 1)
		return;
	cur = skip_casts(im, &a, s->outputs[0], 1);
	if ((p = asole(im, cur, "Dropout")) >= 0) {
		const struct onnx_node *d = node(im, p);
		for (k = 1; k < d->noutputs; k++) {
			struct onnx_val *mask = d->outputs[k][0] != '\0' ? onnx_imp_find(im, d->outputs[k]) : NULL;
			if (mask != NULL && mask->nconsumers != 0)
				return;
		}
		if (strcmp(d->inputs[0], cur) != 0 || chain_add(&a, p) < 0)
			return;
		a.dropout = p;
		cur = skip_casts(im, &a, d->outputs[0], 1);
	}
	if ((m2 = asole(im, cur, "MatMul")) < 0 || node(im, m2)->ninputs != 2 || strcmp(node(im, m2)->inputs[0], cur) != 0 ||
	    chain_add(&a, m2) < 0 || (tr = asole(im, node(im, m2)->outputs[0], "Transpose")) < 0)
		return;
	a.seqfirst = perm3_is(im, tr, 1, 0, 2);
	if ((!a.seqfirst && !perm_is(im, tr, 0, 2, 1, 3)) ||
	    chain_add(&a, tr) < 0 || (last = asole(im, node(im, tr)->outputs[0], "Reshape")) < 0 ||
	    strcmp(node(im, last)->inputs[0], node(im, tr)->outputs[0]) != 0 || node(im, last)->ninputs != 2 ||
	    chain_add(&a, last) < 0)
		return;
	/* the head splits of q, v and k */
	if (a.seqfirst) {
		if ((a.q = head_split3(im, &a, skip_scale(im, &a, node(im, m1)->inputs[0]), &a.reshape[0])) == NULL ||
		    (a.v = head_split3(im, &a, node(im, m2)->inputs[1], &a.reshape[2])) == NULL ||
		    (a.k = key_split3(im, &a, skip_scale(im, &a, node(im, m1)->inputs[1]), &a.reshape[1])) == NULL)
			return;
	} else if ((a.q = head_split(im, &a, node(im, m1)->inputs[0], &a.reshape[0])) == NULL ||
	    (a.v = head_split(im, &a, node(im, m2)->inputs[1], &a.reshape[2])) == NULL ||
	    (a.k = key_split(im, &a, node(im, m1)->inputs[1], &a.reshape[1])) == NULL) {
		return;
	}
	qsort(a.chain, (size_t)a.nchain, sizeof a.chain[0], cmp_int);
	for (k = 0; k < a.nchain; k++)
		if (im->fuse[a.chain[k]] != ONNX_FUSE_NONE || (k > 0 && a.chain[k] == a.chain[k - 1]))
			return;
	a.last = last;
	for (k = 0; k < a.nchain; k++) {
		im->fuse[a.chain[k]] = ONNX_FUSE_SHADOW;
		im->fuse_affine[a.chain[k]] = im->nattns;
	}
	im->fuse[last] = ONNX_FUSE_ATTENTION;
	im->attns[im->nattns++] = a;
}

/* torch's Transpose [1, 0, 2] of a batch-first input into an LSTM or GRU
 * node (layout 0) that alone reads it: skipped, the layer reads the input
 * itself (onnx_op_rnn.c). */
static void
find_rnn_input(struct onnx_imp *im, int i)
{
	const struct onnx_node *n = node(im, i);
	const struct onnx_attr *layout = onnx_node_attr(n, "layout");
	int t = made_by(im, n->inputs[0], "Transpose");

	if (t >= 0 && (layout == NULL || layout->i == 0) && onnx_op_rnn_input_transpose(im, t))
		im->fuse[t] = ONNX_FUSE_SKIP;
}

void
onnx_fuse_find(struct onnx_imp *im)
{
	int nsoftmax = 0;

	for (int i = 0; i < im->m->graph.nnodes; i++)
		nsoftmax += strcmp(node(im, i)->op_type, "Softmax") == 0;
	/* no room for the attention records: the nodes are translated one by one */
	im->attns = nsoftmax > 0 ? onnx_arena_alloc(im->ar, (size_t)nsoftmax, sizeof *im->attns) : NULL;
	im->nattns = 0;
	mark_dyn(im);
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
		else if (strcmp(n->op_type, "HardSigmoid") == 0)
			find_hardswish(im, i);
		else if (strcmp(n->op_type, "Sigmoid") == 0)
			(void)find_gated(im, i, n->inputs[0], ONNX_FUSE_SILU);
		else if (strcmp(n->op_type, "Softplus") == 0)
			find_mish(im, i);
		else if (strcmp(n->op_type, "InstanceNormalization") == 0)
			find_groupnorm(im, i);
		else if (strcmp(n->op_type, "Softmax") == 0)
			find_attention(im, i);
		else if (strcmp(n->op_type, "LSTM") == 0 || strcmp(n->op_type, "GRU") == 0)
			find_rnn_input(im, i);
	}
}
