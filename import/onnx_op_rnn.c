/*
 * onnx_op_rnn.c - LSTM and GRU nodes as the model format's `lstm` and `gru`
 * layers (nn.LSTM / nn.GRU, batch first, costmodel/op_rnn.c).
 *
 * What torch 1.13 writes for nn.LSTM(batch_first=True, num_layers=k,
 * bidirectional=b): a Transpose [1, 0, 2] of the input to [L, N, I]; one
 * LSTM node per layer (W, R, B made from the initializers by Slice, Concat
 * and Unsqueeze: the gates reordered) whose output Y is [L, dirs, N, H];
 * after each, a Squeeze of axis 1 (one direction) or a Transpose [0, 2, 1,
 * 3] and a Reshape to [L, N, dirs * H] (two); the next layer reads that; a
 * Transpose [1, 0, 2] back to batch first. The import follows the chain: the
 * first Transpose (marked by onnx_fuse.c) is skipped, the layers stacked one
 * on the other with the same hidden_size, direction and bias become one
 * layer with num_layers = k (one cuDNN call in PyTorch, whose reserve holds
 * every layer's states), its [N, L, dirs * H] result stands for the chain's
 * seq-first end (rnn_bf) and the Transpose [1, 0, 2] after it is that
 * result itself. Where the chain ends otherwise, the result is viewed as
 * what ONNX has there (permute and reshape, views). layout = 1 (opset 14,
 * batch first) needs no transposes.
 *
 * Parameters come from hidden_size, the input's width and whether B is
 * given, as PyTorch counts them: G*H*(I + H) weights and 2*G*H biases per
 * layer and direction (G = 4 for LSTM, 3 for GRU). GRU's linear_before_reset
 * (1 in torch's export; 0 is the other GRU form) changes neither. Refused,
 * naming the node and the attribute: clip, activations other than the
 * defaults, activation_alpha/beta, input_forget, peepholes (P) and
 * sequence_lens (packed sequences).
 *
 * Final states. torch's h_n (Y_h of a single node, or the Concat on axis 0
 * of every stacked node's Y_h) and c_n (Y_c, likewise) read by any node
 * become an `rnn_state` of the layer, [layers * dirs, N, H]: cuDNN's own hy
 * and cy, written by the layer's call. Its readers take it as any
 * activation: h_n[i] (a Gather on axis 0) is a view of it, which a Linear
 * on h_n[-1] keeps as in PyTorch; a sequence-to-sequence encoder hands
 * (h_n, c_n) to its decoder. One node's Y_h or Y_c of a stack read alone
 * (a graph simplifier's Gather(Concat(...), -1)) is a slice of that whole
 * state, the node's entries on axis 0.
 *
 * Initial states. initial_h and initial_c (inputs 5 and 6) that are
 * constants (torch's zeros: ConstantOfShape) are the layer's default; an
 * activation (a decoder started from its encoder's states) becomes the
 * layer's h0 and c0 inputs: the value itself for one node, and for stacked
 * nodes the tensor every node's state is the Slice of, on axis 0, [l *
 * dirs, (l + 1) * dirs) for layer l, as torch writes them. Other forms, and
 * an LSTM given one state as an activation and the other as a constant,
 * are refused naming the node.
 */
#include "onnx_op.h"

#include <string.h>

/* The node's attribute `name` as a string, or dflt. */
static const char *
node_str(const struct onnx_node *n, const char *name, const char *dflt)
{
	const struct onnx_attr *a = onnx_node_attr(n, name);
	return a != NULL && a->s != NULL ? a->s : dflt;
}

static int64_t
node_int(const struct onnx_node *n, const char *name, int64_t dflt)
{
	const struct onnx_attr *a = onnx_node_attr(n, name);
	return a != NULL ? a->i : dflt;
}

static int
given(const struct onnx_node *n, int k)
{
	return k < n->ninputs && n->inputs[k][0] != '\0';
}

/* The attributes of RNN node `i` that the cost model cannot take, refused
 * with the node named; 0 or -1. */
