/*
 * mem_plan.c - the training and inference memory timelines (see mem_plan.h).
 *
 * Training step, PyTorch semantics (zero_grad(set_to_none=True), the default
 * since 2.0; foreach optimizers, the default on CUDA; wl->keep_grads and
 * wl->optimizer_impl for_loop select PyTorch 1.x's defaults: gradients zeroed in
 * place, so all of them are alive in every phase as with accumulation, and
 * optimizer temporaries of one weight at a time):
 *   persistent  weights + buffers + optimizer state + the input batch
 *               (+ the autocast cache of fp16 weight copies under mixed
 *               precision)
 *   forward k   activations kept for backward produced so far
 *               + outputs still in flight (not kept, not yet dead)
 *               + op k's workspace
 *   backward k  (ops in reverse) kept activations not yet released (a
 *               storage is freed after the backward of the earliest op that
 *               keeps it) + gradients of tensors in flight (the gradient of
 *               t lives from its last consumer's backward to its producer's)
 *               + weight gradients allocated so far + op k's workspace
 *   optimizer   all weight gradients + the optimizer's temporaries
 * Inference: weights + buffers + inputs + outputs in flight + workspace.
 *
 * Frozen weights (op->frozen, fine-tuning): weights only, no gradient, no
 * optimizer state or temporaries, no autocast cache entry (op_build.c
 * accounts for their per-call casts). Quantized base weights (op->quant:
 * QLoRA's 4-bit, LLM.int8()): the codes and their scales as bitsandbytes
 * allocates them (quant_weight), never a gradient, trained or not.
 *
 * Gradient accumulation (wl->grad_accum > 1 micro-batches per step): the
 * weight gradients made by the first micro-batch stay allocated, so every
 * later micro-batch runs its forward with all of them alive, and its
 * backward adds each new weight gradient into them (AccumulateGrad: the
 * new gradient is a temporary while it is added). The activations are
 * those of one micro-batch (the model's batch).
 *
 * Gradient checkpointing (wl->checkpointing, ckpt_plan.h): activations
 * kept inside a checkpointed block are not kept by the forward (they live
 * as unkept outputs); in the backward, the block's forward runs again when
 * the backward reaches it, and its kept activations are alive from then
 * until the backward of their earliest keeper. The recompute's own peak is
 * that of the block's first backward step.
 *
 * Every allocation is rounded as the allocator rounds it (mem_profile).
 * Sums along the timeline are running sums, so the plan has O(ops +
 * storages) nodes and the peak is one balanced max.
 */
#include "mem_plan.h"
#include "ckpt_plan.h"
#include "dn_deadline.h"
#include "dn_grow.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct plan_ctx {
	struct cm_graph *m;
	struct expr_graph *g;
	const struct mem_profile *prof;
};

/* Bytes a tensor holds on the device: requests are rounded to 512 bytes;
 * those above the small-pool limit live in segments rounded to 2 MiB, and a
 * freshly allocated tensor of that size holds its whole segment. */
static expr_id
alloc_size(struct plan_ctx *c, expr_id bytes)
{
	struct expr_graph *g = c->g;
	expr_id small = expr_round_up(g, bytes, c->prof->round_bytes);

	if (expr_is_const(g, bytes))
		return g->nodes[bytes].k.i <= c->prof->small_limit ? small :
		    expr_round_up(g, bytes, c->prof->large_round);
	return expr_ite(g, expr_le(g, bytes, expr_int(g, c->prof->small_limit)), small,
	    expr_round_up(g, bytes, c->prof->large_round));
}

static expr_id
guarded(struct plan_ctx *c, expr_id guard, expr_id v)
{
	return expr_mul(c->g, guard, v);
}

static expr_id
storage_size(struct plan_ctx *c, int s)
{
	const struct cm_storage *st = &c->m->storages[s];

	return guarded(c, st->guard, alloc_size(c, st->bytes));
}

static int
fail_oom(struct dn_error *err)
{
	return dn_error_set(err, DN_ENOMEM, NULL, "out of memory planning memory");
}

/* Appends `v` to a per-step list of terms. */
struct termlist {
	expr_id *v;
	int n, cap;
};

static int
tl_push(struct termlist *t, expr_id v)
{
	if (dn_grow_int(&t->v, &t->cap, t->n + 1, sizeof *t->v) != 0)
		return -1;
	t->v[t->n++] = v;
	return 0;
}

static void
tl_free_all(struct termlist *t, int n)
{
	if (t == NULL)
		return;
	for (int i = 0; i < n; i++)
		free(t[i].v);
	free(t);
}

/* The block of bitsandbytes' 8-bit optimizer states (one fp32 absmax per
 * block of a state: bitsandbytes/optim/optimizer.py, Optimizer2State and
 * Optimizer1State init_state, blocksize = 256 since 0.44.0, PR #1365
 * "Change 8bit optimizer blocksize 2048->256"; 2048 before) and the size
 * under which they keep 32-bit state instead (min_8bit_size=4096) */
#define BNB_OPT_BLOCK 256
#define BNB_MIN_8BIT 4096

