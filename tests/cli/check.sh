# tests/cli/check.sh - what the CLI tests (test_cli.sh, test_batch.sh) share,
# sourced after they set $DNNSAT and $tmp: the pass and fail counters, ok
# and bad to count a result, and check, which runs dnnsat and matches its
# exit status and output.
pass=0
fail=0

ok() {
	pass=$((pass + 1))
}

# bad NAME: counts a failure, showing the last output ($tmp/out)
bad() {
	fail=$((fail + 1))
	echo "FAIL $1; output:"
	[ -f "$tmp/out" ] && sed 's/^/    /' "$tmp/out" | head -20
}

# check NAME WANT_STATUS PATTERN -- ARGS...: runs dnnsat ARGS, expects the
# exit status and a line of output (stdout+stderr, kept in $tmp/out)
# matching PATTERN ("^$": any output).
check() {
	name=$1 want=$2 pattern=$3
	shift 4
	"$DNNSAT" "$@" >"$tmp/out" 2>&1
	got=$?
	if [ "$got" -eq "$want" ] && { [ "$pattern" = "^$" ] || grep -q -e "$pattern" "$tmp/out"; }; then
		ok
	else
		bad "$name: status $got (want $want), pattern '$pattern'"
	fi
}

# check_again NAME PATTERN: another line of the last check's output (one run
# of dnnsat read twice, where the run is long: a Z3 enumeration, a conflict)
check_again() {
	if grep -q -e "$2" "$tmp/out"; then
		ok
	else
		bad "$1: pattern '$2' (in the output of the check before)"
	fi
}
