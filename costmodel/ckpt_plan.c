/*
 * ckpt_plan.c - which operators form checkpointed blocks and which kept
 * activations they recompute (see ckpt_plan.h). Blocks are read from the
 * operators' instance paths: "$.layers[A][i]" is iteration i of the repeat
 * at top-level item A; each such prefix, contiguous in execution order, is
 * one block.
 */
#include "ckpt_plan.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Parses "$.layers[A][i]" at the start of `path`: 1 and the two numbers,
 * or 0 when the operator is not inside a top-level repeat. */
static int
block_key(const char *path, long *a, long *i)
{
	static const char pre[] = "$.layers[";
	char *end;

	if (strncmp(path, pre, sizeof pre - 1) != 0)
		return 0;
	*a = strtol(path + sizeof pre - 1, &end, 10);
	if (end[0] != ']' || end[1] != '[')
		return 0;
	*i = strtol(end + 2, &end, 10);
	return end[0] == ']';
}

int
ckpt_plan_mark(struct cm_graph *m)
{
	long pa = -1, pi = -1;
	int nblocks = 0;

	for (int k = 0; k < m->nops; k++) {
		long a, i;
		struct cm_op *op = &m->ops[k];
		if (!block_key(op->path, &a, &i)) {
			op->ckpt = 0;
			pa = pi = -1;
			continue;
		}
		if (a != pa || i != pi)
			nblocks++;
		pa = a;
		pi = i;
		op->ckpt = nblocks;
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