/* Pushes the optimizer state of one weight (`e` elements, state dtype of
 * `sbytes`; `rows`/`cols` its Adafactor factors when `factored`), one
 * allocation per state tensor, as each library allocates it:
 *   torch.optim      sgd momentum_buffer, adagrad sum, rmsprop square_avg:
 *                    1 copy; adam/adamw exp_avg + exp_avg_sq: 2 copies
 *   lion-pytorch     exp_avg: 1 copy
 *   bitsandbytes     Adam8bit (Optimizer2State): state1/state2 uint8 and
 *                    absmax1/absmax2 fp32, one per block of 256 elements
 *                    (BNB_OPT_BLOCK); tensors under min_8bit_size = 4096
 *                    elements keep two fp32 states instead; its other 8-bit
 *                    optimizers (Lion8bit, RMSprop8bit: Optimizer1State)
 *                    one such state, its 32-bit ones fp32 states whatever
 *                    the weights' dtype (wl->optimizer_states)
 *   transformers     Adafactor (scale_parameter, beta1=None, the defaults):
 *                    exp_avg_sq_row + exp_avg_sq_col fp32 for weights of 2+
 *                    dims, exp_avg_sq fp32 for 1-D ones (plus a scalar RMS,
 *                    not counted)
 * and, where the space searches the arguments (wl->momentum_hp, ...), one
 * more copy each: torch.optim.SGD's and RMSprop's momentum_buffer where
 * momentum != 0, Adam's and AdamW's max_exp_avg_sq where amsgrad, RMSprop's
 * grad_avg where centered (opt_arg_cond). */

/* The condition under which torch.optim keeps one more state copy of
 * optimizer o for argument k (0 momentum, 1 amsgrad, 2 centered) as the
 * space searches it, or 0 (integer) where it never does. */
static expr_id
opt_arg_cond(struct plan_ctx *c, const struct cm_workload *wl, int o, int k)
{
	struct expr_graph *g = c->g;
	const int sgd_rms = o == CM_OPT_SGD || o == CM_OPT_RMSPROP, adam = o == CM_OPT_ADAM || o == CM_OPT_ADAMW;

	if (k == 0 && sgd_rms && wl->momentum_all)
		return expr_int(g, 1);
	if (k == 0 && sgd_rms && wl->momentum_hp > 0)
		return expr_ne(g, expr_var(g, wl->momentum_hp - 1), expr_real(g, 0.0));
	if (k == 1 && adam && wl->amsgrad_hp > 0 && wl->amsgrad_on >= 0)
		return expr_eq(g, expr_var(g, wl->amsgrad_hp - 1), expr_int(g, wl->amsgrad_on));
	if (k == 2 && o == CM_OPT_RMSPROP && wl->centered_hp > 0 && wl->centered_on >= 0)
		return expr_eq(g, expr_var(g, wl->centered_hp - 1), expr_int(g, wl->centered_on));
	return expr_int(g, 0);
}

static int
push_opt_state(struct plan_ctx *c, struct termlist *st, const struct cm_opt_choice *o,
    expr_id guard, expr_id e, int sbytes, int factored, expr_id rows, expr_id cols, const struct cm_workload *wl)
{
	struct expr_graph *g = c->g;
	int fail = 0, n = 0, states = o->optimizer == CM_OPT_ADAM_8BIT ? CM_OPT_STATES_8BIT : o->states;
	expr_id one, raw;

	if (states == CM_OPT_STATES_8BIT) {
		expr_id q = alloc_size(c, e);   /* uint8 */
		expr_id absmax = alloc_size(c, expr_mul(g, expr_cdiv(g, e, expr_int(g, BNB_OPT_BLOCK)),
		    expr_int(g, 4)));
		expr_id s32 = alloc_size(c, expr_mul(g, e, expr_int(g, 4)));
		one = expr_ite(g, expr_ge(g, e, expr_int(g, BNB_MIN_8BIT)), expr_add(g, q, absmax), s32);
	} else
		one = alloc_size(c, expr_mul(g, e, expr_int(g, states == CM_OPT_STATES_FP32 ? 4 : sbytes)));
	raw = one;
	one = guarded(c, guard, one);
	for (int k = 0; k < 3 && states == CM_OPT_STATES_NATIVE; k++) {
		/* torch.optim's extra copies where the space's arguments ask
		 * for them (bitsandbytes' and fused 32-bit states: not these) */
		expr_id cond = opt_arg_cond(c, wl, o->optimizer, k);
		if (!expr_is_int_const(g, cond, 0))
			fail |= tl_push(st, guarded(c, expr_mul(g, guard, cond), raw));
	}
	switch ((enum cm_optimizer)o->optimizer) {
	case CM_OPT_SGD:
		return fail;
	case CM_OPT_SGD_MOMENTUM: case CM_OPT_ADAGRAD: case CM_OPT_RMSPROP: case CM_OPT_LION:
		n = 1;
		break;
	case CM_OPT_ADAM: case CM_OPT_ADAMW: case CM_OPT_ADAM_8BIT:
		n = 2;
		break;
	case CM_OPT_ADAFACTOR:
		/* fp32 whatever the weights' dtype: the update casts grad to fp32 first */
		if (factored) {
			fail |= tl_push(st, guarded(c, guard, alloc_size(c, expr_mul(g, rows, expr_int(g, 4)))));
			fail |= tl_push(st, guarded(c, guard, alloc_size(c, expr_mul(g, cols, expr_int(g, 4)))));
		} else
			fail |= tl_push(st, guarded(c, guard, alloc_size(c, expr_mul(g, e, expr_int(g, 4)))));
		return fail;
	}
	for (int j = 0; j < n; j++)
		fail |= tl_push(st, one);
	return fail;
}

/* Temporaries of the optimizer step for one weight, pushed to `all` when
 * the implementation makes them for every weight at once (torch.optim's
 * foreach path: Adam/AdamW, Adagrad and RMSprop take a _foreach_sqrt of
 * their state) or to `one` when it loops over weights and frees them
 * before the next (optimizer_impl for_loop: PyTorch < 2.0's
 * _single_tensor_adam takes (exp_avg_sq.sqrt() / bias_correction2_sqrt),
 * two copies of the weight's size for an instant, transformers.AdamW one;
 * Adagrad's and RMSprop's single-tensor paths one sqrt; lion-pytorch: the sign of the interpolated update, one
 * copy; transformers' Adafactor: grad**2 + eps and the factored
 * approximation of its inverse square root, two fp32 copies); the step
 * needs the sum of `all` plus the largest of `one`. torch.optim's fused
 * steps (optimizer_impl fused: Adam, AdamW, SGD) update in place, none. */
