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
# the packages go next to the sources when they are there already (an
# in-tree build), else into the build tree: a VPATH build (make distcheck)
# may not write into the source tree
mods="$dir"
if [ ! -f "$dir/node_modules/playwright-core/package.json" ]; then
	mods="$top_builddir/tests/browser"
	mkdir -p "$mods" || exit 1
	if [ "$(cd "$dir" && pwd)" != "$(cd "$mods" && pwd)" ]; then
		cp "$dir/package.json" "$dir/package-lock.json" "$mods/" || exit 1
		chmod u+w "$mods/package.json" "$mods/package-lock.json"
	fi
fi
if [ ! -f "$mods/node_modules/playwright-core/package.json" ]; then
	(cd "$mods" && npm ci --no-audit --no-fund --loglevel=error) || {
		echo "test_dashboard.sh: FAIL: npm ci in $mods failed" >&2
		exit 1
	}
fi
NODE_PATH="$(cd "$mods" && pwd)/node_modules${NODE_PATH:+:$NODE_PATH}"
export NODE_PATH
exec node "$dir/test_dashboard.js"
