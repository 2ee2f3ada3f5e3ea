#!/usr/bin/python3
"""tests/bench/gen_check_bodies.py - random /check request bodies for the HTTP
benchmark: N configurations drawn uniformly from an NNI search space's grid
(choice, randint, quniform, qloguniform; uniform/loguniform/normal drawn as
floats), feasible or not, one JSON body per line.

usage: gen_check_bodies.py QUERY.json N SEED [--by-id | --query-string]
  without a flag:   {query..., "config": {...}}  (POST /v1/check)
  --by-id:          {"config": {...}}            (POST /v1/reductions/{id}/check)
  --query-string:   name=value&...               (GET /v1/reductions/{id}/check?...)
"""
import json
import math
import random
import sys
import urllib.parse


def draw(spec, rng):
    t, v = spec["_type"], spec["_value"]
    if t == "choice":
        x = rng.choice(v)
        if isinstance(x, dict) and "_name" in x:
            out = {"_name": x["_name"]}
            for k, s in x.items():
                if k != "_name":
                    out[k] = draw(s, rng) if isinstance(s, dict) and "_type" in s else s
            return out
        return x
    if t == "randint":
        return rng.randrange(int(v[0]), int(v[1]))
    if t == "quniform":
        lo, hi, q = v
        x = min(max(round(rng.uniform(lo, hi) / q) * q, lo), hi)
        return int(x) if float(x).is_integer() else x
    if t == "qloguniform":
        lo, hi, q = v
        x = min(max(round(math.exp(rng.uniform(math.log(lo), math.log(hi))) / q) * q, lo), hi)
        return int(x) if float(x).is_integer() else x
    if t == "uniform":
        return rng.uniform(v[0], v[1])
    if t == "loguniform":
        return math.exp(rng.uniform(math.log(v[0]), math.log(v[1])))
    if t in ("normal", "lognormal"):
        x = rng.gauss(v[0], v[1])
        return math.exp(x) if t == "lognormal" else x
    raise SystemExit("gen_check_bodies: unsupported _type %s" % t)


def main():
    query = json.load(open(sys.argv[1]))
    n, seed = int(sys.argv[2]), int(sys.argv[3])
    by_id = "--by-id" in sys.argv
    as_query = "--query-string" in sys.argv
    rng = random.Random(seed)
    for _ in range(n):
        config = {k: draw(s, rng) for k, s in query["space"].items()}
        if as_query:
            print(urllib.parse.urlencode({k: json.dumps(v, separators=(",", ":")) if isinstance(v, dict) else v
                                          for k, v in config.items()}))
            continue
        body = {"config": config} if by_id else dict(query, config=config)
        print(json.dumps(body, separators=(",", ":")))


main()
