#!/bin/sh
# tests/bench/bench_http.sh - the service's speed targets, measured with wrk
# on loopback against the real dnnsatd (README.md reports the figures):
#  1. checking one configuration (GET /v1/reductions/{id}/check?..., random
#     configurations of the cnn5 NAS space, feasible or not, every cost in
#     the answer) against the trivial endpoint of the same server (GET
#     /healthz), alternating in the same run, keep-alive, 64 connections:
#     the ratio of throughputs and p99. The trivial endpoint is loaded two
#     ways: by wrk's built-in request (no script), and through the same
#     Lua script as the check (a request picked per call from a table), so
#     that the load generator's own cost per request - it shares the 2
#     cores - is the same in both arms; both ratios are printed, the second
#     is the server's. Also the JSON-body form (POST
#     .../check), the full-query form (POST /v1/check) and a heavy model (a
#     ResNet space whose graph has 42k nodes) for reference;
#  2. a cached reduction read (GET /v1/reductions/{id}) from PostgreSQL:
#     every read is a query to a throwaway PostgreSQL server; in rounds
#     (throughput, mean, p50, p99 of each, medians at the end), with
#     /healthz of the same server in each round as the floor that the
#     machine's own scheduling sets, and with DNNSATD_BASELINE set, an
#     older dnnsatd on the same database in the same rounds (the order of
#     the arms alternates).
# The machines are shared and noisy (a run's throughput moves by 20% from
# one second to the next): many short rounds, each arm's order reversed
# every other round so that a drift does not favour one, and the median of
# the per-round ratios.
# Usage: tests/bench/bench_http.sh [SECONDS per run, default 3] [ROUNDS, default 9]
# Environment: BENCH_PART=2 runs part 2 only; DNNSATD_BASELINE=PATH another
# dnnsatd binary (e.g. main's, built in another checkout) measured against
# ./dnnsatd in part 2.
set -eu
cd "$(dirname "$0")/../.."
secs="${1:-3}"
rounds="${2:-9}"
PY=/usr/bin/python3
for t in wrk curl; do
	command -v $t >/dev/null || { echo "bench_http: $t is missing (apt-get install $t)" >&2; exit 1; }
done
[ -x ./dnnsatd ] || { echo "bench_http: build first (./scripts/build.sh)" >&2; exit 1; }
work=$(mktemp -d)
chmod 755 "$work"    # the postgres user must reach its data directory inside
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	[ -d "$work/pg" ] && tests/pg/pg_tmp.sh stop "$work/pg" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

# start_server NAME ARGS...: starts dnnsatd (or $bin) on a free port, sets $port
start_server() {
	name=$1
	shift
	"${bin:-./dnnsatd}" --listen 127.0.0.1:0 --access-log "$work/$name.access.log" "$@" >"$work/$name.out" 2>"$work/$name.err" &
	pids="$pids $!"
	for _ in $(seq 100); do
		port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$work/$name.out")
		[ -n "$port" ] && return 0
		sleep 0.1
	done
	cat "$work/$name.err" >&2
	exit 1
}

# ms VALUE: wrk's "1.23ms" / "456.00us" / "1.02s" in milliseconds
ms() {
	echo "$1" | awk '{v = $1; if (v ~ /us$/) {sub(/us/, "", v); v = v / 1000} else if (v ~ /ms$/) {sub(/ms/, "", v)} else if (v ~ /s$/) {sub(/s/, "", v); v = v * 1000}; print v}'
}

