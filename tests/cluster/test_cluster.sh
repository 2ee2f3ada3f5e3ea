#!/bin/sh
# tests/cluster/test_cluster.sh - `make check`'s entry for the cluster fault
# test (tests/cluster/test_cluster.py): three dnnsatd replicas behind
# Debian's nginx on loopback, next to a throwaway PostgreSQL
# (tests/pg/with_pg.sh hands over its URL and directory).
#
#   DNNSAT_CLUSTER_SECONDS=600 DNNSAT_CLUSTER_RESTART_EVERY=60 \
#       nice -n 10 tests/cluster/test_cluster.sh      (the 10-minute run)
#
# Defaults: 60 s of mixed load with a restart every 15 s (CI). The whole
# run is bounded by `timeout` (the load's length + 25 minutes, room for an
# AddressSanitizer build sharing the cores with other tests) on top of
# the Python test's own limit. Fails (never skips) when PostgreSQL, nginx
# or /usr/bin/python3 is missing: scripts/install-deps.sh installs them.
# DNNSAT_TEST_CLUSTER=0 skips it (exit 77, SKIP in the log): scripts/test.sh
# runs it once, in the plain pass, whose replicas' RSS it can compare (an
# AddressSanitizer build's grows with its quarantine), and .ci/run's
# distcheck skips it as a repeat
if [ "${DNNSAT_TEST_CLUSTER:-1}" = 0 ]; then
	echo "test_cluster.sh: skipped (DNNSAT_TEST_CLUSTER=0)"
	exit 77
fi
top_srcdir="${top_srcdir:-.}"
top_builddir="${top_builddir:-.}"
export top_srcdir top_builddir
PYTHON=/usr/bin/python3
DNNSAT_TEST_NGINX="${DNNSAT_TEST_NGINX:-/usr/sbin/nginx}"
export DNNSAT_TEST_NGINX
for f in "$PYTHON" "$DNNSAT_TEST_NGINX"; do
	if [ ! -x "$f" ]; then
		echo "test_cluster.sh: FAIL: $f is missing (scripts/install-deps.sh installs python3 and nginx-light)" >&2
		exit 1
	fi
done
secs="${DNNSAT_CLUSTER_SECONDS:-60}"
limit=$(( ${secs%.*} + 1500 ))
DNNSAT_CLUSTER_LIMIT="${DNNSAT_CLUSTER_LIMIT:-$limit}"
export DNNSAT_CLUSTER_LIMIT
exec timeout -k 30 $((DNNSAT_CLUSTER_LIMIT + 60)) \
	sh "$top_srcdir/tests/pg/with_pg.sh" cluster "$PYTHON" "$top_srcdir/tests/cluster/test_cluster.py"
