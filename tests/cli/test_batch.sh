#!/bin/sh
# tests/cli/test_batch.sh - `dnnsat prune` end to end: offline on a directory
# of small spaces for two devices (the files it writes against `dnnsat
# reduce`, `dnnsat list` and `dnnsat count --json`), query files with their
# own model, deadlines (exit 3), the progress bar (on a pseudo-terminal,
# nothing otherwise), bad inputs (exit status and message), and --server
# against a real ./dnnsatd on a free port: the same files and summary as
# offline, bearer tokens, an unreachable server. Prints "N passed, N failed".
set -u
top_srcdir="${top_srcdir:-.}"
top_builddir="${top_builddir:-.}"
DNNSAT="$top_builddir/dnnsat"
DNNSATD="$top_builddir/dnnsatd"
PYTHON=/usr/bin/python3
export DNNSAT_DATA_DIR="${DNNSAT_DATA_DIR:-$top_srcdir/schemas}"
unset DNNSAT_TOKEN
tmp=$(mktemp -d)
pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
. "$top_srcdir/tests/cli/check.sh"

# expect NAME COMMAND...: a shell command that must succeed
expect() {
	name=$1
	shift
	if "$@" >"$tmp/out" 2>&1; then ok; else bad "$name"; fi
}

if [ ! -x "$PYTHON" ]; then
	echo "test_batch.sh: FAIL: $PYTHON is missing (the test compares JSON with Debian's python3)" >&2
	exit 1
fi

# ---- the spaces: three small ones for the MNIST MLP ----
SP="$tmp/spaces"
mkdir -p "$SP"
cp "$top_srcdir/examples/spaces/mlp.json" "$SP/mlp.json"
printf '{"batch_size": {"_type": "choice", "_value": [32, 256, 2048, 16384]},\n "hidden": {"_type": "choice", "_value": [256, 1024, 4096]}}\n' >"$SP/small.json"
cat >"$SP/nested.json" <<'EOF'
{"batch_size": {"_type": "choice", "_value": [32, 2048, 16384]},
 "hidden": {"_type": "choice", "_value": [256, 4096]},
 "opt": {"_type": "choice", "_value": [
   {"_name": "sgd", "momentum": {"_type": "choice", "_value": [0.0, 0.9]}},
   {"_name": "adam, fast", "beta": {"_type": "choice", "_value": ["a\"b", "c"]}}]},
 "lr": {"_type": "loguniform", "_value": [0.001, 0.1]}}
EOF
echo "not a space" >"$SP/README.txt"
DEVICES="t4 v100-16gb"
# QM, QP: Q without its memory, params budget (a budget given twice is refused)
QM="--preset mnist_mlp --budget params=5M"
QP="--preset mnist_mlp --budget memory=3GiB"
Q="$QM --budget memory=3GiB"

# ---- offline ----
OFF="$tmp/off"
check offline 0 "^$" -- prune "$SP" $Q --device t4,v100-16gb --out "$OFF" --configs csv --limit 10 --summary json
grep -v ": warning: " "$tmp/out" >"$tmp/summary_off.json"   # stdout: the summary; warnings on stderr
"$DNNSAT" prune "$SP" $Q --device t4 --device v100-16gb --out "$tmp/off2" >"$tmp/stdout" 2>"$tmp/stderr"
if [ $? -eq 0 ] && ! grep -v ': warning: ' "$tmp/stderr" | grep -q .; then ok; else bad "not a terminal: nothing on stderr but warnings"; fi
check nested-unbound 0 "nested.json (t4): warning: parameters opt, opt/beta set nothing in model mlp" -- prune "$SP/nested.json" $Q --device t4
check table-header 0 "^space *device *total *feasible *ratio *seconds$" -- prune "$SP" $Q --device t4
check table-row 0 "^mlp *t4 *1536 *528 *34.38%" -- prune "$SP" $Q --device t4
check summary-csv 0 "^space,device,total,feasible,feasible_lower,feasible_upper,exact,ratio" -- prune "$SP" $Q --device t4 --summary csv
check summary-csv-row 0 "^small,t4,12,.*,true," -- prune "$SP" $Q --device t4 --summary csv

