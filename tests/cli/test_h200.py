#!/usr/bin/python3
"""tests/cli/test_h200.py - dnnsat's training memory against measurements on an
NVIDIA H200 (tests/reference/h200_cnn_train_peak.csv and
h200_transformer_train_peak.csv, made by tests/reference/gen_gpu_measurements.py
with PyTorch 2.11, CUDA 13.0, cuDNN 9.19, transformers 5.17 and peft 0.21: 69
CNN runs of 11 models at batch 8-256, fp32, autocast fp16/bf16 and
cudnn.benchmark; 25 transformer runs: BERT, GPT-2, ViT and LLaMA with SDPA or
eager attention, autocast, gradient checkpointing and LoRA).

Each run is compared at three levels, with dnnsat's breakdown:
  allocated  torch.cuda.max_memory_allocated against the expected peak less the
             context and the allocator's reserve: weights, gradients,
             optimizer state, activations, temporaries and workspaces, the part
             the cost model derives from the operators
  reserved   torch.cuda.max_memory_reserved against the peak less the context
  device     max_memory_reserved + the memory in use outside the allocator
             (cudaMemGetInfo) against the whole expected peak, and the safe
             estimate against it

Checks: every allocated-level error within -6%..+30% and their mean absolute
error within 5% (before the cross-entropy's backward gradient and autocast's
fp32 GELU chain were modelled, GPT-2 under bf16 autocast was 31% low); the
safe estimate never below the device-level measurement (ResNet-18 at batch 256
was 1.7% below until cost model 1.4.8) except on the runs in KNOWN_SAFE_MISSES,
which must still miss (a fix removes them from the list).
The device-level figures are printed, not checked: the caching allocator's
reserve on these runs is larger than the model's (ResNet-18/34, VGG-11 and
AlexNet, up to 30% low; docs/memory-accuracy.md).
The training step's time is compared too (step_ms: the median of 5 timed
steps after 3): Kendall's tau of the predicted step times against the
measured ones over all runs at least 0.80 (0.59 until cost model 1.4.7, when
fp32 convolutions ran at the FP32 rate while PyTorch's cuDNN takes TF32
tensor cores: ResNet-50 at batch 256 was predicted 398 ms for 117 measured),
and no fp32 CNN run predicted more than 50% slow. The signed errors are
printed (docs/latency.md).
Prints "N passed, N failed".
"""
import csv
import os

import statistics
import sys

from clitest import TOP, check, estimate_json, report

sys.path.insert(0, os.path.join(TOP, "bench", "latency"))
import fit_latency  # noqa: E402  (kendall_tau: one copy)

MIB = 1 << 20
REF = os.path.join(TOP, "tests", "reference")
MODELS = {
    "efficientnet_b0": ["--model", os.path.join(TOP, "examples", "models", "efficientnet_b0.json")],
    "inception_v3": ["--model", os.path.join(TOP, "examples", "models", "inception_v3.json"), "resolution=299"],
    "xception": ["--model", os.path.join(TOP, "examples", "models", "xception.json"), "resolution=224"],
}
# runs whose device-level measurement the safe estimate does not cover (none
# since cost model 1.4.8: ResNet-18 at batch 256 was 1.7% below until the safe
# estimate held a forward and a backward workspace block at cuDNN 9's measured
# size, docs/memory-accuracy.md)
KNOWN_SAFE_MISSES = set()


def attention_of(r):
    """The run's attention kernel as dnnsat names it; None for torchvision's ViT, whose
    nn.MultiheadAttention takes the template's default."""
    return r.get("attention") if not r["model"].startswith("vit") else None


def args_of(r, optimizer):
    a = MODELS.get(r["model"], ["--preset", r["model"]]) + [
        "batch_size=" + r["batch"], "--device", "h200", "--optimizer", optimizer, "--dtype", r["dtype"]]
    if r.get("seq_len") not in (None, "", "0"):
        a.append("seq_len=" + r["seq_len"])
    if attention_of(r):
        a += ["--attention", attention_of(r)]
    if r.get("checkpointing") == "1":
        a.append("--checkpointing")
    if r.get("lora_r"):
        a += ["--lora-rank", r["lora_r"], "--lora-targets", r["lora_targets"]]
    if r.get("use_dora") == "1":
        a += ["--use-dora"]
    return a


