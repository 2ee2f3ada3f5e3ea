#!/bin/sh
# tests/fuzz/run-fuzz.sh - builds the libFuzzer targets (clang, ASan + UBSan)
# and runs each for FUZZ_SECONDS (default 60) from the committed seed corpus
# in tests/fuzz/corpus/<target>. New inputs go to a scratch directory; a crash
# leaves its input in tests/fuzz/ and fails the run. Bounded in time: CI runs it.
#
# Time: the sources every target shares are compiled once, one file per
# core (FUZZ_JOBS, default the cores), instead of once per target; then the
# targets run FUZZ_JOBS at a time, each for its own FUZZ_SECONDS (the same
# fuzzing time per target as one after the other: libFuzzer is single
# threaded). Each target's log is tests/fuzz/out/fuzz_<target>.log.
#
# Usage: tests/fuzz/run-fuzz.sh [--build | --run]
#   --build  only builds the targets (scripts/test.sh builds them while the
#            soak runs, which leaves a quarter of the cores idle)
#   --run    only runs the targets --build left (fails when one is missing)
set -eu
cd "$(dirname "$0")/../.."
phase="${1:-all}"
case "$phase" in
--build | --run | all) ;;
*)
	echo "usage: tests/fuzz/run-fuzz.sh [--build | --run]" >&2
	exit 2
	;;
esac
SECONDS_EACH="${FUZZ_SECONDS:-60}"
JOBS="${FUZZ_JOBS:-$(nproc)}"
TARGETS="${FUZZ_TARGETS:-model expr space query progress request onnx}"
out=tests/fuzz/out
obj="$out/obj"
mkdir -p "$out" "$obj"
VERSION="$(sed -n 's/^AC_INIT(\[dnnsat\], \[\([^]]*\)\].*/\1/p' configure.ac)"
CFLAGS="-g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE \
-Icommon -Icostmodel -Iimport -Isolver -Isolver/z3 -Icache -Iserver $(pkg-config --cflags jansson libmicrohttpd libpq) \
-DDNNSAT_PKGDATADIR=\"$PWD\" -DPACKAGE_VERSION=\"$VERSION\""
LINK="-fsanitize=fuzzer,address,undefined"
SRCS="$(ls common/*.c costmodel/*.c import/*.c) $(ls solver/space_*.c solver/query_*.c solver/fset_*.c solver/answer_*.c)"
# the request target runs the whole server: every server file but main() and the CLI,
# and the solver's Z3 answers the server gives (solver/z3/)
SERVER_SRCS="$(ls server/srv_*.c server/api_*.c cache/cache*.c solver/z3/*.c | grep -v srv_main.c)"
case " $TARGETS " in *" request "*) all="$SRCS $SERVER_SRCS" ;; *) all="$SRCS" ;; esac

# one object per source file, named after its path (a/b.c -> a_b.o),
# compiled JOBS at a time
build_targets() {
	objname() { echo "$obj/$(echo "${1%.c}" | tr / _).o"; }
	export CFLAGS
	for f in $all; do echo "$f $(objname "$f")"; done |
		xargs -P "$JOBS" -n 2 sh -c 'clang $CFLAGS -c -o "$2" "$1"' sh
	common_objs=""
	for f in $SRCS; do common_objs="$common_objs $(objname "$f")"; done
	server_objs=""
	for f in $SERVER_SRCS; do server_objs="$server_objs $(objname "$f")"; done

	for target in $TARGETS; do
		extra=""
		[ "$target" = request ] && extra="$server_objs $(pkg-config --libs libmicrohttpd libpq nettle) -lz3 -lpthread"
		rm -f "$out/fuzz_$target"
		# shellcheck disable=SC2086
		clang $CFLAGS $LINK -o "$out/fuzz_$target" "tests/fuzz/fuzz_$target.c" $common_objs $extra \
			$(pkg-config --libs jansson) -lgmp -lm
		rm -rf "$out/corpus_$target"
		mkdir -p "$out/corpus_$target"
	done
}
# (called from an if's body, not from a || list, so that set -e stops a failed build)
if [ "$phase" != --run ]; then
	build_targets
fi
if [ "$phase" = --build ]; then
	exit 0
fi
for target in $TARGETS; do
	if [ ! -x "$out/fuzz_$target" ]; then
		echo "run-fuzz.sh: $out/fuzz_$target is missing (tests/fuzz/run-fuzz.sh --build builds it)" >&2
		exit 1
	fi
done

# run one target; its status goes to $out/fuzz_<target>.status. A unit
# over 30 s is a hang: the slowest seed (corpus/model/resnet.json, every
# hyperparameter of the ResNet template free) takes 2.7 s alone under the
# sanitizers and went past the 10 s this used to allow on two cores
# shared by two fuzzers and a test run
run_target() {
	if "$out/fuzz_$1" -max_total_time="$SECONDS_EACH" -timeout=30 -rss_limit_mb=2048 \
		-max_len=65536 -artifact_prefix=tests/fuzz/ -print_final_stats=1 \
		"$out/corpus_$1" "tests/fuzz/corpus/$1" >"$out/fuzz_$1.log" 2>&1; then
		echo 0 >"$out/fuzz_$1.status"
	else
		echo 1 >"$out/fuzz_$1.status"
	fi
}

running=0
for target in $TARGETS; do
	echo "fuzz_$target: ${SECONDS_EACH}s"
	rm -f "$out/fuzz_$target.status"
	run_target "$target" &
	running=$((running + 1))
	if [ "$running" -ge "$JOBS" ]; then
		wait
		running=0
	fi
done
wait

failed=0
for target in $TARGETS; do
	if [ "$(cat "$out/fuzz_$target.status" 2>/dev/null)" != 0 ]; then
		tail -60 "$out/fuzz_$target.log"
		echo "fuzz_$target FAILED: the input is in tests/fuzz/ (crash-*, leak-*, timeout-*)"
		failed=1
	else
		echo "fuzz_$target:"
		grep -E "number_of_executed_units|new_units_added|peak_rss" "$out/fuzz_$target.log"
	fi
done
exit "$failed"
