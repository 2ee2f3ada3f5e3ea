#!/bin/sh
# examples/batch/prune_examples.sh - batch pruning from a script: the search
# spaces of examples/spaces/ pruned for three GPUs (T4, V100 16 GB, A100 40 GB)
# in one `dnnsat prune` run, each space with its own model through a query
# file in examples/batch/queries/ (resnet -> the resnet50 preset, cnn5 and
# transformer24 -> the models of examples/models/, mlp -> the mlp template).
# transformer24 (4^48 configurations) has a 3 s deadline in its query file:
# its count stops at certified bounds, so prune exits 3, which this script
# reports and accepts. Budget: 90% of each GPU's memory.
#
#   examples/batch/prune_examples.sh                  # offline, files in a temporary directory
#   OUT=pruned examples/batch/prune_examples.sh       # keep the files in ./pruned
#   examples/batch/prune_examples.sh --server http://127.0.0.1:8080   # ask a dnnsatd instead
#
# Writes per (space, GPU) the reduced space SPACE.GPU.search_space.json (a
# drop-in NNI search_space.json) and up to 100 feasible configurations as
# CSV (SPACE.GPU.configs.csv), and prints the summary table.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
DNNSAT="${DNNSAT:-$top/dnnsat}"
out="${OUT:-$(mktemp -d)}"

"$DNNSAT" prune "$here/queries" --device t4,v100-16gb,a100-40gb --budget memory=90% \
	--timeout 60 --out "$out" --configs csv --limit 100 "$@"
status=$?
case $status in
0) echo "all counts exact; files in $out" ;;
3) echo "some counts stopped at their deadline (certified bounds, no files for them); files in $out" ;;
*) echo "dnnsat prune failed (exit status $status)" >&2; exit "$status" ;;
esac