static int
push_opt_temp(struct plan_ctx *c, struct termlist *all, struct termlist *one,
    const struct cm_opt_choice *o, expr_id guard, expr_id e, int sbytes)
{
	struct expr_graph *g = c->g;
	int for_loop = o->impl == CM_OPT_IMPL_FOR_LOOP;

	if (o->impl == CM_OPT_IMPL_FUSED)
		return 0;
	switch ((enum cm_optimizer)o->optimizer) {
	case CM_OPT_ADAM: case CM_OPT_ADAMW:
		if (for_loop)     /* (exp_avg_sq.sqrt() / bias_correction2_sqrt): two copies */
			return tl_push(one, guarded(c, guard, expr_mul(g, expr_int(g, 2),
			    alloc_size(c, expr_mul(g, e, expr_int(g, sbytes))))));
		return tl_push(all, guarded(c, guard, alloc_size(c, expr_mul(g, e, expr_int(g, sbytes)))));
	case CM_OPT_ADAGRAD: case CM_OPT_RMSPROP:
		return tl_push(for_loop ? one : all,
		    guarded(c, guard, alloc_size(c, expr_mul(g, e, expr_int(g, sbytes)))));
	case CM_OPT_LION:
		return tl_push(one, guarded(c, guard, alloc_size(c, expr_mul(g, e, expr_int(g, sbytes)))));
	case CM_OPT_ADAFACTOR:
		return tl_push(one, guarded(c, guard, expr_mul(g, expr_int(g, 2),
		    alloc_size(c, expr_mul(g, e, expr_int(g, 4))))));
	default:        /* sgd (momentum: in place), bitsandbytes' fused 8-bit kernel */
		return 0;
	}
}

/* Uses (struct cm_use) grouped by id: id i's are at[start[i] .. start[i+1]),
 * in op order (a stable counting sort of the graph's op-ordered list). */
struct use_index {
	int *start;
	struct cm_use *at;
};

static int
use_index_build(struct use_index *x, const struct cm_use *u, int nu, int nids)
{
	int *fill;

	x->start = calloc((size_t)nids + 2, sizeof *x->start);
	x->at = malloc(sizeof *x->at * ((size_t)nu + 1));
	fill = malloc(sizeof *fill * ((size_t)nids + 1));
	if (x->start == NULL || x->at == NULL || fill == NULL) {
		free(fill);
		return -1;
	}
	for (int i = 0; i < nu; i++)
		x->start[u[i].id + 1]++;
	for (int i = 0; i < nids; i++)
		x->start[i + 1] += x->start[i];
	memcpy(fill, x->start, sizeof *fill * (size_t)nids);
	for (int i = 0; i < nu; i++)
		x->at[fill[u[i].id]++] = u[i];
	free(fill);
	return 0;
}

static void
use_index_free(struct use_index *x)
{
	free(x->start);
	free(x->at);
}

/*
 * A value alive over steps [from, to] of id's life, as the terms of those
 * steps' lists: at step k it is alive where some use of id at step >= k
 * (after its producer's step `from`, where it is alive anyway) holds. `v`
 * is already guarded by the producer's guard `pg`: a use whose condition
 * is that guard, or always true, adds nothing, and a graph without choices
 * gets the same terms as a plain range. 0 or -1 (out of memory).
 */
static int
push_alive(struct plan_ctx *c, struct termlist *lists, const struct use_index *x, int id, int from, int to,
    expr_id pg, expr_id v)
{
	struct expr_graph *g = c->g;
	int j = x->start[id + 1] - 1;
	expr_id alive = expr_int(g, 0);

	for (int k = to; k >= from; k--) {
		for (; j >= x->start[id] && x->at[j].op >= k; j--)
			alive = expr_or(g, alive, x->at[j].cond);
		if (k == from || alive == pg || expr_is_true(g, alive)) {
			if (tl_push(&lists[k + 1], v))
				return -1;
		} else if (!expr_is_int_const(g, alive, 0) &&
		    tl_push(&lists[k + 1], guarded(c, alive, v)))
			return -1;
	}
	return 0;
}

/*
 * Kept storage s (sz bytes) into the backward's kept_by lists: alive in the
 * backward until the backward of its earliest keeper that runs, so each
 * keep adds sz where it is the earliest that holds (a keep always true, or
 * a single one, adds sz × kept_if at the first keeper, as a plain range).
 * 0 or -1 (out of memory).
 */
static int
push_kept(struct plan_ctx *c, struct termlist *kept_by, const struct use_index *x, int s, expr_id sz)
{
	struct expr_graph *g = c->g;
	expr_id before = expr_int(g, 0);

	for (int j = x->start[s]; j < x->start[s + 1]; j++) {
		expr_id now = expr_or(g, before, x->at[j].cond), first;
		if (now == before)
			continue;
		first = j == x->start[s] ? x->at[j].cond : expr_and(g, now, expr_not(g, before));
		if (!expr_is_int_const(g, first, 0) &&
		    tl_push(&kept_by[x->at[j].op + 1], guarded(c, first, sz)))
			return -1;
		before = now;
		if (expr_is_true(g, before))
			break;
	}
	return 0;
}

