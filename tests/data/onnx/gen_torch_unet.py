#!/usr/bin/python3
"""Write tests/data/onnx/torch_unet.onnx and torch_unet.json: upsampling as PyTorch exports it.

A small U-Net with an FPN-like side output, its upsampling written the three ways PyTorch
models write it:

    enc1  Conv2d(3, 8, 3, padding=1), BatchNorm2d, ReLU                      (H x W)
    MaxPool2d(2); enc2  Conv2d(8, 16, 3, padding=1), BatchNorm2d, ReLU        (H/2)
    MaxPool2d(2); mid   Conv2d(16, 16, 3, padding=1), ReLU                    (H/4)
    nn.Upsample(scale_factor=2, mode="nearest"), cat enc2, Conv2d(32, 16, 3, padding=1), ReLU
    nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False), cat enc1,
        Conv2d(24, 8, 3, padding=1), ReLU; head Conv2d(8, 2, 1)
    side  Conv2d(16, 2, 1) on the H/2 decoder map, F.interpolate(size=head.shape[-2:],
        mode="bilinear"), added to the head

exported by torch 1.13 in training mode at opset 13 with the batch, height and width dynamic
("batch", "h", "w"): each upsampling is a Resize node, by `scales` (a Concat of constants) for
nn.Upsample and by `sizes` (computed from the head's Shape) for F.interpolate. torch_unet.json
holds PyTorch's parameter count, forward MACs at batch 1, 16x16
(gen_torch_reference.count_macs: the convolutions) and the bytes autograd saves at batch 2, 16x16
and batch 8, 24x20 (gen_torch_reference.measure_saved), as gen_torch_pad.py's export_image_model
writes them:

    /usr/bin/python3 tests/data/onnx/gen_torch_unet.py [OUTDIR]
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gen_torch_pad import export_image_model  # noqa: E402


def block(cin, cout, bn=True):
    layers = [nn.Conv2d(cin, cout, 3, padding=1, bias=not bn)]
    if bn:
        layers.append(nn.BatchNorm2d(cout))
    return nn.Sequential(*layers, nn.ReLU())


class TinyUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc1, self.enc2, self.mid = block(3, 8), block(8, 16), block(16, 16, bn=False)
        self.pool = nn.MaxPool2d(2)
        self.up_nearest = nn.Upsample(scale_factor=2, mode="nearest")
        self.up_bilinear = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.dec2, self.dec1 = block(32, 16, bn=False), block(24, 8, bn=False)
        self.head, self.side = nn.Conv2d(8, 2, 1), nn.Conv2d(16, 2, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        d2 = self.dec2(torch.cat([self.up_nearest(self.mid(self.pool(e2))), e2], 1))
        d1 = self.dec1(torch.cat([self.up_bilinear(d2), e1], 1))
        out = self.head(d1)
        return out + F.interpolate(self.side(d2), size=out.shape[-2:], mode="bilinear", align_corners=False)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    torch.manual_seed(0)
    export_image_model(TinyUNet(), "torch_unet", out, ((2, 16, 16), (8, 24, 20)))


if __name__ == "__main__":
    main()
