"""examples/optuna/dnnsat_optuna.py - Optuna on a dnnsat reduction: a sampler
that never proposes a configuration that does not fit (FeasibleSampler), a
`constraints_func` for Optuna's own soft constraints, and NNI search spaces as
Optuna distributions. Needs optuna (3.1 or newer; Debian 12's python3-optuna),
examples/python/dnnsat_client.py and examples/python/nni_space.py.

    import optuna, dnnsat_optuna as dno
    from dnnsat_client import DnnsatClient

    client = DnnsatClient("http://127.0.0.1:8080")
    sampler = dno.FeasibleSampler(client, query, base_sampler=optuna.samplers.TPESampler(seed=1))

    def objective(trial):
        config = dno.suggest(trial, sampler.space)    # an NNI sample, e.g. {"batch_size": 64, ...}
        return train(config)

    optuna.create_study(sampler=sampler).optimize(objective, n_trials=100)

Why a sampler and not only constraints: Optuna's constraints are soft. A
`constraints_func` is evaluated after the trial ran (the out-of-memory trial
has already been paid for) and only teaches the sampler to avoid the region
next time. dnnsat knows the feasible set before any trial runs, so the sampler
can propose feasible points only. constraints_func() is here too, for users of
NSGAIISampler / TPESampler(constraints_func=...) who want the violation
amounts (how far over the memory budget) recorded with their trials.

Parameter names: a top-level NNI parameter keeps its name; a parameter inside
an option of a nested choice is named "choice/option/parameter"
(examples/python/nni_space.py). suggest() uses exactly the distributions of
distributions(), which are the ones the sampler proposes for: an objective
that suggests its parameters some other way gets independent (unchecked)
values for those it names differently.
"""

import math
import os
import random
import sys
import threading
import warnings

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState

try:
    import dnnsat_client
except ImportError:         # run from the source tree: examples/python holds the client
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import dnnsat_client
import nni_space

DnnsatError = dnnsat_client.DnnsatError

__all__ = ["FeasibleSampler", "constraints_func", "ConstraintsFunc", "distribution", "distributions", "suggest", "trial_config",
           "DnnsatError"]

_GRID_AS_CATEGORICAL_MAX = 10000


def _as_space(space):
    return space if isinstance(space, nni_space.Space) else nni_space.Space(space)


def _stepped(low, high, q, integral):
    """An Optuna distribution for the values low, low+q, ..., high."""
    if integral and float(q).is_integer():
        return IntDistribution(int(round(low)), int(round(high)), step=int(round(q)))
    return FloatDistribution(low, high, step=q)


def distribution(p):
    """The Optuna distribution of one NNI parameter (an nni_space.Param).

    choice -> CategoricalDistribution (a nested choice: of its option names);
    randint [low, high) -> IntDistribution(low, high - 1);
    quniform / qloguniform [low, high, q] -> IntDistribution(step=q) or
        FloatDistribution(step=q) when the grid is low, low+q, ..., high (q=1
        qloguniform: IntDistribution(log=True)); a grid whose ends are clipped
        off the multiples of q (e.g. [2, 10, 5] = {2, 5, 10}) ->
        CategoricalDistribution of its values, so that every Optuna value is
        an NNI value;
    uniform -> FloatDistribution; loguniform -> FloatDistribution(log=True);
    normal / lognormal / qnormal / qlognormal (unbounded; Optuna has no such
        distribution) -> the range mu +- 3 sigma (of the log for lognormal),
        stepped by q for the q-types: an approximation, documented as such.
    """
    t, a = p.type, p.args
    if t == "choice":
        return CategoricalDistribution(p.values)
    if t == "randint":
        return IntDistribution(p.low, p.high)
    if t in ("quniform", "qloguniform"):
        if p.low == p.high:
            return CategoricalDistribution([p.grid()[0]])
        if p.regular:
            if t == "qloguniform" and p.integral and p.q == 1 and p.low >= 1:
                return IntDistribution(int(p.low), int(p.high), log=True)
            return _stepped(p.low, p.high, p.q, p.integral)
        if p.size() <= _GRID_AS_CATEGORICAL_MAX:
            return CategoricalDistribution(p.grid())
        return FloatDistribution(p.low, p.high)     # values snapped to the grid by trial_config()
    if t == "uniform":
        return FloatDistribution(float(a[0]), float(a[1]))
    if t == "loguniform":
        return FloatDistribution(float(a[0]), float(a[1]), log=True)
    mu, sigma = float(a[0]), float(a[1])
    lo, hi = mu - 3 * sigma, mu + 3 * sigma
    if t == "normal":
        return FloatDistribution(lo, hi)
    if t == "lognormal":
        return FloatDistribution(math.exp(lo), math.exp(hi), log=True)
    q = float(a[2])
    if t == "qlognormal":
        lo, hi = math.exp(lo), math.exp(hi)
    lo, hi = round(lo / q) * q, max(round(hi / q) * q, round(lo / q) * q + q)
    return _stepped(lo, hi, q, q.is_integer())