/* The per-step lists and totals mem_plan_build fills, phase by phase:
 * term lists at index k + 1 (k = -1 for the model inputs), totals at k.
 * Per step k: storages made and kept at k; kept storages by the earliest
 * op keeping them; and the storages / gradients alive at k. Sums of what
 * is alive are written out term by term, never as a running total with
 * subtractions, so that interval bounds of the peak stay tight (each
 * variable enters once). */
struct plan_lists {
	struct use_index reads, treads, keeps;  /* the graph's uses by storage, tensor, storage */
	struct termlist *saved_at, *kept_by;
	struct termlist *inf_alive, *nk_alive, *grad_alive, *rec_alive;
	expr_id *fwd_tot, *bwd_tot, *inf_tot, *wgrad, *bwd_cached;
	expr_id *ws_fsafe, *ws_bsafe, *ws_inf, *g_bwd;
};

static int
lists_alloc(struct plan_lists *pl, int K)
{
	memset(pl, 0, sizeof *pl);
	pl->saved_at = calloc((size_t)K + 2, sizeof *pl->saved_at);
	pl->kept_by = calloc((size_t)K + 2, sizeof *pl->kept_by);
	pl->inf_alive = calloc((size_t)K + 2, sizeof *pl->inf_alive);
	pl->nk_alive = calloc((size_t)K + 2, sizeof *pl->nk_alive);
	pl->grad_alive = calloc((size_t)K + 2, sizeof *pl->grad_alive);
	pl->rec_alive = calloc((size_t)K + 2, sizeof *pl->rec_alive);
	pl->fwd_tot = calloc((size_t)K + 1, sizeof *pl->fwd_tot);
	pl->bwd_tot = calloc((size_t)K + 1, sizeof *pl->bwd_tot);
	pl->inf_tot = calloc((size_t)K + 1, sizeof *pl->inf_tot);
	pl->wgrad = calloc((size_t)K + 2, sizeof *pl->wgrad);
	pl->bwd_cached = calloc((size_t)K + 1, sizeof *pl->bwd_cached);
	pl->ws_fsafe = calloc((size_t)K + 1, sizeof *pl->ws_fsafe);
	pl->ws_bsafe = calloc((size_t)K + 1, sizeof *pl->ws_bsafe);
	pl->ws_inf = calloc((size_t)K + 1, sizeof *pl->ws_inf);
	pl->g_bwd = calloc((size_t)K + 1, sizeof *pl->g_bwd);
	return (pl->saved_at && pl->kept_by && pl->inf_alive && pl->nk_alive && pl->grad_alive &&
	    pl->rec_alive && pl->fwd_tot && pl->bwd_tot && pl->inf_tot && pl->wgrad && pl->bwd_cached &&
	    pl->ws_fsafe && pl->ws_bsafe && pl->ws_inf && pl->g_bwd) ? 0 : -1;
}

static void
lists_free(struct plan_lists *pl, int K)
{
	use_index_free(&pl->reads);
	use_index_free(&pl->treads);
	use_index_free(&pl->keeps);
	tl_free_all(pl->saved_at, K + 2);
	tl_free_all(pl->kept_by, K + 2);
	tl_free_all(pl->inf_alive, K + 2);
	tl_free_all(pl->nk_alive, K + 2);
	tl_free_all(pl->grad_alive, K + 2);
	tl_free_all(pl->rec_alive, K + 2);
	free(pl->fwd_tot);
	free(pl->bwd_tot);
	free(pl->inf_tot);
	free(pl->wgrad);
	free(pl->bwd_cached);
	free(pl->ws_fsafe);
	free(pl->ws_bsafe);
	free(pl->ws_inf);
	free(pl->g_bwd);
}

/* The weight of op (its first, e values) as bitsandbytes allocates it
 * (cm_quant.c), each part its own tensor. 4-bit: the packed (e + 1) / 2
 * bytes, the 16-value fp32 code, and the block scales: an fp32 per 64
 * values, or under double quantization a uint8 per 64, an fp32 per 256 of
 * those and the fp32 offset. int8: e bytes (CB) and an fp32 scale per
 * output row (SCB). */
static expr_id
quant_weight(struct plan_ctx *c, const struct cm_op *op, expr_id e)
{
	struct expr_graph *g = c->g;
	expr_id blocks = expr_cdiv(g, e, expr_int(g, 64)), b;

	if (op->quant == CM_QUANT_INT8)
		return expr_add(g, alloc_size(c, e), alloc_size(c, expr_mul(g, op->param_rows[0], expr_int(g, 4))));
	b = expr_add(g, alloc_size(c, expr_cdiv(g, e, expr_int(g, 2))), alloc_size(c, expr_int(g, 16 * 4)));

	if (!cm_quant_double(op->quant))
		return expr_add(g, b, alloc_size(c, expr_mul(g, blocks, expr_int(g, 4))));
	b = expr_add(g, b, alloc_size(c, blocks));
	b = expr_add(g, b, alloc_size(c, expr_mul(g, expr_cdiv(g, blocks, expr_int(g, 256)), expr_int(g, 4))));
	return expr_add(g, b, alloc_size(c, expr_int(g, 4)));
}

/* Persistent state: weights, weight gradients (wgrad per op), optimizer
 * state and temporaries, the autocast cache, buffers. */
static int
plan_persistent(struct plan_ctx *pc, const struct cm_workload *wl, struct mem_plan *plan,
    struct plan_lists *pl, struct dn_error *err)
{
	struct plan_ctx c = *pc;
	struct cm_graph *m = c.m;
	struct expr_graph *g = c.g;
	expr_id zero = expr_int(g, 0), *wgrad = pl->wgrad;
	/* the workload's optimizer, or the space's choices of it */
	struct cm_opt_choice one = { (uint8_t)wl->optimizer, (uint8_t)wl->optimizer_impl,
		(uint8_t)wl->optimizer_states };
	const struct cm_opt_choice *opts = wl->opt_hp > 0 ? wl->opt_choices : &one;
	int nopt = wl->opt_hp > 0 ? wl->nopt_choices : 1;

