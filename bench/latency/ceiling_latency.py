#!/usr/bin/env python3
"""ceiling_latency.py - how well can any model of a NAS-Bench-201 cell rank
HELP's measured latencies? The ceiling behind docs/latency.md's gap at
batch 1 and 32.

Design: a model that sees only which operations a cell has (not where) can at
best predict, for each group of cells with the same operations, one value;
the group's median measured latency, taken from the very column it is scored
on, is the best such predictor in sample (an upper bound for any fitted
model, up to ties: Kendall tau-b scores a tied pair as neither concordant
nor discordant, so a coarser grouping can score higher). Each grouping is
also scored with the medians taken from the other GPU's column (held out).
Three groupings: by (convolutions, one-kernel edges) where
nor_conv_1x1/3x3 are convolutions and none/avg_pool_3x3 one-kernel edges (a
host-bound cost model sees only these two counts), by the five operation
counts, and by the counts per cell node (which edges feed which node).

Whether the position of operations carries more: the two GPUs measured the
same 15,625 cells, so any effect of the cell's structure shows in both. The
script reports the Pearson correlation between the GPUs of each cell's
residual (its latency minus its operation-count group median), and the tau
of one GPU's measurements used directly as the prediction for the other
(a perfect per-cell model of the first GPU, noise included).

Usage: DNNSAT_SHARED=/work/shared bench/latency/ceiling_latency.py
Plain Python 3, a few seconds.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fit_latency as F  # noqa: E402  (load_help, kendall_tau: one copy)

CONV, LIGHT = (2, 3), (0, 4)   # indices in F.OPS
GROUPINGS = [
    ("conv,light", lambda c: (sum(o in CONV for o in c), sum(o in LIGHT for o in c))),
    ("op counts", lambda c: tuple(sorted(c))),
    ("per node", lambda c: (c[0], tuple(sorted(c[1:3])), tuple(sorted(c[3:6])))),
]


def group_median(cells, y, key):
    groups = {}
    for c, v in zip(cells, y):
        groups.setdefault(key(c), []).append(v)
    med = {k: statistics.median(v) for k, v in groups.items()}
    return [med[key(c)] for c in cells]


def pearson(a, b):
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    num = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    return num / (sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b)) ** 0.5


def main():
    cells, meas = F.load_help()
    other = {"1080ti": "titanxp", "titanxp": "1080ti"}
    print("Kendall tau of the group median: in sample / from the other GPU's column")
    print("%-12s" % "column" + "".join("%20s" % n for n, _ in GROUPINGS))
    for col in meas:
        gpu, b = col.split("_")
        y, o = meas[col], meas["%s_%s" % (other[gpu], b)]
        print("%-12s" % col + "".join("%11.4f /%7.4f" % (F.kendall_tau(group_median(cells, y, k), y),
                                                          F.kendall_tau(group_median(cells, o, k), y))
                                      for _, k in GROUPINGS))
    print("\ncross-GPU: residual after op counts, Pearson r; tau of the other GPU's raw measurement")
    counts = GROUPINGS[1][1]
    for b in F.BATCHES:
        a, t = meas["1080ti_%d" % b], meas["titanxp_%d" % b]
        ra = [y - m for y, m in zip(a, group_median(cells, a, counts))]
        rt = [y - m for y, m in zip(t, group_median(cells, t, counts))]
        print("batch %-4d residual r %+.3f   tau(1080 Ti -> Titan Xp) %.4f" % (b, pearson(ra, rt), F.kendall_tau(a, t)))


if __name__ == "__main__":
    main()
