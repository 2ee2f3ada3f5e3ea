#!/usr/bin/python3
"""Write tests/data/onnx/torch_interp.onnx and torch_interp.json: F.interpolate with
recompute_scale_factor=True as PyTorch exports it.

torchvision's detection transform and many segmentation heads resize by a scale factor with
recompute_scale_factor=True: the output size is floor(input size * scale), computed in the
graph. A small CNN resizing three ways:

    Conv2d(3, 8, 3, padding=1), ReLU
    F.interpolate(scale_factor=1.5, mode="bilinear", recompute_scale_factor=True)
    Conv2d(8, 8, 3, padding=1), ReLU
    F.interpolate(scale_factor=0.5, mode="nearest", recompute_scale_factor=True)
    F.interpolate(scale_factor=1.3, mode="bilinear", recompute_scale_factor=True)
    Conv2d(8, 4, 1); AdaptiveAvgPool2d(1), flatten, Linear(4, 10)

exported by torch 1.13 in training mode at opset 13 with the batch, height and width dynamic
("batch", "h", "w"): each resize is a Resize node by `sizes`, a Concat of the input's first two
sizes and, per spatial axis, Floor(Cast(Gather(Shape)) * scale) cast back to int64, which `dnnsat
import` follows (import/onnx_op_shape.c: a size times a float is floored to floor(h * 3 / 2),
floor(h / 2) and floor((h) * 1.3)). torch_interp.json holds PyTorch's parameter count, forward
MACs at batch 1, 16x16 and the bytes autograd saves at batch 2, 16x16 and batch 8, 17x15 (odd
sizes: every floor matters), as gen_torch_pad.py's export_image_model writes them:

    /usr/bin/python3 tests/data/onnx/gen_torch_interp.py [OUTDIR]
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gen_torch_pad import export_image_model  # noqa: E402


class InterpCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2, self.c3 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1), nn.Conv2d(8, 4, 1)
        self.fc = nn.Linear(4, 10)

    def forward(self, x):
        x = F.interpolate(F.relu(self.c1(x)), scale_factor=1.5, mode="bilinear", recompute_scale_factor=True)
        x = F.interpolate(F.relu(self.c2(x)), scale_factor=0.5, mode="nearest", recompute_scale_factor=True)
        x = F.interpolate(x, scale_factor=1.3, mode="bilinear", recompute_scale_factor=True)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.c3(x), 1), 1))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    torch.manual_seed(0)
    export_image_model(InterpCNN(), "torch_interp", out, ((2, 16, 16), (8, 17, 15)))


if __name__ == "__main__":
    main()
