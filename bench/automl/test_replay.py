#!/usr/bin/python3
"""test_replay.py - the AutoML replay's accounting on small hand-made tables,
so the payoff benchmark cannot silently measure nothing: charges per kind of
violation, a known optimum found, known wasted time, dnnsat's feasible set
never running a violation, the product's FeasibleSampler (through
LocalReduction) proposing only admitted configurations, and the statistics.
Run by make check (Debian's python3 with optuna)."""
import math
import os
import random
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "optuna"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "python"))
import replay  # noqa: E402
import automl_bench  # noqa: E402

M, A, N = replay.VIOL_MEMORY, replay.VIOL_AFTER, replay.VIOL_NONE


def grid_table(acc_of):
    """A 3 x 3 x 2 space; accuracy acc_of(a, b, c); training 100 s + 10 s per
    unit of a; a step 1/100 of training."""
    doms = [[0, 1, 2], ["x", "y", "z"], [True, False]]
    configs = [(a, b, c) for a in doms[0] for b in doms[1] for c in doms[2]]
    secs = [100.0 + 10 * c[0] for c in configs]
    return replay.Table(["a", "b", "c"], doms, configs, [acc_of(*c) for c in configs], secs,
                        [s / 100 for s in secs])


def acc(a, b, c):
    return 50 + 10 * a + {"x": 0, "y": 1, "z": 2}[b] + (0.5 if c else 0)


class Accounting(unittest.TestCase):
    def setUp(self):
        self.t = grid_table(acc)
        # a == 2 breaks memory; b == "z" breaks a latency budget
        self.viol = [M if c[0] == 2 else (A if c[1] == "z" else N) for c in self.t.configs]
        feas = {i for i, v in enumerate(self.viol) if v == N}
        red = [[0, 1], ["x", "y"], [True, False]]
        self.sc = replay.Scenario("hand", self.t, self.viol, feas, red, 7.0)

    def test_charges(self):
        t, sc = self.t, self.sc
        i = t.index[(2, "x", True)]          # memory: start-up + one step, nothing
        self.assertEqual(sc.charge(i), (7.0 + 1.2, None))
        i = t.index[(1, "z", True)]          # latency: start-up + all training, nothing
        self.assertEqual(sc.charge(i), (7.0 + 110.0, None))
        i = t.index[(1, "y", False)]         # feasible
        self.assertEqual(sc.charge(i), (7.0 + 110.0, 61.0))

    def test_whole_space_totals(self):
        # random search without dnnsat visits all 18 once: known totals
        tr = replay.run_search(self.sc, "random", "none", seed=3, max_trials=100)
        self.assertEqual(len(tr), 18)
        spent = sum(self.sc.charge(i)[0] for i in range(18))
        wasted = sum(self.sc.charge(i)[0] for i in range(18) if self.viol[i] != N)
        self.assertAlmostEqual(tr[-1][0], spent)
        self.assertAlmostEqual(tr[-1][2], wasted)
        # 6 memory failures of 7 + 1.2 s, 4 latency failures of 7 + 100/110 s
        self.assertAlmostEqual(wasted, 6 * 8.2 + 2 * 107.0 + 2 * 117.0)
        self.assertEqual(tr[-1][1], 61.5)     # the best feasible: (1, "y", True)

    def test_feasible_mode_wastes_nothing_and_finds_optimum(self):
        for searcher in ("random", "evolution"):
            for seed in range(5):
                tr = replay.run_search(self.sc, searcher, "feasible", seed, 60)
                self.assertEqual(tr[-1][2], 0.0, searcher)
                self.assertEqual(max(b for _, b, _ in tr if b is not None), 61.5, searcher)

    def test_reduced_mode_keeps_to_reduced_values(self):
        tr = replay.run_search(self.sc, "random", "reduced", 1, 100)
        self.assertEqual(len(tr), 8)          # 2 x 2 x 2 configurations
        self.assertEqual(tr[-1][2], 0.0)      # here the reduced space is exact

    def test_time_to_target(self):
        trace = [(10.0, None, 10.0), (30.0, 60.0, 10.0), (50.0, 61.5, 10.0)]
        self.assertEqual(replay.time_to_target(trace, 61.0), 50.0)
        self.assertEqual(replay.time_to_target(trace, 60.0), 30.0)
        self.assertEqual(replay.time_to_target(trace, 62.0), math.inf)
        self.assertEqual(replay.best_at(trace, 40.0), 60.0)
        self.assertIsNone(replay.best_at(trace, 5.0))

    def test_max_seconds_stops(self):
        tr = replay.run_search(self.sc, "random", "none", 2, 100, max_seconds=200.0)
        self.assertGreaterEqual(tr[-1][0], 200.0)
        self.assertLess(tr[-2][0], 200.0)


