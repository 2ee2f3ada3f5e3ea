"""examples/nni/dnnsat_tuner.py - an NNI tuner that only lets configurations
that fit out (FeasibleTuner), and the two exports of a dnnsat reduction for
NNI: a page of feasible configurations as BatchTuner's search space
(batch_tuner_space) and the reduced space as a drop-in search_space.json
(write_reduced_space). Needs examples/python/dnnsat_client.py and
examples/python/nni_space.py next to it or in ../python; NNI itself is
optional (without it the tuner runs on a compatible local base class, which
is how it is tested: tests/integration/test_nni_tuner.py).

How it works. NNI's dispatcher calls update_search_space(space) once, then
generate_parameters(parameter_id) (or generate_multiple_parameters) for each
new trial, receive_trial_result(parameter_id, parameters, value) when a
trial reports its final result, and trial_end(parameter_id, success). The
FeasibleTuner sits between the dispatcher and a base tuner (NNI's TPE,
Random, Anneal, Evolution, ... or any object with that interface):

  * update_search_space: creates the reduction of the experiment's space
    (the `query` class argument: model, device, workload, budgets; the space
    is NNI's) or opens `reduction_id`, and hands the base tuner the reduced
    space (prune_space, default true: the same feasible set, fewer dead
    values) or the original one;
  * generate_parameters: the first n_startup configurations are uniform
    feasible samples (GET .../samples with a seed per parameter id); after
    that the base tuner proposes, and each proposal is checked (GET
    .../check, POST for nested choices). An infeasible proposal is reported
    back to the base as a trial that failed: receive_trial_result with
    `infeasible_value` (default: the worst result seen so far, so the base
    learns to avoid the region; on_infeasible="fail" reports only
    trial_end(success=False)), and the base is asked again, up to max_tries
    times; then the fallback: the feasible sample nearest to the base's last
    proposal among `fallback_pool` uniform ones. Continuous parameters
    (uniform, loguniform, normal, ...) pass through dnnsat unchecked: they
    keep the base's values (or an NNI-style random draw);
  * receive_trial_result / trial_end: forwarded to the base for the
    configurations it proposed; the results of uniform and fallback
    configurations reach it through import_data (NNI's way to feed a tuner
    results of configurations it did not generate), so it learns from every
    trial.

Register it in an NNI 2.x experiment (config.yml):

    searchSpaceFile: search_space.json
    tuner:
      codeDirectory: /path/to/dnnsat/examples/nni
      className: dnnsat_tuner.FeasibleTuner
      classArgs:
        server: http://127.0.0.1:8080
        query: {model: resnet50, device: a100-40gb, budgets: {memory: 16GiB},
                workload: {mode: training, optimizer: adam, dtype: fp32}}
        base_tuner: TPE
        base_args: {optimize_mode: maximize, seed: 1}
        optimize_mode: maximize

(className is module.Class relative to codeDirectory; the client modules are
found in ../python, or copy dnnsat_client.py and nni_space.py into the code
directory.) With the Python API:

    from nni.experiment import Experiment, CustomAlgorithmConfig
    experiment = Experiment("local")
    experiment.config.search_space = search_space
    experiment.config.trial_command = "python3 train.py"
    experiment.config.tuner = CustomAlgorithmConfig(
        class_name="dnnsat_tuner.FeasibleTuner",
        code_directory="/path/to/dnnsat/examples/nni",
        class_args={"server": "http://127.0.0.1:8080", "query": {...}, "base_tuner": "TPE",
                    "base_args": {"optimize_mode": "maximize"}, "optimize_mode": "maximize"})
    experiment.run(8081)        # NNI's web portal; dnnsatd has 8080

Or skip the tuner: write_reduced_space() gives a search_space.json for any
built-in tuner (each value in it is part of some feasible configuration,
though not every combination fits), and batch_tuner_space() a BatchTuner
space of feasible configurations only.
"""

