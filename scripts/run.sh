#!/bin/sh
# scripts/run.sh - README's first command: installs what dnnsat needs, builds
# it and starts the service, dnnsatd, on http://127.0.0.1:8080/ with the
# in-memory cache (no database needed), in the foreground: Ctrl-C stops it
# cleanly. Settings come from flags after the script's name or DNNSAT_*
# variables (./dnnsatd --help), e.g. ./scripts/run.sh --listen 127.0.0.1:9000
# or DNNSAT_DATABASE_URL=postgresql://... ./scripts/run.sh
#   --no-build   start what is already built (no package check, no build)
#
# The URLs printed are those dnnsatd will listen on: the listen address is
# read as dnnsatd reads it (DNNSAT_LISTEN, then --listen VALUE or
# --listen=VALUE, the last one winning; the value of any other flag is
# skipped, so `--access-log --listen` is not a listen address). A wildcard
# host (":9000", "0.0.0.0:9000", "[::]:9000") is printed as loopback, the
# address a browser on this machine reaches it at. tests/cli/test_run.sh
# checks that the printed URLs answer.
set -eu
cd "$(dirname "$0")/.."

build=1
listen="${DNNSAT_LISTEN:-127.0.0.1:8080}"
tokens="${DNNSAT_TOKEN_FILE:-}"
help=0
# walk the arguments once, dropping --no-build and keeping the rest in order
n=$#
value_of=
while [ "$n" -gt 0 ]; do
	a=$1
	shift
	n=$((n - 1))
	if [ -n "$value_of" ]; then
		case $value_of in
		--listen) listen=$a ;;
		--token-file) tokens=$a ;;
		esac
		value_of=
		set -- "$@" "$a"
		continue
	fi
	case $a in
	--no-build)
		build=0
		continue
		;;
	--help | -h | --version) help=1 ;;
	--listen=*) listen=${a#--listen=} ;;
	--token-file=*) tokens=${a#--token-file=} ;;
	--reuse-port | --*=*) ;;
	--*) value_of=$a ;;
	esac
	set -- "$@" "$a"
done

if [ "$build" -eq 1 ]; then
	./scripts/install-deps.sh
	./scripts/build.sh
fi
[ "$help" -eq 0 ] || exec ./dnnsatd "$@"

# HOST:PORT as dnnsatd takes it (srv_config.c: the last colon splits; an
# IPv6 host may be bracketed; no host means every IPv4 address)
port=${listen##*:}
host=${listen%:*}
[ "$host" != "$listen" ] || host=
host=${host#\[}
host=${host%\]}
everywhere=
case $host in
"" | 0.0.0.0) host=127.0.0.1 everywhere=1 ;;
:: | 0:0:0:0:0:0:0:0) host=::1 everywhere=1 ;;
esac
case $host in
*:*) url="http://[$host]:$port" ;;
*) url="http://$host:$port" ;;
esac

echo
if [ "$port" = 0 ]; then
	# port 0: dnnsatd picks a free one and names it in its first line
	echo "dnnsat is starting (Ctrl-C to stop) on a free port that dnnsatd picks: its"
	echo "\"listening on\" line below names it; replace PORT in these URLs with it."
	url="${url%:0}:PORT"
else
	echo "dnnsat is starting (Ctrl-C to stop)."
fi
[ -z "$everywhere" ] || echo "It listens on every address of this machine ($listen); from here:"
auth=
[ -z "$tokens" ] || auth="-H \"Authorization: Bearer \$TOKEN\" "
cat <<MSG
Point a browser at
  $url/                          the budget dashboard
or curl ${auth:+(with a token of $tokens) }at:
  $url/v1/templates             the model templates, their hyperparameters and presets
  $url/v1/devices               the GPU catalog
  $url/schemas/openapi.json     the API contract (OpenAPI 3.1); docs/api.md in prose
  $url/metrics                  Prometheus metrics
and try a reduction (docs/walkthrough.md goes on from here):
  curl -s ${auth}-H 'Content-Type: application/json' --data @examples/api/reduction-query.json $url/v1/reductions

MSG
exec ./dnnsatd "$@"
