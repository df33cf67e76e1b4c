#!/usr/bin/env bash
# tests/pgserver.sh: a throwaway PostgreSQL 15 server with eddy preloaded.
#
#   tests/pgserver.sh start DIR PORT   initdb DIR/data (once) and start the server,
#                                      listening only on the Unix socket in DIR
#   tests/pgserver.sh stop DIR         stop it
#
# PostgreSQL refuses to run as root, so when run as root the server runs as the
# unprivileged OS user $PG_OS_USER (default: postgres) and DIR is handed to it.
set -euo pipefail

PG_BINDIR=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
PG_OS_USER=${PG_OS_USER:-postgres}
cmd=${1:?usage: pgserver.sh start DIR PORT | stop DIR}
dir=${2:?usage: pgserver.sh start DIR PORT | stop DIR}

as_pg() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u "$PG_OS_USER" -- "$@"
    else
        "$@"
    fi
}

case "$cmd" in
start)
    port=${3:?usage: pgserver.sh start DIR PORT}
    mkdir -p "$dir"
    if [ "$(id -u)" -eq 0 ]; then chown "$PG_OS_USER" "$dir"; fi
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        as_pg "$PG_BINDIR/initdb" -D "$dir/data" -A trust -U postgres \
            --no-sync -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
            { cat "$dir/initdb.log"; exit 1; }
        cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = ''
port = $port
unix_socket_directories = '$dir'
shared_preload_libraries = 'eddy'
fsync = off
synchronous_commit = off
full_page_writes = off
max_parallel_workers_per_gather = 0
CONF
    fi
    as_pg "$PG_BINDIR/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null ||
        { cat "$dir/server.log"; exit 1; }
    ;;
stop)
    if [ -f "$dir/data/postmaster.pid" ]; then
        as_pg "$PG_BINDIR/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    fi
    ;;
*)
    echo "usage: pgserver.sh start DIR PORT | stop DIR" >&2
    exit 2
    ;;
esac
