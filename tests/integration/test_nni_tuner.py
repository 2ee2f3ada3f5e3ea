#!/usr/bin/python3
"""tests/integration/test_nni_tuner.py - examples/nni/dnnsat_tuner.py
against the REAL daemon, driven the way NNI's dispatcher drives a tuner (NNI
itself is not installable here; the interface is nni.tuner.Tuner's:
update_search_space, generate_parameters / generate_multiple_parameters with
st_callback, receive_trial_result(..., customized=, trial_job_id=),
trial_end, import_data).

  1. a fake dispatcher: update_search_space, then 100 trials (generate,
     run, receive_trial_result, trial_end) with a random base tuner written
     here: every configuration fits (per /check) and lies in the experiment's
     space (checked here, independently of examples/python/nni_space.py),
     and the base heard of every rejection and every result;
  2. the variants: the base on the original space with on_infeasible=fail,
     no base (uniform), a base that only proposes infeasible configurations
     (the fallback), a base that runs out (NoMoreTrialError);
  3. batch_tuner_space: BatchTuner's format, every configuration feasible,
     cursor pages that continue;
  4. write_reduced_space: valid NNI JSON that loads back, a subset of the
     original, and every value in it is part of some feasible configuration.

The space: ResNet-50 with a nested block choice (basic / bottleneck with
its own width), batch size, resolution, and two continuous parameters;
960 configurations, 159 fit in 3.5 GiB. Prints "N passed, M failed".
"""
import json
import math
import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

import dnnsat_tuner  # noqa: E402
from dnnsat_client import DnnsatClient  # noqa: E402

T = harness.Tally("test_nni_tuner")

SPACE = {
    "batch_size": {"_type": "choice", "_value": [16, 32, 64, 128, 256, 512]},
    "block": {"_type": "choice", "_value": [
        {"_name": "basic", "layers3": {"_type": "randint", "_value": [2, 12]}},
        {"_name": "bottleneck", "layers3": {"_type": "randint", "_value": [2, 12]},
         "width": {"_type": "choice", "_value": [32, 64, 128]}}]},
    "resolution": {"_type": "quniform", "_value": [128, 320, 64]},
    "lr": {"_type": "loguniform", "_value": [0.0001, 0.1]},
    "momentum": {"_type": "uniform", "_value": [0.8, 0.99]},
}
QUERY = harness.resnet_query(budget="3.5GiB", space=SPACE)
del QUERY["space"]              # the tuner adds the experiment's space


# ---- the NNI side, written here: a random tuner and a membership check ----

def draw(spec, rng):
    """One random sample of an NNI (sub-)space (the types SPACE uses)."""
    out = {}
    for name, p in spec.items():
        if name == "_name":
            continue
        t, v = p["_type"], p["_value"]
        if t == "choice":
            c = rng.choice(v)
            if isinstance(c, dict):
                c = dict({"_name": c["_name"]}, **draw(c, rng))
            out[name] = c
        elif t == "randint":
            out[name] = rng.randrange(v[0], v[1])
        elif t == "quniform":
            out[name] = min(max(round(rng.uniform(v[0], v[1]) / v[2]) * v[2], v[0]), v[1])
        elif t == "uniform":
            out[name] = rng.uniform(v[0], v[1])
        elif t == "loguniform":
            out[name] = math.exp(rng.uniform(math.log(v[0]), math.log(v[1])))
        else:
            raise AssertionError("the test's random tuner has no %s" % t)
    return out


