# Starts and stops a throwaway PostgreSQL cluster on 127.0.0.1 for tests and benchmarks.
# Source it, then: pg_start (exports TSYNC_TEST_POSTGRES_URL) ... pg_stop.
# Debian's PostgreSQL refuses to run as root, so as root the cluster runs as the `postgres` user.

pg_bin() {
    local dir
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [ -n "$dir" ] && [ -x "$dir/initdb" ] && echo "$dir"
}

pg_as() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_start() {
    local bin port
    bin=$(pg_bin) || { echo "PostgreSQL is not installed" >&2; return 1; }
    PG_TMP=$(mktemp -d /tmp/tsync-pg.XXXXXX)
    [ "$(id -u)" = 0 ] && chown postgres: "$PG_TMP"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    pg_as "$bin/initdb" -D "$PG_TMP/data" -A trust -U postgres --no-sync -E UTF8 >"$PG_TMP/initdb.log" 2>&1 \
        || { cat "$PG_TMP/initdb.log" >&2; return 1; }
    pg_as "$bin/pg_ctl" -D "$PG_TMP/data" -l "$PG_TMP/server.log" -w -t 60 start \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $PG_TMP -c fsync=off -c synchronous_commit=off -c max_connections=200" \
        >/dev/null || { cat "$PG_TMP/server.log" >&2; return 1; }
    pg_as "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres tsync_test
    PG_PORT=$port
    export TSYNC_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/tsync_test"
}

pg_stop() {
    local bin
    bin=$(pg_bin) || return 0
    if [ -n "${PG_TMP:-}" ] && [ -d "$PG_TMP/data" ]; then
        pg_as "$bin/pg_ctl" -D "$PG_TMP/data" -m fast -w stop >/dev/null 2>&1 || true
        rm -rf "$PG_TMP"
    fi
}
