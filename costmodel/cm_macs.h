/*
 * cm_macs.h - one operator's MACs under a counting convention (private to
 * costmodel/: costmodel.c sums them into the "macs" metric).
 */
#ifndef DN_CM_MACS_H
#define DN_CM_MACS_H

#include "costmodel.h"
#include "model_graph.h"

/* The MACs `op` counts for under convention `c` (enum cm_macs_convention),
 * without its guard; `training` says whether the model runs in training mode
 * (fvcore counts a batch norm differently then). Never fails: an expression
 * of the graph (EXPR_NONE only when the graph is out of memory, which the
 * graph's own error records). */
expr_id cm_macs_op(struct cm_graph *gr, const struct cm_op *op, int c, int training);

#endif
