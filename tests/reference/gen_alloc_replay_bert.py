#!/usr/bin/python3
"""What PyTorch's caching allocator reserves for Hugging Face's bert-large training runs on a V100
(tests/reference/hf_bert_large_v100.csv), replayed from a real op trace, without a GPU.

The published runs (transformers' "Efficient Training on a Single GPU", 2022) were 11-15% above
dnnsat's expected peak at batch 4 and about 5% above it at batch 1 with gradient accumulation
while dnnsat assumed PyTorch 1.11's softmax. Two explanations were open: the caching allocator
(weight gradients and AdamW's state made during the first step in segments the first forward's
activations had used, stranding later activations) or something the runs kept that the model
did not. This script measures both (docs/memory-accuracy.md has the figures): the replay
reserves 1-2% over what it allocates, so not the allocator; with PyTorch 1.10's softmax, which
kept its input for the backward (--softmax-saves output_and_input, the default here, as the runs
used 1.10), the replay is within 1% of every published figure, and so is dnnsat with the same
option.

1. Model and loop as the runs had them: the plain-torch mirror of transformers' BertModel
   (gen_torch_reference.py) at bert-large's sizes (24 layers, hidden 1024, 16 heads, intermediate
   4096), plus BertForSequenceClassification's head (dropout 0.1, Linear(1024, 2), cross-entropy
   on 2 labels); every nn.Dropout through torch.native_dropout, the fused op F.dropout takes on
   CUDA (a bool mask, not the CPU path's float noise); sequence 512; transformers' AdamW of
   2022 (lr 5e-5, no weight decay: one weight at a time, exp_avg and exp_avg_sq made at the first
   step, denom = exp_avg_sq.sqrt().add_(eps) as its one temporary); the Trainer's step:
   forward, loss (divided by the accumulation steps), backward, and at the end of an
   accumulation cycle clip_grad_norm_(1.0), optimizer step, model.zero_grad() (set_to_none=False);
   with --softmax-saves output_and_input (the default) softmax and the loss's log_softmax keep
   their input as PyTorch 1.10's autograd did (SoftmaxKeepingInput).
2. Trace on the CPU under torch.profiler(profile_memory=True): every allocation and free in order.
   The matrix products (aten::mm, addmm, bmm, baddbmm) are not computed: a dispatch mode returns
   an uninitialised tensor of the product's shape (torch.empty, the same allocation the product
   makes), so that three steps of bert-large take minutes instead of hours on the reference BLAS.
   Values do not matter here, only sizes and lifetimes; nothing in BERT branches on values.
3. Buffers an operator allocates and frees itself are dropped, the trace is taken at batch 1
   (the accumulation run) and at batch 2 and 3, extended to batch 4 (affine in the batch at a
   fixed sequence), and replayed through
   the caching allocator's policy, all as gen_alloc_replay.py does (its functions are used).

The weights are allocated first, one block each, as the runs' model.to("cuda") did before the
trace starts. Output: one line per run: the weights' reserve, the allocated and reserved peaks
of the replay, the reserved peak plus the CUDA context (1343 MiB, measured on the same page) and
its signed error against the published figure; then the reserve's growth by phase of the steps.
Rerun (Debian's python3-torch 1.13; about 10 GiB of RAM and 6 minutes on two cores):
    /usr/bin/python3 tests/reference/gen_alloc_replay_bert.py [--softmax-saves output]
"""

import argparse
import os
import sys

import torch
import torch.nn as nn
from torch.utils._python_dispatch import TorchDispatchMode

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import gen_alloc_replay as ar          # noqa: E402  the allocator policy and the trace filters
import gen_torch_reference as ref      # noqa: E402  the BertModel mirror

MIB = float(1 << 20)
SEQ = 512
CONTEXT_MIB = 1343                     # the same page's "GPU memory occupied" after torch.ones(1, 1)
# batch 1 is traced as it is: torch.matmul folds q's and k's heads into bmm's batch as views only
# when the batch is 1, and copies them otherwise (two more tensors per layer); larger batches are
# extended from batch 2 and 3
TRACE_BATCHES = (2, 3)
# (label, batch, accumulation steps, published MiB) of hf_bert_large_v100.csv's fp32 AdamW runs
RUNS = [("batch 4", 4, 1, 14949), ("batch 1, accumulation 4", 1, 4, 8681)]
SOFTMAX, CROSS_ENTROPY = nn.functional.softmax, nn.functional.cross_entropy
KEEP_SOFTMAX_INPUT = True              # --softmax-saves (main)


