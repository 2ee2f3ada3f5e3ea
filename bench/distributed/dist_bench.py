#!/usr/bin/python3
"""bench/distributed/dist_bench.py - the distributed count (dnnsatd
--distribute, docs/operations.md) against one process, on loopback:

  tests/pg/with_pg.sh dist python3 bench/distributed/dist_bench.py [DEVICE [MEMORY]]

runs one long count (cnn5's 334M-configuration space, examples/, on DEVICE,
default a100-40gb, under MEMORY, default 2.5GiB) three times, each time on
fresh replicas of $top_builddir/dnnsatd and an emptied database
($DNNSAT_TEST_DATABASE_URL, which tests/pg/with_pg.sh sets):

  single     one replica, no --distribute: the single-process count;
  dist-1     one replica with --distribute: the jobs' overhead;
  dist-N     N replicas (default 3, $DIST_REPLICAS) with --distribute.

Every replica has one solver worker and is pinned to one core (taskset,
core i mod the cores online: on a 2-core machine replicas 1 and 3 share
core 0). Each run: POST with a 2 s deadline (202), then GET ?timeout=30 on
the replicas in turn until 200. Printed per run: "count" (seconds from the
POST to the moment the count was exact: the last job's commit in
PostgreSQL, or the 200 of the single process), "answer" (to the 200, which
for a distributed count includes the reduced space, merged from the
projections the jobs committed with their counts), the jobs and
claimers, the jobs' own time (claim to commit, summed) and the time a
claimer spends between its jobs per job (its span from first claim to last
commit less its jobs' time: claiming, the commit's round trips, idling);
then the speed-ups single/dist-N and dist-1/dist-N. Every run's feasible count must be
the single process's (exit status 1 otherwise). No assertion on time.
"""
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

TOP_SRCDIR = os.environ.get("top_srcdir", ".")
DNNSATD = os.path.join(os.environ.get("top_builddir", "."), "dnnsatd")
DB_URL = os.environ.get("DNNSAT_TEST_DATABASE_URL", "")
N = int(os.environ.get("DIST_REPLICAS", "3"))
CORES = os.cpu_count() or 1
PORT0 = 18600


def load(rel):
    with open(os.path.join(TOP_SRCDIR, rel)) as f:
        return json.load(f)


def query(device, memory):
    return {"model": load("examples/models/cnn5.json"), "space": load("examples/spaces/cnn5.json"),
            "device": device, "budgets": {"memory": memory}, "timeout": 2}


def http(port, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method, data=data,
                               headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(r, timeout=300) as f:
            return f.status, json.load(f)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def psql(sql):
    out = subprocess.run(["psql", DB_URL, "-Atc", sql], check=True, stdout=subprocess.PIPE).stdout.decode()
    return [ln.split("|") for ln in out.splitlines() if ln]


def start(n, distribute):
    procs = []
    env = dict(os.environ, DNNSAT_DATA_DIR=os.path.abspath(os.path.join(TOP_SRCDIR, "schemas")))
    for i in range(n):
        args = ["taskset", "-c", str(i % CORES), DNNSATD, "--listen", "127.0.0.1:%d" % (PORT0 + i),
                "--workers", "1", "--database-url", DB_URL, "--max-deadline", "300", "--access-log", "off"]
        if distribute:
            args.append("--distribute")
        procs.append(subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    for i in range(n):
        for _ in range(300):
            try:
                if http(PORT0 + i, "GET", "/healthz")[0] == 200:
                    break
            except OSError:
                time.sleep(0.1)
    return procs


def run(name, n, distribute, q):
    procs = start(n, distribute)     # the first one creates the tables
    try:
        psql("DELETE FROM dnnsat_job_sets; DELETE FROM dnnsat_results")
        t0 = time.time()
        st, j = http(PORT0, "POST", "/v1/reductions", q)
        rid = j.get("id")
        for i in range(1000):
            if st == 200 or st == 201:
                break
            st, j = http(PORT0 + (i + 1) % n, "GET", "/v1/reductions/%s?timeout=30" % rid)
        answer = time.time() - t0
        # the finished set's row keeps what its deleted jobs were
        # (cache_jobs_finish): the last commit, the claimers, their jobs'
        # time (claim to commit) and their time between jobs
        row = psql("SELECT njobs, coalesce(claimers, 0), extract(epoch FROM counted_at), coalesce(busy_s, 0), "
                   "coalesce(between_s, 0) FROM dnnsat_job_sets WHERE key = '%s' AND finished_at IS NOT NULL" % rid)
        njobs = int(row[0][0]) if row else 0
        jobs = [njobs, row[0][1] if row else 0, row[0][2] if row else None]
        count = float(jobs[2]) - t0 if njobs > 0 and jobs[2] else answer
        gaps = [row[0][4], row[0][3]] if row else [0, 0]
        print("%-8s replicas %d  count %6.1f s  answer %6.1f s  jobs %5d  claimers %s  jobs' time %6.1f s  "
              "between jobs %5.1f ms/job  feasible %s" %
              (name, n, count, answer, njobs, jobs[1], float(gaps[1]),
               1000 * float(gaps[0]) / njobs if njobs else 0, j.get("feasible")), flush=True)
        return {"count": count, "answer": answer, "jobs": njobs, "feasible": j.get("feasible")}
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(60)


def main():
    if not DB_URL:
        sys.exit("dist_bench: run it through tests/pg/with_pg.sh (DNNSAT_TEST_DATABASE_URL is unset)")
    q = query(sys.argv[1] if len(sys.argv) > 1 else "a100-40gb", sys.argv[2] if len(sys.argv) > 2 else "2.5GiB")
    print("dist_bench: %d cores online; replicas pinned to core i mod %d" % (CORES, CORES), flush=True)
    single = run("single", 1, False, q)
    one = run("dist-1", 1, True, q)
    many = run("dist-%d" % N, N, True, q)
    print("speed-up of %d replicas over one process: count %.2fx, answer %.2fx" %
          (N, single["count"] / many["count"], single["answer"] / many["answer"]))
    print("speed-up of %d replicas over one distributed replica: count %.2fx" % (N, one["count"] / many["count"]))
    if not (single["feasible"] == one["feasible"] == many["feasible"] and single["feasible"] is not None):
        sys.exit("dist_bench: FAIL: the counts differ")


if __name__ == "__main__":
    main()
