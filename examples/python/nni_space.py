"""examples/python/nni_space.py - NNI search spaces on the client side, for
the Optuna sampler (examples/optuna) and the NNI tuner (examples/nni): the
parameters of a space in NNI's order (nested ones flattened), the exact grid
of each discrete type, membership, NNI-style random draws of the continuous
types, and the two shapes of a configuration:

  nested (NNI's, what trials and the dnnsat server use):
      {"batch_size": 64, "layer0": {"_name": "Conv", "kernel_size": 3}}
  flat (one value per parameter; what Optuna stores):
      {"batch_size": 64, "layer0": "Conv", "layer0/Conv/kernel_size": 3}

A parameter inside an option of a nested choice is named
"choice/option/parameter" (deeper: "a/A/b/B/k"): two options of one choice
may hold parameters of the same name with different domains, and the option
in the name keeps them apart. The grids follow docs/search-space.md (the
server's rules): randint [low, high) excludes high; quniform/qloguniform
[low, high, q] are clip(k*q, low, high) for k = round(low/q) .. round(high/q),
integers when every value is integral. Standard library only.
"""

import math
import random

__all__ = ["Param", "Space", "CONTINUOUS_TYPES", "DISCRETE_TYPES"]

DISCRETE_TYPES = ("choice", "randint", "quniform", "qloguniform")
CONTINUOUS_TYPES = ("uniform", "loguniform", "normal", "lognormal", "qnormal", "qlognormal")
_REL = 1e-9


