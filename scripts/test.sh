#!/bin/sh
# scripts/test.sh - README's second command: installs what the tests need,
# builds with -Werror + AddressSanitizer + UndefinedBehaviorSanitizer and
# runs every test (make check: Check unit tests, the CLI tests, the schema
# tests, the end-to-end tests of the service against a throwaway
# PostgreSQL, the integrations, the dashboard in a browser, the AutoML
# replay's accounting), then a one-minute soak of the sanitized service
# (memory flat, no leak at exit), a bounded fuzzing run of the parsers and
# of the service's request handling, then rebuilds plain (-Werror, as
# README's first command leaves the tree) for the cluster fault test.
#
# Time (issue 14): every test runs once. The tests run in parallel (make
# -j, one per core; those that start services pick free ports and their
# own temp directories, and the longest start first). The sanitized build
# is the same -O2 code as the plain one, instrumented, so its pass asserts
# everything a plain pass would, and more: all the tests run there, with
# the Z3 cross-checks (Z3's answers compared with the engine's and brute
# force's) skipped. The fuzzers build while the soak runs, and the tree is
# rebuilt plain (-Werror, as README's first command leaves it), at the
# lowest priority, while the fuzzers run (each phase of a fixed length
# leaves a core partly idle), for the tests that need the plain build: the
# cluster fault test (three replicas behind nginx; it compares the
# replicas' memory, which ASan's shadow memory would blur) and the four
# programs that hold Z3 cross-checks, run again with them: Z3 is not
# instrumented, but ASan's allocator serves its mallocs too and made it 3
# to 6 times slower, so the cross-checks run once, plain (our Z3 glue is
# still checked for memory errors in the sanitized pass: test_z3c's other
# cases, test_answer_z3, the service's Z3 answers). DNNSAT_TEST_PLAIN=1
# runs the whole make check again on the plain build; CI does so anyway,
# through `make distcheck` (.ci/run). The fuzzers build their shared
# sources once and run one per core.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
jobs="$(nproc)"

# the logs of the tests that did not pass, then fail
failed() {
	for trs in $(find tests bench -name '*.trs' 2>/dev/null); do
		if grep -q '^:test-result: \(FAIL\|ERROR\|XPASS\)' "$trs"; then
			echo "---- ${trs%.trs}.log"
			tail -120 "${trs%.trs}.log"
		fi
	done
	echo "$1 FAILED"
	exit 1
}

echo "== build (-Werror, ASan + UBSan) and make check (the Z3 cross-checks in the plain pass)"
./scripts/build.sh --enable-werror --enable-sanitizers
# sanitized code runs 2-4x slower, and make -j shares the cores: Check's
# per-test timeouts (hang guards, not time limits) stretch with it
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	CK_TIMEOUT_MULTIPLIER="${CK_TIMEOUT_MULTIPLIER:-8}" DNNSAT_TEST_Z3=0 DNNSAT_TEST_CLUSTER=0 \
	make -s -j"$jobs" check || failed "make check (sanitized)"

# one closing line for every check that ran (Check suites; CLI, schema,
# end-to-end, integration, browser and replay tests), counted from this
# pass's logs before the rebuild below removes them
total=0
for log in tests/unit/*.log; do
	n=$(sed -n 's/.*Checks: \([0-9]*\), Failures: 0, Errors: 0.*/\1/p' "$log" | tail -1)
	total=$((total + ${n:-0}))
done
for log in tests/cli/*.log tests/schema/*.log tests/e2e/*.log tests/integration/*.log tests/browser/*.log \
	bench/automl/*.log; do
	[ -f "$log" ] || continue
	n=$(sed -n 's/^\([0-9]*\) passed, 0 failed$/\1/p' "$log" | tail -1)
	total=$((total + ${n:-0}))
done

# the fuzzers build (from the sources, into tests/fuzz/out) while the soak
# runs: wrk and the server leave about a quarter of the cores idle
echo "== soak: the sanitized service under mixed load for ${SOAK_SECONDS:-60} s (the fuzzers build beside it)"
mkdir -p tests/fuzz/out
./tests/fuzz/run-fuzz.sh --build >tests/fuzz/out/build.log 2>&1 &
fuzz_build=$!
soak=0
./tests/bench/soak.sh "${SOAK_SECONDS:-60}" || soak=$?
fuzz_built=0
wait "$fuzz_build" || fuzz_built=$?
[ "$soak" = 0 ] || failed "the soak"
[ "$fuzz_built" = 0 ] || { tail -40 tests/fuzz/out/build.log; failed "building the fuzzers"; }

# the plain build (README's first command's tree) at the lowest priority
# beside the fuzzers: it takes the core the last of an odd number of
# targets leaves idle, and little else while they all run (the fuzzers read
# only sources and their own tests/fuzz/out)
echo "== fuzzing the parsers and the service (bounded); the plain build (-Werror) beside it"
plain_log="$(mktemp)"
nice -n 19 ./scripts/build.sh --enable-werror >"$plain_log" 2>&1 &
plain_build=$!
fuzz=0
FUZZ_SECONDS="${FUZZ_SECONDS:-30}" ./tests/fuzz/run-fuzz.sh --run || fuzz=$?
plain_built=0
wait "$plain_build" || plain_built=$?
[ "$fuzz" = 0 ] || failed "fuzzing"
[ "$plain_built" = 0 ] || { tail -60 "$plain_log"; failed "the plain build"; }
rm -f "$plain_log"

echo "== the cluster fault test and the Z3 cross-checks on the plain build"
z3_tests="tests/unit/test_fset_random tests/unit/test_z3c tests/unit/test_fset_names tests/unit/test_fset_latency"
plain_tests="tests/cluster/test_cluster.sh $z3_tests"
[ "${DNNSAT_TEST_PLAIN:-0}" = 1 ] && plain_tests=""
CK_TIMEOUT_MULTIPLIER="${CK_TIMEOUT_MULTIPLIER:-2}" DNNSAT_TEST_Z3=1 DNNSAT_TEST_CLUSTER=1 \
	make -s -j"$jobs" check ${plain_tests:+TESTS="$plain_tests"} || failed "make check (plain)"
for t in $z3_tests; do
	if [ -f "$t.log" ] && grep -q "Z3 cross-checks skipped" "$t.log"; then
		failed "the Z3 cross-checks did not run ($t.log)"
	fi
done

echo "all tests passed"
echo "$total passed, 0 failed"
