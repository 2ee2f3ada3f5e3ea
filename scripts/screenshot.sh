#!/bin/sh
# scripts/screenshot.sh [OUT.png] - the dashboard picture of README.md and
# docs/walkthrough.md (default docs/dashboard.png): starts the built dnnsatd
# on a free loopback port (in-memory cache), lets Debian's headless
# Chromium load the dashboard - which opens on the ResNet template with its
# example NNI space, an A100 40 GB and Adam fp32 training, and solves it -
# and saves what a 1280x900 window shows. Needs ./dnnsatd (scripts/build.sh)
# and chromium (scripts/install-deps.sh installs both).
set -eu
cd "$(dirname "$0")/.."
out="${1:-docs/dashboard.png}"
[ -x ./dnnsatd ] || { echo "screenshot: build first (./scripts/build.sh)" >&2; exit 1; }
command -v chromium >/dev/null || { echo "screenshot: chromium is missing (apt-get install chromium)" >&2; exit 1; }
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
tmp=$(mktemp -d)
pid=
cleanup() {
	[ -z "$pid" ] || { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
	rm -rf "$tmp"
}
trap cleanup EXIT
./dnnsatd --listen "127.0.0.1:$port" --access-log off >"$tmp/dnnsatd.log" 2>&1 &
pid=$!
i=0
until curl -sf -o /dev/null "http://127.0.0.1:$port/healthz"; do
	i=$((i + 1))
	if [ $i -ge 300 ] || ! kill -0 "$pid" 2>/dev/null; then
		cat "$tmp/dnnsatd.log" >&2
		exit 1
	fi
	sleep 0.1
done
# the virtual time budget lets the page's scripts load the catalog and the
# first reduction before the picture is taken
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$tmp/profile" \
	--virtual-time-budget=15000 --window-size=1280,900 --screenshot="$tmp/shot.png" \
	"http://127.0.0.1:$port/" >"$tmp/chromium.log" 2>&1 || { cat "$tmp/chromium.log" >&2; exit 1; }
[ -s "$tmp/shot.png" ] || { echo "screenshot: chromium wrote no picture" >&2; cat "$tmp/chromium.log" >&2; exit 1; }
cp "$tmp/shot.png" "$out"
echo "screenshot: $out"
