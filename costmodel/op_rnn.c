/*
 * op_rnn.c - LSTM and GRU layers (batch first, [N, L, I] -> [N, L, H*dirs]),
 * multi-layer and bidirectional, as torch.nn.LSTM / GRU with cuDNN.
 *
 * Parameters per layer and direction: G*H*(I_l + H) weights plus 2*G*H
 * biases (G = 4 gates for LSTM, 3 for GRU; I_l = I for the first layer,
 * H*dirs after). MACs: N*L*G*H*(I_l + H) per layer and direction. For
 * backward cuDNN keeps a reserve of the gate activations and the hidden and
 * cell states of every step: (G + 2) * H values per step, layer and
 * direction, plus the input and each layer's output sequence.
 *
 * Initial states (optional inputs, as PyTorch's lstm(x, (h0, c0)) and
 * gru(x, h0)): h0 (and c0 for LSTM) of [num_layers * dirs, N, H]; cuDNN
 * keeps them for backward (hx, cx) and they get gradients where they need
 * them. Without them the states start at zero.
 *
 * rnn_state: the final hidden state h_n (or an LSTM's cell state c_n) of
 * every layer and direction, [num_layers * dirs, N, H], read from the
 * output sequence of an lstm or gru (its input), as a sequence-to-sequence
 * encoder hands them to its decoder. cuDNN writes them in the same call
 * (hy, cy): no kernel and nothing kept here; in backward their gradient
 * enters the layer's backward, which takes a zero gradient of the output
 * sequence where the sequence itself is not read (autograd materializes
 * it: the input's gradient here).
 *
 * Latency (perf_model.c): cuDNN runs each layer and direction as one GEMM
 * of the input projection over all timesteps, then the timesteps one after
 * another, each a GEMM of the N x H state by the G*H x H recurrent weights
 * and the gates' pointwise kernels; the time grows with the sequence
 * length. The host issues one cuDNN call forward (cudnnRNNForward) and two
 * backward (data and weights): cuDNN launches the steps' kernels itself.
 */
#include "op_rules.h"

#include <string.h>

static int
rnn_build(struct op_build *ob, int gates)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x;
	expr_id h, layers, in, dirs_e, dims[3], params = expr_int(g, 0), macs = expr_int(g, 0);
	expr_id steps, reserve, proj = expr_int(g, 0);
	int bidir, bias;

	if (ob_need_rank(ob, 0, 3, 3) != 0)
		return -1;
	x = ob_in(ob, 0);
	if (x->dtype == CM_DT_I64)
		return ob_fail(ob, NULL, "needs a float input (embed token ids first)");
	h = ob_int(ob, "hidden_size", OB_REQUIRED);
	layers = ob_int(ob, "num_layers", 1);
	bidir = ob_bool(ob, "bidirectional", 0);
	bias = ob_bool(ob, "bias", 1);
	if (h < 0 || layers < 0 || bidir < 0 || bias < 0)
		return -1;
	{
		const char *n1[] = { "hidden_size" }, *n2[] = { "num_layers" };
		ob_require(ob, expr_ge(g, h, expr_int(g, 1)), "hidden_size >= 1", 1, n1, &h);
		ob_require(ob, expr_ge(g, layers, expr_int(g, 1)), "num_layers >= 1", 1, n2, &layers);
	}
	dirs_e = expr_int(g, bidir ? 2 : 1);
	in = x->dim[2];
	if (ob->nin == 2 && gates == 4)
		return ob_fail(ob, NULL, "an LSTM's initial state is two inputs, h0 and c0 (give both or neither)");
	for (int i = 1; i < ob->nin; i++) {
		/* h0 (and c0): [num_layers * directions, N, H] */
		static const char *const want[3] = { "num_layers * directions", "batch", "hidden_size" };
		static const char *const rule[2][3] = {
			{ "h0 is [num_layers * directions, N, H]: its first dimension", "h0's batch is the input's",
			  "h0's last dimension is hidden_size" },
			{ "c0 is [num_layers * directions, N, H]: its first dimension", "c0's batch is the input's",
			  "c0's last dimension is hidden_size" } };
		const struct cm_tensor *s;
		if (ob_need_rank(ob, i, 3, 3) != 0)
			return -1;
		s = ob_in(ob, i);
		if (s->dtype == CM_DT_I64)
			return ob_fail(ob, NULL, "initial state %d must be a float tensor", i);
		for (int d = 0; d < 3; d++) {
			char have[32];
			const char *n[2];
			expr_id v[2];
			snprintf(have, sizeof have, "%s dim %d", i == 1 ? "h0" : "c0", d);
			n[0] = have;
			n[1] = want[d];
			v[0] = s->dim[d];
			v[1] = d == 0 ? expr_mul(g, layers, dirs_e) : d == 1 ? x->dim[0] : h;
			ob_require(ob, expr_eq(g, v[0], v[1]), rule[i - 1][d], 2, n, v);
		}
	}
	/* first layer on I inputs, the (layers - 1) others on H * dirs */
	{
		expr_id gh = expr_mul(g, expr_int(g, gates), h);
		expr_id first = expr_mul(g, gh, expr_add(g, in, h));
		expr_id rest = expr_mul(g, gh, expr_add(g, expr_mul(g, h, dirs_e), h));
		expr_id w = expr_add(g, first, expr_mul(g, expr_sub(g, layers, expr_int(g, 1)), rest));
		params = expr_mul(g, dirs_e, w);
		/* input projections: G*H x I_l weights per layer and direction */
		proj = expr_mul(g, dirs_e, expr_mul(g, gh, expr_add(g, in,
		    expr_mul(g, expr_sub(g, layers, expr_int(g, 1)), expr_mul(g, h, dirs_e)))));
		ob_param(ob, params);
		if (bias)
			ob_param(ob, expr_mul(g, expr_mul(g, dirs_e, layers), expr_mul(g, expr_int(g, 2), gh)));
		steps = expr_mul(g, x->dim[0], x->dim[1]);
		macs = expr_mul(g, steps, params);
		ob->op.rnn_proj_macs = expr_mul(g, steps, proj);
		ob->op.rnn_steps = expr_mul(g, x->dim[1], expr_mul(g, layers, dirs_e));
		ob->op.rnn_step_macs = expr_mul(g, x->dim[0], expr_mul(g, gh, h));
		ob->op.rnn_step_wbytes = ob_bytes(ob, expr_mul(g, gh, h), CM_DT_ACT);
	}
	dims[0] = x->dim[0];
	dims[1] = x->dim[1];
	dims[2] = expr_mul(g, h, dirs_e);
	if (ob_out_new(ob, 3, dims, CM_DT_ACT) < 0)
		return -1;
	ob->op.macs = macs;
	ob->op.bwd_macs = expr_mul(g, macs, expr_int(g, 2));
	ob_save_gemm_input(ob, 0);
	for (int i = 1; i < ob->nin; i++)
		ob_save_input(ob, i);       /* hx, cx */
	ob_save_output(ob);
	reserve = expr_mul(g, expr_mul(g, steps, expr_mul(g, dirs_e, layers)),
	    expr_mul(g, h, expr_int(g, gates + 2)));
	ob_save_new(ob, ob_bytes(ob, reserve, CM_DT_ACT));
	op_io_bytes(ob, 1);
	ob->op.parallel = expr_mul(g, x->dim[0], expr_cdiv(g, expr_mul(g, h, expr_int(g, gates)), expr_int(g, 64)));
	/* one cuDNN call each way issued by the host (backward: data and
	 * weights); the steps' own launches are in the recurrence's GPU time */
	ob->op.kernels_fwd = 1;
	ob->op.kernels_bwd = 2;
	ob->op.lib_calls = 1;
	return 0;
}

