#!/usr/bin/python3
"""Write tests/data/onnx/torch_pad.onnx and torch_pad.json: explicit padding as PyTorch exports it.

A small CNN whose uneven paddings are written in PyTorch, nn.ZeroPad2d and F.pad before
convolutions of padding 0 (what a port of TensorFlow "same" padding does, as cuDNN pads
evenly only):

    ZeroPad2d((1, 2, 0, 1)), Conv2d(3, 8, 3), ReLU,
    F.pad(x, (0, 1, 0, 1)), Conv2d(8, 16, 3, stride=2), ReLU,
    AdaptiveAvgPool2d(1), flatten, Linear(16, 10)

exported by torch 1.13 in training mode at opset 13 with the batch, height and width dynamic
("batch", "h", "w"). From opset 11 torch writes each pad as a Pad node whose pads input is
computed: the F.pad list concatenated with zeros, reshaped to [-1, 2], its rows reversed by a
Slice of step -1, transposed and flattened (symbolic_opset11.pad), which `dnnsat import`
follows (import/onnx_op_sym2.c). torch_pad.json holds PyTorch's parameter count, forward MACs
at batch 1, 16x16 (gen_torch_reference.count_macs) and the bytes autograd saves at batch 2,
16x16 and batch 8, 17x15 (gen_torch_reference.measure_saved):

    /usr/bin/python3 tests/data/onnx/gen_torch_pad.py [OUTDIR]
"""
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "reference"))
import gen_torch_reference as ref  # noqa: E402


class PadCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.pad = nn.ZeroPad2d((1, 2, 0, 1))
        self.c1, self.c2 = nn.Conv2d(3, 8, 3), nn.Conv2d(8, 16, 3, stride=2)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.c1(self.pad(x)))
        x = F.relu(self.c2(F.pad(x, (0, 1, 0, 1))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def export_image_model(m, name, out, sizes):
    """Exports m (in training mode, 3 input channels) to OUT/NAME.onnx from a 1x3x16x16 input at
    opset 13 with the batch, height and width dynamic, and writes OUT/NAME.json: its parameter
    count, its forward MACs at batch 1, 16x16 and the bytes autograd saves at each (batch, h, w) of
    sizes. gen_torch_unet.py uses it too."""
    m.train()
    torch.onnx.export(m, torch.randn(1, 3, 16, 16), os.path.join(out, name + ".onnx"), input_names=["x"],
                      dynamic_axes={"x": {0: "batch", 2: "h", 3: "w"}}, opset_version=13,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    macs, by = ref.count_macs(m, torch.randn(1, 3, 16, 16))
    res = dict(params=sum(p.numel() for p in m.parameters()), macs=macs, macs_ops=by, saved=[])
    for batch, h, w in sizes:
        torch.manual_seed(1)
        got = ref.measure_saved(m, torch.randn(batch, 3, h, w), False)
        res["saved"].append(dict(batch=batch, h=h, w=w, bytes=got["saved_activation_bytes"]))
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
        f.write("\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    torch.manual_seed(0)
    export_image_model(PadCNN(), "torch_pad", out, ((2, 16, 16), (8, 17, 15)))


if __name__ == "__main__":
    main()