def in_space(config, spec):
    """True when config is an NNI sample of spec: every parameter present
    with a legal value, nothing else."""
    keys = [k for k in spec if k != "_name"]
    if set(config) - {"_name"} != set(keys):
        return False
    for name in keys:
        t, v, x = spec[name]["_type"], spec[name]["_value"], config[name]
        if t == "choice":
            if isinstance(v[0], dict):
                opt = next((o for o in v if isinstance(x, dict) and o["_name"] == x.get("_name")), None)
                if opt is None or not in_space(x, opt):
                    return False
            elif x not in v:
                return False
        elif t == "randint":
            if not (isinstance(x, int) and v[0] <= x < v[1]):
                return False
        elif t == "quniform":
            if not (v[0] <= x <= v[1] and (x in (v[0], v[1]) or abs(x / v[2] - round(x / v[2])) < 1e-9)):
                return False
        elif not (isinstance(x, float) and v[0] <= x <= v[1]):
            return False
    return True


class RandomBase:
    """A random tuner with NNI's Tuner interface; it records every call."""

    def __init__(self, seed=0, fixed=None, stop_after=None):
        self.rng = random.Random(seed)
        self.space = None
        self.generated = {}
        self.results = {}
        self.ended = {}
        self.imported = []
        self.fixed = fixed
        self.stop_after = stop_after

    def update_search_space(self, search_space):
        self.space = search_space

    def generate_parameters(self, parameter_id, **kwargs):
        if "st_callback" in kwargs:
            raise AssertionError("st_callback reached the base tuner")
        if self.stop_after is not None and len(self.generated) >= self.stop_after:
            raise dnnsat_tuner.NoMoreTrialError()
        if parameter_id in self.generated:
            raise AssertionError("parameter id %s reused" % parameter_id)
        p = dict(self.fixed) if self.fixed else draw(self.space, self.rng)
        self.generated[parameter_id] = p
        return p

    def receive_trial_result(self, parameter_id, parameters, value, **kwargs):
        if parameter_id not in self.generated:
            raise AssertionError("result for unknown parameter id %s" % parameter_id)
        self.results[parameter_id] = value

    def trial_end(self, parameter_id, success, **kwargs):
        self.ended[parameter_id] = success

    def import_data(self, data):
        self.imported.extend(data)


class FakeDispatcher:
    """NNI's msg_dispatcher in miniature: parameter ids from 0, search space
    first, then trials; a trial "runs" by scoring its configuration (higher
    is better: large batches, small models) and reports its final result."""

    def __init__(self, tuner, client, rid):
        self.tuner, self.client, self.rid = tuner, client, rid
        self.next_id = 0
        self.configs = []
        self.values = []
        self.infeasible = 0
        self.outside = 0

    def initialize(self, space):
        self.tuner.update_search_space(space)

    def run_trial(self, pid, params, space):
        self.configs.append(params)
        if not in_space(params, space):
            self.outside += 1
            print("  off the space: %r" % params)
        if not self.client.check(self.rid, params)["feasible"]:
            self.infeasible += 1
        value = params["batch_size"] / (params["block"]["layers3"] * params["resolution"])
        self.values.append(value)
        self.tuner.receive_trial_result(pid, params, {"default": value, "loss": -value}, customized=False,
                                        trial_job_id="job%d" % pid)
        self.tuner.trial_end(pid, True)

    def run(self, n, space, batch=1):
        done = 0
        while done < n:
            ids = list(range(self.next_id, self.next_id + batch))
            self.next_id += batch
            if batch == 1:
                params = [self.tuner.generate_parameters(ids[0])]
            else:
                params = self.tuner.generate_multiple_parameters(ids, st_callback=lambda *a: None)
            if not params:
                break
            for pid, p in zip(ids, params):
                self.run_trial(pid, p, space)
                done += 1
        return done


def new_tuner(client, **kw):
    return dnnsat_tuner.FeasibleTuner(client=client, query=QUERY, **kw)


# ---- tests ----

