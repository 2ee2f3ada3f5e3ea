#!/bin/sh
# tests/cli/test_run.sh - README's first command prints the URLs the service
# really answers on. scripts/run.sh (with --no-build: dnnsatd is already
# built here) is started with the listen address given as a flag, as
# --listen=VALUE, and as DNNSAT_LISTEN; each time the URL it prints for the
# dashboard must be the address dnnsatd listens on, and that URL must answer.
# A free port is chosen per case (never 8080, which a developer's own
# service may hold). Also: a wildcard address prints a loopback URL, and
# --help reaches dnnsatd without a banner.
set -eu
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
src=$(cd "$top_srcdir" && pwd)
# run.sh starts the dnnsatd of its own tree (scripts/build.sh builds in the
# source tree); a build elsewhere (make distcheck) has none there
[ -x "$src/dnnsatd" ] || { echo "test_run: skipped, $src/dnnsatd is not built in the source tree"; exit 77; }
run_sh=${RUN_SH:-$src/scripts/run.sh}
command -v curl >/dev/null || { echo "test_run: curl is needed" >&2; exit 1; }

tmp=$(mktemp -d)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0

free_port() {
	/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start NAME [ENV=VALUE] -- ARGS...: runs scripts/run.sh --no-build ARGS in
# the background, waits for
# dnnsatd's own "listening on" line (up to 60 s), and leaves the banner in
# $tmp/NAME.out.
start() {
	name=$1
	shift
	env_set=
	while [ "$1" != -- ]; do env_set="$env_set $1"; shift; done
	shift
	# shellcheck disable=SC2086
	env $env_set DNNSAT_DATA_DIR="$src/schemas" sh "$run_sh" --no-build --access-log off "$@" \
		>"$tmp/$name.out" 2>"$tmp/$name.err" &
	pid=$!
	i=0
	while ! grep -q 'listening on' "$tmp/$name.out" "$tmp/$name.err" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 600 ] || ! kill -0 "$pid" 2>/dev/null; then
			echo "FAIL $name: dnnsatd did not start:" >&2
			cat "$tmp/$name.out" "$tmp/$name.err" >&2
			fails=$((fails + 1))
			return 1
		fi
		sleep 0.1
	done
}

stop() {
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=
}

# check NAME EXPECTED_URL: the banner's dashboard URL is EXPECTED_URL, no
# banner line names another port, and the URL answers.
check() {
	name=$1
	want=$2
	got=$(sed -n 's|^  \(http://[^ ]*/\) .*the budget dashboard.*|\1|p' "$tmp/$name.out" | head -1)
	if [ "$got" != "$want" ]; then
		echo "FAIL $name: run.sh printed '$got' for the dashboard, dnnsatd listens on '$want'" >&2
		cat "$tmp/$name.out" >&2
		fails=$((fails + 1))
		return 0
	fi
	others=$(sed '/^dnnsatd: /,$d' "$tmp/$name.out" | grep -o 'http://[^/ ]*' | sort -u | grep -vxF "${want%/}" || true)
	if [ -n "$others" ]; then
		echo "FAIL $name: the banner also names $others" >&2
		fails=$((fails + 1))
		return 0
	fi
	if ! curl -sf -o /dev/null "${want}healthz"; then
		echo "FAIL $name: $want does not answer" >&2
		fails=$((fails + 1))
		return 0
	fi
	echo "ok $name: $want"
}

p=$(free_port)
if start flag -- --listen "127.0.0.1:$p"; then check flag "http://127.0.0.1:$p/"; stop; fi

p=$(free_port)
if start flag_eq -- "--listen=127.0.0.1:$p"; then check flag_eq "http://127.0.0.1:$p/"; stop; fi

p=$(free_port)
if start env DNNSAT_LISTEN="127.0.0.1:$p" --; then check env "http://127.0.0.1:$p/"; stop; fi

# the flag wins over the variable, as in dnnsatd
p=$(free_port)
q=$(free_port)
if start both DNNSAT_LISTEN="127.0.0.1:$q" -- --listen "127.0.0.1:$p"; then check both "http://127.0.0.1:$p/"; stop; fi

# another flag's value that looks like --listen is not the listen address
p=$(free_port)
if start value DNNSAT_LISTEN="127.0.0.1:$p" -- --access-log --listen; then :; fi
if [ -n "$pid" ]; then check value "http://127.0.0.1:$p/"; stop; fi
rm -f "$src/--listen"

# ":PORT" listens on every address: the browser is pointed at loopback
p=$(free_port)
if start wildcard -- --listen ":$p"; then
	check wildcard "http://127.0.0.1:$p/"
	grep -q 'every address' "$tmp/wildcard.out" ||
		{ echo "FAIL wildcard: the banner does not say the service listens on every address" >&2; fails=$((fails + 1)); }
	stop
fi

# --help goes to dnnsatd, without the banner
DNNSAT_DATA_DIR="$src/schemas" sh "$run_sh" --no-build --help >"$tmp/help.out" 2>&1 || true
if grep -q 'usage: dnnsatd' "$tmp/help.out" && ! grep -q 'Point a browser' "$tmp/help.out"; then
	echo "ok help"
else
	echo "FAIL help: run.sh --help did not show dnnsatd's usage alone" >&2
	cat "$tmp/help.out" >&2
	fails=$((fails + 1))
fi

[ "$fails" -eq 0 ] || { echo "test_run: $fails failure(s)" >&2; exit 1; }
echo "test_run: all passed"