for s in mlp small nested; do
	for d in $DEVICES; do
		f="$OFF/$s.$d.search_space.json"
		"$DNNSAT" reduce $Q --space "$SP/$s.json" --device "$d" >"$tmp/reduce.json" 2>/dev/null
		expect "reduced $s $d loads as JSON and equals dnnsat reduce" "$PYTHON" -c '
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
sys.exit(0 if a == b and list(a) == list(b) else 1)' "$f" "$tmp/reduce.json"
		expect "reduced $s $d is the same text" cmp "$f" "$tmp/reduce.json"
		"$DNNSAT" count $Q --space "$SP/$s.json" --device "$d" --json >"$tmp/count.json" 2>/dev/null
		expect "summary $s $d equals count --json" "$PYTHON" -c '
import json, sys
rows = json.load(open(sys.argv[1]))["results"]; c = json.load(open(sys.argv[2]))
r = [x for x in rows if x["space"] == sys.argv[3] and x["device"] == sys.argv[4]]
assert len(r) == 1, r
r = r[0]
for k in ("total", "feasible", "feasible_lower", "feasible_upper", "exact"):
    assert r[k] == c[k], (k, r[k], c[k])
assert abs(r["ratio"] - c["ratio"]) <= 1e-12, (r["ratio"], c["ratio"])
assert r["reduced_space"] == "%s.%s.search_space.json" % (sys.argv[3], sys.argv[4])
assert r["configs_written"] == min(10, int(c["feasible"]))' "$tmp/summary_off.json" "$tmp/count.json" "$s" "$d"
		n=$("$PYTHON" -c 'import json,sys; print(min(10, int(json.load(open(sys.argv[1]))["feasible"])))' "$tmp/count.json")
		rows=$(($(wc -l <"$OFF/$s.$d.configs.csv") - 1))
		if [ "$rows" -eq "$n" ]; then ok; else bad "csv $s $d: $rows rows, want $n"; fi
	done
done
"$DNNSAT" prune "$SP/mlp.json" $Q --device t4 --out "$tmp/h" --configs csv --limit 1 >/dev/null 2>&1
if head -1 "$tmp/h/mlp.t4.configs.csv" | grep -qx "batch_size,hidden,depth,activation,learning_rate"; then ok; else bad "csv header mlp"; fi
if head -1 "$OFF/nested.t4.configs.csv" | grep -qx 'batch_size,hidden,opt/_name,opt/sgd/momentum,"opt/adam, fast/beta",lr'; then ok; else bad "csv header nested"; fi
# lr (loguniform, passes through) at its geometric midpoint sqrt(0.001 * 0.1)
if grep -qx '32,256,"adam, fast",,"a""b",0.01' "$OFF/nested.t4.configs.csv"; then ok; else bad "csv quoting and nested cells"; fi
# two options with a parameter of the same key: each row fills its own
# option's column only (the chosen option's value leaked into the other's)
mkdir -p "$tmp/same"
printf '{"batch_size": {"_type": "choice", "_value": [32]},\n "opt": {"_type": "choice", "_value": [\n   {"_name": "sgd", "momentum": {"_type": "choice", "_value": [0.0, 0.9]}},\n   {"_name": "nesterov", "momentum": {"_type": "choice", "_value": [0.5, 0.99]}}]}}\n' >"$tmp/same/same.json"
"$DNNSAT" prune "$tmp/same/same.json" $Q --device t4 --out "$tmp/same/out" --configs csv >/dev/null 2>&1
if [ "$(cat "$tmp/same/out/same.t4.configs.csv")" = "$(printf 'batch_size,opt/_name,opt/sgd/momentum,opt/nesterov/momentum\n32,sgd,0.0,\n32,sgd,0.9,\n32,nesterov,,0.5\n32,nesterov,,0.99')" ]
then ok; else bad "csv: a key shared by two options: $(cat "$tmp/same/out/same.t4.configs.csv" 2>&1)"; fi