def distributions(space):
    """{flat parameter name: Optuna distribution} for every parameter of an
    NNI search space (a dict or an nni_space.Space), nested ones included."""
    space = _as_space(space)
    return {p.name: distribution(p) for p in space.params}


def suggest(trial, space):
    """Suggests every active parameter of the NNI space on an Optuna trial,
    in NNI's order (a nested choice first, then the parameters of the chosen
    option), and returns the configuration as an NNI sample (nested dicts,
    grid values exact), ready for the training code or for dnnsat's /check."""
    space = _as_space(space)
    flat = {}
    for p in space.params:
        if space.active(p, flat):
            flat[p.name] = _suggest_one(trial, p.name, distribution(p))
    return space.unflatten(flat)


def _suggest_one(trial, name, dist):
    """trial.suggest_* for one distribution (the public API: the trial then
    holds exactly that distribution)."""
    if isinstance(dist, CategoricalDistribution):
        return trial.suggest_categorical(name, dist.choices)
    if isinstance(dist, IntDistribution):
        return trial.suggest_int(name, dist.low, dist.high, step=dist.step, log=dist.log)
    return trial.suggest_float(name, dist.low, dist.high, step=dist.step, log=dist.log)


def trial_config(params, space):
    """An NNI configuration from Optuna params (trial.params of a finished
    trial, or a flat dict): only the active parameters, snapped to their grids."""
    space = _as_space(space)
    flat = {}
    for p in space.params:
        if space.active(p, flat) and p.name in params:
            flat[p.name] = params[p.name]
    return space.unflatten(flat)


def _open_reduction(client, reduction, wait):
    """A reduction object from an id, a reduction object or a query (which
    is reduced now). The count gets up to `wait` seconds; one that does not
    finish (a huge space) is fine: its samples are approximate (drawn
    without the exact count, each feasible) and per-trial checks are exact."""
    if isinstance(reduction, dict) and "space" in reduction and "model" in reduction:
        _, red = client.create_reduction(reduction, timeout=wait)
    elif isinstance(reduction, dict) and "id" in reduction and "status" in reduction:
        red = reduction
    else:
        red = client.reduction(reduction, timeout=wait)
    if int(red.get("feasible", red["feasible_upper"])) == 0:
        raise ValueError("no configuration of the space fits (reduction %s): relax a budget" % red["id"])
    return red


class _StudyView:
    """The study as the base sampler sees it: the real trials plus the
    configurations dnnsat rejected, as pruned trials without intermediate
    values (which Optuna's TPE ranks below every completed trial, so they
    weigh in its "bad" density). Everything else is the real study."""

    def __init__(self, study, rejected):
        self._study = study
        self._rejected = rejected

    def __getattr__(self, name):
        return getattr(self._study, name)

    def get_trials(self, deepcopy=True, states=None):
        trials = self._study.get_trials(deepcopy=deepcopy, states=states)
        extra = [t for t in self._rejected if states is None or t.state in states]
        if not extra:
            return trials
        return sorted(trials + extra, key=lambda t: t.number)   # stable: real trials first

    @property
    def trials(self):
        return self.get_trials()