static int
rnn_check(struct onnx_imp *im, int i, int gru)
{
	const struct onnx_node *n = &im->m->graph.nodes[i];
	static const char *const lstm_acts[] = { "Sigmoid", "Tanh", "Tanh" }, *const gru_acts[] = { "Sigmoid", "Tanh" };
	const char *const *acts = gru ? gru_acts : lstm_acts;
	const struct onnx_attr *a = onnx_node_attr(n, "activations");
	int saved = im->node, rc = 0, g = gru ? 2 : 3;

	im->node = i;
	if (onnx_node_attr(n, "clip") != NULL)
		rc = onnx_imp_fail(im, DN_EINVAL, "attribute clip is not supported (nn.%s does not clip its cell)",
		    gru ? "GRU" : "LSTM");
	else if (onnx_node_attr(n, "activation_alpha") != NULL || onnx_node_attr(n, "activation_beta") != NULL)
		rc = onnx_imp_fail(im, DN_EINVAL, "attributes activation_alpha and activation_beta are not supported");
	else if (!gru && node_int(n, "input_forget", 0) != 0)
		rc = onnx_imp_fail(im, DN_EINVAL, "attribute input_forget=1 (coupled input and forget gates) is not "
		    "supported");
	else if (!gru && given(n, 7))
		rc = onnx_imp_fail(im, DN_EINVAL, "input P (peephole weights) is not supported (nn.LSTM has none)");
	else if (given(n, 4))
		rc = onnx_imp_fail(im, DN_EINVAL, "input sequence_lens (sequences of their own lengths, packed) is not "
		    "supported: every sequence is taken at the full length");
	else if (a != NULL) {
		if (a->nstrings % g != 0 || a->nstrings == 0 || a->nstrings > ONNX_ATTR_STRINGS)
			rc = onnx_imp_fail(im, DN_EINVAL, "attribute activations lists %d functions, not %d per direction",
			    a->nstrings, g);
		for (int k = 0; rc == 0 && k < a->nstrings; k++)
			if (strcmp(a->strings[k], acts[k % g]) != 0)
				rc = onnx_imp_fail(im, DN_EINVAL, "attribute activations: %.40s in place of %s is not supported "
				    "(only nn.%s's)", a->strings[k], acts[k % g], gru ? "GRU" : "LSTM");
	}
	if (rc == 0 && onnx_node_attr(n, "hidden_size") == NULL)
		rc = onnx_imp_fail(im, DN_EINVAL, "attribute hidden_size is missing");
	im->node = saved;
	return rc;
}

/* Node j, when it is a Transpose of perm p (n entries). */
static int
is_transpose(struct onnx_imp *im, int j, const int64_t *p, int n)
{
	const struct onnx_node *t = &im->m->graph.nodes[j];
	const struct onnx_attr *a = onnx_node_attr(t, "perm");

	if (strcmp(t->op_type, "Transpose") != 0 || a == NULL || a->nints != n)
		return 0;
	for (int k = 0; k < n; k++)
		if (a->ints[k] != p[k])
			return 0;
	return 1;
}

int
onnx_op_rnn_input_transpose(struct onnx_imp *im, int j)
{
	static const int64_t swap[3] = { 1, 0, 2 };
	return is_transpose(im, j, swap, 3);
}

/* The one node reading value `name`, or -1. */
static int
only_reader(struct onnx_imp *im, const char *name)
{
	struct onnx_val *v = onnx_imp_find(im, name);
	return v != NULL && v->nconsumers == 1 ? v->consumers[0] : -1;
}

/* The end of torch's chain after RNN node i (Squeeze of axis 1 with one
 * direction; Transpose [0, 2, 1, 3] and Reshape [0, 0, -1] with two), its
 * nodes in chain[] (1 or 2); the node ending it, or -1. */
static int
chain_end(struct onnx_imp *im, int i, int dirs, int *chain)
{
	static const int64_t dirs_last[4] = { 0, 2, 1, 3 };
	const struct onnx_node *n = &im->m->graph.nodes[i], *c;
	double v[4];
	int j = only_reader(im, n->outputs[0]), k;

	if (j < 0)
		return -1;
	c = &im->m->graph.nodes[j];
	if (dirs == 1) {
		const struct onnx_attr *a = onnx_node_attr(c, "axes");
		if (strcmp(c->op_type, "Squeeze") != 0)
			return -1;
		if (a != NULL ? !(a->nints == 1 && a->ints[0] == 1) :
		    !(c->ninputs > 1 && onnx_op_values(im, onnx_imp_find(im, c->inputs[1]), v, 4) == 1 && v[0] == 1))
			return -1;
		chain[0] = j;
		return j;
	}
	if (!is_transpose(im, j, dirs_last, 4) || (k = only_reader(im, c->outputs[0])) < 0)
		return -1;
	c = &im->m->graph.nodes[k];
	if (strcmp(c->op_type, "Reshape") != 0 || c->ninputs < 2 ||
	    onnx_op_values(im, onnx_imp_find(im, c->inputs[1]), v, 4) != 3 || v[0] != 0 || v[1] != 0 || v[2] != -1)
		return -1;
	chain[0] = j;
	chain[1] = k;
	return k;
}

