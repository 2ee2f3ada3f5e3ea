#!/bin/sh
# scripts/test.sh - README's second command: installs what the tests need,
# builds with -Werror, runs every test (make check: Check unit tests and the
# CLI tests), then rebuilds with AddressSanitizer + UndefinedBehaviorSanitizer
# and runs the unit tests again, then a bounded fuzzing run of the parsers.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh

echo "== build (-Werror) and make check"
./scripts/build.sh --enable-werror
make -s check || { cat tests/unit/*.log tests/cli/*.log 2>/dev/null | tail -80; exit 1; }

echo "== unit tests under ASan + UBSan"
./scripts/build.sh --enable-werror --enable-sanitizers
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	make -s check || { cat tests/unit/*.log tests/cli/*.log 2>/dev/null | tail -80; exit 1; }

echo "== fuzzing the parsers (bounded)"
FUZZ_SECONDS="${FUZZ_SECONDS:-30}" ./tests/fuzz/run-fuzz.sh

echo "== back to a plain build"
./scripts/build.sh --enable-werror
echo "all tests passed"
