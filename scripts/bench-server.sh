#!/usr/bin/env bash
# Benchmark of `tsync serve` (not a test): release build, SQLite (BACKEND=postgres: a throwaway
# PostgreSQL cluster, scripts/postgres.sh), loopback, --no-auth.
# Seeds RECORDS records, then measures with wrk for DURATION each:
#   - a filtered page of 50 ($filter on two body fields, $orderby, $top=50)
#   - an incremental-pull page of 50 ($filter/$orderby on updatedAt, id: the (updated_at, id) index)
#   - PATCH with If-Match (each connection sends the version it got back last)
# Prints one RESULT line per measurement, plus the machine. Tunables: RECORDS, DURATION, THREADS,
# CONNECTIONS. COMPARE="--log-format json --metrics" (any serve flags) also starts a second server
# with those flags on the same database and measures both pages on both, alternately, ROUNDS times
# (default 3), printing each one's median and their ratio. BIN=path skips the release build (e.g. to
# try a debug build; its figures are not release figures).
set -euo pipefail
cd "$(dirname "$0")/.."

records=${RECORDS:-10000}
duration=${DURATION:-10s}
threads=${THREADS:-2}
connections=${CONNECTIONS:-16}
lua=scripts/bench-server

if ! command -v wrk >/dev/null; then
    if [ -x scripts/install-deps.sh ]; then scripts/install-deps.sh --with-bench; else
        echo "wrk is needed: apt-get install wrk" >&2
        exit 1
    fi
fi

if [ -n "${BIN:-}" ]; then bin=$BIN; else
    echo "building (release)..." >&2
    . scripts/lib/release-build.sh
    bin=$(release_build tsync)
fi

. scripts/lib/serve.sh
work=$(mktemp -d)
backend=${BACKEND:-sqlite}
cleanup() {
    serve_stop_all
    if [ "$backend" = postgres ]; then pg_stop; fi
    rm -rf "$work"
}
trap cleanup EXIT
case $backend in
sqlite) db="sqlite:$work/bench.db" ;;
postgres)
    . scripts/postgres.sh
    pg_start
    db=$TSYNC_TEST_POSTGRES_URL
    ;;
*)
    echo "BACKEND is sqlite or postgres" >&2
    exit 1
    ;;
esac

serve_start "$bin" "$work/serve.log" --no-auth --db "$db"
base=$SERVE_URL

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(uname -sr)"
echo "server: $base, database $db, request log on"

# wrk always runs for its whole duration, even once every thread has stopped: watch the count
# and interrupt it (SIGINT makes wrk stop and report) when the table is full.
count_records() {
    curl -fsS "$base/tables/items?\$inlinecount=allpages&\$top=0" | grep -o '"count":[0-9]*' | cut -d: -f2
}
seed_start=$(date +%s.%N)
wrk -t"$threads" -c"$threads" -d600s -s "$lua/seed.lua" "$base" -- $((records / threads)) >"$work/seed.out" &
seed_pid=$!
while kill -0 "$seed_pid" 2>/dev/null && [ "$(count_records)" -lt $((records / threads * threads)) ]; do sleep 0.2; done
kill -INT "$seed_pid" 2>/dev/null || true
wait "$seed_pid" || true
count=$(count_records)
seed_seconds=$(awk -v start="$seed_start" -v end="$(date +%s.%N)" 'BEGIN { printf "%.1f", end - start }')
echo "seeded: $count records in $seed_seconds s (POST, one connection per wrk thread)"

if [ -n "${COMPARE:-}" ]; then
    # shellcheck disable=SC2086
    serve_start "$bin" "$work/serve-compare.log" --no-auth --db "$db" $COMPARE
    other=$SERVE_URL
    rate() { wrk -t"$threads" -c"$connections" -d"$duration" -s "$lua/query.lua" "$1" -- "$2" | grep '^RESULT' | awk '{print $3}'; }
    median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
    for page in "filtered-page|/tables/items?\$filter=category%20eq%20'c7'%20and%20done%20eq%20false&\$orderby=n%20desc&\$top=50" \
        "pull-page|/tables/items?\$filter=updatedAt%20gt%20datetime'2000-01-01T00:00:00.000Z'&\$orderby=updatedAt,id&\$top=50&__includeDeleted=true"; do
        name=${page%%|*} path=${page#*|}
        : >"$work/a" && : >"$work/b"
        for _ in $(seq 1 "${ROUNDS:-3}"); do
            rate "$base$path" "$name" >>"$work/a"
            rate "$other$path" "$name" >>"$work/b"
        done
        a=$(median <"$work/a") b=$(median <"$work/b")
        echo "COMPARE $name: plain $a req/s, with $COMPARE $b req/s, ratio $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }') (medians of ${ROUNDS:-3})"
    done
    serve_stop_all
    exit 0
fi

filtered="$base/tables/items?\$filter=category%20eq%20'c7'%20and%20done%20eq%20false&\$orderby=n%20desc&\$top=50"
wrk -t"$threads" -c"$connections" -d"$duration" --latency -s "$lua/query.lua" "$filtered" -- filtered-page | grep '^RESULT'

pull="$base/tables/items?\$filter=updatedAt%20gt%20datetime'2000-01-01T00:00:00.000Z'&\$orderby=updatedAt,id&\$top=50&__includeDeleted=true"
wrk -t"$threads" -c"$connections" -d"$duration" --latency -s "$lua/query.lua" "$pull" -- pull-page | grep '^RESULT'

wrk -t"$threads" -c"$connections" -d"$duration" --latency -s "$lua/patch.lua" "$base" -- 100 | grep '^RESULT'

kill -TERM "${SERVE_PIDS[0]}"
if wait "${SERVE_PIDS[0]}"; then echo "server stopped cleanly on SIGTERM"; else echo "server exit status $?"; fi
SERVE_PIDS=()
