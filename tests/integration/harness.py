"""tests/integration/harness.py - what the integration tests of examples/
(test_client.py, test_optuna.py, test_nni_tuner.py) share: the REAL daemon
($top_builddir/dnnsatd) started on a free loopback port, the paths of the
example modules, the ResNet query whose budget leaves most configurations
out, and the pass/fail tally that ends in "N passed, M failed".
"""
import json
import os
import signal
import subprocess
import sys
import time
import traceback

TOP_SRCDIR = os.path.abspath(os.environ.get("top_srcdir", "."))
TOP_BUILDDIR = os.path.abspath(os.environ.get("top_builddir", "."))
DNNSATD = os.path.join(TOP_BUILDDIR, "dnnsatd")
EXAMPLES = os.path.join(TOP_SRCDIR, "examples")
for sub in ("python", "optuna", "nni"):
    sys.path.insert(0, os.path.join(EXAMPLES, sub))

# ResNet-50 (examples/spaces/resnet.json: 9240 configurations) training with
# Adam in fp32 on an A100 40 GB under a 3.5 GiB memory budget: 1368 fit (15%;
# 3 GiB held 1324 until the A100's CUDA context became 1790 MiB, 851 now).
RESNET_BUDGET = "3.5GiB"


def resnet_query(budget=RESNET_BUDGET, space=None):
    """The query the tests reduce: examples/spaces/resnet.json by default."""
    if space is None:
        with open(os.path.join(EXAMPLES, "spaces", "resnet.json")) as f:
            space = json.load(f)
    return {"model": "resnet50", "space": space, "device": "a100-40gb",
            "workload": {"mode": "training", "optimizer": "adam", "dtype": "fp32", "tf32": False},
            "budgets": {"memory": budget}}


class Daemon:
    """dnnsatd on 127.0.0.1, a port of its choosing; stop() ends it."""

    def __init__(self, *args):
        if not os.access(DNNSATD, os.X_OK):
            raise RuntimeError("%s is missing: build it first (make dnnsatd)" % DNNSATD)
        env = dict(os.environ, DNNSAT_DATA_DIR=os.environ.get("DNNSAT_DATA_DIR",
                                                              os.path.join(TOP_SRCDIR, "schemas")))
        self.proc = subprocess.Popen([DNNSATD, "--listen", "127.0.0.1:0", "--access-log", "off"] + list(args),
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
        deadline = time.monotonic() + 20
        self.url = None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            if line.startswith("dnnsatd: listening on "):
                self.url = line.split()[3].rstrip("/")
                break
        if self.url is None:
            self.stop()
            raise RuntimeError("dnnsatd did not say where it listens")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Tally:
    """Counts checks; each failure prints one line. finish() prints the
    summary and exits 1 on any failure."""

    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failed = 0

    def check(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL: %s: %s" % (self.name, what), flush=True)
        return cond

    def run(self, fn, *args):
        """Runs one test function and returns what it returns; an exception
        is one failure (and None)."""
        t = time.monotonic()
        out = None
        try:
            out = fn(*args)
        except Exception:
            self.failed += 1
            print("FAIL: %s: %s raised:\n%s" % (self.name, fn.__name__, traceback.format_exc()), flush=True)
        print("  %s: %.1f s" % (fn.__name__, time.monotonic() - t), flush=True)
        return out

    def finish(self):
        print("%d passed, %d failed" % (self.passed, self.failed), flush=True)
        sys.exit(1 if self.failed else 0)