class FeasibleSampler(optuna.samplers.BaseSampler):
    """An Optuna sampler that only proposes configurations that fit.

    Args:
        client: a dnnsat_client.DnnsatClient.
        reduction: a reduction id, a reduction object, or a query (a dict
            with "model", "space", ...: reduced now).
        base_sampler: None to draw uniformly from the feasible set, or an
            Optuna sampler (TPESampler, CmaEsSampler, NSGAIISampler, ...) to
            wrap.
        seed: seeds the draws (the same seed and trial numbers give the same
            proposals).
        space: the NNI space whose distributions the objective suggests
            (default: the reduction's reduced space, so `suggest(trial,
            sampler.space)` is the objective's first line).
        max_tries: proposals asked of the base sampler per trial before the
            fallback (below).
        fallback_pool: how many uniform feasible samples the fallback draws
            to pick the one nearest to the base sampler's last proposal.
        wait: seconds the count of a new reduction (or a GET of one that is
            still running) may take in the constructor. On a huge space the
            count does not finish: the sampler works anyway (samples are then
            approximate: the server's "distribution": "approximate", each one
            feasible), and `space` defaults to the query's space.
        sample_timeout: the deadline of each samples request (seconds): a
            trial gets its configuration within about that, whatever the
            space's size.
        count_timeout: how much of each samples request's deadline the
            server spends bringing an unfinished count forward before it
            draws (None: the server's default, half of sample_timeout; 0:
            draw at once from the count as it stands, for a space whose
            count never finishes, where the half is spent for nothing).
        n_startup_trials: trials drawn uniformly from the feasible set before
            the base sampler is consulted (its own start-up would be random
            over the whole space; this is the feasible equivalent).
        tell_base: show rejected proposals to the base sampler as pruned
            trials (only in its view of the study: the study itself never
            holds them), so it learns where the infeasible region is.
        remember: how many rejected proposals that view keeps (the newest).

    How it works (Optuna 3.1's BaseSampler API). Optuna asks a sampler for a
    trial's values in two steps: at the trial's start, infer_relative_search_space()
    and sample_relative() (which may return values for every parameter at
    once), then, for each parameter the objective suggests that the relative
    step did not cover, sample_independent(). Feasibility is a property of
    the whole configuration, so this sampler decides it in sample_relative():

      * infer_relative_search_space() returns the distributions of every
        parameter of the space (nested ones too; they stay conditional);
      * sample_relative() returns a whole feasible configuration:
          - uniform (no base sampler, or the first n_startup_trials trials):
            GET /v1/reductions/{id}/samples?n=1&seed=S&timeout=sample_timeout
            [&count_timeout=count_timeout] (approximate while the count is unfinished) with a seed derived
            from `seed` and the trial number; the continuous parameters
            (no budget depends on them; the server leaves them out of its
            samples) are drawn by a seeded RandomSampler;
          - with a base sampler: the base proposes a whole configuration
            (its own sample_relative for what its relative search space
            covers, its sample_independent for the rest, in NNI's order so
            nested parameters are asked only when their option is chosen),
            and the configuration is checked with GET .../check (cached per
            configuration). If it does not fit, it is remembered as a pruned
            trial in the base's view of the study and the base is asked
            again, up to max_tries times; then the fallback: fallback_pool
            uniform feasible samples, and the one nearest to the base's last
            proposal (a mismatch of a categorical value counts 1, a numeric
            one its distance over the range) with the base's continuous
            values. The base's guidance is kept as far as the budget allows,
            and nothing infeasible ever reaches Optuna;
      * sample_independent() is only reached for parameters outside the
        space (or suggested with other distributions): it delegates to the
        base sampler (or a RandomSampler); those values are not checked;
      * after_trial() and reseed_rng() are forwarded to the base sampler.

    Values fixed with study.enqueue_trial() win in Optuna over any sampler;
    the sampler proposes the feasible configuration nearest to them (it
    warns when none agrees with all of them).

    `stats` counts what happened: "uniform" and "base" proposals, "rejected"
    base proposals, "fallback" draws, "checks" sent to the server.
    """

    def __init__(self, client, reduction, base_sampler=None, seed=None, space=None, max_tries=10,
                 fallback_pool=64, n_startup_trials=10, tell_base=True, remember=1000, wait=30.0,
                 sample_timeout=1.0, count_timeout=None):
        red = _open_reduction(client, reduction, wait)
        self.client = client
        self.reduction_id = red["id"]
        self.reduction = red
        self.sample_timeout = sample_timeout
        self.count_timeout = count_timeout
        if space is None:
            space = red.get("reduced_space")
        if space is None and isinstance(reduction, dict) and "space" in reduction:
            space = reduction["space"]
        if space is None:
            raise ValueError("reduction %s is %s: it has no reduced space yet; pass space= (the NNI space "
                             "of the query)" % (red["id"], red.get("status")))
        self.space = space
        self._space = _as_space(self.space)
        self._dists = distributions(self._space)
        self._base = base_sampler
        self._seed = seed
        self._rng = random.Random(seed)
        self._random = optuna.samplers.RandomSampler(seed=seed)
        self.max_tries = max_tries
        self.fallback_pool = fallback_pool
        self.n_startup_trials = n_startup_trials if base_sampler is not None else 0
        self.tell_base = tell_base
        self.remember = remember
        self._fits = dnnsat_client.FeasibilityCache(client, self.reduction_id)
        self._rejected = {}
        self._lock = threading.Lock()
        self._stats = {"uniform": 0, "base": 0, "rejected": 0, "fallback": 0}

    # ---- BaseSampler ----

    def infer_relative_search_space(self, study, trial):
        return dict(self._dists)

    def sample_relative(self, study, trial, search_space):
        if not search_space:
            return {}
        fixed = trial.system_attrs.get("fixed_params") or {}
        finished = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)))
        if self._base is None or finished < self.n_startup_trials:
            flat = self._uniform(study, trial, fixed)
        else:
            flat = self._from_base(study, trial, fixed)
        return {k: v for k, v in flat.items() if k in search_space}

    def sample_independent(self, study, trial, param_name, param_distribution):
        sampler = self._base if self._base is not None else self._random
        return sampler.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(self, study, trial, state, values):
        if self._base is not None:
            self._base.after_trial(study, trial, state, values)

    def reseed_rng(self):
        self._rng.seed()
        self._random.reseed_rng()
        if self._base is not None:
            self._base.reseed_rng()

    # ---- proposals ----

    def _trial_seed(self, trial, what):
        """A per-trial server seed: reproducible from `seed` and the trial
        number, or random when the sampler has no seed."""
        if self._seed is None:
            with self._lock:
                return self._rng.getrandbits(62)
        return random.Random("%s:%d:%s" % (self._seed, trial.number, what)).getrandbits(62)

    @property
    def stats(self):
        """{"uniform", "base", "rejected", "fallback", "checks"}: counts."""
        with self._lock:
            return dict(self._stats, checks=self._fits.calls)

    def _count(self, key, n=1):
        with self._lock:
            self._stats[key] += n

    def _uniform(self, study, trial, fixed):
        """A uniform feasible configuration (flat), continuous values from a
        seeded RandomSampler; the nearest of a pool to the fixed values."""
        n = self.fallback_pool if fixed else 1
        pool = self._samples(n, self._trial_seed(trial, "uniform"))
        flat = self._nearest(pool, fixed, fixed) if fixed else self._space.flatten(pool[0])
        self._fill(flat, lambda name, dist: self._random.sample_independent(study, trial, name, dist))
        self._count("uniform")
        return flat

    def _samples(self, n, seed):
        """Up to n feasible samples within sample_timeout (uniform once the
        count is exact, approximate before); at least one."""
        pool = self.client.samples(self.reduction_id, n=n, seed=seed, timeout=self.sample_timeout,
                                   count_timeout=self.count_timeout)
        if not pool:
            raise RuntimeError("dnnsat: no feasible sample of reduction %s within %g s: raise sample_timeout"
                               % (self.reduction_id, self.sample_timeout))
        return pool

    def _fill(self, flat, draw):
        """Adds a value, drawn by draw(name, distribution), for every active
        parameter the flat configuration lacks (the continuous ones)."""
        for p in self._space.params:
            if p.name not in flat and self._space.active(p, flat):
                flat[p.name] = draw(p.name, self._dists[p.name])

    def _propose(self, view, trial, fixed):
        """One whole configuration (flat) proposed by the base sampler."""
        base = self._base
        rel_space = base.infer_relative_search_space(view, trial)
        rel = base.sample_relative(view, trial, rel_space) if rel_space else {}
        flat = {}
        for p in self._space.params:
            if not self._space.active(p, flat):
                continue
            dist = self._dists[p.name]
            if p.name in fixed:
                flat[p.name] = fixed[p.name]
            elif p.name in rel and rel_space.get(p.name) == dist:
                flat[p.name] = rel[p.name]
            else:
                flat[p.name] = base.sample_independent(view, trial, p.name, dist)
        return flat

    def _from_base(self, study, trial, fixed):
        key = (id(study._storage), study._study_id)
        with self._lock:
            rejected = self._rejected.setdefault(key, [])
        view = _StudyView(study, rejected if self.tell_base else [])
        flat = None
        for _ in range(self.max_tries):
            flat = self._propose(view, trial, fixed)
            if self.feasible(self._space.unflatten(flat)):
                self._count("base")
                return flat
            self._count("rejected")
            if self.tell_base:
                self._remember(rejected, flat, trial)
        pool = self._samples(self.fallback_pool, self._trial_seed(trial, "fallback"))
        flat = flat or {}
        best = self._nearest(pool, flat, fixed)
        for p in self._space.continuous:
            if p.name in flat and self._space.active(p, best):
                best[p.name] = flat[p.name]
        self._fill(best, lambda name, dist: self._random.sample_independent(study, trial, name, dist))
        self._count("fallback")
        return best

    def _remember(self, rejected, flat, trial):
        t = optuna.trial.create_trial(
            state=TrialState.PRUNED,
            params={k: v for k, v in flat.items()},
            distributions={k: self._dists[k] for k in flat},
            system_attrs={"dnnsat_rejected": True, "constraints": (1.0,)})
        t.number = trial.number
        with self._lock:
            rejected.append(t)
            del rejected[:-self.remember]

    def _nearest(self, pool, target, fixed):
        """The flat configuration of the pool nearest to target (flat);
        parameters fixed by enqueue_trial weigh 1000 times more."""
        best = self._space.nearest(pool, target, {k: 1000.0 for k in fixed})
        if any(best.get(k) != v for k, v in fixed.items()
               if k in self._space.by_name and self._space.by_name[k].discrete):
            warnings.warn("dnnsat: no feasible configuration among %d samples agrees with the enqueued "
                          "values %r; those values win in Optuna and may not fit" % (len(pool), fixed))
        return best

    def feasible(self, config):
        """Whether the nested NNI configuration fits (GET .../check, cached;
        a configuration off the space does not)."""
        return self._fits(config)


