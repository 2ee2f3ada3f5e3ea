#!/usr/bin/python3
"""Write tests/data/onnx/keras_cnn.onnx and keras_fcn.onnx: two small Keras CNNs in the shape
tf2onnx (opset 13) emits, and keras_reference.json: what PyTorch counts for the same networks.

tf2onnx is not a Debian package and TensorFlow is not installed here, so these graphs are built
by hand with python3-onnx's helper, node for node as tf2onnx writes a Keras Sequential.

keras_cnn, a 28x28x1 input (tf2onnx knows every spatial size, so it writes explicit pads):

    Conv2D(8, 3, padding="same", activation="relu", input_shape=(28, 28, 1)), MaxPooling2D(2),
    Conv2D(16, 3, padding="same", activation="relu"),
    Conv2D(16, 3, strides=2, padding="same", activation="relu"),
    Flatten(), Dense(32, activation="relu"), Dense(10, activation="softmax")

NHWC input with a symbolic batch ("unk__6", tf2onnx's name for an unknown dimension), a
Transpose to NCHW before the first Conv, Conv with explicit pads (SAME at stride 1: [1, 1, 1, 1];
SAME at stride 2 on 14x14: TensorFlow puts the odd unit at the end, [0, 0, 1, 1]), Relu,
MaxPool, a Transpose back to NHWC before the Flatten (Keras flattens in NHWC order), Reshape
to [-1, 784] by a constant shape, Dense as MatMul + Add (not Gemm), Softmax on the last axis.

keras_fcn, an input of unknown size (Input(shape=(None, None, 1))), where tf2onnx cannot work
the pads out and writes auto_pad SAME_UPPER on every "same" Conv:

    Conv2D(8, 3, padding="same", activation="relu"),
    Conv2D(16, 3, strides=2, padding="same", activation="relu"),
    Conv2D(32, 3, strides=2, padding="same", activation="relu"),
    GlobalAveragePooling2D(), Dense(10, activation="softmax")

(batch, height and width "unk__6", "unk__7", "unk__8"; the pooling as ReduceMean over the
spatial axes of the NCHW tensor, keepdims 0, after tf2onnx's transpose optimizer).

Weights are deterministic (no randomness), so the files are the same at every run. With
python3-torch (1.13) the script also writes keras_reference.json: the same networks ported to
PyTorch as one writes them there, on an NCHW input (the import's permute of the NHWC input is
a view and costs nothing; feeding PyTorch the permuted NHWC tensor instead makes it treat the
1-channel input as channels_last and keep that memory format through every layer, so that
the Flatten's permute + reshape is a view rather than a copy, 6,272 bytes fewer saved at
batch 2 in keras_cnn: dnnsat does not model memory formats, docs/onnx.md), each uneven
"same" padding as F.pad (zeros) before a Conv2d with padding 0 (cuDNN pads evenly only; the
even stride-1 ones as the Conv2d's own padding 1), the Keras Flatten as permute + reshape;
parameters, forward MACs at batch 1
(gen_torch_reference.count_macs) and the bytes autograd saves at batch 2 and 8
(gen_torch_reference.measure_saved; keras_fcn at 28x28 and 29x29, even and odd):

    /usr/bin/python3 tests/data/onnx/gen_keras_cnn.py [OUTDIR]
"""
import json
import math
import os
import struct
import sys

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
P = "StatefulPartitionedCall/sequential/"


def weights(name, dims):
    n = 1
    for d in dims:
        n *= d
    vals = [((i * 7919) % 1000) / 1000.0 - 0.5 for i in range(n)]
    return helper.make_tensor(name, TensorProto.FLOAT, dims, struct.pack("<%df" % n, *vals), raw=True)