static int lstm_build(struct op_build *ob) { return rnn_build(ob, 4); }
static int gru_build(struct op_build *ob) { return rnn_build(ob, 3); }

static int
rnn_state_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const char *state = json_string_value(json_object_get(ob->item, "state"));
	const struct cm_tensor *x;
	expr_id h, layers, dirs_e, dims[3];
	int bidir;

	if (ob_need_rank(ob, 0, 3, 3) != 0)
		return -1;
	x = ob_in(ob, 0);
	if (x->dtype == CM_DT_I64)
		return ob_fail(ob, NULL, "needs the float output sequence of an lstm or gru");
	if (state == NULL && ob_has(ob, "state"))
		return ob_fail(ob, "state", "must be a string");
	if (state != NULL && strcmp(state, "h") != 0 && strcmp(state, "c") != 0)
		return ob_fail(ob, "state", "must be \"h\" (h_n, the default) or \"c\" (an LSTM's c_n)");
	h = ob_int(ob, "hidden_size", OB_REQUIRED);
	layers = ob_int(ob, "num_layers", 1);
	bidir = ob_bool(ob, "bidirectional", 0);
	if (h < 0 || layers < 0 || bidir < 0)
		return -1;
	dirs_e = expr_int(g, bidir ? 2 : 1);
	{
		const char *n1[] = { "num_layers" }, *n2[] = { "input features", "hidden_size * directions" };
		expr_id v2[] = { x->dim[2], expr_mul(g, h, dirs_e) };
		ob_require(ob, expr_ge(g, layers, expr_int(g, 1)), "num_layers >= 1", 1, n1, &layers);
		ob_require(ob, expr_eq(g, v2[0], v2[1]), "the input is an output sequence of hidden_size * directions "
		    "features", 2, n2, v2);
	}
	dims[0] = expr_mul(g, layers, dirs_e);
	dims[1] = x->dim[0];
	dims[2] = h;
	if (ob_out_new(ob, 3, dims, CM_DT_ACT) < 0)
		return -1;
	ob->op.kernels_fwd = ob->op.kernels_bwd = 0;    /* written by the layer's own call */
	return 0;
}

static const char *const rnn_attrs[] = { "hidden_size", "num_layers", "bidirectional", "bias", NULL };
static const char *const state_attrs[] = { "hidden_size", "num_layers", "bidirectional", "state", NULL };

const struct op_rule op_rule_lstm = { "lstm", rnn_attrs, 1, 3, CM_CLASS_RNN, lstm_build };
const struct op_rule op_rule_gru = { "gru", rnn_attrs, 1, 2, CM_CLASS_RNN, gru_build };
const struct op_rule op_rule_rnn_state = { "rnn_state", state_attrs, 1, 1, CM_CLASS_VIEW, rnn_state_build };
