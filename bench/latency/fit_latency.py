#!/usr/bin/env python3
"""fit_latency.py - fits the latency model's host and GPU constants to the
measured latency of all 15,625 NAS-Bench-201 cells (HELP, GTX 1080 Ti and
Titan Xp at batch 1, 32 and 256) and to DeepBench's FP32 convolution times
(GTX 1080 Ti, P100, V100, T4), and writes them to costmodel/perf_fit.h.

Design: dnnsat itself gives each operator's latency inputs (MACs, bytes moved,
other FLOPs, kernel area, kernels launched, cuDNN/cuBLAS calls) through
`dnnsat estimate --per-op --json`. A cell's operators are the fixed network's
plus its six edges', so five runs per batch (all edges one operation) give
the operators of every cell. This script evaluates perf_model.c's formula
(per-operator host and GPU time, the issue queue) on those inputs for given
constants and searches the constants that minimise the squared log error on
the FIT device (default gtx-1080-ti, all three batch sizes), then reports
Kendall tau, the median absolute and the median signed percentage error
on both GPUs (the other GPU is the held-out check), with FLOPs' tau beside.

NAS-Bench-201's convolutions have 16, 32 and 64 channels, the same MACs in
each stage, and every cell repeats in all three stages: its latencies tell a
convolution's cost summed over the three shapes, not how efficiency grows with
the channel count. So the search also fits perf_model.c's conv_seconds to
DeepBench's measured forward times (../shared/reference-data/deepbench/
convolution.csv, the FP32 sheets of the GTX 1080 Ti, P100, V100 and T4, shapes
with at least 16 input channels: ResNet, VGG, GoogLeNet and speech layers of
8-2048 channels), each kernel's time predicted as the larger of
conv_seconds and its bytes over the bandwidth, weighted by DEEPBENCH_WEIGHT
per row in the squared log error. The Titan Xp's DeepBench rows stay out, as
its HELP columns do. PF_CONV_BWD_SLOW, which no inference latency sees, is
DeepBench's median ratio of the measured backward time (input plus weight
gradients) to twice the fitted forward formula.

Usage: bench/latency/fit_latency.py [--dnnsat ./dnnsat] [--fit-device gtx-1080-ti]
       [--sample N] [--write costmodel/perf_fit.h]
Plain Python 3 (no numpy): Kendall tau by merge sort, the search by
coordinate descent on a log scale.
"""
import argparse
import csv
import functools
import json
import math
import os
import random
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# the shared data beside the checkout (../shared), or where DNNSAT_SHARED says
SHARED = os.environ.get("DNNSAT_SHARED", os.path.join(ROOT, "..", "shared"))
HELP = os.path.join(SHARED, "reference-data", "help_nb201_latency_pascal.csv")
OPS = ["none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3"]
DEVICES = {"gtx-1080-ti": "1080ti", "titan-xp": "titanxp"}
BATCHES = [1, 32, 256]
NAMES = ["PF_HOST_KERNEL_S", "PF_HOST_LIB_S", "PF_MEM_EFF", "PF_CONV_EFF_1X1", "PF_CONV_EFF_KXK",
         "PF_CONV_TILE_FIXED"]
DEEPBENCH = os.path.join(SHARED, "reference-data", "deepbench", "convolution.csv")
# DeepBench result files (FP32 sheets) and the catalog devices they ran on
DEEPBENCH_DEVICES = {"train_DeepBench_NV_1080Ti": "gtx-1080-ti", "train_DeepBench_NV_P100": "p100-pcie-16gb",
                     "train_DeepBench_NV_V100": "v100-16gb", "train_DeepBench_NV_T4": "t4"}
DEEPBENCH_MIN_CIN = 16
# weight of one DeepBench row against one HELP cell x batch in the loss: the
# HELP rankings at batch 256 stay where the fit on HELP alone had them
DEEPBENCH_WEIGHT = 0.01
# gtx-1080-ti's GEMM efficiency in perf_model.c (linear layers)
GEMM_EFF = 0.83


def edge_of(path):
    """(slot key, edge index) of an edge operator's path, else None."""
    if ".options." not in path:
        return None
    pre = path.split(".options.")[0]
    m = re.search(r"/cell\[(\d)\](?:\.branches\[(\d)\])?", pre)
    node, br = int(m.group(1)), int(m.group(2) or 0)
    edge = {1: 0, 2: 1, 3: 3}[node] + br
    return pre, edge


