#!/bin/sh
# tests/cli/test_nni_spaces.sh - every search space of NNI's own repository
# (tests/data/nni-spaces, outcomes in its EXPECTED file) through the CLI
# against the mlp template: a space parses, counts, reduces, lists and
# samples, and every configuration listed or sampled is a complete NNI
# parameter set (every active parameter present, continuous ones included)
# that `explain --config` accepts back unchanged as feasible; a file that
# is not a space fails with exit status 2 and a message naming the field.
# Prints "N passed, N failed".
set -u
top_srcdir="${top_srcdir:-.}"
top_builddir="${top_builddir:-.}"
DNNSAT="$top_builddir/dnnsat"
export DNNSAT_DATA_DIR="${DNNSAT_DATA_DIR:-$top_srcdir/schemas}"
DIR="$top_srcdir/tests/data/nni-spaces"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$top_srcdir/tests/cli/check.sh"

M="--preset mnist_mlp --device t4 --budget memory=3GiB"

# complete SPACE FILE: every line of FILE (JSON configurations) holds every
# parameter of SPACE that is active in it, nested options included
complete() {
	python3 - "$1" "$2" <<'PY'
import json, sys
space = json.load(open(sys.argv[1]))
def missing(sp, cfg, where):
    for k, spec in sp.items():
        if k == "_name":
            continue
        if k not in cfg:
            return where + k
        vals = spec["_value"]
        if spec["_type"] == "choice" and all(isinstance(v, dict) and "_name" in v for v in vals):
            opt = [v for v in vals if v["_name"] == cfg[k]["_name"]][0]
            m = missing(opt, cfg[k], where + k + "/")
            if m:
                return m
    return None
for line in open(sys.argv[2]):
    m = missing(space, json.loads(line), "")
    if m:
        print("parameter %s missing from %s" % (m, line.strip()))
        sys.exit(1)
PY
}

# roundtrip NAME SPACE FILE: explain --config accepts every line as feasible
roundtrip() {
	n=0
	while IFS= read -r cfg; do
		n=$((n + 1))
		check "$1-roundtrip-$n" 0 "feasible" -- explain $M --space "$2" --config "$cfg"
	done <"$3"
}

grep -v '^#' "$DIR/EXPECTED" | while IFS='	' read -r file outcome pattern; do
	[ -n "$file" ] || continue
	sp="$DIR/$file"
	case "$outcome" in
	space+batch)
		sed '0,/{/s//{"batch_size": {"_type": "choice", "_value": [32, 64]},/' "$sp" >"$tmp/space.json"
		sp="$tmp/space.json" ;;
	esac
	case "$outcome" in
	space|space+batch)
		check "$file-count" 0 "^feasible [0-9]* of [0-9]* configurations" -- count $M --space "$sp"
		check "$file-reduce" 0 '"_type"' -- reduce $M --space "$sp"
		"$DNNSAT" list $M --space "$sp" --limit 3 >"$tmp/list" 2>/dev/null
		"$DNNSAT" sample $M --space "$sp" --n 3 --seed 11 >"$tmp/sample" 2>/dev/null
		if [ -s "$tmp/list" ] && [ "$(wc -l <"$tmp/sample")" -eq 3 ] &&
		    complete "$sp" "$tmp/list" >"$tmp/out" 2>&1 && complete "$sp" "$tmp/sample" >"$tmp/out" 2>&1; then
			ok
		else
			bad "$file-complete"
		fi
		roundtrip "$file-list" "$sp" "$tmp/list"
		roundtrip "$file-sample" "$sp" "$tmp/sample" ;;
	error)
		check "$file" 2 "$pattern" -- count $M --space "$sp" ;;
	*)
		bad "$file: unknown outcome \"$outcome\" in EXPECTED" ;;
	esac
	echo "$pass $fail" >"$tmp/counts"
done
read -r pass fail <"$tmp/counts"

# every file of the folder has its line in EXPECTED
for f in "$DIR"/*.json; do
	if grep -q "^$(basename "$f")	" "$DIR/EXPECTED"; then ok; else bad "$(basename "$f"): no line in EXPECTED"; fi
done

# not spaces at all
printf '[1, 100]' >"$tmp/bare.json"
check bare-list 2 '\$.space: a search space must be a JSON object' -- count $M --space "$tmp/bare.json"
printf '3' >"$tmp/bare.json"
check bare-number 2 "bare.json: line 1, column 1: .* expected" -- count $M --space "$tmp/bare.json"
printf '{"x": {"_type": "mutable_choice", "_value": [1, 2]}}' >"$tmp/mutable.json"
check mutable-type 2 '\$.space.x._type: unknown _type "mutable_choice"' -- count $M --space "$tmp/mutable.json"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