/* Whether every reader of value `name` is a Transpose [1, 0, 2] or reads it
 * as the input X of an LSTM or GRU node in layout 0. */
static int
bf_readers_only(struct onnx_imp *im, const char *name)
{
	struct onnx_val *v = onnx_imp_find(im, name);

	if (v == NULL || v->nconsumers < 1 || v->nconsumers > 4)
		return 0;
	for (int k = 0; k < v->nconsumers; k++) {
		const struct onnx_node *c = &im->m->graph.nodes[v->consumers[k]];
		int rnn = strcmp(c->op_type, "LSTM") == 0 || strcmp(c->op_type, "GRU") == 0;
		if (!(rnn && strcmp(c->inputs[0], name) == 0 && node_int(c, "layout", 0) == 0) &&
		    !onnx_op_rnn_input_transpose(im, v->consumers[k]))
			return 0;
		for (int m = 0; m < c->ninputs; m++)   /* read once, as X */
			if (m > 0 && strcmp(c->inputs[m], name) == 0)
				return 0;
	}
	return 1;
}

/* Whether RNN node j stacks on node i as PyTorch's next layer: the same
 * operator, hidden_size, direction, bias and layout 0, reading i's chain
 * end as X. */
static int
stacks_on(struct onnx_imp *im, int i, int j, const char *end)
{
	const struct onnx_node *a = &im->m->graph.nodes[i], *b = &im->m->graph.nodes[j];

	return strcmp(a->op_type, b->op_type) == 0 && b->ninputs > 0 && strcmp(b->inputs[0], end) == 0 &&
	    node_int(a, "hidden_size", -1) == node_int(b, "hidden_size", -2) &&
	    strcmp(node_str(a, "direction", "forward"), node_str(b, "direction", "forward")) == 0 &&
	    given(a, 3) == given(b, 3) && node_int(b, "layout", 0) == 0 &&
	    node_int(a, "linear_before_reset", 0) == node_int(b, "linear_before_reset", 0);
}

/* Whether value `name` is neither read by a node nor a graph output. */
static int
unused(struct onnx_imp *im, const char *name)
{
	struct onnx_val *v = onnx_imp_find(im, name);

	if (name[0] == '\0' || (v != NULL && v->nconsumers > 0))
		return name[0] == '\0';
	for (int k = 0; k < im->m->graph.noutputs; k++)
		if (strcmp(im->m->graph.outputs[k].name, name) == 0)
			return 0;
	return 1;
}

#define RNN_STACK 64       /* stacked nodes whose final states are followed */

/* Whether node j is torch's h_n (out 1) or c_n (out 2): a Concat on axis
 * 0 of output `out` of every stacked node, in order. */
static int
is_state_concat(struct onnx_imp *im, int j, const int *stack, int layers, int out)
{
	const struct onnx_node *c = &im->m->graph.nodes[j];

	if (strcmp(c->op_type, "Concat") != 0 || node_int(c, "axis", 0) != 0 || c->ninputs != layers || layers > RNN_STACK ||
	    c->noutputs < 1 || c->outputs[0][0] == '\0')
		return 0;
	for (int k = 0; k < layers; k++) {
		const struct onnx_node *n = &im->m->graph.nodes[stack[k]];
		if (n->noutputs <= out || strcmp(c->inputs[k], n->outputs[out]) != 0)
			return 0;
	}
	return 1;
}

/* The whole final state h_n (c: c_n of an LSTM) of the layer whose
 * batch-first result is res, into value o: an rnn_state layer,
 * [layers * dirs, N, H]. 0 or -1. */
