#!/usr/bin/python3
"""Write tests/data/onnx/torch_seq2seq{,_2l,_gru}.onnx and torch_seq2seq.json: sequence-to-sequence
models whose encoder hands its final states to the decoder, as PyTorch exports them.

    seq2seq:     _, (h, c) = nn.LSTM(8, 16, batch_first=True)(src)
                 out, _ = nn.LSTM(6, 16, batch_first=True)(tgt, (h, c));  nn.Linear(16, 5)(out)
    seq2seq_2l:  the same with num_layers=2 in both LSTMs
    seq2seq_gru: _, h = nn.GRU(8, 16, batch_first=True)(src);  nn.GRU(6, 16, ...)(tgt, h); Linear

on float sequences src [batch, seq, 8] and tgt [batch, tseq, 6], exported by torch 1.13 in training
mode at opset 13 with batch, seq and tseq dynamic. The encoder's output sequence Y is not read; its
Y_h and Y_c (for 2 layers, the Concat of both layer nodes') are the decoder nodes' initial_h and
initial_c (for 2 layers, Slices of them on axis 0, one per layer node). torch_seq2seq.json holds
per model PyTorch's parameter count (in all and per module), the forward MACs at batch 1, seq 7,
tseq 4 (batch x steps x the weight_ih + weight_hh elements per layer for the RNNs, as
gen_torch_rnn.py counts them, and the Linear's product) and the output shape at batch 3, seq 5,
tseq 4:

    /usr/bin/python3 tests/data/onnx/gen_torch_seq2seq.py [OUTDIR]
"""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_torch_rnn import count_macs, params_record, write_record  # noqa: E402  (the same counting and record)


class Seq2Seq(nn.Module):
    def __init__(self, layers=1, gru=False):
        super().__init__()
        rnn = nn.GRU if gru else nn.LSTM
        self.gru = gru
        self.enc = rnn(8, 16, num_layers=layers, batch_first=True)
        self.dec = rnn(6, 16, num_layers=layers, batch_first=True)
        self.fc = nn.Linear(16, 5)

    def forward(self, src, tgt):
        if self.gru:
            _, h = self.enc(src)
            out, _ = self.dec(tgt, h)
        else:
            _, (h, c) = self.enc(src)
            out, _ = self.dec(tgt, (h, c))
        return self.fc(out)


class Pair(nn.Module):
    """count_macs calls model(x): the pair of sequences as one argument."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, xs):
        return self.m(*xs)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    res = {}
    for name, kw in (("seq2seq", {}), ("seq2seq_2l", {"layers": 2}), ("seq2seq_gru", {"gru": True})):
        torch.manual_seed(0)
        m = Seq2Seq(**kw).train()
        src, tgt = torch.randn(1, 7, 8), torch.randn(1, 4, 6)
        torch.onnx.export(m, (src, tgt), os.path.join(out, f"torch_{name}.onnx"), input_names=["src", "tgt"],
                          dynamic_axes={"src": {0: "batch", 1: "seq"}, "tgt": {0: "batch", 1: "tseq"}},
                          opset_version=13, training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
        macs, by = count_macs(Pair(m), (src, tgt))
        with torch.no_grad():
            shape = list(m(torch.randn(3, 5, 8), torch.randn(3, 4, 6)).shape)
        res[name] = dict(params_record(m), macs=macs, macs_ops=by, seq=7, tseq=4, out_shape_b3_s5_t4=shape)
    write_record(os.path.join(out, "torch_seq2seq.json"), res)


HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__":
    main()
