#!/usr/bin/python3
"""Saved-activation reference for examples/models/xception.json (timm's legacy 'xception').

A sibling of gen_torch_reference.py: the same measurement (its measure_saved:
saved_tensors_hooks, each storage once, parameters and buffers excluded, the input image
included; CPU, fp32, torch.manual_seed(0), Debian's torch 1.13.1) on Xception (Chollet 2017)
written in plain torch.nn as timm's legacy xception.py (the Cadene / tstandley port) builds it:
stem conv3x3/2 + conv3x3 (no padding) with BN and in-place ReLU; residual Blocks of separable
convs (depthwise 3x3 + pointwise 1x1, no bias) with BN, whose first ReLU is out of place
(rep[0] = nn.ReLU(inplace=False)) and the others in place, a stride-2 max pool and a 1x1
conv + BN shortcut where the shape changes, `x += skip` in place; entry flow 64->128->256->728,
middle_blocks Blocks at 728 (timm: 8), exit Block 728->1024 (grow_first=False), separable convs
to 1536 and 2048 with BN and ReLU, global average pool, fc to 1000 classes.

Why: the middle flow's Block input is read by an out-of-place ReLU (which keeps its output) and
by the residual add (which keeps nothing), so autograd keeps none of the middle Blocks' inputs
except the last one, which the exit Block's shortcut conv keeps. dnnsat kept every middle
Block's output before cost model 1.3.3 (test_saved_activations_xception in
tests/unit/test_costs.c; docs/accuracy.md).

Rerun (from the repository root; about half a minute):
    /usr/bin/python3 tests/reference/gen_torch_reference_xception.py
It writes torch_reference_xception.csv next to this script and prints it.
"""

import csv
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_torch_reference as ref  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RESOLUTION = 224           # GPUMemNet's Xception rows (tests/reference/gpumemnet_cnn_a100_measured.csv)
CASES = [  # middle_blocks, batch
    (8, 1),
    (8, 2),
    (2, 1),
    (0, 1),
]


class SeparableConv2d(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cin, 3, 1, 1, groups=cin, bias=False)
        self.pointwise = nn.Conv2d(cin, cout, 1, bias=False)

    def forward(self, x):
        return self.pointwise(self.conv1(x))


class Block(nn.Module):
    def __init__(self, cin, cout, reps, strides=1, start_with_relu=True, grow_first=True):
        super().__init__()
        if cout != cin or strides != 1:
            self.skip = nn.Conv2d(cin, cout, 1, stride=strides, bias=False)
            self.skipbn = nn.BatchNorm2d(cout)
        else:
            self.skip = None
        rep = []
        for i in range(reps):
            if grow_first:
                inc, outc = (cin if i == 0 else cout), cout
            else:
                inc, outc = cin, (cin if i < reps - 1 else cout)
            rep += [nn.ReLU(inplace=True), SeparableConv2d(inc, outc), nn.BatchNorm2d(outc)]
        if not start_with_relu:
            rep = rep[1:]
        else:
            rep[0] = nn.ReLU(inplace=False)
        if strides != 1:
            rep.append(nn.MaxPool2d(3, strides, 1))
        self.rep = nn.Sequential(*rep)

    def forward(self, inp):
        x = self.rep(inp)
        skip = self.skipbn(self.skip(inp)) if self.skip is not None else inp
        x += skip
        return x


class Xception(nn.Module):
    def __init__(self, middle_blocks=8, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, 2, 0, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.act1 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(32, 64, 3, bias=False)
        self.bn2 = nn.BatchNorm2d(64)
        self.act2 = nn.ReLU(inplace=True)
        self.block1 = Block(64, 128, 2, 2, start_with_relu=False)
        self.block2 = Block(128, 256, 2, 2)
        self.block3 = Block(256, 728, 2, 2)
        self.middle = nn.Sequential(*[Block(728, 728, 3, 1) for _ in range(middle_blocks)])
        self.block12 = Block(728, 1024, 2, 2, grow_first=False)
        self.conv3 = SeparableConv2d(1024, 1536)
        self.bn3 = nn.BatchNorm2d(1536)
        self.act3 = nn.ReLU(inplace=True)
        self.conv4 = SeparableConv2d(1536, 2048)
        self.bn4 = nn.BatchNorm2d(2048)
        self.act4 = nn.ReLU(inplace=True)
        self.fc = nn.Linear(2048, num_classes)

    def forward(self, x):
        x = self.act1(self.bn1(self.conv1(x)))
        x = self.act2(self.bn2(self.conv2(x)))
        x = self.block3(self.block2(self.block1(x)))
        x = self.block12(self.middle(x))
        x = self.act3(self.bn3(self.conv3(x)))
        x = self.act4(self.bn4(self.conv4(x)))
        x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


def main():
    torch.set_num_threads(2)
    cols = ["model", "middle_blocks", "batch", "resolution", "params", "saved_activation_bytes",
            "saved_input_bytes"]
    rows = []
    for middle, batch in CASES:
        torch.manual_seed(0)
        m = Xception(middle)
        res = ref.measure_saved(m, torch.randn(batch, 3, RESOLUTION, RESOLUTION), False)
        rows.append({"model": "xception", "middle_blocks": middle, "batch": batch, "resolution": RESOLUTION,
                     "params": sum(p.numel() for p in m.parameters()),
                     "saved_activation_bytes": res["saved_activation_bytes"],
                     "saved_input_bytes": res["saved_input_bytes"]})
    with open(os.path.join(HERE, "torch_reference_xception.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    w = csv.DictWriter(sys.stdout, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)


if __name__ == "__main__":
    main()