static int
emit_whole_state(struct onnx_imp *im, struct onnx_val *res, struct onnx_val *o, int c, int layers, int dirs, int64_t h)
{
	json_t *l;

	if (o == NULL)
		return onnx_imp_fail(im, DN_EINVAL, "internal: a final state without its value");
	l = onnx_op_emit(im, "rnn_state", o, res, NULL);
	if (o->ref == NULL)
		return -1;
	json_object_set_new(l, "hidden_size", json_integer(h));
	if (layers > 1)
		json_object_set_new(l, "num_layers", json_integer(layers));
	if (dirs == 2)
		json_object_set_new(l, "bidirectional", json_true());
	if (c)
		json_object_set_new(l, "state", json_string("c"));
	o->rank = 3;
	o->shape[0] = onnx_dim_int(layers * dirs);
	o->shape[1] = res->shape[0];
	o->shape[2] = onnx_dim_int(h);
	o->permuted = 0;
	o->rnn_bf = 0;
	return 0;
}

/* The final states the graph reads (outputs Y_h and, for LSTM, Y_c of the
 * stacked nodes stack[0 .. layers - 1]): the whole h_n or c_n (Y_h / Y_c of
 * a single node, or the Concat of every stacked node's) as an rnn_state of
 * the layer whose result is res, which its readers (torch's h_n[i]: a
 * Gather, a view) take as any activation. One stacked node's state read
 * by other nodes (what a graph simplifier leaves of h_n[-1] = Gather(Concat
 * (...), -1)) is a `slice` of the whole state, entries [k * dirs, (k + 1) *
 * dirs) on axis 0: a view of cuDNN's hy, as the h_n[...] it stands for.
 * Errors name the RNN node being translated. */
static int
rnn_states(struct onnx_imp *im, const int *stack, int layers, int dirs, int64_t h, struct onnx_val *res, int gru)
{
	static const char *const what[] = { "", "h", "c" };

	if (layers > RNN_STACK) {
		/* the nodes past the stack's record are not followed */
		for (int k = 0; k < RNN_STACK; k++)
			for (int out = 1; out <= (gru ? 1 : 2); out++) {
				const struct onnx_node *n = &im->m->graph.nodes[stack[k]];
				struct onnx_val *y = n->noutputs > out ? onnx_imp_find(im, n->outputs[out]) : NULL;
				if (y != NULL && n->outputs[out][0] != '\0' && y->nconsumers > 0)
					return onnx_imp_fail(im, DN_EINVAL, "the final states of more than %d stacked layers: not "
					    "supported", RNN_STACK);
			}
		return 0;
	}
	for (int out = 1; out <= (gru ? 1 : 2); out++) {
		struct onnx_val *ys[RNN_STACK], *whole = NULL;

		/* each stacked node's state, when read; the Concat of them all */
		for (int k = 0; k < layers; k++) {
			const struct onnx_node *n = &im->m->graph.nodes[stack[k]];
			ys[k] = n->noutputs > out && n->outputs[out][0] != '\0' ? onnx_imp_find(im, n->outputs[out]) : NULL;
			if (ys[k] == NULL || ys[k]->nconsumers == 0) {
				ys[k] = NULL;
				continue;
			}
			if (layers == 1) {
				if (emit_whole_state(im, res, ys[k], out == 2, 1, dirs, h) < 0)
					return -1;
				ys[k] = NULL;
				continue;
			}
			if (ys[k]->nconsumers > 4)
				return onnx_imp_fail(im, DN_EINVAL, "output %d of node '%s' is read by %d nodes: not supported",
				    out, n->name, ys[k]->nconsumers);
			for (int r = 0; r < ys[k]->nconsumers && whole == NULL; r++) {
				int j = ys[k]->consumers[r];
				if (!is_state_concat(im, j, stack, layers, out))
					continue;
				whole = onnx_imp_find(im, im->m->graph.nodes[j].outputs[0]);
				if (emit_whole_state(im, res, whole, out == 2, layers, dirs, h) < 0)
					return -1;
				im->fuse[j] = ONNX_FUSE_SKIP;
			}
		}
		/* a node's state read by anything but that Concat: its slice */
		for (int k = 0; k < layers; k++) {
			int alone = 0;
			if (ys[k] == NULL)
				continue;
			for (int r = 0; r < ys[k]->nconsumers; r++)
				alone |= !is_state_concat(im, ys[k]->consumers[r], stack, layers, out);
			if (!alone)
				continue;
			if (whole == NULL) {
				whole = onnx_imp_val(im, onnx_arena_printf(im->ar, "%s.%s_n", res->name, what[out]));
				if (whole == NULL || whole->name == NULL)
					return onnx_imp_fail(im, DN_ENOMEM, "out of memory");
				if (emit_whole_state(im, res, whole, out == 2, layers, dirs, h) < 0)
					return -1;
			}
			if (onnx_op_slice_axis(im, whole, ys[k], 0, onnx_dim_int((int64_t)k * dirs),
			    onnx_dim_int((int64_t)(k + 1) * dirs), ys[k]->name) < 0)
				return -1;
			ys[k]->permuted = 0;
			ys[k]->rnn_bf = 0;
		}
	}
	return 0;
}

