/*
 * ckpt_plan.h - gradient (activation) checkpointing per block, as Hugging
 * Face's gradient_checkpointing_enable() applies torch.utils.checkpoint to
 * every transformer layer (private to costmodel/).
 *
 * A block is one iteration of a top-level repeat of the model ("layers":
 * [..., {"repeat": n, "body": [...]}]: operator paths "$.layers[A][i]...").
 * Inside a checkpointed block, autograd keeps nothing during the forward:
 * a storage made in the block, kept by an operator of the block and last
 * used in it is marked `recompute`; it is freed when it dies in the
 * forward and made again when the backward reaches the block (the block's
 * forward runs again). What a block reads from outside (its input, kept by
 * the checkpoint) stays kept.
 */
#ifndef DN_CKPT_PLAN_H
#define DN_CKPT_PLAN_H

#include "model_graph.h"

/* Sets ops[k].ckpt (block number + 1, 0 outside blocks), ops[k].ckpt_last
 * (the block's last operator) and storages[s].recompute. Returns the
 * number of blocks. */
int ckpt_plan_mark(struct cm_graph *m);

#endif
