/*
 * costmodel.c - the public entry points: build a model's graph, memory plan
 * and performance model once (cm_model_build), then evaluate configurations
 * (cm_model_eval) by one pass over the expression graph.
 *
 * Invariants: every reported quantity is a root expression in m->metrics,
 * so the solver bounds and compiles exactly what cm_model_eval evaluates;
 * the memory breakdown of a result always sums to its total.
 */
#include "costmodel.h"
#include "model_build_priv.h"
#include "cm_macs.h"
#include "mem_plan.h"
#include "ckpt_plan.h"
#include "perf_model.h"
#include "expr_tape.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct cm_model {
	struct cm_model_def *def;
	struct cm_workload wl;
	struct cm_device dev;
	struct cm_graph graph;
	struct mem_plan mem;
	struct perf_plan perf;
	expr_id metrics[CM_M_NMETRICS];
	expr_id weight_bytes[3];        /* fp32, fp16/bf16, int8 */
	expr_id trainable;              /* parameters the optimizer updates (training) */
	expr_id *op_out_bytes, *op_saved_bytes;
	struct expr_tape tape;          /* compiled graph for cm_model_eval */
	int ckpt_blocks;                /* checkpointed blocks (training with checkpointing) */
};

static const char *const metric_names[CM_M_NMETRICS] = {
	"valid", "params", "macs", "flops", "train_flops", "weight_bytes",
	"activation_bytes", "memory_train", "memory_inference", "memory",
	"latency_inference", "latency_train_step", "utilization", "memory_safe",
};

const char *
cm_metric_name(enum cm_metric m)
{
	return (unsigned)m < CM_M_NMETRICS ? metric_names[m] : "?";
}

static const char *const mem_cat_names[CM_MEM_NCAT] = {
	"weights", "gradients", "optimizer", "inputs", "activations", "temporaries",
	"workspace", "allocator", "context",
};

const char *
cm_mem_cat_name(enum cm_mem_cat c)
{
	return (unsigned)c < CM_MEM_NCAT ? mem_cat_names[c] : "?";
}

const struct expr_graph *
cm_model_graph(const struct cm_model *m)
{
	return &m->graph.g;
}

const struct cm_model_def *
cm_model_def(const struct cm_model *m)
{
	return m->def;
}

const struct cm_workload *
cm_model_workload(const struct cm_model *m)
{
	return &m->wl;
}

expr_id
cm_model_metric(const struct cm_model *m, enum cm_metric which)
{
	return (unsigned)which < CM_M_NMETRICS ? m->metrics[which] : EXPR_NONE;
}

int
cm_model_nrules(const struct cm_model *m)
{
	return m->graph.ncons;
}

expr_id
cm_model_rule(const struct cm_model *m, int i, const char **path, const char **text)
{
	if (i < 0 || i >= m->graph.ncons)
		return EXPR_NONE;
	*path = m->graph.cons[i].path;
	*text = m->graph.cons[i].text;
	return m->graph.cons[i].ok;
}

int32_t
cm_model_scratch_len(const struct cm_model *m)
{
	return m->graph.g.n;
}

int
cm_model_nops(const struct cm_model *m)
{
	return m->graph.nops;
}

int
cm_model_has_attention(const struct cm_model *m)
{
	return m->graph.nattention > 0;
}

const char *
cm_model_checkpointing_warning(const struct cm_model *m)
{
	if (!m->wl.checkpointing && m->wl.ckpt_hp == 0)
		return NULL;
	if (!m->wl.training)
		return "checkpointing applies to training only: an inference workload costs the same without it";
	if (m->ckpt_blocks == 0)
		return "checkpointing has no block to apply to in this model (a block is an iteration of a "
		    "top-level repeat, or a layer item marked \"checkpoint\": true in the model file; "
		    "docs/training-techniques.md): every cost is the same as without checkpointing";
	return NULL;
}