import importlib
import json
import os
import random
import sys
import threading

try:
    import dnnsat_client
except ImportError:         # run from the source tree: examples/python holds the client
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import dnnsat_client
import nni_space

try:
    from nni.tuner import Tuner as _TunerBase
    from nni import NoMoreTrialError
    HAVE_NNI = True
except ImportError:
    HAVE_NNI = False

    class NoMoreTrialError(Exception):
        """Raised by generate_parameters when a tuner has nothing more to
        propose (nni.NoMoreTrialError when NNI is installed)."""

    class _TunerBase:
        """The interface of nni.tuner.Tuner, for running without NNI: the
        dispatcher calls update_search_space, generate_parameters (through
        generate_multiple_parameters), receive_trial_result and trial_end."""

        def generate_parameters(self, parameter_id, **kwargs):
            raise NotImplementedError

        def generate_multiple_parameters(self, parameter_id_list, **kwargs):
            out = []
            for pid in parameter_id_list:
                try:
                    out.append(self.generate_parameters(pid, **kwargs))
                except NoMoreTrialError:
                    break
            return out

        def receive_trial_result(self, parameter_id, parameters, value, **kwargs):
            raise NotImplementedError

        def trial_end(self, parameter_id, success, **kwargs):
            pass

        def update_search_space(self, search_space):
            raise NotImplementedError

        def import_data(self, data):
            pass

        def load_checkpoint(self):
            pass

        def save_checkpoint(self):
            pass

DnnsatClient = dnnsat_client.DnnsatClient
DnnsatError = dnnsat_client.DnnsatError

__all__ = ["FeasibleTuner", "batch_tuner_space", "batch_tuner_spaces", "write_reduced_space", "NoMoreTrialError", "HAVE_NNI"]

# NNI's built-in tuner names (config.yml `tuner: name:`) -> module:class, extra arguments
BUILTIN_TUNERS = {
    "TPE": ("nni.algorithms.hpo.tpe_tuner:TpeTuner", {}),
    "Random": ("nni.algorithms.hpo.random_tuner:RandomTuner", {}),
    "Anneal": ("nni.algorithms.hpo.hyperopt_tuner:HyperoptTuner", {"algorithm_name": "anneal"}),
    "Evolution": ("nni.algorithms.hpo.evolution_tuner:EvolutionTuner", {}),
    "GridSearch": ("nni.algorithms.hpo.gridsearch_tuner:GridSearchTuner", {}),
}


def _scalar(value):
    """An NNI final result as a number (a dict reports its "default")."""
    if isinstance(value, dict):
        value = value.get("default")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _make_base(base_tuner, base_args):
    """The base tuner: an object, None, a built-in name or "module:Class"."""
    if base_tuner is None or not isinstance(base_tuner, str):
        return base_tuner
    path, extra = BUILTIN_TUNERS.get(base_tuner, (base_tuner, {}))
    module, _, cls = path.partition(":") if ":" in path else path.rpartition(".")
    if not module or not cls:
        raise ValueError("base_tuner %r: give a built-in name (%s) or module:Class"
                         % (base_tuner, ", ".join(BUILTIN_TUNERS)))
    args = dict(extra)
    args.update(base_args or {})
    return getattr(importlib.import_module(module), cls)(**args)


