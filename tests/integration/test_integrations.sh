#!/bin/sh
# tests/integration/test_integrations.sh - `make check`'s entry for the
# Python integrations in examples/ (the API client, the Optuna sampler and
# constraints, the NNI tuner and exports): runs test_client.py,
# test_optuna.py and test_nni_tuner.py, each against its own real dnnsatd,
# with Debian's /usr/bin/python3 (python3-optuna 3.1; a python3 earlier on
# PATH may lack it). Fails (never skips) when either is missing. Prints each
# test's "N passed, M failed" and the total as the last line; exit 1 when
# any test failed.
PYTHON=/usr/bin/python3
export top_srcdir="${top_srcdir:-.}" top_builddir="${top_builddir:-.}"
if ! "$PYTHON" -c 'import optuna' 2>/dev/null; then
	echo "test_integrations.sh: FAIL: the tests need $PYTHON with optuna (Debian's python3 and" \
		"python3-optuna: scripts/install-deps.sh)" >&2
	exit 1
fi
passed=0
failed=0
status=0
for t in test_client test_optuna test_nni_tuner; do
	echo "== $t"
	out="$("$PYTHON" "$top_srcdir/tests/integration/$t.py" 2>&1)"
	rc=$?
	printf '%s\n' "$out"
	line="$(printf '%s\n' "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' | tail -1)"
	if [ -z "$line" ]; then
		echo "FAIL: $t ended without its summary line (exit $rc)"
		failed=$((failed + 1))
	else
		set -- $line
		passed=$((passed + $1))
		failed=$((failed + $2))
	fi
	[ "$rc" -eq 0 ] || status=1
done
[ "$failed" -eq 0 ] || status=1
echo "$passed passed, $failed failed"
exit $status
