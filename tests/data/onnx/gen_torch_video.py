#!/usr/bin/python3
"""Write tests/data/onnx/torch_video.onnx and torch_video.json: 3-D convolution and pooling as
PyTorch exports them.

A small video classifier in torchvision's r3d_18 style, with the 3-D pooling r3d leaves out:

    stem  Conv3d(3, 8, (3, 7, 7), stride=(1, 2, 2), padding=(1, 3, 3)), BatchNorm3d, ReLU
          (torchvision's BasicStem: a kernel, stride and padding that differ by axis)
    MaxPool3d(2, ceil_mode=True)
    block Conv3d(8, 8, 3, padding=1), BatchNorm3d, ReLU, Conv3d(8, 8, 3, padding=1), BatchNorm3d,
          plus the block's input, ReLU                          (torchvision's BasicBlock)
    block Conv3d(8, 16, 3, stride=2, padding=1) ..., its shortcut Conv3d(8, 16, 1, stride=2),
          BatchNorm3d                                           (the downsampling BasicBlock)
    AvgPool3d((2, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1), count_include_pad=False)
    Conv3d(16, 16, 3, padding=1, dilation=(1, 2, 2)), ReLU
    AdaptiveAvgPool3d(1) and AdaptiveMaxPool3d(1) concatenated (a "concat pooling" head), flatten,
    Linear(32, 10)

exported by torch 1.13 in training mode at opset 13 with the batch, frames, height and width
dynamic ("batch", "t", "h", "w"). torch_video.json holds PyTorch's parameter count, forward MACs
at batch 1, 8 frames of 32x32 (gen_torch_reference_video.count_macs: Conv3d and Linear) and the
bytes autograd saves (gen_torch_reference.measure_saved) at three clip sizes, odd ones among
them (where ceil_mode and the padding decide the sizes):

    /usr/bin/python3 tests/data/onnx/gen_torch_video.py [OUTDIR]
"""
import json
import os
import sys

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "reference"))
import gen_torch_reference as ref  # noqa: E402
import gen_torch_reference_video as video  # noqa: E402

MACS_CLIP = (1, 8, 32, 32)
SAVED_CLIPS = ((2, 8, 32, 32), (3, 7, 29, 31), (1, 5, 17, 24))


def bn_conv(cin, cout, k=3, stride=1, padding=1, dilation=1):
    return [nn.Conv3d(cin, cout, k, stride=stride, padding=padding, dilation=dilation, bias=False),
            nn.BatchNorm3d(cout)]


class Block(nn.Module):
    """torchvision's r3d BasicBlock (Conv3DSimple), with its downsampling shortcut at stride 2."""

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.body = nn.Sequential(*bn_conv(cin, cout, stride=stride), nn.ReLU(inplace=True), *bn_conv(cout, cout))
        self.short = nn.Sequential(*bn_conv(cin, cout, 1, stride, 0)) if stride != 1 or cin != cout else None
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(self.body(x) + (x if self.short is None else self.short(x)))


class TinyVideoNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(*bn_conv(3, 8, (3, 7, 7), (1, 2, 2), (1, 3, 3)), nn.ReLU(inplace=True))
        self.pool = nn.MaxPool3d(2, ceil_mode=True)
        self.blocks = nn.Sequential(Block(8, 8), Block(8, 16, 2))
        self.avg = nn.AvgPool3d((2, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1), count_include_pad=False)
        self.dilated = nn.Sequential(nn.Conv3d(16, 16, 3, padding=(1, 2, 2), dilation=(1, 2, 2)), nn.ReLU())
        self.head, self.head_max = nn.AdaptiveAvgPool3d(1), nn.AdaptiveMaxPool3d(1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = self.dilated(self.avg(self.blocks(self.pool(self.stem(x)))))
        return self.fc(torch.flatten(torch.cat([self.head(x), self.head_max(x)], 1), 1))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    torch.set_num_threads(2)
    torch.manual_seed(0)
    m = TinyVideoNet()
    m.train()
    torch.onnx.export(m, torch.randn(1, 3, 8, 32, 32), os.path.join(out, "torch_video.onnx"), input_names=["x"],
                      dynamic_axes={"x": {0: "batch", 2: "t", 3: "h", 4: "w"}}, opset_version=13,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    n, t, h, w = MACS_CLIP
    res = dict(params=sum(p.numel() for p in m.parameters()),
               macs=video.count_macs(m, torch.randn(n, 3, t, h, w)), saved=[])
    m.train()
    for n, t, h, w in SAVED_CLIPS:
        torch.manual_seed(1)
        got = ref.measure_saved(m, torch.randn(n, 3, t, h, w), False)
        res["saved"].append(dict(batch=n, t=t, h=h, w=w, bytes=got["saved_activation_bytes"]))
    with open(os.path.join(out, "torch_video.json"), "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