class FeasibleTuner(_TunerBase):
    """An NNI tuner that generates only configurations that fit (see the
    module's docstring for how).

    Args (NNI classArgs; JSON values):
        server: the dnnsat server's URL.
        query: the question without the space, e.g. {"model": "resnet50",
            "device": "a100-40gb", "budgets": {"memory": "16GiB"}}, or the
            path of a JSON file holding it; the experiment's search space is
            added to it in update_search_space.
        reduction_id: instead of query, an existing reduction (whose space
            must be the experiment's).
        token: a bearer token (or token_file: a file holding one).
        base_tuner: None (uniform feasible sampling), an NNI built-in name
            ("TPE", "Random", "Anneal", "Evolution", "GridSearch"),
            "module:Class", or (Python API) a tuner object.
        base_args: keyword arguments for the base tuner's class.
        optimize_mode: "maximize" or "minimize" (to know the worst result).
        max_tries: base proposals per trial before the fallback.
        n_startup: configurations drawn uniformly from the feasible set
            before the base tuner is asked.
        fallback_pool: uniform samples the fallback picks the nearest from.
        on_infeasible: "penalize" (report infeasible_value, or the worst
            result so far) or "fail" (only trial_end(success=False)).
        infeasible_value: the result reported for an infeasible proposal.
        prune_space: give the base tuner the reduced space (default true).
        seed: seeds the uniform draws.
        client: (Python API) a DnnsatClient to use instead of server/token.

    `stats` counts "uniform", "base", "rejected" and "fallback" configurations.
    """

    def __init__(self, server="http://127.0.0.1:8080", query=None, reduction_id=None, token=None,
                 token_file=None, base_tuner=None, base_args=None, optimize_mode="maximize",
                 max_tries=10, n_startup=10, fallback_pool=64, on_infeasible="penalize",
                 infeasible_value=None, prune_space=True, seed=None, client=None):
        if query is None and reduction_id is None:
            raise ValueError("FeasibleTuner needs a query (model, device, budgets) or a reduction_id")
        if optimize_mode not in ("maximize", "minimize"):
            raise ValueError("optimize_mode is maximize or minimize, not %r" % (optimize_mode,))
        if on_infeasible not in ("penalize", "fail"):
            raise ValueError("on_infeasible is penalize or fail, not %r" % (on_infeasible,))
        if isinstance(query, str):
            with open(query) as f:
                query = json.load(f)
        if token_file and not token:
            with open(token_file) as f:
                token = f.read().strip()
        self.client = client or DnnsatClient(server, token=token)
        self.query = query
        self.reduction_id = reduction_id
        self.base = _make_base(base_tuner, base_args)
        self.optimize_mode = optimize_mode
        self.max_tries = max_tries
        self.n_startup = n_startup if self.base is not None else 0
        self.fallback_pool = fallback_pool
        self.on_infeasible = on_infeasible
        self.infeasible_value = infeasible_value
        self.prune_space = prune_space
        self.seed = seed
        self.space = None               # nni_space.Space of the experiment
        self.reduction = None
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._origin = {}               # NNI parameter id -> base tuner's id, or None (not the base's)
        self._fits = None
        self._worst = None
        self._next_shadow = -1          # ids of rejected proposals, never NNI's
        self._generated = 0
        self.stats = {"uniform": 0, "base": 0, "rejected": 0, "fallback": 0}

    # ---- the NNI Tuner interface ----

    def update_search_space(self, search_space):
        """Reduces the experiment's space (or opens reduction_id) and gives
        the base tuner the reduced (or the original) space."""
        self.space = nni_space.Space(search_space)
        if self.query is not None:
            q = dict(self.query)
            q["space"] = search_space
            red = self.client.reduce(q)
        else:
            red = self.client.reduction(self.reduction_id, timeout=30)
        if red.get("status") != "exact":
            raise RuntimeError("reduction %s is %s: the tuner needs the exact count (uniform samples); "
                               "GET it again to continue counting" % (red.get("id"), red.get("status")))
        if int(red["feasible"]) == 0:
            raise ValueError("no configuration of the search space fits the budgets (reduction %s)" % red["id"])
        self.reduction = red
        self.reduction_id = red["id"]
        self._fits = dnnsat_client.FeasibilityCache(self.client, self.reduction_id)
        if self.base is not None:
            self.base.update_search_space(red["reduced_space"] if self.prune_space else search_space)

    def generate_parameters(self, parameter_id, **kwargs):
        """A feasible configuration for the trial `parameter_id`."""
        if self.space is None:
            raise RuntimeError("update_search_space was not called")
        kwargs.pop("st_callback", None)         # the base must not send trials itself
        with self._lock:
            startup = self._generated < self.n_startup
            self._generated += 1
        if self.base is None or startup:
            config = self._uniform(parameter_id)
            origin, key = None, "uniform"
        else:
            config, origin, key = self._from_base(parameter_id, kwargs)
        with self._lock:
            self._origin[parameter_id] = origin
            self.stats[key] += 1
        return config

    def receive_trial_result(self, parameter_id, parameters, value, **kwargs):
        """Forwards a trial's final result to the base tuner (import_data
        for configurations the base did not propose)."""
        v = _scalar(value)
        with self._lock:
            if v is not None and (self._worst is None or self._is_worse(v, self._worst)):
                self._worst = v
            known = parameter_id in self._origin
            origin = self._origin.get(parameter_id)
        if self.base is None:
            return
        if known and origin is None:
            if v is not None:
                self.base.import_data([{"parameter": parameters, "value": v}])
        else:
            self.base.receive_trial_result(origin if known else parameter_id, parameters, value, **kwargs)

    def trial_end(self, parameter_id, success, **kwargs):
        """Forwards the end of a trial the base tuner proposed."""
        with self._lock:
            origin = self._origin.get(parameter_id, parameter_id)
        if self.base is not None and origin is not None:
            self.base.trial_end(origin, success, **kwargs)

    def import_data(self, data):
        """Previous results ([{"parameter", "value"}]) go to the base tuner."""
        if self.base is not None:
            self.base.import_data(data)

    def load_checkpoint(self):
        if self.base is not None and hasattr(self.base, "load_checkpoint"):
            self.base.load_checkpoint()

    def save_checkpoint(self):
        if self.base is not None and hasattr(self.base, "save_checkpoint"):
            self.base.save_checkpoint()

    # ---- proposals ----

    def _is_worse(self, a, b):
        return a < b if self.optimize_mode == "maximize" else a > b

    def _seed_for(self, parameter_id, what):
        if self.seed is None:
            with self._lock:
                return self._rng.getrandbits(62)
        return random.Random("%s:%s:%s" % (self.seed, parameter_id, what)).getrandbits(62)

    def _complete(self, flat, like=None):
        """The continuous parameters of a server sample (the server draws
        them, docs/api.md): the values of `like` (the base's proposal) where
        active, else the sample's own, else NNI-style draws."""
        for p in self.space.params:
            if p.discrete or not self.space.active(p, flat):
                continue
            if like is not None and p.name in like:
                flat[p.name] = like[p.name]
            elif p.name in flat:
                continue
            else:
                with self._lock:
                    flat[p.name] = p.sample(self._rng)
        return self.space.unflatten(flat, snap=False)

    def _uniform(self, parameter_id):
        sample = self.client.samples(self.reduction_id, n=1, seed=self._seed_for(parameter_id, "uniform"))[0]
        return self._complete(self.space.flatten(sample))

    def feasible(self, config):
        """Whether an NNI configuration fits (GET/POST .../check, cached; a
        configuration off the space does not)."""
        return self._fits(config)

    def _reject(self, base_id, config):
        """Tells the base tuner that its proposal base_id failed."""
        with self._lock:
            self.stats["rejected"] += 1
            penalty = self.infeasible_value if self.infeasible_value is not None else self._worst
        if self.on_infeasible == "penalize" and penalty is not None:
            self.base.receive_trial_result(base_id, config, penalty, customized=False)
        self.base.trial_end(base_id, False)

    def _from_base(self, parameter_id, kwargs):
        """(configuration, the base's id or None, stats key)."""
        base_id, last = parameter_id, None
        for _ in range(self.max_tries):
            config = self.base.generate_parameters(base_id, **kwargs)
            last = config
            if self.feasible(config):
                return config, base_id, "base"
            self._reject(base_id, config)
            with self._lock:
                base_id = self._next_shadow
                self._next_shadow -= 1
        pool = self.client.samples(self.reduction_id, n=self.fallback_pool,
                                   seed=self._seed_for(parameter_id, "fallback"))
        target = self.space.flatten(last) if isinstance(last, dict) else {}
        return self._complete(self.space.nearest(pool, target), like=target), None, "fallback"