# run_wrk URL [LUA FILE]: prints "rps p99_ms"; FILE is the scripts' input
# (bodies.lua: JSON bodies; paths.lua: query strings). The last run's
# mean and p50 are in $work/wrk.out.
run_wrk() {
	if [ $# -gt 1 ]; then
		BODIES=$3 QUERIES=$3 wrk -t2 -c64 -d"${secs}s" --latency -s "$2" "$1" >"$work/wrk.out"
	else
		wrk -t2 -c64 -d"${secs}s" --latency "$1" >"$work/wrk.out"
	fi
	if grep -q "Non-2xx" "$work/wrk.out"; then
		echo "bench_http: errors from $1:" >&2
		cat "$work/wrk.out" >&2
		exit 1
	fi
	rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.out")
	p99=$(ms "$(awk '$1 == "99%" {print $2}' "$work/wrk.out")")
	echo "$rps $p99"
}

reduction_id() {
	curl -sf -H 'Content-Type: application/json' --data @"$1" "http://127.0.0.1:$port/v1/reductions?timeout=60" |
		$PY -c 'import json, sys; print(json.load(sys.stdin)["id"])'
}

$PY - "$work" <<'PYEOF'
import json, sys
w = sys.argv[1]
cnn5 = {"model": json.load(open("examples/models/cnn5.json")), "space": json.load(open("examples/spaces/cnn5.json")),
        "device": "a100-40gb", "budgets": {"memory": "16GiB"}}
resnet = {"model": "resnet50", "space": json.load(open("examples/spaces/resnet.json")), "device": "a100-40gb",
          "budgets": {"memory": "6GiB"}}
json.dump(cnn5, open(w + "/cnn5.json", "w"))
json.dump(resnet, open(w + "/resnet.json", "w"))
PYEOF
for q in cnn5 resnet; do
	$PY tests/bench/gen_check_bodies.py "$work/$q.json" 2000 1 --by-id >"$work/$q.byid"
	$PY tests/bench/gen_check_bodies.py "$work/$q.json" 2000 1 --query-string >"$work/$q.qs"
	$PY tests/bench/gen_check_bodies.py "$work/$q.json" 2000 1 >"$work/$q.full"
done

median() { sort -n "$1" | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
if [ "${BENCH_PART:-all}" != 2 ]; then
echo "== 1. check vs trivial endpoint (in-memory server, wrk -t2 -c64, ${secs}s runs, $rounds rounds)"
start_server mem
id_cnn5=$(reduction_id "$work/cnn5.json")
id_resnet=$(reduction_id "$work/resnet.json")
# warm: the /v1/check form compiles its query on the first call
head -1 "$work/cnn5.full" | curl -sf -o /dev/null -H 'Content-Type: application/json' --data @- "http://127.0.0.1:$port/v1/check"
head -1 "$work/resnet.full" | curl -sf -o /dev/null -H 'Content-Type: application/json' --data @- "http://127.0.0.1:$port/v1/check"
: >"$work/ratios"
: >"$work/ratios_script"
# the trivial endpoint through the same script: one (empty) query string per line
for _ in $(seq 64); do echo ""; done >"$work/empty.qs"
check_arm() {
	set -- $(run_wrk "http://127.0.0.1:$port/v1/reductions/$id_cnn5/check" tests/bench/paths.lua "$work/cnn5.qs")
	c_rps=$1 c_p99=$2
}
for r in $(seq "$rounds"); do
	[ $((r % 2)) -eq 0 ] && check_arm
	set -- $(run_wrk "http://127.0.0.1:$port/healthz")
	h_rps=$1 h_p99=$2
	set -- $(run_wrk "http://127.0.0.1:$port/healthz" tests/bench/paths.lua "$work/empty.qs")
	hs_rps=$1 hs_p99=$2
	[ $((r % 2)) -eq 1 ] && check_arm
	ratio=$(echo "$c_rps $h_rps" | awk '{printf "%.2f", $1 / $2}')
	ratio_s=$(echo "$c_rps $hs_rps" | awk '{printf "%.2f", $1 / $2}')
	echo "$ratio" >>"$work/ratios"
	echo "$ratio_s" >>"$work/ratios_script"
	printf "round %d: trivial %8.0f req/s (p99 %6.2f ms), same script %8.0f (p99 %6.2f ms)   check %8.0f req/s (p99 %6.2f ms)   ratios %s, %s\n" \
		"$r" "$h_rps" "$h_p99" "$hs_rps" "$hs_p99" "$c_rps" "$c_p99" "$ratio" "$ratio_s"
done
echo "check / trivial throughput, median of $rounds rounds: $(median "$work/ratios") against wrk's built-in request," \
	"$(median "$work/ratios_script") against the same script (target >= 0.70)"
set -- $(run_wrk "http://127.0.0.1:$port/v1/reductions/$id_cnn5/check" tests/bench/bodies.lua "$work/cnn5.byid")
printf "for reference: POST .../check with a JSON body {\"config\": ...} (cnn5): %.0f req/s, p99 %.2f ms\n" "$1" "$2"
set -- $(run_wrk "http://127.0.0.1:$port/v1/check" tests/bench/bodies.lua "$work/cnn5.full")
printf "for reference: POST /v1/check with the whole query in each body (cnn5): %.0f req/s, p99 %.2f ms\n" "$1" "$2"
set -- $(run_wrk "http://127.0.0.1:$port/v1/reductions/$id_resnet/check" tests/bench/paths.lua "$work/resnet.qs")
printf "for reference: a heavy model (ResNet space, 42k-node graph): %.0f req/s, p99 %.2f ms\n" "$1" "$2"

fi

echo "== 2. cached reduction read from PostgreSQL (GET /v1/reductions/{id}, wrk -t2 -c64, ${secs}s runs, $rounds rounds)"
url=$(tests/pg/pg_tmp.sh start "$work/pg")
start_server pg --database-url "$url"
new_port=$port
new_id=$(reduction_id "$work/resnet.json")
arms="new"
if [ -n "${DNNSATD_BASELINE:-}" ]; then
	# the baseline finds its data files here (it may live outside a checkout)
	DNNSAT_DATA_DIR=${DNNSAT_DATA_DIR:-$(pwd)/schemas} bin=$DNNSATD_BASELINE start_server base --database-url "$url"
	base_port=$port
	# created on the baseline itself: a reduction's id names the cost
	# model's version, which an older build may not share
	base_id=$(reduction_id "$work/resnet.json")
	arms="new base"
fi
for a in $arms; do
	eval "p=\$${a}_port id=\$${a}_id"
	curl -sf -o /dev/null -D "$work/h" "http://127.0.0.1:$p/v1/reductions/$id"
	grep -qi "x-cache: hit" "$work/h" || { echo "bench_http: the $a server's read is not a cache hit" >&2; exit 1; }
	: >"$work/$a.rps"; : >"$work/$a.mean"; : >"$work/$a.p50"; : >"$work/$a.p99"
done
: >"$work/floor.p99"
# read_arm NAME PORT ID: one run of cached reads, recorded under NAME
read_arm() {
	set -- "$1" $(run_wrk "http://127.0.0.1:$2/v1/reductions/$3")
	echo "$2" >>"$work/$1.rps"
	echo "$3" >>"$work/$1.p99"
	ms "$(awk '$1 == "Latency" && $2 != "Distribution" {print $2}' "$work/wrk.out")" >>"$work/$1.mean"
	ms "$(awk '$1 == "50%" {print $2}' "$work/wrk.out")" >>"$work/$1.p50"
	printf "  %-4s %8.0f req/s  mean %7.2f  p50 %6.2f  p99 %7.2f ms" "$1" "$2" "$(tail -1 "$work/$1.mean")" \
		"$(tail -1 "$work/$1.p50")" "$3"
}
for r in $(seq "$rounds"); do
	printf "round %d:" "$r"
	set -- $(run_wrk "http://127.0.0.1:$new_port/healthz")
	echo "$2" >>"$work/floor.p99"
	printf "  floor (/healthz) p99 %6.2f ms" "$2"
	if [ $((r % 2)) -eq 1 ]; then order=$arms; else order=$(echo "$arms" | awk '{for (i = NF; i > 0; i--) printf "%s ", $i}'); fi
	for a in $order; do
		eval "p=\$${a}_port id=\$${a}_id"
		read_arm "$a" "$p" "$id"
	done
	echo
done
for a in $arms; do
	printf "cached reduction reads (%s), medians of %d rounds: %.0f req/s, mean %.2f ms, p50 %.2f ms, p99 %.2f ms " \
		"$a" "$rounds" "$(median "$work/$a.rps")" "$(median "$work/$a.mean")" "$(median "$work/$a.p50")" \
		"$(median "$work/$a.p99")"
	echo "(targets: >= 5000 req/s, p99 < 20 ms)"
done
echo "floor: /healthz p99, median of $rounds rounds: $(median "$work/floor.p99") ms"
hits=$(curl -sf "http://127.0.0.1:$new_port/metrics" | awk '$1 == "dnnsat_cache_hits_total" {print $2}')
echo "server metrics: dnnsat_cache_hits_total $hits"
