#!/usr/bin/env bash
# A throwaway PgBouncer in transaction mode in front of the test Postgres, for
# the pooler-mode tests (issue 29) and the bench's pooler variant.
#
#   scripts/pgbouncer-test.sh start <dir> <port> <upstream_port> [server_pool]   # prints the DSN
#   scripts/pgbouncer-test.sh stop <dir>
#
# It forwards every database to the Postgres at 127.0.0.1:<upstream_port> (the
# throwaway server of scripts/pg-test-server.sh, or CAIRNQ_TEST_PG_DSN's) in
# `pool_mode = transaction`: a client holds a server connection only for the
# length of a transaction, which is what breaks session state (named prepared
# statements, `set search_path`, LISTEN) for clients that rely on it.
# <server_pool> is the most server connections per database and user (default
# 20). `start` is idempotent: a PgBouncer already running in <dir> is reused
# and its DSN printed again, so every test binary can call it; when <port> is
# taken, the next free port above it is used. Listens on 127.0.0.1 only; the
# `postgres` user connects by trust. As root it runs as the `postgres` user
# (pgbouncer refuses root). The binary comes from PGBOUNCER, else PATH, else
# /usr/sbin/pgbouncer (Debian's package); exit 3 when there is none, so a
# caller can tell "not installed" from "failed".
set -euo pipefail

usage() { echo "usage: $0 start <dir> <port> <upstream_port> [server_pool] | stop <dir>" >&2; exit 2; }

binary() {
    if [[ -n "${PGBOUNCER:-}" ]]; then echo "$PGBOUNCER"; return; fi
    if command -v pgbouncer >/dev/null 2>&1; then command -v pgbouncer; return; fi
    if [[ -x /usr/sbin/pgbouncer ]]; then echo /usr/sbin/pgbouncer; return; fi
    echo "pgbouncer is not installed (Debian: apt-get install pgbouncer)" >&2
    exit 3
}

as_owner() {
    if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

dsn() { echo "postgres://postgres@127.0.0.1:$1/cairnq_test"; }

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() {
    local port=$1
    while port_in_use "$port"; do
        port=$((port + 1))
        [[ $port -lt $(($1 + 100)) ]] || { echo "no free port in $1..$port" >&2; exit 1; }
    done
    echo "$port"
}

is_running() { [[ -f "$1/pgbouncer.pid" ]] && kill -0 "$(cat "$1/pgbouncer.pid")" 2>/dev/null; }

write_config() {
    local dir=$1 port=$2 upstream=$3 pool=$4
    cat >"$dir/userlist.txt" <<USERS
"postgres" ""
USERS
    cat >"$dir/pgbouncer.ini" <<INI
; cairnq test PgBouncer (scripts/pgbouncer-test.sh): transaction mode.
[databases]
* = host=127.0.0.1 port=$upstream

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/userlist.txt
admin_users = postgres
pool_mode = transaction
default_pool_size = $pool
max_client_conn = 2000
; After a failed server login (the server restarting) retry in 1 s, not the
; default 15 s, in which every client is refused: a restart test then waits
; for the server, not for the pooler's back-off.
server_login_retry = 1
; Clients send these at startup; PgBouncer refuses what it does not know.
ignore_startup_parameters = extra_float_digits
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI
}

start() {
    local dir=$1 port=$2 upstream=$3 pool=${4:-20} bin
    bin=$(binary)
    mkdir -p "$dir"
    if is_running "$dir"; then
        port=$(sed -n 's/^listen_port = //p' "$dir/pgbouncer.ini")
        dsn "$port"
        return
    fi
    port=$(free_port "$port")
    write_config "$dir" "$port" "$upstream" "$pool"
    if [[ $(id -u) -eq 0 ]]; then chown -R postgres: "$dir"; fi
    as_owner "$bin" -d "$dir/pgbouncer.ini" >/dev/null 9>&-
    local tries=0
    until port_in_use "$port"; do
        tries=$((tries + 1))
        [[ $tries -lt 100 ]] || { echo "pgbouncer did not start; see $dir/pgbouncer.log" >&2; exit 1; }
        sleep 0.05
    done
    dsn "$port"
}

stop() {
    local dir=$1 pid tries=0
    is_running "$dir" || return 0
    pid=$(cat "$dir/pgbouncer.pid")
    kill -INT "$pid"
    while kill -0 "$pid" 2>/dev/null && [[ $tries -lt 100 ]]; do tries=$((tries + 1)); sleep 0.05; done
}

with_lock() {
    local dir=$1; shift
    mkdir -p "$(dirname "$dir")"
    exec 9>"$dir.lock"
    flock 9
    "$@"
}

case "${1:-}" in
    start) [[ $# -ge 4 && $# -le 5 ]] || usage; with_lock "$2" start "$2" "$3" "$4" "${5:-20}" ;;
    stop) [[ $# -eq 2 ]] || usage; with_lock "$2" stop "$2" ;;
    *) usage ;;
esac