# JSON lines without a limit: the configurations of dnnsat list, every one
check jsonl 0 "^$" -- prune "$SP/mlp.json" "$SP/nested.json" $Q --device t4 --out "$tmp/jl" --configs jsonl
for s in mlp nested; do
	"$DNNSAT" list $Q --space "$SP/$s.json" --device t4 2>/dev/null | sort >"$tmp/list.txt"
	sort "$tmp/jl/$s.t4.configs.jsonl" >"$tmp/prune.txt"
	expect "jsonl $s equals dnnsat list" cmp "$tmp/list.txt" "$tmp/prune.txt"
done
cp "$OFF/small.t4.search_space.json" "$tmp/l0_stale.json"
mkdir -p "$tmp/none" && cp "$tmp/l0_stale.json" "$tmp/none/small.t4.search_space.json"
check nothing-fits 0 "small @ t4: no configuration fits" -- prune "$SP/small.json" $QM --device t4 --budget memory=1KiB --out "$tmp/none" --configs csv
if [ ! -f "$tmp/none/small.t4.search_space.json" ] && [ "$(cat "$tmp/none/small.t4.configs.csv")" = "batch_size,hidden" ]; then ok; else
	bad "nothing fits: no reduced space (the stale one removed), a CSV header alone"; fi
check limit-0 0 "^$" -- prune "$SP/small.json" $Q --device t4 --out "$tmp/l0" --configs jsonl --limit 0
if [ -f "$tmp/l0/small.t4.configs.jsonl" ] && [ ! -s "$tmp/l0/small.t4.configs.jsonl" ]; then ok; else bad "limit 0: an empty file"; fi

# query files: their own model, device, budgets and deadline; files named relative to them
QD="$tmp/queries"
mkdir -p "$QD/sub"
printf '{"model": {"template": "mlp"}, "space": "../spaces/small.json", "budgets": {"memory": "3GiB"}}\n' >"$QD/q_small.json"
# Deadlines: the 24-layer transformer's space (1.3e30 configurations), which
# no machine counts exactly within them, however fast (cnn5 took 0.76 s on
# one machine and passed a deadline test by finishing)
cp "$top_srcdir/examples/models/transformer24.json" "$tmp/big.json"
cp "$top_srcdir/examples/spaces/transformer24.json" "$tmp/big_space.json"
printf '{"model": "../big.json", "space": "../big_space.json", "device": "t4", "timeout": 0.3}\n' >"$QD/q_big.json"
check query-files 3 "^q_small *a100-40gb *12 " -- prune "$QD" --out "$tmp/qo"
check query-deadline 3 "q_big @ t4: the deadline (0.3 s) passed" -- prune "$QD" --out "$tmp/qo"
check query-bounds-row 3 "^q_big *t4 *1\.268e+30 *[0-9.e+]*\.\.[0-9.e+]*" -- prune "$QD"
if [ -f "$tmp/qo/q_small.a100-40gb.search_space.json" ] && [ ! -f "$tmp/qo/q_big.t4.search_space.json" ]; then ok; else
	bad "query files: a reduced space for the exact count only"; fi
# the device's usable memory applies to every device of a run: a 24 GiB budget is capped on a T4 only
printf '{"batch_size": {"_type": "choice", "_value": [64, 128, 256, 512]}, "width": {"_type": "choice", "_value": [64, 96]}}' >"$tmp/r50.json"
"$DNNSAT" prune "$tmp/r50.json" --preset resnet50 --device t4,a100-40gb --budget memory=24GiB >"$tmp/out" 2>&1
if [ $? -eq 0 ] && grep -q "^r50 *t4 *8 *3 " "$tmp/out" && grep -q "^r50 *a100-40gb *8 *4 " "$tmp/out" &&
	grep -q "r50.json (t4): warning: memory budget 24 GiB is more than t4's usable 14.6 GiB: using 14.6 GiB" "$tmp/out" &&
	! grep -q "(a100-40gb): warning" "$tmp/out"; then ok; else bad "prune caps the memory budget per device"; fi
