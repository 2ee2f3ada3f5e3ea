#!/usr/bin/python3
"""tests/integration/test_optuna.py - examples/optuna/dnnsat_optuna.py with
Debian's python3-optuna (3.1) against the REAL daemon.

The space: examples/spaces/resnet.json (9240 configurations) for ResNet-50
training on an A100 40 GB under a 3.5 GiB memory budget, where 1368 fit (15%).
Studies of 200 trials; every proposal is checked with the server's /check:

  1. FeasibleSampler, uniform: 0 infeasible proposals;
  2. FeasibleSampler wrapping TPESampler: 0 infeasible proposals (and its
     stats: how often TPE was overruled);
  3. RandomSampler on the original space: many infeasible (the number is
     printed), and on the reduced space (a pruned space alone is not enough:
     its values combine into configurations that do not fit);
  4. TPESampler(constraints_func=constraints_func(...)): runs, reports one
     value per constraint of the query, > 0 exactly when /check says the
     trial does not fit; the infeasible fraction is printed;
  5. the NNI -> Optuna distributions, a nested space (POST checks), enqueued
     trials;
  6. a huge space (the 24-layer transformer, 1.3e30 configurations) whose
     count never finishes: FeasibleSampler, uniform and wrapping TPE, still
     proposes feasible configurations only (approximate samples).
  7. a nested space whose options share a key: Optuna's parameter names are
     the addresses the CLI and the API take and answer with.

Prints "N passed, M failed"; exit 1 on any failure.
"""
import json
import os
import subprocess
import sys
import tempfile
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

import optuna  # noqa: E402
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution  # noqa: E402

import dnnsat_optuna as dno  # noqa: E402
from dnnsat_client import DnnsatClient  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)
warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)

T = harness.Tally("test_optuna")
N_TRIALS = 200


class Study:
    """A study whose objective checks every configuration it is given with
    the server and counts the infeasible ones. The objective minimizes the
    training time per sample (from /check's costs), so a model-based sampler
    is pulled toward large batches and wide networks: the edge of the
    feasible set."""

    def __init__(self, client, rid, space, sampler, **study_args):
        self.client, self.rid, self.space = client, rid, space
        self.infeasible = 0
        self.outside = 0
        self.configs = []
        self.study = optuna.create_study(sampler=sampler, **study_args)

    def objective(self, trial):
        config = dno.suggest(trial, self.space)
        self.configs.append(config)
        if not dno.nni_space.Space(self.space).contains(config):
            self.outside += 1
        verdict = self.client.check(self.rid, config)
        if not verdict["feasible"]:
            self.infeasible += 1
        c = verdict["costs"]
        return c["latency"]["training_step_seconds"] / config["batch_size"] * 1000.0

    def run(self, n=N_TRIALS):
        self.study.optimize(self.objective, n_trials=n)
        return self