def _close(a, b):
    return abs(a - b) <= _REL * max(1.0, abs(a), abs(b))


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class Param:
    """One parameter of a space.

    Attributes:
        name: the flat name ("lr", "layer0/Conv/kernel_size").
        key: its key in its (sub-)configuration ("kernel_size").
        type: the NNI _type; args: the NNI _value list.
        parent: the Param of the nested choice that holds it, or None.
        option: the option (its "_name") of `parent` it belongs to, or None.
        nested: True for a choice of sub-spaces (its values are option names).
        discrete: True for choice, randint and the q-grids of uniform ranges.
    """

    def __init__(self, name, key, spec, parent=None, option=None):
        if not isinstance(spec, dict) or "_type" not in spec or "_value" not in spec:
            raise ValueError("%s: a parameter is {\"_type\": ..., \"_value\": [...]}" % name)
        self.name = name
        self.key = key
        self.type = spec["_type"]
        self.args = list(spec["_value"])
        self.parent = parent
        self.option = option
        self.nested = False
        self.options = {}       # option name -> list of its Params (nested choice)
        if self.type not in DISCRETE_TYPES + CONTINUOUS_TYPES:
            raise ValueError("%s: unknown _type %r" % (name, self.type))
        self.discrete = self.type in DISCRETE_TYPES
        if self.type == "choice":
            if not self.args:
                raise ValueError("%s: empty choice" % name)
            # nested as NNI and the server decide it: every option a dict with _name
            self.nested = all(isinstance(v, dict) and "_name" in v for v in self.args)
            if self.nested:
                self.values = [v["_name"] for v in self.args]
            else:
                self.values = list(self.args)
        elif self.type == "randint":
            low, high = int(self.args[0]), int(self.args[1])
            self.low, self.high = low, high - 1
        elif self.type in ("quniform", "qloguniform"):
            self._init_qgrid(*[float(a) for a in self.args[:3]])
        elif self.type in ("uniform", "loguniform"):
            self.low, self.high = float(self.args[0]), float(self.args[1])

    def _init_qgrid(self, low, high, q):
        self.low, self.high, self.q = low, high, q
        self.kmin, self.kmax = round(low / q), round(high / q)
        self.integral = False
        n = self.kmax - self.kmin + 1
        if n <= 1000:
            self.integral = all(float(self._qvalue(k)).is_integer() for k in range(self.kmin, self.kmax + 1))
        else:
            self.integral = float(q).is_integer() and low.is_integer() and high.is_integer()
        # regular: every value is low + i*q (a stepped range in Optuna's terms)
        self.regular = _close(self.kmin * q, low) and _close(self.kmax * q, high)

    def _qvalue(self, k):
        """The k-th multiple of q clipped into [low, high], written as the
        server writes reals (15 significant digits)."""
        v = k * self.q
        if v <= self.low or _close(v, self.low):
            return self.low
        if v >= self.high or _close(v, self.high):
            return self.high
        return float("%.15g" % v)

    def _num(self, v):
        return int(round(v)) if getattr(self, "integral", False) else v

    def grid(self):
        """The values of a discrete parameter, as a list (randint and q-grids
        are built on demand: mind the size of huge ranges)."""
        if self.type == "choice":
            return list(self.values)
        if self.type == "randint":
            return list(range(self.low, self.high + 1))
        if self.type in ("quniform", "qloguniform"):
            out = []
            for k in range(self.kmin, self.kmax + 1):
                v = self._num(self._qvalue(k))
                if not out or out[-1] != v:
                    out.append(v)
            return out
        raise ValueError("%s: %s is continuous: it has no grid" % (self.name, self.type))

    def size(self):
        """How many values a discrete parameter has (None for continuous)."""
        if self.type == "choice":
            return len(self.values)
        if self.type == "randint":
            return self.high - self.low + 1
        if self.type in ("quniform", "qloguniform"):
            return 1 if self.low == self.high else self.kmax - self.kmin + 1
        return None

    def snap(self, v):
        """The grid value nearest to the number v (q-grids and randint);
        other types return v unchanged."""
        if not _is_number(v):
            return v
        if self.type == "randint":
            return min(max(int(round(v)), self.low), self.high)
        if self.type in ("quniform", "qloguniform"):
            k = min(max(round(v / self.q), self.kmin), self.kmax)
            near = [self._qvalue(j) for j in (k - 1, k, k + 1) if self.kmin <= j <= self.kmax]
            return self._num(min(near, key=lambda c: abs(c - v)))
        return v

    def contains(self, v):
        """True when v is a value this parameter can take (for a nested
        choice: one of its option names)."""
        t = self.type
        if t == "choice":
            return any(v == c and isinstance(v, bool) == isinstance(c, bool)
                       and isinstance(v, str) == isinstance(c, str) for c in self.values)
        if not _is_number(v) or (isinstance(v, float) and math.isnan(v)):
            return False
        if t == "randint":
            return float(v).is_integer() and self.low <= v <= self.high
        if t in ("quniform", "qloguniform"):
            return _close(self.snap(v), v)
        if t in ("uniform", "loguniform"):
            return (self.low <= v <= self.high) or _close(v, self.low) or _close(v, self.high)
        if t in ("lognormal", "qlognormal"):
            return v >= 0
        return True             # normal, qnormal: any real

    def sample(self, rng):
        """A random value drawn as NNI draws it (random.Random rng)."""
        t, a = self.type, self.args
        if t == "choice":
            return rng.choice(self.values)
        if t == "randint":
            return rng.randint(self.low, self.high)
        if t == "uniform":
            return rng.uniform(a[0], a[1])
        if t == "loguniform":
            return math.exp(rng.uniform(math.log(a[0]), math.log(a[1])))
        if t == "quniform":
            return self.snap(rng.uniform(a[0], a[1]))
        if t == "qloguniform":
            return self.snap(math.exp(rng.uniform(math.log(a[0]), math.log(a[1]))))
        if t == "normal":
            return rng.gauss(a[0], a[1])
        if t == "lognormal":
            return math.exp(rng.gauss(a[0], a[1]))
        if t == "qnormal":
            return round(rng.gauss(a[0], a[1]) / a[2]) * a[2]
        return round(math.exp(rng.gauss(a[0], a[1])) / a[2]) * a[2]      # qlognormal

    def distance(self, a, b):
        """0 for equal values, 1 for unequal categorical ones (or a missing
        one), else |a - b| over the range (log-scaled for the log types)."""
        if a is None or b is None:
            return 0.0 if a is b else 1.0
        if self.type == "choice" or not (_is_number(a) and _is_number(b)):
            return 0.0 if a == b else 1.0
        lo, hi = self.low, self.high
        if self.type in ("qloguniform", "loguniform") and min(a, b, lo) > 0:
            a, b, lo, hi = math.log(a), math.log(b), math.log(lo), math.log(hi)
        return abs(a - b) / (hi - lo) if hi > lo else 0.0

    def __repr__(self):
        return "Param(%r, %s %r)" % (self.name, self.type, self.args)