def test_dispatcher(client, rid):
    base = RandomBase(seed=1)
    tuner = new_tuner(client, base_tuner=base, seed=1, n_startup=5, max_tries=20)
    T.check(isinstance(tuner, dnnsat_tuner._TunerBase), "the tuner is a Tuner (nni.tuner.Tuner with NNI)")
    T.check(dnnsat_tuner.HAVE_NNI or dnnsat_tuner._TunerBase.__module__ == "dnnsat_tuner",
            "without NNI the local base class stands in")
    d = FakeDispatcher(tuner, client, rid)
    d.initialize(SPACE)
    T.check(tuner.reduction_id == rid, "the tuner reduced the experiment's space: %s" % tuner.reduction_id)
    T.check(base.space == tuner.reduction["reduced_space"], "the base tuner got the reduced space")
    n = d.run(100, SPACE)
    print("  fake dispatcher, random base on the reduced space: %d trials, %d infeasible, %d off the space; %r"
          % (n, d.infeasible, d.outside, tuner.stats))
    T.check(n == 100, "100 trials ran")
    T.check(d.infeasible == 0, "%d generated configurations do not fit" % d.infeasible)
    T.check(d.outside == 0, "%d generated configurations are off the space" % d.outside)
    T.check(tuner.stats["rejected"] > 0, "the base proposed infeasible configurations: %r" % tuner.stats)
    failed = [i for i, ok in base.ended.items() if not ok]
    T.check(len(failed) == tuner.stats["rejected"], "every rejection ended as a failed trial for the base: %d vs %r"
            % (len(failed), tuner.stats))
    penalized = [i for i in failed if i in base.results]
    T.check(len(penalized) == len(failed), "each rejection carries a penalty (the worst result so far): %d of %d"
            % (len(penalized), len(failed)))
    T.check(all(base.results[i] in d.values for i in penalized), "a penalty is a result seen (the worst so far)")
    T.check(all(base.results[i] <= min(d.values[:20]) for i in penalized[-5:]),
            "late penalties are at most the worst of the early results")
    ok_ids = [i for i, ok in base.ended.items() if ok]
    T.check(len(ok_ids) == tuner.stats["base"] and all(i in base.results for i in ok_ids),
            "the base got the result of each of its feasible proposals")
    T.check(len(base.imported) == tuner.stats["uniform"] + tuner.stats["fallback"],
            "the results of uniform / fallback configurations went to import_data: %d" % len(base.imported))
    T.check(all(isinstance(e["value"], float) for e in base.imported), "import_data gets scalar values")
    T.check(all(0 <= i < 100 or i < 0 for i in base.generated) and sum(i < 0 for i in base.generated) > 0,
            "proposals asked again use ids NNI never gives (negative)")
    # batches through generate_multiple_parameters (what the dispatcher calls)
    d2 = FakeDispatcher(new_tuner(client, base_tuner=RandomBase(seed=5), seed=5), client, rid)
    d2.initialize(SPACE)
    n = d2.run(24, SPACE, batch=4)
    T.check(n == 24 and d2.infeasible == 0 and d2.outside == 0,
            "generate_multiple_parameters: %d trials, %d infeasible" % (n, d2.infeasible))


