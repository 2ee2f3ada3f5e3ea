#!/bin/sh
# tests/e2e/test_service.sh - `make check`'s entry for the end-to-end test of
# dnnsatd (tests/e2e/test_service.py): runs it next to a throwaway
# PostgreSQL (tests/pg/with_pg.sh hands over its URL and directory; the test
# starts the real daemon against it, and stops and starts the PostgreSQL
# server itself to test an outage). Fails (never skips) when PostgreSQL or
# /usr/bin/python3 is missing.
top_srcdir="${top_srcdir:-.}"
top_builddir="${top_builddir:-.}"
export top_srcdir top_builddir
PYTHON=/usr/bin/python3
if [ ! -x "$PYTHON" ]; then
	echo "test_service.sh: FAIL: $PYTHON is missing (the test uses Debian's python3)" >&2
	exit 1
fi
exec sh "$top_srcdir/tests/pg/with_pg.sh" e2e "$PYTHON" "$top_srcdir/tests/e2e/test_service.py"