check prune-ambiguous 2 "\--device: device \"h100\" is ambiguous: it could be h100-sxm-80gb" -- prune "$tmp/r50.json" --preset resnet50 --device t4,h100
check query-cli-overrides 0 "^q_small *t4 " -- prune "$QD/q_small.json" --device t4 --budget memory=2GiB
check deadline 3 "lower..upper: the deadline passed" -- prune "$tmp/big_space.json" --model "$tmp/big.json" --device t4 --timeout 0.2

# the progress bar: on a terminal only (script(1) gives one), for runs over a
# second (two counts that run to their 1.5 s deadline, on any machine)
if command -v script >/dev/null 2>&1; then
	script -qec "$DNNSAT prune $tmp/big_space.json --model $tmp/big.json --device t4,v100-16gb --timeout 1.5" /dev/null \
		>"$tmp/tty.txt" 2>&1
	if grep -q '\[[#.]*\] [0-2]/2  0:0[0-9]  big_space @ ' "$tmp/tty.txt"; then ok; else
		bad "progress bar on a terminal"; cat "$tmp/tty.txt" | head -5; fi
fi

# ---- bad input: exit 2, the message names the file, option or field ----
printf '{"batch_size": ' >"$tmp/trunc.json"
echo '[1, 2]' >"$tmp/array.json"
echo '{"model": "mnist_mlp"}' >"$tmp/nospace.json"
echo '{"model": "mnist_mlp", "space": "gone.json"}' >"$tmp/gonespace.json"
echo '{"depth": {"_type": "randint", "_value": [5, 2]}}' >"$tmp/badspace.json"
echo '{"model": "mnist_mlp", "space": "spaces/small.json", "timeout": -1}' >"$tmp/badtimeout.json"
mkdir -p "$tmp/empty"
check unknown-device 2 "^dnnsat: --device: unknown device \"tpu\"" -- prune "$SP" $Q --device t4,tpu
check bad-json 2 "trunc.json: line 1, column" -- prune "$tmp/trunc.json" $Q
check not-an-object 2 "array.json: holds no JSON object" -- prune "$tmp/array.json" $Q
check no-space 2 "nospace.json: \$.space: a query file needs a space" -- prune "$tmp/nospace.json"
check space-file-missing 2 "gonespace.json: \$.space: cannot read \".*gone.json\"" -- prune "$tmp/gonespace.json"
check bad-timeout 2 "badtimeout.json: \$.timeout: must be seconds" -- prune "$tmp/badtimeout.json"
check missing-path 2 "nope: no such file or directory" -- prune "$tmp/nope" $Q
check empty-dir 2 "empty: the directory holds no .json file" -- prune "$tmp/empty" $Q
if [ "$(id -u)" -ne 0 ]; then
	mkdir -p "$tmp/locked" && chmod 000 "$tmp/locked"
	check unreadable-dir 2 "locked: cannot read the directory: Permission denied" -- prune "$tmp/locked" $Q
	chmod 755 "$tmp/locked"
