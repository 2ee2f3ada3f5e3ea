#!/usr/bin/python3
"""automl_bench.py - the AutoML payoff benchmark: replays random search, TPE
and regularized evolution over three public tabular benchmarks (NAS-Bench-201,
Channel-Bench-Macro ResNet and MobileNet), each without dnnsat, with dnnsat's
reduced space and with dnnsat's feasible set in the loop, and reports how much
sooner each reaches the same accuracy (make bench-automl; docs/automl-payoff.md).

What is measured and what is assumed (every figure in the report follows):
  - Accuracy, FLOPs and, for NAS-Bench-201, the 200-epoch CIFAR-10 training
    time come from the tables in ../shared/benchmarks (trainings by others).
  - Channel-Bench-Macro has no training times: a trial's time is the
    NAS-Bench-201 least-squares line of training seconds over FLOPs (both
    trained 200 epochs... on CIFAR-10), applied to its FLOPs (stated in the
    report with the fitted line).
  - Whether a configuration violates a budget: FLOPs from the table; deploy
    latency from HELP's measured batch-1 latency on a GTX 1080 Ti (15,625
    cells); training memory from dnnsat's own estimate (no measurement of
    these spaces exists; docs/accuracy.md gives the model's measured error).
  - dnnsat's answers (feasible set, reduced space) come from the `dnnsat`
    binary of this tree (`list`, `reduce`), with the same budgets a user
    would give; where its estimate disagrees with the truth (latency), the
    search pays for it: admitted violations are charged, excluded feasible
    configurations are never found.
  - A failed trial costs STARTUP_SECONDS of start-up (process, CUDA context,
    data loaders) plus what it ran.
"""
import argparse
import csv
import json
import math
import multiprocessing
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# the product's Optuna integration (FeasibleSampler) and its helpers
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "optuna"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "python"))
import replay  # noqa: E402

STARTUP_SECONDS = 60.0     # assumed: process start, CUDA context, data loaders
NB201_EPOCHS = 200         # NAS-Bench-201's CIFAR-10 schedule (Dong & Yang 2020)
NB201_BATCH = 256          # its training batch
CIFAR10_TRAIN = 50000      # CIFAR-10 training images
NB201_OPS = ["none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3"]
# batch sizes tried for a memory budget: the first with 20-60% feasible wins
BATCHES = [256, 512, 1024, 1536, 2048, 2560, 3072, 4096, 5120, 6144, 8192, 12288, 16384]


def root():
    return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def data(name):
    """The rows of a table of bench/automl/data (copied from the shared
    public tables by data/extract.py)."""
    with open(os.path.join(HERE, "data", name), newline="") as f:
        return list(csv.DictReader(f))


class Dnnsat:
    """The dnnsat CLI of this tree, for one model over one space file."""

    def __init__(self, binary, space, model_args):
        self.binary, self.space, self.model_args = binary, space, model_args

    def _run(self, cmd, args):
        argv = [self.binary, cmd, "--space", self.space] + self.model_args + args
        p = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        if p.returncode not in (0, 1):
            raise RuntimeError("%s failed (%d): %s" % (" ".join(argv), p.returncode, p.stderr))
        return p.stdout

    def fraction(self, args):
        out = self._run("count", args + ["--json"])
        j = json.loads(out)
        return int(j["feasible"]) / int(j["total"])

    def feasible(self, args, params):
        out = self._run("list", args)
        return [tuple(json.loads(l)[p] for p in params) for l in out.splitlines() if l.strip()]

    def reduced(self, args, params):
        j = json.loads(self._run("reduce", args))
        return [j[p]["_value"] if p in j else [] for p in params]


# ---- tables ----