def test_distributions():
    sp = {
        "c": {"_type": "choice", "_value": [16, 32, "x"]},
        "r": {"_type": "randint", "_value": [2, 24]},
        "q": {"_type": "quniform", "_value": [128, 320, 32]},
        "qi": {"_type": "quniform", "_value": [2, 10, 5]},
        "qf": {"_type": "quniform", "_value": [0.5, 2.0, 0.25]},
        "ql": {"_type": "qloguniform", "_value": [1, 64, 1]},
        "u": {"_type": "uniform", "_value": [0.1, 0.9]},
        "lu": {"_type": "loguniform", "_value": [1e-4, 0.1]},
        "n": {"_type": "normal", "_value": [0, 1]},
        "ln": {"_type": "lognormal", "_value": [0, 1]},
        "qn": {"_type": "qnormal", "_value": [10, 2, 1]},
        "nest": {"_type": "choice", "_value": [{"_name": "A"}, {"_name": "B", "k": {"_type": "randint", "_value": [1, 4]}}]},
    }
    d = dno.distributions(sp)
    T.check(d["c"] == CategoricalDistribution([16, 32, "x"]), "choice -> categorical: %r" % d["c"])
    T.check(d["r"] == IntDistribution(2, 23), "randint [2, 24) -> IntDistribution(2, 23): %r" % d["r"])
    T.check(d["q"] == IntDistribution(128, 320, step=32), "quniform [128,320,32] -> int step 32: %r" % d["q"])
    T.check(d["qi"] == CategoricalDistribution([2, 5, 10]), "quniform [2,10,5] = {2,5,10} -> categorical: %r" % d["qi"])
    T.check(d["qf"] == FloatDistribution(0.5, 2.0, step=0.25), "quniform [0.5,2,0.25] -> float step: %r" % d["qf"])
    T.check(d["ql"] == IntDistribution(1, 64, log=True), "qloguniform [1,64,1] -> int log: %r" % d["ql"])
    T.check(d["u"] == FloatDistribution(0.1, 0.9), "uniform: %r" % d["u"])
    T.check(d["lu"] == FloatDistribution(1e-4, 0.1, log=True), "loguniform -> float log: %r" % d["lu"])
    T.check(d["n"] == FloatDistribution(-3.0, 3.0), "normal(0,1) -> [-3, 3]: %r" % d["n"])
    T.check(isinstance(d["ln"], FloatDistribution) and d["ln"].log, "lognormal -> float log: %r" % d["ln"])
    T.check(d["qn"] == IntDistribution(4, 16, step=1), "qnormal(10,2,1) -> int [4, 16]: %r" % d["qn"])
    T.check(d["nest"] == CategoricalDistribution(["A", "B"]) and d["nest/B/k"] == IntDistribution(1, 3),
            "nested choice -> option names, nested parameter by path: %r" % d)
    # suggest() gives NNI samples; trial_config() reads them back from params
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    seen = set()
    for _ in range(40):
        trial = study.ask()
        config = dno.suggest(trial, sp)
        T.check(dno.nni_space.Space(sp).contains(config), "suggest() gives a sample of the space: %r" % config)
        T.check(dno.trial_config(trial.params, sp) == config, "trial_config(params) == suggest(): %r" % config)
        seen.add(config["qi"])
        study.tell(trial, 0.0)
    T.check(seen <= {2, 5, 10}, "q-grid values are NNI's: %r" % seen)


def test_feasible_uniform(client, red, space):
    s = dno.FeasibleSampler(client, red["id"], seed=1)
    T.check(s.space == red["reduced_space"], "the sampler's space is the reduced space")
    st = Study(client, red["id"], s.space, s).run()
    print("  FeasibleSampler (uniform): %d infeasible of %d proposals; %s" % (st.infeasible, N_TRIALS, s.stats))
    T.check(st.infeasible == 0, "uniform FeasibleSampler proposed %d infeasible configurations" % st.infeasible)
    T.check(st.outside == 0, "uniform FeasibleSampler proposed %d configurations off the space" % st.outside)
    T.check(s.stats["uniform"] == N_TRIALS, "every proposal uniform: %r" % s.stats)
    distinct = {json.dumps(c, sort_keys=True) for c in st.configs}
    T.check(len(distinct) > N_TRIALS * 0.8, "uniform draws are spread: %d distinct of %d" % (len(distinct), N_TRIALS))
    # the same seed proposes the same configurations
    st2 = Study(client, red["id"], s.space, dno.FeasibleSampler(client, red["id"], seed=1)).run(20)
    T.check(st2.configs == st.configs[:20], "the same seed gives the same proposals")
    return st.infeasible


