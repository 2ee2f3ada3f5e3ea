#!/bin/sh
# tests/install/test_install.sh - `make check`'s test of `make install`:
# installs into a scratch DESTDIR, checks that the programs, the man pages
# and every file of schemas/ and web/ are there, that no source or build
# directory is compiled into the programs, then starts the installed dnnsatd
# from /tmp with no DNNSAT_* variable set (the source tree out of its reach)
# on a free loopback port and fetches its dashboard, a schema, the device
# catalog and the templates: all must come from the installed copy.
top_srcdir="${top_srcdir:-.}"
top_builddir="${top_builddir:-.}"
srcdir_abs=$(cd "$top_srcdir" && pwd)
builddir_abs=$(cd "$top_builddir" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dnnsat-install.XXXXXX") || exit 1
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
. "$top_srcdir/tests/cli/check.sh"

root="$tmp/root"
if ${MAKE:-make} -s -C "$builddir_abs" install DESTDIR="$root" >"$tmp/out" 2>&1; then
	ok make-install
else
	bad make-install
	exit 1
fi

# where they went: the one bin/dnnsatd and the one share/dnnsat of the tree
daemon=$(find "$root" -type f -path '*/bin/dnnsatd' | head -1)
cli=$(find "$root" -type f -path '*/bin/dnnsat' | head -1)
data=$(find "$root" -type f -path '*/dnnsat/schemas/devices.json' | head -1)
data=${data%/schemas/devices.json}
{ [ -x "$daemon" ] && [ -x "$cli" ] && [ -d "$data" ]; } && ok installed-programs-and-data || bad installed-programs-and-data
for man in man1/dnnsat.1 man8/dnnsatd.8; do
	[ -n "$(find "$root" -type f -path "*/man/$man")" ] && ok "man-$man" || bad "man-$man"
done

# every file of schemas/ and web/ (the Makefile.am list is complete), and examples
missing=0
for dir in schemas web examples/spaces examples/models examples/api; do
	for f in $(cd "$srcdir_abs" && find "$dir" -type f ! -name '*.pyc'); do
		if ! cmp -s "$srcdir_abs/$f" "$data/$f"; then
			echo "not installed (or different): $f" >"$tmp/out"
			missing=$((missing + 1))
		fi
	done
done
[ "$missing" -eq 0 ] && ok all-data-files || bad all-data-files

# no source or build path in the programs: their strings, less the install
# directories they must name ($(pkgdatadir), $(bindir): under make distcheck
# these lie inside the source tree), name neither tree
pkgdatadir=${data#"$root"}
bindir=$(dirname "${daemon#"$root"}")
leak=0
for p in "$daemon" "$cli"; do
	LC_ALL=C tr -c '[:print:]' '\n' <"$p" | grep -v -x -F -e "$pkgdatadir" -e "$bindir" >"$tmp/strings"
	if grep -q -F -e "$srcdir_abs" -e "$builddir_abs" "$tmp/strings"; then
		{ echo "$p names $srcdir_abs or $builddir_abs:"; grep -F -e "$srcdir_abs" -e "$builddir_abs" "$tmp/strings"; } >"$tmp/out"
		leak=1
	fi
done
[ "$leak" -eq 0 ] && ok no-source-path || bad no-source-path

# the installed CLI finds its templates and device catalog
for v in $(env | sed -n 's/^\(DNNSAT_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
(cd /tmp && "$cli" estimate --preset resnet18 --device t4) >"$tmp/out" 2>&1 &&
	grep -q "NVIDIA T4" "$tmp/out" && ok installed-cli || bad installed-cli

# the installed daemon, from /tmp, serves the installed files
(cd /tmp && exec "$daemon" --listen 127.0.0.1:0 --access-log off) >"$tmp/daemon.out" 2>"$tmp/daemon.err" &
pid=$!
url=""
for _ in $(seq 1 200); do
	url=$(sed -n 's|^dnnsatd: listening on \(http://[^ ]*\)/ .*|\1|p' "$tmp/daemon.out")
	[ -n "$url" ] && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$url" ]; then
	cp "$tmp/daemon.err" "$tmp/out"
	bad installed-daemon-starts
	exit 1
fi
ok installed-daemon-starts
# GET url: the body into $tmp/out, "status content-type" on stdout
get() {
	/usr/bin/python3 -c 'import sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen(sys.argv[1], timeout=60)
except urllib.error.HTTPError as e:
    r = e
open(sys.argv[2], "wb").write(r.read())
print(r.status, r.headers.get("Content-Type"))' "$url$1" "$tmp/out"
}
same_as() { cmp -s "$tmp/out" "$srcdir_abs/$1"; }
[ "$(get /)" = "200 text/html; charset=utf-8" ] && same_as web/index.html && ok dashboard || bad dashboard
[ "$(get /ui/app.js)" = "200 text/javascript; charset=utf-8" ] && same_as web/app.js && ok dashboard-script ||
	bad dashboard-script
[ "$(get /schemas/openapi.json)" = "200 application/json" ] && same_as schemas/openapi.json && ok openapi || bad openapi
[ "$(get /schemas/api/query.schema.json)" = "200 application/schema+json" ] && same_as schemas/api/query.schema.json &&
	ok schema || bad schema
get /v1/devices | grep -q '^200 ' && grep -q '"T4"\|NVIDIA T4' "$tmp/out" && ok devices || bad devices
get /v1/templates | grep -q '^200 ' && grep -q '"resnet"' "$tmp/out" && ok templates || bad templates
kill "$pid" && wait "$pid"
pid=""

# and `make uninstall` takes it all away again
${MAKE:-make} -s -C "$builddir_abs" uninstall DESTDIR="$root" >"$tmp/out" 2>&1
[ -z "$(find "$root" -type f)" ] && ok uninstall || { find "$root" -type f >"$tmp/out"; bad uninstall; }

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