fi
check no-model 2 "small.json: no model: give --preset" -- prune "$SP/small.json" --device t4
check bad-budget 2 "small.json (t4): \$.budgets.memory: unknown unit" -- prune "$SP/small.json" $QM --device t4 --budget memory=3parsecs
# --convention, as the solver commands and estimate take it (it was an unknown option)
check convention 2 'small.json (t4): \$.workload.macs_convention: must be' -- prune "$SP/small.json" $Q --device t4 --convention fv
check bad-space 2 "badspace.json (t4): .*randint" -- prune "$tmp/badspace.json" $Q --device t4
check unknown-preset 2 "no template has a preset \"gpt9\"" -- prune "$SP/small.json" --preset gpt9
check twice 2 "small.json: is given twice" -- prune "$SP/small.json" "$SP/small.json" $Q
cp "$SP/small.json" "$tmp/small.json"
check same-name 2 "would collide" -- prune "$SP/small.json" "$tmp/small.json" $Q
[ "$(grep -c "would collide" "$tmp/out")" -eq 1 ] && ok || bad "same-name-once: the collision said once"
check configs-no-out 2 "^dnnsat: --configs: needs --out" -- prune "$SP" $Q --configs csv
check configs-format 2 "\"xml\" is not one of jsonl, csv" -- prune "$SP" $Q --out "$tmp/x" --configs xml
check summary-format 2 "\"yaml\" is not one of table, csv, json" -- prune "$SP" $Q --summary yaml
check out-not-dir 2 "^dnnsat: --out: .*trunc.json is not a directory" -- prune "$SP" $Q --out "$tmp/trunc.json"
check unknown-option 2 "^dnnsat: --frobnicate: unknown option" -- prune "$SP" $Q --frobnicate
check bad-limit 2 "^dnnsat: --limit: must be a count" -- prune "$SP" $Q --limit many
check no-inputs 2 "name the spaces to prune" -- prune $Q
check bad-url 2 "is not an http:// or https:// URL" -- prune "$SP" $Q --server ftp://example.org
check help 0 "^usage: dnnsat prune" -- prune --help
# NAME=VALUE fixes a hyperparameter, as --set does (issue 14). 1338 fit since
# cost model 1.4.2, as many as `estimate` finds fitting one by one (1304
# before: each layer's output lived until the classifier's input, the last
# reader of any depth); 1304 since 1.4.1 (the CUDA context is 1343 MiB, not
# 1343 MB: 1315 before;
# 1281 before 1.3.3: the classifier's input, "the output after 1 to 9
# layers", was kept for every depth, not only the one chosen)
MLPQ="$top_srcdir/examples/spaces/mlp.json --preset mnist_mlp --device t4 --budget memory=3GiB"
check prune-set 0 "^mlp  *t4  *1536  *1338 " -- prune $MLPQ --set in_features=2000
check prune-set-positional 0 "^mlp  *t4  *1536  *1338 " -- prune $MLPQ in_features=2000
check main-help 0 "prune  *many spaces" -- --help

# ---- against a real server ----
# start_server FILE [dnnsatd options]: starts ./dnnsatd on a free port, waits
# for its "listening on" line, sets $port
start_server() {
	log=$1
	shift
	: >"$log"      # the background job opens it later
	"$DNNSATD" --listen 127.0.0.1:0 --access-log off "$@" >"$log" 2>"$log.err" &
	pids="$pids $!"
	port=""
	for _ in $(seq 1 100); do
		port=$(sed -n 's#^dnnsatd: listening on http://127\.0\.0\.1:\([0-9]*\)/.*#\1#p' "$log")
		[ -n "$port" ] && return 0
		sleep 0.1
	done
	echo "FAIL: dnnsatd did not start"; cat "$log" "$log.err"
	return 1
}

if start_server "$tmp/d1.log"; then
	URL="http://127.0.0.1:$port"
	SRV="$tmp/srv"
	check server 0 "^$" -- prune "$SP" $Q --device t4,v100-16gb --out "$SRV" --configs csv --limit 10 --summary json --server "$URL/"
	grep -v ": warning: " "$tmp/out" >"$tmp/summary_srv.json"
	expect "server: the same files as offline" diff -r "$OFF" "$SRV"
	expect "server: the same summary as offline (but seconds)" "$PYTHON" -c '
import json, sys
a = json.load(open(sys.argv[1]))["results"]; b = json.load(open(sys.argv[2]))["results"]
for r in a + b:
    del r["seconds"]
