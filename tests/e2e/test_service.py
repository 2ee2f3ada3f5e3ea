#!/usr/bin/python3
"""tests/e2e/test_service.py - the end-to-end test of dnnsatd: starts the REAL
daemon ($top_builddir/dnnsatd) on free loopback ports and talks HTTP to it.

  1. an in-memory server: every endpoint with real answers (a cursor walk
     returns exactly `feasible` distinct configurations, the JSON-lines stream
     the same set, samples are feasible per /check, explain names the
     constraint that removed a value, max and min agree with the walk), every
     error status with its problem+json body, 202 with an estimate, approximate
     samples and 503 on a huge space, 16
     concurrent clients, metrics that count exactly what the clients saw,
     clean shutdown with a slow request in flight, and an access log with
     method, path and status but never a body;
  2. a server with bearer tokens, one solver worker and no queue: 401, 413
     (--max-body, --max-space), 429 with Retry-After, 503;
  3. PostgreSQL ($DNNSAT_TEST_DATABASE_URL, a throwaway server in
     $DNNSAT_TEST_PG_DIR that tests/e2e/test_service.sh starts): the cache
     across a restart and across two processes, a count's progress restored
     from the database after a restart and by another process, the database
     stopping and starting again under a running server (tests/pg/pg_tmp.sh
     stop-server / start-server);
  4. uploaded models (phase_models): the ONNX fixtures of tests/data/onnx and
     JSON models, in memory and with PostgreSQL.

Python 3 standard library only; run it with /usr/bin/python3. Prints one line
per failed check and a final line "N passed, M failed"; exit status 1 on any
failure. DNNSAT_E2E_VERBOSE=1 prints each phase and its time;
DNNSAT_E2E_PHASES="models" runs only the phases named (memory, concurrency,
metrics+shutdown, limits, pipeline, z3, models, postgres).
"""
import http.client
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse

TOP_SRCDIR = os.environ.get("top_srcdir", ".")
sys.path.insert(0, os.path.join(TOP_SRCDIR, "tests"))
from first_line import first_line  # noqa: E402  (the daemon's "listening on" line)
TOP_BUILDDIR = os.environ.get("top_builddir", ".")
DNNSATD = os.path.join(TOP_BUILDDIR, "dnnsatd")
PG_TMP = os.path.join(TOP_SRCDIR, "tests", "pg", "pg_tmp.sh")
DB_URL = os.environ.get("DNNSAT_TEST_DATABASE_URL", "")
PG_DIR = os.environ.get("DNNSAT_TEST_PG_DIR", "")
VERBOSE = os.environ.get("DNNSAT_E2E_VERBOSE", "") not in ("", "0")
# DNNSAT_E2E_PHASES="models postgres": only those phases (while developing)
ONLY = set(os.environ.get("DNNSAT_E2E_PHASES", "").split())
HTTP_TIMEOUT = 30           # seconds: a request that takes longer is a hang
START_TIMEOUT = 20          # seconds for the daemon to print where it listens
STOP_TIMEOUT = 12           # seconds a SIGTERM'd daemon may take to exit: well under the
                            # 20 s deadline of the reductions it stops (exiting before their
                            # deadline is what is checked; no speed of the machine is)
MARKER = "e2e-body-marker-7f3c9a1d5b"   # must never reach a log

passed = 0
failed = 0
_lock = threading.Lock()
WORK = tempfile.mkdtemp(prefix="dnnsat-e2e.")
DAEMONS = []


def check(name, ok, detail=""):
    """Counts one check; prints it when it fails."""
    global passed, failed
    with _lock:
        if ok:
            passed += 1
        else:
            failed += 1
            d = str(detail).replace("\n", " ")
            print("FAIL %s%s" % (name, (": " + d[:600]) if d else ""), flush=True)
    return bool(ok)


def eq(name, got, want):
    return check(name, got == want, "got %r, want %r" % (_short(got), _short(want)))


def note(msg):
    print("NOTE %s" % msg, flush=True)


def _short(x):
    s = repr(x)
    return s if len(s) <= 300 else s[:300] + "..."


def log(msg):
    if VERBOSE:
        print("# %s" % msg, flush=True)


def load(rel):
    with open(os.path.join(TOP_SRCDIR, rel)) as f:
        return json.load(f)


# ---------------------------------------------------------------- routes --
# The route table of server/srv_route.c (method, pattern, metrics label),
# read from the source so that it cannot drift; used to tally what the
# clients saw per route and status and compare with /metrics.
def _routes():
    with open(os.path.join(TOP_SRCDIR, "server", "srv_route.c")) as f:
        text = f.read()
    found = re.findall(r'\{\s*"([A-Z]+)",\s*"([^"]+)",\s*\w+,\s*[^,]+,\s*"([a-z_]+)"\s*(?:,\s*"[a-z_ ]*"\s*)?\}', text)
    assert len(found) >= 20, "cannot read the route table of server/srv_route.c"
    return found


ROUTES = _routes()


def _match(pattern, path):
    if pattern.endswith("/*"):
        head = pattern[:-1]
        return path.startswith(head) and len(path) > len(head)
    ps, xs = pattern.split("/"), path.split("/")
    if len(ps) != len(xs):
        return False
    return all((p == "{}" and x != "") or p == x for p, x in zip(ps, xs))


def route_label(method, path):
    path = path.split("?", 1)[0]
    other = False
    for m, pat, name in ROUTES:
        if _match(pat, path):
            if m == method or (method == "HEAD" and m == "GET"):
                return name
            other = True
    return "unmatched"


# ------------------------------------------------------------------ HTTP --
class Resp:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers          # lower-case name -> value
        self.body = body
        self.json = None
        try:
            self.json = json.loads(body.decode("utf-8")) if body else None
        except ValueError:
            pass

    def h(self, name):
        return self.headers.get(name.lower())

    def __repr__(self):
        return "<%d %s>" % (self.status, self.body[:300])


def daemon_path():
    """$top_builddir/dnnsatd, run through a symlink in the work directory:
    the process is then not named "dnnsatd", so that whatever else on a
    shared machine stops dnnsatd processes by name (pkill dnnsatd) leaves
    the suite's own alone. The binary is the same file."""
    link = os.path.join(WORK, "bin", "e2e-server")
    if not os.path.exists(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(os.path.abspath(DNNSATD), link)
    return link


class Daemon:
    """One dnnsatd process on 127.0.0.1 and a port it picked itself."""

    def __init__(self, name, args=(), env=None, token=None):
        self.name = name
        self.args = list(args)
        self.env_extra = dict(env or {})
        self.token = token
        self.proc = None
        self.port = None
        self.errpath = os.path.join(WORK, name + ".stderr")
        self.tally = {}                 # (route, code) -> requests answered
        self.hits = 0
        self.misses = 0
        self.tlock = threading.Lock()

    def start(self):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("DNNSAT_") or k in ("DNNSAT_DATA_DIR", "DNNSAT_WEB_DIR")}
        if "DNNSAT_DATA_DIR" not in env and os.path.isdir(os.path.join(TOP_SRCDIR, "schemas")):
            env["DNNSAT_DATA_DIR"] = os.path.abspath(os.path.join(TOP_SRCDIR, "schemas"))
        env.update(self.env_extra)
        err = open(self.errpath, "ab")
        self.proc = subprocess.Popen([daemon_path(), "--listen", "127.0.0.1:0"] + self.args,
                                     stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                                     env=env)
        err.close()
        DAEMONS.append(self)
        line = first_line(self.proc, START_TIMEOUT)
        m = re.search(rb"listening on http://127\.0\.0\.1:(\d+)/", line)
        if not m:
            self.kill()
            raise RuntimeError("%s did not start: stdout %r, stderr %r" %
                               (self.name, line, self.log()[-600:]))
        self.port = int(m.group(1))
        self.tally = {}
        self.hits = self.misses = 0
        return self

    def log(self):
        try:
            with open(self.errpath, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self, sig=signal.SIGTERM, timeout=STOP_TIMEOUT):
        """Signals the daemon; (exit status or None on timeout, seconds)."""
        if self.proc is None or self.proc.poll() is not None:
            return (self.proc.returncode if self.proc else None), 0.0
        t0 = time.time()
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            rc = None
            self.kill()
        return rc, time.time() - t0

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def count(self, method, path, resp):
        with self.tlock:
            key = (route_label(method, path), resp.status)
            self.tally[key] = self.tally.get(key, 0) + 1
            xc = resp.h("X-Cache")
            if xc == "hit":
                self.hits += 1
            elif xc == "miss":
                self.misses += 1

    def request(self, method, path, body=None, ctype="application/json", headers=None,
                auth=True, timeout=HTTP_TIMEOUT, conn=None):
        h = {}
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode("utf-8")
        if body is not None and ctype is not None:
            h["Content-Type"] = ctype
        if auth and self.token:
            h["Authorization"] = "Bearer " + self.token
        h.update(headers or {})
        own = conn is None
        t0 = time.time()
        c = conn or http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            data = r.read()
            resp = Resp(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
        finally:
            if own:
                c.close()
        self.count(method, path, resp)
        took = time.time() - t0
        if VERBOSE and took > 0.3:
            log("slow: %s %s %s -> %d in %.2f s" % (self.name, method, path[:90], resp.status, took))
        return resp

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def retry429(self, method, path, body=None, tries=20):
        """A request retried while it is 429 (set-up steps on a one-worker,
        no-queue server, where a 429 is not what is being tested)."""
        for _ in range(tries):
            r = self.request(method, path, body)
            if r.status != 429:
                return r
            time.sleep(0.05)
        return r

    def post(self, path, body, **kw):
        return self.request("POST", path, body, **kw)

    def raw(self, data, read_timeout=10):
        """Sends raw bytes, returns (status, headers, body) of the reply."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=read_timeout)
        try:
            try:
                s.sendall(data)
            except OSError:
                pass            # the server may answer and close before reading it all
            buf = b""
            while True:
                try:
                    chunk = s.recv(65536)
                except OSError:
                    break
                if not chunk:
                    break
                buf += chunk
                head, sep, rest = buf.partition(b"\r\n\r\n")
                if sep:
                    m = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
                    if m and len(rest) >= int(m.group(1)):
                        break
        finally:
            s.close()
        head, _, rest = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        m = re.match(r"HTTP/1\.[01] (\d{3})", lines[0] if lines else "")
        status = int(m.group(1)) if m else 0
        hdrs = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        return Resp(status, hdrs, rest)


def problem(name, resp, status, instance=None, path=None):
    """Checks an RFC 9457 problem reply (status, media type, members)."""
    ok = check(name + ": status", resp.status == status, "got %r, want %d" % (resp, status))
    ct = resp.h("Content-Type") or ""
    ok &= check(name + ": application/problem+json", ct.startswith("application/problem+json"), ct)
    j = resp.json if isinstance(resp.json, dict) else {}
    members = all(isinstance(j.get(k), str) and j.get(k) for k in ("type", "title", "detail")) \
        and j.get("status") == resp.status and isinstance(j.get("instance"), str) \
        and j["type"].startswith("https://dnnsat.dev/problems/")
    ok &= check(name + ": type, title, status, detail, instance", members, _short(j))
    if instance is not None:
        ok &= eq(name + ": instance", j.get("instance"), instance)
    if path is not None:
        ok &= eq(name + ": path", j.get("path"), path)
    return ok


def parse_metrics(text):
    """[(name, {labels}, value)] of a Prometheus text exposition."""
    out = []
    for ln in text.splitlines():
        if not ln or ln.startswith("#"):
            continue
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)$", ln)
        if not m:
            out.append(("<unparsable>", {"line": ln}, float("nan")))
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        out.append((m.group(1), labels, float(m.group(4))))
    return out


def metric(samples, name, **labels):
    """The sum of the samples of `name` whose labels include `labels`, or None."""
    vals = [v for n, l, v in samples if n == name and all(l.get(k) == x for k, x in labels.items())]
    return sum(vals) if vals else None


def get_metrics(d):
    r = d.get("/metrics")
    return r, parse_metrics(r.body.decode("utf-8", "replace"))


# ---------------------------------------------------------------- spaces --
def discrete_values(p):
    t, v = p["_type"], p["_value"]
    if t == "choice":
        return list(v)
    if t == "randint":
        return list(range(int(v[0]), int(v[1])))
    if t == "quniform":
        lo, hi, q = v
        n = int((hi - lo) // q) + 1
        vals = [lo + k * q for k in range(n)]
        return [int(x) if float(x).is_integer() else x for x in vals]
    return None                 # continuous: not counted


def grid_size(space):
    n = 1
    for p in space.values():
        vals = discrete_values(p)
        if vals is not None:
            n *= len(vals)
    return n


def discrete_names(space):
    return sorted(k for k, p in space.items() if discrete_values(p) is not None)


def key(cfg):
    return json.dumps(cfg, sort_keys=True)


def dkey(cfg, space):
    """The key of a configuration's discrete part (samples draw the
    continuous parameters that pass through; pages use one fixed value)."""
    return key({k: v for k, v in cfg.items() if discrete_values(space[k]) is not None})


def typical(p):
    """The value pages give a continuous parameter that passes through
    (docs/api.md): the range's middle, the geometric one for loguniform."""
    t, v = p["_type"], p["_value"]
    return {"uniform": lambda: (v[0] + v[1]) / 2, "loguniform": lambda: math.sqrt(v[0]) * math.sqrt(v[1]),
            "normal": lambda: v[0], "lognormal": lambda: math.exp(v[0])}[t]()


def complete(items, space):
    """Every item is a complete NNI parameter set: every (top-level)
    parameter present, a continuous one within its range."""
    for c in items:
        if sorted(c) != sorted(space):
            return False
        for k, p in space.items():
            if p["_type"] in ("uniform", "loguniform") and not p["_value"][0] <= c[k] <= p["_value"][1]:
                return False
    return True


def near(a, b):
    return isinstance(a, float) and abs(a - b) <= 1e-12 * abs(b)


SPACE_RESNET = load("examples/spaces/resnet.json")
SPACE_T24 = load("examples/spaces/transformer24.json")
MODEL_T24 = load("examples/models/transformer24.json")
MLP_QUERY = load("examples/api/mlp-query.json")
CHECK_EXAMPLE = load("examples/api/check.json")
ESTIMATE_EXAMPLE = load("examples/api/estimate.json")
WORKLOAD = {"mode": "training", "optimizer": "adam", "dtype": "fp32", "tf32": False}
HEX32 = re.compile(r"^[0-9a-f]{32}$")
HEX64 = re.compile(r"^[0-9a-f]{64}$")  # model ids: SHA-256


def check_extreme(d, rid, goal, param, per, items, space):
    """GET /max or /min (goal) of param, per value of per (or None), against
    the feasible configurations items: each row holds the largest or smallest
    value among the items with that value of per, null where none has it, one
    row per value of per's grid."""
    r = d.get("/v1/reductions/%s/%s?param=%s%s" % (rid, goal, param, "&per=" + per if per else ""))
    what = "%s %s per %s" % (goal, param, per)
    eq(what + ": 200", r.status, 200)
    j = r.json or {}
    eq(what + ": param and per echoed", (j.get("param"), j.get("per")), (param, per))
    best = max if goal == "max" else min
    want = {}
    for c in items:
        k = c[per] if per else None
        want[k] = best(want.get(k, c[param]), c[param])
    rows = j.get("rows") or []
    got = {x.get(per) if per else None: x.get(param) for x in rows}
    eq(what + ": rows agree with the configurations", {k: v for k, v in got.items() if v is not None}, want)
    check(what + ": null only where nothing fits", all((v is None) == (k not in want) for k, v in got.items()),
          _short(rows))
    eq(what + ": one row per value of per", sorted(json.dumps(x.get(per)) for x in rows),
       sorted(json.dumps(v) for v in discrete_values(space[per])) if per else ["null"])


def resnet_query(memory, **extra):
    q = {"model": "resnet50", "space": SPACE_RESNET, "device": "a100-40gb",
         "workload": WORKLOAD, "budgets": {"memory": memory}}
    q.update(extra)
    return q


def t24_query(timeout):
    return {"model": MODEL_T24, "space": SPACE_T24, "device": "a100-40gb",
            "budgets": {"memory": "40GiB"}, "timeout": timeout}


def mlp_query(limit=None):
    q = json.loads(json.dumps(MLP_QUERY))
    if limit is not None:
        q["constraints"] = ["hidden * depth <= %d" % limit]
    return q


