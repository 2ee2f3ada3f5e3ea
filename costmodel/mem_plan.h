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
	int64_t context_bytes;          /* CUDA context + kernels (expected) */
	int64_t context_upper_bytes;    /* its upper bound (the safe estimate) */
	int64_t library_bytes;          /* library workspaces the allocator holds (cuBLAS) */
	double reserve_fraction;        /* cached-but-free share of the peak (fragmentation) */
};

/* PyTorch's allocator constants with the context and library figures of
 * `dev` (its catalog entry's, else those of its compute capability;
 * mem_profile.c states each figure's source). */
void mem_profile_pytorch(const struct cm_device *dev, struct mem_profile *out);

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
	/* the safe (upper) estimate, see mem_plan.c */
	expr_id ws_safe;        /* the largest forward workspace plus the largest
	                         * backward one, each at its bound (op ws_bound) */
	expr_id grad_flight_max; /* largest set of activation gradients in flight */
	expr_id context_upper;  /* context upper bound + library workspaces */
	expr_id train_safe, infer_safe;
};

/* Builds the plan's expressions into m->g. Returns 0 or -1 (out of memory,
 * with err set). The plan's arrays are freed by mem_plan_free. */
int mem_plan_build(struct cm_graph *m, const struct cm_workload *wl,
    const struct mem_profile *prof, struct mem_plan *plan, struct dn_error *err);
void mem_plan_free(struct mem_plan *plan);

#endif