def per_op(dnnsat, device, batch, op):
    args = [dnnsat, "estimate", "--template", "nb201", "--device", device, "--inference",
            "--per-op", "--json", "batch_size=%d" % batch]
    args += ["edge%d=%s" % (e, op) for e in range(6)]
    out = subprocess.run(args, capture_output=True, text=True, check=False)
    if out.returncode not in (0, 1):
        sys.exit("dnnsat failed: %s\n%s" % (" ".join(args), out.stderr))
    costs = json.loads(out.stdout)["costs"]
    return costs["operators"], costs["latency"]["inference_seconds"], costs["macs"]


@functools.lru_cache(maxsize=None)
def catalog():
    """schemas/devices.json's devices by name (read once)"""
    with open(os.path.join(ROOT, "schemas", "devices.json")) as f:
        return {d["name"]: d for d in json.load(f)["devices"]}


def device_specs(name):
    d = catalog().get(name)
    if d is None:
        sys.exit("no device " + name)
    return d["peak_flops"]["fp32"], d["memory_bandwidth_bytes_per_s"]


def read_defines(path):
    """the constants a header write_defines wrote: {name: value}"""
    with open(path) as f:
        return {n: float(v) for n, v in re.findall(r"#define\s+(PF_\w+)\s+(\S+)", f.read())}


