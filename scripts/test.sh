#!/bin/sh
# scripts/test.sh - README's second command: installs what the tests need,
# builds with -Werror, runs every test (make check: Check unit tests, the
# CLI tests, the schema tests, the end-to-end tests of the service against
# a throwaway PostgreSQL), then rebuilds with AddressSanitizer +
# UndefinedBehaviorSanitizer and runs them all again, then a one-minute soak
# of the sanitized service (memory flat, no leak at exit), then a bounded
# fuzzing run of the parsers and of the service's request handling.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh

echo "== build (-Werror) and make check"
./scripts/build.sh --enable-werror
make -s check || { cat tests/unit/*.log tests/cli/*.log tests/schema/*.log tests/e2e/*.log tests/integration/*.log 2>/dev/null | tail -120; exit 1; }

echo "== unit tests under ASan + UBSan"
./scripts/build.sh --enable-werror --enable-sanitizers
# sanitized code runs 2-4x slower: Check's per-test timeouts stretch with it
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 CK_TIMEOUT_MULTIPLIER=4 \
	make -s check || { cat tests/unit/*.log tests/cli/*.log tests/schema/*.log tests/e2e/*.log tests/integration/*.log 2>/dev/null | tail -120; exit 1; }

# one closing line for every check that ran (Check suites, CLI and schema
# tests), counted from this run's logs before the rebuild below removes them
total=0
for log in tests/unit/*.log; do
	n=$(sed -n 's/.*Checks: \([0-9]*\), Failures: 0, Errors: 0.*/\1/p' "$log" | tail -1)
	total=$((total + ${n:-0}))
done
for log in tests/cli/*.log tests/schema/*.log tests/e2e/*.log tests/integration/*.log; do
	n=$(sed -n 's/^\([0-9]*\) passed, 0 failed$/\1/p' "$log" | tail -1)
	total=$((total + ${n:-0}))
done

echo "== soak: the sanitized service under mixed load for ${SOAK_SECONDS:-60} s"
./tests/bench/soak.sh "${SOAK_SECONDS:-60}"

echo "== fuzzing the parsers and the service (bounded)"
FUZZ_SECONDS="${FUZZ_SECONDS:-30}" ./tests/fuzz/run-fuzz.sh

echo "== back to a plain build"
./scripts/build.sh --enable-werror

echo "all tests passed"
echo "$total passed, 0 failed"
