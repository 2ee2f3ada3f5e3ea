#!/usr/bin/python3
"""tests/schema/test_schemas.py - the JSON Schemas in schemas/ against the data
they describe: every template and example model validates against
model.schema.json, the device catalog against devices.schema.json, and the
schemas reject malformed models and devices. Uses Debian's python3-jsonschema
(Draft 2020-12). Prints "N passed, N failed"; exit status 1 on any failure.
"""
import glob
import json
import os
import sys

import jsonschema

top = os.environ.get("top_srcdir", ".")
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL %s %s" % (name, detail))


def load(rel):
    with open(os.path.join(top, rel)) as f:
        return json.load(f)


model_schema = load("schemas/model.schema.json")
devices_schema = load("schemas/devices.schema.json")
jsonschema.Draft202012Validator.check_schema(model_schema)
jsonschema.Draft202012Validator.check_schema(devices_schema)
model_v = jsonschema.Draft202012Validator(model_schema)
devices_v = jsonschema.Draft202012Validator(devices_schema)

models = sorted(glob.glob(os.path.join(top, "schemas/templates/*.json")) +
                glob.glob(os.path.join(top, "examples/models/*.json")))
check("found models", len(models) >= 12, str(len(models)))
for path in models:
    with open(path) as f:
        errs = list(model_v.iter_errors(json.load(f)))
    check(os.path.basename(path), not errs, "; ".join(e.message[:200] for e in errs[:3]))

errs = list(devices_v.iter_errors(load("schemas/devices.json")))
check("devices.json", not errs, "; ".join(e.message[:200] for e in errs[:3]))

# structurally malformed inputs the schema alone must reject
base = {"dnnsat_model": 1, "inputs": [{"shape": [2, 3]}], "layers": []}
bad_models = {
    "unknown op": dict(base, layers=[{"op": "conv3d"}]),
    "unknown attribute": dict(base, layers=[{"op": "conv2d", "out_channels": 4, "kernel_size": 3}]),
    "bool as string": dict(base, layers=[{"op": "linear", "out_features": 4, "bias": "yes"}]),
    "two kinds": dict(base, layers=[{"op": "relu", "repeat": 2, "body": []}]),
    "unknown top field": dict(base, extra=1),
    "bad version": dict(base, dnnsat_model=2),
}
for name, m in bad_models.items():
    check("rejects " + name, not model_v.is_valid(m))
bad_device = {"dnnsat_devices": 1, "devices": [{"name": "x", "memory_bytes": -1,
              "memory_bandwidth_bytes_per_s": 1e12, "sm_count": 10, "peak_flops": {"fp32": 1e13}}]}
check("rejects negative memory", not devices_v.is_valid(bad_device))

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