	{
		struct termlist w = { 0 }, gr = { 0 }, st = { 0 }, tmp = { 0 }, tmp1 = { 0 }, ac = { 0 }, buf = { 0 };
		int fail = 0;
		for (int k = 0; k < m->nops; k++) {
			const struct cm_op *op = &m->ops[k];
			expr_id pg = zero;
			/* weights, gradients and state in the operator's precision:
			 * half where the model is cast to it, else fp32 (mixed
			 * precision keeps fp32 master weights) */
			int half = op->prec == CM_PREC_FP16 || op->prec == CM_PREC_BF16;
			int wbytes = half ? 2 : 4, gbytes = wbytes, sbytes = wbytes;
			for (int i = 0; i < op->nparam_tensors; i++) {
				expr_id e = op->param_elems[i];
				expr_id wb = guarded(&c, op->guard, op->quant && i == 0 ? quant_weight(&c, op, e) :
				    alloc_size(&c, expr_mul(g, e, expr_int(g, wbytes))));
				expr_id gb = guarded(&c, op->guard, alloc_size(&c, expr_mul(g, e, expr_int(g, gbytes))));
				fail |= tl_push(&w, wb);
				if ((op->frozen && wl->training) || (op->quant && i == 0))
					continue;       /* requires_grad=False: weights only */
				fail |= tl_push(&gr, gb);
				pg = expr_add(g, pg, gb);
				/* the space picks the optimizer: each choice's state
				 * and temporaries where its value is chosen */
				for (int j = 0; j < nopt; j++) {
					expr_id gj = wl->opt_hp > 0 ? expr_mul(g, op->guard,
					    expr_eq(g, expr_var(g, wl->opt_hp - 1), expr_int(g, j))) : op->guard;
					fail |= push_opt_state(&c, &st, &opts[j], gj, e, sbytes, op->param_factored[i],
					    op->param_rows[i], op->param_cols[i], wl);
					fail |= push_opt_temp(&c, &tmp, &tmp1, &opts[j], gj, e, sbytes);
				}
				if ((op->prec == CM_PREC_MIXED_FP16 || op->prec == CM_PREC_MIXED_BF16) &&
				    (op->op_class == CM_CLASS_CONV || op->op_class == CM_CLASS_GEMM || op->op_class == CM_CLASS_RNN))
					fail |= tl_push(&ac, guarded(&c, op->guard,
					    alloc_size(&c, expr_mul(g, e, expr_int(g, 2)))));
			}
			if (!expr_is_int_const(g, op->buffer_elems, 0))
				fail |= tl_push(&buf, guarded(&c, op->guard,
				    alloc_size(&c, expr_mul(g, op->buffer_elems, expr_int(g, 4)))));
			wgrad[k] = pg;
		}
		plan->weights = expr_sum(g, w.v, w.n);
		plan->grads_all = expr_sum(g, gr.v, gr.n);
		plan->optimizer_state = wl->training ? expr_sum(g, st.v, st.n) : zero;
		plan->optimizer_temp = wl->training ? expr_add(g, expr_sum(g, tmp.v, tmp.n),
		    tmp1.n > 0 ? expr_max_n(g, tmp1.v, tmp1.n) : zero) : zero;
		plan->autocast_cache = expr_sum(g, ac.v, ac.n);
		plan->buffers = expr_sum(g, buf.v, buf.n);
		free(w.v); free(gr.v); free(st.v); free(tmp.v); free(tmp1.v); free(ac.v); free(buf.v);
		if (fail)
			return fail_oom(err);
	}
	return 0;
}

/* Each storage into the per-step lists (saved for backward, alive in
 * inference, alive and not kept, recomputed under checkpointing); the
 * model inputs into plan->inputs. */
static int
plan_storages(struct plan_ctx *pc, expr_id ck, struct mem_plan *plan, struct plan_lists *pl,
    struct dn_error *err)
{
	struct plan_ctx c = *pc;
	struct cm_graph *m = c.m;
	struct expr_graph *g = c.g;
	int K = m->nops;
	struct termlist in = { 0 };
	struct termlist *saved_at = pl->saved_at, *kept_by = pl->kept_by, *inf_alive = pl->inf_alive;
	struct termlist *nk_alive = pl->nk_alive, *rec_alive = pl->rec_alive;
	expr_id nck = expr_not(g, ck);  /* where the configuration does not checkpoint */