class Optuna(unittest.TestCase):
    def setUp(self):
        self.t = grid_table(acc)
        self.viol = [A if c[0] == 2 else N for c in self.t.configs]
        feas = {i for i, v in enumerate(self.viol) if v == N}
        self.sc = replay.Scenario("hand", self.t, self.viol, feas, [[0, 1], ["x", "y", "z"], [True, False]], 0.0)

    def test_tpe_feasible_never_runs_a_violation(self):
        tr = replay.run_search(self.sc, "tpe", "feasible", 4, 30)
        self.assertEqual(len(tr), 30)
        self.assertEqual(tr[-1][2], 0.0)
        self.assertEqual(tr[-1][1], 62.5)    # (1, "z", True), the feasible optimum

    def test_tpe_without_dnnsat_pays(self):
        tr = replay.run_search(self.sc, "tpe", "none", 4, 30)
        self.assertGreater(tr[-1][2], 0.0)

    def test_local_reduction(self):
        lr = replay.LocalReduction(self.sc)
        self.assertEqual(lr.reduction("r")["feasible"], "12")
        self.assertTrue(lr.check("r", {"a": 1, "b": "x", "c": True})["feasible"])
        self.assertFalse(lr.check("r", {"a": 2, "b": "x", "c": True})["feasible"])
        self.assertFalse(lr.check("r", {"a": 9, "b": "x", "c": True})["feasible"])
        s = lr.samples("r", n=200, seed=1)
        self.assertTrue(all(c["a"] in (0, 1) for c in s))
        self.assertEqual(lr.samples("r", n=5, seed=2), lr.samples("r", n=5, seed=2))


class Statistics(unittest.TestCase):
    def test_percentile(self):
        self.assertEqual(replay.percentile([1, 2, 3, 4, 5], 50), 3)
        self.assertEqual(replay.percentile([1, 2, 3, 4], 50), 2.5)
        self.assertEqual(replay.percentile([5, 1], 100), 5)

    def test_median_ci(self):
        med, lo, hi = replay.median_ci([1.0] * 9 + [math.inf], random.Random(1), 200)
        self.assertEqual(med, 1.0)
        self.assertLessEqual(lo, med)
        med, _, _ = replay.median_ci([math.inf] * 3, random.Random(1), 50)
        self.assertEqual(med, math.inf)

    def test_budget_between_avoids_ties(self):
        v = [1, 2, 2, 2, 3, 4]
        b = automl_bench.budget_between(v, 40)
        self.assertEqual(b, 2.5)
        self.assertFalse(any(x == b for x in v))

    def test_summary_speedup(self):
        res = {m: {"p95": [10.0, 20.0, 30.0], "wasted_share": [0.5, 0.5, 0.5]} for m in replay.MODES}
        res["feasible"]["p95"] = [5.0, 10.0, 15.0]
        s = automl_bench.summarize(res, {"p95": 1.0}, random.Random(1))
        self.assertAlmostEqual(s["feasible"]["p95"]["speedup"], 2.0)
        self.assertAlmostEqual(s["reduced"]["p95"]["speedup"], 1.0)


def dnnsat_binary():
    b = os.environ.get("top_builddir")
    return os.path.join(b if b else os.path.join(HERE, "..", ".."), "dnnsat")


class Models(unittest.TestCase):
    """The Channel-Bench-Macro model files against the table's own counts."""

    def test_params_and_macs_match_the_table(self):
        import json
        import subprocess
        root = os.path.join(HERE, "..", "..")
        for kind in ("resnet", "mobilenet"):
            rows = automl_bench.data("cbm_%s.csv" % kind)
            for r in random.Random(kind).sample(rows, 12):
                argv = [dnnsat_binary(), "estimate", "--json", "--model",
                        os.path.join(root, "examples", "models", "cbm_%s.json" % kind), "batch_size=1"]
                argv += ["ch%d=%s" % (i, r["ch%d" % i]) for i in range(7)]
                j = json.loads(subprocess.run(argv, capture_output=True, text=True).stdout)   # estimate --json: /v1/estimate's shape
                self.assertEqual(j["costs"]["params"], int(r["params"]), (kind, r))
                self.assertEqual(j["costs"]["macs"], int(r["flops"]), (kind, r))   # the table's "flops" are MACs


class Tables(unittest.TestCase):
    def test_nb201_table(self):
        t, x, line = automl_bench.load_nb201()
        self.assertEqual(len(t.configs), 15625)
        self.assertTrue(all(s > 0 for s in t.train_seconds))
        self.assertGreater(line[1], 0)        # training time grows with FLOPs
        self.assertEqual(t.configs[0], ("avg_pool_3x3", "nor_conv_1x1", "skip_connect",
                                        "nor_conv_1x1", "skip_connect", "skip_connect"))

    def test_cbm_tables(self):
        _, _, line = automl_bench.load_nb201()
        for kind in ("resnet", "mobilenet"):
            t, x = automl_bench.load_cbm(kind, line)
            self.assertEqual(len(t.configs), 16384)
            self.assertTrue(all(len(d) == 4 for d in t.domains))


if __name__ == "__main__":
    r = unittest.main(exit=False, verbosity=1).result
    n, bad = r.testsRun, len(r.failures) + len(r.errors)
    print("%d passed, %d failed" % (n - bad, bad))
    sys.exit(1 if bad else 0)
