#!/usr/bin/env python3
"""bwd_ratio.py - does a convolution's backward over its forward differ by GPU
architecture? DeepBench's FP32 convolution times (../shared/reference-data/
deepbench/convolution.csv, the train_* files; shapes with at least 16 input
channels, as fit_latency.py takes) answer it three ways:

 1. per result file (its 80 distinct shapes): the measured backward (input plus weight gradients) over
    twice the measured forward, median and time-weighted (sum over sum), and
    the median for 1x1 and larger kernels, with the file's cuDNN (specs.csv);
 2. paired: the V100's and the T4's ratio over another GPU's on the same
    shapes, median with a 95 % bootstrap interval (seed 1, 2,000 draws) and
    how many shapes the first GPU's ratio is the larger;
 3. per architecture class over fit_latency.py's four GPUs: the median
    measured ratio, and the median backward over twice the forward formula
    (perf_model.c's conv_seconds with the constants of costmodel/perf_fit.h),
    which is what PF_CONV_BWD_SLOW is fitted as (pooled over all four).

A per-architecture PF_CONV_BWD_SLOW is physical only if (1) and (3)'s
measured column differ by architecture; a difference in (3)'s formula column
alone is the forward formula's error on that GPU, not the backward's.

Usage: DNNSAT_SHARED=/work/shared bench/latency/bwd_ratio.py   (plain Python 3, ~1 s)
"""
import csv
import math
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fit_latency as fl  # noqa: E402  (its loaders, formula and paths)

ROOT = fl.ROOT
SPECS = os.path.join(fl.SHARED, "reference-data", "deepbench", "specs.csv")
ARCH = {"1080Ti": "pascal", "P100": "pascal", "TitanXp": "pascal", "TitanX_Pascal": "pascal",
        "M40": "maxwell", "TitanX": "maxwell", "V100": "volta", "T4": "turing"}
FIT_ARCH = {"gtx-1080-ti": "pascal", "p100-pcie-16gb": "pascal", "v100-16gb": "volta", "t4": "turing"}


def num(v):
    try:
        return float(v)
    except ValueError:
        return None


def constants():
    """the fitted constants in fit_latency.py's order, from perf_fit.h"""
    val = fl.read_defines(os.path.join(ROOT, "costmodel", "perf_fit.h"))
    return [val[n] for n in fl.NAMES], val["PF_CONV_BWD_SLOW"]


def measured():
    """{gpu: {shape: (fwd, bwd, kernel area)}} of the FP32 train_* files"""
    out = {}
    with open(fl.DEEPBENCH) as f:
        for r in csv.DictReader(f):
            if not r["device_file"].startswith("train_") or "FP32" not in r["sheet"]:
                continue
            fw, bi, bp = num(r["fwd_ms"]), num(r["bwd_inputs_ms"]), num(r["bwd_params_ms"])
            if not (fw and bi and bp) or int(r["C"]) < fl.DEEPBENCH_MIN_CIN:
                continue
            key = tuple(r[x] for x in ("W", "H", "C", "N", "K", "S_filter_w", "R_filter_h",
                                       "pad_w", "pad_h", "stride_w", "stride_h"))
            gpu = r["device_file"].replace("train_DeepBench_NV_", "")
            out.setdefault(gpu, {})[key] = (fw, bi + bp, int(r["S_filter_w"]) * int(r["R_filter_h"]))
    return out


def cudnn():
    with open(SPECS) as f:
        return {r["device_file"].replace("train_DeepBench_NV_", ""): r["Cudnn Version"]
                for r in csv.DictReader(f) if r["device_file"].startswith("train_")}


def gmed(v):
    return math.exp(fl.median([math.log(x) for x in v]))


def main():
    data, cd = measured(), cudnn()
    print("1. measured backward / (2 x forward), FP32, Cin >= %d" % fl.DEEPBENCH_MIN_CIN)
    print("   %-14s %-8s %-9s %5s %7s %7s %7s %7s" % ("gpu", "arch", "cuDNN", "rows", "median", "t-wtd", "1x1", "kxk"))
    for gpu in sorted(data, key=lambda g: (ARCH[g], g)):
        v = list(data[gpu].values())
        print("   %-14s %-8s %-9s %5d %7.3f %7.3f %7.3f %7.3f" % (
            gpu, ARCH[gpu], cd.get(gpu, "?"), len(v), gmed([b / (2 * f) for f, b, a in v]),
            sum(b for f, b, a in v) / sum(2 * f for f, b, a in v),
            gmed([b / (2 * f) for f, b, a in v if a == 1]), gmed([b / (2 * f) for f, b, a in v if a > 1])))
    print("\n2. paired on the same shapes: ratio(A) / ratio(B), median [95 % bootstrap], A larger")
    rnd = random.Random(1)
    for a in ("V100", "T4"):
        for b in sorted(data, key=lambda g: (ARCH[g], g)):
            if b == a:
                continue
            d = [math.log(data[a][k][1] / data[a][k][0]) - math.log(data[b][k][1] / data[b][k][0])
                 for k in data[a] if k in data[b]]
            boot = sorted(fl.median([rnd.choice(d) for _ in d]) for _ in range(2000))
            print("   %-4s / %-14s %2d shapes  %.3f [%.3f, %.3f]  %2d of %d" % (
                a, b, len(d), math.exp(fl.median(d)), math.exp(boot[50]), math.exp(boot[1949]),
                sum(x > 0 for x in d), len(d)))
    k, slow = constants()
    db = [r for r in fl.load_deepbench() if r["bwd"]]
    form = lambda r: fl.conv_seconds(r["ttap"], r["area"], r["tout"], r["peak"], k)
    print("\n3. per architecture class (fit_latency.py's GPUs; PF_CONV_BWD_SLOW = %.3f pooled)" % slow)
    print("   %-8s %5s %16s %22s %18s" % ("class", "rows", "measured ratio", "bwd / (2 x formula)", "forward formula"))
    for cls in ("pascal", "volta", "turing", "all"):
        rr = [r for r in db if cls == "all" or FIT_ARCH[r["device"]] == cls]
        print("   %-8s %5d %16.3f %22.3f %+17.1f%%" % (
            cls, len(rr), gmed([r["bwd"] / (2 * r["fwd"]) for r in rr]), gmed([r["bwd"] / (2 * form(r)) for r in rr]),
            100.0 * (gmed([fl.deepbench_forward(r, k) / r["fwd"] for r in rr]) - 1.0)))


if __name__ == "__main__":
    main()