class Space:
    """An NNI search space: `params` lists every parameter in NNI's order, a
    nested parameter right after the choice that holds it; `by_name` maps
    flat names to them; `top` lists the top-level ones."""

    def __init__(self, nni_space):
        if not isinstance(nni_space, dict) or not nni_space:
            raise ValueError("an NNI search space is a non-empty JSON object")
        self.raw = nni_space
        self.params = []
        self.by_name = {}
        self.top = self._read(nni_space, "", None, None)

    def _read(self, obj, prefix, parent, option):
        out = []
        for key, spec in obj.items():
            if key == "_name":
                continue
            p = Param(prefix + key, key, spec, parent, option)
            self.params.append(p)
            self.by_name[p.name] = p
            out.append(p)
            if p.nested:
                for opt in p.args:
                    p.options[opt["_name"]] = self._read(opt, "%s/%s/" % (p.name, opt["_name"]), p, opt["_name"])
        return out

    @property
    def discrete(self):
        """The discrete parameters (the ones the server counts and checks)."""
        return [p for p in self.params if p.discrete]

    @property
    def continuous(self):
        """The continuous parameters (they pass through the server)."""
        return [p for p in self.params if not p.discrete]

    def active(self, p, flat):
        """True when p is active given the choices made in the flat config."""
        while p.parent is not None:
            if flat.get(p.parent.name) != p.option:
                return False
            p = p.parent
        return True

    def flatten(self, config):
        """A nested NNI configuration as a flat {name: value} dict."""
        flat = {}

        def walk(params, sub):
            for p in params:
                if p.key not in sub:
                    continue
                v = sub[p.key]
                if p.nested and isinstance(v, dict):
                    flat[p.name] = v.get("_name")
                    walk(p.options.get(v.get("_name"), []), v)
                else:
                    flat[p.name] = v
        walk(self.top, config)
        return flat

    def unflatten(self, flat, snap=True):
        """A flat {name: value} dict as a nested NNI configuration (only the
        active parameters; q-grid and randint values snapped to their grid
        when `snap`, so an Optuna float like 224.00000000000003 becomes 224)."""
        def build(params):
            sub = {}
            for p in params:
                if p.name not in flat:
                    continue
                v = flat[p.name]
                if p.nested:
                    inner = build(p.options.get(v, []))
                    inner = dict({"_name": v}, **inner)
                    sub[p.key] = inner
                else:
                    sub[p.key] = p.snap(v) if snap else v
            return sub
        return build(self.top)

    def violations(self, config, continuous_optional=False):
        """What keeps a nested configuration out of the space: a list of
        messages (empty when every active parameter has a value it can take
        and nothing else is there). With continuous_optional, a continuous
        parameter may be absent (the server's configurations leave them out)."""
        out = []

        def walk(params, sub, where):
            known = {p.key for p in params}
            for k in sub:
                if k != "_name" and k not in known:
                    out.append("%s%s: not a parameter of the space" % (where, k))
            for p in params:
                if p.key not in sub:
                    if not (continuous_optional and not p.discrete):
                        out.append("%s: missing" % p.name)
                    continue
                v = sub[p.key]
                if p.nested:
                    if not isinstance(v, dict) or v.get("_name") not in p.options:
                        out.append("%s: %r is not an option (%s)" % (p.name, v, ", ".join(p.options)))
                    else:
                        walk(p.options[v["_name"]], v, p.name + "/" + v["_name"] + "/")
                elif not p.contains(v):
                    out.append("%s: %r is not a value of %s %r" % (p.name, v, p.type, p.args))
        walk(self.top, config, "")
        return out

    def contains(self, config, continuous_optional=False):
        """True when the nested configuration lies in the space."""
        return not self.violations(config, continuous_optional)

    def sample(self, rng=None, only=None):
        """A random nested configuration, drawn as NNI's random tuner would
        (only the parameters for which only(p) is true, when given)."""
        rng = rng or random.Random()
        flat = {}
        for p in self.params:
            if self.active(p, flat) and (only is None or only(p) or p.nested):
                flat[p.name] = p.sample(rng)
        return self.unflatten(flat, snap=False)

    def distance(self, a, b, weights=None):
        """How far apart two flat configurations are over the discrete
        parameters: a categorical mismatch counts 1, a numeric one its
        distance over the parameter's range (in log for the log types), a
        parameter active in one only 1; weights ({name: w}) scale some."""
        d = 0.0
        for p in self.discrete:
            x, y = a.get(p.name), b.get(p.name)
            if x is None and y is None:
                continue
            w = (weights or {}).get(p.name, 1.0)
            d += w * p.distance(x, y)
        return d

    def nearest(self, pool, target, weights=None):
        """The configuration of pool (nested ones, e.g. the server's samples)
        nearest to target (flat), as a flat configuration."""
        best, best_d = None, None
        for config in pool:
            flat = self.flatten(config)
            d = self.distance(target, flat, weights)
            if best is None or d < best_d:
                best, best_d = flat, d
        return best
