#!/bin/sh
# scripts/build.sh [configure options] - configures (once per option set) and
# builds dnnsat in the source tree. Used by run.sh and test.sh.
set -eu
cd "$(dirname "$0")/.."
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt Makefile.in ]; then
	autoreconf -fi >/dev/null
fi
want="$*"
have="$(cat .configured-with 2>/dev/null || echo none)"
if [ ! -f Makefile ] || [ "$want" != "$have" ]; then
	[ -f Makefile ] && make -s distclean >/dev/null 2>&1 || true
	./configure -q "$@"
	echo "$want" > .configured-with
fi
make -s -j"$(nproc)"