def test_feasible_tpe(client, red, query):
    s = dno.FeasibleSampler(client, query, base_sampler=optuna.samplers.TPESampler(seed=1), seed=1)
    T.check(s.reduction_id == red["id"], "a query is reduced to the same reduction id")
    st = Study(client, red["id"], s.space, s).run()
    print("  FeasibleSampler (wrapping TPE): %d infeasible of %d proposals; TPE proposed %d that fit, %d that "
          "did not (rejected and shown to TPE as pruned), %d fallbacks to the nearest feasible sample, %d uniform "
          "start-up trials, %d /check calls" % (st.infeasible, N_TRIALS, s.stats["base"], s.stats["rejected"],
                                                s.stats["fallback"], s.stats["uniform"], s.stats["checks"]))
    T.check(st.infeasible == 0, "FeasibleSampler(TPE) proposed %d infeasible configurations" % st.infeasible)
    T.check(st.outside == 0, "FeasibleSampler(TPE) proposed %d configurations off the space" % st.outside)
    T.check(s.stats["base"] > N_TRIALS // 2, "TPE drives most trials: %r" % s.stats)
    T.check(s.stats["rejected"] > 0, "TPE did propose infeasible points that were overruled: %r" % s.stats)
    T.check(len(st.study.trials) == N_TRIALS, "the study holds only its own trials (rejections stay in TPE's view)")
    return st.infeasible


def test_random(client, red, space):
    st = Study(client, red["id"], space, optuna.samplers.RandomSampler(seed=1)).run()
    T.check(st.outside == 0, "RandomSampler proposed %d configurations off the space" % st.outside)
    print("  RandomSampler on the original space: %d infeasible of %d proposals (%.0f%%)"
          % (st.infeasible, N_TRIALS, 100.0 * st.infeasible / N_TRIALS))
    T.check(st.infeasible > N_TRIALS // 2, "plain random sampling proposes many infeasible: %d" % st.infeasible)
    rd = Study(client, red["id"], red["reduced_space"], optuna.samplers.RandomSampler(seed=1)).run()
    print("  RandomSampler on the reduced space: %d infeasible of %d proposals" % (rd.infeasible, N_TRIALS))
    T.check(rd.infeasible > 0, "the reduced space alone still combines into infeasible configurations")
    return st.infeasible


def test_constraints_func(client, red, space):
    cf = dno.constraints_func(client, red["id"], space=space)
    sampler = optuna.samplers.TPESampler(seed=1, constraints_func=cf)
    st = Study(client, red["id"], space, sampler).run()
    T.check(cf.names is not None and "$.budgets.memory" in cf.names,
            "constraints_func names the query's constraints: %r" % cf.names)
    trials = st.study.trials
    mismatch = 0
    infeasible = []
    for t in trials:
        values = t.system_attrs.get("constraints")
        if values is None or len(values) != len(cf.names):
            mismatch += 1
            continue
        fits = client.check(red["id"], dno.trial_config(t.params, space))["feasible"]
        if fits != all(v <= 0 for v in values):
            mismatch += 1
        infeasible.append(not fits)
    T.check(mismatch == 0, "%d trials whose constraint values disagree with /check" % mismatch)
    half = len(infeasible) // 2
    print("  TPESampler(constraints_func): %d infeasible of %d trials (%.0f%%; first half %d, second half %d); "
          "constraints %s; e.g. %r" % (sum(infeasible), len(infeasible), 100.0 * sum(infeasible) / len(infeasible),
                                       sum(infeasible[:half]), sum(infeasible[half:]), cf.names,
                                       next((t.system_attrs["constraints"] for t in trials
                                             if any(v > 0 for v in t.system_attrs.get("constraints", []))), None)))
    T.check(sum(infeasible[half:]) <= sum(infeasible[:half]), "constraints steer TPE away from infeasible")
    return sum(infeasible)


def test_nested_and_enqueue(client):
    nested = {
        "batch_size": {"_type": "choice", "_value": [16, 32, 64, 128, 256]},
        "block": {"_type": "choice", "_value": [
            {"_name": "basic", "layers3": {"_type": "randint", "_value": [2, 12]}},
            {"_name": "bottleneck", "width": {"_type": "choice", "_value": [32, 64, 128]},
             "layers3": {"_type": "randint", "_value": [2, 24]}}]},
        "resolution": {"_type": "quniform", "_value": [128, 320, 64]},
        "momentum": {"_type": "uniform", "_value": [0.8, 0.99]},
    }
    red = client.reduce(harness.resnet_query(budget="2.5GiB", space=nested))
    T.check(0 < int(red["feasible"]) < int(red["total"]), "nested space: %s of %s fit" % (red["feasible"], red["total"]))
    for base in (None, optuna.samplers.TPESampler(seed=2)):
        s = dno.FeasibleSampler(client, red["id"], base_sampler=base, seed=2, n_startup_trials=5)
        st = Study(client, red["id"], s.space, s).run(40)
        T.check(st.infeasible == 0 and st.outside == 0, "nested space, base %s: %d infeasible, %d off the space"
                % (type(base).__name__, st.infeasible, st.outside))
        T.check(all(isinstance(c["block"], dict) and "_name" in c["block"] and "momentum" in c for c in st.configs),
                "nested samples are NNI's nested form with the continuous parameter: %r" % st.configs[:2])
    # enqueue_trial: fixed values win; the sampler fills the rest so the whole fits
    s = dno.FeasibleSampler(client, red["id"], seed=3)
    st = Study(client, red["id"], s.space, s)
    st.study.enqueue_trial({"batch_size": 32})
    st.run(3)
    T.check(st.configs[0]["batch_size"] == 32 and st.infeasible == 0,
            "an enqueued batch_size is kept and the rest chosen to fit: %r" % st.configs[0])


def test_huge_space(client):
    """The 24-layer transformer (1.3e30 configurations: the count never
    finishes): FeasibleSampler, uniform and wrapping TPE, is built after a
    1 s count and proposes only feasible configurations (the times are
    printed, not asserted). Each samples request may take 30 s: with the
    default 1 s, a sanitized server on a busy 2-core machine found no sample
    in time once, a failure of the clock, not of the sampler. Of those 30 s
    the count gets 1 (count_timeout): by default it would get half, 15 s a
    request spent on a count that cannot finish."""
    import time
    with open(os.path.join(harness.EXAMPLES, "models", "transformer24.json")) as f:
        model = json.load(f)
    with open(os.path.join(harness.EXAMPLES, "spaces", "transformer24.json")) as f:
        space = json.load(f)
    query = {"model": model, "space": space, "device": "a100-40gb", "budgets": {"memory": "40GiB"}}
    for base in (None, optuna.samplers.TPESampler(seed=4)):
        t0 = time.monotonic()
        s = dno.FeasibleSampler(client, query, base_sampler=base, seed=4, wait=1, n_startup_trials=3,
                                sample_timeout=30, count_timeout=1)
        built = time.monotonic() - t0
        T.check(s.reduction["status"] != "exact" and "estimate" in s.reduction,
                "the transformer's count is unfinished and carries an estimate: %r" % s.reduction.get("status"))
        T.check(s.space == space, "the sampler's space is the query's while the count runs")
        times = []
        orig = s.sample_relative

        def timed(study, trial, search_space, orig=orig):
            t = time.monotonic()
            try:
                return orig(study, trial, search_space)
            finally:
                times.append(time.monotonic() - t)
        s.sample_relative = timed
        st = Study(client, s.reduction_id, s.space, s).run(8)
        print("  transformer24 (1.3e30 configurations), %s: sampler built in %.2f s, proposals in %s s; %s"
              % ("uniform" if base is None else "wrapping TPE", built,
                 ", ".join("%.2f" % t for t in times), s.stats))
        T.check(st.infeasible == 0 and st.outside == 0, "transformer24, base %s: %d infeasible, %d off the space"
                % (type(base).__name__, st.infeasible, st.outside))
        T.check(len(st.configs) == 8, "8 trials ran: %d" % len(st.configs))


def test_names_agree_with_cli(client):
    """Two options whose children share the key n_head: the names Optuna's
    distributions give (addresses "attention/few_heads/n_head") are the
    names the CLI and the API take and answer with, for every parameter."""
    sp = {"batch_size": {"_type": "choice", "_value": [8, 16]},
          "attention": {"_type": "choice", "_value": [
              {"_name": "few_heads", "n_head": {"_type": "choice", "_value": [4, 8]}},
              {"_name": "many_heads", "n_head": {"_type": "choice", "_value": [12, 16, 20]}}]}}
    dists = dno.distributions(sp)
    T.check(sorted(dists) == ["attention", "attention/few_heads/n_head", "attention/many_heads/n_head", "batch_size"],
            "Optuna names of a nested space: %r" % sorted(dists))
    path = os.path.join(tempfile.mkdtemp(prefix="dnnsat-optuna."), "nest.json")
    with open(path, "w") as f:
        json.dump(sp, f)
    env = dict(os.environ, DNNSAT_DATA_DIR=os.path.join(harness.TOP_SRCDIR, "schemas"))
    query = ["--preset", "gpt2", "--space", path, "--device", "a100-40gb", "--budget", "memory=40GiB"]
    red = client.reduce({"model": "gpt2", "space": sp, "device": "a100-40gb", "budgets": {"memory": "40GiB"}})
    for name, dist in sorted(dists.items()):
        value = dist.choices[-1]
        cli = subprocess.run([os.path.join(harness.TOP_BUILDDIR, "dnnsat"), "explain"] + query +
                             ["--param", name, "--value", json.dumps(value), "--json"],
                             capture_output=True, text=True, env=env)
        out = json.loads(cli.stdout) if cli.returncode in (0, 1) and cli.stdout else {}
        T.check(out.get("param") == name, "the CLI takes Optuna's name %s and answers with it: %s %s"
                % (name, cli.returncode, (cli.stdout or cli.stderr)[:300]))
        api = client.explain(red["id"], param=name, value=value)
        T.check(api.get("param") == name and api.get("kept") == (cli.returncode == 0),
                "the API takes Optuna's name %s, and agrees with the CLI: %r" % (name, api))
        if name != "attention":
            rows = client.max(red["id"], name)
            T.check(len(rows) == 1 and list(rows[0]) == [name], "max %s: rows keyed by the name: %r" % (name, rows))


def main():
    d = harness.Daemon()
    try:
        client = DnnsatClient(d.url)
        query = harness.resnet_query()
        space = query["space"]
        red = client.reduce(query)
        ratio = int(red["feasible"]) / int(red["total"])
        print("  space: examples/spaces/resnet.json, resnet50, a100-40gb, training adam fp32, memory <= %s: "
              "%s of %s configurations fit (%.1f%%)" % (harness.RESNET_BUDGET, red["feasible"], red["total"],
                                                       100 * ratio), flush=True)
        T.check(ratio < 0.3, "most configurations must not fit: ratio %.3f" % ratio)
        numbers = {}
        T.run(test_distributions)
        numbers["uniform"] = T.run(test_feasible_uniform, client, red, space)
        numbers["tpe"] = T.run(test_feasible_tpe, client, red, query)
        numbers["random"] = T.run(test_random, client, red, space)
        numbers["constraints"] = T.run(test_constraints_func, client, red, space)
        T.run(test_nested_and_enqueue, client)
        T.run(test_huge_space, client)
        T.run(test_names_agree_with_cli, client)
        print("  infeasible proposals out of %d: FeasibleSampler uniform %s, FeasibleSampler(TPE) %s, "
              "RandomSampler %s; TPESampler(constraints_func) %s"
              % (N_TRIALS, numbers.get("uniform"), numbers.get("tpe"), numbers.get("random"),
                 numbers.get("constraints")))
    finally:
        d.stop()
    T.finish()


if __name__ == "__main__":
    main()
