#!/bin/sh
# tests/unit/test_cache.sh - `make check`'s entry for the cache tests: starts
# a throwaway PostgreSQL (tests/pg/pg_tmp.sh) so that tests/unit/test_cache
# runs its PostgreSQL cases too, and always stops it again. Fails (never
# skips) when PostgreSQL is not installed: CI installs it.
set -u
top_srcdir="${top_srcdir:-.}"
top_builddir="${top_builddir:-.}"
PG_TMP="$top_srcdir/tests/pg/pg_tmp.sh"

pgdir=$(mktemp -d "${TMPDIR:-/tmp}/dnnsat-pg.XXXXXX") || exit 1
trap 'sh "$PG_TMP" stop "$pgdir"' EXIT
trap 'exit 1' HUP INT TERM
if ! url=$(sh "$PG_TMP" start "$pgdir"); then
	echo "test_cache.sh: FAIL: cannot start a throwaway PostgreSQL (see above); the cache tests need the postgresql package" >&2
	exit 1
fi
DNNSAT_TEST_DATABASE_URL=$url
DNNSAT_TEST_PG_DIR=$pgdir
PG_TMP_SH=$PG_TMP
export DNNSAT_TEST_DATABASE_URL DNNSAT_TEST_PG_DIR PG_TMP_SH
"$top_builddir/tests/unit/test_cache"
