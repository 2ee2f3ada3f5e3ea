#!/bin/sh
# docker/compose-test.sh - runs docker/compose.yaml for real, as a throwaway
# project of its own (its own containers, network and volume, removed at
# the end): the service reports the database ready, answers a reduction,
# and after `down` and `up` again answers the same request from the
# PostgreSQL volume (a cache hit in a fresh process).
#
#   docker/compose-test.sh                  (from the repository root)
#
# COMPOSE picks the tool (default "docker compose" when a Docker engine
# answers, else podman-compose); COMPOSE_UP_FLAGS adds flags to `up` (for
# instance --no-build when the dnnsat image is already built). Needs
# 127.0.0.1:8080 free (compose.yaml publishes it), curl and python3.
set -eu

if [ -z "${COMPOSE:-}" ]; then
	if docker info >/dev/null 2>&1; then COMPOSE="docker compose"; else COMPOSE=podman-compose; fi
fi
here=$(cd "$(dirname "$0")/.." && pwd)
project="dnnsat-compose-test-$$"
base=http://127.0.0.1:8080
tmp=$(mktemp -d)

compose() {
	# shellcheck disable=SC2086 # COMPOSE may be two words
	$COMPOSE -p "$project" -f "$here/docker/compose.yaml" "$@" >>"$tmp/compose.log" 2>&1
}

cleanup() {
	compose down -v || true
	rm -rf "$tmp"
}

fail() {
	echo "compose-test: FAIL: $*" >&2
	tail -30 "$tmp/compose.log" >&2 || true
	exit 1
}

ok() {
	echo "compose-test: ok: $*"
}

# wait_ready: until /readyz reports the database (90 s at most).
wait_ready() {
	i=0
	until curl -fsS "$base/readyz" 2>/dev/null | grep '"database": *"ok"' >/dev/null; do
		i=$((i + 1))
		[ $i -lt 450 ] || fail "/readyz did not report the database within 90 s: $(curl -sS "$base/readyz" 2>&1)"
		sleep 0.2
	done
}

reduce() {
	curl -sS -o "$tmp/body" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
		--data @"$here/examples/api/reduction-query.json" "$base/v1/reductions"
}

if curl -fsS -o /dev/null "$base/healthz" 2>/dev/null; then
	echo "compose-test: 127.0.0.1:8080 is taken: stop what listens there first" >&2
	exit 2
fi
trap cleanup EXIT INT TERM
# shellcheck disable=SC2086
compose up -d ${COMPOSE_UP_FLAGS:-} || fail "$COMPOSE up"
wait_ready
ok "up: /readyz reports the database"
code=$(reduce)
[ "$code" = 201 ] || [ "$code" = 200 ] || fail "POST /v1/reductions answered $code"
first=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["feasible"])' "$tmp/body")
ok "POST /v1/reductions: $code, $first feasible"
compose down || fail "$COMPOSE down"
# shellcheck disable=SC2086
compose up -d ${COMPOSE_UP_FLAGS:-} || fail "$COMPOSE up (again)"
wait_ready
code=$(reduce)
[ "$code" = 200 ] || fail "the repeated POST answered $code (200 from the cache expected)"
again=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["feasible"])' "$tmp/body")
[ "$again" = "$first" ] || fail "the repeated request gave $again, first $first"
metrics=$(curl -fsS "$base/metrics")
echo "$metrics" | grep -Eq '^dnnsat_cache_hits_total [1-9]' || fail "no cache hit in the new process"
ok "down and up: the same request answered from the PostgreSQL volume"
echo "compose-test: all checks passed"
