#!/usr/bin/python3
"""The 3-d operators against PyTorch, measured on the CPU: the r3d template (3-D convolutions,
3-D batch norm and adaptive 3-D pooling) as torchvision.models.video.r3d_18 (torchvision 0.14,
weights=None, 400 classes), and tests/data/models/pool3d_net.json (max and average 3-D pooling with
ceil_mode and padding) as Pool3dNet below.

Columns:
  params                  sum of p.numel() (torchvision's published num_params: 33,371,472)
  macs_batch1             forward multiply-accumulates of one clip, by forward hooks: Conv3d
                          out.numel() * (Cin / groups) * kd * kh * kw, Linear in * out per row
  saved_activation_bytes  what autograd keeps for backward in one train-mode forward
                          (gen_torch_reference.measure_saved: saved_tensors_hooks, each storage
                          once, parameters and buffers left out, the input clip included)

at the clip sizes below (batch, frames, resolution; odd sizes for pool3d_net, where ceil_mode
and the padding decide the output). Rerun (from the repository root; about a
minute on two cores, under 3 GiB of RAM):
    /usr/bin/python3 tests/reference/gen_torch_reference_video.py
It writes tests/reference/torch_reference_video.csv next to this script.
"""

import collections
import os
import sys

import torch
import torch.nn as nn
from torchvision.models.video import r3d_18

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_torch_reference as ref  # noqa: E402
import gen_torch_reference_llm as llm  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = [(1, 8, 112), (2, 16, 112), (1, 16, 128)]
POOL_SIZES = [(2, 8, 32), (3, 7, 29)]


class Pool3dNet(nn.Module):
    """tests/data/models/pool3d_net.json in PyTorch."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv3d(3, 8, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool3d((1, 2, 2)),
            nn.Conv3d(8, 16, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool3d(2, 2, ceil_mode=True),
            nn.AvgPool3d((2, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1)), nn.Conv3d(16, 32, 1),
            nn.AdaptiveAvgPool3d(1))
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))
COLS = ["model", "batch", "frames", "resolution", "params", "macs_batch1", "saved_activation_bytes"]


def count_macs(model, clip):
    by = collections.Counter()

    def conv_hook(m, i, o):
        by["conv3d"] += o.numel() * (m.in_channels // m.groups) * m.kernel_size[0] * m.kernel_size[1] * \
            m.kernel_size[2]

    def lin_hook(m, i, o):
        by["linear"] += o.numel() // m.out_features * m.in_features * m.out_features

    hs = [m.register_forward_hook(conv_hook) for m in model.modules() if isinstance(m, nn.Conv3d)]
    hs += [m.register_forward_hook(lin_hook) for m in model.modules() if isinstance(m, nn.Linear)]
    model.eval()
    with torch.no_grad():
        model(clip)
    for h in hs:
        h.remove()
    return sum(by.values())


def measure(name, make, batch, frames, res):
    """One row: the model make() builds, at a clip of that size."""
    torch.manual_seed(0)
    m = make()
    params = sum(p.numel() for p in m.parameters())
    macs = count_macs(m, torch.randn(1, 3, frames, res, res))
    saved = ref.measure_saved(m, torch.randn(batch, 3, frames, res, res), False)["saved_activation_bytes"]
    ref.log("%s batch %d frames %d resolution %d: params %d, MACs %d, saved %d" % (name, batch, frames, res, params,
                                                                                  macs, saved))
    return dict(model=name, batch=batch, frames=frames, resolution=res, params=params, macs_batch1=macs,
                saved_activation_bytes=saved)


def main():
    torch.set_num_threads(2)
    rows = [measure("r3d_18", lambda: r3d_18(weights=None, num_classes=400), *size) for size in SIZES]
    rows += [measure("pool3d_net", Pool3dNet, *size) for size in POOL_SIZES]
    llm.write_csv(os.path.join(HERE, "torch_reference_video.csv"), COLS, rows)


if __name__ == "__main__":
    main()
