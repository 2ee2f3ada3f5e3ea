#!/usr/bin/env python3
"""Record, on a real GPU, every allocation and free that PyTorch's caching allocator serves during
training steps, and every segment it reserves: the ground truth for
tests/reference/gen_alloc_replay.py, whose CPU trace has no cuDNN workspaces.

For each case (model, batch, precision) it trains three steps as gen_gpu_measurements.py does
(Adam lr 1e-3 for the CNNs, AdamW and the model's own loss for GPT-2), with
torch.cuda.memory._record_memory_history(context=None) on (sizes and order only, no stack
traces), then writes the allocator's device trace as CSV rows: case, seq (event order), action
(alloc, free_requested, free_completed, segment_alloc, segment_free, ...), addr (relative to the
lowest address seen, so files compare across runs), size and step (0-2: the trace's length
was read before each step). Also a summary per case: max_allocated, max_reserved, the number of segments and their sizes.

Prepared on 2026-12-04 for the next session lent a GPU: not yet run (the H200 lent that day was
no longer available when it was written); the H200 figures it is to explain are in
h200_cnn_train_peak.csv (ResNet-18 at batch 256 reserves 10684 MiB for 5719 MiB allocated;
gen_alloc_replay.py's CPU replay reserves 7784).

Run (on the GPU machine, from the repository root):
    PYTHONUNBUFFERED=1 python3 tests/reference/gen_gpu_alloc_trace.py --out DIR
"""

import argparse
import csv
import gc
import json
import os
import sys
import time

import torch
import torch.nn.functional as F
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
CASES = [("resnet18", 256, "fp32"), ("vgg11", 256, "fp32"), ("resnet50", 128, "fp32"), ("gpt2", 8, "mixed_bf16")]


def build(name, b):
    if name == "gpt2":
        import transformers as tf
        with torch.device("cuda"):
            model = tf.AutoModelForCausalLM.from_config(tf.GPT2Config(), attn_implementation="sdpa")
        ids = torch.randint(0, 50257, (b, 1024), device="cuda")
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def loss():
            return model(input_ids=ids, labels=ids, use_cache=False).loss
        return model, opt, loss
    model = torchvision.models.__dict__[name](weights=None).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(b, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (b,), device="cuda")

    def loss():
        return F.cross_entropy(model(x), y)
    return model, opt, loss


def run_case(name, b, dtype, w, summary):
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    torch.manual_seed(0)
    model, opt, loss_fn = build(name, b)
    model.train()
    torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python", max_entries=2000000)
    marks = []
    for step in range(3):
        marks.append(len(torch.cuda.memory._snapshot()["device_traces"][0]))
        if dtype == "mixed_bf16":
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = loss_fn()
        else:
            loss = loss_fn()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del loss
        torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    trace = snap["device_traces"][0]
    base = min([e["addr"] for e in trace if "addr" in e] or [0])
    case = "%s:%d:%s" % (name, b, dtype)
    step = -1
    for i, e in enumerate(trace):
        while step + 1 < len(marks) and i >= marks[step + 1]:
            step += 1
        w.writerow({"case": case, "seq": i, "action": e.get("action"), "addr": e.get("addr", 0) - base,
                    "size": e.get("size", 0), "step": step})
    segs = sorted((s["total_size"] for s in snap["segments"]), reverse=True)
    summary[case] = {"max_allocated": torch.cuda.max_memory_allocated(),
                     "max_reserved": torch.cuda.max_memory_reserved(), "segments": len(segs),
                     "segment_sizes": segs, "events": len(trace), "step_marks": marks}
    print(case, json.dumps({k: v for k, v in summary[case].items() if k != "segment_sizes"}), flush=True)
    del model, opt, loss_fn
    gc.collect()
    torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--deadline", type=float, default=150)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    summary = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
               "device": torch.cuda.get_device_name(0)}
    with open(os.path.join(a.out, "alloc_trace.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, ["case", "seq", "action", "addr", "size", "step"])
        w.writeheader()
        for name, b, dtype in CASES:
            if time.time() - t0 > a.deadline:
                print("deadline: skipping", name, flush=True)
                continue
            try:
                run_case(name, b, dtype, w, summary)
            except Exception as e:  # noqa: BLE001
                print("FAILED", name, repr(e)[:400], flush=True)
                torch.cuda.memory._record_memory_history(enabled=None)
    with open(os.path.join(a.out, "alloc_trace_summary.json"), "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