def tiles(rows, cols):
    """outputs of a GEMM of rows x cols in whole 128 x 64 tiles (op_conv.c's tile_out)"""
    return -(-rows // 128) * 128 * (-(-cols // 64) * 64)


def feature(o):
    """(macs, flops_other, bytes, kernel_area, kernels, library calls, tile_out,
    tile_tap_macs); the last two as op_conv.c builds them (convolutions)"""
    li = o["latency_inputs"]
    tout = ttap = 0
    if li["kernel_area"] > 0 and o["macs"] > 0:
        out = 1
        for d in o["shape"]:
            out *= d
        cout = o["shape"][1]
        tout = tiles(out // cout, cout)
        ttap = tout * (o["macs"] // (out * li["kernel_area"]))
    return (o["macs"], li["flops_other"], li["forward_bytes"], li["kernel_area"],
            li["kernels"], li["library_calls"], tout, ttap)


def conv_seconds(ttap, area, tout, peak, k):
    """perf_model.c's conv_seconds (forward)"""
    e1, ek, fixed = k[3], k[4], k[5]
    return (max(2.0 * ttap * area / (peak * ek), 2.0 * ttap / (peak * e1))
            + 2.0 * fixed * tout / (peak * e1))


class Net:
    """The operators of every cell at one batch size on one device."""

    def __init__(self, dnnsat, device, batch):
        self.skeleton, self.slots, self.macs = [], {}, {}
        self.dnnsat_seconds = {}
        for o, name in enumerate(OPS):
            ops, secs, macs = per_op(dnnsat, device, batch, name)
            self.dnnsat_seconds[name] = secs
            self.macs[name] = macs
            seen = set()
            for op in ops:
                e = edge_of(op["path"])
                if e is None:
                    if o == 0:
                        self.skeleton.append(("op", feature(op)))
                    continue
                key = e[0]
                if o == 0 and key not in seen:
                    self.skeleton.append(("slot", key, e[1]))
                seen.add(key)
                self.slots.setdefault((key, o), []).append(feature(op))
        self.peak, self.bw = device_specs(device)

    def cell_ops(self, cell):
        out = []
        for it in self.skeleton:
            if it[0] == "op":
                out.append(it[1])
            else:
                out.extend(self.slots.get((it[1], cell[it[2]]), []))
        return out

    def latency(self, ops, k):
        hk, hl, me = k[0], k[1], k[2]
        h = t = 0.0
        inv_bw = 1.0 / (self.bw * me)
        for macs, fo, by, area, kern, lib, tout, ttap in ops:
            if kern == 0:
                continue
            if area > 0:
                comp = conv_seconds(ttap, area, tout, self.peak, k)
            else:
                comp = 2.0 * macs / (self.peak * GEMM_EFF)
            comp += fo / (self.peak * 0.5)
            g = max(comp, by * inv_bw)
            h += hk * kern + hl * lib
            t = max(t, h) + g
        return max(t, h)


def kendall_tau(x, y):
    """Kendall tau-b, O(n log n) (Knight's algorithm)."""
    n = len(x)
    pairs = sorted(zip(x, y))
    def count_ties(v):
        s, run = 0, 1
        for i in range(1, len(v) + 1):
            if i < len(v) and v[i] == v[i - 1]:
                run += 1
            else:
                s += run * (run - 1) // 2
                run = 1
        return s
    xs = [p[0] for p in pairs]
    tx = count_ties(xs)
    txy, run = 0, 1
    for i in range(1, n + 1):
        if i < n and pairs[i] == pairs[i - 1]:
            run += 1
        else:
            txy += run * (run - 1) // 2
            run = 1
    ys = [p[1] for p in pairs]
    swaps = 0
    buf = ys[:]
    width = 1
    while width < n:   # bottom-up merge sort counting inversions
        out = []
        for lo in range(0, n, 2 * width):
            a, b = buf[lo:lo + width], buf[lo + width:lo + 2 * width]
            i = j = 0
            while i < len(a) and j < len(b):
                if b[j] < a[i]:
                    out.append(b[j]); swaps += len(a) - i; j += 1
                else:
                    out.append(a[i]); i += 1
            out.extend(a[i:]); out.extend(b[j:])
        buf = out
        width *= 2
    ty = count_ties(buf)
    n0 = n * (n - 1) // 2
    num = n0 - tx - ty + txy - 2 * swaps
    return num / math.sqrt((n0 - tx) * (n0 - ty))


def write_defines(f, guard, names, values):
    """ends a generated header's comment, then its include guard and one
    #define per constant (fit_rnn.py writes its header with it too)"""
    f.write(" */\n#ifndef %s\n#define %s\n\n" % (guard, guard))
    width = max([18] + [len(n) for n in names])
    for n, v in zip(names, values):
        f.write("#define %-*s %.4g\n" % (width, n, v))
    f.write("\n#endif\n")


def median(v):
    s = sorted(v)
    m = len(s) // 2
    return s[m] if len(s) % 2 else 0.5 * (s[m - 1] + s[m])


def load_help():
    cells, meas = [], {}
    with open(HELP) as f:
        hdr = f.readline().strip().split(",")
        for line in f:
            r = dict(zip(hdr, line.strip().split(",")))
            ops = re.findall(r"\|([a-z_0-9]+)~\d", r["arch_str"])
            cells.append(tuple(OPS.index(o) for o in ops))
            for c in hdr[2:]:
                meas.setdefault(c, []).append(float(r[c]) * 1e-3)
    return cells, meas


def load_deepbench():
    """DeepBench's FP32 convolutions on DEEPBENCH_DEVICES with at least
    DEEPBENCH_MIN_CIN input channels: dicts of the conv_seconds inputs, the
    bytes moved (input, output, weights in fp32), the device's peak and
    bandwidth and the measured forward and backward seconds"""
    def num(v):
        try:
            return float(v)
        except ValueError:
            return None
    rows = []
    with open(DEEPBENCH) as f:
        for r in csv.DictReader(f):
            dev = DEEPBENCH_DEVICES.get(r["device_file"])
            if dev is None or "FP32" not in r["sheet"] or num(r["fwd_ms"]) is None:
                continue
            w, h, c, n, kk, s, rr = (int(r[x]) for x in ("W", "H", "C", "N", "K", "S_filter_w", "R_filter_h"))
            if c < DEEPBENCH_MIN_CIN:
                continue
            ph, pw, sh, sw = (int(r[x]) for x in ("pad_h", "pad_w", "stride_h", "stride_w"))
            p, q = (h + 2 * ph - rr) // sh + 1, (w + 2 * pw - s) // sw + 1
            peak, bw = device_specs(dev)
            tout = tiles(n * p * q, kk)
            bi, bp = num(r["bwd_inputs_ms"]), num(r["bwd_params_ms"])
            rows.append({"device": dev, "peak": peak, "bw": bw, "area": rr * s, "tout": tout, "ttap": tout * c,
                         "bytes": 4 * (n * c * h * w + n * kk * p * q + kk * c * rr * s),
                         "fwd": num(r["fwd_ms"]) * 1e-3,
                         "bwd": (bi + bp) * 1e-3 if bi and bp else None})
    return rows


def deepbench_forward(r, k):
    return max(conv_seconds(r["ttap"], r["area"], r["tout"], r["peak"], k), r["bytes"] / (r["bw"] * k[2]))


def loss(nets, cells, meas, dev, k, db):
    s = 0.0
    for b in BATCHES:
        net, y = nets[(dev, b)], meas["%s_%d" % (DEVICES[dev], b)]
        for i in cells:
            s += math.log(net.latency(net.ops_cache[i], k) / y[i]) ** 2
    for r in db:
        s += DEEPBENCH_WEIGHT * math.log(deepbench_forward(r, k) / r["fwd"]) ** 2
    return s


def descend(loss_of, k0, bounds, min_step):
    """coordinate descent on a log scale: each constant in turn times
    exp(+-step) (a zero tries 1e-6), kept within bounds, while the loss
    falls; the step halves when no move helps, down to min_step. Returns the
    constants and their loss (fit_rnn.py searches with it too)."""
    k = list(k0)
    best = loss_of(k)
    step = 0.5
    while step > min_step:
        improved = False
        for j in range(len(k)):
            for sgn in (1, -1):
                trial = list(k)
                trial[j] = k[j] * math.exp(sgn * step) if k[j] > 0 else 1e-6
                trial[j] = min(max(trial[j], bounds[j][0]), bounds[j][1])
                l = loss_of(trial)
                if l < best:
                    best, k, improved = l, trial, True
        if not improved:
            step /= 2
    return k, best


def fit(nets, cells, meas, dev, k0, db):
    bounds = [(1e-6, 2e-4), (0.0, 2e-4), (0.2, 1.0), (0.05, 2.0), (0.05, 3.0), (0.0, 1000.0)]
    return descend(lambda k: loss(nets, cells, meas, dev, k, db), k0, bounds, 0.01)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dnnsat", default=os.path.join(ROOT, "dnnsat"))
    ap.add_argument("--fit-device", default="gtx-1080-ti", choices=sorted(DEVICES))
    ap.add_argument("--sample", type=int, default=600, help="cells the search fits on (all are reported)")
    ap.add_argument("--write", default=None, help="header to write the constants to")
    a = ap.parse_args()
    cells, meas = load_help()
    nets = {}
    for dev in DEVICES:
        for b in BATCHES:
            nets[(dev, b)] = net = Net(a.dnnsat, dev, b)
            net.ops_cache = [net.cell_ops(c) for c in cells]
    rnd = random.Random(201)
    sample = rnd.sample(range(len(cells)), min(a.sample, len(cells)))
    db = load_deepbench()
    k0 = [20e-6, 40e-6, 0.8, 0.5, 1.0, 20.0]
    k, l = fit(nets, sample, meas, a.fit_device, k0, db)
    # backward: the measured input + weight gradient time over twice the forward formula
    bwd = math.exp(median([math.log(r["bwd"] / (2.0 * conv_seconds(r["ttap"], r["area"], r["tout"], r["peak"], k)))
                           for r in db if r["bwd"]]))
    names, consts = NAMES + ["PF_CONV_BWD_SLOW"], k + [bwd]
    print("fitted on %s, %d cells x %d batches and %d DeepBench convolutions (loss %.3f):" %
          (a.fit_device, len(sample), len(BATCHES), len(db), l))
    for n, v in zip(names, consts):
        print("  %-18s %.4g" % (n, v))
    dbrows = []
    print("\nDeepBench FP32 convolutions, predicted against measured (median signed, MdAPE %):")
    for dev in sorted(set(r["device"] for r in db)):
        fw = [math.log(deepbench_forward(r, k) / r["fwd"]) for r in db if r["device"] == dev]
        bw = [math.log(2.0 * bwd * conv_seconds(r["ttap"], r["area"], r["tout"], r["peak"], k) / r["bwd"])
              for r in db if r["device"] == dev and r["bwd"]]
        pc = lambda v: 100.0 * (math.exp(v) - 1.0)
        r = (dev, len(fw), pc(median(fw)), pc(median([abs(e) for e in fw])), pc(median(bw)), pc(median([abs(e) for e in bw])))
        dbrows.append(r)
        print("  %-15s %3d rows  forward %+6.1f  %5.1f   backward %+6.1f  %5.1f" % r)
    rows = []
    print("\n%-12s %5s %9s %9s %9s %9s %9s" % ("gpu", "batch", "tau", "tau_flops", "MdAPE%", "median%", "role"))
    for dev in DEVICES:
        for b in BATCHES:
            net, y = nets[(dev, b)], meas["%s_%d" % (DEVICES[dev], b)]
            # to 0.1 us, as tests/unit/test_latency.c: equal cells stay tied
            pred = [round(net.latency(o, k) * 1e7) / 1e7 for o in net.ops_cache]
            macs = [sum(f[0] for f in o) for o in net.ops_cache]
            err = [100.0 * (p - m) / m for p, m in zip(pred, y)]
            r = (dev, b, kendall_tau(pred, y), kendall_tau(macs, y), median([abs(e) for e in err]), median(err),
                 "fit" if dev == a.fit_device else "held out")
            rows.append(r)
            print("%-12s %5d %9.4f %9.4f %9.1f %+9.1f %9s" % r)
    if a.write:
        with open(a.write, "w") as f:
            f.write("/*\n * perf_fit.h - latency constants fitted by bench/latency/fit_latency.py\n"
                    " * (generated: do not edit; regenerate with\n"
                    " *   bench/latency/fit_latency.py --write costmodel/perf_fit.h).\n *\n"
                    " * Sources: measured inference latency of all 15,625 NAS-Bench-201 cells,\n"
                    " * ../shared/reference-data/help_nb201_latency_pascal.csv (HELP, MIT), fitted\n"
                    " * on the %s columns (batch 1, 32, 256; %d sampled cells, seed 201),\n"
                    " * minimising the squared log error of perf_model.c's queue model; the\n"
                    " * other GPU is held out. Eager PyTorch, FP32, no tensor cores. With them,\n"
                    " * at weight %g a row, %d measured FP32 convolution forward times of\n"
                    " * DeepBench (../shared/reference-data/deepbench/convolution.csv: GTX 1080 Ti,\n"
                    " * P100, V100, T4; at least %d input channels), which pin how efficiency\n"
                    " * grows with the channels where NAS-Bench-201 (16-64) has no data.\n *\n"
                    " *  PF_HOST_KERNEL_S  host time to issue one kernel (Python module call,\n"
                    " *                    dispatcher, cudaLaunchKernel)             [HELP]\n"
                    " *  PF_HOST_LIB_S     extra host time of a cuDNN/cuBLAS call (descriptors,\n"
                    " *                    algorithm lookup)                         [HELP]\n"
                    " *  PF_MEM_EFF        achieved fraction of the datasheet memory bandwidth\n"
                    " *                                                              [HELP]\n"
                    " *  PF_CONV_EFF_1X1   fraction of the FP32 peak a 1x1 convolution's MACs\n"
                    " *                    reach over whole 128 x 64 tiles    [HELP, DeepBench]\n"
                    " *  PF_CONV_EFF_KXK   the same for larger kernels (Winograd and FFT, counted\n"
                    " *                    against the direct MACs, can pass 1) [HELP, DeepBench]\n"
                    " *  PF_CONV_TILE_FIXED  fixed cost of one tile output, in MACs of the 1x1\n"
                    " *                    rate (operand prologue, the store)  [HELP, DeepBench]\n"
                    " *  PF_CONV_BWD_SLOW  backward (input + weight gradients) over twice the\n"
                    " *                    forward: DeepBench's median ratio          [DeepBench]\n *\n"
                    " * Check (Kendall tau, MdAPE %%, median signed error %%, FLOPs' tau):\n"
                    % (a.fit_device, len(sample), DEEPBENCH_WEIGHT, len(db), DEEPBENCH_MIN_CIN))
            for r in rows:
                f.write(" *   %-11s b%-3d tau %.3f  MdAPE %4.1f  signed %+5.1f  FLOPs tau %.3f  (%s)\n"
                        % (r[0], r[1], r[2], r[4], r[5], r[3], r[6]))
            f.write(" * DeepBench FP32 convolutions (median signed %, MdAPE %; forward fitted,\n"
                    " * backward through PF_CONV_BWD_SLOW):\n")
            for r in dbrows:
                f.write(" *   %-15s %3d rows  forward %+5.1f  %4.1f   backward %+5.1f  %4.1f\n" % r)
            write_defines(f, "DN_PERF_FIT_H", names, consts)
        print("wrote", a.write)


if __name__ == "__main__":
    main()