def check_reduction(name, resp, status, query_space=None, cached=None):
    """The common shape of a reduction reply; returns its JSON or {}."""
    ok = check(name + ": status", resp.status == status, "got %r, want %d" % (resp, status))
    j = resp.json if isinstance(resp.json, dict) else {}
    if not ok:
        return j
    ok = check(name + ": id is 32 hex", isinstance(j.get("id"), str) and HEX32.match(j["id"]), j.get("id"))
    for f in ("total", "feasible_lower", "feasible_upper"):
        check(name + ": %s is a decimal string" % f,
              isinstance(j.get(f), str) and j[f].isdigit(), _short(j.get(f)))
    check(name + ": seconds is a number >= 0",
          isinstance(j.get("seconds"), (int, float)) and j["seconds"] >= 0, j.get("seconds"))
    check(name + ": model_version", isinstance(j.get("model_version"), str) and j["model_version"],
          j.get("model_version"))
    if cached is not None:
        eq(name + ": cached", j.get("cached"), cached)
        eq(name + ": X-Cache", resp.h("X-Cache"), "hit" if cached else "miss")
    try:
        lo, up, tot = int(j["feasible_lower"]), int(j["feasible_upper"]), int(j["total"])
    except (KeyError, ValueError):
        return j
    check(name + ": 0 <= lower <= upper <= total", 0 <= lo <= up <= tot, (lo, up, tot))
    if query_space is not None:
        eq(name + ": total is the grid size", tot, grid_size(query_space))
    if status in (200, 201):
        eq(name + ": status exact", j.get("status"), "exact")
        eq(name + ": exact", j.get("exact"), True)
        check(name + ": feasible == lower == upper",
              j.get("feasible") == j.get("feasible_lower") == j.get("feasible_upper"), _short(j))
        if tot:
            check(name + ": ratio == feasible/total",
                  isinstance(j.get("ratio"), (int, float)) and abs(j["ratio"] - lo / tot) < 1e-9,
                  (j.get("ratio"), lo, tot))
        check(name + ": reduced_space", (lo == 0 and j.get("reduced_space") is None) or
              isinstance(j.get("reduced_space"), dict), _short(j.get("reduced_space")))
    elif status == 202:
        eq(name + ": status running", j.get("status"), "running")
        eq(name + ": exact false", j.get("exact"), False)
        check(name + ": no feasible while running", "feasible" not in j, _short(j))
        check(name + ": lower < upper while running", lo < up, (lo, up))
    return j


def walk_pages(d, rid, limit):
    """Every page of a cursor walk: [(cursor in, items, next_cursor)]."""
    pages, cursor = [], None
    for _ in range(10000):
        path = "/v1/reductions/%s/configurations?limit=%d" % (rid, limit)
        if cursor is not None:
            path += "&cursor=" + urllib.parse.quote(cursor, safe="")
        r = d.get(path)
        if r.status != 200 or not isinstance(r.json, dict):
            raise RuntimeError("page %s: %r" % (path, r))
        pages.append((cursor, r.json.get("items"), r.json.get("next_cursor")))
        cursor = r.json.get("next_cursor")
        if cursor is None:
            break
    return pages


def jsonl(d, rid, **kw):
    r = d.get("/v1/reductions/%s/configurations?format=jsonl" % rid, **kw)
    lines = [ln for ln in r.body.decode("utf-8", "replace").split("\n") if ln.strip()]
    items = []
    for ln in lines:
        try:
            items.append(json.loads(ln))
        except ValueError:
            items.append({"<bad line>": ln})
    return r, items


SPACE_NESTED = {
    "batch_size": {"_type": "choice", "_value": [8, 16]},
    "attention": {"_type": "choice", "_value": [
        {"_name": "few_heads", "n_head": {"_type": "choice", "_value": [4, 8]}},
        {"_name": "many_heads", "n_head": {"_type": "choice", "_value": [12, 16, 20]}}]}}
FEW, MANY = "attention/few_heads/n_head", "attention/many_heads/n_head"


def phase_memory_nested(d):
    """Two options whose children share the key n_head: each is one parameter
    with its own address ("attention/many_heads/n_head") in max, min, explain
    and the heat map, answers echo the address; the short form
    "attention/n_head" is ambiguous (422 naming both)."""
    q = {"model": "gpt2", "space": SPACE_NESTED, "device": "a100-40gb", "budgets": {"memory": "40GiB"}}
    r = d.post("/v1/reductions", q)
    j = check_reduction("reduction nested", r, 201, cached=False)
    eq("reduction nested: total counts each option's own grid", j.get("total"), "10")
    rid = j.get("id", "0" * 32)
    _, items = jsonl(d, rid)
    heads = {opt: sorted({c["attention"]["n_head"] for c in items if c["attention"]["_name"] == opt})
             for opt in ("few_heads", "many_heads")}
    check("nested: some many_heads configuration fits, not every value", 0 < len(heads["many_heads"]) < 3,
          _short(heads))
    base = "/v1/reductions/%s/" % rid

    def get(what, **args):
        return d.get(base + what + "?" + urllib.parse.urlencode(args))

    for name, opt in ((FEW, "few_heads"), (MANY, "many_heads")):
        r = get("max", param=name)
        eq("nested max %s" % name, (r.status, r.json), (200, {"param": name, "per": None, "rows": [{name: heads[opt][-1]}]}))
        r = get("min", param="batch_size", per=name)
        j = r.json or {}
        eq("nested min batch_size per %s: param and per by address" % name, (j.get("param"), j.get("per")),
           ("batch_size", name))
        eq("nested min batch_size per %s: rows keyed by address" % name,
           sorted(sorted(row) for row in j.get("rows", [])), [sorted(["batch_size", name])] * (2 if opt == "few_heads" else 3))
    for what, args, path in (("max", {"param": "attention/n_head"}, "param"),
                             ("min", {"param": "batch_size", "per": "attention/n_head"}, "per"),
                             ("explain", {"param": "attention/n_head", "value": "20"}, "param"),
                             ("heatmap", {"x": "attention/n_head", "y": "batch_size"}, "x")):
        r = get(what, **args)
        if problem("nested %s by the ambiguous short form" % what, r, 422, path=path):
            check("nested %s: the detail lists both addresses" % what, "attention/n_head is ambiguous: %s or %s"
                  % (FEW, MANY) in (r.json or {}).get("detail", ""), (r.json or {}).get("detail"))
    for v in (12, 16, 20):
        r = get("explain", param=MANY, value=str(v))
        j = r.json or {}
        eq("nested explain %s = %d" % (MANY, v), (r.status, j.get("param"), j.get("kept")),
           (200, MANY, v in heads["many_heads"]))
    r = get("heatmap", x=MANY, y="batch_size")
    j = r.json or {}
    eq("nested heat map: x and y by address", (r.status, j.get("x"), j.get("y")), (200, MANY, "batch_size"))
    want = [[any(c["batch_size"] == b and c["attention"]["_name"] == "many_heads" and c["attention"]["n_head"] == h
                 for c in items) for h in (12, 16, 20)] for b in (8, 16)]
    eq("nested heat map: a cell is true where a configuration has both values", j.get("feasible"), want)


