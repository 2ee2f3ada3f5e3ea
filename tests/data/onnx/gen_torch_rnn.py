#!/usr/bin/python3
"""Write tests/data/onnx/torch_rnn.onnx and torch_rnn.json: nn.LSTM and nn.GRU as PyTorch exports them.

A small sequence tagger on a float sequence [batch, seq, 8], batch first:

    nn.LSTM(8, 16, num_layers=2, bidirectional=True, batch_first=True)   -> [batch, seq, 32]
    nn.GRU(32, 12, bias=False, batch_first=True)                          -> [batch, seq, 12]
    nn.Linear(12, 5)

exported by torch 1.13 in training mode at opset 13 with the batch and the sequence length dynamic
("batch", "seq"): a Transpose [1, 0, 2] to sequence first before each RNN module, one LSTM node
per layer (bidirectional; W, R and B built from the weights by Slice, Concat and Unsqueeze, the
gates reordered), a Transpose [0, 2, 1, 3] and a Reshape after each, a GRU node
(linear_before_reset=1, no B) and a Squeeze, a Transpose back to batch first after each module.
torch_rnn.json holds PyTorch's parameter count (sum of p.numel()) and the forward MACs at batch 1,
seq 7, counted from the modules' own weights by forward hooks: batch x seq x (weight_ih + weight_hh
elements) per layer and direction for the RNNs, and the Linear's product:

    /usr/bin/python3 tests/data/onnx/gen_torch_rnn.py [OUTDIR]
"""
import json
import os
import sys

import torch
import torch.nn as nn


class TinyTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = nn.GRU(32, 12, bias=False, batch_first=True)
        self.fc = nn.Linear(12, 5)

    def forward(self, x):
        y, _ = self.lstm(x)
        z, _ = self.gru(y)
        return self.fc(z)


def count_macs(model, x):
    by = {}

    def rnn_hook(m, i, o):
        n, seq = o[0].shape[0], o[0].shape[1]
        w = sum(p.numel() for name, p in m.named_parameters() if name.startswith("weight_"))
        by[type(m).__name__.lower()] = by.get(type(m).__name__.lower(), 0) + n * seq * w

    def lin_hook(m, i, o):
        by["linear"] = by.get("linear", 0) + o.numel() // m.out_features * m.in_features * m.out_features

    hs = [m.register_forward_hook(rnn_hook) for m in model.modules() if isinstance(m, (nn.LSTM, nn.GRU))]
    hs += [m.register_forward_hook(lin_hook) for m in model.modules() if isinstance(m, nn.Linear)]
    with torch.no_grad():
        model(x)
    for h in hs:
        h.remove()
    return sum(by.values()), by


def export_training(m, x, path):
    """m exported to path as every RNN fixture is (training mode, batch and seq dynamic, opset
    13, nothing folded) on the example x [batch, seq, features]; its parameters (in all and per
    child module) and MACs at that x, the record the fixture's JSON keeps."""
    m.train()
    torch.onnx.export(m, x, path, input_names=["x"],
                      dynamic_axes={"x": {0: "batch", 1: "seq"}}, opset_version=13,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    macs, by = count_macs(m, x)
    return dict(params_record(m), macs=macs, macs_ops=by, seq=int(x.shape[1]))


def params_record(m):
    """m's parameters, in all and per child module, as the fixtures' JSON keeps them."""
    return dict(params=sum(p.numel() for p in m.parameters()),
                params_by_module={n: sum(p.numel() for p in c.parameters()) for n, c in m.named_children()})


def write_record(path, res):
    """A fixture's JSON record, as every RNN fixture writes it."""
    with open(path, "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
        f.write("\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    torch.manual_seed(0)
    m = TinyTagger()
    res = export_training(m, torch.randn(1, 7, 8), os.path.join(out, "torch_rnn.onnx"))
    write_record(os.path.join(out, "torch_rnn.json"), res)


HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__":
    main()