void
cm_model_free(struct cm_model *m)
{
	if (m == NULL)
		return;
	mem_plan_free(&m->mem);
	perf_plan_free(&m->perf);
	expr_tape_free(&m->tape);
	cm_graph_free(&m->graph);
	free(m->op_out_bytes);
	free(m->op_saved_bytes);
	cm_def_unref(m->def);
	free(m);
}

static int
build_totals(struct cm_model *m, struct dn_error *err)
{
	struct cm_graph *gr = &m->graph;
	struct expr_graph *g = &gr->g;
	int K = gr->nops;
	expr_id *p, *tp, *mac, *bmac, *ok, saved;

	p = calloc((size_t)K + 1, sizeof *p);
	tp = calloc((size_t)K + 1, sizeof *tp);
	mac = calloc((size_t)K + 1, sizeof *mac);
	bmac = calloc((size_t)K + 1, sizeof *bmac);
	ok = calloc((size_t)gr->ncons + 1, sizeof *ok);
	m->op_out_bytes = calloc((size_t)K + 1, sizeof *m->op_out_bytes);
	m->op_saved_bytes = calloc((size_t)K + 1, sizeof *m->op_saved_bytes);
	if (!p || !tp || !mac || !bmac || !ok || !m->op_out_bytes || !m->op_saved_bytes) {
		free(p); free(tp); free(mac); free(bmac); free(ok);
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	}
	for (int k = 0; k < K; k++) {
		const struct cm_op *op = &gr->ops[k];
		const struct cm_tensor *o = &gr->tensors[op->out];
		p[k] = expr_mul(g, op->guard, op->adapter ? expr_int(g, 0) : op->params);
		tp[k] = expr_mul(g, op->guard, op->frozen || !m->wl.training ? expr_int(g, 0) : op->params);
		mac[k] = expr_mul(g, op->guard, cm_macs_op(gr, op, m->wl.macs_convention, m->wl.training));
		bmac[k] = expr_mul(g, op->guard, op->bwd_macs);
		m->op_out_bytes[k] = o->producer == k ?
		    expr_mul(g, o->elems, expr_int(g, cm_tensor_bytes(o))) : expr_int(g, 0);
		m->op_saved_bytes[k] = expr_int(g, 0);
	}
	/* activations kept for backward: each storage once, exact bytes (a
	 * checkpointed block's: none, where the configuration checkpoints) */
	saved = expr_int(g, 0);
	expr_id ck = ckpt_plan_on(g, &m->wl);
	for (int s = 0; s < gr->nstorages; s++) {
		const struct cm_storage *st = &gr->storages[s];
		expr_id keep = expr_and(g, st->guard, st->kept_if);
		if (st->first_saver == INT_MAX || st->producer < -1 || (st->recompute && expr_is_true(g, ck)))
			continue;
		if (st->recompute)
			keep = expr_and(g, keep, expr_not(g, ck));
		expr_id b = expr_mul(g, keep, st->bytes);
		saved = expr_add(g, saved, b);
		if (st->first_saver < K)
			m->op_saved_bytes[st->first_saver] = expr_add(g, m->op_saved_bytes[st->first_saver], b);
	}
	for (int i = 0; i < gr->ncons; i++)
		ok[i] = gr->cons[i].ok;
	{
		expr_id valid = expr_int(g, 1);
		for (int i = 0; i < gr->ncons; i++)
			valid = expr_and(g, valid, ok[i]);
		m->metrics[CM_M_VALID] = valid;
	}
	m->metrics[CM_M_PARAMS] = expr_sum(g, p, K);
	m->trainable = expr_sum(g, tp, K);
	m->metrics[CM_M_MACS] = expr_sum(g, mac, K);
	m->metrics[CM_M_FLOPS] = expr_mul(g, m->metrics[CM_M_MACS], expr_int(g, 2));
	m->metrics[CM_M_TRAIN_FLOPS] = expr_mul(g, expr_add(g, m->metrics[CM_M_MACS], expr_sum(g, bmac, K)),
	    expr_int(g, 2));
	m->weight_bytes[0] = expr_mul(g, m->metrics[CM_M_PARAMS], expr_int(g, 4));
	m->weight_bytes[1] = expr_mul(g, m->metrics[CM_M_PARAMS], expr_int(g, 2));
	m->weight_bytes[2] = m->metrics[CM_M_PARAMS];
	/* each operator's weights in its precision (half where the model is
	 * cast to it) */
	for (int k = 0; k < K; k++)
		p[k] = expr_mul(g, p[k], expr_int(g, gr->ops[k].prec == CM_PREC_FP16 || gr->ops[k].prec == CM_PREC_BF16 ? 2 : 4));
	m->metrics[CM_M_WEIGHT_BYTES] = expr_sum(g, p, K);
	m->metrics[CM_M_ACT_SAVED] = saved;
	m->metrics[CM_M_MEM_TRAIN] = m->mem.train_total;
	m->metrics[CM_M_MEM_INFER] = m->mem.infer_total;
	m->metrics[CM_M_MEM] = m->wl.training ? m->mem.train_total : m->mem.infer_total;
	m->metrics[CM_M_LAT_INFER] = m->perf.infer_seconds;
	m->metrics[CM_M_LAT_TRAIN] = m->perf.train_seconds;
	m->metrics[CM_M_UTIL] = m->wl.training ? m->perf.train_util : m->perf.infer_util;
	m->metrics[CM_M_MEM_SAFE] = m->wl.training ? m->mem.train_safe : m->mem.infer_safe;
	free(p); free(tp); free(mac); free(bmac); free(ok);
	if (dn_error_isset(&g->err))
		return dn_error_set(err, g->err.code, g->err.path, "%s", g->err.message);
	return 0;
}

