# Sourced by benchmarks that start a server per round, on SQLite or (with `postgres=true`) on
# PostgreSQL: TSYNC_TEST_POSTGRES_URL's server, else a throwaway cluster of scripts/postgres.sh.
# Source scripts/lib/serve.sh first.
#
#   bench_databases NAME   makes $work (/tmp/tsync-NAME.XXXXXX) and, on exit, stops the servers,
#                          drops every database new_database made and removes $work
#   new_database ROUND     prints a new database URL for ROUND: a SQLite file in $work, or a new
#                          PostgreSQL database (it runs in $( ), so what it made is kept in a file)
#   bench_options USAGE ARGS...   reads the benchmarks' one option, -P (postgres=true), and leaves
#                          the other arguments in BENCH_ARGS; any other option prints USAGE, exit 64

bench_options() {
    local usage=$1 argument
    shift
    postgres=false
    BENCH_ARGS=()
    for argument in "$@"; do
        case "$argument" in
            -P) postgres=true ;;
            -*) echo "usage: $0 $usage" >&2; exit 64 ;;
            *) BENCH_ARGS+=("$argument") ;;
        esac
    done
}

bench_databases() {
    bench_name=$1
    work=$(mktemp -d "/tmp/tsync-$bench_name.XXXXXX")
    trap bench_cleanup EXIT
    if [ "$postgres" = true ]; then
        . scripts/postgres.sh
        if [ -z "${TSYNC_TEST_POSTGRES_URL:-}" ]; then pg_start; fi
        pg_admin_url=$TSYNC_TEST_POSTGRES_URL
    fi
}

bench_cleanup() {
    serve_stop_all
    if [ -f "$work/databases" ]; then
        while read -r database; do
            psql -q "$pg_admin_url" -c "DROP DATABASE IF EXISTS $database WITH (FORCE)" >/dev/null 2>&1 || true
        done <"$work/databases"
    fi
    if [ "$postgres" = true ] && [ -n "${PG_TMP:-}" ]; then pg_stop; fi
    rm -rf "$work"
}

new_database() {
    if [ "$postgres" = true ]; then
        local database="tsync_${bench_name//-/_}_$$_${1//-/_}"
        psql -q "$pg_admin_url" -c "CREATE DATABASE $database" >/dev/null
        echo "$database" >>"$work/databases"
        echo "${pg_admin_url%/*}/$database"
    else
        echo "sqlite:$work/$1.db"
    fi
}
