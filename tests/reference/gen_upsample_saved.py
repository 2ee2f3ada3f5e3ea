#!/usr/bin/python3
"""What PyTorch keeps for the backward of nn.Upsample / F.interpolate: the reference for the
`upsample` operator's saved activations (costmodel/op_upsample.c: nothing).

For every mode at the input rank PyTorch pairs it with (nearest 1-d, 2-d and 3-d, linear 1-d,
bilinear and bicubic 2-d, trilinear 3-d; align_corners on and off for the interpolating modes;
by scale_factor, integer and not, and by size), one forward on a CPU input that requires grad runs
under torch.autograd.graph.saved_tensors_hooks, and the tensors autograd packs are counted.
Written for each case: the autograd node (grad_fn), its _saved_ attributes that are tensors and
those that are not, the packed tensors' count and bytes, the input and output shapes (the
output size is floor(in * scale_factor)), and whether backward ran. Deterministic; a few seconds:

    /usr/bin/python3 tests/reference/gen_upsample_saved.py > tests/reference/upsample_saved.json

tests/unit/test_model.c reads nothing from here; tests/cli/test_import.py checks that every case
packs 0 tensors and that `dnnsat estimate` gives an upsample layer of the same shape 0 saved bytes.
"""
import json
import sys

import torch
import torch.nn as nn

CASES = [
    # (mode, input shape, kwargs)
    ("nearest", (2, 3, 7), dict(scale_factor=2)),
    ("nearest", (2, 3, 5, 7), dict(scale_factor=2)),
    ("nearest", (2, 3, 5, 7), dict(scale_factor=1.5)),
    ("nearest", (2, 3, 5, 7), dict(size=(9, 4))),
    ("nearest", (2, 3, 3, 5, 7), dict(scale_factor=(2, 1, 3))),
    ("linear", (2, 3, 7), dict(scale_factor=2, align_corners=False)),
    ("linear", (2, 3, 7), dict(size=11, align_corners=True)),
    ("bilinear", (2, 3, 5, 7), dict(scale_factor=2, align_corners=False)),
    ("bilinear", (2, 3, 5, 7), dict(scale_factor=1.3, align_corners=True)),
    ("bilinear", (2, 3, 5, 7), dict(size=(10, 3), align_corners=False)),
    ("bilinear", (1, 2, 10, 20), dict(scale_factor=1.3, align_corners=False)),  # 13 x 26: 10 * 1.3 in doubles
    ("bicubic", (2, 3, 5, 7), dict(scale_factor=2, align_corners=False)),
    ("trilinear", (2, 3, 3, 5, 7), dict(scale_factor=2, align_corners=False)),
]


def measure(mode, shape, kw):
    torch.manual_seed(0)
    x = torch.randn(*shape, requires_grad=True)
    packed = []

    def pack(t):
        packed.append((tuple(t.shape), t.numel() * t.element_size()))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = nn.Upsample(mode=mode, **kw)(x)
    fn = y.grad_fn
    tensors, others = [], []
    for a in sorted(dir(fn)):
        if a.startswith("_saved_"):
            (tensors if isinstance(getattr(fn, a), torch.Tensor) else others).append(a)
    y.sum().backward()
    return dict(mode=mode, input=list(shape), kwargs={k: list(v) if isinstance(v, tuple) else v for k, v in kw.items()},
                output=list(y.shape), grad_fn=type(fn).__name__, saved_tensor_attrs=tensors, saved_other_attrs=others,
                packed_tensors=len(packed), packed_bytes=sum(b for _, b in packed),
                backward_ok=x.grad is not None and tuple(x.grad.shape) == tuple(shape))


def main():
    res = dict(torch=torch.__version__, device="cpu", cases=[measure(*c) for c in CASES])
    json.dump(res, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
