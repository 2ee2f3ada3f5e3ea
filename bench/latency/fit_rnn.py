#!/usr/bin/env python3
"""fit_rnn.py - fits the recurrence constants of the latency model (LSTM, GRU)
to DeepBench's measured FP32 recurrent layers and writes them to
costmodel/perf_fit_rnn.h.

Design: cuDNN runs a recurrent layer as one GEMM over every timestep for the
input projection, then a loop over the timesteps, each step a GEMM of the
N x H hidden state by the G*H x H recurrent weights plus the gate
elementwise kernels; the steps are sequential. DeepBench's rnn_bench.cu times
exactly that loop (CUDNN_SKIP_INPUT: no input projection) for one
unidirectional layer (tests/reference/deepbench_rnn.csv, from
tests/reference/gen_deepbench_rnn.py). perf_model.c prices one step as

    step = PF_RNN_STEP_S + max(G*H*H*4 / (bandwidth * PF_MEM_EFF),
                               2*N*G*H*H / (fp32 peak * PF_RNN_EFF))

(a fixed cost per step: the step's kernel launches and the small GEMM's
prologue, which dominate at small H and N; then the larger of reading the
recurrent weights once per step and the step's multiply-adds) and the
backward wrt inputs as the same form with PF_RNN_BWD_STEP_S and
PF_RNN_BWD_EFF. The backward wrt weights is one GEMM over all timesteps at
perf_model.c's FP32 GEMM efficiency (no constant of its own: this script
reports how close that is).

The constants come per device class, by compute capability: before Volta
(_SM6: Maxwell, Pascal) and from Volta on (_SM7). One set for both misses
both ways: per step Pascal's cuDNN reaches about 0.4 of the FP32 peak on
the step's GEMM and the V100 about 0.8 (GRU, H 2816, N 32: 390-460 us a step
on the three Pascal GPUs, 149 us on the V100), and a Pascal step's fixed
cost is nearly twice the V100's; pooled, Pascal came out 16-31% low and the
V100 35-42% high. The search minimises the squared log error of forward and
backward-data times, for _SM6 on the GTX 1080 Ti and P100 rows (the Titan
Xp's held out as the check), for _SM7 on the V100's (the only newer GPU
DeepBench measured recurrent layers on in FP32: the T4's cells are empty, so
nothing is held out). PF_MEM_EFF comes from costmodel/perf_fit.h
(fit_latency.py), the devices' peaks, bandwidths and compute capabilities
from schemas/devices.json.

Usage: bench/latency/fit_rnn.py [--write costmodel/perf_fit_rnn.h]
Plain Python 3 (no numpy): coordinate descent on a log scale.
"""
import argparse
import csv
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fit_latency as fl  # noqa: E402  (its catalog, search, median and header reader and writer)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(ROOT, "tests", "reference", "deepbench_rnn.csv")
# device class (perf_model.c: compute capability below 7, else 7 and later):
# the devices fitted on, the devices held out
CLASSES = (("SM6", ("gtx-1080-ti", "p100-pcie-16gb"), ("titan-xp",)),
           ("SM7", ("v100-16gb",), ()))
GEMM_EFF = 0.83          # perf_model.c: FP32 GEMM (DeepBench V100 median)
NAMES = ["PF_RNN_STEP_S", "PF_RNN_EFF", "PF_RNN_BWD_STEP_S", "PF_RNN_BWD_EFF"]


def device_specs():
    """{name: (fp32 peak, bandwidth, device class)}"""
    return {n: (d["peak_flops"]["fp32"], d["memory_bandwidth_bytes_per_s"],
                "SM6" if 0 < float(d.get("compute_capability", 0)) < 7 else "SM7")
            for n, d in fl.catalog().items()}


def load(specs):
    rows = []
    with open(DATA) as f:
        for r in csv.DictReader(f):
            if r["cell"] == "vanilla":
                continue        # torch.nn.RNN is not a dnnsat operator
            peak, bw, cls = specs[r["device"]]
            g, h, n, t = (int(r[k]) for k in ("gates", "hidden", "batch", "timesteps"))

            def ms(k):
                return float(r[k]) * 1e-3 if r[k] else None
            rows.append({"device": r["device"], "cls": cls, "cell": r["cell"], "peak": peak, "bw": bw,
                         "steps": t, "step_macs": n * g * h * h, "wbytes": 4 * g * h * h,
                         "fwd": ms("fwd_ms"), "bwd_in": ms("bwd_inputs_ms"), "bwd_w": ms("bwd_params_ms")})
    return rows


def step_seconds(r, fixed, eff, mem_eff):
    return fixed + max(r["wbytes"] / (r["bw"] * mem_eff), 2.0 * r["step_macs"] / (r["peak"] * eff))


def predict(r, k, mem_eff):
    fwd = r["steps"] * step_seconds(r, k[0], k[1], mem_eff)
    bwd_in = r["steps"] * step_seconds(r, k[2], k[3], mem_eff)
    bwd_w = 2.0 * r["steps"] * r["step_macs"] / (r["peak"] * GEMM_EFF)
    return fwd, bwd_in, bwd_w