class LargeConfig(ref.BertConfig):
    hidden_size = 1024
    num_hidden_layers = 24
    num_attention_heads = 16
    intermediate_size = 4096


class ForSequenceClassification(nn.Module):
    """transformers' BertForSequenceClassification: the pooled output, dropout, a linear to the labels."""

    def __init__(self, c, num_labels=2):
        super().__init__()
        self.bert = ref.BertModel(c)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)
        self.classifier = nn.Linear(c.hidden_size, num_labels)
        self.classifier.weight.data.normal_(0.0, 0.02)
        self.classifier.bias.data.zero_()

    def forward(self, input_ids, labels):
        pooled = self.bert(input_ids)[1]
        logits = self.classifier(self.dropout(pooled))
        return nn.functional.cross_entropy(logits, labels)


class AdamW:
    """transformers.AdamW (2022) as the Trainer ran it: for-loop, state made at the first step."""

    def __init__(self, params, lr=5e-5, betas=(0.9, 0.999), eps=1e-6):
        self.params, self.lr, self.betas, self.eps, self.state = list(params), lr, betas, eps, {}

    @torch.no_grad()
    def step(self):
        b1, b2 = self.betas
        for p in self.params:
            if p.grad is None:
                continue
            st = self.state.get(p)
            if st is None:
                st = self.state[p] = {"step": 0, "exp_avg": torch.zeros_like(p), "exp_avg_sq": torch.zeros_like(p)}
            st["step"] += 1
            exp_avg, exp_avg_sq = st["exp_avg"], st["exp_avg_sq"]
            exp_avg.mul_(b1).add_(p.grad, alpha=1.0 - b1)
            exp_avg_sq.mul_(b2).addcmul_(p.grad, p.grad, value=1.0 - b2)
            denom = exp_avg_sq.sqrt().add_(self.eps)
            step_size = self.lr * (1.0 - b2 ** st["step"]) ** 0.5 / (1.0 - b1 ** st["step"])
            p.addcdiv_(exp_avg, denom, value=-step_size)


class SoftmaxKeepingInput(torch.autograd.Function):
    """softmax (log=False) or log_softmax (log=True) as PyTorch 1.10 differentiated them:
    derivatives.yaml's formulas named `self` (_softmax_backward_data(grad, result, dim, self)),
    so autograd kept the input beside the result until the backward, though the kernels read
    only the result (pytorch/pytorch issue 64000; the formulas take self's dtype only since pull
    66018, October 2021, PyTorch 1.11). The runs were made on 11 January 2022 (the page's
    nvidia-smi), before 1.11."""

    @staticmethod
    def forward(ctx, x, dim, log):
        y = (torch.log_softmax if log else torch.softmax)(x, dim)
        ctx.save_for_backward(x, y)
        ctx.dim, ctx.log = dim, log
        return y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        backward = torch._log_softmax_backward_data if ctx.log else torch._softmax_backward_data
        return backward(grad, y, ctx.dim, x.dtype), None, None


def softmax_keeping_input(x, dim=None, **kwargs):
    return SoftmaxKeepingInput.apply(x, dim, False)


def cross_entropy_keeping_input(logits, labels, **kwargs):
    return nn.functional.nll_loss(SoftmaxKeepingInput.apply(logits, -1, True), labels)


