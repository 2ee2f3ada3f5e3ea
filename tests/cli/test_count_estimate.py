#!/usr/bin/python3
"""tests/cli/test_count_estimate.py - the solver and the estimate agree,
seen from the command line: `dnnsat count` over a space counts exactly the
configurations whose `dnnsat estimate` fits the budget.

The solver builds one model over the space's ranges (every alternative
and every copy of a repeated block, guarded) and decides whole boxes from
bounds; `estimate` builds the model of one configuration. Until cost model
1.4.2 the two disagreed (a storage lived until the last reader of any
alternative: vgg16_bn at batch 64 18.04 GB over the ranges, 17.22 GB at
the point), so count said "does not fit" for configurations estimate said
fit. test_model's test_bounds_invariant checks the models; this checks the
commands a user runs, on spaces that vary depth, width, batch and the
choices, for the expected and the safe estimate, in four workloads.

For each space: the estimate of every configuration (the ground truth),
then `count` at budgets equal to some configurations' figures and one
byte below them, which must count the configurations at or below the
budget, no more, no fewer. Prints "N passed, N failed".
"""
import itertools
import json
import os
import tempfile

from clitest import check, estimate_json, report, run

SPACES = [
    ("vgg16", {"batch_size": [32, 128], "convs3": [1, 3], "convs4": [1, 3], "width": [32, 64],
               "batch_norm": ["false", "true"]}),
    ("resnet18", {"batch_size": [32, 256], "layers1": [1, 2], "layers3": [2, 4], "width": [32, 64]}),
    ("mobilenet_v2", {"batch_size": [32, 128], "width_mult": [0.5, 1.0], "t": [4, 6]}),
    ("bert-base", {"batch_size": [8, 32], "seq_len": [128, 512], "layers": [2, 12], "hidden": [384, 768]}),
    ("cifar10", {"batch_size": [64, 256], "edge0": ["none", "nor_conv_3x3", "avg_pool_3x3"],
                 "edge3": ["skip_connect", "nor_conv_1x1"], "cells_per_stage": [1, 5]}),
]
WORKLOADS = [
    [],
    ["--dtype", "mixed_bf16", "--device", "h100-80gb"],
    ["--checkpointing"],
    ["--optimizer", "sgd", "--zero-grad", "zeros"],
]
SPACE_FILE = os.path.join(tempfile.mkdtemp(prefix="dnnsat-count-estimate."), "space.json")


def configs(space):
    names = list(space)
    for values in itertools.product(*(space[n] for n in names)):
        yield dict(zip(names, values))


def count(preset, budget, workload):
    rc, out, err = run("count", "--space", SPACE_FILE, "--preset", preset, "--budget", budget, "--json",
                       *workload)
    if rc not in (0, 1) or not out.strip():
        return None, err
    return int(json.loads(out)["feasible"]), ""


def main():
    for (preset, space), workload in itertools.product(SPACES, WORKLOADS):
        with open(SPACE_FILE, "w") as f:
            json.dump({k: {"_type": "choice", "_value": v} for k, v in space.items()}, f)
        figures = []
        for cfg in configs(space):
            d, err = estimate_json("--preset", preset, *workload, *("%s=%s" % kv for kv in cfg.items()))
            check("%s %s estimate %s" % (preset, workload, cfg), d is not None and d["costs"]["valid"], err)
            if d is None or not d["costs"]["valid"]:
                continue
            m = d["costs"]["memory"]
            figures.append((m["peak_bytes"], m["safe_peak_bytes"]))
        for which, suffix in ((0, ""), (1, ":safe")):
            values = sorted({f[which] for f in figures})
            # the smallest, the largest and four between
            picks = sorted({values[i * (len(values) - 1) // 5] for i in range(6)})
            for v in picks:
                for limit in (v - 1, v):
                    want = sum(1 for f in figures if f[which] <= limit)
                    got, err = count(preset, "memory=%dB%s" % (limit, suffix), workload)
                    check("%s %s memory=%dB%s" % (preset, " ".join(workload), limit, suffix), got == want,
                          "count %s, estimates that fit %d %s" % (got, want, err))
    os.remove(SPACE_FILE)
    os.rmdir(os.path.dirname(SPACE_FILE))
    return report()


if __name__ == "__main__":
    raise SystemExit(main())