def loss(rows, k, mem_eff):
    s = 0.0
    for r in rows:
        fwd, bwd_in, _ = predict(r, k, mem_eff)
        s += math.log(fwd / r["fwd"]) ** 2
        if r["bwd_in"]:
            s += math.log(bwd_in / r["bwd_in"]) ** 2
    return s


def fit(rows, mem_eff):
    bounds = [(1e-7, 1e-3), (0.05, 2.0), (1e-7, 1e-3), (0.05, 2.0)]
    return fl.descend(lambda k: loss(rows, k, mem_eff), [20e-6, 0.5, 20e-6, 0.5], bounds, 0.002)


def report(rows, devices, held_out, k, mem_eff):
    """per device: rows, then (median signed %, MdAPE %) of forward,
    backward-data and backward-weights"""
    out = []
    for dev in devices + held_out:
        errs = [[], [], []]
        for r in rows:
            if r["device"] != dev:
                continue
            p = predict(r, k, mem_eff)
            for i, m in enumerate((r["fwd"], r["bwd_in"], r["bwd_w"])):
                if m:
                    errs[i].append(100.0 * (p[i] - m) / m)
        out.append((dev, len(errs[0])) + tuple(x for e in errs for x in (fl.median(e), fl.median([abs(v) for v in e]))) +
                   ("held out" if dev in held_out else "fit",))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", default=None, help="header to write the constants to")
    a = ap.parse_args()
    mem_eff = fl.read_defines(os.path.join(ROOT, "costmodel", "perf_fit.h"))["PF_MEM_EFF"]
    specs = device_specs()
    rows = load(specs)
    names, consts, lines = [], [], []
    for cls, devices, held_out in CLASSES:
        if any(specs[d][2] != cls for d in devices + held_out):
            sys.exit("a device of class %s is not of that class in schemas/devices.json" % cls)
        fit_rows = [r for r in rows if r["device"] in devices]
        k, l = fit(fit_rows, mem_eff)
        print("%s: fitted on %d DeepBench LSTM/GRU rows of %s (loss %.3f, PF_MEM_EFF %g):"
              % (cls, len(fit_rows), ", ".join(devices), l, mem_eff))
        for n, v in zip(NAMES, k):
            print("  %-22s %.4g" % (n + "_" + cls, v))
        names += [n + "_" + cls for n in NAMES]
        consts += k
        for r in report(rows, devices, held_out, k, mem_eff):
            lines.append("%-15s %2d rows  fwd %+5.1f %4.1f  bwd-data %+5.1f %4.1f  bwd-weights %+5.1f %4.1f  (%s)" % r)
    print("\npredicted against measured (median signed %, MdAPE %):")
    for line in lines:
        print("  " + line)
    if a.write:
        with open(a.write, "w") as f:
            f.write("/*\n * perf_fit_rnn.h - recurrence constants of the latency model, fitted by\n"
                    " * bench/latency/fit_rnn.py (generated: do not edit; regenerate with\n"
                    " *   bench/latency/fit_rnn.py --write costmodel/perf_fit_rnn.h).\n *\n"
                    " * Source: DeepBench's measured FP32 recurrent layers (LSTM and GRU, one\n"
                    " * unidirectional layer, recurrence only: CUDNN_SKIP_INPUT), in\n"
                    " * tests/reference/deepbench_rnn.csv (tests/reference/gen_deepbench_rnn.py).\n"
                    " * Per device class: _SM6 before Volta (compute capability below 7; fitted\n"
                    " * on the GTX 1080 Ti and P100, the Titan Xp held out), _SM7 from Volta on\n"
                    " * (fitted on the V100, the only one measured).\n"
                    " * One timestep (N batch, H hidden, G gates) costs\n"
                    " *   STEP_S + max(G*H*H*4 / (bandwidth * PF_MEM_EFF), 2*N*G*H*H / (fp32 peak * EFF))\n *\n"
                    " *  PF_RNN_STEP_S_*      fixed GPU time of one forward step (the step's\n"
                    " *                       kernels, the small GEMM's prologue)   [DeepBench]\n"
                    " *  PF_RNN_EFF_*         fraction of the FP32 peak the step's GEMM reaches\n"
                    " *                                                             [DeepBench]\n"
                    " *  PF_RNN_BWD_STEP_S_*  the same two for a backward-data step [DeepBench]\n"
                    " *  PF_RNN_BWD_EFF_*\n *\n"
                    " * Check (median signed %%, MdAPE %%; backward wrt weights as one GEMM at\n"
                    " * perf_model.c's FP32 GEMM efficiency %g):\n" % GEMM_EFF)
            for line in lines:
                f.write(" *   %s\n" % line)
            fl.write_defines(f, "DN_PERF_FIT_RNN_H", names, consts)
        print("wrote", a.write)


if __name__ == "__main__":
    main()
