/*
 * mem_plan.h - peak GPU memory of a training step and of inference, in the
 * manner of DNNMem: walk the operators in execution order (forward, then
 * backward in reverse, then the optimizer step), track which tensors are
 * alive, round every allocation as the framework's allocator does, and add
 * the fixed costs (private to costmodel/).
 *
 * Everything is an expression over the hyperparameters; the per-step
 * components are kept so that the breakdown at the peak can be reported.
 */
#ifndef DN_MEM_PLAN_H
#define DN_MEM_PLAN_H

#include "model_graph.h"

/* Constants of a framework's memory behaviour (mem_profile.c). */
struct mem_profile {
	const char *name;
	int64_t round_bytes;            /* every allocation rounded up to this */
	int64_t small_limit;            /* allocations up to this share small segments */
	int64_t large_round;            /* large segments rounded up to this */
	int64_t context_bytes;          /* CUDA context + kernels + library handles */
	double reserve_fraction;        /* cached-but-free share of the peak (fragmentation) */
};

const struct mem_profile *mem_profile_pytorch(void);

struct mem_step {
	expr_id saved;          /* activations kept for backward */
	expr_id transient;      /* outputs in flight (forward) or gradients in flight (backward) */
	expr_id grads;          /* weight gradients allocated so far (backward) */
	expr_id workspace;
	expr_id total;
};

struct mem_plan {
	/* persistent */
	expr_id weights, buffers, optimizer_state, grads_all, inputs, autocast_cache;
	expr_id optimizer_temp;
	/* per step: forward and backward, nops each */
	struct mem_step *fwd, *bwd, *infer;
	int nsteps;
	expr_id fwd_peak, bwd_peak, opt_peak, infer_peak;
	expr_id train_peak;     /* allocated, before reserve and context */
	expr_id train_total;    /* device level: + reserve + context */
	expr_id infer_total;
	expr_id train_reserve, infer_reserve, context;
	expr_id train_reserved_dyn; /* max(allocated peak, cached at backward) */
	expr_id saved_bytes;    /* all activation storages kept for backward */
};

/* Builds the plan's expressions into m->g. Returns 0 or -1 (out of memory,
 * with err set). The plan's arrays are freed by mem_plan_free. */
int mem_plan_build(struct cm_graph *m, const struct cm_workload *wl,
    const struct mem_profile *prof, struct mem_plan *plan, struct dn_error *err);
void mem_plan_free(struct mem_plan *plan);

#endif
