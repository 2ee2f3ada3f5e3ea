#!/usr/bin/python3
"""tests/cli/test_model_rules.py - a model's own validity rules ("rules" in
the model format; the vit template's $.rules[0], image_size % patch == 0,
as torchvision's VisionTransformer asserts) seen from the command line: the
solver's `count` and `list` over a small space leave out exactly the
configurations whose `dnnsat estimate` is invalid, found one by one (brute
force), and each of those names the rule; `explain` names it too.

Until then the vit template priced image_size=100, patch=16 as a valid
model (a 6 x 6 patch grid) where torchvision refuses to build it. Prints
"N passed, N failed".
"""
import itertools
import json
import os
import tempfile

from clitest import check, estimate_json, report, run

# a one-layer ViT small enough that every configuration fits: only validity decides
FIXED = ["layers=1", "batch_size=1", "hidden=64", "heads=2", "mlp_dim=128"]
SPACE = {"image_size": [64, 72, 80, 96, 100], "patch": [8, 16, 32]}
RULE = "$.rules[0]"


def main():
    tmp = tempfile.mkdtemp(prefix="dnnsat-rules.")
    space_file = os.path.join(tmp, "space.json")
    with open(space_file, "w") as f:
        json.dump({k: {"_type": "choice", "_value": v} for k, v in SPACE.items()}, f)
    names = list(SPACE)
    valid, invalid = [], []
    for values in itertools.product(*(SPACE[n] for n in names)):
        cfg = dict(zip(names, values))
        d, err = estimate_json("--template", "vit", *FIXED, *("%s=%s" % kv for kv in cfg.items()))
        check("estimate %s" % cfg, d is not None, err)
        if d is None:
            continue
        costs = d["costs"]
        divisible = cfg["image_size"] % cfg["patch"] == 0
        check("estimate %s valid" % cfg, costs["valid"] == divisible, "valid %s" % costs["valid"])
        if costs["valid"]:
            check("estimate %s fits" % cfg, d["feasible"], "not feasible")
            valid.append(cfg)
        else:
            rules = [v for v in costs["violations"] if v["path"] == RULE]
            check("estimate %s names the rule" % cfg, len(rules) == 1 and
                  "VisionTransformer" in rules[0]["constraint"] and rules[0]["values"] == cfg,
                  json.dumps(costs["violations"]))
            invalid.append(cfg)
    check("the space has invalid configurations", len(invalid) == 6 and len(valid) == 9,
          "%d valid, %d invalid" % (len(valid), len(invalid)))

    rc, out, err = run("count", "--template", "vit", "--space", space_file, *FIXED, "--json")
    got = json.loads(out)["feasible"] if rc in (0, 1) and out.strip() else None
    check("count leaves out the invalid ones", got == str(len(valid)),
          "count %s, valid by estimate %d %s" % (got, len(valid), err))
    rc, out, err = run("list", "--template", "vit", "--space", space_file, *FIXED)
    listed = [json.loads(line) for line in out.splitlines() if line.strip()]
    check("list gives the valid ones", rc == 0 and sorted(map(json.dumps, listed)) ==
          sorted(map(json.dumps, valid)), "%s %s" % (out, err))

    for cfg in invalid[:2]:
        rc, out, err = run("explain", "--template", "vit", "--space", space_file, *FIXED, "--config",
                           json.dumps(cfg))
        check("explain %s names the rule" % cfg, rc == 1 and RULE + ": image_size a multiple of patch" in out,
              out + err)
    os.remove(space_file)
    os.rmdir(tmp)
    return report()


if __name__ == "__main__":
    raise SystemExit(main())