def name_of(r):
    n = "%s b%s" % (r["model"], r["batch"])
    if r.get("seq_len") not in (None, "", "0"):
        n += " s" + r["seq_len"]
    n += " " + r["dtype"]
    if attention_of(r):
        n += " " + attention_of(r)
    if r.get("checkpointing") == "1":
        n += " ckpt"
    if r.get("cudnn_benchmark") == "1":
        n += " benchmark"
    if r.get("lora_r"):
        n += (" dora" if r.get("use_dora") == "1" else " lora") + r["lora_r"]
    return n


def main():
    rows = []
    for fn, opt in (("h200_cnn_train_peak.csv", "adam"), ("h200_transformer_train_peak.csv", "adamw")):
        with open(os.path.join(REF, fn)) as f:
            rows += [(r, opt) for r in csv.DictReader(f)]
    check("94 measured runs", len(rows) == 94, len(rows))
    print("%-42s %8s %7s | %8s %7s | %8s %7s %8s %7s" % ("run (MiB)", "alloc", "error", "reserved", "error",
                                                         "device", "error", "safe", "error"))
    alloc_err, dev_err, misses, steps = [], [], set(), []
    for r, opt in rows:
        name = name_of(r)
        d, err = estimate_json(*args_of(r, opt))
        check(name + ": estimated", d is not None, err)
        if d is None:
            continue
        m = d["costs"]["memory"]
        b = m["breakdown"]
        peak = m["training_peak_bytes"]
        ma, mr = int(r["max_allocated"]), int(r["max_reserved"])
        dev = mr + int(r["outside_allocator"])
        ea = 100.0 * (peak - b["context"] - b["allocator"] - ma) / ma
        er = 100.0 * (peak - b["context"] - mr) / mr
        ed = 100.0 * (peak - dev) / dev
        es = 100.0 * (m["safe_peak_bytes"] - dev) / dev
        print("%-42s %8.0f %+6.1f%% | %8.0f %+6.1f%% | %8.0f %+6.1f%% %8.0f %+6.1f%%" % (
            name, ma / MIB, ea, mr / MIB, er, dev / MIB, ed, m["safe_peak_bytes"] / MIB, es))
        check(name + ": allocated within -6%..+30% of the measurement", -6 <= ea <= 30, "%+.1f%%" % ea)
        if es < 0:
            misses.add(name)
        steps.append((name, 1e3 * d["costs"]["latency"]["training_step_seconds"], float(r["step_ms"]),
                      r["dtype"] == "fp32" and "seq_len" not in r and not r["model"].startswith("vit")))
        alloc_err.append(ea)
        dev_err.append(ed)
    for name in sorted(misses - KNOWN_SAFE_MISSES):
        check(name + ": the safe estimate is not below the measurement", False)
    for name in sorted(KNOWN_SAFE_MISSES - misses):
        check(name + ": listed in KNOWN_SAFE_MISSES but now covered: remove it", False)
    if alloc_err:
        mae = sum(abs(e) for e in alloc_err) / len(alloc_err)
        print("allocated: mean absolute error %.1f%%, from %+.1f%% to %+.1f%%" % (mae, min(alloc_err), max(alloc_err)))
        check("allocated: mean absolute error within 5%", mae <= 5, "%.1f%%" % mae)
        dmae = sum(abs(e) for e in dev_err) / len(dev_err)
        print("device: mean absolute error %.1f%%, from %+.1f%% to %+.1f%%, %d of %d more than 10%% low; "
              "safe estimate below on %d (%s)" % (dmae, min(dev_err), max(dev_err), sum(e < -10 for e in dev_err),
                                                 len(dev_err), len(misses), ", ".join(sorted(misses)) or "none"))
    step_times(steps)
    raise SystemExit(report())


def step_times(steps):
    """The training step's time: each run's prediction against step_ms, then tau and the errors."""
    print("\n%-42s %9s %9s %7s" % ("run (step ms)", "measured", "predicted", "error"))
    err = []
    for name, pred, meas, fp32_cnn in steps:
        e = 100.0 * (pred - meas) / meas
        err.append(e)
        print("%-42s %9.1f %9.1f %+6.1f%%" % (name, meas, pred, e))
        if fp32_cnn:
            check(name + ": step time not predicted more than 50% slow", e <= 50, "%+.1f%%" % e)
    tau = fit_latency.kendall_tau([p for _, p, _, _ in steps], [m for _, _, m, _ in steps])
    print("step time: Kendall tau %.3f, median absolute error %.1f%%, median signed %+.1f%%, from %+.1f%% to %+.1f%%" % (
        tau, statistics.median(abs(e) for e in err), statistics.median(err), min(err), max(err)))
    check("step time: Kendall tau at least 0.80", tau >= 0.80, "%.3f" % tau)


if __name__ == "__main__":
    main()
