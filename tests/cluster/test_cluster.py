#!/usr/bin/python3
"""tests/cluster/test_cluster.py - faults a cluster of dnnsatd replicas must
survive, on loopback: three REAL replicas ($top_builddir/dnnsatd) on one
throwaway PostgreSQL ($DNNSAT_TEST_DATABASE_URL, in $DNNSAT_TEST_PG_DIR:
tests/cluster/test_cluster.sh starts it), Debian's nginx in front of them
with the proxy rules of docker/nginx-proxy.conf, and one more dnnsatd with
no database as the single-process reference every answer is compared with.

  1. pages: a reduction created on one replica; its cursor walk, page by
     page on replica 1, 2, 3 and nginx in turn, offsets, samples, maxima and
     checks on the others: the same answers as the reference;
  2. kill -9: a long count (a reduction whose deadline cuts it short: 202,
     progress saved to PostgreSQL every slice) is continued by a GET on one
     replica, which is killed with SIGKILL while it counts; another replica
     continues from the saved progress (more seconds than before, not reset)
     and the final count equals the reference's;
  3. PostgreSQL stopped and started again while a replica counts: the count
     finishes with the reference's answer, and another replica reads the
     final result from the database;
  2b. distributed count (issue 18): three more replicas with --distribute
     (one worker each, a 3 s job lease) cut a long count into jobs in
     PostgreSQL; "distributed": the count they finish equals the
     reference's, every job was committed exactly once (commits = 1,
     attempts recorded), by more than one replica; "kill_distributed": one
     of them is killed with SIGKILL while it holds a claimed job, the
     others take it over when its lease expires, and the final count
     equals the reference's, no job committed twice or lost; "refused":
     done jobs' data corrupted in the database while one job is held back
     (its not_before an hour ahead): a replica that follows the count
     refuses each one once (not at every poll) and grafts its count alone,
     and the final count equals the reference's;
  4. mixed load through nginx (checks, reduction reads, pages, new
     reductions) for $DNNSAT_CLUSTER_SECONDS (default 60) while a replica is
     restarted (SIGTERM, then started again on its port) every
     $DNNSAT_CLUSTER_RESTART_EVERY seconds (default 15): no wrong answer
     (every 200/201 compared with the reference's, computed beforehand), no
     5xx but the documented 503 problems with Retry-After, every restart a
     clean exit, and the resident memory of the replica that is never
     restarted flat from the end of the warm-up (a third of the run) to the
     end: at most 10% + 16 MiB more (not compared for an AddressSanitizer
     build, whose quarantine grows: LeakSanitizer checks it at each exit).

Nothing here asserts a duration: every wait polls, with generous bounds that
only catch hangs (HTTP_TIMEOUT per request, $DNNSAT_CLUSTER_LIMIT for the
whole run, SIGALRM). Every process started here is stopped, and the work
directory removed, on any exit. Ports are free ones chosen at start; a
replica keeps its port across restarts, as nginx's upstream names it.

Python 3 standard library only. Prints one line per failed check, NOTE
lines with the figures, and "N passed, M failed"; exit status 1 on any
failure. DNNSAT_CLUSTER_PHASES="pages kill" runs only the phases named
(pages, kill, distributed, kill_distributed, refused, postgres, load).
"""
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.environ.get("top_srcdir", "."), "tests", "integration"))
import harness  # noqa: E402  (the pass/fail tally the black-box tests share)
sys.path.insert(0, os.path.join(os.environ.get("top_srcdir", "."), "tests"))
from first_line import first_line  # noqa: E402

TOP_SRCDIR = os.environ.get("top_srcdir", ".")
TOP_BUILDDIR = os.environ.get("top_builddir", ".")
DNNSATD = os.path.join(TOP_BUILDDIR, "dnnsatd")
PG_TMP = os.path.join(TOP_SRCDIR, "tests", "pg", "pg_tmp.sh")
PROXY_CONF = os.path.abspath(os.path.join(TOP_SRCDIR, "docker", "nginx-proxy.conf"))
DB_URL = os.environ.get("DNNSAT_TEST_DATABASE_URL", "")
PG_DIR = os.environ.get("DNNSAT_TEST_PG_DIR", "")
SECONDS = float(os.environ.get("DNNSAT_CLUSTER_SECONDS", "60"))
RESTART_EVERY = float(os.environ.get("DNNSAT_CLUSTER_RESTART_EVERY", "15"))
LIMIT = int(os.environ.get("DNNSAT_CLUSTER_LIMIT", str(int(SECONDS) + 1500)))
ONLY = set(os.environ.get("DNNSAT_CLUSTER_PHASES", "").split())
NGINX = os.environ.get("DNNSAT_TEST_NGINX", "/usr/sbin/nginx")
HTTP_TIMEOUT = 120          # seconds: a request that takes longer is a hang
START_TIMEOUT = 30          # seconds for a replica to print where it listens
STOP_TIMEOUT = 60           # seconds a SIGTERM'd replica may take to exit (a hang guard)
CLIENTS = 4                 # load threads of phase 4
# the replicas' settings: solver deadlines far above what a busy machine
# needs to compile a query (a 503 for a slow compile is not under test), and
# the progress of a count saved after every one-second slice, so that a
# kill -9 loses at most a slice
REPLICA_ARGS = ["--max-deadline", "120", "--compile-grace", "60",
                "--progress-interval", "0", "--access-log", "off"]

