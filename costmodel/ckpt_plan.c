/*
 * ckpt_plan.c - which operators form checkpointed blocks and which kept
 * activations they recompute (see ckpt_plan.h). Blocks are the builder's
 * checkpoint segments (cm_op.ckpt_seg): each run of one segment number,
 * contiguous in execution order, is one block.
 */
#include "ckpt_plan.h"

#include <limits.h>

int
ckpt_plan_mark(struct cm_graph *m)
{
	int prev = 0, nblocks = 0;

	for (int k = 0; k < m->nops; k++) {
		struct cm_op *op = &m->ops[k];
		if (op->ckpt_seg != 0 && op->ckpt_seg != prev)
			nblocks++;
		prev = op->ckpt_seg;
		op->ckpt = op->ckpt_seg != 0 ? nblocks : 0;
	}
	/* each block's last operator, walking back */
	for (int k = m->nops - 1, last = -1, cur = 0; k >= 0; k--) {
		if (m->ops[k].ckpt != cur) {
			cur = m->ops[k].ckpt;
			last = k;
		}
		m->ops[k].ckpt_last = cur ? last : -1;
	}
	for (int s = 0; s < m->nstorages; s++) {
		struct cm_storage *st = &m->storages[s];
		int b;
		st->recompute = 0;
		if (st->producer < 0 || st->producer >= m->nops || st->first_saver == INT_MAX ||
		    st->first_saver >= m->nops || st->last_use < 0 || st->last_use >= m->nops)
			continue;
		b = m->ops[st->producer].ckpt;
		st->recompute = b != 0 && m->ops[st->first_saver].ckpt == b && m->ops[st->last_use].ckpt == b;
	}
	return nblocks;
}

expr_id
ckpt_plan_on(struct expr_graph *g, const struct cm_workload *wl)
{
	if (!wl->training)
		return expr_int(g, 0);
	if (wl->ckpt_hp > 0 && wl->ckpt_on < 0)
		return expr_int(g, 0);
	if (wl->ckpt_hp > 0)
		return expr_eq(g, expr_var(g, wl->ckpt_hp - 1), expr_int(g, wl->ckpt_on));
	return expr_int(g, wl->checkpointing != 0);
}
