/*
 * perf_model.h - latency and GPU utilization expressions of a built model
 * on a device (perf_model.c; private to costmodel/).
 */
#ifndef DN_PERF_MODEL_H
#define DN_PERF_MODEL_H

#include <stdlib.h>

#include "mem_plan.h"

struct perf_plan {
	expr_id infer_seconds, train_seconds;
	expr_id infer_util, train_util;
	expr_id *fwd_seconds, *bwd_seconds;     /* per op */
};

int perf_build(struct cm_graph *m, const struct cm_workload *wl, const struct cm_device *dev,
    const struct mem_plan *plan, struct perf_plan *out, struct dn_error *err);
void perf_plan_free(struct perf_plan *p);

#endif
