/*
 * ckpt_plan.h - gradient (activation) checkpointing per block, as Hugging
 * Face's gradient_checkpointing_enable() applies torch.utils.checkpoint to
 * every transformer layer and timm's set_grad_checkpointing() to every
 * residual block (private to costmodel/).
 *
 * A block is one checkpoint segment the model builder marked
 * (cm_op.ckpt_seg, model_build.c): an iteration of a top-level repeat of
 * the model ("layers": [..., {"repeat": n, "body": [...]}]) unless it says
 * "checkpoint": false, or a layer item anywhere that says "checkpoint": true
 * (a repeat: each iteration), the outermost where they nest (the ResNet and
 * MobileNetV2 templates mark each residual block). Inside a checkpointed
 * block, autograd keeps nothing during the forward: a storage made in the
 * block, kept by an operator of the block and last used in it is marked
 * `recompute`; it is freed when it dies in the forward and made again when
 * the backward reaches the block (the block's forward runs again). What a
 * block reads from outside (its input, kept by the checkpoint) stays kept.
 */
#ifndef DN_CKPT_PLAN_H
#define DN_CKPT_PLAN_H

#include "model_graph.h"

/* Sets ops[k].ckpt (block number + 1, 0 outside blocks), ops[k].ckpt_last
 * (the block's last operator) and storages[s].recompute. Returns the
 * number of blocks (0: the model has none, and checkpointing changes
 * nothing). */
int ckpt_plan_mark(struct cm_graph *m);

/* Whether a training workload checkpoints, as an expression of the
 * configuration: the constant 1 (wl->checkpointing) or 0, or, where a
 * space searches it (wl->ckpt_hp), hyperparameter ckpt_hp - 1 == ckpt_on.
 * 0 for inference. */
expr_id ckpt_plan_on(struct expr_graph *g, const struct cm_workload *wl);

#endif
