#!/usr/bin/python3
"""bench/latency/h200_latency.py - the latency model on a GPU generation it was not fitted on.

tests/reference/h200_nb201_latency.csv holds the forward latency of 157 NAS-Bench-201 cells
(those of HELP's table whose index is a multiple of 100: C=16, N=5, 32x32, 10 classes, eval,
fp32; median of 10 timed runs after 3 warm-ups, CUDA-synchronised wall time) at batch 1, 32
and 256, measured on an NVIDIA H200 with PyTorch 2.11 (tests/reference/gen_gpu_measurements.py).
This prints, per batch, Kendall's tau-b of dnnsat's predicted latency (`--device h200-141gb
--inference`, rounded to 0.1 us as tests/unit/test_latency does) and of the MACs against the
measurement, the median absolute percentage error and the median signed error.

Then, per batch, what any model could reach on these measurements (ceiling_latency.py's method
on the H200's cells): Kendall's tau of each cell's group median (cells with the same counts of
convolutions and one-kernel edges, all a host-bound queue of per-kernel costs tells apart; or
the same five operation counts), taken from the H200 column itself (in sample, an upper bound
up to ties) or from the 1080 Ti's column of HELP's table at the same batch (all 15,625 cells:
what the operation counts rank on another GPU and host); the 1080 Ti's own measurement of the
same cells as the prediction; and the repeatability of the H200 measurement itself (each
cell's fastest of its 10 runs ranking their median).

Run from the repository root after a build (about 30 s; the ceiling needs HELP's table at
$DNNSAT_SHARED/reference-data, default ../shared, and is skipped without it):
    bench/latency/h200_latency.py
"""
import csv
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fit_latency as F  # noqa: E402  (kendall_tau: one copy)

TOP = os.environ.get("top_srcdir", ".")
DNNSAT = os.path.join(os.environ.get("top_builddir", "."), "dnnsat")
os.environ.setdefault("DNNSAT_DATA_DIR", os.path.join(TOP, "schemas"))


def predict(arch, batch):
    edges = [e.split("~")[0] for e in arch.replace("+", "").split("|") if e]
    args = [DNNSAT, "estimate", "--preset", "cifar10", "batch_size=%d" % batch, "--device", "h200-141gb",
            "--inference", "--json"] + ["edge%d=%s" % (i, e) for i, e in enumerate(edges)]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if p.returncode not in (0, 1):
        sys.exit("dnnsat failed: " + p.stderr)
    c = json.loads(p.stdout)["costs"]
    return round(c["latency"]["inference_seconds"] * 1e7) / 1e4, c["macs"]   # ms, 0.1 us


def main():
    with open(os.path.join(TOP, "tests", "reference", "h200_nb201_latency.csv")) as f:
        rows = list(csv.DictReader(f))
    print("%5s %4s %8s %10s %7s %13s %14s %14s" % ("batch", "n", "tau", "MACs' tau", "MdAPE", "median signed",
                                                   "measured (ms)", "predicted (ms)"))
    for batch in sorted({int(r["batch"]) for r in rows}):
        sel = [r for r in rows if int(r["batch"]) == batch]
        meas = [float(r["latency_ms"]) for r in sel]
        pred, macs = zip(*(predict(r["arch_str"], batch) for r in sel))
        err = [100 * (p - m) / m for p, m in zip(pred, meas)]
        print("%5d %4d %8.3f %10.3f %6.1f%% %+12.1f%% %14.2f %14.2f" % (
            batch, len(sel), F.kendall_tau(pred, meas), F.kendall_tau(macs, meas), statistics.median(abs(e) for e in err),
            statistics.median(err), statistics.median(meas), statistics.median(pred)))
    if os.path.exists(F.HELP):
        ceiling(rows)


def ceiling(rows):
    """The ceiling table of the docstring."""
    cells, help_meas = F.load_help()
    conv = lambda c: (sum(o in (2, 3) for o in c), sum(o in (0, 4) for o in c))   # noqa: E731
    counts = lambda c: tuple(sorted(c))                                             # noqa: E731
    print("\nceiling (Kendall tau): group medians in sample / from the 1080 Ti; the 1080 Ti's cells; repeatability")
    print("%5s %18s %18s %12s %14s" % ("batch", "conv,one-kernel", "op counts", "1080 Ti", "min vs median"))
    for batch in sorted({int(r["batch"]) for r in rows}):
        sel = [r for r in rows if int(r["batch"]) == batch]
        meas = [float(r["latency_ms"]) for r in sel]
        idx = [int(r["index"]) for r in sel]
        pascal = help_meas["1080ti_%d" % batch]
        out = []
        for key in (conv, counts):
            own = {}
            for i, m in zip(idx, meas):
                own.setdefault(key(cells[i]), []).append(m)
            other = {}
            for c, m in zip(cells, pascal):
                other.setdefault(key(c), []).append(m)
            out.append("%.3f / %.3f" % (
                F.kendall_tau([statistics.median(own[key(cells[i])]) for i in idx], meas),
                F.kendall_tau([statistics.median(other[key(cells[i])]) for i in idx], meas)))
        print("%5d %18s %18s %12.3f %14.3f" % (batch, out[0], out[1], F.kendall_tau([pascal[i] for i in idx], meas),
                                               F.kendall_tau([float(r["min_ms"]) for r in sel], meas)))


if __name__ == "__main__":
    main()