def conv_relu(layer, x, cin, cout, inits, **attrs):
    """Conv (with its bias) + Relu as tf2onnx names them; returns the nodes and the output."""
    w, b = P + layer + "/Conv2D/ReadVariableOp:0", P + layer + "/BiasAdd/ReadVariableOp:0"
    inits += [weights(w, [cout, cin, 3, 3]), weights(b, [cout])]
    conv = dict(dilations=[1, 1], group=1, kernel_shape=[3, 3], strides=[1, 1])
    conv.update(attrs)
    return [helper.make_node("Conv", [x, w, b], [P + layer + "/BiasAdd:0"], name=P + layer + "/BiasAdd", **conv),
            helper.make_node("Relu", [P + layer + "/BiasAdd:0"], [P + layer + "/Relu:0"], name=P + layer + "/Relu")
            ], P + layer + "/Relu:0"


def dense(layer, x, fin, fout, inits):
    """Dense as MatMul + Add; returns the nodes and the output."""
    w, b = P + layer + "/MatMul/ReadVariableOp:0", P + layer + "/BiasAdd/ReadVariableOp:0"
    inits += [weights(w, [fin, fout]), weights(b, [fout])]
    return [helper.make_node("MatMul", [x, w], [P + layer + "/MatMul:0"], name=P + layer + "/MatMul"),
            helper.make_node("Add", [P + layer + "/MatMul:0", b], [P + layer + "/BiasAdd:0"], name=P + layer + "/BiasAdd")
            ], P + layer + "/BiasAdd:0"


def save(nodes, inits, x, y, path):
    g = helper.make_graph(nodes, "tf2onnx", [x], [y], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="tf2onnx",
                          producer_version="1.9.3")
    onnx.checker.check_model(m)
    onnx.save_model(m, path)


def keras_cnn(out):
    inits = []
    nodes = [helper.make_node("Transpose", ["input_1"], ["input_1__6:0"], name=P + "conv2d/Conv2D__6", perm=[0, 3, 1, 2])]
    n, h = conv_relu("conv2d", "input_1__6:0", 1, 8, inits, pads=[1, 1, 1, 1])
    nodes += n
    nodes.append(helper.make_node("MaxPool", [h], [P + "max_pooling2d/MaxPool:0"], name=P + "max_pooling2d/MaxPool",
                                  kernel_shape=[2, 2], strides=[2, 2]))
    n, h = conv_relu("conv2d_1", P + "max_pooling2d/MaxPool:0", 8, 16, inits, pads=[1, 1, 1, 1])
    nodes += n
    # stride 2 "same" on 14x14: total padding (7 - 1) * 2 + 3 - 14 = 1, at the end
    n, h = conv_relu("conv2d_2", h, 16, 16, inits, pads=[0, 0, 1, 1], strides=[2, 2])
    nodes += n
    inits.append(helper.make_tensor("const_fold_opt__12", TensorProto.INT64, [2], [-1, 784]))
    nodes += [helper.make_node("Transpose", [h], [P + "conv2d_2/Relu__18:0"], name=P + "conv2d_2/Relu__18",
                               perm=[0, 2, 3, 1]),
              helper.make_node("Reshape", [P + "conv2d_2/Relu__18:0", "const_fold_opt__12"], [P + "flatten/Reshape:0"],
                               name=P + "flatten/Reshape")]
    n, h = dense("dense", P + "flatten/Reshape:0", 784, 32, inits)
    nodes += n
    nodes.append(helper.make_node("Relu", [h], [P + "dense/Relu:0"], name=P + "dense/Relu"))
    n, h = dense("dense_1", P + "dense/Relu:0", 32, 10, inits)
    nodes += n
    nodes.append(helper.make_node("Softmax", [h], ["dense_1"], name=P + "dense_1/Softmax", axis=-1))
    save(nodes, inits, helper.make_tensor_value_info("input_1", TensorProto.FLOAT, ["unk__6", 28, 28, 1]),
         helper.make_tensor_value_info("dense_1", TensorProto.FLOAT, ["unk__6", 10]), os.path.join(out, "keras_cnn.onnx"))


