#!/usr/bin/env bash
# A throwaway PostgreSQL server for cairnq's Postgres tests and CI.
#
#   scripts/pg-test-server.sh start <dir> <port>   # prints the DSN on stdout
#   scripts/pg-test-server.sh stop <dir>
#   scripts/pg-test-server.sh restart <dir>        # pg_ctl restart -m fast
#
# `start` is idempotent: a server already running in <dir> is reused and its DSN
# printed again, so every test binary can call it. When <port> is taken by
# something else, the next free port above it is used (the DSN says which). The server listens on
# 127.0.0.1 only, with fsync off (test data is disposable; PG_TEST_FSYNC=on for
# benchmarks, which must not take that shortcut). The superuser `postgres`
# connects by trust (the DSN printed); every other role must give its password,
# so the tests that make a role of their own (cairnq_testkit::postgres::TestRole)
# can show a wrong password refused. No other role is made here: a test needs
# to run against any server a user points CAIRNQ_TEST_PG_DSN at.
# Binaries come from PG_BIN, else /usr/lib/postgresql/<newest>/bin, else PATH.
# As root, the server runs as the `postgres` user (initdb refuses root).
set -euo pipefail

usage() { echo "usage: $0 start <dir> <port> | stop <dir> | restart <dir>" >&2; exit 2; }

pg_bin() {
    if [[ -n "${PG_BIN:-}" ]]; then echo "$PG_BIN"; return; fi
    local newest
    newest=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    if [[ -n "$newest" ]]; then echo "$newest"; else dirname "$(command -v pg_ctl)"; fi
}

# The server must not inherit the lock descriptor (fd 9), or it would hold the
# lock for its whole life: every pg_ctl that may start it closes fd 9.

# Runs a command as the server's owner: `postgres` when we are root.
as_owner() {
    if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

dsn() { echo "postgres://postgres@127.0.0.1:$1/cairnq_test"; }

psql_admin() {
    local port=$1; shift
    "$(pg_bin)/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres "$@"
}

init_cluster() {
    local dir=$1 bin
    bin=$(pg_bin)
    mkdir -p "$dir"
    if [[ $(id -u) -eq 0 ]]; then chown postgres: "$dir"; fi
    as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C >"$dir/initdb.log" 2>&1
    cat >"$dir/data/pg_hba.conf" <<HBA
# cairnq test server: local TCP only; roles other than postgres need a password.
host all postgres 127.0.0.1/32 trust
host all all 127.0.0.1/32 scram-sha-256
HBA
}

create_database() {
    psql_admin "$1" -d postgres -c "create database cairnq_test"
}

# Tests make schemas and databases named t_<epoch ms>_<random>; a reused
# server would collect them forever, so each start drops those older than two
# hours (best effort: a test that old is long gone).
sweep_stale() {
    local port=$1 cutoff
    cutoff="(extract(epoch from now()) * 1000)::bigint - 7200000"
    psql_admin "$port" -d cairnq_test >/dev/null <<SQL || true
set client_min_messages = warning;
do \$sweep\$ declare stale record; begin
    for stale in select nspname from pg_namespace
                  where nspname ~ '^t_[0-9]{13}_' and split_part(nspname, '_', 2)::bigint < $cutoff loop
        execute format('drop schema %I cascade', stale.nspname);
    end loop;
end \$sweep\$;
SQL
    psql_admin "$port" -d postgres -At -c "select datname from pg_database
        where datname ~ '^t_[0-9]{13}_' and split_part(datname, '_', 2)::bigint < $cutoff" 2>/dev/null |
        while read -r db; do psql_admin "$port" -d postgres -c "drop database \"$db\" with (force)" || true; done
}

is_running() { [[ -f "$1/data/postmaster.pid" ]] && as_owner "$(pg_bin)/pg_ctl" -D "$1/data" status >/dev/null 2>&1; }

# Something listens on 127.0.0.1:$1.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# $1 if free, else the next free port above it (another developer's or
# another checkout's cluster may hold the usual one).
free_port() {
    local port=$1
    while port_in_use "$port"; do
        port=$((port + 1))
        [[ $port -lt $(($1 + 100)) ]] || { echo "no free port in $1..$port" >&2; exit 1; }
    done
    echo "$port"
}

start() {
    local dir=$1 port=$2 fresh=0
    [[ -d "$dir/data" ]] || { init_cluster "$dir"; fresh=1; }
    if is_running "$dir"; then
        port=$(sed -n 4p "$dir/data/postmaster.pid")
    else
        port=$(free_port "$port")
        as_owner "$(pg_bin)/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
            -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories='' -c fsync=${PG_TEST_FSYNC:-off} -c max_connections=400" \
            start >/dev/null 9>&-
    fi
    if [[ $fresh -eq 1 ]]; then create_database "$port"; else sweep_stale "$port"; fi
    dsn "$port"
}

stop() {
    local dir=$1
    is_running "$dir" || return 0
    as_owner "$(pg_bin)/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
}

restart() {
    as_owner "$(pg_bin)/pg_ctl" -D "$1/data" -l "$1/server.log" -m fast -w restart >/dev/null 9>&-
}

with_lock() {
    local dir=$1; shift
    mkdir -p "$(dirname "$dir")"
    exec 9>"$dir.lock"
    flock 9
    "$@"
}

case "${1:-}" in
    start) [[ $# -eq 3 ]] || usage; with_lock "$2" start "$2" "$3" ;;
    stop) [[ $# -eq 2 ]] || usage; with_lock "$2" stop "$2" ;;
    restart) [[ $# -eq 2 ]] || usage; with_lock "$2" restart "$2" ;;
    *) usage ;;
esac