/* Node p, when it is a Slice on axis 0 from `start` to `end` (step 1,
 * opset 10 and later: starts, ends, axes, steps as inputs): its data
 * input; else NULL. */
static struct onnx_val *
slice_of(struct onnx_imp *im, int p, int64_t start, int64_t end)
{
	const struct onnx_node *c = &im->m->graph.nodes[p];
	double v[2];

	if (strcmp(c->op_type, "Slice") != 0 || c->ninputs < 3)
		return NULL;
	if (onnx_op_values(im, onnx_imp_find(im, c->inputs[1]), v, 2) != 1 || v[0] != (double)start ||
	    onnx_op_values(im, onnx_imp_find(im, c->inputs[2]), v, 2) != 1 || v[0] != (double)end)
		return NULL;
	if (given(c, 3) && (onnx_op_values(im, onnx_imp_find(im, c->inputs[3]), v, 2) != 1 || v[0] != 0))
		return NULL;
	if (given(c, 4) && (onnx_op_values(im, onnx_imp_find(im, c->inputs[4]), v, 2) != 1 || v[0] != 1))
		return NULL;
	return onnx_imp_find(im, c->inputs[0]);
}

/* The initial state (input k: 5 initial_h, 6 initial_c) of the stacked
 * nodes stack[0 .. layers - 1] as the layer's input: *st is NULL where
 * every node starts from a constant (torch's zeros) or none, else the
 * activation: one node's input itself, or the tensor every node's input
 * slices, layer l at [l * dirs, (l + 1) * dirs) on axis 0. 0 or -1. */
static int
initial_state(struct onnx_imp *im, const int *stack, int layers, int dirs, int k, struct onnx_val **st)
{
	const char *what = k == 5 ? "initial_h" : "initial_c";
	int consts = 0;

	*st = NULL;
	for (int l = 0; l < layers; l++) {
		const struct onnx_node *n = &im->m->graph.nodes[l < RNN_STACK ? stack[l] : stack[0]];
		struct onnx_val *v = given(n, k) ? onnx_imp_find(im, n->inputs[k]) : NULL, *base = NULL;
		int later = v != NULL && v->kind == ONNX_V_NONE && v->producer > im->node;

		/* a later layer's slice comes after the first node: its data
		 * input decides (an activation, or torch's zeros) */
		if (layers > 1 && v != NULL && (v->kind == ONNX_V_DATA || later)) {
			base = v->producer >= 0 ? slice_of(im, v->producer, (int64_t)l * dirs, (int64_t)(l + 1) * dirs) : NULL;
			if (later && (base == NULL || base->kind != ONNX_V_DATA))
				v = base = NULL;        /* a constant's slice */
		}
		if (v == NULL || (v->kind != ONNX_V_DATA && !later)) {
			consts++;
			continue;
		}
		if (l >= RNN_STACK)
			return onnx_imp_fail(im, DN_EINVAL, "input %s of more than %d stacked layers: not supported", what,
			    RNN_STACK);
		if (layers == 1)
			base = v;
		if (base == NULL || base->kind != ONNX_V_DATA || base->rank != 3 || (*st != NULL && *st != base))
			return onnx_imp_fail(im, DN_EINVAL, "input %s of node '%s' (layer %d of %d) is not a Slice of one "
			    "state tensor on axis 0 from %d to %d, as torch exports nn.%s(x, h0): not supported", what,
			    n->name, l + 1, layers, l * dirs, (l + 1) * dirs, strcmp(n->op_type, "GRU") == 0 ? "GRU" : "LSTM");
		*st = base;
		if (later && v->nconsumers == 1)
			im->fuse[v->producer] = ONNX_FUSE_SKIP;        /* read by the stacked node only */
	}
	if (*st != NULL && consts > 0)
		return onnx_imp_fail(im, DN_EINVAL, "input %s is an activation for some stacked layers and a constant "
		    "for others: not supported", what);
	return 0;
}

