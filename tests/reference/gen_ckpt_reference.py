#!/usr/bin/python3
"""Record, from real PyTorch (CPU), what gradient checkpointing of every residual block keeps
for backward in torchvision's ResNets and MobileNetV2: the reference for dnnsat's
`--checkpointing` on the resnet and mobilenet_v2 templates (which mark each residual block
"checkpoint": true; costmodel/ckpt_plan.h, docs/training-techniques.md).

Checkpointing here is what a PyTorch user writes for a CNN (and what timm's
set_grad_checkpointing() does to a ResNet's stages): every child of torchvision's
layer1..layer4 (a BasicBlock or Bottleneck), or every InvertedResidual of MobileNetV2's
features[1..17], runs inside torch.utils.checkpoint.checkpoint. The stem, the head and
MobileNetV2's last 1x1 conv stay outside. torch 1.13's default, the reentrant checkpoint, is
used: it runs the block's forward under no_grad and saves the block's input tensors with
save_for_backward, so the hooks below see exactly what the checkpoint keeps.

What it measures, per model, batch and mode (plain, checkpointed):
  saved_activation_bytes  bytes of the tensors autograd saves for backward during one
                          train-mode forward pass, with gen_torch_reference.py's
                          measure_saved (torch.autograd.graph.saved_tensors_hooks; each storage
                          once; parameters and buffers excluded; the model input included,
                          also alone as saved_input_bytes). No loss.
  blocks                  the checkpointed blocks (0 in plain mode).
  grads_ok                1 when a backward of the checkpointed model's output sum gives every
                          parameter a gradient equal (within 1e-4 relative, max norm) to the
                          plain model's: the checkpointed run is a real training step.

How: CPU, torch.set_num_threads(2), torch.manual_seed(0), fp32, weights=None, inputs 3x224x224
at batch 2 and 8. About a minute on two cores.

Rerun (from the repository root), with Debian's python3-torch 1.13.1 and
python3-torchvision 0.14.1:
    /usr/bin/python3 tests/reference/gen_ckpt_reference.py > tests/reference/torch_reference_ckpt.csv
tests/unit/test_costs.c (test_saved_activations_checkpointed) checks dnnsat's kept bytes against it.
"""

import copy
import csv
import os
import sys

import torch
import torch.nn as nn
import torch.utils.checkpoint
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gen_torch_reference import measure_saved  # noqa: E402  (the same counting as torch_reference.csv)

MODELS = ("resnet18", "resnet50", "mobilenet_v2")
BATCHES = (2, 8)


class Checkpointed(nn.Module):
    """A block run inside torch.utils.checkpoint.checkpoint (reentrant, torch 1.13's default)."""

    def __init__(self, block):
        super().__init__()
        self.block = block

    def forward(self, x):
        return torch.utils.checkpoint.checkpoint(self.block, x)


def checkpoint_blocks(name, model):
    """Wraps every residual block of `model` in Checkpointed; returns how many."""
    n = 0
    if name.startswith("resnet"):
        for stage in (model.layer1, model.layer2, model.layer3, model.layer4):
            for i in range(len(stage)):
                stage[i] = Checkpointed(stage[i])
                n += 1
    else:
        feats = model.features
        for i in range(len(feats)):
            if isinstance(feats[i], torchvision.models.mobilenetv2.InvertedResidual):
                feats[i] = Checkpointed(feats[i])
                n += 1
    return n


def grads(model, x):
    """Every parameter's gradient, in registration order (the wrapper renames them)."""
    model.zero_grad(set_to_none=True)
    torch.manual_seed(1)        # the same dropout masks (MobileNetV2's classifier) in both runs
    model(x).sum().backward()
    return [None if p.grad is None else p.grad.clone() for p in model.parameters()]


def same_grads(a, b):
    if len(a) != len(b):
        return False
    for ga, gb in zip(a, b):
        if ga is None or gb is None:
            return False
        scale = max(float(ga.abs().max()), 1e-12)
        if float((ga - gb).abs().max()) > 1e-4 * scale:
            return False
    return True


def main():
    torch.set_num_threads(2)
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["model", "batch", "resolution", "checkpointing", "blocks", "saved_activation_bytes",
                  "saved_input_bytes", "grads_ok"])
    for name in MODELS:
        torch.manual_seed(0)
        plain = getattr(torchvision.models, name)(weights=None)
        ckpt = copy.deepcopy(plain)
        nblocks = checkpoint_blocks(name, ckpt)
        # batch norm's running statistics would drift apart between the two runs' forwards:
        # compare gradients from identical copies in train mode at batch 2
        x = torch.randn(2, 3, 224, 224)
        g0 = grads(copy.deepcopy(plain).train(), x)
        g1 = grads(copy.deepcopy(ckpt).train(), x)
        ok = int(same_grads(g0, g1))
        print(f"{name}: {nblocks} blocks, gradients {'equal' if ok else 'DIFFER'}", file=sys.stderr)
        for batch in BATCHES:
            x = torch.randn(batch, 3, 224, 224)
            for mode, model, blocks in ((0, plain, 0), (1, ckpt, nblocks)):
                r = measure_saved(copy.deepcopy(model), x, False)
                out.writerow([name, batch, 224, mode, blocks, r["saved_activation_bytes"], r["saved_input_bytes"],
                              ok if mode else 1])
                print(f"  batch {batch} {'checkpointed' if mode else 'plain'}: "
                      f"{r['saved_activation_bytes']} bytes", file=sys.stderr)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
