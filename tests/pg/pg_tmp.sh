#!/bin/sh
# tests/pg/pg_tmp.sh - a throwaway PostgreSQL server for tests: its data,
# socket, log and port all live in one directory, it listens on 127.0.0.1
# on a free port with trust authentication, and removing the directory
# removes every trace of it.
#
#   pg_tmp.sh start DIR          create DIR (which must not exist or be
#                                empty), initdb, start; prints ONE line, the
#                                libpq URL postgresql://postgres@127.0.0.1:PORT/postgres
#   pg_tmp.sh stop DIR           stop the server (fast) and remove DIR
#   pg_tmp.sh stop-server DIR    stop the server, keep DIR (data and port)
#   pg_tmp.sh start-server DIR   start it again on the same port
#
# As root, the server runs as the postgres user (PostgreSQL refuses root):
# DIR is chowned to it and initdb / pg_ctl run through runuser. Everything
# but the URL goes to stderr or DIR/log. Exits non-zero with a message when
# the PostgreSQL server binaries (Debian package postgresql) are missing.
set -eu

die() {
	echo "pg_tmp.sh: $*" >&2
	exit 1
}

[ $# -eq 2 ] || die "usage: pg_tmp.sh start|stop|stop-server|start-server DIR"
cmd=$1
dir=$2

# find_bindir: sets $bindir to the newest installed server's binaries.
find_bindir() {
	bindir=""
	for d in /usr/lib/postgresql/*/bin; do
		[ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && bindir=$d
	done
	[ -n "$bindir" ] || die "PostgreSQL server binaries not found in /usr/lib/postgresql/*/bin (apt-get install postgresql)"
}

# as_pg CMD...: runs CMD as the user that owns the server.
as_pg() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# free_port: a TCP port on 127.0.0.1 that nothing listens on right now.
free_port() {
	if [ -x /usr/bin/python3 ]; then
		/usr/bin/python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
		return
	fi
	p=$(( 20000 + $$ % 20000 ))
	while ss -Hltn "sport = :$p" 2>/dev/null | grep -q .; do
		p=$((p + 1))
	done
	echo "$p"
}

# server_start PORT: starts the server in $dir on PORT, waits until it
# accepts connections; non-zero when it does not come up.
server_start() {
	as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 30 \
		-o "-c listen_addresses=127.0.0.1 -p $1 -k $dir/sock -c fsync=off -c full_page_writes=off" \
		start >/dev/null 2>&1 || return 1
	i=0
	until "$bindir/pg_isready" -q -h 127.0.0.1 -p "$1"; do
		i=$((i + 1))
		[ $i -lt 100 ] || return 1
		sleep 0.1
	done
}

server_stop() {
	if [ -f "$dir/data/postmaster.pid" ]; then
		find_bindir
		as_pg "$bindir/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null 2>&1 || true
	fi
}

case $cmd in
start)
	find_bindir
	if [ -e "$dir" ]; then
		[ -d "$dir" ] && [ -z "$(ls -A "$dir")" ] || die "$dir exists and is not an empty directory"
	else
		mkdir -p "$dir"
	fi
	chmod 700 "$dir"
	if [ "$(id -u)" -eq 0 ]; then
		id postgres >/dev/null 2>&1 || die "running as root but there is no postgres user to run the server"
		chown postgres: "$dir"
		runuser -u postgres -- test -w "$dir" || die "the postgres user cannot write to $dir (a parent directory is closed to it)"
	fi
	as_pg mkdir "$dir/sock"
	as_pg "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-locale \
		>"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
	# a port can be taken between choosing and binding: try a few
	tries=0
	until port=$(free_port) && server_start "$port"; do
		tries=$((tries + 1))
		[ $tries -lt 3 ] || { tail -20 "$dir/log" >&2 2>/dev/null; die "the server did not start (log above)"; }
	done
	echo "$port" >"$dir/port"
	echo "postgresql://postgres@127.0.0.1:$port/postgres"
	;;
stop)
	[ -d "$dir" ] || exit 0
	server_stop
	rm -rf "$dir"
	;;
stop-server)
	[ -f "$dir/port" ] || die "$dir holds no server started by pg_tmp.sh"
	server_stop
	;;
start-server)
	[ -f "$dir/port" ] || die "$dir holds no server started by pg_tmp.sh"
	find_bindir
	server_start "$(cat "$dir/port")" || { tail -20 "$dir/log" >&2 2>/dev/null; die "the server did not start again (log above)"; }
	;;
*)
	die "unknown command $cmd (start, stop, stop-server, start-server)"
	;;
esac