int
cm_model_build(struct cm_model_def *def, const struct cm_workload *wl,
    const struct cm_device *dev, const struct expr_ival *bounds,
    struct cm_model **out, struct dn_error *err)
{
	struct cm_model *m;
	struct mem_profile prof;

	*out = NULL;
	m = calloc(1, sizeof *m);
	if (m == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	cm_def_ref(def);
	m->def = def;
	m->wl = *wl;
	m->dev = *dev;
	mem_profile_pytorch(dev, &prof);
	if (model_graph_build(def, wl, dev, bounds, &m->graph, err) != 0) {
		cm_model_free(m);
		return -1;
	}
	if (wl->training && (wl->checkpointing || wl->ckpt_hp > 0))
		m->ckpt_blocks = ckpt_plan_mark(&m->graph);
	if (mem_plan_build(&m->graph, wl, &prof, &m->mem, err) != 0 ||
	    perf_build(&m->graph, wl, dev, &m->mem, &m->perf, err) != 0 ||
	    build_totals(m, err) != 0) {
		cm_model_free(m);
		return -1;
	}
	if (expr_tape_build(&m->graph.g, &m->tape) != 0) {
		cm_model_free(m);
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory compiling the model");
	}
	*out = m;
	return 0;
}

static int64_t
iv(const union expr_val *v, expr_id e)
{
	return e >= 0 ? v[e].i : 0;
}

/* Fills the memory breakdown at the workload's peak from the step components. */
static void
breakdown(const struct cm_model *m, const union expr_val *v, struct cm_result *r)
{
	const struct mem_plan *p = &m->mem;
	int64_t *b = r->mem_breakdown;
	int K = m->graph.nops, best = -1;
	enum cm_phase phase = CM_PHASE_FORWARD;
	int64_t top = INT64_MIN;
	const struct mem_step *st = NULL;

	memset(b, 0, sizeof r->mem_breakdown);
	b[CM_MEM_WEIGHTS] = iv(v, p->weights) + iv(v, p->buffers);
	b[CM_MEM_INPUTS] = iv(v, p->inputs);
	b[CM_MEM_CONTEXT] = iv(v, p->context);
	if (!m->wl.training) {
		for (int k = 0; k < K; k++)
			if (iv(v, p->infer[k].total) > top) {
				top = iv(v, p->infer[k].total);
				best = k;
			}
		if (best >= 0) {
			b[CM_MEM_TEMPORARIES] = iv(v, p->infer[best].transient);
			b[CM_MEM_WORKSPACE] = iv(v, p->infer[best].workspace);
		}
		b[CM_MEM_ALLOCATOR] = iv(v, p->infer_reserve);
		r->peak_phase = CM_PHASE_FORWARD;
		r->peak_op = best;
		return;
	}
	b[CM_MEM_WEIGHTS] += iv(v, p->autocast_cache);
	b[CM_MEM_OPTIMIZER] = iv(v, p->optimizer_state);
	for (int k = 0; k < K; k++) {
		if (iv(v, p->fwd[k].total) > top) {
			top = iv(v, p->fwd[k].total);
			best = k;
			phase = CM_PHASE_FORWARD;
		}
		if (iv(v, p->bwd[k].total) > top) {
			top = iv(v, p->bwd[k].total);
			best = k;
			phase = CM_PHASE_BACKWARD;
		}
	}
	if (iv(v, p->opt_peak) > top) {
		phase = CM_PHASE_OPTIMIZER;
		best = -1;
		b[CM_MEM_GRADIENTS] = iv(v, p->grads_all);
		b[CM_MEM_OPTIMIZER] += iv(v, p->optimizer_temp);
	} else if (best >= 0) {
		st = phase == CM_PHASE_FORWARD ? &p->fwd[best] : &p->bwd[best];
		b[CM_MEM_ACTIVATIONS] = iv(v, st->saved);
		b[CM_MEM_TEMPORARIES] = iv(v, st->transient);
		b[CM_MEM_GRADIENTS] = iv(v, st->grads);
		b[CM_MEM_WORKSPACE] = iv(v, st->workspace);
	}
	b[CM_MEM_ALLOCATOR] = iv(v, p->train_reserve);
	r->peak_phase = phase;
	r->peak_op = best;
}

int
cm_model_eval(const struct cm_model *m, const union expr_val *config,
    union expr_val *v, struct cm_result *r, struct dn_error *err)
{
	const struct cm_graph *gr = &m->graph;
	expr_id fault = EXPR_NONE;