def test_variants(client, rid):
    # the base on the whole space, rejections reported as failures only
    base = RandomBase(seed=2)
    tuner = new_tuner(client, base_tuner=base, prune_space=False, on_infeasible="fail", n_startup=0)
    d = FakeDispatcher(tuner, client, rid)
    d.initialize(SPACE)
    d.run(30, SPACE)
    T.check(base.space == SPACE, "prune_space=False: the base got the original space")
    T.check(d.infeasible == 0 and d.outside == 0, "original space: %d infeasible, %d off" % (d.infeasible, d.outside))
    T.check(not any(i in base.results for i, ok in base.ended.items() if not ok),
            "on_infeasible=fail reports no value for a rejection")
    print("  random base on the original space: %r" % tuner.stats)
    # no base: uniform feasible samples, reproducible with a seed
    runs = []
    for _ in range(2):
        d = FakeDispatcher(new_tuner(client, seed=7), client, rid)
        d.initialize(SPACE)
        d.run(30, SPACE)
        T.check(d.infeasible == 0 and d.outside == 0, "uniform: %d infeasible, %d off" % (d.infeasible, d.outside))
        runs.append(d.configs)
    T.check(runs[0] == runs[1], "a seeded uniform tuner repeats itself")
    # a base that always proposes the same configuration, which does not fit
    bad = {"batch_size": 512, "block": {"_name": "bottleneck", "layers3": 11, "width": 128},
           "resolution": 320, "lr": 0.01, "momentum": 0.9}
    base = RandomBase(fixed=bad)
    tuner = new_tuner(client, base_tuner=base, n_startup=0, max_tries=3, prune_space=False)
    d = FakeDispatcher(tuner, client, rid)
    d.initialize(SPACE)
    d.run(5, SPACE)
    T.check(d.infeasible == 0 and d.outside == 0 and tuner.stats["fallback"] == 5,
            "an always-infeasible base falls back to feasible samples: %r" % tuner.stats)
    T.check(all(c["lr"] == 0.01 and c["momentum"] == 0.9 for c in d.configs),
            "the fallback keeps the base's continuous values")
    T.check(all(c["block"]["_name"] == "bottleneck" for c in d.configs),
            "the fallback is the feasible sample nearest to the proposal: %r" % d.configs[0])
    T.check(len(base.generated) == 15, "max_tries proposals per trial: %d" % len(base.generated))
    # a base that runs out
    tuner = new_tuner(client, base_tuner=RandomBase(seed=3, stop_after=2), n_startup=0)
    tuner.update_search_space(SPACE)
    got = tuner.generate_multiple_parameters([0, 1, 2, 3])
    T.check(len(got) <= 2, "NoMoreTrialError from the base ends the batch: %d" % len(got))
    try:
        dnnsat_tuner.FeasibleTuner(client=client)
        T.check(False, "a tuner without query or reduction_id is refused")
    except ValueError:
        T.check(True, "")