TALLY = harness.Tally("cluster")
WORK = tempfile.mkdtemp(prefix="dnnsat-cluster.")
PROCS = []                  # every Popen started here, stopped at exit


def check(name, ok, detail=""):
    """One check of the tally (tests/integration/harness.py); a failure
    prints its name and detail."""
    d = str(detail).replace("\n", " ")[:600]
    return TALLY.check(bool(ok), name + (": " + d if d and not ok else ""))


def eq(name, got, want):
    return check(name, got == want, "got %.300r, want %.300r" % (got, want))


def note(msg):
    print("NOTE %s" % msg, flush=True)


def load(rel):
    with open(os.path.join(TOP_SRCDIR, rel)) as f:
        return json.load(f)


def sanitized():
    """Whether dnnsatd is an AddressSanitizer build (scripts/test.sh's first
    pass): its quarantine keeps freed memory resident and grows for minutes,
    so its RSS says nothing about leaks (LeakSanitizer does, at each exit)."""
    try:
        with open(DNNSATD, "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ------------------------------------------------------------------ HTTP --
class Resp:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers          # lower-case name -> value
        self.body = body
        try:
            self.json = json.loads(body.decode("utf-8")) if body else None
        except ValueError:
            self.json = None

    def __repr__(self):
        return "<%d %s>" % (self.status, self.body[:200])


def request(port, method, path, body=None, timeout=HTTP_TIMEOUT):
    """One request on a fresh connection; a Resp, or status 0 with the
    error as body when the connection failed."""
    h = {}
    if body is not None:
        body = json.dumps(body).encode("utf-8")
        h["Content-Type"] = "application/json"
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        return Resp(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
    except (OSError, http.client.HTTPException) as e:
        return Resp(0, {}, repr(e).encode())
    finally:
        c.close()


class Endpoint:
    """Something that answers HTTP on a loopback port: a replica or nginx."""
    name = "?"
    port = 0

    def get(self, path, **kw):
        return request(self.port, "GET", path, **kw)

    def post(self, path, body, **kw):
        return request(self.port, "POST", path, body, **kw)

    def wait_healthy(self, seconds=START_TIMEOUT):
        t0 = time.time()
        while time.time() - t0 < seconds:
            if self.get("/healthz", timeout=5).status == 200:
                return True
            time.sleep(0.1)
        return False


# -------------------------------------------------------------- replicas --
def daemon_path():
    """dnnsatd through a symlink, so that the processes are not named
    "dnnsatd": whatever stops dnnsatd processes by name on a shared machine
    leaves this test's own alone (tests/e2e does the same)."""
    link = os.path.join(WORK, "bin", "cluster-replica")
    if not os.path.exists(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(os.path.abspath(DNNSATD), link)
    return link


class Replica(Endpoint):
    """One dnnsatd process on a fixed loopback port (kept across restarts)."""

    def __init__(self, name, db=True, workers=2, extra=()):
        self.name = name
        self.db = db
        self.workers = workers
        self.extra = list(extra)
        self.port = free_port()
        self.proc = None
        self.errpath = os.path.join(WORK, name + ".stderr")

    def start(self):
        env = dict(os.environ)
        for k in list(env):
            if k.startswith("DNNSAT_") and k not in ("DNNSAT_DATA_DIR", "DNNSAT_WEB_DIR"):
                del env[k]
        if "DNNSAT_DATA_DIR" not in env:
            env["DNNSAT_DATA_DIR"] = os.path.abspath(os.path.join(TOP_SRCDIR, "schemas"))
        args = [daemon_path(), "--listen", "127.0.0.1:%d" % self.port, "--workers", str(self.workers)] + REPLICA_ARGS + \
            self.extra
        if self.db:
            args += ["--database-url", DB_URL]
        # the port was free a moment ago, or is this replica's own from its
        # previous life: a few tries cover a race with another program
        for _ in range(10):
            err = open(self.errpath, "ab")
            self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err,
                                         stdin=subprocess.DEVNULL, env=env)
            err.close()
            PROCS.append(self.proc)
            if self._listening():
                return self
            self.kill()
            time.sleep(0.5)
        raise RuntimeError("%s did not start on port %d: %s" % (self.name, self.port, self.log()[-600:]))

    def _listening(self):
        line = first_line(self.proc, START_TIMEOUT)
        return b"listening on http://127.0.0.1:%d/" % self.port in line

    def log(self):
        try:
            with open(self.errpath, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self, sig=signal.SIGTERM):
        """Signals the replica and waits; its exit status (None on a hang)."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def rss_kib(self):
        try:
            with open("/proc/%d/status" % self.proc.pid) as f:
                m = re.search(r"^VmRSS:\s+(\d+)", f.read(), re.M)
            return int(m.group(1)) if m else None
        except OSError:
            return None


# ----------------------------------------------------------------- nginx --
class Nginx(Endpoint):
    """Debian's nginx as the current user, everything in its own directory:
    config, pid, logs and temporary files; upstream the replicas."""

    def __init__(self, replicas):
        self.name = "nginx"
        self.port = free_port()
        self.dir = os.path.join(WORK, "nginx")
        self.proc = None
        os.makedirs(self.dir)
        user = ""
        if os.getuid() == 0:    # else workers would run as nobody, locked out of self.dir
            user = "user root root;"
        servers = "".join("\t\tserver 127.0.0.1:%d max_fails=1 fail_timeout=2s;\n" % r.port for r in replicas)
        conf = """# written by tests/cluster/test_cluster.py
%(user)s
daemon off;
worker_processes 2;
pid %(d)s/nginx.pid;
error_log %(d)s/error.log warn;
events { worker_connections 512; }
http {
	access_log %(d)s/access.log;
	client_body_temp_path %(d)s/body;
	proxy_temp_path %(d)s/proxy;
	fastcgi_temp_path %(d)s/fastcgi;
	uwsgi_temp_path %(d)s/uwsgi;
	scgi_temp_path %(d)s/scgi;
	upstream dnnsat {
%(servers)s		keepalive 16;
		keepalive_timeout 20s;
	}
	server {
		listen 127.0.0.1:%(port)d;
		include %(proxy)s;
	}
}
""" % {"user": user, "d": self.dir, "servers": servers, "port": self.port, "proxy": PROXY_CONF}
        self.conf = os.path.join(self.dir, "nginx.conf")
        with open(self.conf, "w") as f:
            f.write(conf)

    def start(self):
        out = open(os.path.join(self.dir, "stderr"), "ab")
        self.proc = subprocess.Popen([NGINX, "-p", self.dir, "-c", self.conf, "-e", os.path.join(self.dir, "error.log")],
                                     stdout=out, stderr=out, stdin=subprocess.DEVNULL)
        out.close()
        PROCS.append(self.proc)
        if not self.wait_healthy():
            raise RuntimeError("nginx did not answer /healthz: %s" % self.log()[-600:])
        return self

    def log(self):
        text = ""
        for n in ("stderr", "error.log"):
            try:
                with open(os.path.join(self.dir, n), "rb") as f:
                    text += f.read().decode("utf-8", "replace")
            except OSError:
                pass
        return text

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)       # graceful
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# --------------------------------------------------------------- queries --
SPACE_RESNET = load("examples/spaces/resnet.json")
WORKLOAD = {"mode": "training", "optimizer": "adam", "dtype": "fp32", "tf32": False}
MODEL_CNN5 = load("examples/models/cnn5.json")
SPACE_CNN5 = load("examples/spaces/cnn5.json")
MLP_QUERY = load("examples/api/mlp-query.json")
CHECK_EXAMPLE = load("examples/api/check.json")


def resnet_query(memory):
    return {"model": "resnet50", "space": SPACE_RESNET, "device": "a100-40gb",
            "workload": WORKLOAD, "budgets": {"memory": memory}, "timeout": 60}


def cnn5_query(device, timeout):
    """cnn5's space of 334M configurations under 2.5 GiB: an exact count of
    about 7 s on one quiet core (2 GiB did as much until the A100s' CUDA
    context became 1790 MiB; 0.5 s now), the long count of phases 2 and 3
    (one per device, so that each is new)."""
    return {"model": MODEL_CNN5, "space": SPACE_CNN5, "device": device,
            "budgets": {"memory": "2.5GiB"}, "timeout": timeout}


def mlp_query(limit):
    q = json.loads(json.dumps(MLP_QUERY))
    q["constraints"] = ["hidden * depth <= %d" % limit]
    q["timeout"] = 60
    return q


def finish_count(ends, rid, name, tries=40):
    """GETs the reduction with ?timeout=20 on each endpoint in turn until it
    is exact (200); that reply's JSON, or {} after `tries` (a hang guard)."""
    last = None
    for i in range(tries):
        r = ends[i % len(ends)].get("/v1/reductions/%s?timeout=20" % rid)
        last = r
        if r.status == 200:
            return r.json or {}
        if r.status not in (202, 503, 429):
            break
        if r.status != 202:
            time.sleep(1)
    check("%s: the count finishes" % name, False, last)
    return {}


def reference_count(ref, q):
    """The single-process answer of a long count: (id, exact JSON)."""
    r = ref.post("/v1/reductions", dict(q, timeout=60))
    if r.status in (200, 201):
        return (r.json or {}).get("id"), r.json or {}
    rid = (r.json or {}).get("id")
    if r.status != 202 or not rid:
        raise RuntimeError("reference count: %r" % r)
    return rid, finish_count([ref], rid, "reference")


class Background:
    """reference_count(ref, q) on a thread of its own, started at once: the
    two long reference counts run side by side (the reference has two
    workers) while the first phase runs. get() waits for it."""

    def __init__(self, ref, q):
        self.out = None
        self.err = None
        self.t = threading.Thread(target=self._run, args=(ref, q), daemon=True)
        self.t.start()

    def _run(self, ref, q):
        try:
            self.out = reference_count(ref, q)
        except Exception as e:      # handed to get()'s caller
            self.err = e

    def get(self):
        self.t.join(HTTP_TIMEOUT * 45)
        if self.out is None:
            raise RuntimeError("reference count: %s" % (self.err or "did not finish"))
        return self.out


def same_result(name, got, want):
    for f in ("id", "total", "feasible", "reduced_space"):
        eq("%s: %s as the single process" % (name, f), got.get(f), want.get(f))


def walk(end_list, rid, limit):
    """A cursor walk, page i on end_list[i % len]: [(items, next_cursor)]."""
    pages, cursor = [], None
    for i in range(100000):
        e = end_list[i % len(end_list)]
        path = "/v1/reductions/%s/configurations?limit=%d" % (rid, limit)
        if cursor:
            path += "&cursor=" + cursor
        r = e.get(path)
        if r.status != 200:
            check("cursor walk: page %d on %s" % (i, e.name), False, r)
            break
        pages.append((r.json.get("items"), r.json.get("next_cursor")))
        cursor = r.json.get("next_cursor")
        if not cursor:
            break
    return pages


# ============================================================== phases ==
def phase_pages(ref, reps, lb):
    """1. What one replica created, every other replica and nginx continue."""
    q = resnet_query("6GiB")
    want = ref.post("/v1/reductions", q).json or {}
    r = reps[0].post("/v1/reductions", q)
    check("pages: created on replica 1: 201 or 200", r.status in (200, 201), r)
    same_result("pages: replica 1's reduction", r.json or {}, want)
    rid = want.get("id")
    for e in reps[1:] + [lb]:
        r = e.get("/v1/reductions/%s" % rid)
        eq("pages: GET on %s: 200" % e.name, r.status, 200)
        same_result("pages: GET on %s" % e.name, r.json or {}, want)
    ref_pages = walk([ref], rid, 300)
    got = walk([reps[0], reps[1], reps[2], lb], rid, 300)
    eq("pages: cursor walk across replicas and nginx: same pages as the single process", got, ref_pages)
    eq("pages: the walk has every feasible configuration", sum(len(p[0]) for p in got), int(want.get("feasible", -1)))
    # a cursor handed out by one replica, read on each of the others
    first = reps[1].get("/v1/reductions/%s/configurations?limit=50" % rid).json or {}
    cur = first.get("next_cursor")
    want_next = ref.get("/v1/reductions/%s/configurations?limit=50&cursor=%s" % (rid, cur)).json
    for e in (reps[0], reps[2], lb):
        r = e.get("/v1/reductions/%s/configurations?limit=50&cursor=%s" % (rid, cur))
        eq("pages: replica 2's cursor continued on %s" % e.name, (r.status, r.json), (200, want_next))
    for k in (0, 777, int(want.get("feasible", 1)) - 10):
        path = "/v1/reductions/%s/configurations?limit=40&offset=%d" % (rid, k)
        eq("pages: offset %d on replica 3 as the single process" % k, reps[2].get(path).json, ref.get(path).json)
        eq("pages: offset %d through nginx as the single process" % k, lb.get(path).json, ref.get(path).json)
    for path in ("/v1/reductions/%s/samples?n=20&seed=7" % rid,
                 "/v1/reductions/%s/max?param=batch_size&per=block" % rid,
                 "/v1/reductions/%s/explain?param=batch_size&value=512" % rid):
        eq("pages: %s on replica 2 as the single process" % path.split("/")[4][:12], reps[1].get(path).json,
           ref.get(path).json)
    return rid


KILL_QUERY = cnn5_query("a100-40gb", 2)
PG_QUERY = cnn5_query("a100-80gb", 2)


def phase_kill(ref, reps, lb, reference):
    """2. kill -9 of the replica counting; another one continues the count."""
    q = KILL_QUERY
    rid, want = reference.get()
    r = reps[0].post("/v1/reductions", q)
    eq("kill: the long count is cut by its 2 s deadline: 202", r.status, 202)
    j0 = r.json or {}
    eq("kill: same id on a replica", j0.get("id"), rid)
    holder = {}

    def continue_on_a():
        holder["r"] = reps[0].get("/v1/reductions/%s?timeout=100" % rid)
    t = threading.Thread(target=continue_on_a, daemon=True)
    t.start()
    # let replica 1 count (and save) a few one-second slices; then SIGKILL
    # it mid-count
    t.join(3)
    mid = t.is_alive()
    check("kill: replica 1 was still counting when killed (else pick a longer count)", mid, holder.get("r"))
    reps[0].kill()
    t.join(30)
    # the next replica continues from what replica 1 saved
    r = reps[1].get("/v1/reductions/%s?timeout=1" % rid)
    check("kill: replica 2 continues it (202, or 200 if that second finished it)", r.status in (200, 202), r)
    j1 = r.json or {}
    if j0.get("seconds") is not None and j1.get("seconds") is not None:
        check("kill: replica 2 starts from replica 1's saved progress (seconds not reset, more than the POST's)",
              j1["seconds"] > j0["seconds"], (j0.get("seconds"), j1.get("seconds")))
    if r.status == 202:
        check("kill: bounds no looser than before the kill",
              int(j1["feasible_lower"]) >= int(j0["feasible_lower"]) and
              int(j1["feasible_upper"]) <= int(j0["feasible_upper"]), (j0, j1))
    got = finish_count([reps[1], reps[2], lb], rid, "kill")
    same_result("kill: the count continued after kill -9", got, want)
    for e in reps[1:]:
        check("kill: %s ignored no saved progress" % e.name, "saved progress ignored" not in e.log(),
              [ln for ln in e.log().splitlines() if "saved progress ignored" in ln][:1])
    reps[0].start()
    check("kill: replica 1 starts again", reps[0].wait_healthy(), reps[0].log()[-300:])


# the distributed count's replicas: one worker each (the 2-core machine),
# a job lease of 3 s so that a killed replica's job moves on quickly
DIST_ARGS = ["--distribute", "--job-lease", "3"]
DIST_QUERY = cnn5_query("a100-pcie-40gb", 2)
KILL_DIST_QUERY = cnn5_query("a100-pcie-80gb", 2)
REFUSED_QUERY = cnn5_query("h100-sxm-80gb", 2)


def psql(sql):
    """Rows of one SQL query on the test's PostgreSQL (psql -At: "|"
    between columns)."""
    p = subprocess.run(["psql", DB_URL, "-q", "-v", "ON_ERROR_STOP=1", "-Atc", sql], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    if p.returncode != 0:
        raise RuntimeError("psql: %s" % p.stderr.decode(errors="replace")[-300:])
    return [ln.split("|") for ln in p.stdout.decode().splitlines() if ln]


def start_dist():
    return [Replica("dist%d" % (i + 1), workers=1, extra=DIST_ARGS).start() for i in range(3)]


def owner_pid(owner):
    """The process id in a job's owner (host:pid:start:claimer)."""
    parts = (owner or "").split(":")
    return int(parts[1]) if len(parts) >= 4 and parts[1].isdigit() else -1


def finished_jobs(rid):
    """The finished set's record of its deleted jobs (cache_jobs_finish):
    {job: (state, attempts, commits, owner)}, polled a while (the final
    result is stored, then the jobs deleted), {} when it never finishes."""
    for _ in range(600):        # a hang guard: 30 s
        rows = psql("SELECT replace(jobs_log, E'\\n', ';') FROM dnnsat_job_sets WHERE key = '%s' "
                    "AND finished_at IS NOT NULL AND jobs_log IS NOT NULL" % rid)
        if rows:
            log = {}
            for line in "|".join(rows[0]).split(";"):
                job, state, attempts, commits, owner = line.split(" ", 4)
                log[int(job)] = (state, int(attempts), int(commits), owner)
            return log
        time.sleep(0.05)
    return {}


def check_jobs(name, rid):
    """Every job of the set done and committed exactly once (the record
    the finished set keeps), and the job rows deleted."""
    log = finished_jobs(rid)
    n = len(log)
    njobs = psql("SELECT njobs FROM dnnsat_job_sets WHERE key = '%s'" % rid)
    check("%s: the count was cut into jobs" % name, n > 1 and njobs and int(njobs[0][0]) == n, (n, njobs))
    eq("%s: every job done" % name, sum(1 for v in log.values() if v[0] == "done"), n)
    commits = [v[2] for v in log.values()] or [0]
    eq("%s: every job committed exactly once (min, max commits)" % name, (min(commits), max(commits)), (1, 1))
    mina = min([v[1] for v in log.values()] or [0])
    check("%s: every job's claims recorded (attempts >= 1)" % name, mina >= 1, mina)
    left = psql("SELECT count(*) FROM dnnsat_jobs WHERE key = '%s'" % rid)[0][0]
    eq("%s: the job rows are deleted once the result is final" % name, left, "0")
    owners = len(set(v[3] for v in log.values()))
    note("%s: %d jobs, counted by %d claimers" % (name, n, owners))
    return owners, log


def phase_distributed(ref, reference):
    """2b. A count cut into jobs that three --distribute replicas count."""
    rid, want = reference.get()
    dist = start_dist()
    try:
        r = dist[0].post("/v1/reductions", DIST_QUERY)
        eq("distributed: the long count is cut by its 2 s deadline: 202", r.status, 202)
        eq("distributed: same id as the reference", (r.json or {}).get("id"), rid)
        # another replica answers the progress: the tree's bounds with the
        # done jobs' counts in place, around the reference's count
        r = dist[1].get("/v1/reductions/%s?timeout=1" % rid)
        j = r.json or {}
        if r.status == 202:
            check("distributed: replica 2's progress bounds hold the count",
                  int(j["feasible_lower"]) <= int(want["feasible"]) <= int(j["feasible_upper"]), j)
        else:
            eq("distributed: replica 2 answers the progress (202) or the count (200)", r.status, 200)
        got = finish_count([dist[1], dist[2], dist[0]], rid, "distributed")
        same_result("distributed: the count of three replicas", got, want)
        owners, _ = check_jobs("distributed", rid)
        check("distributed: jobs counted on more than one replica", owners > 1, owners)
        r = dist[2].get("/v1/reductions/%s" % rid)
        eq("distributed: the final result stored for every replica: 200", r.status, 200)
        same_result("distributed: read again", r.json or {}, want)
    finally:
        for e in dist:
            eq("distributed: %s exits 0 on SIGTERM" % e.name, e.stop(), 0)


def phase_kill_distributed(ref, reference):
    """2c. kill -9 of a replica holding a claimed job of a distributed
    count: the lease expires, another replica counts the job, the final
    count is the reference's, no job committed twice or lost."""
    rid, want = reference.get()
    dist = start_dist()
    victim = dist[1]
    try:
        r = dist[0].post("/v1/reductions", KILL_DIST_QUERY)
        eq("kill_distributed: the long count is cut by its 2 s deadline: 202", r.status, 202)
        held = []
        # The victim is frozen before each look, so that a job seen claimed
        # is still claimed when it dies (between a look and a kill it could
        # commit the job, and a look that saw it claimed would name a done
        # job: the flake CI met once); frozen holding nothing, it goes on and
        # is looked at again.
        for _ in range(800):        # a hang guard: the claimers take jobs at once
            victim.proc.send_signal(signal.SIGSTOP)
            held = [int(j) for j, o in psql("SELECT job, owner FROM dnnsat_jobs WHERE key = '%s' AND "
                                            "state = 'claimed'" % rid) if owner_pid(o) == victim.proc.pid]
            if held:
                break
            victim.proc.send_signal(signal.SIGCONT)
            time.sleep(0.02)
        victim.kill()
        check("kill_distributed: the killed replica held a claimed job", held, held)
        note("kill_distributed: replica %s killed holding jobs %s" % (victim.name, held))
        got = finish_count([dist[0], dist[2]], rid, "kill_distributed")
        same_result("kill_distributed: the count after kill -9", got, want)
        _, log = check_jobs("kill_distributed", rid)
        for j in held:
            row = log.get(j, ("missing", 0, 0, ""))
            check("kill_distributed: job %d claimed again after the lease expired" % j, row[1] >= 2, row)
            check("kill_distributed: job %d committed by another replica" % j,
                  owner_pid(row[3]) != victim.proc.pid and row[0] == "done", row)
    finally:
        for e in (dist[0], dist[2]):
            eq("kill_distributed: %s exits 0 on SIGTERM" % e.name, e.stop(), 0)


def phase_refused(ref, reference):
    """2d. Done jobs whose data a replica refuses (corrupted in the
    database): the replica that follows the count refuses each one once and
    grafts its count alone (it polled and refused them again 4 times a
    second before), and the final count is the reference's. One job is held
    back (its backoff moved an hour ahead) until the others are done and
    corrupted, so that the count is still running when the follower reads."""
    rid, want = reference.get()
    dist = start_dist()
    held = None
    try:
        post = {}
        t = threading.Thread(target=lambda: post.update(r=dist[0].post("/v1/reductions", REFUSED_QUERY)),
                             daemon=True)
        t.start()
        for _ in range(1200):       # a hang guard: the set is published after a 1 s slice
            rows = psql("UPDATE dnnsat_jobs SET state = 'open', owner = NULL, lease_until = NULL, "
                        "not_before = now() + interval '1 hour' WHERE key = '%s' AND job = (SELECT max(job) "
                        "FROM dnnsat_jobs WHERE key = '%s') AND state <> 'done' RETURNING job" % (rid, rid))
            if rows:
                held = int(rows[0][0])
                break
            time.sleep(0.025)
        t.join(HTTP_TIMEOUT)
        eq("refused: the long count is cut by its 2 s deadline: 202", getattr(post.get("r"), "status", None), 202)
        check("refused: the set's last job held back before it was done", held is not None, held)
        if held is None:
            return
        for _ in range(1200):       # a hang guard: the others are counted in seconds
            left = psql("SELECT count(*) FROM dnnsat_jobs WHERE key = '%s' AND state <> 'done'" % rid)[0][0]
            if left == "1":
                break
            time.sleep(0.05)
        eq("refused: every job but the held one done", left, "1")
        bad = psql("UPDATE dnnsat_jobs SET data = '\\x00'::bytea WHERE key = '%s' AND state = 'done' "
                   "AND data IS NOT NULL RETURNING job" % rid)
        check("refused: done jobs' data corrupted", len(bad) > 1, len(bad))
        # a replica that has not read this count follows it for 2 s (8 polls)
        r = dist[2].get("/v1/reductions/%s?timeout=2" % rid)
        eq("refused: the count without its held job is unfinished: 202", r.status, 202)
        refused = len(re.findall(r"reduction %s: a done job's data is refused" % rid, dist[2].log()))
        eq("refused: each corrupted job's data refused once, not at every poll", refused, len(bad))
        psql("UPDATE dnnsat_jobs SET not_before = NULL WHERE key = '%s' AND job = %d" % (rid, held))
        got = finish_count([dist[2], dist[1], dist[0]], rid, "refused")
        same_result("refused: the count with the corrupted jobs' counts alone", got, want)
        check_jobs("refused", rid)
    finally:
        for e in dist:
            eq("refused: %s exits 0 on SIGTERM" % e.name, e.stop(), 0)


def pg_tmp(cmd):
    p = subprocess.run(["sh", PG_TMP, cmd, PG_DIR], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if p.returncode != 0:
        raise RuntimeError("pg_tmp.sh %s: %s" % (cmd, p.stderr.decode(errors="replace")[-500:]))


def wait_database(e, want, seconds=60):
    """Polls e's /readyz until its database is `want`; True when it is."""
    t0 = time.time()
    while time.time() - t0 < seconds:
        if ((e.get("/readyz", timeout=5).json or {}).get("database")) == want:
            return True
        time.sleep(0.1)
    return False


def phase_postgres(ref, reps, lb, reference):
    """3. PostgreSQL stopped and started while a replica counts."""
    q = PG_QUERY
    rid, want = reference.get()
    b = reps[1]
    r = b.post("/v1/reductions", q)
    eq("postgres: the long count is cut by its 2 s deadline: 202", r.status, 202)
    holder = {}

    def count_on_b():
        holder["r"] = b.get("/v1/reductions/%s?timeout=100" % rid)
    t = threading.Thread(target=count_on_b, daemon=True)
    t.start()
    t.join(1)
    pg_tmp("stop-server")
    check("postgres: replica 2 sees the database down", wait_database(b, "down"), b.get("/readyz"))
    check("postgres: replica 2 was still counting when the database stopped", t.is_alive(), holder.get("r"))
    pg_tmp("start-server")
    check("postgres: replica 2 sees the database back", wait_database(b, "ok"), b.get("/readyz"))
    t.join(HTTP_TIMEOUT)
    r = holder.get("r")
    check("postgres: the count went on through the outage (200 or 202)", r is not None and r.status in (200, 202), r)
    got = (r.json or {}) if r is not None and r.status == 200 else finish_count([b], rid, "postgres")
    same_result("postgres: the count across the outage", got, want)
    # the final result reached the database: another replica reads it
    # (written back if it was computed while the database was away)
    got = finish_count([reps[2]], rid, "postgres (replica 3)")
    same_result("postgres: replica 3 reads the finished count", got, want)
    check("postgres: replica 2's log says the database went and came back",
          "database down" in b.log() and "database back" in b.log(), b.log()[-400:])


# ----------------------------------------------------------------- load --
class Mix:
    """The requests of phase 4 and their known answers, computed on the
    single-process reference before the load starts."""

    def __init__(self, ref, rid6):
        rng = random.Random(18)
        self.ops = []           # (kind, method, path, body, key of the answer, want)
        for gib in range(2, 14):
            q = resnet_query("%dGiB" % gib)
            self._add(ref, "new reduction", "POST", "/v1/reductions", q, "feasible")
        for limit in (1024, 2048, 4096, 8192, 12288):
            self._add(ref, "new reduction", "POST", "/v1/reductions", mlp_query(limit), "feasible")
        self._add(ref, "read", "GET", "/v1/reductions/%s" % rid6, None, "feasible")
        for _ in range(30):
            cfg = {k: self._draw(rng, p) for k, p in SPACE_RESNET.items()}
            self._add(ref, "check", "POST", "/v1/reductions/%s/check" % rid6, {"config": cfg}, "feasible")
        self._add(ref, "check", "POST", "/v1/check", CHECK_EXAMPLE, "feasible")
        for k in range(0, 3500, 250):
            self._add(ref, "page", "GET", "/v1/reductions/%s/configurations?limit=50&offset=%d" % (rid6, k),
                      None, "items")
        self.kinds = sorted(set(op[0] for op in self.ops))

    @staticmethod
    def _draw(rng, p):
        t, v = p["_type"], p["_value"]
        if t == "choice":
            return rng.choice(v)
        if t == "randint":
            return rng.randrange(v[0], v[1])
        if t == "quniform":
            return int(round(rng.uniform(v[0], v[1]) / v[2]) * v[2])
        return v[0]

    def _add(self, ref, kind, method, path, body, key):
        r = request(ref.port, method, path, body)
        if r.status not in (200, 201) or not isinstance(r.json, dict) or key not in r.json:
            raise RuntimeError("reference answer for %s %s: %r" % (method, path, r))
        self.ops.append((kind, method, path, body, key, r.json[key]))


def documented_503(r):
    """A 503 the API documents: problem+json with a known type and Retry-After."""
    ctype = r.headers.get("content-type", "")
    return (r.status == 503 and ctype.startswith("application/problem+json") and
            (r.headers.get("retry-after") or "").isdigit() and
            isinstance(r.json, dict) and str(r.json.get("type", "")).startswith("https://dnnsat.dev/problems/"))


def phase_load(ref, reps, lb, rid6):
    """4. Mixed load through nginx while replicas 2 and 3 restart in turn."""
    mix = Mix(ref, rid6)
    stop = threading.Event()
    stats = {"requests": 0, "wrong": 0, "bad5xx": 0, "503": 0, "429": 0, "202": 0, "restarts": 0,
             "bad_restarts": 0}
    per_kind = dict((k, 0) for k in mix.kinds)
    kinds503 = {}               # problem type of each documented 503 -> count
    examples = []
    slock = threading.Lock()

    def client(seed):
        rng = random.Random(seed)
        while not stop.is_set():
            kind, method, path, body, key, want = rng.choice(mix.ops)
            r = request(lb.port, method, path, body)
            with slock:
                stats["requests"] += 1
                if r.status in (200, 201):
                    per_kind[kind] += 1
                    got = r.json.get(key) if isinstance(r.json, dict) else None
                    if got != want:
                        stats["wrong"] += 1
                        examples.append("wrong: %s %s: got %.120r want %.120r" % (method, path[:70], got, want))
                elif r.status == 202:
                    stats["202"] += 1       # a deadline on a busy machine: not an answer to compare
                elif r.status == 429:
                    stats["429"] += 1
                elif documented_503(r):
                    stats["503"] += 1
                    t = str(r.json.get("type", "")).rsplit("/", 1)[-1]
                    kinds503[t] = kinds503.get(t, 0) + 1
                else:
                    stats["bad5xx"] += 1
                    examples.append("status: %s %s: %r" % (method, path[:70], r))

    def restarter():
        i = 0
        while not stop.wait(RESTART_EVERY):
            rep = reps[1 + i % 2]
            i += 1
            rc = rep.stop(signal.SIGTERM)
            try:
                rep.start()
                ok = rc == 0 and rep.wait_healthy()
            except RuntimeError as e:
                ok = False
                examples.append("restart: %s" % e)
            with slock:
                stats["restarts"] += 1
                if not ok:
                    stats["bad_restarts"] += 1
                    examples.append("restart of %s: exit status %r" % (rep.name, rc))

    # warm-up: every replica answers each request of the mix once (compiles
    # every query of it), so that what replica 1 keeps afterwards is steady
    # state whatever the machine's speed
    for rep in reps:
        for kind, method, path, body, key, want in mix.ops:
            request(rep.port, method, path, body)
    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(CLIENTS)]
    threads.append(threading.Thread(target=restarter, daemon=True))
    t0 = time.time()
    for t in threads:
        t.start()
    stop.wait(SECONDS / 3)
    rss0 = reps[0].rss_kib()
    stop.wait(max(0.0, SECONDS - (time.time() - t0)))
    rss1 = reps[0].rss_kib()
    stop.set()
    for t in threads:
        t.join(HTTP_TIMEOUT + STOP_TIMEOUT + START_TIMEOUT)
    took = time.time() - t0
    for e in examples[:10]:
        print("  %s" % e, flush=True)
    note("load: %.0f s, %d requests through nginx (%s), %d restarts, %d wrong, %d other 5xx, "
         "%d documented 503, %d 429, %d 202" % (took, stats["requests"],
                                                  ", ".join("%s %d" % kv for kv in sorted(per_kind.items())),
                                                  stats["restarts"], stats["wrong"], stats["bad5xx"], stats["503"],
                                                  stats["429"], stats["202"]))
    if kinds503:
        note("load: the documented 503s by problem type: %s" % ", ".join("%s %d" % kv for kv in sorted(kinds503.items())))
    note("load: replica 1 (never restarted) RSS %s KiB after warm-up (%.0f s), %s KiB at the end" %
         (rss0, SECONDS / 3, rss1))
    eq("load: no wrong answer", stats["wrong"], 0)
    eq("load: no 5xx but documented 503s", stats["bad5xx"], 0)
    eq("load: every restart a clean exit and a new start", stats["bad_restarts"], 0)
    check("load: replicas were restarted", stats["restarts"] >= max(1, int(SECONDS / RESTART_EVERY) - 1),
          stats["restarts"])
    check("load: every kind of request answered", all(per_kind[k] > 0 for k in mix.kinds), per_kind)
    if sanitized():
        note("load: an AddressSanitizer build: RSS not compared (its quarantine grows), leaks are "
             "LeakSanitizer's at every exit")
    else:
        check("load: replica 1's RSS flat (at most +10% + 16 MiB from the warm-up to the end)",
              rss0 is not None and rss1 is not None and rss1 <= rss0 * 1.10 + 16384, (rss0, rss1))


# ================================================================ main ==
def cleanup():
    for p in PROCS:
        if p.poll() is None:
            p.kill()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                pass
    shutil.rmtree(WORK, ignore_errors=True)


def on_alarm(signum, frame):
    raise TimeoutError("the cluster test ran past its limit of %d s" % LIMIT)


def want(phase):
    return not ONLY or phase in ONLY


def main():
    if not DB_URL or not PG_DIR:
        check("DNNSAT_TEST_DATABASE_URL and DNNSAT_TEST_PG_DIR are set (run test_cluster.sh)", False,
              "a missing PostgreSQL is a failure, not a skip")
        return
    signal.signal(signal.SIGALRM, on_alarm)
    # a SIGTERM or SIGHUP (make's or timeout's) unwinds through the cleanup
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: sys.exit("stopped by signal %d" % signum))
    signal.alarm(LIMIT)
    nginx = None
    t0 = time.time()
    try:
        # two workers for the long reference counts, two for the rest
        ref = Replica("reference", db=False, workers=4).start()
        reps = [Replica("replica%d" % (i + 1)).start() for i in range(3)]
        nginx = Nginx(reps).start()
        for e in reps:
            eq("%s: database ok" % e.name, (e.get("/readyz").json or {}).get("database"), "ok")
        refs = {}
        if want("kill"):
            refs["kill"] = Background(ref, KILL_QUERY)
        if want("postgres"):
            refs["postgres"] = Background(ref, PG_QUERY)
        rid6 = phase_pages(ref, reps, nginx) if want("pages") or want("load") else None
        note("pages done at %.0f s" % (time.time() - t0))
        # the distributed phases' references once the pages are done: the
        # pages need the reference's two workers that the first two long
        # counts leave free (four long counts at once took them all, and
        # its page 0 waited 55 s for a worker: a 503)
        if want("distributed"):
            refs["distributed"] = Background(ref, DIST_QUERY)
        if want("kill_distributed"):
            refs["kill_distributed"] = Background(ref, KILL_DIST_QUERY)
        if want("refused"):
            refs["refused"] = Background(ref, REFUSED_QUERY)
        if want("kill"):
            phase_kill(ref, reps, nginx, refs["kill"])
            note("kill done at %.0f s" % (time.time() - t0))
        if want("distributed"):
            phase_distributed(ref, refs["distributed"])
            note("distributed done at %.0f s" % (time.time() - t0))
        if want("kill_distributed"):
            phase_kill_distributed(ref, refs["kill_distributed"])
            note("kill_distributed done at %.0f s" % (time.time() - t0))
        if want("refused"):
            phase_refused(ref, refs["refused"])
            note("refused done at %.0f s" % (time.time() - t0))
        if want("postgres"):
            phase_postgres(ref, reps, nginx, refs["postgres"])
            note("postgres done at %.0f s" % (time.time() - t0))
        if want("load"):
            phase_load(ref, reps, nginx, rid6)
        for e in reps:
            eq("%s: SIGTERM at the end: exit status 0" % e.name, e.stop(), 0)
        errs = [ln for ln in nginx.log().splitlines() if "[emerg]" in ln or "[alert]" in ln or "[crit]" in ln]
        check("nginx: no emerg, alert or crit in its log", not errs, errs[:3])
    except Exception as e:      # a broken set-up or the overall limit: a failure, not a crash
        import traceback
        traceback.print_exc()
        check("the cluster test ran to its end", False, e)
    finally:
        signal.alarm(0)
        if nginx is not None:
            nginx.stop()
        cleanup()
    note("cluster test: %.0f s in all" % (time.time() - t0))


if __name__ == "__main__":
    try:
        main()
    finally:
        cleanup()
    TALLY.finish()
