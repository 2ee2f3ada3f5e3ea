#!/bin/sh
# tests/unit/test_cache.sh - `make check`'s entry for the cache tests: runs
# tests/unit/test_cache next to a throwaway PostgreSQL (tests/pg/with_pg.sh)
# so that its PostgreSQL cases run too. Fails (never skips) when PostgreSQL
# is not installed: CI installs it.
top_srcdir="${top_srcdir:-.}"
top_builddir="${top_builddir:-.}"
exec sh "$top_srcdir/tests/pg/with_pg.sh" test_cache "$top_builddir/tests/unit/test_cache"
