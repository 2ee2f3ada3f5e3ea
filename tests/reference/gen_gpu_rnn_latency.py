#!/usr/bin/env python3
"""Measure, on a real GPU, recurrent layers' time: the check of the latency model's recurrence
constants from Volta on (costmodel/perf_fit_rnn.h, _SM7), which rest on DeepBench's V100 alone.

Two kinds of rows, written to OUT/rnn_latency.csv:
  - "layer": one unidirectional nn.LSTM or nn.GRU on one input feature (so the input projection
    is negligible, as DeepBench's CUDNN_SKIP_INPUT leaves it out), DeepBench's own shapes
    (tests/reference/deepbench_rnn.csv, LSTM and GRU rows), forward alone (inference, no_grad) and
    forward + backward (the input's and the weights' gradients), in ms: the same comparison as
    tests/unit/test_latency's test_rnn_deepbench, on this GPU;
  - "lstm_lm": the lstm_lm template (PyTorch's word_language_model RNNModel, untied, batch first:
    Embedding, Dropout 0.5, nn.LSTM, Dropout 0.5, Linear to the vocabulary, cross-entropy) at
    a few (batch, seq_len, hidden, layers), a training step with Adam (forward, backward, step,
    zero_grad(set_to_none)) and inference, in fp32 (cuDNN RNNs take TF32 where
    torch.backends.cudnn.allow_tf32, on by default) and autocast fp16.
Each time is the median of --reps timed repetitions after 3 warm-up ones, with
torch.cuda.synchronize() around each, as tests/reference/gen_gpu_measurements.py times steps.
OUT/rnn_latency_env.json records torch, cuDNN, the device and the TF32 flags.

Prepared on 2026-12-06 for the next session lent a GPU (none was lent that day): not yet run on
one. --device cpu --smoke runs two tiny rows of each kind on the CPU, to check the script itself.

Run (on the GPU machine, from the repository root; about 3 minutes on an H200):
    PYTHONUNBUFFERED=1 python3 tests/reference/gen_gpu_rnn_latency.py --out DIR
"""

import argparse
import contextlib
import csv
import json
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
LM_CASES = [(20, 35, 650, 2), (64, 35, 650, 2), (20, 140, 650, 2), (32, 70, 1500, 2), (128, 35, 200, 2),
            (20, 35, 650, 4)]


def timed(fn, reps, device):
    def sync():
        if device == "cuda":
            torch.cuda.synchronize()
    for _ in range(3):
        fn()
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(1e3 * (time.perf_counter() - t0))
    return statistics.median(times)


def deepbench_shapes(smoke):
    rows = []
    with open(os.path.join(HERE, "deepbench_rnn.csv")) as f:
        for r in csv.DictReader(f):
            key = (r["cell"], int(r["hidden"]), int(r["batch"]), int(r["timesteps"]))
            if r["cell"] != "vanilla" and key not in rows:
                rows.append(key)
    return [("lstm", 32, 4, 5), ("gru", 32, 4, 5)] if smoke else rows


def layer_rows(device, reps, smoke, w):
    for cell, h, n, t in deepbench_shapes(smoke):
        torch.manual_seed(0)
        m = (nn.LSTM if cell == "lstm" else nn.GRU)(1, h, batch_first=True).to(device)
        x = torch.randn(n, t, 1, device=device, requires_grad=True)

        def fwd():
            with torch.no_grad():
                m(x)

        def train():
            y, _ = m(x)
            y.sum().backward()
        row = {"kind": "layer", "cell": cell, "hidden": h, "batch": n, "seq_len": t, "layers": 1, "dtype": "fp32",
               "infer_ms": timed(fwd, reps, device), "step_ms": timed(train, reps, device)}
        w.writerow(row)
        print(json.dumps(row), flush=True)


class RNNModel(nn.Module):
    """word_language_model's RNNModel (LSTM, untied), batch first as the lstm_lm template."""

    def __init__(self, vocab, embed, hidden, layers):
        super().__init__()
        self.encoder, self.drop = nn.Embedding(vocab, embed), nn.Dropout(0.5)
        self.rnn = nn.LSTM(embed, hidden, layers, batch_first=True)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, ids):
        y, _ = self.rnn(self.drop(self.encoder(ids)))
        return self.decoder(self.drop(y))


def lm_rows(device, reps, smoke, w):
    cases = [(4, 5, 32, 2)] if smoke else LM_CASES
    vocab = 100 if smoke else 10000
    for n, t, h, layers in cases:
        for dtype in ("fp32", "mixed_fp16"):
            if dtype == "mixed_fp16" and device != "cuda":
                continue
            torch.manual_seed(0)
            model = RNNModel(vocab, h, h, layers).to(device)
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)
            ids = torch.randint(0, vocab, (n, t), device=device)
            tgt = torch.randint(0, vocab, (n * t,), device=device)
            scaler = torch.cuda.amp.GradScaler(enabled=dtype == "mixed_fp16")

            def cast():
                if dtype == "mixed_fp16":
                    return torch.autocast(device, dtype=torch.float16)
                return contextlib.nullcontext()

            def step():
                with cast():
                    loss = F.cross_entropy(model(ids).reshape(-1, vocab), tgt)
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
                opt.zero_grad(set_to_none=True)

            def infer():
                with torch.no_grad(), cast():
                    model(ids)
            model.train()
            st = timed(step, reps, device)
            model.eval()
            row = {"kind": "lstm_lm", "cell": "lstm", "hidden": h, "batch": n, "seq_len": t, "layers": layers,
                   "dtype": dtype, "infer_ms": timed(infer, reps, device), "step_ms": st}
            w.writerow(row)
            print(json.dumps(row), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--smoke", action="store_true", help="two tiny rows of each kind (checks the script)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    env = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
           "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
           "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
           "device": torch.cuda.get_device_name(0) if a.device == "cuda" else "cpu"}
    with open(os.path.join(a.out, "rnn_latency_env.json"), "w") as f:
        json.dump(env, f, indent=1)
    with open(os.path.join(a.out, "rnn_latency.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, ["kind", "cell", "hidden", "batch", "seq_len", "layers", "dtype", "infer_ms", "step_ms"])
        w.writeheader()
        layer_rows(a.device, a.reps, a.smoke, w)
        lm_rows(a.device, a.reps, a.smoke, w)


if __name__ == "__main__":
    main()
