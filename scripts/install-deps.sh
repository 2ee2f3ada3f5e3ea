#!/bin/sh
# scripts/install-deps.sh - installs every Debian 12 package dnnsat needs to
# build, test and run (the one list shared by README's commands, .ci/run and
# docker/Dockerfile, so they cannot drift). Safe to run again. Needs root or
# sudo; skips apt when everything is already installed.
#   --build-only   only what building needs (docker/Dockerfile's build stage)
set -eu

BUILD="build-essential autoconf automake pkg-config libjansson-dev libmicrohttpd-dev libz3-dev libpq-dev libgmp-dev libcurl4-openssl-dev nettle-dev check"
TEST="clang libclang-rt-14-dev python3 python3-jsonschema python3-optuna python3-matplotlib python3-onnx valgrind postgresql chromium nodejs npm nginx-light python3-yaml wrk"
PKGS="$BUILD $TEST ${DNNSAT_EXTRA_PACKAGES:-}"
case "${1:-}" in
--build-only) PKGS="$BUILD" ;;
"") ;;
*)
	echo "install-deps: unknown option '$1' (expected --build-only or nothing)" >&2
	exit 2
	;;
esac

# installed, or provided by an installed package (NodeSource's nodejs
# provides npm, and conflicts with Debian's)
present() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed" ||
		dpkg-query -W -f='${db:Status-Abbrev}|${Provides}\n' 2>/dev/null | sed -n 's/^ii *|//p' |
		tr ',' '\n' | sed 's/ *(.*//; s/^ *//' | grep -qx "$1"
}

missing=""
for p in $PKGS; do
	present "$p" || missing="$missing $p"
done
if [ -z "$missing" ]; then
	echo "install-deps: all packages present"
	exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing$missing"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