# ======================================================= phase 1: memory ==
def phase_memory(st):
    alog = os.path.join(WORK, "mem.access.log")
    st["alog"] = alog
    d = Daemon("mem", ["--access-log", alog, "--workers", "2"]).start()
    st["mem"] = d

    # ---- health, catalog, contract
    r = d.get("/healthz")
    eq("healthz: 200", r.status, 200)
    eq("healthz: body", r.json, {"status": "ok"})
    check("healthz: application/json", (r.h("Content-Type") or "").startswith("application/json"),
          r.h("Content-Type"))
    r = d.get("/readyz")
    eq("readyz (memory): 200", r.status, 200)
    eq("readyz (memory): status", (r.json or {}).get("status"), "ready")
    eq("readyz (memory): database", (r.json or {}).get("database"), "memory")

    r = d.get("/openapi.json")
    if r.status == 308:
        eq("openapi: 308 Location", r.h("Location"), "/schemas/openapi.json")
        r = d.get("/schemas/openapi.json")
    if r.status == 404:
        note("GET /openapi.json is 404: the contract has not landed")
    else:
        eq("openapi: 200", r.status, 200)
        check("openapi: an OpenAPI 3.1 document",
              isinstance(r.json, dict) and str(r.json.get("openapi", "")).startswith("3.1")
              and isinstance(r.json.get("paths"), dict), _short(r.body[:200]))
    for f in ("api/query.schema.json", "model.schema.json", "devices.schema.json"):
        r = d.get("/schemas/" + f)
        eq("schemas/%s: 200" % f, r.status, 200)
        check("schemas/%s: a JSON Schema" % f, isinstance(r.json, dict) and "$schema" in r.json,
              _short(r.body[:200]))
        check("schemas/%s: JSON media type" % f, "json" in (r.h("Content-Type") or ""), r.h("Content-Type"))
    problem("schemas/nope.json", d.get("/schemas/nope.json"), 404, "/schemas/nope.json")
    problem("schemas path traversal", d.get("/schemas/../Makefile.am"), 404)
    problem("schemas path traversal (json)", d.get("/schemas/api/../../schemas/devices.json"), 404)

    r = d.get("/")
    if r.status == 404:
        note("GET / (the dashboard of docs/api.md) is 404: not implemented yet")
    else:
        eq("dashboard: 200", r.status, 200)

    r = d.get("/v1/templates")
    eq("templates: 200", r.status, 200)
    tl = (r.json or {}).get("templates") or []
    names = [t.get("name") for t in tl]
    check("templates: resnet and mlp listed", "resnet" in names and "mlp" in names, names)
    shapes = all(isinstance(t.get("description"), str) and isinstance(t.get("hyperparameters"), list)
                 and all(isinstance(h, dict) and h.get("name") and h.get("type") for h in t["hyperparameters"])
                 and isinstance(t.get("presets"), list)
                 and all(isinstance(p, dict) and p.get("name") and isinstance(p.get("hyperparameters"), dict)
                         for p in t["presets"]) for t in tl)
    check("templates: {name, description, hyperparameters:[{name,type}], presets:[{name,hyperparameters}]}",
          shapes and tl, _short(tl[:1]))
    resnet = next((t for t in tl if t.get("name") == "resnet"), {})
    check("templates: resnet has preset resnet50",
          any(p.get("name") == "resnet50" for p in resnet.get("presets") or []), _short(resnet.get("presets")))
    hp = [h.get("name") for h in resnet.get("hyperparameters") or []]
    check("templates: resnet hyperparameters", {"batch_size", "resolution", "block", "width"} <= set(hp), hp)
    r = d.get("/v1/templates/resnet")
    eq("template resnet: 200", r.status, 200)
    eq("template resnet: name", (r.json or {}).get("name"), "resnet")
    eq("template resnet: same as in the list", r.json, resnet)
    r = d.get("/v1/templates/resnet50")
    eq("template preset resnet50: 200", r.status, 200)
    eq("template preset resnet50: template name", (r.json or {}).get("name"), "resnet")
    eq("template preset resnet50: preset", (r.json or {}).get("preset"), "resnet50")
    problem("template unknown", d.get("/v1/templates/no-such-template"), 404, "/v1/templates/no-such-template")
    r = d.request("HEAD", "/v1/templates")
    eq("HEAD templates: 200", r.status, 200)
    eq("HEAD templates: no body", r.body, b"")

    r = d.get("/v1/devices")
    eq("devices: 200", r.status, 200)
    devs = (r.json or {}).get("devices") or []
    check("devices: a100-40gb in the catalog",
          any(x.get("name") == "a100-40gb" or "a100-40gb" in (x.get("aliases") or []) for x in devs),
          [x.get("name") for x in devs])
    check("devices: every device has a name and memory_bytes",
          devs and all(x.get("name") and isinstance(x.get("memory_bytes"), int) for x in devs), _short(devs[:1]))

    # ---- estimate
    r = d.post("/v1/estimate", ESTIMATE_EXAMPLE)
    eq("estimate: 200", r.status, 200)
    e = r.json or {}
    costs = e.get("costs") or {}
    check("estimate: feasible is a boolean", isinstance(e.get("feasible"), bool), e.get("feasible"))
    check("estimate: params > 0", isinstance(costs.get("params"), int) and costs["params"] > 0, costs.get("params"))
    mem64 = (costs.get("memory") or {}).get("training_peak_bytes")
    check("estimate: memory.training_peak_bytes > 0", isinstance(mem64, int) and mem64 > 0, mem64)
    check("estimate: memory breakdown", isinstance((costs.get("memory") or {}).get("breakdown"), dict),
          _short(costs.get("memory")))
    eq("estimate: config echoes batch_size", (e.get("config") or {}).get("batch_size"), 64)
    check("estimate: no operators without per_op", "operators" not in costs, list(costs))
    big = json.loads(json.dumps(ESTIMATE_EXAMPLE))
    big["config"]["batch_size"] = 128
    r = d.post("/v1/estimate", big)
    mem128 = (((r.json or {}).get("costs") or {}).get("memory") or {}).get("training_peak_bytes")
    check("estimate: batch 128 needs more memory than batch 64",
          r.status == 200 and isinstance(mem128, int) and isinstance(mem64, int) and mem128 > mem64, (mem64, mem128))
    per = dict(ESTIMATE_EXAMPLE, per_op=True)
    r = d.post("/v1/estimate", per)
    ops = ((r.json or {}).get("costs") or {}).get("operators")
    check("estimate per_op: operators listed", r.status == 200 and isinstance(ops, list) and len(ops) > 10,
          _short(r))
    problem("estimate unknown hyperparameter",
            d.post("/v1/estimate", dict(ESTIMATE_EXAMPLE, config={"no_such_hp": 1})), 422, "/v1/estimate",
            "$.config.no_such_hp")
    problem("estimate unknown device", d.post("/v1/estimate", dict(ESTIMATE_EXAMPLE, device="no-such-gpu")),
            422, "/v1/estimate", "$.device")
    problem("estimate per_op wrong type", d.post("/v1/estimate", dict(ESTIMATE_EXAMPLE, per_op="yes")), 422,
            "/v1/estimate", "$.per_op")

    # ---- reductions: resnet50 at 6GiB
    q6 = resnet_query("6GiB")
    r = d.post("/v1/reductions", q6)
    j6 = check_reduction("reduction 6GiB (new)", r, 201, SPACE_RESNET, cached=False)
    rid6 = j6.get("id", "0" * 32)
    st["rid6"], st["j6"] = rid6, j6
    eq("reduction 6GiB: Location", r.h("Location"), "/v1/reductions/" + rid6)
    check("reduction 6GiB: some but not all configurations feasible",
          0 < int(j6.get("feasible", "0")) < int(j6.get("total", "0")), _short(j6))
    r = d.post("/v1/reductions", q6)
    j = check_reduction("reduction 6GiB (repeat)", r, 200, SPACE_RESNET, cached=True)
    eq("reduction 6GiB (repeat): same id", j.get("id"), rid6)
    eq("reduction 6GiB (repeat): same feasible", j.get("feasible"), j6.get("feasible"))
    eq("reduction 6GiB (repeat): same reduced_space", j.get("reduced_space"), j6.get("reduced_space"))
    r = d.post("/v1/reductions", dict(reversed(list(resnet_query("6GiB", timeout=7).items()))))
    eq("reduction 6GiB (keys reordered, timeout given): same id", (r.json or {}).get("id"), rid6)
    eq("reduction 6GiB (keys reordered, timeout given): 200 from cache", r.status, 200)
    r = d.get("/v1/reductions/" + rid6)
    j = check_reduction("GET reduction 6GiB", r, 200, SPACE_RESNET)
    eq("GET reduction 6GiB: same feasible", j.get("feasible"), j6.get("feasible"))
    eq("GET reduction 6GiB: cached", j.get("cached"), True)

    # ---- a reduction that removes values: resnet50 at 2GiB
    q2 = resnet_query("2GiB")
    r = d.post("/v1/reductions", q2)
    j2 = check_reduction("reduction 2GiB", r, 201, SPACE_RESNET, cached=False)
    rid2 = j2.get("id", "0" * 32)
    st["rid2"], st["j2"] = rid2, j2
    r, items2 = jsonl(d, rid2)
    # (the listing of 2GiB is small; listing 6GiB takes seconds per thousand)
    eq("jsonl 2GiB: 200", r.status, 200)
    check("jsonl 2GiB: application/x-ndjson", (r.h("Content-Type") or "").startswith("application/x-ndjson"),
          r.h("Content-Type"))
    eq("jsonl 2GiB: one line per feasible configuration", len(items2), int(j2.get("feasible", "-1")))
    eq("jsonl 2GiB: no duplicates", len({key(c) for c in items2}), len(items2))
    dn = discrete_names(SPACE_RESNET)
    check("jsonl 2GiB: items are complete NNI parameter sets", complete(items2, SPACE_RESNET), _short(items2[:2]))
    check("jsonl 2GiB: lr (passes through) at its geometric midpoint",
          all(near(c["lr"], typical(SPACE_RESNET["lr"])) for c in items2), _short(items2[:2]))
    check("jsonl 2GiB: values on the grid", all(c[k] in discrete_values(SPACE_RESNET[k]) for c in items2 for k in dn),
          "")
    # max and min, per value of another parameter and overall, agree with the stream
    for goal in ("max", "min"):
        for param, per in (("batch_size", "block"), ("width", None), ("layers3", "width"), ("resolution", None)):
            check_extreme(d, rid2, goal, param, per, items2, SPACE_RESNET)

    rs = j2.get("reduced_space") or {}
    for p in dn:
        vals = sorted({c[p] for c in items2}, key=str)
        got = sorted(discrete_values(rs[p]) if p in rs else [], key=str)
        eq("reduced_space 2GiB: %s keeps exactly the values of feasible configurations" % p, got, vals)
    eq("reduced_space 2GiB: continuous lr unchanged", rs.get("lr"), SPACE_RESNET["lr"])
    removed = [v for v in SPACE_RESNET["batch_size"]["_value"] if v not in {c["batch_size"] for c in items2}]
    check("2GiB removes some batch sizes", removed, removed)
    if removed:
        v = max(removed)
        r = d.get("/v1/reductions/%s/explain?param=batch_size&value=%s" % (rid2, v))
        eq("explain removed value: 200", r.status, 200)
        x = r.json or {}
        eq("explain removed value: param", x.get("param"), "batch_size")
        eq("explain removed value: value", x.get("value"), v)
        eq("explain removed value: kept", x.get("kept"), False)
        bec = x.get("because") or []
        check("explain removed value: names the memory constraint",
              bec and all(isinstance(b.get("constraint"), str) and b["constraint"] for b in bec)
              and any(b.get("path") == "$.budgets.memory" for b in bec), _short(bec))
    kept = min(c["batch_size"] for c in items2) if items2 else 16
    r = d.get("/v1/reductions/%s/explain?param=batch_size&value=%s" % (rid2, kept))
    eq("explain kept value: kept", (r.json or {}).get("kept"), True)
    eq("explain kept value: because empty", (r.json or {}).get("because"), [])
    cfg = dict(items2[0], lr=0.01) if items2 else {}
    r = d.post("/v1/reductions/%s/explain" % rid2, {"config": cfg})
    eq("POST explain feasible config: 200", r.status, 200)
    eq("POST explain feasible config: feasible", (r.json or {}).get("feasible"), True)
    if removed and items2:
        bad = dict(items2[0], batch_size=max(removed), lr=0.01)
        r = d.post("/v1/reductions/%s/explain" % rid2, {"config": bad})
        x = r.json or {}
        eq("POST explain infeasible config: feasible", x.get("feasible"), False)
        check("POST explain infeasible config: memory violated",
              any(v.get("path") == "$.budgets.memory" for v in x.get("violated") or []), _short(x))
        r = d.post("/v1/reductions/%s/check" % rid2, {"config": bad})
        eq("check infeasible config: 200", r.status, 200)
        eq("check infeasible config: feasible", (r.json or {}).get("feasible"), False)
        viol = (r.json or {}).get("violated") or []
        check("check infeasible config: violated names memory with value > limit",
              any(v.get("path") == "$.budgets.memory" and isinstance(v.get("value"), (int, float))
                  and isinstance(v.get("limit"), (int, float)) and v["value"] > v["limit"] for v in viol),
              _short(viol))
    problem("explain value off the grid",
            d.get("/v1/reductions/%s/explain?param=batch_size&value=17" % rid2), 422, path="value")
    problem("explain unknown param", d.get("/v1/reductions/%s/explain?param=nope&value=1" % rid2), 422,
            path="param")
    for goal in ("max", "min"):
        base2 = "/v1/reductions/%s/%s?" % (rid2, goal)
        for what, qs, path, words in (
                ("unknown param", "param=nope", "param", "no parameter"),
                ("param of strings (no order)", "param=block", "param", "no order"),
                ("unknown per", "param=batch_size&per=nope", "per", "no parameter"),
                ("continuous per", "param=batch_size&per=lr", "per", "continuous"),
                ("per = param", "param=width&per=width", "per", "param itself")):
            r = d.get(base2 + qs)
            if problem("%s %s" % (goal, what), r, 422, path=path):
                check("%s %s: the detail says why" % (goal, what), words in (r.json or {}).get("detail", ""),
                      (r.json or {}).get("detail"))

    # a continuous parameter that passes through (lr, loguniform [1e-4, 0.1]): its range's ends
    r = d.get("/v1/reductions/%s/max?param=lr" % rid2)
    eq("max lr (passing through): the range's end", (r.json or {}).get("rows"), [{"lr": 0.1}])
    r = d.get("/v1/reductions/%s/min?param=lr&per=block" % rid2)
    check("min lr per block: 1e-4 or null", r.status == 200 and all(row.get("lr") in (0.0001, None)
          for row in (r.json or {}).get("rows", [None])), _short(r.json))
    r = d.get("/v1/reductions/%s/explain?param=lr&value=0.01" % rid2)
    eq("explain lr = 0.01: kept", (r.json or {}).get("kept"), True)
    problem("explain lr outside its range", d.get("/v1/reductions/%s/explain?param=lr&value=5" % rid2), 422,
            path="value")
    phase_memory_nested(d)

    # ---- a small space: the mlp example, walked with cursors
    qm = mlp_query()
    r = d.post("/v1/reductions", qm)
    jm = check_reduction("reduction mlp", r, 201, qm["space"], cached=False)
    ridm = jm.get("id", "0" * 32)
    fm = int(jm.get("feasible", "-1"))
    st["ridm"], st["fm"] = ridm, fm
    pages = walk_pages(d, ridm, 100)
    walk = [c for _, items, _ in pages for c in items]
    st["pages"], st["walk"] = pages, walk
    eq("cursor walk: exactly `feasible` configurations", len(walk), fm)
    eq("cursor walk: no duplicates", len({key(c) for c in walk}), len(walk))
    eq("cursor walk: pages of 100", [len(p[1]) for p in pages[:-1]], [100] * (len(pages) - 1))
    eq("cursor walk: ends with next_cursor null", pages[-1][2], None)
    dnm = discrete_names(qm["space"])
    check("cursor walk: every item obeys the user constraint hidden * depth <= 16384",
          all(c["hidden"] * c["depth"] <= 16384 for c in walk), "")
    check("cursor walk: items are complete NNI parameter sets", complete(walk, qm["space"]), _short(walk[:1]))
    check("cursor walk: learning_rate at its geometric midpoint",
          all(near(c["learning_rate"], typical(qm["space"]["learning_rate"])) for c in walk), _short(walk[:1]))
    r, itemsm = jsonl(d, ridm)
    eq("jsonl mlp: count == feasible", len(itemsm), fm)
    eq("jsonl mlp: same set as the cursor walk", {key(c) for c in itemsm}, {key(c) for c in walk})
    r = d.get("/v1/reductions/%s/configurations?offset=250&limit=30" % ridm)
    eq("offset 250: 200", r.status, 200)
    eq("offset 250: the walk's items 250..279", (r.json or {}).get("items"), walk[250:280])
    r = d.get("/v1/reductions/%s/configurations?offset=%d&limit=5" % (ridm, fm))
    eq("offset == feasible: empty page", ((r.json or {}).get("items"), (r.json or {}).get("next_cursor")), ([], None))
    r = d.get("/v1/reductions/%s/configurations" % ridm)
    eq("configurations default limit 100", len((r.json or {}).get("items") or []), min(100, fm))
    r = d.get("/v1/reductions/%s/samples?n=8&seed=3" % ridm)
    eq("samples: 200", r.status, 200)
    samples = (r.json or {}).get("items") or []
    eq("samples: n items", len(samples), 8)
    ws = {dkey(c, qm["space"]) for c in walk}
    check("samples: each is a feasible configuration of the walk", all(dkey(c, qm["space"]) in ws for c in samples),
          _short(samples))
    check("samples: complete NNI parameter sets", complete(samples, qm["space"]), _short(samples))
    check("samples: learning_rate drawn from its loguniform (not one value)",
          len({c["learning_rate"] for c in samples}) == len(samples), _short(samples))
    r2 = d.get("/v1/reductions/%s/samples?n=8&seed=3" % ridm)
    eq("samples: same seed, same samples", (r2.json or {}).get("items"), samples)
    r3 = d.get("/v1/reductions/%s/samples?n=8&seed=4" % ridm)
    check("samples: another seed, other samples", (r3.json or {}).get("items") != samples, "")
    for i, c in enumerate(samples[:4] + walk[:2]):
        r = d.post("/v1/reductions/%s/check" % ridm, {"config": c})     # unchanged: a round trip
        eq("sample or item %d feasible per /check" % i, (r.status, (r.json or {}).get("feasible")), (200, True))
    nni_values(d)
    for goal, param, per in (("max", "hidden", "depth"), ("min", "hidden", "depth"),
                             ("min", "batch_size", "activation")):  # a per without order
        check_extreme(d, ridm, goal, param, per, walk, qm["space"])
    # /v1/check: the query plus a configuration
    good = dict(walk[0], learning_rate=0.01) if walk else {}
    r = d.post("/v1/check", dict(qm, config=good))
    eq("check (query + config): 200", r.status, 200)
    eq("check (query + config): the reduction's id", (r.json or {}).get("id"), ridm)
    eq("check (query + config): feasible", (r.json or {}).get("feasible"), True)
    check("check: costs", isinstance((r.json or {}).get("costs"), dict), _short(r))
    eq("check: violated empty", (r.json or {}).get("violated"), [])
    badc = dict(good, hidden=4096, depth=8)
    r = d.post("/v1/check", dict(qm, config=badc))
    eq("check infeasible: feasible", (r.json or {}).get("feasible"), False)
    check("check infeasible: the user constraint is violated",
          any("hidden * depth" in (v.get("constraint") or "") for v in (r.json or {}).get("violated") or []),
          _short((r.json or {}).get("violated")))
    r = d.post("/v1/check", CHECK_EXAMPLE)
    eq("check example: 200", r.status, 200)
    eq("check example: same id as the 6GiB reduction", (r.json or {}).get("id"), rid6)
    problem("check off the grid", d.post("/v1/check", dict(qm, config=dict(good, batch_size=33))), 422,
            "/v1/check", "$.config.batch_size")
    problem("reduction check off the grid",
            d.post("/v1/reductions/%s/check" % ridm, {"config": dict(good, depth=99)}), 422,
            path="$.config.depth")
    problem("check without config", d.post("/v1/check", qm), 422, "/v1/check", "$.config")
    problem("check config wrong type", d.post("/v1/check", dict(qm, config=[1])), 422, "/v1/check", "$.config")

    # ---- the huge space: 202 with bounds and an estimate, approximate samples, 503 when an exact
    # count is needed
    qt = t24_query(0.3)
    r = d.post("/v1/reductions", qt)
    jt = check_reduction("reduction transformer24 (0.3 s)", r, 202, SPACE_T24, cached=False)
    ridt = jt.get("id", "0" * 32)
    st["ridt_mem"] = ridt
    eq("reduction transformer24: Location", r.h("Location"), "/v1/reductions/" + ridt)
    r = d.get("/v1/reductions/%s?timeout=0.3" % ridt)
    jt2 = check_reduction("GET transformer24 (0.3 s more)", r, 202, SPACE_T24)
    try:
        check("GET transformer24: seconds accumulate", jt2["seconds"] >= jt["seconds"] + 0.2,
              (jt["seconds"], jt2["seconds"]))
        check("GET transformer24: bounds only tighten",
              int(jt2["feasible_lower"]) >= int(jt["feasible_lower"]) and
              int(jt2["feasible_upper"]) <= int(jt["feasible_upper"]), _short((jt, jt2)))
    except (KeyError, TypeError, ValueError) as ex:
        check("GET transformer24: bounds and seconds present", False, ex)
    try:
        est = jt2["estimate"]
        check("GET transformer24: estimate within the bounds and its interval",
              int(jt2["feasible_lower"]) <= est["low"] <= est["feasible"] <= est["high"]
              <= int(jt2["feasible_upper"]) * (1 + 1e-12) and est["confidence"] == 0.95 and est["draws"] > 0,
              _short(est))
    except (KeyError, TypeError, ValueError) as ex:
        check("GET transformer24: estimate present", False, ex)
    # samples without the exact count: approximate, each feasible, within the deadline
    r = d.get("/v1/reductions/%s/samples?n=4&seed=2&timeout=2" % ridt)
    js = r.json or {}
    eq("samples of an unfinished count: 200", r.status, 200)
    eq("samples of an unfinished count: approximate", js.get("distribution"), "approximate")
    eq("samples of an unfinished count: complete", js.get("complete"), True)
    eq("samples of an unfinished count: 4 items", len(js.get("items") or []), 4)
    check("samples of an unfinished count: the estimate used",
          isinstance(js.get("estimate"), dict) and js["estimate"].get("draws", 0) > 0, _short(js.get("estimate")))
    for i, c in enumerate((js.get("items") or [])[:4]):
        r = d.post("/v1/reductions/%s/check" % ridt, {"config": c})
        eq("approximate sample %d feasible per /check" % i, (r.status, (r.json or {}).get("feasible")), (200, True))
    # a hundred thousand samples cannot be drawn in 0.4 s: those drawn, complete false
    r = d.get("/v1/reductions/%s/samples?n=100000&seed=2&timeout=0.4" % ridt)
    js = r.json or {}
    eq("samples past the deadline: 200", r.status, 200)
    eq("samples past the deadline: complete false", js.get("complete"), False)
    check("samples past the deadline: fewer items", len(js.get("items") or []) < 100000, len(js.get("items") or []))
    # count_timeout: the share of the deadline the count gets before drawing. The default (half
    # of timeout=2) counts until that second has passed (the count never finishes); 0 counts a
    # token slice and draws at once: compared by the solver seconds each adds to the reduction
    # (a GET of 1 ms that waited longer for a worker on a busy machine is answered 503 without
    # counting, and asked again)
    def solve_seconds():
        for _ in range(100):
            r = d.get("/v1/reductions/%s?timeout=0.001" % ridt)
            if r.status in (200, 202):
                return float((r.json or {}).get("seconds", -1))
            if r.status != 503 or (r.json or {}).get("type", "").split("/")[-1] != "deadline":
                break
            time.sleep(0.1)
        check("samples: the reduction's solver seconds", False, (r.status, _short(r.json)))
        return -1.0
    s0 = solve_seconds()
    r = d.get("/v1/reductions/%s/samples?n=4&seed=2&timeout=2&count_timeout=0" % ridt)
    s1 = solve_seconds()
    eq("samples, count_timeout=0: 4 approximate samples", (r.status, (r.json or {}).get("distribution"),
                                                           len((r.json or {}).get("items") or [])),
       (200, "approximate", 4))
    r = d.get("/v1/reductions/%s/samples?n=4&seed=2&timeout=2" % ridt)
    s2 = solve_seconds()
    eq("samples, default count_timeout: 200", r.status, 200)
    check("samples: count_timeout=0 spends less on the count than the default half of the deadline "
          "(which spends at least 1 s): under half of it", s0 >= 0 and s2 - s1 >= 0.99 and s1 - s0 < (s2 - s1) / 2, (s0, s1, s2))
    for bad in ("-1", "2.5", "abc", "0x1", "nan"):
        problem("samples count_timeout=%s: 400" % bad,
                d.get("/v1/reductions/%s/samples?n=1&timeout=2&count_timeout=%s" % (ridt, bad)), 400, None,
                "count_timeout")
    for what, path in (("jsonl", "/v1/reductions/%s/configurations?format=jsonl&timeout=0.05" % ridt),
                       ("offset", "/v1/reductions/%s/configurations?offset=3&timeout=0.05" % ridt)):
        r = d.get(path)
        problem("%s of an unfinished count: 503" % what, r, 503, path.split("?")[0])
        ra = r.h("Retry-After") or ""
        check("%s of an unfinished count: Retry-After" % what, ra.isdigit() and int(ra) > 0, ra)
    r = d.get("/v1/reductions/%s/configurations?limit=3&timeout=2" % ridt)
    eq("cursor page of an unfinished count: 200", r.status, 200)
    eq("cursor page of an unfinished count: 3 items", len((r.json or {}).get("items") or []), 3)

    # ---- errors
    errors_memory(d, rid6, ridm, qm)


