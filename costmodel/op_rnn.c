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
 * Latency (perf_model.c): cuDNN runs each layer and direction as one GEMM
 * of the input projection over all timesteps, then the timesteps one after
 * another, each a GEMM of the N x H state by the G*H x H recurrent weights
 * and the gates' pointwise kernels; the time grows with the sequence
 * length. The host issues one cuDNN call forward (cudnnRNNForward) and two
 * backward (data and weights): cuDNN launches the steps' kernels itself.
 */
#include "op_rules.h"

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

static const char *const rnn_attrs[] = { "hidden_size", "num_layers", "bidirectional", "bias", NULL };

const struct op_rule op_rule_lstm = { "lstm", rnn_attrs, 1, 1, CM_CLASS_RNN, lstm_build };
const struct op_rule op_rule_gru = { "gru", rnn_attrs, 1, 1, CM_CLASS_RNN, gru_build };
