"""replay.py - replays an AutoML search over a tabular benchmark and charges
simulated GPU time, with and without dnnsat in the loop.

The design, in one place:
  - A Table holds every configuration of a search space (a tuple of values,
    one per parameter), its accuracy after full training, the GPU seconds of
    that training, and the seconds one training step takes.
  - A Scenario is a table plus the truth about a budget: which configurations
    really violate it and how (memory fails at the first step; latency or
    FLOPs are found out only after training), and what dnnsat says: its
    feasible set (the `list` answer) and its reduced space (`reduce`).
  - A searcher proposes configurations one at a time and is told the outcome
    (an accuracy, or None for a trial that produced nothing). Three are here:
    random search, TPE (Optuna's TPESampler, through ask/tell) and regularized
    evolution (Real et al. 2019: tournament of `sample` out of the last
    `population`, mutate one parameter, the oldest dies).
  - A mode says where dnnsat sits: "none" (the searcher sees the whole
    space, every violation is paid for), "reduced" (the searcher sees dnnsat's
    reduced space: values that occur in no feasible configuration are gone,
    but combinations may still violate) and "feasible" (every proposal is
    checked against dnnsat's feasible set before it runs: random search
    becomes uniform sampling of the feasible set, TPE is told a rejected
    proposal failed at no GPU cost, evolution retries its mutation).
  - run_search() returns a trace: after each trial, the GPU seconds spent so
    far and the best accuracy among trials that produced a usable model.
    time_to_target() reads a trace; the rest of the benchmark aggregates.

Accounting (the issue's rules): a memory violation costs the start-up time
plus one training step; a latency or FLOPs violation costs the whole training
and yields nothing; a feasible trial costs its training time. A proposal that
dnnsat rejects costs no GPU time (the check runs on a CPU in milliseconds).
"""
import math
import random

VIOL_NONE, VIOL_MEMORY, VIOL_AFTER = 0, 1, 2


class Table:
    """Every configuration of a space with its measured outcome."""

    def __init__(self, params, domains, configs, accuracy, train_seconds,
                 step_seconds):
        self.params = list(params)          # parameter names, in order
        self.domains = [list(d) for d in domains]
        self.configs = [tuple(c) for c in configs]
        self.accuracy = list(accuracy)
        self.train_seconds = list(train_seconds)
        self.step_seconds = list(step_seconds)
        self.index = {c: i for i, c in enumerate(self.configs)}
        if len(self.index) != len(self.configs):
            raise ValueError("duplicate configurations in the table")


class Scenario:
    """A budget on a table: the truth (viol) and dnnsat's answers."""

    def __init__(self, name, table, viol, dnnsat_feasible, reduced_domains,
                 startup_seconds):
        self.name = name
        self.table = table
        self.viol = list(viol)              # VIOL_* per configuration
        self.feasible = frozenset(dnnsat_feasible)   # indices dnnsat admits
        self.reduced = [list(d) for d in reduced_domains]
        self.startup = startup_seconds

    def truly_feasible(self):
        return [i for i, v in enumerate(self.viol) if v == VIOL_NONE]

    def charge(self, i):
        """(GPU seconds, accuracy or None) of running configuration i."""
        t = self.table
        v = self.viol[i]
        if v == VIOL_MEMORY:
            return self.startup + t.step_seconds[i], None
        if v == VIOL_AFTER:
            return self.startup + t.train_seconds[i], None
        return self.startup + t.train_seconds[i], t.accuracy[i]


# ---- searchers: propose() -> configuration index, tell(index, accuracy) ----

class RandomSearch:
    """Uniform over `domains` (the whole or the reduced space), without
    repeating a configuration; mode "feasible": uniform over dnnsat's set."""

    def __init__(self, sc, mode, rng):
        t = sc.table
        doms = sc.reduced if mode == "reduced" else t.domains
        if mode == "feasible":
            pool = sorted(sc.feasible)
        else:
            allowed = [set(d) for d in doms]
            pool = [i for i, c in enumerate(t.configs)
                    if all(v in allowed[k] for k, v in enumerate(c))]
        rng.shuffle(pool)
        self.pool = pool
        self.next = 0

    def propose(self):
        if self.next >= len(self.pool):
            return None
        self.next += 1
        return self.pool[self.next - 1]

    def tell(self, i, acc):
        pass


class Evolution:
    """Regularized evolution over the searcher's domains."""

    def __init__(self, sc, mode, rng, population=20, sample=5, retries=100):
        self.sc, self.mode, self.rng = sc, mode, rng
        self.doms = sc.reduced if mode == "reduced" else sc.table.domains
        self.population, self.sample, self.retries = population, sample, retries
        self.alive = []        # (index, accuracy), oldest first
        self.seen = set()

    def _ok(self, i):
        return i is not None and (self.mode != "feasible" or i in self.sc.feasible)

    def _random(self):
        t = self.sc.table
        for _ in range(self.retries * 10):
            c = tuple(self.rng.choice(d) for d in self.doms)
            i = t.index.get(c)
            if self._ok(i):
                return i
        return None

    def propose(self):
        if len(self.alive) < self.population:
            return self._random()
        t = self.sc.table
        for _ in range(self.retries):
            cands = self.rng.sample(self.alive, min(self.sample, len(self.alive)))
            parent = max(cands, key=lambda p: p[1])[0]
            c = list(t.configs[parent])
            k = self.rng.randrange(len(c))
            others = [v for v in self.doms[k] if v != c[k]]
            if not others:
                continue
            c[k] = self.rng.choice(others)
            i = t.index.get(tuple(c))
            if self._ok(i):
                return i
        return self._random()

    def tell(self, i, acc):
        if acc is None:
            return             # nothing to breed from
        self.alive.append((i, acc))
        if len(self.alive) > self.population:
            self.alive.pop(0)


