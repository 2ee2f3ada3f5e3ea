#!/usr/bin/python3
"""Saved-activation references for models whose repeat counts and choices decide what autograd
keeps: examples/models/xception.json (timm's legacy 'xception') and the nb201 template.

A sibling of gen_torch_reference.py: the same measurement (its measure_saved:
saved_tensors_hooks, each storage once, parameters and buffers excluded, the input image
included; CPU, fp32, torch.manual_seed(0), Debian's torch 1.13.1) on two families.

xception   Xception (Chollet 2017)
written in plain torch.nn as timm's legacy xception.py (the Cadene / tstandley port) builds it:
stem conv3x3/2 + conv3x3 (no padding) with BN and in-place ReLU; residual Blocks of separable
convs (depthwise 3x3 + pointwise 1x1, no bias) with BN, whose first ReLU is out of place
(rep[0] = nn.ReLU(inplace=False)) and the others in place, a stride-2 max pool and a 1x1
conv + BN shortcut where the shape changes, `x += skip` in place; entry flow 64->128->256->728,
middle_blocks Blocks at 728 (timm: 8), exit Block 728->1024 (grow_first=False), separable convs
to 1536 and 2048 with BN and ReLU, global average pool, fc to 1000 classes.
nb201      a NAS-Bench-201 network as the benchmark's code builds it (Dong & Yang 2020,
           xautodl TinyNetwork / InferCell): stem conv3x3 + BN; three stages of cells_per_stage
           cells (C, 2C, 4C channels) joined by ResNetBasicblock reductions (ReLUConvBN 3x3
           stride 2, ReLUConvBN 3x3, shortcut AvgPool2d(2) + conv1x1, added); lastact BN +
           ReLU, global average pool, linear. A cell's node j sums op(node i) over i < j; ops:
           none (x.mul(0.)), skip_connect (identity), nor_conv_1x1 / nor_conv_3x3 (ReLU out of
           place, conv without bias, BN), avg_pool_3x3 (AvgPool2d(3, 1, 1,
           count_include_pad=False)). CIFAR-10 input, 32 x 32.

Why: Xception's middle Block input is read by an out-of-place ReLU (which keeps its output) and
by the residual add (which keeps nothing), so autograd keeps none of the middle Blocks' inputs
except the last one, which the exit Block's shortcut conv keeps; likewise a NAS-Bench-201
cell's input when its edges are convolutions, of which only the last cell's is kept (by the
reduction's shortcut pool or the final BN). dnnsat kept every repeat's output before cost
model 1.3.3 (test_saved_activations_choices in tests/unit/test_costs.c; docs/accuracy.md).

Rerun (from the repository root; about half a minute):
    /usr/bin/python3 tests/reference/gen_torch_reference_choices.py
It writes torch_reference_choices.csv next to this script and prints it: per row the model,
dnnsat's source (a model file, or preset:NAME), the hyperparameters set (NAME=VALUE ...), the
parameters and the saved bytes.
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
XCEPTION_CASES = [  # middle_blocks, batch
    (8, 1),
    (8, 2),
    (2, 1),
    (0, 1),
]
NB201_C, NB201_CLASSES, NB201_RES = 16, 10, 32    # the template's cifar10 preset
NB201_CASES = [  # cells_per_stage, edges 0-5, batch
    (5, ["nor_conv_3x3"] * 6, 2),
    (1, ["nor_conv_3x3"] * 6, 2),
    (5, ["skip_connect", "nor_conv_1x1", "avg_pool_3x3", "none", "nor_conv_3x3", "skip_connect"], 2),
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


class ReLUConvBN(nn.Module):
    def __init__(self, cin, cout, k, stride):
        super().__init__()
        self.op = nn.Sequential(nn.ReLU(inplace=False), nn.Conv2d(cin, cout, k, stride, k // 2, bias=False),
                                nn.BatchNorm2d(cout))

    def forward(self, x):
        return self.op(x)


class Zero(nn.Module):
    def forward(self, x):
        return x.mul(0.0)


def nb201_op(name, c):
    return {"none": Zero, "skip_connect": nn.Identity,
            "nor_conv_1x1": lambda: ReLUConvBN(c, c, 1, 1), "nor_conv_3x3": lambda: ReLUConvBN(c, c, 3, 1),
            "avg_pool_3x3": lambda: nn.AvgPool2d(3, 1, 1, count_include_pad=False)}[name]()


class InferCell(nn.Module):
    """node j = sum over i < j of edge(i -> j)(node i); edges in the arch string's order:
    1<-0, 2<-0, 2<-1, 3<-0, 3<-1, 3<-2"""

    def __init__(self, c, edges):
        super().__init__()
        self.ops = nn.ModuleList([nb201_op(e, c) for e in edges])

    def forward(self, x):
        n1 = self.ops[0](x)
        n2 = self.ops[1](x) + self.ops[2](n1)
        return self.ops[3](x) + self.ops[4](n1) + self.ops[5](n2)


class ResNetBasicblock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv_a = ReLUConvBN(cin, cout, 3, 2)
        self.conv_b = ReLUConvBN(cout, cout, 3, 1)
        self.downsample = nn.Sequential(nn.AvgPool2d(2, 2, 0), nn.Conv2d(cin, cout, 1, 1, 0, bias=False))

    def forward(self, x):
        return self.downsample(x) + self.conv_b(self.conv_a(x))


class TinyNetwork(nn.Module):
    def __init__(self, c, n, edges, num_classes):
        super().__init__()
        layers = [nn.Conv2d(3, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)]
        for stage in range(3):
            if stage:
                layers.append(ResNetBasicblock(c, 2 * c))
                c *= 2
            layers += [InferCell(c, edges) for _ in range(n)]
        self.cells = nn.Sequential(*layers)
        self.lastact = nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(inplace=True))
        self.classifier = nn.Linear(c, num_classes)

    def forward(self, x):
        x = self.lastact(self.cells(x))
        return self.classifier(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def row(name, source, config, model, inp):
    torch.manual_seed(0)
    res = ref.measure_saved(model, inp, False)
    return {"model": name, "source": source, "config": " ".join("%s=%s" % kv for kv in config),
            "params": sum(p.numel() for p in model.parameters()),
            "saved_activation_bytes": res["saved_activation_bytes"], "saved_input_bytes": res["saved_input_bytes"]}


def main():
    torch.set_num_threads(2)
    cols = ["model", "source", "config", "params", "saved_activation_bytes", "saved_input_bytes"]
    rows = []
    for middle, batch in XCEPTION_CASES:
        torch.manual_seed(0)
        m = Xception(middle)
        rows.append(row("xception", "examples/models/xception.json",
                        [("middle_blocks", middle), ("batch_size", batch), ("resolution", RESOLUTION)],
                        m, torch.randn(batch, 3, RESOLUTION, RESOLUTION)))
    for cells, edges, batch in NB201_CASES:
        torch.manual_seed(0)
        m = TinyNetwork(NB201_C, cells, edges, NB201_CLASSES)
        rows.append(row("nb201", "preset:cifar10", [("cells_per_stage", cells), ("batch_size", batch)] +
                        [("edge%d" % i, e) for i, e in enumerate(edges)],
                        m, torch.randn(batch, 3, NB201_RES, NB201_RES)))
    with open(os.path.join(HERE, "torch_reference_choices.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    w = csv.DictWriter(sys.stdout, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)


if __name__ == "__main__":
    main()