sys.exit(0 if a == b else 1)' "$tmp/summary_off.json" "$tmp/summary_srv.json"
	# again: answered from the server's cache, still the same
	check server-cached 0 "^$" -- prune "$SP" $Q --device t4,v100-16gb --out "$tmp/srv2" --configs csv --limit 10 --summary json --server "$URL"
	expect "server cached: the same files" diff -r "$OFF" "$tmp/srv2"
	# every configuration, in pages of 1000 with cursors (mlp on an A100: 1536)
	check server-jsonl 0 "^$" -- prune "$SP/mlp.json" "$SP/nested.json" $Q --device t4 --out "$tmp/jls" --configs jsonl --server "$URL"
	expect "server jsonl: the same as offline" diff -r "$tmp/jl" "$tmp/jls"
	check server-pages 0 "^$" -- prune "$SP/mlp.json" --preset mnist_mlp --device a100-40gb --out "$tmp/pg" --configs jsonl --server "$URL"
	check offline-pages 0 "^$" -- prune "$SP/mlp.json" --preset mnist_mlp --device a100-40gb --out "$tmp/pgo" --configs jsonl
	if [ "$(wc -l <"$tmp/pg/mlp.a100-40gb.configs.jsonl")" -eq 1536 ]; then ok; else bad "server pages: 1536 lines"; fi
	expect "server pages: the same as offline" cmp "$tmp/pg/mlp.a100-40gb.configs.jsonl" "$tmp/pgo/mlp.a100-40gb.configs.jsonl"
	check server-deadline 3 "big_space @ t4: the deadline (0.5 s) passed" -- prune "$tmp/big_space.json" --model "$tmp/big.json" --device t4 --timeout 0.5 --server "$URL"
	check server-query-files 3 "^q_small *a100-40gb *12 " -- prune "$QD" --server "$URL"
	check server-bad-budget 2 "small.json (t4): \$.budgets.memory: unknown unit.*answered 422" -- prune "$SP/small.json" $QM --device t4 --budget memory=3parsecs --server "$URL"
	check server-unknown-device 2 "^dnnsat: --device: unknown device \"tpu\"" -- prune "$SP" $Q --device tpu --server "$URL"
	check server-ambiguous-device 2 "^dnnsat: --device: device \"a100\" is ambiguous" -- prune "$SP" $Q --device a100 --server "$URL"
	check server-capped 0 "r50.json (t4): warning: memory budget 24 GiB is more than t4's usable 14.6 GiB" -- prune "$tmp/r50.json" --preset resnet50 --device t4 --budget memory=24GiB --server "$URL"
	check server-unbound 0 "nested.json (t4): warning: parameters opt, opt/beta set nothing in model mlp" -- prune "$SP/nested.json" $Q --device t4 --server "$URL"
	# estimate --json answers what POST /v1/estimate answers (issue 14): the same JSON
	"$DNNSAT" estimate --preset resnet50 --device a100-40gb --optimizer sgd_momentum --dtype mixed_fp16 \
	    batch_size=64 resolution=224 --json >"$tmp/est_cli.json" 2>"$tmp/est_cli.err"
	expect "estimate --json is POST /v1/estimate's answer" "$PYTHON" -c '
import json, sys, urllib.request
body = open(sys.argv[2], "rb").read()
req = urllib.request.Request(sys.argv[1] + "/v1/estimate", data=body, headers={"Content-Type": "application/json"})
srv = json.load(urllib.request.urlopen(req, timeout=60))
cli = json.load(open(sys.argv[3]))
if srv != cli or "costs" not in cli:
    print("server keys", list(srv), "cli keys", list(cli))
    sys.exit(1)' "$URL" "$top_srcdir/examples/api/estimate.json" "$tmp/est_cli.json"
	# a reduced space keeps the request's key order, nested options' keys included (issue 14):
	# created, answered again from the cache, and read by id
	expect "API reduced space in the request's key order" "$PYTHON" -c '