class LocalReduction:
    """dnnsat's answers for one scenario, served to the product's Optuna
    sampler (examples/optuna/dnnsat_optuna.py FeasibleSampler) in place of
    its HTTP client: the reduction (count, reduced space), uniform samples of
    the feasible set, and checks, all from the feasible set the dnnsat CLI
    listed. The sampler's own code runs unchanged."""

    def __init__(self, sc):
        t = sc.table
        self.sc = sc
        self.feasible_list = sorted(sc.feasible)
        self.space = {p: {"_type": "choice", "_value": list(d)}
                      for p, d in zip(t.params, sc.reduced)}

    def config(self, i):
        return dict(zip(self.sc.table.params, self.sc.table.configs[i]))

    def reduction(self, reduction_id, timeout=None):
        return {"id": reduction_id, "status": "done", "feasible": str(len(self.feasible_list)),
                "feasible_upper": str(len(self.feasible_list)), "reduced_space": self.space}

    def samples(self, reduction_id, n=10, seed=None, timeout=None, count_timeout=None):
        rng = random.Random(seed)
        return [self.config(rng.choice(self.feasible_list)) for _ in range(n)]

    def check(self, reduction_id, config, method=None):
        c = tuple(config.get(p) for p in self.sc.table.params)
        i = self.sc.table.index.get(c)
        return {"feasible": i is not None and i in self.sc.feasible}


class TPE:
    """Optuna's TPESampler through ask/tell; a trial that produced nothing is
    told as failed (as an out-of-memory exception in an objective is). Mode
    "feasible": the product's FeasibleSampler wrapping a TPESampler, asking
    dnnsat (LocalReduction) before each trial."""

    def __init__(self, sc, mode, rng):
        import optuna
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.optuna = optuna
        self.sc = sc
        doms = sc.reduced if mode == "reduced" else sc.table.domains
        self.dists = {p: optuna.distributions.CategoricalDistribution(d)
                      for p, d in zip(sc.table.params, doms)}
        seed = rng.randrange(2**31)
        sampler = optuna.samplers.TPESampler(seed=seed)
        if mode == "feasible":
            import dnnsat_optuna
            sampler = dnnsat_optuna.FeasibleSampler(LocalReduction(sc), "local", base_sampler=sampler,
                                                    seed=seed)
            # the objective suggests from the sampler's space (the reduced one)
            self.dists = dnnsat_optuna.distributions(sampler.space)
        self.study = optuna.create_study(direction="maximize", sampler=sampler)
        self.pending = None

    def propose(self):
        tr = self.study.ask(self.dists)
        self.pending = tr
        return self.sc.table.index[tuple(tr.params[p] for p in self.sc.table.params)]

    def tell(self, i, acc):
        if acc is None:
            self.study.tell(self.pending, state=self.optuna.trial.TrialState.FAIL)
        else:
            self.study.tell(self.pending, acc)
        self.pending = None


SEARCHERS = {"random": RandomSearch, "tpe": TPE, "evolution": Evolution}
MODES = ("none", "reduced", "feasible")


def run_search(sc, searcher, mode, seed, max_trials, max_seconds=math.inf):
    """Runs one search; returns the trace [(gpu_seconds, best_acc or None,
    wasted_seconds)] after each trial."""
    rng = random.Random(seed)
    s = SEARCHERS[searcher](sc, mode, rng)
    spent = wasted = 0.0
    best = None
    trace = []
    for _ in range(max_trials):
        i = s.propose()
        if i is None:
            break
        sec, acc = sc.charge(i)
        spent += sec
        if acc is None:
            wasted += sec
        elif best is None or acc > best:
            best = acc
        s.tell(i, acc)
        trace.append((spent, best, wasted))
        if spent >= max_seconds:
            break
    return trace


def time_to_target(trace, target):
    """GPU seconds until the best usable accuracy reaches target; inf if never."""
    for spent, best, _ in trace:
        if best is not None and best >= target:
            return spent
    return math.inf


def best_at(trace, seconds):
    """Best usable accuracy after `seconds` of GPU time (None before any)."""
    best = None
    for spent, b, _ in trace:
        if spent > seconds:
            break
        best = b
    return best


def percentile(values, q):
    """The q-th percentile (0..100) by linear interpolation, as numpy's default."""
    v = sorted(values)
    if not v:
        raise ValueError("percentile of nothing")
    pos = (len(v) - 1) * q / 100.0
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def median_ci(values, rng, n_boot=1000):
    """The median and a 95% bootstrap interval (inf allowed)."""
    n = len(values)
    meds = []
    for _ in range(n_boot):
        s = sorted(values[rng.randrange(n)] for _ in range(n))
        meds.append(s[n // 2] if n % 2 else
                    (s[n // 2 - 1] + s[n // 2]) / 2.0)
    meds.sort()
    s = sorted(values)
    med = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0
    return med, meds[int(0.025 * n_boot)], meds[int(0.975 * n_boot) - 1]
