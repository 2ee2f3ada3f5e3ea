#!/bin/sh
# tests/browser/test_dashboard.sh - `make check`'s entry for the dashboard's
# end-to-end test (tests/browser/test_dashboard.js): installs playwright-core
# with `npm ci` when node_modules is missing, then runs the test in Debian's
# headless Chromium against the real dnnsatd. Fails (never skips) when node,
# npm or Chromium is missing.
top_srcdir="${top_srcdir:-.}"
top_builddir="${top_builddir:-.}"
export top_srcdir top_builddir
dir="$top_srcdir/tests/browser"
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
export CHROMIUM
for tool in node npm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "test_dashboard.sh: FAIL: $tool is missing (scripts/install-deps.sh installs nodejs and npm)" >&2
		exit 1
	fi
done
if [ ! -x "$CHROMIUM" ]; then
	echo "test_dashboard.sh: FAIL: $CHROMIUM is missing (scripts/install-deps.sh installs chromium)" >&2
	exit 1
fi
if [ ! -f "$dir/node_modules/playwright-core/package.json" ]; then
	(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) || {
		echo "test_dashboard.sh: FAIL: npm ci in $dir failed" >&2
		exit 1
	}
fi
exec node "$dir/test_dashboard.js"
