#!/bin/sh
# scripts/install-deps.sh - installs every Debian 12 package dnnsat needs to
# build, test and run (the one list shared by README's commands, .ci/run and
# docker/Dockerfile, so they cannot drift). Safe to run again. Needs root or
# sudo; skips apt when everything is already installed.
set -eu

BUILD="build-essential autoconf automake pkg-config libjansson-dev libmicrohttpd-dev libz3-dev libpq-dev libgmp-dev libcurl4-openssl-dev check"
TEST="clang libclang-rt-14-dev python3 python3-jsonschema valgrind postgresql"
PKGS="$BUILD $TEST ${DNNSAT_EXTRA_PACKAGES:-}"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
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