def constraints_func(client, reduction_id, space=None):
    """A function for Optuna's `constraints_func` (TPESampler, NSGAIISampler,
    ...): trial -> one value per constraint of the reduction's query, in a
    fixed order, <= 0 when it holds. See ConstraintsFunc."""
    return ConstraintsFunc(client, reduction_id, space)


class ConstraintsFunc:
    """Optuna's `constraints_func` on a dnnsat reduction: calling it on a
    trial gives one value per constraint of the reduction's query, in a
    fixed order, <= 0 when it holds.

    A violated budget gives how far over its limit the trial is, relative to
    the limit: |value - limit| / |limit| (memory at 7.2 GiB over a 6 GiB
    budget: 0.2); a violated expression constraint (or invalid shapes) gives
    1.0; a constraint that holds gives 0.0. The values come from GET
    .../check's `violated` list; the order of the constraints from one POST
    .../explain on the first trial (`names` then lists them by JSON path,
    e.g. ["$.model", "$.budgets.memory"]). `space` is the NNI space the
    trial's parameters come from (default: the reduction's reduced space).
    A trial that stopped before suggesting every parameter cannot be judged:
    it gets 0.0s.
    """

    def __init__(self, client, reduction_id, space=None):
        red = client.reduction(reduction_id, timeout=30)
        self.client = client
        self.reduction_id = red["id"]
        self.space = _as_space(space if space is not None else red["reduced_space"])
        self.names = None
        self._lock = threading.Lock()

    def _layout(self, config):
        with self._lock:
            if self.names is None:
                ex = self.client.explain(self.reduction_id, config=config)
                self.names = [c["path"] for c in ex["constraints"]]
            return self.names

    def __call__(self, trial):
        config = trial_config(trial.params, self.space)
        if self.space.violations(config, continuous_optional=True):
            return [0.0] * len(self.names or [None])
        names = self._layout(config)
        out = [0.0] * len(names)
        for v in self.client.check(self.reduction_id, config)["violated"]:
            amount = 1.0
            value, limit = v.get("value"), v.get("limit")
            if isinstance(value, (int, float)) and isinstance(limit, (int, float)) and limit:
                amount = max(abs(value - limit) / abs(limit), 1e-12)
            i = names.index(v["path"]) if v["path"] in names else 0
            out[i] = max(out[i], amount)
        return out