def batch_tuner_space(client, reduction_id, limit=100, cursor=None, sample_seed=None, extra=None):
    """A search space for NNI's BatchTuner holding feasible configurations
    only: {"combine_params": {"_type": "choice", "_value": [config, ...]}}.

    The configurations are a page of the feasible set in the space's order
    (`limit` of them, from `cursor`: batch_tuner_spaces() walks the pages),
    or, with sample_seed, `limit` distinct configurations drawn by seeded
    uniform samples (duplicates drawn again; fewer when the feasible set is
    smaller): a spread over the whole set, where the first page of the
    ordered walk holds the smallest values. Each configuration is a complete NNI parameter set (continuous
    parameters at their representative value on a page, drawn in samples:
    docs/api.md); `extra` ({name: value}) sets fixed values in every one
    (e.g. {"lr": 0.01}).
    """
    return _batch_page(client, reduction_id, limit, cursor, sample_seed, extra)[0]


def batch_tuner_spaces(client, reduction_id, limit=100, extra=None):
    """Yields BatchTuner spaces of `limit` feasible configurations each,
    page after page, until every feasible configuration was in one."""
    cursor = None
    while True:
        space, cursor = _batch_page(client, reduction_id, limit, cursor, None, extra)
        if space["combine_params"]["_value"]:
            yield space
        if not cursor:
            return