def test_batch_tuner(client, rid, feasible):
    extra = {"lr": 0.01, "momentum": 0.9}
    space = dnnsat_tuner.batch_tuner_space(client, rid, limit=50, extra=extra)
    T.check(set(space) == {"combine_params"} and space["combine_params"]["_type"] == "choice",
            "BatchTuner's format: %r" % list(space))
    configs = space["combine_params"]["_value"]
    T.check(json.loads(json.dumps(space)) == space and len(configs) == 50, "a JSON page of 50: %d" % len(configs))
    T.check(all(client.check(rid, c)["feasible"] for c in configs), "every configuration of the page fits")
    T.check(all(in_space(c, SPACE) for c in configs), "every configuration is a full sample of the space")
    pages = list(dnnsat_tuner.batch_tuner_spaces(client, rid, limit=50, extra=extra))
    T.check(pages[0] == space, "the pages start with the first one")
    allc = [json.dumps(c, sort_keys=True) for p in pages for c in p["combine_params"]["_value"]]
    T.check(len(allc) == feasible and len(set(allc)) == feasible,
            "the pages cover the feasible set once: %d of %d" % (len(set(allc)), feasible))
    sampled = dnnsat_tuner.batch_tuner_space(client, rid, limit=20, sample_seed=4, extra=extra)
    T.check(len(sampled["combine_params"]["_value"]) == 20
            and all(client.check(rid, c)["feasible"] for c in sampled["combine_params"]["_value"]),
            "a sampled BatchTuner space: 20 feasible configurations")
    # distinct: samples are draws with replacement, and BatchTuner would run a duplicate twice
    # (the walkthrough's 50 held 49 distinct until 2026-12-05); a space of fewer feasible
    # configurations than asked gives each once
    sampled = dnnsat_tuner.batch_tuner_space(client, rid, limit=feasible, sample_seed=1, extra=extra)
    keys = [json.dumps(c, sort_keys=True) for c in sampled["combine_params"]["_value"]]
    T.check(len(set(keys)) == len(keys) == feasible,
            "a sampled BatchTuner space as large as the feasible set: %d configurations, %d distinct, %d feasible"
            % (len(keys), len(set(keys)), feasible))
    sampled = dnnsat_tuner.batch_tuner_space(client, rid, limit=feasible // 2, sample_seed=1, extra=extra)
    keys = [json.dumps(c, sort_keys=True) for c in sampled["combine_params"]["_value"]]
    T.check(len(set(keys)) == len(keys) and len(keys) > feasible // 4,
            "half the feasible set asked for: %d sampled, %d distinct" % (len(keys), len(set(keys))))


def flat_values(config, spec, prefix="", out=None):
    """{parameter path: set of values} of a nested configuration."""
    out = {} if out is None else out
    for name, v in config.items():
        if isinstance(v, dict):
            out.setdefault(prefix + name, set()).add(v["_name"])
            flat_values({k: x for k, x in v.items() if k != "_name"}, spec, "%s%s/%s/" % (prefix, name, v["_name"]), out)
        else:
            out.setdefault(prefix + name, set()).add(v)
    return out


def space_values(spec, prefix="", out=None):
    """{parameter path: set of values} of the discrete parameters of a space."""
    out = {} if out is None else out
    for name, p in spec.items():
        t, v = p["_type"], p["_value"]
        if t == "choice" and isinstance(v[0], dict):
            out[prefix + name] = {o["_name"] for o in v}
            for o in v:
                space_values({k: x for k, x in o.items() if k != "_name"}, "%s%s/%s/" % (prefix, name, o["_name"]), out)
        elif t == "choice":
            out[prefix + name] = set(v)
        elif t == "randint":
            out[prefix + name] = set(range(v[0], v[1]))
        elif t == "quniform":
            out[prefix + name] = {min(max(k * v[2], v[0]), v[1]) for k in range(round(v[0] / v[2]), round(v[1] / v[2]) + 1)}
    return out


def test_reduced_space(client, rid):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "search_space.json")
        ret = dnnsat_tuner.write_reduced_space(client, rid, path)
        with open(path) as f:
            loaded = json.load(f)
    T.check(loaded == ret, "the file holds the reduced space")
    T.check(set(loaded) == set(SPACE), "the same parameters as the original: %r" % sorted(loaded))
    T.check(all(set(p) == {"_type", "_value"} for p in loaded.values()), "NNI's {_type, _value} parameters")
    T.check(loaded["lr"] == SPACE["lr"] and loaded["momentum"] == SPACE["momentum"], "continuous ones unchanged")
    reduced, original = space_values(loaded), space_values(SPACE)
    T.check(all(reduced[k] <= original.get(k, set()) for k in reduced), "every value is a value of the original")
    seen = {}
    for c in client.stream(rid):
        for k, vals in flat_values(c, SPACE).items():
            seen.setdefault(k, set()).update(vals)
    missing = {k: sorted(vals - seen.get(k, set())) for k, vals in reduced.items() if vals - seen.get(k, set())}
    T.check(not missing, "values of the reduced space in no feasible configuration: %r" % missing)
    T.check(reduced != original, "the reduced space is smaller than the original")
    print("  reduced space: %s" % json.dumps(loaded, sort_keys=True))


def main():
    d = harness.Daemon()
    try:
        client = DnnsatClient(d.url)
        q = dict(QUERY, space=SPACE)
        red = client.reduce(q)
        print("  space: %s of %s configurations fit (%.1f%%)" % (red["feasible"], red["total"], 100 * red["ratio"]),
              flush=True)
        T.check(red["ratio"] < 0.3, "most configurations must not fit: %r" % red["ratio"])
        T.run(test_dispatcher, client, red["id"])
        T.run(test_variants, client, red["id"])
        T.run(test_batch_tuner, client, red["id"], int(red["feasible"]))
        T.run(test_reduced_space, client, red["id"])
    finally:
        d.stop()
    T.finish()


if __name__ == "__main__":
    main()
