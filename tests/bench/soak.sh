#!/bin/sh
# tests/bench/soak.sh - memory over a long run of mixed requests: starts
# dnnsatd (the binary in the tree: a plain build, or an ASan build whose
# LeakSanitizer report at exit must be clean), drives it with wrk for
# SECONDS (default 300) with a mix of checks, pages, streams, samples,
# explanations, maxima, estimates, new and repeated reductions, catalog
# reads and errors, samples its resident memory every 10 s, then stops it
# with SIGTERM. Fails when the server dies, exits non-zero (a leak report
# under ASan), or (runs of 4 minutes or more) its memory grows by more than
# 5% over the second half of the run.
# Usage: tests/bench/soak.sh [SECONDS] [--database-url URL]
set -eu
cd "$(dirname "$0")/../.."
secs="${1:-300}"
[ $# -gt 0 ] && shift
PY=/usr/bin/python3
# without wrk there is no load: the run would measure an idle server
command -v wrk >/dev/null 2>&1 || { echo "soak: FAIL: wrk is missing (scripts/install-deps.sh installs it)"; exit 1; }
work=$(mktemp -d)
pid=""
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT INT TERM
ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" ./dnnsatd --listen 127.0.0.1:0 --access-log "$work/access.log" \
	--max-queue 1000 "$@" >"$work/out" 2>"$work/err" &
pid=$!
port=""
for _ in $(seq 200); do
	port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$work/out")
	[ -n "$port" ] && break
	sleep 0.1
done
[ -n "$port" ] || { cat "$work/err"; exit 1; }
base="http://127.0.0.1:$port"
# the request mix: ids come from two reductions made first
$PY - "$base" "$work/mixed" <<'PYEOF'
import json, random, sys, urllib.request
base, out = sys.argv[1], sys.argv[2]
def post(path, body):
    req = urllib.request.Request(base + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=120))
cnn5 = {"model": json.load(open("examples/models/cnn5.json")), "space": json.load(open("examples/spaces/cnn5.json")),
        "device": "a100-40gb", "budgets": {"memory": "16GiB"}}
resnet = {"model": "resnet50", "space": json.load(open("examples/spaces/resnet.json")), "device": "a100-40gb",
          "budgets": {"memory": "6GiB"}}
ids = [post("/v1/reductions", q)["id"] for q in (cnn5, resnet)]
rng = random.Random(1)
lines = []
def sample(space):
    c = {}
    for k, s in space.items():
        t, v = s["_type"], s["_value"]
        if t == "choice": c[k] = rng.choice(v)
        elif t == "randint": c[k] = rng.randrange(v[0], v[1])
        elif t == "quniform": c[k] = int(round(rng.uniform(v[0], v[1]) / v[2]) * v[2])
        else: c[k] = rng.uniform(v[0], v[1])
    return c
for _ in range(200):
    lines.append("POST /v1/reductions/%s/check %s" % (ids[0], json.dumps({"config": sample(cnn5["space"])})))
    lines.append("POST /v1/reductions/%s/check %s" % (ids[1], json.dumps({"config": sample(resnet["space"])})))
for i in range(20):
    lines.append("GET /v1/reductions/%s/configurations?limit=50&offset=%d" % (ids[1], rng.randrange(3000)))
    lines.append("GET /v1/reductions/%s/samples?n=20&seed=%d" % (ids[0], i))
    lines.append("GET /v1/reductions/%s" % ids[i % 2])
    lines.append("POST /v1/reductions %s" % json.dumps(dict(resnet, budgets={"memory": "%dGiB" % (4 + i)})))
    lines.append("POST /v1/estimate %s" % json.dumps({"model": "resnet50", "config": {"batch_size": 8 + i}}))
lines += ["GET /v1/reductions/%s/max?param=batch_size&per=block" % ids[1],
          "GET /v1/reductions/%s/explain?param=batch_size&value=512" % ids[1],
          "GET /v1/reductions/%s/configurations?format=jsonl" % ids[1],
          "GET /v1/templates", "GET /v1/devices", "GET /metrics", "GET /readyz", "GET /healthz",
          "GET /v1/reductions/00000000000000000000000000000000", "POST /v1/estimate {\"model\":",
          "POST /v1/check {\"model\":\"mlp\",\"space\":{},\"config\":{}}"]
open(out, "w").write("\n".join(lines) + "\n")
PYEOF
rss() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status"; }
MIXED="$work/mixed" wrk -t2 -c16 -d"${secs}s" -s tests/bench/mixed.lua "$base/" >"$work/wrk.out" 2>&1 &
wrkpid=$!
t=0
: >"$work/rss"
while kill -0 $wrkpid 2>/dev/null; do
	sleep 10
	t=$((t + 10))
	kill -0 "$pid" 2>/dev/null || { echo "soak: the server died"; tail -20 "$work/err"; exit 1; }
	echo "$t $(rss)" | tee -a "$work/rss"
done
wrk_status=0
wait "$wrkpid" || wrk_status=$?
grep -E "requests in|Requests/sec|Non-2xx" "$work/wrk.out" || true
# the load ran, for the whole run: wrk exited 0 after requests, and the
# loop above sampled for the run's length (a wrk that stopped early left
# an idle server to measure: the soak passed with one sample, 2026-12-03)
n=$(sed -n 's/^ *\([0-9][0-9]*\) requests in.*/\1/p' "$work/wrk.out")
samples=$(wc -l <"$work/rss")
if [ "$wrk_status" -ne 0 ] || [ -z "$n" ] || [ "$n" -eq 0 ] || [ "$samples" -lt $((secs / 10 - 1)) ]; then
	echo "soak: FAIL: the load did not run for $secs s (wrk exit $wrk_status, ${n:-no} requests, $samples samples)"
	cat "$work/wrk.out"
	exit 1
fi
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=""
if [ "$status" -ne 0 ]; then
	echo "soak: dnnsatd exited with $status"
	grep -A30 "LeakSanitizer\|ERROR: AddressSanitizer" "$work/err" | head -60
	exit 1
fi
# flat: over the second half of the run (the first half warms the caches:
# each distinct query of the mix is compiled once and kept), the last
# sample within 5% of the one at half time. Enforced for runs of 4 minutes
# or more; shorter runs (CI) check the clean exit and report the numbers.
awk -v secs="$secs" '
	BEGIN { half = int(secs / 20) * 10 }
	$1 == half { base = $2 }
	$1 >= half { if ($2 > max) max = $2; if (min == 0 || $2 < min) min = $2 }
	{ last = $2 }
	END {
		if (base == 0) base = last
		growth = (last - base) / base * 100
		printf "rss over the second half: %d KiB at %d s, %d KiB at the end (min %d, max %d): %+.1f%%\n",
		    base, half, last, min, max, growth
		exit (secs >= 240 && growth > 5) ? 1 : 0
	}' "$work/rss"
echo "soak: clean exit"