import json, sys, urllib.request
url = sys.argv[1]
space = {"depth": {"_type": "randint", "_value": [1, 9]}, "activation": {"_type": "choice", "_value": ["relu", "gelu"]},
         "batch_size": {"_type": "choice", "_value": [32, 256]},
         "opt": {"_type": "choice", "_value": [{"_name": "b", "z": {"_type": "choice", "_value": [1, 2]},
                                                "a": {"_type": "choice", "_value": [3]}}, {"_name": "c"}]}}
body = json.dumps({"model": "mnist_mlp", "space": space, "device": "t4", "budgets": {"memory": "3GiB"}}).encode()
got = []
for _ in range(2):
    req = urllib.request.Request(url + "/v1/reductions", data=body, headers={"Content-Type": "application/json"})
    r = json.load(urllib.request.urlopen(req, timeout=60))
    got.append(r["reduced_space"])
got.append(json.load(urllib.request.urlopen(url + "/v1/reductions/" + r["id"], timeout=60))["reduced_space"])
for rs in got:
    if list(rs) != ["depth", "activation", "batch_size", "opt"] or list(rs["opt"]["_value"][0]) != ["_name", "z", "a"]:
        print(rs)
        sys.exit(1)' "$URL"
fi

# inputs that are not files: a FIFO named *.json is refused at once (it
# blocked forever), a directory named *.json is called one, and every bad
# file of a directory is named before prune stops
mkdir -p "$tmp/badir" "$tmp/dir.json"
mkfifo "$tmp/fifo.json" "$tmp/badir/c.json"
printf '{' >"$tmp/badir/a.json"
printf '[1]' >"$tmp/badir/b.json"
timeout 20 "$DNNSAT" count --preset resnet50 --space "$tmp/fifo.json" >"$tmp/out" 2>&1
got=$?
if [ "$got" -eq 2 ] && grep -q "fifo.json: is not a regular file" "$tmp/out"; then ok; else bad "count --space FIFO: status $got"; fi
timeout 20 "$DNNSAT" count --preset resnet50 --space "$tmp/dir.json" >"$tmp/out" 2>&1
got=$?
if [ "$got" -eq 2 ] && grep -q "dir.json: is a directory" "$tmp/out"; then ok; else bad "count --space DIR.json: status $got"; fi
timeout 20 "$DNNSAT" prune "$tmp/badir" $Q --device t4 >"$tmp/out" 2>&1
got=$?
if [ "$got" -eq 2 ] && grep -q "a.json: line" "$tmp/out" && grep -q "b.json: holds no JSON object" "$tmp/out" &&
    grep -q "c.json: is not a regular file" "$tmp/out" && grep -q "3 of its 3 .json files" "$tmp/out"; then
	ok
else
	bad "prune DIR with three bad files names them all: status $got"
fi

echo "a-token-of-at-least-16-chars" >"$tmp/tokens"
if start_server "$tmp/d2.log" --token-file "$tmp/tokens"; then
	check token-missing 2 "answered 401.*give --token T or set DNNSAT_TOKEN" -- prune "$SP/small.json" $Q --server "http://127.0.0.1:$port"
	check token-wrong 2 "it does not take this token" -- prune "$SP/small.json" $Q --server "http://127.0.0.1:$port" --token nope
	check token-option 0 "^small " -- prune "$SP/small.json" $Q --server "http://127.0.0.1:$port" --token a-token-of-at-least-16-chars
	DNNSAT_TOKEN=a-token-of-at-least-16-chars "$DNNSAT" prune "$SP/small.json" $Q --server "http://127.0.0.1:$port" >"$tmp/out" 2>&1
	if [ $? -eq 0 ]; then ok; else bad "token from DNNSAT_TOKEN"; fi
fi

# a port nothing listens on: a server started and stopped
if start_server "$tmp/d3.log"; then
	dead=$port
	last=${pids##* }
	kill "$last"
	wait "$last" 2>/dev/null
	check unreachable 4 "^dnnsat: --server: http://127.0.0.1:$dead/v1/devices: .*Could.*connect" -- prune "$SP" $Q --server "http://127.0.0.1:$dead"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