def _distinct_samples(client, reduction_id, n, seed, extra, rounds=8):
    """Up to n distinct seeded samples: uniform draws are with replacement,
    so a BatchTuner space of them would run one configuration twice; the
    duplicates are drawn again (seeds seed, seed + 1, ...), at most `rounds`
    times; asked for the whole feasible set or more, its configurations.
    Distinct as BatchTuner sees them: with `extra` set (continuous values
    drawn by the samples are replaced by it)."""
    red = client.reduction(reduction_id, timeout=30)
    if red.get("status") == "exact" and n >= int(red.get("feasible", n + 1)):
        # every feasible configuration asked for: the whole set, once each
        out, cursor = [], None
        while True:
            page = client.configurations(reduction_id, limit=1000, cursor=cursor)
            out += page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return out
    seen, out = set(), []
    for k in range(rounds):
        if len(out) >= n:
            break
        for item in client.samples(reduction_id, n=n - len(out), seed=seed + k):
            item = dict(item, **(extra or {}))
            key = json.dumps(item, sort_keys=True)
            if key not in seen and len(out) < n:
                seen.add(key)
                out.append(item)
    return out


def _batch_page(client, reduction_id, limit, cursor, sample_seed, extra):
    """(BatchTuner space, the next page's cursor or None)."""
    if sample_seed is not None:
        items, next_cursor = _distinct_samples(client, reduction_id, limit, sample_seed, extra), None
    else:
        page = client.configurations(reduction_id, limit=limit, cursor=cursor)
        items, next_cursor = page["items"], page.get("next_cursor")
    configs = []
    for item in items:
        c = dict(item)
        c.update(extra or {})
        configs.append(c)
    return {"combine_params": {"_type": "choice", "_value": configs}}, next_cursor


def write_reduced_space(client, reduction_id, path):
    """Writes the reduction's reduced space to `path` as an NNI
    search_space.json (a drop-in replacement: the same parameters, each
    keeping only values that are part of some feasible configuration).
    Returns the space."""
    red = client.reduction(reduction_id, timeout=30)
    space = red.get("reduced_space")
    if space is None:
        raise RuntimeError("reduction %s has no reduced space (status %s)" % (red.get("id"), red.get("status")))
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(space, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)
    return space