class SkipProducts(TorchDispatchMode):
    """Matrix products answered by an uninitialised tensor of their shape (see the docstring)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if name in ("mm", "addmm", "bmm", "baddbmm"):
            a, b = (args[0], args[1]) if name in ("mm", "bmm") else (args[1], args[2])
            shape = (*a.shape[:-1], b.shape[-1])
            return torch.empty(shape, dtype=a.dtype)
        return func(*args, **kwargs)


def trace(batch, accumulation, steps):
    """[(address, signed bytes, top-level op index or None, phase)] of `steps` optimizer steps."""
    if KEEP_SOFTMAX_INPUT:
        nn.functional.softmax, nn.functional.cross_entropy = softmax_keeping_input, cross_entropy_keeping_input
    try:
        return trace_steps(batch, accumulation, steps)
    finally:
        nn.functional.softmax, nn.functional.cross_entropy = SOFTMAX, CROSS_ENTROPY


def trace_steps(batch, accumulation, steps):
    torch.manual_seed(0)
    model = ForSequenceClassification(LargeConfig)
    ref.with_native_dropout(model)
    model.train()
    opt = AdamW(model.parameters())
    g = torch.Generator().manual_seed(0)
    with torch.profiler.profile(profile_memory=True) as prof:
        with SkipProducts():
            for step in range(steps):
                with torch.profiler.record_function("step%d" % step):
                    for _ in range(accumulation):
                        ids = torch.randint(0, LargeConfig.vocab_size, (batch, SEQ), generator=g)
                        labels = torch.randint(0, 2, (batch,), generator=g)
                        loss = model(ids, labels) / accumulation
                        loss.backward()
                        del ids, labels, loss
                    with torch.profiler.record_function("Optimizer.step"):
                        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                        opt.step()
                    model.zero_grad(set_to_none=False)
    return ar.events_of(prof)


def tensors(batch, accumulation, steps):
    """The trace at `batch` with the operators' own buffers dropped."""
    t = trace(batch, accumulation, steps)
    k = ar.kept(t)
    print("  traced batch %d: %d events, %d kept" % (batch, len(t), len(k)), file=sys.stderr)
    return k


def weight_sizes():
    """The bytes of each parameter, allocated before the steps (the runs' model.to("cuda"))."""
    model = ForSequenceClassification(LargeConfig)
    return [p.numel() * p.element_size() for p in model.parameters()]


def run(label, batch, accumulation, published, steps, weights):
    if batch == 1 or batch in TRACE_BATCHES:
        t0 = tensors(batch, accumulation, steps)
        events = [(e[0], e[1]) for e in t0]
    else:
        t0, t1 = (tensors(b, accumulation, steps) for b in TRACE_BATCHES)
        events = ar.at_batch(t0, t1, batch, TRACE_BATCHES)
    alloc = ar.CachingAllocator()
    for w in weights:
        alloc.malloc(w)
    base = alloc.reserved
    alloc, growth = ar.replay(events, alloc, phases=[e[3] for e in t0])
    peak = alloc.peak_reserved / MIB + CONTEXT_MIB
    print("%-26s weights %5.0f MiB  allocated peak %6.0f MiB  reserved peak %6.0f MiB (%+.1f%% over "
          "allocated)  + context %6.0f MiB  published %6d MiB (%+.1f%%)" % (
              label, base / MIB, alloc.peak_allocated / MIB, alloc.peak_reserved / MIB,
              100.0 * (alloc.peak_reserved / alloc.peak_allocated - 1.0), peak, published,
              100.0 * (peak / published - 1.0)))
    for phase in sorted(growth):
        print("    reserve grown in %-18s %7.0f MiB" % (phase, growth[phase] / MIB))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=3, help="optimizer steps traced (default 3)")
    ap.add_argument("--layers", type=int, default=24, help="encoder layers (24: bert-large; fewer to try it)")
    ap.add_argument("--softmax-saves", choices=("output", "output_and_input"), default="output_and_input",
                    help="what autograd keeps of softmax and log_softmax: output_and_input as PyTorch "
                    "1.10, which the runs used (the default), or output as PyTorch 1.11 and later")
    args = ap.parse_args()
    global KEEP_SOFTMAX_INPUT
    KEEP_SOFTMAX_INPUT = args.softmax_saves == "output_and_input"
    print("softmax and log_softmax keep: %s" % args.softmax_saves)
    torch.set_num_threads(2)
    LargeConfig.num_hidden_layers = args.layers
    weights = weight_sizes()
    for label, batch, accumulation, published in RUNS:
        run(label, batch, accumulation, published, args.steps, weights)


if __name__ == "__main__":
    main()
