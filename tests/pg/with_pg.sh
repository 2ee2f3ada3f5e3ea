#!/bin/sh
# tests/pg/with_pg.sh - runs a command next to a throwaway PostgreSQL:
#
#   with_pg.sh NAME CMD [ARGS...]
#
# starts a server with pg_tmp.sh in a fresh mktemp directory, exports
# DNNSAT_TEST_DATABASE_URL (its libpq URL), DNNSAT_TEST_PG_DIR (its
# directory, for pg_tmp.sh stop-server / start-server) and PG_TMP_SH, runs
# the command, always stops the server, and exits with the command's
# status. Fails (never skips) when PostgreSQL cannot start: CI installs it.
# NAME only labels the messages and the directory.
set -u
[ $# -ge 2 ] || { echo "usage: with_pg.sh NAME CMD [ARGS...]" >&2; exit 2; }
name=$1
shift
PG_TMP="$(dirname "$0")/pg_tmp.sh"
# the directory is the mktemp directory itself: as root, pg_tmp.sh chowns it
# to the postgres user, who could not enter a 0700 root directory above it
pgdir=$(mktemp -d "${TMPDIR:-/tmp}/dnnsat-$name-pg.XXXXXX") || exit 1
trap 'sh "$PG_TMP" stop "$pgdir"' EXIT
trap 'exit 1' HUP INT TERM
if ! url=$(sh "$PG_TMP" start "$pgdir"); then
	echo "$name: FAIL: cannot start a throwaway PostgreSQL (see above); this test needs the postgresql package" >&2
	exit 1
fi
DNNSAT_TEST_DATABASE_URL=$url
DNNSAT_TEST_PG_DIR=$pgdir
PG_TMP_SH=$PG_TMP
export DNNSAT_TEST_DATABASE_URL DNNSAT_TEST_PG_DIR PG_TMP_SH
"$@"
