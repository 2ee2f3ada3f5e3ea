#!/usr/bin/python3
"""Write tests/data/onnx/torch_{lstm,bilstm,gru}_state.onnx and torch_rnn_state.json: classifiers on
the final hidden state h_n of nn.LSTM / nn.GRU, as PyTorch exports them.

    lstm:   out, (h_n, c_n) = nn.LSTM(8, 16, batch_first=True)(x);  nn.Linear(16, 5)(h_n[-1])
    bilstm: nn.LSTM(8, 16, num_layers=2, bidirectional=True, batch_first=True);
            nn.Linear(32, 5)(torch.cat((h_n[-2], h_n[-1]), dim=1))
    gru:    _, h_n = nn.GRU(8, 12, batch_first=True)(x);  nn.Linear(12, 5)(h_n[-1])

on a float sequence [batch, seq, 8], exported by torch 1.13 in training mode at opset 13 with the batch
and the sequence length dynamic ("batch", "seq"). The graph reads the RNN node's output Y_h (a Gather
of index -1 on axis 0; for the 2-layer LSTM, the Concat of both layer nodes' Y_h, then Gathers of -2
and -1 and a Concat on axis 1); the output sequence Y is not read. torch_rnn_state.json holds, per
model, PyTorch's parameter count, the forward MACs at batch 1, seq 7 (batch x seq x the weight_ih +
weight_hh elements per layer and direction, as gen_torch_rnn.py counts them, and the Linear's
product), the output shape at batch 3, seq 5, and what autograd keeps for the head (the indexing of
h_n, the cat, the Linear) at batch 3, seq 5 on the CPU (torch.autograd.graph.saved_tensors_hooks):
the activation elements saved, each storage once ("head_saved_elems"), and the elements of the
tensors the head makes ("head_new_elems": the cat's output; a select of h_n is a view):

    /usr/bin/python3 tests/data/onnx/gen_torch_rnn_state.py [OUTDIR]
"""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_torch_rnn import export_training, write_record  # noqa: E402  (the same export and record)


class LstmLast(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, batch_first=True)
        self.fc = nn.Linear(16, 5)

    def rnn(self, x):
        _, (h_n, _) = self.lstm(x)
        return h_n

    def head(self, h_n):
        return self.fc(h_n[-1])

    def forward(self, x):
        return self.head(self.rnn(x))


class BiLstmLast(LstmLast):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, num_layers=2, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(32, 5)

    def head(self, h_n):
        return self.fc(torch.cat((h_n[-2], h_n[-1]), dim=1))


class GruLast(LstmLast):
    def __init__(self):
        super().__init__()
        del self.lstm
        self.gru = nn.GRU(8, 12, batch_first=True)
        self.fc = nn.Linear(12, 5)

    def rnn(self, x):
        _, h_n = self.gru(x)
        return h_n


def head_saved(model, x):
    """Activation elements autograd keeps for the head (each storage once, parameters left out) and
    the elements of the new tensors it makes, on the CPU."""
    h_n = model.rnn(x).detach().requires_grad_()
    params = {p.data_ptr() for p in model.parameters()}
    storages = {}

    def pack(t):
        s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
        if s.data_ptr() not in params:
            storages[s.data_ptr()] = s.nbytes() // t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = model.head(h_n)
    made = 0
    fn = y.grad_fn
    # the cat's output (the only non-view tensor before the Linear), when there is one
    cat = [t for t in (getattr(fn, "_saved_mat1", None), getattr(fn, "_saved_self", None)) if t is not None]
    for t in cat:
        s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
        if s.data_ptr() != (h_n.untyped_storage() if hasattr(h_n, "untyped_storage") else h_n.storage()).data_ptr():
            made += t.numel()
    return sum(storages.values()), made, list(y.shape)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    res = {}
    for name, cls in (("lstm", LstmLast), ("bilstm", BiLstmLast), ("gru", GruLast)):
        torch.manual_seed(0)
        m = cls()
        res[name] = export_training(m, torch.randn(1, 7, 8), os.path.join(out, f"torch_{name}_state.onnx"))
        saved, made, shape = head_saved(m, torch.randn(3, 5, 8))
        res[name].update(out_shape_b3_s5=shape, head_saved_elems=saved, head_new_elems=made)
    write_record(os.path.join(out, "torch_rnn_state.json"), res)


HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__":
    main()