	if (expr_tape_eval(&m->tape, &gr->g, config, v, &fault) != 0) {
		char text[200];
		expr_format(&gr->g, fault, text, sizeof text);
		return dn_error_set(err, DN_ERANGE, expr_origin(&gr->g, fault),
		    "a value overflows 64 bits for this configuration (in %s)", text);
	}
	cm_model_read(m, v, r);
	return 0;
}

void
cm_model_read(const struct cm_model *m, const union expr_val *v, struct cm_result *r)
{
	const struct cm_graph *gr = &m->graph;

	r->valid = (int)v[m->metrics[CM_M_VALID]].i;
	r->params = v[m->metrics[CM_M_PARAMS]].i;
	r->trainable_params = v[m->trainable].i;
	r->weight_bytes_fp32 = v[m->weight_bytes[0]].i;
	r->weight_bytes_fp16 = v[m->weight_bytes[1]].i;
	r->weight_bytes_int8 = v[m->weight_bytes[2]].i;
	r->macs = v[m->metrics[CM_M_MACS]].i;
	r->flops = v[m->metrics[CM_M_FLOPS]].i;
	r->train_flops = v[m->metrics[CM_M_TRAIN_FLOPS]].i;
	r->act_saved_bytes = v[m->metrics[CM_M_ACT_SAVED]].i;
	r->mem_train = v[m->metrics[CM_M_MEM_TRAIN]].i;
	r->mem_infer = v[m->metrics[CM_M_MEM_INFER]].i;
	r->mem = v[m->metrics[CM_M_MEM]].i;
	r->mem_safe = v[m->metrics[CM_M_MEM_SAFE]].i;
	r->lat_infer = v[m->metrics[CM_M_LAT_INFER]].r;
	r->lat_train = v[m->metrics[CM_M_LAT_TRAIN]].r;
	r->util = v[m->metrics[CM_M_UTIL]].r;
	r->nviolations = 0;
	if (!r->valid) {
		for (int i = 0; i < gr->ncons; i++) {
			const struct cm_constraint *c = &gr->cons[i];
			struct cm_violation *x;
			if (v[c->ok].i)
				continue;
			if (r->nviolations < 8) {
				x = &r->violations[r->nviolations];
				x->path = c->path;
				x->rule = c->text;
				x->nvals = c->nvals;
				for (int j = 0; j < c->nvals; j++) {
					x->names[j] = c->val_names[j];
					x->vals[j] = v[c->vals[j]];
					x->real[j] = c->val_real[j];
				}
			}
			r->nviolations++;
		}
	}
	breakdown(m, v, r);
}

static void
mark(uint8_t *need, expr_id e)
{
	if (e >= 0)
		need[e] = 1;
}

static void
mark_step(uint8_t *need, const struct mem_step *st)
{
	mark(need, st->total);
	mark(need, st->saved);
	mark(need, st->transient);
	mark(need, st->grads);
	mark(need, st->workspace);
}

void
cm_model_mark_read(const struct cm_model *m, uint8_t *need)
{
	const struct cm_graph *gr = &m->graph;
	const struct mem_plan *p = &m->mem;

	/* as cm_model_read: the metrics and weight sizes */
	for (int i = 0; i < CM_M_NMETRICS; i++)
		mark(need, m->metrics[i]);
	for (int i = 0; i < 3; i++)
		mark(need, m->weight_bytes[i]);
	mark(need, m->trainable);
	/* the shape rules and the values their messages show */
	for (int i = 0; i < gr->ncons; i++) {
		mark(need, gr->cons[i].ok);
		for (int j = 0; j < gr->cons[i].nvals; j++)
			mark(need, gr->cons[i].vals[j]);
	}
	/* as breakdown: the persistent parts and every step of both timelines */
	mark(need, p->weights);
	mark(need, p->buffers);
	mark(need, p->inputs);
	mark(need, p->context);
	mark(need, p->autocast_cache);
	mark(need, p->optimizer_state);
	mark(need, p->optimizer_temp);
	mark(need, p->grads_all);
	mark(need, p->opt_peak);
	mark(need, p->train_reserve);
	mark(need, p->infer_reserve);
	for (int k = 0; k < gr->nops; k++) {
		mark_step(need, &p->infer[k]);
		mark_step(need, &p->fwd[k]);
		mark_step(need, &p->bwd[k]);
	}
}

void
cm_model_op_report(const struct cm_model *m, const union expr_val *v, int k,
    struct cm_op_report *o)
{
	const struct cm_graph *gr = &m->graph;
	const struct cm_op *op = &gr->ops[k];
	const struct cm_tensor *t = &gr->tensors[op->out];