	{
		for (int s = 0; s < m->nstorages; s++) {
			const struct cm_storage *st = &m->storages[s];
			expr_id sz = storage_size(&c, s);
			int saved = st->first_saver != INT_MAX;
			int p = st->producer, lu = st->last_use < K ? st->last_use : K - 1;
			/* kept: its bytes where an operator keeps it (kept_if); the
			 * rest of sz is an output freed after its last reader */
			expr_id kept = saved ? guarded(&c, st->kept_if, sz) : expr_int(g, 0);
			expr_id unkept = saved ? guarded(&c, expr_not(g, st->kept_if), sz) : sz;
			int partly = saved && !expr_is_true(g, st->kept_if);
			expr_id sz_kept = sz;
			/* checkpointed (ckpt_plan.h): in the forward it lives as an
			 * unkept output (never made if only kept for backward); in the
			 * backward from the block's recompute to its earliest keeper.
			 * Where the space picks checkpointing, each way under its
			 * condition (ck, or not ck). */
			int rec = st->recompute && !expr_is_int_const(g, ck, 0);
			if (dn_deadline_check(err, "$", "building the memory plan") != 0) {
				free(in.v);
				return -1;
			}
			if (p < 0) {            /* model inputs: held by the training loop */
				if (tl_push(&in, sz))
					goto oom;
				continue;
			}
			if (rec) {
				for (int k = st->first_saver; k <= m->ops[p].ckpt_last && k < K; k++)
					if (tl_push(&rec_alive[k + 1], guarded(&c, ck, kept)))
						goto oom;
				if (!st->extra &&
				    push_alive(&c, nk_alive, &pl->reads, s, p, lu, st->guard, guarded(&c, ck, sz)))
					goto oom;
				if (expr_is_true(g, ck)) {
					if (!st->extra && push_alive(&c, inf_alive, &pl->reads, s, p, lu, st->guard, sz))
						goto oom;
					continue;
				}
				/* and, where it does not checkpoint, as below */
				kept = guarded(&c, nck, kept);
				unkept = guarded(&c, nck, unkept);
				sz_kept = guarded(&c, nck, sz);
			}
			if (saved && (tl_push(&saved_at[p + 1], kept) || push_kept(&c, kept_by, &pl->keeps, s, sz_kept)))
				goto oom;
			/* alive until the last read that happens (inference makes no
			 * masks or indices for backward) */
			if (!st->extra && push_alive(&c, inf_alive, &pl->reads, s, p, lu, st->guard, sz))
				goto oom;
			if ((!saved || partly) &&
			    push_alive(&c, nk_alive, &pl->reads, s, p, lu, st->guard, unkept))
				goto oom;
		}
		plan->inputs = expr_sum(g, in.v, in.n);
		free(in.v);
	}
	return 0;
oom:
	free(in.v);
	return fail_oom(err);
}

/* The gradients of tensors in flight during backward, into grad_alive. */
static int
plan_grads_in_flight(struct plan_ctx *pc, struct plan_lists *pl, struct dn_error *err)
{
	struct plan_ctx c = *pc;
	struct cm_graph *m = c.m;
	struct expr_graph *g = c.g;
	int K = m->nops;
	struct termlist *grad_alive = pl->grad_alive;

	for (int t = 0; t < m->ntensors; t++) {
		const struct cm_tensor *x = &m->tensors[t];
		expr_id sz;
		if (dn_deadline_check(err, "$", "building the memory plan") != 0)
			return -1;
		if (!x->requires_grad || x->view_of >= 0 || x->producer < 0 || x->producer >= m->nops)
			continue;
		/* a choice output stands for its alternatives' gradients, but an
		 * operator's output in place of one has a gradient of its own */
		if (x->storage < 0 && !cm_graph_inplace_on_choice(m, t))
			continue;
		sz = guarded(&c, m->ops[x->producer].guard,
		    alloc_size(&c, expr_mul(g, x->elems, expr_int(g, cm_tensor_bytes(x)))));
		/* until the backward of its last consumer that runs */
		if (push_alive(&c, grad_alive, &pl->treads, t, x->producer, x->last_use < K ? x->last_use : K - 1,
		    m->ops[x->producer].guard, sz))
			return fail_oom(err);
	}
	return 0;
}

/* The forward and inference timelines, step by step. */
static void
plan_forward(struct plan_ctx *pc, expr_id accum, struct mem_plan *plan, struct plan_lists *pl)
{
	struct plan_ctx c = *pc;
	struct cm_graph *m = c.m;
	struct expr_graph *g = c.g;
	expr_id zero = expr_int(g, 0);
	struct termlist *saved_at = pl->saved_at, *inf_alive = pl->inf_alive, *nk_alive = pl->nk_alive;
	expr_id *fwd_tot = pl->fwd_tot, *inf_tot = pl->inf_tot, *ws_inf = pl->ws_inf;
	expr_id *ws_fsafe = pl->ws_fsafe;

	{
		expr_id S = zero, N, I;
		for (int k = 0; k < m->nops; k++) {
			const struct cm_op *op = &m->ops[k];
			expr_id ws = guarded(&c, op->guard, alloc_size(&c, op->ws_fwd));
			/* storages whose last use was step k-1 are freed before step k */
			I = expr_sum(g, inf_alive[k + 1].v, inf_alive[k + 1].n);
			N = expr_sum(g, nk_alive[k + 1].v, nk_alive[k + 1].n);
			S = expr_add(g, S, expr_sum(g, saved_at[k + 1].v, saved_at[k + 1].n));
			plan->infer[k].saved = zero;
			plan->infer[k].transient = I;
			plan->infer[k].grads = zero;
			plan->infer[k].workspace = ws;
			plan->infer[k].total = expr_add(g, I, ws);
			inf_tot[k] = plan->infer[k].total;
			ws_inf[k] = ws;
			ws_fsafe[k] = expr_max(g, ws, guarded(&c, op->guard, alloc_size(&c, op->ws_bound)));
			plan->fwd[k].saved = S;
			plan->fwd[k].transient = N;
			plan->fwd[k].workspace = ws;
			plan->fwd[k].grads = expr_is_true(g, accum) ? plan->grads_all : expr_mul(g, accum, plan->grads_all);
			plan->fwd[k].total = expr_add(g, expr_add(g, expr_add(g, S, N), ws), plan->fwd[k].grads);
			fwd_tot[k] = plan->fwd[k].total;
		}
		plan->saved_bytes = S;
	}
}