def nni_values(d):
    """NNI's choice values of any JSON type (its tests' [0.3, "cat", 1, null],
    lists, BatchTuner's plain objects) through the service: counted, listed,
    sampled, checked, explained; null, true and false come through a query string
    where the choice lists them and not the same text as a string."""
    space = {"batch_size": {"_type": "choice", "_value": [32, 64]},
             "mixed": {"_type": "choice", "_value": [0.3, "cat", 1, None]},
             "shape": {"_type": "choice", "_value": [[1, 2], [3]]},
             "combine_params": {"_type": "choice", "_value": [{"optimizer": "Adam", "learning_rate": 0.001},
                                                              {"optimizer": "SGD", "learning_rate": 0.01}]},
             "momentum": {"_type": "normal", "_value": [0.9, 0.01]}}
    q = {"model": {"template": "mlp"}, "space": space, "device": "l4", "budgets": {"memory": "90%"}}
    r = d.post("/v1/reductions", q)
    eq("NNI values: 201", r.status, 201)
    j = r.json or {}
    eq("NNI values: every configuration counted", (j.get("total"), j.get("feasible")), ("32", "32"))
    eq("NNI values: the reduced space keeps every value", (j.get("reduced_space") or {}).get("mixed"), space["mixed"])
    rid = j.get("id", "0" * 32)
    r = d.get("/v1/reductions/%s/configurations?limit=32" % rid)
    items = (r.json or {}).get("items") or []
    eq("NNI values: 32 items", len(items), 32)
    eq("NNI values: every value listed", sorted({key(c["mixed"]) for c in items}),
       sorted(key(v) for v in space["mixed"]["_value"]))
    check("NNI values: items complete, momentum at mu", all(sorted(c) == sorted(space) and c["momentum"] == 0.9
                                                            for c in items), _short(items[:1]))
    r = d.get("/v1/reductions/%s/samples?n=6&seed=1" % rid)
    samples = (r.json or {}).get("items") or []
    check("NNI values: samples draw momentum", len({c.get("momentum") for c in samples}) == 6, _short(samples))
    for i, c in enumerate(items[:2] + samples[:2]):
        r = d.post("/v1/reductions/%s/check" % rid, {"config": c})
        eq("NNI values: %d checks back feasible" % i, (r.status, (r.json or {}).get("feasible")), (200, True))
    r = d.get("/v1/reductions/%s/explain?param=mixed&value=null" % rid)
    eq("NNI values: explain mixed = null: kept", (r.status, (r.json or {}).get("kept")), (200, True))
    r = d.get("/v1/reductions/%s/explain?param=combine_params&value=%s"
              % (rid, urllib.parse.quote(json.dumps(space["combine_params"]["_value"][1]))))
    eq("NNI values: explain an object value: kept", (r.status, (r.json or {}).get("kept")), (200, True))
    r = d.get("/v1/reductions/%s/check?batch_size=32&mixed=cat&shape=%%5B3%%5D&momentum=0.9&combine_params=%s"
              % (rid, urllib.parse.quote(json.dumps(space["combine_params"]["_value"][0]))))
    eq("NNI values: GET check of text values", (r.status, (r.json or {}).get("feasible")), (200, True))
    r = d.get("/v1/reductions/%s/check?batch_size=32&mixed=null&shape=%%5B3%%5D&momentum=0.9&combine_params=%s"
              % (rid, urllib.parse.quote(json.dumps(space["combine_params"]["_value"][0]))))
    eq("NNI values: GET check of null (the choice lists null, not the string)",
       (r.status, (r.json or {}).get("feasible")), (200, True))
    # booleans (the settings a space searches: gradient_checkpointing, fp16, load_in_4bit, ...): read
    # as booleans where the choice lists them and not the same text as a string; "True" is text
    space = {"batch_size": {"_type": "choice", "_value": [1, 2]},
             "gradient_checkpointing": {"_type": "choice", "_value": [True, False]},
             "odd": {"_type": "choice", "_value": [True, "true", None]}}
    r = d.post("/v1/reductions", {"model": "gpt2", "device": "l4", "workload": {"mode": "training"},
                                  "space": space, "budgets": {"memory": "90%"}})
    eq("booleans: 201", r.status, 201)
    rid = (r.json or {}).get("id", "0" * 32)
    for qs, want in (("gradient_checkpointing=true&odd=null", True), ("gradient_checkpointing=false&odd=true", True),
                     ("gradient_checkpointing=true&odd=false", None), ("gradient_checkpointing=True&odd=null", None)):
        r = d.get("/v1/reductions/%s/check?batch_size=1&%s" % (rid, qs))
        if want:
            eq("booleans: GET check of %s" % qs, (r.status, (r.json or {}).get("feasible")), (200, True))
        elif problem("booleans: GET check of %s" % qs, r, 422,
                     path="$.config." + ("odd" if "odd=false" in qs else "gradient_checkpointing")):
            check("booleans: GET check of %s says to POST" % qs, "query string" in (r.json or {}).get("detail", ""),
                  (r.json or {}).get("detail"))


def errors_memory(d, rid6, ridm, qm):
    R = "/v1/reductions"
    r = d.post(R, '{"model": "resnet50", ')
    problem("malformed JSON", r, 400, R, "$")
    check("malformed JSON: detail has line and column",
          re.search(r"line \d+, column \d+", (r.json or {}).get("detail", "")), (r.json or {}).get("detail"))
    problem("duplicate keys", d.post(R, '{"model": "resnet50", "model": "mlp"}'), 400, R, "$")
    problem("body is an array", d.post(R, "[1, 2]"), 400, R, "$")
    problem("empty body", d.post(R, b""), 400, R, "$")
    problem("timeout wrong type", d.post(R, resnet_query("6GiB", timeout="soon")), 422, R, "$.timeout")
    problem("timeout <= 0", d.post(R, resnet_query("6GiB", timeout=0)), 422, R, "$.timeout")
    # docs/api.md: 422 for a field that is missing or of the wrong type
    q = resnet_query("6GiB")
    del q["model"]
    problem("missing model", d.post(R, q), 422, R, "$.model")
    problem("model wrong type", d.post(R, resnet_query("6GiB", model=5)), 422, R, "$.model")
    problem("space wrong type", d.post(R, resnet_query("6GiB", space=5)), 422, R, "$.space")
    base = "/v1/reductions/%s" % ridm
    for what, path, param in (
            ("limit not a number", base + "/configurations?limit=abc", "limit"),
            ("limit negative", base + "/configurations?limit=-1", "limit"),
            ("limit too large", base + "/configurations?limit=10001", "limit"),
            ("format unknown", base + "/configurations?format=xml", "format"),
            ("cursor and offset", base + "/configurations?offset=1&cursor=x", "cursor"),
            ("samples n=0", base + "/samples?n=0", "n"),
            ("samples seed negative", base + "/samples?seed=-1", "seed"),
            ("timeout not a number", base + "?timeout=abc", "timeout"),
            ("timeout zero", base + "/samples?timeout=0", "timeout"),
            ("max without param", base + "/max", "param"),
            ("min without param", base + "/min", "param"),
            ("min empty param", base + "/min?param=", "param"),
            ("min empty per", base + "/min?param=hidden&per=", "per"),
            ("explain without param", base + "/explain", "param"),
            # a parameter the endpoint does not take: a typo was dropped unsaid (until 2026-12-05)
            ("unknown parameter", base + "/configurations?limt=5", "limt"),
            ("unknown parameter on samples", base + "/samples?limit=5", "limit")):
        problem("bad query parameter: " + what, d.get(path), 400, path.split("?")[0], param)
    problem("malformed cursor", d.get(base + "/configurations?cursor=not-a-cursor"), 400,
            base + "/configurations", "cursor")
    problem("POST explain config wrong type", d.post(base + "/explain", {"config": 5}), 422, path="$.config")

    problem("unknown path", d.get("/v2/nothing"), 404, "/v2/nothing")
    problem("unknown id", d.get("/v1/reductions/" + "0123456789abcdef" * 2), 404)
    problem("unknown id (not 32 hex)", d.get("/v1/reductions/xyz"), 404)
    problem("unknown id: configurations", d.get("/v1/reductions/%s/configurations" % ("f" * 32)), 404)
    problem("unknown id: samples", d.get("/v1/reductions/%s/samples" % ("e" * 32)), 404)
    problem("unknown id: check", d.post("/v1/reductions/%s/check" % ("d" * 32), {"config": {}}), 404)
    problem("unknown id: max", d.get("/v1/reductions/%s/max?param=x" % ("c" * 32)), 404)
    problem("unknown id: min", d.get("/v1/reductions/%s/min?param=x" % ("c" * 32)), 404)

    for m, path, allow in (("DELETE", R, "POST"), ("PUT", "/v1/templates", "GET"), ("GET", "/v1/check", "POST"),
                           ("POST", "/healthz", "GET"), ("GET", "/v1/estimate", "POST"),
                           ("DELETE", "/v1/reductions/%s/explain" % rid6, "GET, POST"),
                           ("PATCH", "/v1/reductions/%s" % rid6, "GET")):
        r = d.request(m, path, b"{}" if m in ("POST", "PUT", "PATCH") else None)
        problem("405 %s %s" % (m, path), r, 405, path)
        got = sorted(x.strip() for x in (r.h("Allow") or "").split(","))
        eq("405 %s %s: Allow" % (m, path), got, sorted(x.strip() for x in allow.split(",")))

    # 413: a declared length over --max-body, and a chunked body that grows over it
    r = d.raw(b"POST /v1/reductions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: 2000000\r\n\r\n")
    d.count("POST", R, r)
    problem("413 declared Content-Length", r, 413, R)
    body = b'{"pad": "' + b"x" * (1100 * 1024) + b'"}'
    data = b"POST /v1/reductions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" \
           b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    for i in range(0, len(body), 60000):
        c = body[i:i + 60000]
        data += b"%x\r\n" % len(c) + c + b"\r\n"
    data += b"0\r\n\r\n"
    r = d.raw(data)
    d.count("POST", R, r)
    problem("413 chunked body over --max-body", r, 413, R)

    problem("415 text/plain", d.post(R, resnet_query("6GiB"), ctype="text/plain"), 415, R)
    problem("415 no Content-Type", d.post(R, resnet_query("6GiB"), ctype=None), 415, R)
    problem("415 application/jsonx", d.post("/v1/check", {}, ctype="application/jsonx"), 415, "/v1/check")
    r = d.post(R, resnet_query("6GiB"), ctype="application/json; charset=utf-8")
    eq("application/json; charset=utf-8 accepted", r.status, 200)

    for what, q, path in (
            ("unknown preset", resnet_query("6GiB", model="no-such-model"), "$.model"),
            ("unknown template", resnet_query("6GiB", model={"template": "no-such-template"}), "$.model.template"),
            ("unknown device", resnet_query("6GiB", device="no-such-gpu"), "$.device"),
            ("unknown fixed hyperparameter", resnet_query("6GiB", fixed={"no_such_hp": 1}), "$.fixed.no_such_hp"),
            ("bad budget unit", resnet_query("6XB"), "$.budgets.memory"),
            ("invalid expression", resnet_query("6GiB", constraints=["batch_size +* 2"]), "$.constraints[0]")):
        problem("422 " + what, d.post(R, q), 422, R, path)
    phase_trust(d)


def phase_trust(d):
    """Budgets, devices and parameters a user can trust: units refused or
    echoed as understood, the device's usable memory capping the memory
    budget, ambiguous device names, parameters that set nothing."""
    R = "/v1/reductions"
    for what, q, path, text in (
            ("bare memory", resnet_query(16), "$.budgets.memory", 'did you mean "16GiB"'),
            ("bare memory string", resnet_query("0.9"), "$.budgets.memory", 'did you mean "90%"'),
            ("bare latency", resnet_query("6GiB", budgets={"memory": "6GiB", "latency": 5}), "$.budgets.latency",
             'did you mean "5ms" or "5s"'),
            ("memory in bits?", resnet_query("16b"), "$.budgets.memory", "bits or bytes"),
            ("ambiguous device", resnet_query("6GiB", device="a100"), "$.device", "ambiguous: it could be a100-40gb"),
            ("device typo", resnet_query("6GiB", device="rtx-4900"), "$.device", "did you mean rtx-4090"),
            ("bind to an unknown hyperparameter", resnet_query("6GiB", bind={"width": "widht"}), "$.bind.width",
             "did you mean width")):
        r = d.post(R, q)
        problem("422 " + what, r, 422, R, path)
        check("422 " + what + ": detail", text in str((r.json or {}).get("detail")), _short(r.json))
    r = d.post("/v1/estimate", dict(ESTIMATE_EXAMPLE, device="v100"))
    problem("estimate ambiguous device", r, 422, "/v1/estimate", "$.device")
    check("estimate ambiguous device: the candidates", "v100-16gb" in str((r.json or {}).get("detail")), _short(r.json))

    # units as understood, in the answer
    space = {"batch_size": {"_type": "choice", "_value": [64, 128, 256, 512]},
             "width": {"_type": "choice", "_value": [64, 96]}}
    q = {"model": "resnet50", "space": space, "device": "a100-40gb", "budgets": {"memory": "16gb", "latency": "50MS"}}
    r = d.post(R, q)
    j = check_reduction("units echoed", r, 201, space)
    b = j.get("budgets") or {}
    eq("units echoed: memory", b.get("memory"), {"value": 16e9, "unit": "B", "text": "14.9 GiB", "source": "request",
                                            "estimate": "expected"})
    eq("units echoed: latency", b.get("latency"), {"value": 0.05, "unit": "s", "text": "50 ms", "source": "request"})
    eq("units echoed: no warnings", j.get("warnings"), [])

    # a budget larger than the device: capped to its usable memory, per device
    counts = {}
    for dev in ("t4", "a100-40gb"):
        q = {"model": "resnet50", "space": space, "device": dev, "budgets": {"memory": "24GiB"}}
        j = check_reduction("24GiB on " + dev, d.post(R, q), 201, space)
        counts[dev] = int(j.get("feasible", "-1"))
        if dev == "t4":
            eq("24GiB on t4: warning", j.get("warnings"),
               ["memory budget 24 GiB is more than t4's usable 14.6 GiB: using 14.6 GiB"])
            eq("24GiB on t4: budget", (j.get("budgets") or {}).get("memory"),
               {"value": 14912.0 * 2 ** 20, "unit": "B", "text": "14.56 GiB", "source": "device",
                "estimate": "expected"})
            r = d.get(R + "/" + str(j.get("id")))
            eq("24GiB on t4 (read back): warning", (r.json or {}).get("warnings"), j.get("warnings"))
            r = d.get(R + "/" + str(j.get("id")) + "/check?batch_size=64&width=64")
            eq("24GiB on t4: GET check carries the warning", (r.status, (r.json or {}).get("warnings")),
               (200, j.get("warnings")))
        else:
            eq("24GiB on a100-40gb: no warning", j.get("warnings"), [])
    check("24GiB: fewer configurations fit the T4 than the A100", 0 <= counts["t4"] < counts["a100-40gb"], counts)
    r = d.post("/v1/estimate", dict(ESTIMATE_EXAMPLE, device="t4", budgets={"memory": "200GiB"}))
    eq("estimate 200GiB on t4: 200", r.status, 200)
    check("estimate 200GiB on t4: warning", "more than t4's usable 14.6 GiB" in str((r.json or {}).get("warnings")),
          _short(r.json))

    cq = {"model": "resnet50", "space": space, "device": "t4", "budgets": {"memory": "24GiB"},
          "config": {"batch_size": 64, "width": 64}}
    r = d.post("/v1/check", cq)
    eq("check 24GiB on t4: warning", (r.status, (r.json or {}).get("warnings")),
       (200, ["memory budget 24 GiB is more than t4's usable 14.6 GiB: using 14.6 GiB"]))
    r = d.post("/v1/check", dict(cq, device="a100-40gb"))
    check("check 24GiB on a100-40gb: no warnings member", r.status == 200 and "warnings" not in (r.json or {}),
          _short(r.json))

    # parameters that set nothing in the model; explicit binding
    r = d.post(R, {"model": "bert-base", "space": SPACE_RESNET, "device": "h200-141gb"})
    j = check_reduction("resnet space on bert", r, 201, SPACE_RESNET)
    # the service solves the canonical query (keys sorted): the names come in that order
    eq("resnet space on bert: warning", j.get("warnings"),
       ["parameters block, layers3 (did you mean layers?), resolution, width set nothing in model bert "
        "(they pass through)"])
    hs = {"batch_size": {"_type": "choice", "_value": [8, 16]}, "hidden_size": {"_type": "choice", "_value": [384, 768]}}
    j = check_reduction("bind hidden_size", d.post(R, {"model": "bert-base", "space": hs, "device": "h200-141gb",
                                                        "bind": {"hidden_size": "hidden"}}), 201, hs)
    eq("bind hidden_size: all fit, no warning", (j.get("feasible"), j.get("warnings")), ("4", []))