int
onnx_op_rnn(struct onnx_imp *im, int gru, struct onnx_val *x, struct onnx_val *o)
{
	const struct onnx_node *n = NODE(im);
	const char *dir = node_str(n, "direction", "forward");
	int64_t h = node_int(n, "hidden_size", 0), layout = node_int(n, "layout", 0);
	int dirs, layers = 1, last = im->node, end = -1, chain[2], stack[RNN_STACK];
	struct onnx_val *bf = x, *res, *st[2] = { NULL, NULL };
	json_t *l;

	if (strcmp(dir, "bidirectional") == 0)
		dirs = 2;
	else if (strcmp(dir, "forward") == 0 || strcmp(dir, "reverse") == 0)
		dirs = 1;
	else
		return onnx_imp_fail(im, DN_EINVAL, "attribute direction '%.40s' is not forward, reverse or bidirectional",
		    dir);
	if (rnn_check(im, im->node, gru) < 0)
		return -1;
	if (h < 1)
		return onnx_imp_fail(im, DN_EINVAL, "attribute hidden_size %lld is not positive", (long long)h);
	if (layout != 0 && layout != 1)
		return onnx_imp_fail(im, DN_EINVAL, "attribute layout %lld is not 0 or 1", (long long)layout);
	/* the batch-first input: torch's Transpose skipped (onnx_fuse.c), a
	 * previous layer's result, X itself (layout 1), or a view of X */
	if (layout == 0 && x->kind == ONNX_V_NONE && x->producer >= 0 && im->fuse[x->producer] == ONNX_FUSE_SKIP &&
	    onnx_op_rnn_input_transpose(im, x->producer))
		bf = onnx_imp_find(im, im->m->graph.nodes[x->producer].inputs[0]);
	if (bf != NULL && bf->kind == ONNX_V_NONE)
		return onnx_imp_fail(im, DN_EINVAL, "input '%s' is not produced by any earlier node", bf->name);
	if (bf == NULL || bf->kind != ONNX_V_DATA || bf->rank != 3)
		return onnx_imp_fail(im, DN_EINVAL, "input X is not a rank-3 activation");
	if (layout == 0 && bf == x && !x->rnn_bf) {
		struct onnx_val *t = onnx_imp_val(im, onnx_arena_printf(im->ar, "%s.batch_first", x->name));
		if (t == NULL || t->name == NULL)
			return onnx_imp_fail(im, DN_ENOMEM, "out of memory");
		json_object_set_new(onnx_op_emit(im, "permute", t, x, NULL), "dims", json_pack("[i, i, i]", 1, 0, 2));
		onnx_op_copy_shape(t, x);
		t->shape[0] = x->shape[1];
		t->shape[1] = x->shape[0];
		t->permuted = 1;
		bf = t;
	}
	/* stacked layers: torch's chain to the next node of the same kind */
	stack[0] = im->node;
	if (layout == 0)
		for (;;) {
			int c[2], e = chain_end(im, last, dirs, c), next;
			if (e < 0)
				break;
			next = only_reader(im, im->m->graph.nodes[e].outputs[0]);
			if (next < 0 || !stacks_on(im, last, next, im->m->graph.nodes[e].outputs[0]) ||
			    rnn_check(im, next, gru) < 0) {
				if (next >= 0 && stacks_on(im, last, next, im->m->graph.nodes[e].outputs[0]))
					return -1;      /* the next layer's own refusal */
				break;
			}
			for (int k = 0; k < dirs; k++)
				im->fuse[c[k]] = ONNX_FUSE_SKIP;
			im->fuse[next] = ONNX_FUSE_SKIP;
			last = next;
			if (layers < RNN_STACK)
				stack[layers] = next;
			layers++;
		}
	if (layout == 0)
		end = chain_end(im, last, dirs, chain);
	/* initial states: activations become the layer's h0 (and c0) */
	for (int k = 0; k < (gru ? 1 : 2); k++)
		if (initial_state(im, stack, layers, dirs, 5 + k, &st[k]) < 0)
			return -1;
	if (!gru && (st[0] == NULL) != (st[1] == NULL))
		return onnx_imp_fail(im, DN_EINVAL, "input %s is an activation and %s a constant (zeros): an LSTM's "
		    "initial state is both or neither (not supported)", st[0] ? "initial_h" : "initial_c",
		    st[0] ? "initial_c" : "initial_h");
	/* the layer, on [N, L, I] -> [N, L, dirs * H] */
	res = onnx_imp_val(im, onnx_arena_printf(im->ar, "%s.batch_first", im->m->graph.nodes[last].outputs[0]));
	if (res == NULL || res->name == NULL)
		return onnx_imp_fail(im, DN_ENOMEM, "out of memory");
	l = onnx_op_emit(im, gru ? "gru" : "lstm", res, bf, NULL);
	if (st[0] != NULL) {
		json_object_del(l, "input");
		json_object_set_new(l, "inputs", gru ? json_pack("[ss]", bf->ref, st[0]->ref) :
		    json_pack("[sss]", bf->ref, st[0]->ref, st[1]->ref));
	}
	json_object_set_new(l, "hidden_size", json_integer(h));
	if (layers > 1)
		json_object_set_new(l, "num_layers", json_integer(layers));
	if (dirs == 2)
		json_object_set_new(l, "bidirectional", json_true());
	if (!given(n, 3))
		json_object_set_new(l, "bias", json_false());
	onnx_op_copy_shape(res, bf);
	res->shape[2] = onnx_dim_int(h * dirs);
	/* the final hidden states read (h_n[-1], ...) */
	if (rnn_states(im, stack, layers, dirs, h, res, gru) < 0)
		return -1;
	/* what ONNX has after it: nothing (only the final states are read) */
	if (unused(im, im->m->graph.nodes[last].outputs[0]))
		return 0;
	if (end >= 0 && bf_readers_only(im, im->m->graph.nodes[end].outputs[0])) {
		struct onnx_val *e = onnx_imp_find(im, im->m->graph.nodes[end].outputs[0]);
		for (int k = 0; k < dirs; k++)
			im->fuse[chain[k]] = ONNX_FUSE_SKIP;
		onnx_op_alias(e, res);
		e->rnn_bf = 1;
		return 0;
	}
	if (end >= 0) {
		/* the chain's end [L, N, dirs * H] read by other nodes
		 * (nn.LSTM(batch_first=False), stacked or not): the result
		 * viewed sequence first, as cuDNN writes it (no copy) */
		struct onnx_val *e = onnx_imp_find(im, im->m->graph.nodes[end].outputs[0]);
		if (e == NULL)
			return onnx_imp_fail(im, DN_EINVAL, "internal: the end of the stacked layers' chain is unknown");
		for (int k = 0; k < dirs; k++)
			im->fuse[chain[k]] = ONNX_FUSE_SKIP;
		json_object_set_new(onnx_op_emit(im, "permute", e, res, NULL), "dims", json_pack("[i, i, i]", 1, 0, 2));
		onnx_op_copy_shape(e, res);
		e->shape[0] = res->shape[1];
		e->shape[1] = res->shape[0];
		e->permuted = 1;
		return 0;
	}
	if (last != im->node)
		return onnx_imp_fail(im, DN_EINVAL, "internal: stacked layers without their chain");
	{
		/* Y: [L, dirs, N, H] (layout 0) or [N, L, dirs, H] as views */
		struct onnx_val *y4 = onnx_imp_val(im, onnx_arena_printf(im->ar, "%s.split", res->name));
		struct onnx_dim s[4] = { res->shape[0], res->shape[1], onnx_dim_int(dirs), onnx_dim_int(h) };
		if (y4 == NULL || y4->name == NULL)
			return onnx_imp_fail(im, DN_ENOMEM, "out of memory");
		if (layout == 1)
			return onnx_op_reshape_to(im, res, o, s, 4, 0);
		if (onnx_op_reshape_to(im, res, y4, s, 4, 0) < 0)
			return -1;
		json_object_set_new(onnx_op_emit(im, "permute", o, y4, NULL), "dims", json_pack("[i, i, i, i]", 1, 2, 0, 3));
		o->rank = 4;
		o->shape[0] = s[1];
		o->shape[1] = s[2];
		o->shape[2] = s[0];
		o->shape[3] = s[3];
		o->permuted = 1;
	}
	return 0;
}