/* The backward timeline, from the last op down to 0. */
static int
plan_backward(struct plan_ctx *pc, expr_id accum, struct mem_plan *plan, struct plan_lists *pl,
    struct dn_error *err)
{
	struct plan_ctx c = *pc;
	struct cm_graph *m = c.m;
	struct expr_graph *g = c.g;
	int K = m->nops;
	expr_id zero = expr_int(g, 0);
	struct termlist *kept_by = pl->kept_by, *grad_alive = pl->grad_alive, *rec_alive = pl->rec_alive;
	expr_id *bwd_tot = pl->bwd_tot, *wgrad = pl->wgrad, *bwd_cached = pl->bwd_cached;
	expr_id *ws_bsafe = pl->ws_bsafe, *g_bwd = pl->g_bwd;

	{
		/* kept storages alive at step k: those whose earliest keeper is <= k */
		expr_id *kept = calloc((size_t)K + 1, sizeof *kept), W = zero, Wrun = zero;
		if (kept == NULL)
			return fail_oom(err);
		for (int k = 0; k < m->nops; k++)
			kept[k] = expr_add(g, k > 0 ? kept[k - 1] : zero, expr_sum(g, kept_by[k + 1].v, kept_by[k + 1].n));
		for (int k = m->nops - 1; k >= 0; k--) {
			const struct cm_op *op = &m->ops[k];
			expr_id ws = guarded(&c, op->guard, alloc_size(&c, expr_add(g, op->ws_bwd, op->bwd_extra)));
			/* gradients in flight: the gradient of t lives from its last consumer's
			 * backward to its producer's */
			expr_id G = expr_sum(g, grad_alive[k + 1].v, grad_alive[k + 1].n);
			/* accumulating: all gradients exist, and the new one is in flight;
			 * else those made so far (the choice where the space picks it) */
			if (expr_is_true(g, accum))
				W = expr_add(g, plan->grads_all, wgrad[k]);
			else {
				Wrun = expr_add(g, Wrun, wgrad[k]);
				W = expr_is_int_const(g, accum, 0) ? Wrun :
				    expr_ite(g, accum, expr_add(g, plan->grads_all, wgrad[k]), Wrun);
			}
			/* checkpointing: the recomputed block's kept activations */
			expr_id R = expr_sum(g, rec_alive[k + 1].v, rec_alive[k + 1].n);
			plan->bwd[k].saved = expr_add(g, kept[k], R);
			plan->bwd[k].transient = G;
			plan->bwd[k].grads = W;
			plan->bwd[k].workspace = ws;
			plan->bwd[k].total = expr_add(g, expr_add(g, expr_add(g, plan->bwd[k].saved, G), W), ws);
			bwd_tot[k] = plan->bwd[k].total;
			ws_bsafe[k] = op->kernels_bwd == 0 ? ws :
			    expr_max(g, ws, guarded(&c, op->guard, alloc_size(&c, op->ws_bound)));
			g_bwd[k] = G;
			/* what the caching allocator holds: activations freed during
			 * backward stay cached, too small for the larger gradients of the
			 * earlier layers, so the device keeps all of them */
			bwd_cached[k] = expr_add(g, expr_add(g, expr_add(g, expr_add(g, plan->saved_bytes, R), G), W), ws);
		}
		free(kept);
	}
	return 0;
}

/* Peaks and totals: expected and safe, training and inference. */
static void
plan_totals(struct plan_ctx *pc, const struct mem_profile *prof, expr_id accum, struct mem_plan *plan,
    struct plan_lists *pl)
{
	struct cm_graph *m = pc->m;
	struct expr_graph *g = pc->g;
	expr_id *fwd_tot = pl->fwd_tot, *bwd_tot = pl->bwd_tot, *inf_tot = pl->inf_tot;
	expr_id *bwd_cached = pl->bwd_cached, *g_bwd = pl->g_bwd;
	expr_id *ws_fsafe = pl->ws_fsafe, *ws_bsafe = pl->ws_bsafe;

