#!/bin/sh
# scripts/run.sh - README's first command: installs what dnnsat needs, builds
# it and starts the service, dnnsatd, on http://127.0.0.1:8080/ with the
# in-memory cache (no database needed), in the foreground: Ctrl-C stops it
# cleanly. Settings come from flags after the script's name or DNNSAT_*
# variables (./dnnsatd --help), e.g. ./scripts/run.sh --listen 127.0.0.1:9000
# or DNNSAT_DATABASE_URL=postgresql://... ./scripts/run.sh
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
listen="${DNNSAT_LISTEN:-127.0.0.1:8080}"
url="http://$listen"
cat <<MSG

dnnsat is starting (Ctrl-C to stop). Point a browser at
  $url/                          the budget dashboard
or curl at:
  $url/v1/templates             the model templates, their hyperparameters and presets
  $url/v1/devices               the GPU catalog
  $url/schemas/openapi.json     the API contract (OpenAPI 3.1); docs/api.md in prose
  $url/metrics                  Prometheus metrics
and try a reduction (docs/api.md describes every call):
  curl -s -H 'Content-Type: application/json' --data @examples/api/reduction-query.json $url/v1/reductions

MSG
exec ./dnnsatd --listen "$listen" "$@"