def keras_fcn(out):
    inits = []
    nodes = [helper.make_node("Transpose", ["input_1"], ["input_1__6:0"], name=P + "conv2d/Conv2D__6", perm=[0, 3, 1, 2])]
    h = "input_1__6:0"
    for layer, cin, cout, s in (("conv2d", 1, 8, 1), ("conv2d_1", 8, 16, 2), ("conv2d_2", 16, 32, 2)):
        n, h = conv_relu(layer, h, cin, cout, inits, auto_pad="SAME_UPPER", strides=[s, s])
        nodes += n
    nodes.append(helper.make_node("ReduceMean", [h], [P + "global_average_pooling2d/Mean:0"],
                                  name=P + "global_average_pooling2d/Mean", axes=[2, 3], keepdims=0))
    n, h = dense("dense", P + "global_average_pooling2d/Mean:0", 32, 10, inits)
    nodes += n
    nodes.append(helper.make_node("Softmax", [h], ["dense"], name=P + "dense/Softmax", axis=-1))
    save(nodes, inits, helper.make_tensor_value_info("input_1", TensorProto.FLOAT, ["unk__6", "unk__7", "unk__8", 1]),
         helper.make_tensor_value_info("dense", TensorProto.FLOAT, ["unk__6", 10]), os.path.join(out, "keras_fcn.onnx"))


def same_pads(n, s, k=3):
    """TensorFlow's "same" padding of a size-n axis at stride s: (begin, end), the odd unit at the end."""
    total = max((math.ceil(n / s) - 1) * s + k - n, 0)
    return total // 2, total - total // 2


def references(out):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    sys.path.insert(0, os.path.join(HERE, "..", "..", "reference"))
    import gen_torch_reference as ref

    class KerasCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2 = nn.Conv2d(1, 8, 3, padding=1), nn.Conv2d(8, 16, 3, padding=1)
            self.c3 = nn.Conv2d(16, 16, 3, stride=2)
            self.d1, self.d2 = nn.Linear(784, 32), nn.Linear(32, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.c1(x)), 2)
            x = F.relu(self.c3(F.pad(F.relu(self.c2(x)), (0, 1, 0, 1))))
            x = x.permute(0, 2, 3, 1).reshape(-1, 784)
            return F.softmax(self.d2(F.relu(self.d1(x))), dim=-1)

    class KerasFCN(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(1, 8, 3, padding=1)
            self.c2, self.c3 = nn.Conv2d(8, 16, 3, stride=2), nn.Conv2d(16, 32, 3, stride=2)
            self.d = nn.Linear(32, 10)

        def forward(self, x):
            x = F.relu(self.c1(x))
            for c in (self.c2, self.c3):
                (t, b), (l, r) = same_pads(x.shape[2], 2), same_pads(x.shape[3], 2)
                x = F.relu(c(F.pad(x, (l, r, t, b))))
            return F.softmax(self.d(F.adaptive_avg_pool2d(x, 1).flatten(1)), dim=-1)

    refs = {}
    for name, model, sizes in (("keras_cnn", KerasCNN(), ((2, 28), (8, 28))),
                               ("keras_fcn", KerasFCN(), ((2, 28), (8, 29)))):
        macs, by = ref.count_macs(model, torch.randn(1, 1, sizes[0][1], sizes[0][1]))
        refs[name] = dict(params=sum(p.numel() for p in model.parameters()), macs=macs, macs_ops=by,
                          resolution=sizes[0][1], saved=[])
        for batch, hw in sizes:
            torch.manual_seed(1)
            res = ref.measure_saved(model, torch.randn(batch, 1, hw, hw), False)
            refs[name]["saved"].append(dict(batch=batch, resolution=hw, bytes=res["saved_activation_bytes"]))
    with open(os.path.join(out, "keras_reference.json"), "w") as f:
        json.dump(refs, f, indent=1, sort_keys=True)
        f.write("\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    keras_cnn(out)
    keras_fcn(out)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("python3-torch is not installed: keras_reference.json not written", file=sys.stderr)
        return
    references(out)


if __name__ == "__main__":
    main()