def fit_line(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def load_nb201():
    rows = data("nb201.csv")
    configs, acc, flops, secs, lat = [], [], [], [], []
    for r in rows:
        ops = [e.split("~")[0] for part in r["arch_str"].strip("|").split("|+|") for e in part.split("|")]
        configs.append(tuple(ops))
        acc.append(float(r["c10_test_acc_200ep"]))
        # the closed-form FLOPs column is filled for all; the single-seed
        # export's is empty for 150 cells (see the benchmark's README)
        flops.append(float(r["c10_flops_M"]) if r["c10_flops_M"] else None)
        secs.append(float(r["c10_train_time_200ep_s"]) if r["c10_train_time_200ep_s"] else None)
        lat.append(float(r["latency_1080ti_b1_ms"]))
    known = [(f, s) for f, s in zip(flops, secs) if f is not None and s is not None]
    a, b = fit_line([k[0] for k in known], [k[1] for k in known])
    secs = [s if s is not None else (a + b * f if f is not None else sorted(x for x in secs if x)[len(known) // 2])
            for s, f in zip(secs, flops)]
    steps = NB201_EPOCHS * math.ceil(CIFAR10_TRAIN / NB201_BATCH)
    table = replay.Table(["edge%d" % i for i in range(6)], [NB201_OPS] * 6, configs, acc, secs,
                         [s / steps for s in secs])
    return table, {"flops_M": flops, "latency_ms": lat}, (a, b)


def load_cbm(kind, line):
    rows = data("cbm_%s.csv" % kind)
    params = ["ch%d" % i for i in range(7)]
    configs = [tuple(int(r[p]) for p in params) for r in rows]
    doms = [sorted({c[k] for c in configs}) for k in range(7)]
    flops = [int(r["flops"]) / 1e6 for r in rows]
    a, b = line
    secs = [a + b * f for f in flops]
    steps = NB201_EPOCHS * math.ceil(CIFAR10_TRAIN / NB201_BATCH)
    table = replay.Table(params, doms, configs, [float(r["mean_acc"]) for r in rows], secs,
                         [s / steps for s in secs])
    return table, {"flops_M": flops}


# ---- scenarios ----

def pick_batch(dn, device):
    for b in BATCHES:
        f = dn.fraction(["--set", "batch_size=%d" % b, "--device", device, "--budget", "memory=100%"])
        if f <= 0.6:
            return b, f
    return BATCHES[-1], f


def budget_between(values, q):
    """A budget at the q-th percentile that falls between two distinct
    values, so that ties and rounding cannot put a configuration on the
    boundary: the midpoint of the largest value <= the percentile and the
    next larger one."""
    v = replay.percentile(values, q)
    below = max(x for x in values if x <= v)
    above = min((x for x in values if x > below), default=below * 1.01)
    return (below + above) / 2.0


def make_scenario(name, table, dn, queries, truth_after, memory_args, log):
    """queries: dnnsat argument lists, one per query a user would send (a
    training-memory budget at batch B and a batch-1 latency budget cannot
    share one query); a configuration is admitted when every query admits it,
    and the reduced space is the intersection of the reduced spaces.
    truth_after: per configuration, True where a latency/FLOPs budget is
    really broken, None where the table has no figure (dnnsat's verdict is
    taken: its MACs match NAS-Bench-201's to 10 on every other cell);
    memory_args: the dnnsat arguments of the memory budget alone (its truth
    is the cost model's), or None."""
    idx = table.index
    t0 = time.time()
    feas = set(range(len(table.configs)))
    red = [list(d) for d in table.domains]
    for args in queries:
        feas &= {idx[c] for c in dn.feasible(args, table.params)}
        r = dn.reduced(args, table.params)
        red = [[v for v in d if v in set(rk)] for d, rk in zip(red, r)]
    viol = [replay.VIOL_AFTER if t else replay.VIOL_NONE for t in truth_after]
    for i, t in enumerate(truth_after):
        if t is None:
            viol[i] = replay.VIOL_NONE if i in feas else replay.VIOL_AFTER
    if memory_args is not None:
        fits = {idx[c] for c in dn.feasible(memory_args, table.params)}
        viol = [v if i in fits else replay.VIOL_MEMORY for i, v in enumerate(viol)]
    truly = set(i for i, v in enumerate(viol) if v == replay.VIOL_NONE)
    log("%-24s truly feasible %5.1f%%, dnnsat admits %5.1f%% (%d admitted violations, %d feasible missed; %.1f s)"
        % (name, 100.0 * len(truly) / len(viol), 100.0 * len(feas) / len(viol),
           len(feas - truly), len(truly - feas), time.time() - t0))
    sc = replay.Scenario(name, table, viol, feas, red, STARTUP_SECONDS)
    sc.info = {"queries": queries, "truly_feasible": len(truly), "admitted": len(feas),
               "admitted_violations": len(feas - truly), "missed_feasible": len(truly - feas),
               "total": len(viol), "reduced_sizes": [len(d) for d in red]}
    return sc


def scenarios(binary, log, quick):
    base = root()
    out = []
    nb, nbx, line = load_nb201()
    log("NAS-Bench-201 training seconds = %.1f + %.2f x MFLOPs (least squares over %d cells)" % (line[0], line[1], 15625 - 150))
    dn = Dnnsat(binary, os.path.join(base, "examples/spaces/nb201.json"), ["--template", "nb201"])
    lat_budget = budget_between(nbx["latency_ms"], 40)
    flops_budget = budget_between([f for f in nbx["flops_M"] if f is not None], 40)
    devices = ["t4"] if quick else ["t4", "v100-16gb", "a100-40gb"]
    mem_t4 = None
    for d in devices:
        b, f = pick_batch(dn, d)
        margs = ["--set", "batch_size=%d" % b, "--device", d, "--budget", "memory=100%"]
        mem_t4 = mem_t4 or margs
        out.append(make_scenario("nb201 memory %s b%d" % (d, b), nb, dn, [margs], [False] * 15625, margs, log))
    largs = ["--set", "batch_size=1", "--device", "gtx-1080-ti", "--inference", "--budget", "latency=%.4fms" % lat_budget]
    out.append(make_scenario("nb201 latency %.2fms" % lat_budget, nb, dn, [largs],
                             [l > lat_budget for l in nbx["latency_ms"]], None, log))
    fargs = ["--set", "batch_size=1", "--budget", "macs=%.0f" % (flops_budget * 1e6)]
    out.append(make_scenario("nb201 flops %.1fM" % flops_budget, nb, dn, [fargs],
                             [None if f is None else f > flops_budget for f in nbx["flops_M"]], None, log))
    out.append(make_scenario("nb201 memory t4 + latency", nb, dn, [mem_t4, largs],
                             [l > lat_budget for l in nbx["latency_ms"]], mem_t4, log))
    for kind in ("resnet", "mobilenet"):
        tb, x = load_cbm(kind, line)
        dn = Dnnsat(binary, os.path.join(base, "examples/spaces/cbm_%s.json" % kind),
                    ["--model", os.path.join(base, "examples/models/cbm_%s.json" % kind)])
        fb = budget_between(x["flops_M"], 40)
        mem_first = None
        for d in devices:
            b, f = pick_batch(dn, d)
            margs = ["--set", "batch_size=%d" % b, "--device", d, "--budget", "memory=100%"]
            mem_first = mem_first or margs
            out.append(make_scenario("cbm-%s memory %s b%d" % (kind, d, b), tb, dn, [margs], [False] * len(tb.configs), margs, log))
        fargs = ["--set", "batch_size=1", "--budget", "macs=%.0f" % (fb * 1e6)]
        out.append(make_scenario("cbm-%s flops %.0fM" % (kind, fb), tb, dn, [fargs], [f > fb for f in x["flops_M"]], None, log))
        out.append(make_scenario("cbm-%s memory t4 + flops" % kind, tb, dn, [mem_first, fargs],
                                 [f > fb for f in x["flops_M"]], mem_first, log))
    return out


# ---- runs ----

def one_run(job):
    sc, searcher, mode, seed, max_trials, max_seconds = job
    return replay.run_search(sc, searcher, mode, seed, max_trials, max_seconds)


def evaluate(sc, searcher, seeds, max_trials, pool, trainings):
    """Runs every mode for `seeds` seeds; each run stops after `trainings`
    median trainings' worth of GPU time (a team's budget is GPU time, not a
    trial count: a search that fails cheaply gets more trials) or max_trials."""
    truly = sc.truly_feasible()
    accs = [sc.table.accuracy[i] for i in truly]
    targets = {"p95": replay.percentile(accs, 95), "p99": replay.percentile(accs, 99)}
    med_train = replay.percentile([sc.table.train_seconds[i] for i in truly], 50)
    max_seconds = trainings * med_train
    res = {}
    for mode in replay.MODES:
        jobs = [(sc, searcher, mode, s, max_trials, max_seconds) for s in range(seeds)]
        traces = pool.map(one_run, jobs) if pool else list(map(one_run, jobs))
        r = {"traces": traces}
        for tn, tv in targets.items():
            r[tn] = [replay.time_to_target(t, tv) for t in traces]
        r["wasted_share"] = [t[-1][2] / t[-1][0] if t and t[-1][0] > 0 else 0.0 for t in traces]
        res[mode] = r
    return targets, max_seconds, res


def summarize(res, targets, rng):
    out = {}
    for mode, r in res.items():
        m = {}
        for tn in targets:
            med, lo, hi = replay.median_ci(r[tn], rng, 300)
            m[tn] = {"median_h": med / 3600, "lo_h": lo / 3600, "hi_h": hi / 3600,
                     "reached": sum(1 for v in r[tn] if v < math.inf) / len(r[tn])}
        m["wasted_share"] = sum(r["wasted_share"]) / len(r["wasted_share"])
        out[mode] = m
    for mode in ("reduced", "feasible"):
        for tn in targets:
            a, b = out["none"][tn]["median_h"], out[mode][tn]["median_h"]
            out[mode][tn]["speedup"] = (a / b) if b > 0 and b < math.inf else None
    return out


def plot(sc, searcher, res, targets, max_seconds, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    grid = [max_seconds * k / 200 for k in range(1, 201)]
    fig, ax = plt.subplots(figsize=(6, 4))
    colors = {"none": "#c0392b", "reduced": "#e67e22", "feasible": "#2471a3"}
    labels = {"none": "without dnnsat", "reduced": "dnnsat's reduced space", "feasible": "dnnsat's feasible set"}
    for mode, r in res.items():
        meds, los, his = [], [], []
        for g in grid:
            v = sorted((replay.best_at(t, g) or float("nan")) for t in r["traces"])
            v = [x for x in v if x == x]
            if len(v) < len(r["traces"]) // 2:
                meds.append(float("nan")); los.append(float("nan")); his.append(float("nan"))
                continue
            meds.append(replay.percentile(v, 50)); los.append(replay.percentile(v, 2.5)); his.append(replay.percentile(v, 97.5))
        hours = [g / 3600 for g in grid]
        ax.plot(hours, meds, color=colors[mode], label=labels[mode])
        ax.fill_between(hours, los, his, color=colors[mode], alpha=0.15)
    for tn, tv in targets.items():
        ax.axhline(tv, color="grey", lw=0.7, ls="--")
        ax.text(hours[-1], tv, " " + tn, va="center", fontsize=7, color="grey")
    lo = replay.percentile([sc.table.accuracy[i] for i in sc.truly_feasible()], 50)
    ax.set_ylim(lo, max(targets.values()) + 0.5 * (max(targets.values()) - lo) / 3)
    ax.set_xlabel("simulated GPU hours")
    ax.set_ylabel("best feasible accuracy (%)")
    ax.set_title("%s, %s (median, 95%% band of runs)" % (sc.name, searcher), fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def finite(v):
    """v with every infinite float as None (JSON has no infinity)."""
    if isinstance(v, float) and math.isinf(v):
        return None
    if isinstance(v, dict):
        return {k: finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [finite(x) for x in v]
    return v


def fmt_h(v):
    return "never" if v == math.inf else "%.1f" % v


def fmt_x(v):
    if v is None:
        return "-"
    return "baseline never" if v == math.inf else "%.2fx" % v


def write_markdown(path, results, seeds, seconds, argv, plot_dir):
    """The generated results page: one row per scenario x searcher; plots
    linked from plot_dir (relative to the page)."""
    out = ["# AutoML payoff: generated results", "",
           "Generated by `%s` in %.0f s (%d seeds per searcher and mode). Do not edit: rerun." % (argv, seconds, seeds),
           "Method and reading guide: [automl-payoff.md](automl-payoff.md).", "",
           "GPU hours are medians over seeds of the simulated GPU time until the best feasible accuracy reached",
           "the target (p95 / p99: the 95th / 99th percentile of the accuracies of the truly feasible",
           "configurations); [lo, hi] is a 95% bootstrap interval of the median and (n%) the share of runs that",
           "reached it; \"never\" means more than half did not within the run's GPU budget (400 median trainings",
           "for random search and evolution, 150 for TPE). Speedup = GPU hours",
           "without dnnsat / with. Wasted = share of GPU time spent on trials that broke a budget.", "",
           "| scenario | truly feasible | dnnsat admits (wrong) | searcher | p95 without | p95 reduced | p95 feasible | speedup p95 (reduced, feasible) | speedup p99 (reduced, feasible) | wasted without -> feasible |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        s, i = r["summary"], r["info"]

        def cell(mode, tn):
            m = s[mode][tn]
            return "%s [%s, %s] (%.0f%%)" % (fmt_h(m["median_h"]), fmt_h(m["lo_h"]), fmt_h(m["hi_h"]),
                                            100 * m["reached"])
        out.append("| %s | %.1f%% | %.1f%% (%d in, %d out) | %s | %s | %s | %s | %s, %s | %s, %s | %.0f%% -> %.0f%% |" % (
            r["scenario"], 100.0 * i["truly_feasible"] / i["total"], 100.0 * i["admitted"] / i["total"],
            i["admitted_violations"], i["missed_feasible"], r["searcher"],
            cell("none", "p95"), cell("reduced", "p95"), cell("feasible", "p95"),
            fmt_x(s["reduced"]["p95"].get("speedup")), fmt_x(s["feasible"]["p95"].get("speedup")),
            fmt_x(s["reduced"]["p99"].get("speedup")), fmt_x(s["feasible"]["p99"].get("speedup")),
            100 * s["none"]["wasted_share"], 100 * s["feasible"]["wasted_share"]))
    out += ["", "## Plots", ""]
    for r in results:
        out.append("![%s, %s](%s/%s)" % (r["scenario"], r["searcher"], plot_dir, r["plot"]))
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def write_html(path, results, seeds):
    """The page the dashboard links (/ui/automl/index.html): the headline
    speedups and every plot."""
    import html
    rows = []
    for r in results:
        s = r["summary"]
        rows.append("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%.0f%% &rarr; %.0f%%</td></tr>" % (
            html.escape(r["scenario"]), r["searcher"], fmt_h(s["none"]["p95"]["median_h"]),
            fmt_h(s["feasible"]["p95"]["median_h"]), fmt_x(s["feasible"]["p95"]["speedup"]),
            100 * s["none"]["wasted_share"], 100 * s["feasible"]["wasted_share"]))
    imgs = "".join('<figure><img src="%s" alt="%s"></figure>' % (html.escape(r["plot"]), html.escape(r["scenario"]))
                   for r in results)
    page = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>dnnsat: AutoML payoff</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse}
td,th{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left}figure{display:inline-block;margin:4px}
img{width:480px}</style></head><body><h1>AutoML payoff: the same accuracy sooner with dnnsat in the loop</h1>
<p>Replays of random search, TPE and regularized evolution over NAS-Bench-201 and Channel-Bench-Macro
(%d seeds each), without dnnsat and with dnnsat's feasible set. GPU hours until the best feasible accuracy
reaches the 95th percentile of the feasible accuracies (median over seeds). Regenerate: <code>make bench-automl</code>;
method: docs/automl-payoff.md. <a href="../">Back to the dashboard</a>.</p>
<table><tr><th>scenario</th><th>searcher</th><th>GPU h without</th><th>GPU h with</th><th>speedup</th>
<th>GPU time wasted</th></tr>%s</table>%s</body></html>
""" % (seeds, "".join(rows), imgs)
    with open(path, "w") as f:
        f.write(page)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dnnsat", default=os.path.join(root(), "dnnsat"))
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--trainings", type=int, default=400,
                    help="GPU budget of a random-search or evolution run, in median trainings")
    ap.add_argument("--tpe-trainings", type=int, default=150,
                    help="GPU budget of a TPE run, in median trainings (Optuna's TPE costs CPU per trial)")
    ap.add_argument("--out", default=os.path.join(root(), "web", "automl"),
                    help="plots, results.json and index.html (served by dnnsatd at /ui/automl/)")
    ap.add_argument("--doc", default=os.path.join(root(), "docs", "automl-results.md"),
                    help="the generated results page")
    ap.add_argument("--quick", action="store_true", help="one device, 8 seeds (a smoke run)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    if a.quick:
        a.seeds = min(a.seeds, 8)
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    lines = []

    def log(s):
        print(s, flush=True)
        lines.append(s)
    scs = scenarios(a.dnnsat, log, a.quick)
    # TPE on the headline scenario of each benchmark (Optuna costs ~5 ms a
    # trial); random search and evolution on every scenario
    headline = {scs[0].name} | {s.name for s in scs if s.name.startswith("cbm-") and " memory t4 + " in s.name}
    headline |= {s.name for s in scs if s.name.startswith("nb201 latency")}
    rng = random.Random(7)
    results = []
    pool = multiprocessing.Pool(a.jobs) if a.jobs > 1 else None
    for sc in scs:
        for searcher in ("random", "evolution", "tpe"):
            if searcher == "tpe" and sc.name not in headline:
                continue
            t1 = time.time()
            if searcher == "tpe":
                targets, max_seconds, res = evaluate(sc, searcher, a.seeds, 4 * a.tpe_trainings, pool,
                                                     a.tpe_trainings)
            else:
                targets, max_seconds, res = evaluate(sc, searcher, a.seeds, 4 * a.trainings, pool,
                                                     a.trainings)
            summ = summarize(res, targets, rng)
            fname = "%s-%s.svg" % (sc.name.replace(" ", "_").replace("+", "and").replace(".", "p"), searcher)
            plot(sc, searcher, res, targets, max_seconds, os.path.join(a.out, fname))
            results.append({"scenario": sc.name, "searcher": searcher, "targets": targets,
                            "info": sc.info, "summary": summ, "plot": fname})
            s = summ
            log("%-28s %-9s p95: %s h -> reduced %s h, feasible %s h (%s); p99: %s; wasted %.0f%% -> %.0f%%  [%.0f s]"
                % (sc.name, searcher, fmt_h(s["none"]["p95"]["median_h"]), fmt_h(s["reduced"]["p95"]["median_h"]),
                   fmt_h(s["feasible"]["p95"]["median_h"]), fmt_x(s["feasible"]["p95"]["speedup"]),
                   fmt_x(s["feasible"]["p99"]["speedup"]),
                   100 * s["none"]["wasted_share"], 100 * s["feasible"]["wasted_share"], time.time() - t1))
    if pool:
        pool.close()
    json.dump(finite({"seeds": a.seeds, "startup_seconds": STARTUP_SECONDS, "results": results,
                      "log": lines}), open(os.path.join(a.out, "results.json"), "w"), indent=1)
    write_markdown(a.doc, results, a.seeds, time.time() - t0,
                   "make bench-automl" if not a.quick else "automl_bench.py --quick",
                   os.path.relpath(a.out, os.path.dirname(os.path.abspath(a.doc))))
    write_html(os.path.join(a.out, "index.html"), results, a.seeds)
    log("done in %.0f s; results in %s" % (time.time() - t0, a.out))


if __name__ == "__main__":
    main()