# ================================================ phase 1b: concurrency ==
def phase_concurrency(st):
    d = st["mem"]
    ridm, walk, pages, fm = st["ridm"], st["walk"], st["pages"], st["fm"]
    qm = mlp_query()
    ws = {dkey(c, qm["space"]) for c in walk}
    space = qm["space"]
    # grid points to /check: a feasible one and an infeasible one per request
    grid = [dict(batch_size=b, hidden=h, depth=dd, activation=a)
            for b in discrete_values(space["batch_size"]) for h in discrete_values(space["hidden"])
            for dd in discrete_values(space["depth"]) for a in discrete_values(space["activation"])]
    expect_limit = {}
    for t in range(16):
        lim = 1024 * (t + 1)
        expect_limit[lim] = sum(1 for c in walk if c["hidden"] * c["depth"] <= lim)
    bad = []
    blk = threading.Lock()

    def fail(msg):
        with blk:
            bad.append(msg)

    def client(t):
        lim = 1024 * (t + 1)
        for i in range(20):
            kind = (t + i) % 5
            try:
                if kind == 0:
                    c = grid[(t * 97 + i * 13) % len(grid)]
                    r = d.post("/v1/check", dict(qm, config=dict(c, learning_rate=0.01)))
                    want = key(c) in ws
                    if r.status != 200 or (r.json or {}).get("feasible") != want or (r.json or {}).get("id") != ridm:
                        fail("check %s: %r (want feasible %s)" % (key(c), r, want))
                elif kind == 1:
                    cur, items, nxt = pages[(t + i) % len(pages)]
                    path = "/v1/reductions/%s/configurations?limit=100" % ridm
                    if cur is not None:
                        path += "&cursor=" + urllib.parse.quote(cur, safe="")
                    r = d.get(path)
                    if r.status != 200 or (r.json or {}).get("items") != items or \
                            (r.json or {}).get("next_cursor") != nxt:
                        fail("page %s: %r" % (cur, r))
                elif kind == 2:
                    r = d.get("/v1/templates/resnet" if i % 2 else "/v1/devices")
                    if r.status != 200 or not isinstance(r.json, dict):
                        fail("catalog: %r" % r)
                elif kind == 3:
                    r = d.post("/v1/reductions", qm)
                    if r.status != 200 or (r.json or {}).get("feasible") != str(fm) or r.h("X-Cache") != "hit":
                        fail("cached reduction: %r" % r)
                else:
                    r = d.post("/v1/reductions", mlp_query(lim))
                    j = r.json or {}
                    if r.status not in (200, 201) or j.get("feasible") != str(expect_limit[lim]):
                        fail("reduction hidden*depth<=%d: %r, want feasible %d" % (lim, r, expect_limit[lim]))
            except Exception as ex:         # a hang, a reset, a bad reply
                fail("client %d request %d: %s: %s" % (t, i, type(ex).__name__, ex))

    t0 = time.time()
    threads = [threading.Thread(target=client, args=(t,)) for t in range(16)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    took = time.time() - t0
    check("concurrency: 16 clients x 20 mixed requests all answered correctly", not bad,
          "%d wrong: %s" % (len(bad), "; ".join(bad[:3])))
    check("concurrency: every client finished", not any(th.is_alive() for th in threads), "")
    log("concurrency took %.2f s" % took)
    r = d.get("/healthz")
    eq("healthz after the burst", r.status, 200)


# =========================================== phase 1c: metrics, shutdown ==
def phase_metrics_and_shutdown(st):
    d = st["mem"]
    # every request the clients made is in /metrics, by route and status
    deadline = time.time() + 3
    while True:
        with d.tlock:
            tally, hits, misses = dict(d.tally), d.hits, d.misses
        r, ms = get_metrics(d)
        srv = {}
        for n, lab, v in ms:
            if n == "dnnsat_http_requests_total":
                k = (lab.get("route"), int(lab["code"]) if lab.get("code", "").isdigit() else lab.get("code"))
                srv[k] = srv.get(k, 0) + int(v)
        same = srv == {k: v for k, v in tally.items() if v}
        if same or time.time() > deadline:
            break
        time.sleep(0.2)
    eq("metrics: 200", r.status, 200)
    check("metrics: text/plain; version=0.0.4", (r.h("Content-Type") or "").startswith("text/plain; version=0.0.4"),
          r.h("Content-Type"))
    diff = {k: (srv.get(k, 0), tally.get(k, 0)) for k in set(srv) | set(tally) if srv.get(k, 0) != tally.get(k, 0)}
    check("metrics: dnnsat_http_requests_total{route,code} == what the clients received", not diff,
          "(server, clients): %r" % diff)
    eq("metrics: dnnsat_cache_hits_total == X-Cache: hit seen", metric(ms, "dnnsat_cache_hits_total"), float(hits))
    eq("metrics: dnnsat_cache_misses_total == X-Cache: miss seen", metric(ms, "dnnsat_cache_misses_total"),
       float(misses))
    check("metrics: solver runs counted", (metric(ms, "dnnsat_solver_seconds_count") or 0) >= 3,
          metric(ms, "dnnsat_solver_seconds_count"))
    eq("metrics: nothing rejected", metric(ms, "dnnsat_rejected_total"), 0.0)
    eq("metrics: no dnnsat_database_up without a database", metric(ms, "dnnsat_database_up"), None)
    check("metrics: every line parses", all(n != "<unparsable>" for n, _, _ in ms),
          [l for n, l, _ in ms if n == "<unparsable>"][:2])
    series = {}
    for n, lab, v in ms:
        k = (n, tuple(sorted(lab.items())))
        series[k] = series.get(k, 0) + 1
    dups = [k for k, c in series.items() if c > 1]
    check("metrics: no duplicate series (invalid exposition)", not dups, _short(dups[:3]))

    # the access log never holds a body
    R = "/v1/reductions"
    d.post(R, resnet_query("6GiB", model=MARKER))
    d.post(R, '{"model": "%s", ' % MARKER)
    d.post("/v1/check", dict(mlp_query(), config={"batch_size": 32, "note": MARKER}))
    d.post("/v1/estimate", dict(ESTIMATE_EXAMPLE, config={"batch_size": 64}, workload={"mode": MARKER}))

    # SIGTERM while a slow request is in flight
    ridt = st.get("ridt_mem")
    res = {}

    def slow():
        try:
            res["r"] = d.post(R, t24_query(20), timeout=30)
        except Exception as ex:
            res["ex"] = ex

    keep = http.client.HTTPConnection("127.0.0.1", d.port, timeout=10)
    d.get("/healthz", conn=keep)                # a keep-alive connection, open before the signal
    th = threading.Thread(target=slow)
    th.start()
    time.sleep(0.8)
    t0 = time.time()
    d.proc.send_signal(signal.SIGTERM)
    while "SIGTERM received" not in d.log() and time.time() - t0 < 2:
        time.sleep(0.005)
    try:
        rz = d.get("/readyz", conn=keep)
        if rz.status != 503:
            check("readyz while stopping: 503", False, _short(rz))
        else:
            eq("readyz while stopping: status", (rz.json or {}).get("status"), "stopping")
            check("readyz while stopping: Retry-After", (rz.h("Retry-After") or "").isdigit(), rz.h("Retry-After"))
    except (OSError, http.client.HTTPException) as ex:
        note("readyz on a keep-alive connection during shutdown: %s (no answer)" % type(ex).__name__)
    keep.close()
    th.join(30)
    try:
        rc = d.proc.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        rc = None
        d.kill()
    took = time.time() - t0
    check("shutdown: the slow request got a complete response", "r" in res, res.get("ex"))
    if "r" in res:
        r = res["r"]
        check("shutdown: slow request answered 200/202/503", r.status in (200, 202, 503), _short(r))
        check("shutdown: slow request body is complete JSON", isinstance(r.json, dict), _short(r.body[-200:]))
        if r.status == 202:
            eq("shutdown: slow request is the running reduction", (r.json or {}).get("id"), ridt)
    eq("shutdown: exit status 0", rc, 0)
    check("shutdown: exited within %d s of SIGTERM" % STOP_TIMEOUT, took <= STOP_TIMEOUT, "%.2f s" % took)
    err = d.log()
    check("shutdown: the log says SIGTERM was received", "SIGTERM received" in err, err[-300:])
    check("shutdown: the log says it stopped", re.search(r"dnnsatd: stopped\s*$", err) is not None, err[-300:])
    check("stderr: no body in the daemon's log", MARKER not in err, "")

    # the access log: one line per request, method, path, status, never a body
    try:
        with open(st["alog"], encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as ex:
        lines = []
        check("access log: written to --access-log FILE", False, ex)
    pat = re.compile(r'^\S+ 127\.0\.0\.1 "([A-Z]+) (/\S*)" (\d{3}) [0-9.]+ms( cache=hit)?$')
    parsed = [pat.match(ln) for ln in lines]
    check("access log: every line is 'time addr \"METHOD PATH\" STATUS TIMEms'", lines and all(parsed),
          [ln for ln, m in zip(lines, parsed) if not m][:2])
    check("access log: never a request body", not any(MARKER in ln for ln in lines),
          [ln for ln in lines if MARKER in ln][:1])
    with d.tlock:
        total = sum(d.tally.values())
    check("access log: one line per request the clients sent", len(lines) >= total - 2 and len(lines) <= total + 2,
          "%d lines, %d requests" % (len(lines), total))
    got = [(m.group(1), m.group(2), int(m.group(3))) for m in parsed if m]
    for want in (("POST", "/v1/reductions", 201), ("POST", "/v1/reductions", 200), ("GET", "/v2/nothing", 404),
                 ("DELETE", "/v1/reductions", 405), ("POST", "/v1/reductions", 413),
                 ("POST", "/v1/reductions", 415), ("POST", "/v1/reductions", 422),
                 ("GET", "/v1/reductions/%s/configurations" % ridt, 503), ("POST", "/v1/reductions", 400)):
        check("access log: a line %s %s %d" % want, want in got, "")
    check("access log: cache hits marked", any(m.group(4) for m in parsed if m), "")


# ============================================ phase 2: tokens and limits ==
def phase_limits(st):
    tokfile = os.path.join(WORK, "tokens")
    token = "e2e-token-0123456789abcdef"
    with open(tokfile, "w") as f:
        f.write("# test tokens\n\n%s\n" % token)
    d = Daemon("limits", ["--token-file", tokfile, "--workers", "1", "--max-queue", "0", "--max-space", "100",
                          "--registry-size", "1", "--access-log", "off"],
               env={"DNNSAT_MAX_BODY": "64KiB"}, token=token).start()
    st["limits"] = d
    # --workers 1: one HTTP thread, without libmicrohttpd's "Zero size ... is ignored" warning;
    # a second server on its port fails, and libmicrohttpd's message names that port (it said
    # "Failed to bind to port 0" until 2026-12-05)
    check("limits: no thread-pool warning with one HTTP thread", "Zero size" not in d.log(), d.log()[-300:])
    p = subprocess.run([DNNSATD, "--listen", "127.0.0.1:%d" % d.port], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    err = p.stderr.decode(errors="replace")
    check("limits: a second server on the port fails, naming it",
          p.returncode != 0 and "port %d" % d.port in err and "port 0" not in err, err[-300:])
    r = d.get("/v1/templates", auth=False)
    problem("401 no token", r, 401, "/v1/templates")
    problem("401 wrong token", d.get("/v1/devices", auth=False, headers={"Authorization": "Bearer " + "x" * 26}),
            401, "/v1/devices")
    problem("401 token as Basic", d.get("/v1/devices", auth=False, headers={"Authorization": "Basic " + token}),
            401, "/v1/devices")
    problem("401 POST without token", d.post("/v1/reductions", mlp_query(), auth=False), 401, "/v1/reductions")
    problem("401 metrics without token", d.get("/metrics", auth=False), 401, "/metrics")
    eq("token: templates with the token", d.get("/v1/templates").status, 200)
    eq("token: healthz stays public", d.get("/healthz", auth=False).status, 200)
    r = d.get("/readyz", auth=False)
    eq("token: readyz stays public", (r.status, (r.json or {}).get("database")), (200, "memory"))

    # 413 with --max-body 64KiB from the environment (DNNSAT_MAX_BODY)
    hdr = ("POST /v1/reductions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
           "Content-Type: application/json\r\n" % token).encode()
    r = d.raw(hdr + b"Content-Length: 70000\r\n\r\n")
    d.count("POST", "/v1/reductions", r)
    problem("413 over DNNSAT_MAX_BODY (declared)", r, 413, "/v1/reductions")
    body = b'{"pad": "' + b"y" * 70000 + b'"}'
    r = d.raw(hdr + b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
              b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n")
    d.count("POST", "/v1/reductions", r)
    problem("413 over DNNSAT_MAX_BODY (chunked)", r, 413, "/v1/reductions")
    r = d.retry429("POST", "/v1/reductions", dict(mlp_query(), pad="z" * 60000))
    check("a 60 KB body is under 64KiB: not 413", r.status != 413, _short(r))

    # 413 for a stream over --max-space
    r = d.retry429("POST", "/v1/reductions", mlp_query())
    rid = (r.json or {}).get("id", "0" * 32)
    fm = int((r.json or {}).get("feasible", "0"))
    check("mlp has more feasible configurations than --max-space 100", fm > 100, fm)
    problem("413 jsonl over --max-space",
            d.retry429("GET", "/v1/reductions/%s/configurations?format=jsonl" % rid), 413, path="format")
    r = d.retry429("GET", "/v1/reductions/%s/configurations?limit=100" % rid)
    eq("a page of 100 under --max-space 100: 200", (r.status, len((r.json or {}).get("items") or [])), (200, 100))

    # one client, one request at a time: nothing is ever waiting, so never 429
    conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=HTTP_TIMEOUT)
    seq = {}
    for _ in range(300):
        r = d.get("/v1/reductions/%s/samples?n=1" % rid, conn=conn)
        seq[r.status] = seq.get(r.status, 0) + 1
    conn.close()
    eq("300 sequential requests of one client on an idle one-worker server: all 200 (no 429)", seq, {200: 300})

    # 429: one worker, no queue, a slow reduction in flight
    res = {}

    def slow():
        res["first"] = d.post("/v1/reductions", t24_query(2))

    th = threading.Thread(target=slow)
    th.start()
    time.sleep(0.4)
    rej = []
    rlock = threading.Lock()

    def more(i):
        r = d.post("/v1/reductions", t24_query(2)) if i < 3 else \
            d.get("/v1/reductions/%s/samples?n=1" % rid)
        with rlock:
            rej.append(r)

    ths = [threading.Thread(target=more, args=(i,)) for i in range(4)]
    t0 = time.time()
    for x in ths:
        x.start()
    hz = d.get("/healthz")
    hz_t = time.time() - t0
    hz_before = th.is_alive()         # answered while the slow reduction still ran
    for x in ths:
        x.join(30)
    th.join(30)
    eq("429: the first slow reduction is 202", res.get("first").status if res.get("first") else None, 202)
    n429 = 0
    for i, r in enumerate(rej):
        if problem("429 request %d while the only worker is busy" % i, r, 429):
            n429 += 1
            ra = r.h("Retry-After") or ""
            check("429 request %d: Retry-After" % i, ra.isdigit() and int(ra) >= 1, ra)
    eq("healthz while the worker is busy: 200", hz.status, 200)
    check("healthz while the worker is busy: answered before the slow reduction ended", hz_before,
          "%.2f s" % hz_t)
    r, ms = get_metrics(d)
    with d.tlock:
        all429 = sum(v for (route, code), v in d.tally.items() if code == 429)
        create429 = d.tally.get(("reductions_create", 429), 0)
    eq("metrics: dnnsat_rejected_total counts every 429 the clients got", metric(ms, "dnnsat_rejected_total"),
       float(all429))
    eq("metrics: 429s by route", metric(ms, "dnnsat_http_requests_total", route="reductions_create", code="429"),
       float(create429))
    ridt = ((res.get("first") and res["first"].json) or {}).get("id", "0" * 32)
    r = d.retry429("GET", "/v1/reductions/%s/configurations?offset=3&timeout=0.05" % ridt)
    problem("503 offset of an unfinished count", r, 503)
    check("503: Retry-After", (r.h("Retry-After") or "").isdigit(), r.h("Retry-After"))
    # --registry-size 1: the mlp reduction was evicted by transformer24; its
    # reads compile it again from the cache's stored request
    r = d.retry429("GET", "/v1/reductions/%s/samples?n=3&seed=2" % rid)
    eq("evicted from the registry: samples still answered", (r.status, len((r.json or {}).get("items") or [])),
       (200, 3))
    r = d.retry429("GET", "/v1/reductions/%s" % rid)
    eq("evicted from the registry: GET from the cache", (r.status, (r.json or {}).get("feasible")), (200, str(fm)))
    rc, took = d.stop()
    eq("limits server: exit status 0", rc, 0)

    # --max-queue 2: two jobs wait behind the running one, a third is 429;
    # SIGTERM answers the waiting ones 503 and stops the running one
    q = Daemon("queue", ["--workers", "1", "--max-queue", "2", "--access-log", "off"]).start()
    st["queue"] = q
    out = {}

    def job(i):
        try:
            out[i] = q.post("/v1/reductions", t24_query(20), timeout=30)
        except Exception as ex:
            out[i] = ex

    ths = [threading.Thread(target=job, args=(0,))]
    ths[0].start()
    time.sleep(0.5)
    for i in (1, 2):
        ths.append(threading.Thread(target=job, args=(i,)))
        ths[-1].start()
    deadline = time.time() + 5
    while time.time() < deadline:
        _, ms = get_metrics(q)
        if metric(ms, "dnnsat_solver_jobs", state="waiting") == 2.0:
            break
        time.sleep(0.05)
    eq("queue: two jobs waiting (dnnsat_solver_jobs)", metric(ms, "dnnsat_solver_jobs", state="waiting"), 2.0)
    eq("queue: one job running (dnnsat_solver_jobs)", metric(ms, "dnnsat_solver_jobs", state="running"), 1.0)
    r = q.post("/v1/reductions", t24_query(20))
    problem("queue: a third waiting job is 429 (--max-queue 2)", r, 429, "/v1/reductions")
    rc, took = q.stop()
    for t in ths:
        t.join(30)
    eq("queue: exit status 0", rc, 0)
    check("queue: exited within %d s" % STOP_TIMEOUT, took <= STOP_TIMEOUT, "%.2f s" % took)
    r0 = out.get(0)
    # a job in its count stops at its next slice and answers 202 with what it has; on a slow
    # machine it may still be compiling the query when SIGTERM comes, and answers 503
    check("queue: the running job answered 202 (stopped at its next slice), or 503 if still compiling",
          isinstance(r0, Resp) and (r0.status == 202 or
                                    (r0.status == 503 and "shutting down" in str((r0.json or {}).get("detail")))),
          _short(r0))
    for i in (1, 2):
        ri = out.get(i)
        if check("queue: waiting job %d got a response" % i, isinstance(ri, Resp), _short(ri)):
            problem("queue: waiting job %d answered 503 at shutdown" % i, ri, 503, "/v1/reductions")
            check("queue: waiting job %d Retry-After" % i, (ri.h("Retry-After") or "").isdigit(), ri.h("Retry-After"))


    # 120 expensive reductions at once against one worker, each with a 2 s
    # deadline (issue 13: accepted ones waited up to 117 s in the queue and
    # 20 got nothing in 120 s): time in the queue counts against the
    # deadline, so every one is answered (202 with progress, 503 when its
    # deadline passed before it ran, 429 when the queue was full), long
    # before the clients' 90 s; none is left without an answer
    f = Daemon("flood", ["--workers", "1", "--max-queue", "200", "--access-log", "off"]).start()
    st["flood"] = f
    flood = {}

    def heavy(i):
        body = t24_query(2)
        body["budgets"] = {"memory": "%dMiB" % (30000 + i)}      # 120 distinct queries, no shared cache entry
        try:
            flood[i] = f.post("/v1/reductions", body, timeout=90)
        except Exception as ex:
            flood[i] = ex

    ths = [threading.Thread(target=heavy, args=(i,)) for i in range(120)]
    for t in ths:
        t.start()
    for t in ths:
        t.join(120)
    answered = [r for r in flood.values() if isinstance(r, Resp)]
    statuses = sorted(set(r.status for r in answered))
    eq("flood: 120 concurrent heavy reductions all answered", len(answered), 120)
    check("flood: only 202, 503 or 429", set(statuses) <= {202, 503, 429}, statuses)
    late = [r for r in answered if r.status == 503]
    check("flood: a job whose deadline passed in the queue is answered 503 with Retry-After",
          all((r.h("Retry-After") or "").isdigit() for r in late), [_short(r) for r in late[:2]])
    r = f.get("/healthz")
    eq("flood: /healthz still answers", r.status, 200)
    rc, took = f.stop()
    eq("flood: exit status 0", rc, 0)


# ============================================== phase 3: PostgreSQL ==
def pg_tmp(cmd):
    p = subprocess.run(["sh", PG_TMP, cmd, PG_DIR], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    if p.returncode != 0:
        raise RuntimeError("pg_tmp.sh %s: %s" % (cmd, p.stderr.decode(errors="replace")[-500:]))


def wait_ready(d, want, seconds):
    """Polls /readyz until database == want; (json, seconds waited)."""
    t0 = time.time()
    j = {}
    while True:
        try:
            j = d.get("/readyz").json or {}
        except (OSError, http.client.HTTPException):
            j = {}
        if j.get("database") == want or time.time() - t0 > seconds:
            return j, time.time() - t0
        time.sleep(0.1)


def phase_postgres(st):
    if not DB_URL or not PG_DIR:
        check("PostgreSQL: DNNSAT_TEST_DATABASE_URL and DNNSAT_TEST_PG_DIR are set (run test_service.sh)", False,
              "a missing PostgreSQL is a failure, not a skip")
        return
    args = ["--database-url", DB_URL, "--workers", "2"]
    a = Daemon("pg-a", args).start()
    st["a"] = a
    r = a.get("/readyz")
    eq("A readyz: 200", r.status, 200)
    eq("A readyz: database ok", (r.json or {}).get("database"), "ok")
    eq("A readyz: status ready", (r.json or {}).get("status"), "ready")
    q6 = resnet_query("6GiB")
    r = a.post("/v1/reductions", q6)
    j = check_reduction("A: reduction (new)", r, 201, SPACE_RESNET, cached=False)
    rid6 = j.get("id")
    if st.get("rid6"):
        eq("A: same id as the in-memory server", rid6, st["rid6"])
        eq("A: same count as the in-memory server", j.get("feasible"), st["j6"].get("feasible"))
    r = a.post("/v1/reductions", q6)
    check_reduction("A: reduction (repeat)", r, 200, cached=True)
    _, ms = get_metrics(a)
    eq("A metrics: one hit", metric(ms, "dnnsat_cache_hits_total"), 1.0)
    eq("A metrics: one miss", metric(ms, "dnnsat_cache_misses_total"), 1.0)
    eq("A metrics: dnnsat_database_up 1", metric(ms, "dnnsat_database_up"), 1.0)
    r = a.post("/v1/reductions", t24_query(0.5))
    jt = check_reduction("A: transformer24 (0.5 s)", r, 202, SPACE_T24, cached=False)
    ridt = jt.get("id", "0" * 32)

    rc, took = a.stop()
    eq("A: SIGTERM exit status 0", rc, 0)
    check("A: exits within %d s" % STOP_TIMEOUT, took <= STOP_TIMEOUT, "%.2f s" % took)
    check("A: log says stopped", "dnnsatd: stopped" in a.log(), a.log()[-300:])

    # ---- restart on the same database
    a.start()
    r = a.post("/v1/reductions", q6)
    j = check_reduction("A restarted: reduction from the database", r, 200, SPACE_RESNET, cached=True)
    eq("A restarted: same id", j.get("id"), rid6)
    r = a.get("/v1/reductions/%s" % rid6)
    eq("A restarted: GET reduction", (r.status, (r.json or {}).get("id")), (200, rid6))
    r = a.get("/v1/reductions/%s?timeout=0.5" % ridt)
    jt2 = check_reduction("A restarted: GET transformer24?timeout=0.5 continues it", r, 202, SPACE_T24)
    if r.status != 202:     # still see whether a POST restores the saved progress
        r = a.post("/v1/reductions", t24_query(0.5))
        jt2 = check_reduction("A restarted: POST transformer24 (0.5 s) continues it", r, 202, SPACE_T24)
    if r.status == 202 and jt.get("seconds") is not None:
        check("A restarted: seconds continue from the saved progress (not reset)",
              jt2["seconds"] >= jt["seconds"] + 0.35, (jt["seconds"], jt2["seconds"]))
        check("A restarted: bounds no looser than before the restart",
              int(jt2["feasible_lower"]) >= int(jt["feasible_lower"]) and
              int(jt2["feasible_upper"]) <= int(jt["feasible_upper"]), _short((jt, jt2)))
    check("A restarted: no saved progress ignored", "saved progress ignored" not in a.log(),
          [ln for ln in a.log().splitlines() if "saved progress ignored" in ln][:1])

    # ---- a second process on the same database (settings from DNNSAT_*)
    b = Daemon("pg-b", ["--workers", "1"], env={"DNNSAT_DATABASE_URL": DB_URL, "DNNSAT_ACCESS_LOG": "off"}).start()
    st["b"] = b
    eq("B readyz: database ok (DNNSAT_DATABASE_URL)", (b.get("/readyz").json or {}).get("database"), "ok")
    r = b.post("/v1/reductions", q6)
    j = check_reduction("B: A's reduction from the database", r, 200, SPACE_RESNET, cached=True)
    eq("B: same id", j.get("id"), rid6)
    r = b.get("/v1/reductions/%s" % rid6)
    j = check_reduction("B: GET A's reduction", r, 200, SPACE_RESNET, cached=True)
    r = b.get("/v1/reductions/%s/configurations?limit=5" % rid6)
    eq("B: a page of A's reduction", (r.status, len((r.json or {}).get("items") or [])), (200, 5))
    r = b.get("/v1/reductions/%s?timeout=0.3" % ridt)
    jt3 = check_reduction("B: GET A's transformer24?timeout=0.3 continues it", r, 202, SPACE_T24)
    if r.status != 202:     # still see whether a POST restores the saved progress
        r = b.post("/v1/reductions", t24_query(0.3))
        jt3 = check_reduction("B: POST A's transformer24 (0.3 s) continues it", r, 202, SPACE_T24)
    if "seconds" in jt3 and "seconds" in jt2:
        check("B: seconds accumulate across processes", jt3["seconds"] >= jt2["seconds"] + 0.2,
              (jt2["seconds"], jt3["seconds"]))
    qb = resnet_query("4GiB")
    r = b.post("/v1/reductions", qb)
    jb = check_reduction("B: new reduction 4GiB", r, 201, SPACE_RESNET, cached=False)
    ridb = jb.get("id", "0" * 32)
    # (a count of about a second alone, given the longest deadline: CI on a loaded
    # 2-core machine, 2026-12-06, ran past the default 10 s and answered 202; the
    # timeout is not part of the id, so B's POST below reads the same reduction)
    r = a.post("/v1/reductions", resnet_query("5GiB", timeout=60))
    j5 = check_reduction("A: new reduction 5GiB", r, 201, SPACE_RESNET, cached=False)
    r = b.post("/v1/reductions", resnet_query("5GiB"))
    j = check_reduction("B: A's 5GiB from the database", r, 200, cached=True)
    eq("B: A's 5GiB same count", j.get("feasible"), j5.get("feasible"))
    _, ms = get_metrics(b)
    eq("B metrics: hits counted", metric(ms, "dnnsat_cache_hits_total"), float(b.hits))
    check("B metrics: at least 3 hits", b.hits >= 3, b.hits)
    check("B: no saved progress ignored", "saved progress ignored" not in b.log(),
          [ln for ln in b.log().splitlines() if "saved progress ignored" in ln][:1])
    rc, _ = b.stop()
    eq("B: exit status 0", rc, 0)

    # ---- the database goes away and comes back
    pg_tmp("stop-server")
    j, _ = wait_ready(a, "down", 5)
    r = a.get("/readyz")
    eq("DB down: readyz 200", r.status, 200)
    eq("DB down: readyz database down", (r.json or {}).get("database"), "down")
    eq("DB down: readyz status degraded", (r.json or {}).get("status"), "degraded")
    # libpq's reason names hosts, ports, roles, socket paths: not for anyone without a token
    check("DB down: readyz without a token has no detail", "detail" not in (r.json or {}), _short(r.json))
    check("DB down: the log says why", "readyz: database down: " in a.log(),
          [ln for ln in a.log().splitlines() if "readyz" in ln][:1])
    q3 = resnet_query("3GiB")
    r = a.post("/v1/reductions", q3)
    jd = check_reduction("DB down: a new reduction is still answered", r, 201, SPACE_RESNET, cached=False)
    r = a.post("/v1/reductions", mlp_query(4096))
    jdm = check_reduction("DB down: a new mlp reduction", r, 201, cached=False)
    r = a.post("/v1/reductions/%s/check" % j5.get("id"), {"config": dict(CHECK_EXAMPLE["config"])})
    check("DB down: check on a reduction this server computed (in its memory)",
          r.status == 200 and isinstance((r.json or {}).get("feasible"), bool), _short(r))
    r = a.get("/v1/reductions/%s" % ridb)
    problem("DB down: a reduction only in the database", r, 503, "/v1/reductions/" + ridb)
    check("DB down: Retry-After", (r.h("Retry-After") or "").isdigit(), r.h("Retry-After"))
    _, ms = get_metrics(a)
    eq("DB down: dnnsat_database_up 0", metric(ms, "dnnsat_database_up"), 0.0)
    check("DB down: the log says the database is down", re.search(r"database down", a.log()) is not None,
          a.log()[-400:])

    pg_tmp("start-server")
    j, waited = wait_ready(a, "ok", 5)
    eq("DB back: readyz database ok within 5 s", j.get("database"), "ok")
    eq("DB back: readyz status ready", j.get("status"), "ready")
    log("database back after %.2f s" % waited)
    _, ms = get_metrics(a)
    eq("DB back: dnnsat_database_up 1", metric(ms, "dnnsat_database_up"), 1.0)
    check("DB back: the log says the database is back", "database back" in a.log(), a.log()[-400:])
    r = a.get("/v1/reductions/%s" % ridb)
    j = check_reduction("DB back: B's reduction from the database", r, 200, cached=True)
    eq("DB back: B's reduction same count", j.get("feasible"), jb.get("feasible"))
    qe = resnet_query("7GiB", timeout=60)      # (as A's 5GiB above)
    r = a.post("/v1/reductions", qe)
    je = check_reduction("DB back: new reduction", r, 201, SPACE_RESNET, cached=False)
    r = a.post("/v1/reductions", qe)
    check_reduction("DB back: repeat is a hit", r, 200, cached=True)
    # the write-back thread retries once a second: wait (up to 60 s, a hang guard) until A's
    # queue of results computed during the outage is empty before another process reads them
    t0 = time.time()
    while True:
        _, ms = get_metrics(a)
        pending = metric(ms, "dnnsat_cache_writeback_pending")
        if pending == 0 or time.time() - t0 > 60:
            break
        time.sleep(0.2)
    eq("DB back: the write-back queue drains", pending, 0.0)
    check("DB back: the results computed during the outage were written",
          (metric(ms, "dnnsat_cache_writeback_written_total") or 0) >= 2, metric(ms, "dnnsat_cache_writeback_written_total"))
    # a fresh process sees what A stored after the outage, and what it computed during it
    c = Daemon("pg-c", ["--database-url", DB_URL, "--workers", "2", "--access-log", "off"]).start()
    st["c"] = c
    r = c.post("/v1/reductions", qe)
    j = check_reduction("C: the reduction A stored after the outage", r, 200, cached=True)
    eq("C: same count", j.get("feasible"), je.get("feasible"))
    r = c.post("/v1/reductions", q3)
    # computed during the outage and written back when the database returned: an id once
    # handed out stays answerable by every replica
    j = check_reduction("C: the reduction A computed without the database was written back", r, 200, cached=True)
    eq("with and without the database: same id", j.get("id"), jd.get("id"))
    for f in ("total", "feasible", "feasible_lower", "feasible_upper", "reduced_space"):
        eq("with and without the database: same %s" % f, j.get(f), jd.get(f))
    r = c.post("/v1/reductions", mlp_query(4096))
    eq("with and without the database: same mlp count", (r.json or {}).get("feasible"), jdm.get("feasible"))
    if st.get("walk"):
        eq("mlp count agrees with the in-memory walk", jdm.get("feasible"),
           str(sum(1 for x in st["walk"] if x["hidden"] * x["depth"] <= 4096)))
    rc, _ = c.stop()
    eq("C: exit status 0", rc, 0)
    rc, took = a.stop()
    eq("A (after the outage): exit status 0", rc, 0)
    check("A (after the outage): exits within %d s" % STOP_TIMEOUT, took <= STOP_TIMEOUT, "%.2f s" % took)


def nested_mlp_query(n, timeout):
    """The mlp template with its layers wrapped in three nested {"repeat": n}: 2.4 KB."""
    m = load("schemas/templates/mlp.json")
    layers = m["layers"]
    for _ in range(3):
        layers = [{"repeat": n, "body": layers}]
    m["layers"] = layers
    q = mlp_query()
    q["model"] = m
    q["timeout"] = timeout
    return q


def phase_pipeline(st):
    """The request pipeline's bounds: nested repeats refused by size, a build cut by the
    deadline (--compile-grace 0 holds builds to it), the worker free afterwards, and SIGTERM
    stopping the daemon in its grace period while a build runs."""
    d = Daemon("pipeline", ["--workers", "1", "--access-log", "off", "--compile-grace", "0"]).start()
    st["pipeline"] = d
    r = d.post("/v1/reductions", nested_mlp_query(30, 2))
    problem("nested repeats beyond CM_MAX_UNROLLED", r, 422, "/v1/reductions",
            "$.layers[0].body[0].body[0].repeat")
    check("the 422 names the limit", "CM_MAX_UNROLLED" in r.body.decode("utf-8", "replace"), r)
    r = d.post("/v1/reductions", nested_mlp_query(10, 0.5))
    problem("a build cut by the deadline", r, 503, "/v1/reductions")
    check("deadline problem with Retry-After", b"deadline" in r.body and r.h("retry-after") is not None, r)
    r = d.post("/v1/reductions", mlp_query(1024))
    eq("the worker is free again: a small reduction", r.status, 201)
    # SIGTERM while the only worker builds the attack's model under a 60 s deadline
    out = {}

    def slow():
        try:
            out["r"] = d.post("/v1/reductions", nested_mlp_query(10, 60), timeout=HTTP_TIMEOUT)
        except Exception as ex:         # the connection may close under it
            out["r"] = ex
    th = threading.Thread(target=slow)
    th.start()
    time.sleep(1.0)
    rc, took = d.stop()
    th.join(HTTP_TIMEOUT)
    eq("SIGTERM during a model build: the daemon exits 0 within %d s" % STOP_TIMEOUT, rc, 0)
    log("SIGTERM during a build: exited in %.2f s" % took)


# ================================================================= main ==
# ========================================================== phase: z3 ==
def z3_mlp_query(budgets, **extra):
    # a minute: the conflict's Z3 checks share what is left of the request's
    # time (a sixth each here), and on a loaded 2-core machine 20 s left one
    # check undecided ("decided": false) while other test suites ran
    q = {"model": "mnist_mlp", "space": load("examples/spaces/mlp.json"), "device": "t4",
         "budgets": budgets, "timeout": 60}
    q.update(extra)
    return q


def phase_z3(st):
    """Z3 in the service (solver/z3/answer_z3.h): an exact reduction of a query
    that nothing satisfies carries "conflict" (the budgets that conflict, and
    how far each must move: the bracket at_least / nothing_at checked by two
    more reductions); "engine": "z3" adds the enumeration cross-check; an
    unknown engine is a 422 at $.engine."""
    d = Daemon("z3", ["--workers", "1", "--max-deadline", "600"]).start()
    st["z3"] = d
    r = d.post("/v1/reductions", z3_mlp_query({"memory": "100MiB", "params": "1M"}))
    j = check_reduction("z3 conflict", r, 201, cached=False)
    eq("z3 conflict: nothing fits", j.get("feasible"), "0")
    cf = j.get("conflict") or {}
    eq("z3 conflict: decided", cf.get("decided"), True)
    check("z3 conflict: no Z3 core unless asked for", "z3" not in cf, _short(cf))
    items = {c.get("path"): c for c in cf.get("conflict", [])}
    eq("z3 conflict: the memory budget alone", sorted(items), ["$.budgets.memory"])
    mem = items.get("$.budgets.memory", {})
    least, none = mem.get("at_least"), mem.get("nothing_at")
    if check("z3 conflict: at_least and nothing_at are bytes",
             isinstance(least, int) and isinstance(none, int) and none < least, _short(mem)):
        eq("z3 conflict: exact (one byte apart)", least - none, 1)
        r = d.post("/v1/reductions", z3_mlp_query({"memory": "%dB" % least, "params": "1M"}))
        check("z3 conflict: something fits at at_least", r.status in (200, 201) and
              int((r.json or {}).get("feasible", "0")) > 0, _short(r.json))
        check("z3 conflict: no conflict once something fits", "conflict" not in (r.json or {}), _short(r.json))
        r = d.post("/v1/reductions", z3_mlp_query({"memory": "%dB" % none, "params": "1M"}))
        check("z3 conflict: nothing fits at nothing_at", r.status in (200, 201) and
              (r.json or {}).get("feasible") == "0", _short(r.json))
    # the stored answer carries the conflict too
    rid = j.get("id", "0" * 32)
    r = d.get("/v1/reductions/" + rid)
    eq("z3 conflict: GET has it", ((r.json or {}).get("conflict") or {}).get("decided"), True)
    # "engine": "z3": Z3's unsat core beside the engine's conflict, which the engine finds
    # a minimal conflict too
    r = d.post("/v1/reductions", z3_mlp_query({"memory": "100MiB", "params": "1M"}, engine="z3", timeout=600),
               timeout=660)
    cf = (check_reduction("z3 conflict core", r, 201, cached=False) or {}).get("conflict") or {}
    z = cf.get("z3") or {}
    eq("z3 conflict core: Z3's core agrees", (z.get("decided"), z.get("conflict"), z.get("agrees")),
       (True, ["$.budgets.memory"], True))
    # Z3's enumeration of 528 models takes seconds, many more under the sanitizers on a busy
    # machine: a deadline far away, so that only Z3's resource limit bounds it
    r = d.post("/v1/reductions", z3_mlp_query({"memory": "3GiB", "params": "5M"}, engine="z3", timeout=600),
               timeout=660)
    j = check_reduction("z3 engine", r, 201, cached=False)
    z = j.get("z3") or {}
    eq("z3 engine: agrees", (z.get("agrees"), z.get("complete"), str(z.get("models"))),
       (True, True, j.get("feasible")))
    problem("z3 engine foo", d.post("/v1/reductions", z3_mlp_query({"memory": "3GiB"}, engine="foo")), 422,
            path="$.engine")
    d.stop()


# ====================================================== phase: models ==
ONNX_DIR = os.path.join(TOP_SRCDIR, "tests", "data", "onnx")
ONNX_FIXTURES = ("bert_tiny", "gpt_tiny", "tiny_cnn", "vit_tiny")


def onnx_bytes(name):
    with open(os.path.join(ONNX_DIR, name + ".onnx"), "rb") as f:
        return f.read()


def upload(d, data, ctype="application/octet-stream", params=""):
    return d.request("POST", "/v1/models" + params, data, ctype=ctype)


def check_model(name, r, status):
    """The answer of POST /v1/models; returns its JSON or {}."""
    ok = check(name + ": status", r.status == status, "got %r, want %d" % (r, status))
    j = r.json if isinstance(r.json, dict) else {}
    if not ok:
        return j
    check(name + ": id is 64 hex (SHA-256)", isinstance(j.get("id"), str) and HEX64.match(j["id"]), j.get("id"))
    eq(name + ": Location", r.h("Location"), "/v1/models/%s" % j.get("id"))
    check(name + ": name", isinstance(j.get("name"), str) and j["name"], j.get("name"))
    check(name + ": hyperparameters with defaults", isinstance(j.get("hyperparameters"), dict) and
          all(isinstance(v, int) for v in j["hyperparameters"].values()), _short(j.get("hyperparameters")))
    check(name + ": params > 0", isinstance(j.get("params"), int) and j["params"] > 0, j.get("params"))
    check(name + ": warnings are strings", isinstance(j.get("warnings"), list) and
          all(isinstance(w, str) for w in j["warnings"]), _short(j.get("warnings")))
    return j


def tiny_query(model):
    return {"model": model, "device": "t4", "budgets": {"memory": "2GiB"},
            "space": {"batch": {"_type": "choice", "_value": [1, 8, 64, 512, 4096, 16384]}}}


def models_common(d, label):
    """Uploads, idempotence, the round trip and queries by id on daemon d;
    returns {fixture: id}."""
    ids = {}
    for f in ONNX_FIXTURES:
        data = onnx_bytes(f)
        j = check_model("%s %s: upload" % (label, f), upload(d, data), 201)
        ids[f] = j.get("id", "0" * 32)
        r = upload(d, data, ctype="application/onnx")
        j2 = check_model("%s %s: upload again (application/onnx)" % (label, f), r, 200)
        eq("%s %s: same answer" % (label, f), j2, j)
    check("%s: four ids" % label, len(set(ids.values())) == 4, ids)
    eq("%s: tiny_cnn's symbolic batch" % label, sorted((upload(d, onnx_bytes("tiny_cnn")).json or {})
       .get("hyperparameters", {})), ["batch"])
    r = upload(d, onnx_bytes("vit_tiny"))
    check("%s: vit_tiny's importer warnings name the initializer" % label,
          any("class_token" in w for w in (r.json or {}).get("warnings", [])), _short(r.json))
    # the import's options as query parameters
    r = upload(d, onnx_bytes("bert_tiny"), params="?dim=batch:batch_size&dim=seq=seq_len&name=bert-e2e")
    j = check_model("%s bert_tiny ?dim&name: upload" % label, r, 201)
    eq("%s bert_tiny ?dim: renamed hyperparameters" % label, sorted(j.get("hyperparameters", {})),
       ["batch_size", "seq_len"])
    eq("%s bert_tiny ?name" % label, j.get("name"), "bert-e2e")
    check("%s bert_tiny ?dim: another id" % label, j.get("id") != ids["bert_tiny"], j.get("id"))
    # GET: the metadata and the model
    tid = ids["tiny_cnn"]
    r = d.get("/v1/models/" + tid)
    eq("%s GET tiny_cnn: 200" % label, r.status, 200)
    g = r.json if isinstance(r.json, dict) else {}
    model = g.pop("model", None)
    eq("%s GET tiny_cnn: the upload's answer" % label, g, upload(d, onnx_bytes("tiny_cnn")).json)
    check("%s GET tiny_cnn: a model object" % label, isinstance(model, dict) and model.get("dnnsat_model") == 1,
          _short(model))
    # the JSON model: the same id (the id hashes the model, not the upload)
    r = upload(d, model, ctype="application/json")
    eq("%s JSON of GET's model: 200, same id" % label, (r.status, (r.json or {}).get("id")), (200, tid))
    m2 = dict(model or {})
    m2["name"] = "tiny-json-" + label
    j = check_model("%s JSON model renamed: upload" % label, upload(d, m2, ctype="application/json"), 201)
    eq("%s JSON model: source" % label, j.get("source"), "json")
    eq("%s JSON model: GET returns it" % label, (d.get("/v1/models/%s" % j.get("id")).json or {}).get("model"), m2)
    # queries by id equal queries with the model inline
    r_id = d.post("/v1/reductions", tiny_query({"id": tid}))
    a = check_reduction("%s reduction by id" % label, r_id, 201)
    r_in = d.post("/v1/reductions", tiny_query(model))
    b = check_reduction("%s reduction inline" % label, r_in, 200, cached=True)
    eq("%s reduction: same id" % label, a.get("id"), b.get("id"))
    for k in ("total", "feasible", "reduced_space"):
        eq("%s reduction: same %s" % (label, k), a.get(k), b.get(k))
    check("%s reduction: something fits, not all" % label, 0 < int(a.get("feasible", "0")) < 6, a.get("feasible"))
    est = {"model": {"id": tid}, "device": "t4", "config": {"batch": 64}}
    r1 = d.post("/v1/estimate", est)
    est["model"] = model
    r2 = d.post("/v1/estimate", est)
    eq("%s estimate by id == inline" % label, (r1.status, r1.json), (200, r2.json))
    chk = {"model": {"id": tid}, "device": "t4", "space": tiny_query(None)["space"], "config": {"batch": 64}}
    r = d.post("/v1/check", chk)
    eq("%s check by id: 200 feasible" % label, (r.status, (r.json or {}).get("feasible")), (200, True))
    # ids that name nothing
    unknown = "0" * 32
    r = d.post("/v1/reductions", tiny_query({"id": unknown}))
    problem("%s reduction, unknown id" % label, r, 422, path="$.model.id")
    check("%s unknown id: says how to upload" % label, "POST /v1/models" in (r.json or {}).get("detail", ""),
          _short(r.json))
    problem("%s estimate, unknown id" % label, d.post("/v1/estimate", {"model": {"id": unknown}}), 422,
            path="$.model.id")
    problem("%s reduction, malformed id" % label, d.post("/v1/reductions", tiny_query({"id": "x"})), 422,
            path="$.model.id")
    problem("%s reduction, id and more" % label, d.post("/v1/reductions", tiny_query({"id": tid, "preset": "x"})),
            422, path="$.model")
    problem("%s GET unknown model" % label, d.get("/v1/models/" + unknown), 404, instance="/v1/models/" + unknown)
    problem("%s GET malformed id" % label, d.get("/v1/models/nothex"), 404)
    return ids


def models_bad_bodies(d, label):
    """Every refused upload: a problem+json naming what is wrong."""
    bert = onnx_bytes("bert_tiny")
    r = upload(d, bert[:len(bert) // 2])
    if problem("%s truncated ONNX" % label, r, 422):
        check("%s truncated ONNX: says corrupt" % label, "ONNX" in r.json["detail"] and
              ("truncated" in r.json["detail"] or "corrupt" in r.json["detail"]), r.json["detail"])
        eq("%s truncated ONNX: type" % label, r.json["type"], "https://dnnsat.dev/problems/invalid-onnx")
    r = upload(d, bytes(range(256)) * 16)
    if problem("%s garbage" % label, r, 422):
        check("%s garbage: says corrupt ONNX" % label, "ONNX" in r.json["detail"], r.json["detail"])
    problem("%s empty ONNX body" % label, upload(d, b""), 400)
    r = upload(d, onnx_bytes("tiny_cnn"), ctype="text/plain")
    if problem("%s text/plain" % label, r, 415):
        check("%s text/plain: names the types" % label, "application/onnx" in r.json["detail"], r.json["detail"])
    problem("%s ONNX sent as JSON" % label, upload(d, onnx_bytes("tiny_cnn"), ctype="application/json"), 400,
            path="$")
    problem("%s JSON without dnnsat_model" % label, upload(d, {"layers": []}, ctype="application/json"), 422,
            path="$.dnnsat_model")
    bad = {"dnnsat_model": 1, "name": "bad", "inputs": [{"name": "x", "shape": [4, 8]}],
           "layers": [{"op": "no_such_op"}]}
    r = upload(d, bad, ctype="application/json")
    if problem("%s JSON model with an unknown op" % label, r, 422):
        check("%s unknown op: path into the upload" % label, r.json.get("path", "").startswith("$.layers[0]"),
              _short(r.json))
    problem("%s dim=x" % label, upload(d, onnx_bytes("tiny_cnn"), params="?dim=x"), 400, path="dim")
    problem("%s unknown=maybe" % label, upload(d, onnx_bytes("tiny_cnn"), params="?unknown=maybe"), 400,
            path="unknown")
    problem("%s ?colour=red" % label, upload(d, onnx_bytes("tiny_cnn"), params="?colour=red"), 400, path="colour")
    problem("%s dim on a JSON model" % label, upload(d, bad, ctype="application/json", params="?dim=a:b"), 400,
            path="dim")


def psql(sql):
    p = subprocess.run(["psql", DB_URL, "-v", "ON_ERROR_STOP=1", "-qAtc", sql], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=30)
    if p.returncode != 0:
        raise RuntimeError("psql: %s" % p.stderr.decode(errors="replace")[-300:])
    return p.stdout.decode().strip()


def phase_models(st):
    """Uploaded models (server/api_models.c): the four ONNX fixtures and JSON
    models, idempotent ids, GET, queries by {"id"} equal to the inline
    model's, every refused body; eviction from a small in-memory cache;
    with PostgreSQL: models across a restart and a second process, a row
    edited in the database never served; a reduction's row damaged while no
    process holds it in memory: computed again from its intact request, or
    404 reduction-damaged on every process when its request is damaged too."""
    d = Daemon("models", ["--workers", "2", "--max-model-bytes", "700000"]).start()
    models_common(d, "mem")
    models_bad_bodies(d, "mem")
    # too large: a declared length, and a chunked body growing over the limit
    # (the fixtures are at most 664 KB: under --max-model-bytes 700000)
    M = "/v1/models"
    r = d.raw(b"POST /v1/models HTTP/1.1\r\nHost: x\r\nContent-Type: application/onnx\r\n"
              b"Content-Length: 800000\r\n\r\n")
    d.count("POST", M, r)
    if problem("mem ONNX over --max-model-bytes (declared)", r, 413, M):
        check("mem 413 names --max-model-bytes", "--max-model-bytes" in r.json["detail"], r.json["detail"])
    for what, ctype, body, flag in (("ONNX", b"application/octet-stream", onnx_bytes("gpt_tiny") * 2,
                                     "--max-model-bytes"),
                                    ("JSON", b"application/json", b'{"pad": "' + b"x" * (1100 << 10) + b'"}',
                                     "--max-body")):
        data = b"POST /v1/models HTTP/1.1\r\nHost: x\r\nContent-Type: " + ctype + \
               b"\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        for i in range(0, len(body), 60000):
            c = body[i:i + 60000]
            data += b"%x\r\n" % len(c) + c + b"\r\n"
        data += b"0\r\n\r\n"
        r = d.raw(data)
        d.count("POST", M, r)
        if problem("mem %s chunked over %s" % (what, flag), r, 413, M):
            check("mem %s 413 names %s" % (what, flag), flag in r.json["detail"], r.json["detail"])
    _, ms = get_metrics(d)
    created = metric(ms, "dnnsat_http_requests_total", route="models_create", code="201")
    check("mem metrics: models_create 201s counted", (created or 0) >= 5, created)
    d.stop()
    # a small in-memory cache evicts the oldest model: 404 that says so
    e = Daemon("models-evict", ["--workers", "1", "--cache-bytes", "20000"]).start()
    first = check_model("evict: first upload", upload(e, onnx_bytes("tiny_cnn")), 201).get("id", "0" * 32)
    model = (e.get("/v1/models/" + first).json or {}).get("model") or {}
    for i in range(12):
        m = dict(model)
        m["name"] = "filler-%d" % i
        upload(e, m, ctype="application/json")
    r = e.get("/v1/models/" + first)
    if problem("evict: GET the evicted model", r, 404):
        check("evict: 404 says evicted", "evicted" in r.json["detail"], r.json["detail"])
    r = e.post("/v1/reductions", tiny_query({"id": first}))
    if problem("evict: reduction by the evicted id", r, 422, path="$.model.id"):
        check("evict: 422 says evicted", "evicted" in r.json["detail"], r.json["detail"])
    eq("evict: upload again: 201", upload(e, onnx_bytes("tiny_cnn")).status, 201)
    e.stop()
    if not DB_URL:
        check("models with PostgreSQL: DNNSAT_TEST_DATABASE_URL is set (run test_service.sh)", False)
        return
    args = ["--database-url", DB_URL, "--workers", "2"]
    a = Daemon("models-pg-a", args).start()
    ids = models_common(a, "pg")
    models_bad_bodies(a, "pg")
    a.stop()
    a.start()
    tid = ids.get("tiny_cnn", "0" * 32)
    r = a.get("/v1/models/" + tid)
    eq("pg restarted: GET tiny_cnn", (r.status, (r.json or {}).get("id")), (200, tid))
    eq("pg restarted: upload again: 200", upload(a, onnx_bytes("tiny_cnn")).status, 200)
    b = Daemon("models-pg-b", args).start()
    r = b.post("/v1/reductions", tiny_query({"id": ids.get("gpt_tiny", "0" * 32)}))
    eq("pg B: a reduction by A's gpt_tiny id", r.status in (200, 201), True)
    eq("pg B: GET A's bert_tiny", b.get("/v1/models/" + ids.get("bert_tiny", "")).status, 200)
    # a row edited behind the service's back fails its checksum: never served
    n = psql("UPDATE dnnsat_results SET request = replace(request, '\"out_channels\":16', "
             "'\"out_channels\":17') WHERE key = 'model:%s' RETURNING key" % tid)
    eq("pg: the row was edited", n, "model:" + tid)
    r = b.get("/v1/models/" + tid)
    problem("pg: the edited model is not served", r, 404)
    check("pg: the log names the corrupt entry", "checksum" in b.log() or "corrupt" in b.log(), b.log()[-400:])
    problem("pg: a reduction by the edited model's id", b.post("/v1/reductions", tiny_query({"id": tid})), 422,
            path="$.model.id")
    eq("pg: upload again: 201", upload(b, onnx_bytes("tiny_cnn")).status, 201)
    eq("pg: served again", a.get("/v1/models/" + tid).status, 200)
    # a reduction's row edited behind the service's back: the process that holds the result
    # in memory stores it again, so the id stays answerable by every replica (until
    # 2026-12-05 the row was deleted and never written again: 404 on B, and after a restart)
    q = resnet_query("8GiB")
    r = a.post("/v1/reductions", q)
    rid = (r.json or {}).get("id", "0" * 32)
    want = (r.json or {}).get("feasible")
    n = psql("UPDATE dnnsat_results SET result = replace(result, '\"exact\":true', '\"exact\":false') "
             "WHERE key = '%s' RETURNING key" % rid)
    eq("pg: the reduction's row was edited", n, rid)
    for how, resp in (("GET", lambda: a.get("/v1/reductions/" + rid)), ("POST", lambda: a.post("/v1/reductions", q))):
        r = resp()
        eq("pg: A answers the edited reduction from memory (%s)" % how, (r.status, (r.json or {}).get("feasible")),
           (200, want))
        eq("pg: the row is stored again after the %s" % how, psql("SELECT count(*) FROM dnnsat_results WHERE key = "
                                                                  "'%s' AND result LIKE '%%\"exact\":true%%'" % rid), "1")
        if how == "GET":
            psql("UPDATE dnnsat_results SET result = replace(result, '\"exact\":true', '\"exact\":false') "
                 "WHERE key = '%s'" % rid)
    r = b.get("/v1/reductions/" + rid)
    eq("pg: B reads the reduction A stored again", (r.status, (r.json or {}).get("feasible")), (200, want))
    a.stop()
    b.stop()
    # the row damaged while no process holds the reduction in memory (every process restarted):
    # until 2026-12-06 the log said it would be "computed again" and GET answered 404. Its request
    # still hashes to the id: computed again from it, never from the damaged answer, and stored
    c = Daemon("models-pg-c", args).start()
    edit_result = ("UPDATE dnnsat_results SET result = replace(result, '\"exact\":true', '\"exact\":false') "
                   "WHERE key = '%s' RETURNING key" % rid)
    eq("pg restart: the reduction's row was edited", psql(edit_result), rid)
    r = c.get("/v1/reductions/" + rid)
    eq("pg restart: the edited reduction is computed again", (r.status, (r.json or {}).get("feasible"),
                                                               (r.json or {}).get("cached")), (200, want, False))
    eq("pg restart: the row is final and exact again", psql("SELECT final FROM dnnsat_results WHERE key = '%s' AND "
                                                            "result LIKE '%%\"exact\":true%%'" % rid), "t")
    check("pg restart: the log says it is computed again", "computed again" in c.log(), c.log()[-400:])
    # the request damaged too: nothing to compute from; every read says so, on every process
    c.stop()
    eq("pg restart: the row's request and answer edited",
       psql("UPDATE dnnsat_results SET request = request || ' ', result = '{}' WHERE key = '%s' RETURNING key" % rid),
       rid)
    c.start()
    for how in ("first", "second"):
        r = c.get("/v1/reductions/" + rid)
        if problem("pg restart: GET the damaged reduction (%s)" % how, r, 404):
            eq("pg restart: 404 says damaged (%s)" % how, r.json.get("type"),
               "https://dnnsat.dev/problems/reduction-damaged")
            check("pg restart: 404 says to post the query again", "POST" in r.json.get("detail", ""), r.json)
    c.stop()
    c.start()
    r = c.get("/v1/reductions/%s/samples?n=2" % rid)
    if problem("pg restart: samples of the damaged reduction", r, 404):
        eq("pg restart: still damaged after a restart", r.json.get("type"),
           "https://dnnsat.dev/problems/reduction-damaged")
    r = c.post("/v1/reductions", q)
    eq("pg restart: posted again: computed", (r.status, (r.json or {}).get("feasible")), (201, want))
    eq("pg restart: read again after the post", c.get("/v1/reductions/" + rid).status, 200)
    c.stop()


def phase_blocked_read(st):
    """A reduction read from PostgreSQL runs on a database reader, not on an HTTP thread: with
    one HTTP thread and the results table locked, a read waits in the database while the same
    server answers /healthz on another connection; when the lock goes the read is answered.
    Before the readers, the read held the only HTTP thread until its statement timed out, so
    its access-log line came before that of /healthz; so did /metrics's (its row count) until
    /readyz and /metrics ran on the readers too. /readyz waits on no reader since the database
    prober (srv_ready.c): it is answered while both readers wait. Ordering only: no clock is asserted (the
    read's statement may wait 5 s for the lock, far more than the few steps below take)."""
    if not DB_URL:
        check("blocked read: DNNSAT_TEST_DATABASE_URL is set (run test_service.sh)", False)
        return
    access = os.path.join(WORK, "pg-blocked.access.log")
    d = Daemon("pg-blocked", ["--database-url", DB_URL, "--workers", "1", "--http-threads", "1",
                              "--db-pool", "2", "--access-log", access]).start()
    r = d.post("/v1/reductions", resnet_query("6GiB"))
    rid = (r.json or {}).get("id", "0" * 32)
    eq("blocked read: the reduction is stored", r.status in (200, 201), True)
    locker = subprocess.Popen(["psql", DB_URL, "-v", "ON_ERROR_STOP=1", "-qAt"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    got = {}

    def logged():
        with open(access) as f:
            text = f.read()
        return ("GET /healthz" in text, "GET /v1/reductions/%s\"" % rid in text, "GET /metrics" in text,
                "GET /readyz" in text)

    def read():
        got["r"] = d.get("/v1/reductions/%s" % rid, timeout=120)

    def metrics():
        got["m"] = d.get("/metrics", timeout=120)

    def readyz():
        got["z"] = d.get("/readyz", timeout=120)
    t = threading.Thread(target=read)
    tm = threading.Thread(target=metrics)
    tz = threading.Thread(target=readyz)
    try:
        locker.stdin.write("BEGIN; LOCK TABLE dnnsat_results IN ACCESS EXCLUSIVE MODE; SELECT 'locked';\n")
        locker.stdin.flush()
        eq("blocked read: the table is locked", locker.stdout.readline().strip(), "locked")
        t.start()
        # the read waits for the lock in the database (a hang guard of 60 s, not a measure)
        t0, waiting = time.time(), "0"
        while waiting == "0" and time.time() - t0 < 60 and t.is_alive():
            waiting = psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'dnnsat' "
                           "AND wait_event_type = 'Lock'")
        eq("blocked read: the read waits on the lock in the database", waiting, "1")
        # /metrics counts the table's rows (its first call): it waits on the lock too, on the
        # second reader (until 2026-12-05 on the HTTP thread, holding /healthz behind it)
        tm.start()
        t0 = time.time()
        while waiting == "1" and time.time() - t0 < 60 and tm.is_alive():
            waiting = psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'dnnsat' "
                           "AND wait_event_type = 'Lock'")
        eq("blocked read: /metrics waits on the lock in the database", waiting, "2")
        eq("blocked read: /healthz answered meanwhile", d.get("/healthz").status, 200)
        # /readyz reads the state the cache keeps (the prober pings, srv_ready.c): answered while
        # both readers wait (until this change it ran a ping on a reader, queued behind them)
        tz.start()
        t0 = time.time()
        while not (logged()[0] and logged()[3]) and time.time() - t0 < 60:
            time.sleep(0.05)
        eq("blocked read: when /healthz and /readyz are logged, the read and /metrics are not yet (no "
           "HTTP thread waits on the database, /readyz on no reader)", logged(), (True, False, False, True))
        tz.join(60)
        rz = got.get("z")
        eq("blocked read: /readyz says ready, database ok", (rz.status, (rz.json or {}).get("database"))
           if rz else None, (200, "ok"))
    finally:
        locker.stdin.write("COMMIT;\n")
        locker.stdin.close()
        locker.wait(timeout=60)
    for th in (t, tm, tz):
        if th.ident is not None:
            th.join(120)
    r = got.get("r")
    eq("blocked read: the read is answered after the lock", r.status if r else None, 200)
    r = got.get("m")
    eq("blocked read: /metrics is answered after the lock", r.status if r else None, 200)
    check("blocked read: the database never counted as down", "database down" not in d.log(), d.log()[-300:])
    rc, _ = d.stop()
    eq("blocked read: exit status 0", rc, 0)


def run_phase(name, fn, st):
    if ONLY and name not in ONLY:
        return
    t0 = time.time()
    try:
        fn(st)
    except Exception as ex:
        check("phase %s ran to the end" % name, False, "%s: %s | %s" % (
            type(ex).__name__, ex, traceback.format_exc().strip().splitlines()[-3:]))
    log("phase %s: %.2f s" % (name, time.time() - t0))


def main():
    t0 = time.time()
    # make's timeout or ^C: still stop the daemons (the finally below)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    if not os.access(DNNSATD, os.X_OK):
        check("dnnsatd is built", False, DNNSATD)
    else:
        st = {}
        try:
            run_phase("memory", phase_memory, st)
            if "mem" in st and "walk" in st:
                run_phase("concurrency", phase_concurrency, st)
            if "mem" in st:
                run_phase("metrics+shutdown", phase_metrics_and_shutdown, st)
            run_phase("limits", phase_limits, st)
            run_phase("pipeline", phase_pipeline, st)
            run_phase("z3", phase_z3, st)
            run_phase("models", phase_models, st)
            run_phase("postgres", phase_postgres, st)
            run_phase("blocked-read", phase_blocked_read, st)
        finally:
            for d in DAEMONS:
                d.kill()
            if failed == 0 and not VERBOSE:
                shutil.rmtree(WORK, ignore_errors=True)
            else:
                print("logs in %s" % WORK)
    log("total %.1f s" % (time.time() - t0))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
