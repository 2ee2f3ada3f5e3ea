#!/usr/bin/python3
"""Write tests/data/onnx/keras_cnn.onnx: a small Keras CNN in the shape tf2onnx (opset 13) emits.

tf2onnx is not a Debian package and TensorFlow is not installed here, so this graph is built
by hand with python3-onnx's helper, node for node as tf2onnx writes a Keras Sequential

    Conv2D(8, 3, padding="same", activation="relu", input_shape=(28, 28, 1)), MaxPooling2D(2),
    Conv2D(16, 3, padding="same", activation="relu"), MaxPooling2D(2),
    Flatten(), Dense(32, activation="relu"), Dense(10, activation="softmax")

NHWC input with a symbolic batch ("unk__6", tf2onnx's name for an unknown dimension), a
Transpose to NCHW before the first Conv, Conv with explicit pads (SAME at stride 1), Relu,
MaxPool, a Transpose back to NHWC before the Flatten (Keras flattens in NHWC order), Reshape
to [-1, 784] by a constant shape, Dense as MatMul + Add (not Gemm), Softmax on the last axis.
Weights are deterministic (no randomness), so the file is the same at every run:

    /usr/bin/python3 tests/data/onnx/gen_keras_cnn.py [OUTDIR]
"""
import os
import struct
import sys

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))


def weights(name, dims):
    n = 1
    for d in dims:
        n *= d
    vals = [((i * 7919) % 1000) / 1000.0 - 0.5 for i in range(n)]
    return helper.make_tensor(name, TensorProto.FLOAT, dims, struct.pack("<%df" % n, *vals), raw=True)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    p = "StatefulPartitionedCall/sequential/"
    inits = [weights(p + "conv2d/Conv2D/ReadVariableOp:0", [8, 1, 3, 3]),
             weights(p + "conv2d/BiasAdd/ReadVariableOp:0", [8]),
             weights(p + "conv2d_1/Conv2D/ReadVariableOp:0", [16, 8, 3, 3]),
             weights(p + "conv2d_1/BiasAdd/ReadVariableOp:0", [16]),
             weights(p + "dense/MatMul/ReadVariableOp:0", [784, 32]),
             weights(p + "dense/BiasAdd/ReadVariableOp:0", [32]),
             weights(p + "dense_1/MatMul/ReadVariableOp:0", [32, 10]),
             weights(p + "dense_1/BiasAdd/ReadVariableOp:0", [10]),
             helper.make_tensor("const_fold_opt__12", TensorProto.INT64, [2], [-1, 784])]
    conv = dict(dilations=[1, 1], group=1, kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
    pool = dict(kernel_shape=[2, 2], strides=[2, 2])
    nodes = [
        helper.make_node("Transpose", ["input_1"], ["input_1__6:0"], name=p + "conv2d/Conv2D__6", perm=[0, 3, 1, 2]),
        helper.make_node("Conv", ["input_1__6:0", inits[0].name, inits[1].name], [p + "conv2d/BiasAdd:0"],
                         name=p + "conv2d/BiasAdd", **conv),
        helper.make_node("Relu", [p + "conv2d/BiasAdd:0"], [p + "conv2d/Relu:0"], name=p + "conv2d/Relu"),
        helper.make_node("MaxPool", [p + "conv2d/Relu:0"], [p + "max_pooling2d/MaxPool:0"],
                         name=p + "max_pooling2d/MaxPool", **pool),
        helper.make_node("Conv", [p + "max_pooling2d/MaxPool:0", inits[2].name, inits[3].name],
                         [p + "conv2d_1/BiasAdd:0"], name=p + "conv2d_1/BiasAdd", **conv),
        helper.make_node("Relu", [p + "conv2d_1/BiasAdd:0"], [p + "conv2d_1/Relu:0"], name=p + "conv2d_1/Relu"),
        helper.make_node("MaxPool", [p + "conv2d_1/Relu:0"], [p + "max_pooling2d_1/MaxPool:0"],
                         name=p + "max_pooling2d_1/MaxPool", **pool),
        helper.make_node("Transpose", [p + "max_pooling2d_1/MaxPool:0"], [p + "max_pooling2d_1/MaxPool__18:0"],
                         name=p + "max_pooling2d_1/MaxPool__18", perm=[0, 2, 3, 1]),
        helper.make_node("Reshape", [p + "max_pooling2d_1/MaxPool__18:0", "const_fold_opt__12"],
                         [p + "flatten/Reshape:0"], name=p + "flatten/Reshape"),
        helper.make_node("MatMul", [p + "flatten/Reshape:0", inits[4].name], [p + "dense/MatMul:0"],
                         name=p + "dense/MatMul"),
        helper.make_node("Add", [p + "dense/MatMul:0", inits[5].name], [p + "dense/BiasAdd:0"],
                         name=p + "dense/BiasAdd"),
        helper.make_node("Relu", [p + "dense/BiasAdd:0"], [p + "dense/Relu:0"], name=p + "dense/Relu"),
        helper.make_node("MatMul", [p + "dense/Relu:0", inits[6].name], [p + "dense_1/MatMul:0"],
                         name=p + "dense_1/MatMul"),
        helper.make_node("Add", [p + "dense_1/MatMul:0", inits[7].name], [p + "dense_1/BiasAdd:0"],
                         name=p + "dense_1/BiasAdd"),
        helper.make_node("Softmax", [p + "dense_1/BiasAdd:0"], ["dense_1"], name=p + "dense_1/Softmax", axis=-1),
    ]
    x = helper.make_tensor_value_info("input_1", TensorProto.FLOAT, ["unk__6", 28, 28, 1])
    y = helper.make_tensor_value_info("dense_1", TensorProto.FLOAT, ["unk__6", 10])
    g = helper.make_graph(nodes, "tf2onnx", [x], [y], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="tf2onnx",
                          producer_version="1.9.3")
    onnx.checker.check_model(m)
    onnx.save_model(m, os.path.join(out, "keras_cnn.onnx"))


if __name__ == "__main__":
    main()
