#!/bin/sh
# docker/offline/postgres/entrypoint.sh - first start: initdb with the
# POSTGRES_USER role (password POSTGRES_PASSWORD, scram-sha-256 over TCP)
# and the POSTGRES_DB database; every start: the server as the postgres
# user, listening on all addresses of the container, in the foreground
# as process 1 (setpriv execs it: SIGINT, the stop signal, reaches it).
set -eu
: "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
mkdir -p "$PGDATA" /run/postgresql
chown -R postgres:postgres "$PGDATA" /run/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
	pw=$(mktemp)
	printf '%s\n' "$POSTGRES_PASSWORD" >"$pw"
	chown postgres "$pw"
	runuser -u postgres -- initdb -D "$PGDATA" --username="$user" --pwfile="$pw" \
		--auth-host=scram-sha-256 --auth-local=trust >/dev/null
	rm -f "$pw"
	echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
	echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
	if [ "$db" != postgres ]; then
		runuser -u postgres -- pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
		runuser -u postgres -- psql -q -U "$user" -d postgres -c "CREATE DATABASE \"$db\""
		runuser -u postgres -- pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
	fi
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -D "$PGDATA"
