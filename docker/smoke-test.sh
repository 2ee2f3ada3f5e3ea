#!/bin/sh
# docker/smoke-test.sh - runs a built dnnsat image for real and checks what
# an operator relies on: the service answers on its published port with the
# in-memory cache, as the unprivileged user, with the CLI and data files in
# place; a reduction is created, read and checked; SIGTERM stops it cleanly;
# and against a throwaway PostgreSQL (tests/pg/pg_tmp.sh, on the host) it
# reports the database ready and answers a repeated request from the cache
# after the container is replaced.
#
#   docker/smoke-test.sh [IMAGE]          (default dnnsat:latest; from the repository root)
#
# CONTAINER=docker|podman picks the engine (default: docker when its engine
# answers, else podman). Needs curl and python3 on the host, and the
# PostgreSQL server package for the second half (SKIP_PG=1 skips it).
# Exits non-zero at the first check that fails, naming it; removes its
# containers and database on the way out.
set -eu

IMAGE=${1:-dnnsat:latest}
if [ -z "${CONTAINER:-}" ]; then
	if docker info >/dev/null 2>&1; then CONTAINER=docker; else CONTAINER=podman; fi
fi
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
chmod 755 "$tmp"        # pg_tmp.sh's server runs as the postgres user
name="dnnsat-smoke-$$"
pgdir="$tmp/pg"
pg_started=0

cleanup() {
	$CONTAINER rm -f "$name" >/dev/null 2>&1 || true
	[ "$pg_started" -eq 0 ] || sh "$here/tests/pg/pg_tmp.sh" stop "$pgdir" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

fail() {
	echo "smoke-test: FAIL: $*" >&2
	if $CONTAINER inspect "$name" >/dev/null 2>&1; then
		$CONTAINER logs "$name" 2>&1 | tail -20 >&2
	fi
	exit 1
}

ok() {
	echo "smoke-test: ok: $*"
}

free_port() {
	python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# wait_up URL: until GET URL answers 200 (20 s at most).
wait_up() {
	i=0
	until curl -fsS -o /dev/null "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 100 ] || fail "no answer from $1 within 20 s"
		sleep 0.2
	done
}

# field JSON KEY: the value of a top-level key (strings unquoted).
field() {
	python3 -c 'import json, sys
v = json.loads(sys.argv[1]).get(sys.argv[2])
print(v if isinstance(v, str) else json.dumps(v))' "$1" "$2"
}

# --- 1. in-memory default, as README's first command runs it ---
port=$(free_port)
$CONTAINER run -d --name "$name" -p "127.0.0.1:$port:8080" "$IMAGE" >/dev/null || fail "the image does not start"
base="http://127.0.0.1:$port"
wait_up "$base/healthz"
ok "GET /healthz on the published port"
[ "$(field "$(curl -fsS "$base/readyz")" database)" = memory ] || fail "/readyz does not report the in-memory cache"
ok "/readyz: database memory"
[ "$($CONTAINER exec "$name" id -u)" = 10001 ] || fail "the service does not run as uid 10001"
ok "runs as uid 10001"
$CONTAINER exec "$name" dnnsat devices | grep -q a100 || fail "the CLI in the image lists no devices"
ok "the CLI in the image reads the device catalog"
curl -fsSL -o /dev/null "$base/openapi.json" || fail "GET /openapi.json"
ok "GET /openapi.json"

created=$(curl -sS -w '\n%{http_code}' -X POST -H 'Content-Type: application/json' \
	--data @"$here/examples/api/reduction-query.json" "$base/v1/reductions")
code=$(printf '%s\n' "$created" | tail -n 1)
body=$(printf '%s\n' "$created" | sed '$d')
[ "$code" = 201 ] || fail "POST /v1/reductions answered $code"
id=$(field "$body" id)
feasible=$(field "$body" feasible)
ok "POST /v1/reductions: 201, $feasible feasible configurations, id $id"
[ "$(field "$(curl -fsS "$base/v1/reductions/$id")" feasible)" = "$feasible" ] || fail "GET /v1/reductions/$id"
ok "GET /v1/reductions/$id"
check=$(curl -fsS "$base/v1/reductions/$id/check?batch_size=32&block=basic&layers3=4&width=64&resolution=224&lr=0.01") ||
	fail "GET /v1/reductions/$id/check"
case "$(field "$check" feasible)" in
true | false) ok "GET /v1/reductions/$id/check: feasible $(field "$check" feasible)" ;;
*) fail "the check answer has no feasible field: $check" ;;
esac
metrics=$(curl -fsS "$base/metrics") || fail "GET /metrics"
echo "$metrics" | grep -q '^dnnsat_http_requests_total' || fail "/metrics has no request counter"
ok "GET /metrics"

t0=$(date +%s)
$CONTAINER stop -t 30 "$name" >/dev/null
t1=$(date +%s)
[ "$($CONTAINER inspect "$name" --format '{{.State.ExitCode}}')" = 0 ] || fail "dnnsatd exited non-zero on SIGTERM"
[ $((t1 - t0)) -lt 10 ] || fail "SIGTERM took $((t1 - t0)) s"
$CONTAINER logs "$name" 2>&1 | grep -q "SIGTERM received" || fail "no SIGTERM line in the log"
ok "SIGTERM: clean exit 0 in $((t1 - t0)) s"
$CONTAINER rm "$name" >/dev/null

# --- 2. with PostgreSQL: ready, and the cache outlives the container ---
if [ "${SKIP_PG:-0}" = 1 ]; then
	echo "smoke-test: PostgreSQL part skipped (SKIP_PG=1)"
	echo "smoke-test: all checks passed"
	exit 0
fi
url=$(sh "$here/tests/pg/pg_tmp.sh" start "$pgdir") || fail "could not start a throwaway PostgreSQL"
pg_started=1
port=$(free_port)
base="http://127.0.0.1:$port"
run_pg() {
	$CONTAINER run -d --name "$name" --network host -e DNNSAT_DATABASE_URL="$url" "$IMAGE" \
		dnnsatd --listen "127.0.0.1:$port" >/dev/null || fail "the image does not start with a database"
	wait_up "$base/healthz"
}
run_pg
[ "$(field "$(curl -fsS "$base/readyz")" database)" = ok ] || fail "/readyz does not report the database"
ok "/readyz with PostgreSQL: database ok"
code=$(curl -sS -o "$tmp/r1" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
	--data @"$here/examples/api/reduction-query.json" "$base/v1/reductions")
[ "$code" = 201 ] || fail "POST /v1/reductions with PostgreSQL answered $code"
$CONTAINER stop -t 30 "$name" >/dev/null
$CONTAINER rm "$name" >/dev/null
run_pg
code=$(curl -sS -o "$tmp/r2" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
	--data @"$here/examples/api/reduction-query.json" "$base/v1/reductions")
[ "$code" = 200 ] || [ "$code" = 201 ] || fail "the repeated POST answered $code"
[ "$(field "$(cat "$tmp/r2")" feasible)" = "$(field "$(cat "$tmp/r1")" feasible)" ] ||
	fail "the repeated request gave another count"
# a new process starts with an empty memory: a hit is PostgreSQL's
metrics=$(curl -fsS "$base/metrics") || fail "GET /metrics"
echo "$metrics" | grep -Eq '^dnnsat_cache_hits_total [1-9]' ||
	fail "the new container did not answer from the PostgreSQL cache: $(echo "$metrics" | grep cache)"
ok "a new container answers the repeated request from PostgreSQL"
$CONTAINER stop -t 30 "$name" >/dev/null
echo "smoke-test: all checks passed"