	plan->fwd_peak = expr_max_n(g, fwd_tot, m->nops);
	plan->bwd_peak = expr_max_n(g, bwd_tot, m->nops);
	plan->infer_peak = expr_max_n(g, inf_tot, m->nops);
	plan->opt_peak = expr_add(g, plan->grads_all, plan->optimizer_temp);
	{
		expr_id persistent = expr_add(g, expr_add(g, plan->weights, plan->buffers),
		    expr_add(g, plan->optimizer_state, plan->inputs));
		expr_id dyn = expr_max(g, expr_max(g, plan->fwd_peak, plan->bwd_peak), plan->opt_peak);
		expr_id ipers = expr_add(g, expr_add(g, plan->weights, plan->buffers), plan->inputs);
		plan->train_peak = expr_add(g, expr_add(g, persistent, plan->autocast_cache), dyn);
		plan->context = expr_int(g, prof->context_bytes + prof->library_bytes);
		/* the device holds the larger of the allocated peak and what the
		 * caching allocator keeps (see bwd_cached above); the reserve is
		 * reported separately and is not a term of the total */
		plan->train_reserved_dyn = expr_max(g, dyn, expr_max_n(g, bwd_cached, m->nops));
		plan->train_reserve = expr_sub(g, plan->train_reserved_dyn, dyn);
		plan->infer_reserve = expr_int(g, 0);
		plan->train_total = expr_add(g, expr_add(g, expr_add(g, persistent, plan->autocast_cache),
		    plan->train_reserved_dyn), plan->context);
		plan->infer_total = expr_add(g, expr_add(g, ipers, plan->infer_peak), plan->context);
		/*
		 * The safe (upper) estimate: the expected peak's composition with
		 * each term at its own maximum over the step instead of their
		 * joint maximum at one step, so that whatever the caching
		 * allocator cannot hand from one use to the next is still covered:
		 *  - every activation kept for backward stays cached (as above);
		 *  - the largest set of activation gradients in flight at any
		 *    backward step (the blocks of one step may be the wrong sizes
		 *    for the next step's gradients, so they stay reserved);
		 *  - all weight gradients;
		 *  - two workspace blocks: the largest of the forward and the
		 *    largest of the backward, each at the library's bound where
		 *    the expected rule says less (op ws_bound: cuDNN 9 on Hopper
		 *    asks about the input plus the output of every convolution
		 *    that is not depthwise, op_conv.c). A freed workspace stays
		 *    cached, and a convolution's backward asks more than its
		 *    forward (the 7x7/2 stem: 1.07 against 1.00 times its input
		 *    and output), so the backward's block is a segment of its
		 *    own beside the forward's;
		 *  - one more input batch: the training loop copies the next
		 *    batch to the device while the previous one is still
		 *    referenced (inputs = inputs.to(device) rebinds the name only
		 *    after the copy), so two batches were alive at once and the
		 *    cache keeps the second block;
		 *  - the context's upper bound instead of its expected size;
		 *  - the activations displaced by tensors that outlive the first
		 *    step: the optimizer state (made by the first step) and, when
		 *    they are kept (accumulation, zero_grad to zeros), the weight
		 *    gradients (made by the first backward) take blocks that the
		 *    first forward's activations had used; from the second step
		 *    on those activations may need new segments, up to as many
		 *    bytes (at most all kept activations). A bound, not an
		 *    observation: the allocator replays of real traces
		 *    (tests/reference/gen_alloc_replay*.py: eight CNNs, the
		 *    bert-large runs) show no such growth, and the bert-large
		 *    gap once blamed on it was softmax's kept input
		 *    (docs/memory-accuracy.md); nothing guarantees the reuse
		 *    in general.
		 * Each term is a bound on bytes the device holds, never a multiple
		 * of the expected peak.
		 */
		plan->ws_safe = expr_add(g, expr_max_n(g, ws_fsafe, m->nops), expr_max_n(g, ws_bsafe, m->nops));
		plan->grad_flight_max = expr_max_n(g, g_bwd, m->nops);
		plan->context_upper = expr_int(g, prof->context_upper_bytes + prof->library_bytes);
		{
			expr_id outlive = expr_is_int_const(g, accum, 0) ? plan->optimizer_state :
			    expr_add(g, plan->optimizer_state, expr_is_true(g, accum) ? plan->grads_all :
			    expr_mul(g, accum, plan->grads_all));
			expr_id displaced = expr_min(g, plan->saved_bytes, outlive);
			expr_id bound = expr_add(g, expr_add(g, expr_add(g, plan->saved_bytes, plan->grad_flight_max),
			    expr_add(g, plan->grads_all, plan->ws_safe)), displaced);
			expr_id sdyn = expr_max(g, plan->train_reserved_dyn, bound);
			plan->train_safe = expr_add(g, expr_add(g, expr_add(g, persistent, plan->autocast_cache), sdyn),
			    expr_add(g, plan->inputs, plan->context_upper));
			plan->infer_safe = expr_add(g, expr_add(g, expr_add(g, ipers, plan->infer_peak),
			    expr_max_n(g, ws_fsafe, m->nops)), plan->context_upper);
		}
	}
}

int
mem_plan_build(struct cm_graph *m, const struct cm_workload *wl,
    const struct mem_profile *prof, struct mem_plan *plan, struct dn_error *err)
{
	struct plan_ctx c = { m, &m->g, prof };
	struct expr_graph *g = &m->g;
	struct plan_lists pl;
	int K = m->nops, rc = -1;
	/* gradients that outlive the step: accumulation, or zero_grad that
	 * zeroes them in place (set_to_none=False) */
	expr_id accum = expr_int(g, wl->training && (wl->grad_accum > 1 || wl->keep_grads));
	expr_id ck = ckpt_plan_on(g, wl);

	/* a space that searches the accumulation: where it picks more than one */
	if (wl->training && !wl->keep_grads && wl->accum_hp > 0)
		accum = expr_lt(g, expr_int(g, 1), expr_var(g, wl->accum_hp - 1));
	memset(plan, 0, sizeof *plan);
	plan->nsteps = K;
	plan->fwd = calloc((size_t)K + 1, sizeof *plan->fwd);
	plan->bwd = calloc((size_t)K + 1, sizeof *plan->bwd);
	plan->infer = calloc((size_t)K + 1, sizeof *plan->infer);
	if (lists_alloc(&pl, K) != 0 || !plan->fwd || !plan->bwd || !plan->infer ||
	    use_index_build(&pl.reads, m->reads, m->nreads, m->nstorages) != 0 ||
	    use_index_build(&pl.treads, m->treads, m->ntreads, m->ntensors) != 0 ||
	    use_index_build(&pl.keeps, m->keeps, m->nkeeps, m->nstorages) != 0) {
		fail_oom(err);
		goto out;
	}
	if (plan_persistent(&c, wl, plan, &pl, err) != 0 || plan_storages(&c, ck, plan, &pl, err) != 0 ||
	    plan_grads_in_flight(&c, &pl, err) != 0)
		goto out;
	plan_forward(&c, accum, plan, &pl);
	if (plan_backward(&c, accum, plan, &pl, err) != 0)
		goto out;
	plan_totals(&c, prof, accum, plan, &pl);
	if (dn_error_isset(&g->err)) {
		dn_error_set(err, g->err.code, g->err.path, "%s", g->err.message);
		goto out;
	}
	rc = 0;
out:
	lists_free(&pl, K);
	return rc;
}

void
mem_plan_free(struct mem_plan *plan)
{
	free(plan->fwd);
	free(plan->bwd);
	free(plan->infer);
	memset(plan, 0, sizeof *plan);
}