	memset(o, 0, sizeof *o);
	o->path = op->path;
	o->op = op->rule->name;
	o->present = (int)v[op->guard].i;
	o->params = v[op->params].i;
	o->macs = v[op->macs].i;
	o->out_bytes = v[m->op_out_bytes[k]].i;
	o->saved_bytes = v[m->op_saved_bytes[k]].i;
	o->rank = t->rank;
	for (int i = 0; i < t->rank && i < 6; i++)
		o->shape[i] = v[t->dim[i]].i;
	o->fwd_seconds = v[m->perf.fwd_seconds[k]].r;
	o->bwd_seconds = v[m->perf.bwd_seconds[k]].r;
	o->fwd_bytes = v[op->fwd_bytes].i;
	o->flops_other = v[op->flops_other].i;
	o->kernel_area = v[op->kernel_area].i;
	o->kernels_fwd = op->kernels_fwd;
	o->lib_calls = op->lib_calls;
	o->op_class = op->op_class;
}

int
cm_model_output_shape(const struct cm_model *m, const union expr_val *v, int64_t shape[6])
{
	const struct cm_tensor *t = &m->graph.tensors[m->graph.output];

	for (int i = 0; i < t->rank && i < 6; i++)
		shape[i] = v[t->dim[i]].i;
	return t->rank;
}
