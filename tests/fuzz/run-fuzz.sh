#!/bin/sh
# tests/fuzz/run-fuzz.sh - builds the libFuzzer targets (clang, ASan + UBSan)
# and runs each for FUZZ_SECONDS (default 60) from the committed seed corpus
# in tests/fuzz/corpus/<target>. New inputs go to a scratch directory; a crash
# leaves its input in tests/fuzz/ and fails the run. Bounded in time: CI runs it.
set -eu
cd "$(dirname "$0")/../.."
SECONDS_EACH="${FUZZ_SECONDS:-60}"
out=tests/fuzz/out
mkdir -p "$out"
CFLAGS="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE -Icommon -Icostmodel -Iimport -Isolver -Icache -Iserver $(pkg-config --cflags jansson libmicrohttpd libpq)"
SRCS="$(ls common/*.c costmodel/*.c import/*.c) $(ls solver/space_*.c solver/query_parse.c solver/fset_*.c solver/answer_*.c)"
# the request target runs the whole server: every server file but main() and the CLI,
# and the solver's Z3 answers the server gives (solver/z3/)
SERVER_SRCS="$(ls server/srv_*.c server/api_*.c cache/cache*.c solver/z3/*.c | grep -v srv_main.c)"
VERSION="$(sed -n 's/^AC_INIT(\[dnnsat\], \[\([^]]*\)\].*/\1/p' configure.ac)"
for target in ${FUZZ_TARGETS:-model expr space query progress request onnx}; do
	extra=""
	[ "$target" = request ] && extra="-Isolver/z3 $SERVER_SRCS $(pkg-config --libs libmicrohttpd libpq nettle) -lz3 -lpthread"
	clang $CFLAGS -DDNNSAT_PKGDATADIR="\"$PWD\"" -DPACKAGE_VERSION="\"$VERSION\"" -o "$out/fuzz_$target" \
		"tests/fuzz/fuzz_$target.c" $SRCS $extra $(pkg-config --libs jansson) -lgmp -lm
	rm -rf "$out/corpus_$target"
	mkdir -p "$out/corpus_$target"
	echo "fuzz_$target: ${SECONDS_EACH}s"
	if ! "$out/fuzz_$target" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
		-max_len=65536 -artifact_prefix=tests/fuzz/ -print_final_stats=1 \
		"$out/corpus_$target" "tests/fuzz/corpus/$target" >"$out/fuzz_$target.log" 2>&1; then
		tail -60 "$out/fuzz_$target.log"
		echo "fuzz_$target FAILED: the input is in tests/fuzz/ (crash-*, leak-*, timeout-*)"
		exit 1
	fi
	grep -E "number_of_executed_units|new_units_added|peak_rss" "$out/fuzz_$target.log"
done
