#!/usr/bin/env bash
# Push at the server's write limit (release builds, loopback). In each of ROUNDS rounds, alternated:
#   ceiling  `tsync-write-ceiling` (not part of tsync): the server's own storage code
#            (`ServerStorage.write`) stores COUNT new records handed to it in one call, one
#            transaction, then COUNT updates of them: no HTTP, no JSON, no client;
#   push     a store queues the same COUNT inserts and `tsync push`es them to `tsync serve`
#            (the batch route), then changes every record (`upsert`) and pushes the COUNT
#            updates; each push timed as a whole process, server and client on the same cores.
# Each on a new database. Prints the medians and push / ceiling (goal: at least 0.5 each).
# With -P on PostgreSQL (a database of its own in the server TSYNC_TEST_POSTGRES_URL names, else
# a throwaway cluster; scripts/postgres.sh).
# Usage: scripts/bench-push-ceiling.sh [-P] [COUNT]   (default 100000; ROUNDS=5; TSYNC_BIN and
# CEILING_BIN=path use those binaries instead of building them)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/bench-databases.sh
bench_options "[-P] [COUNT]" "$@"
set -- ${BENCH_ARGS[@]+"${BENCH_ARGS[@]}"}
count=${1:-100000}
rounds=${ROUNDS:-5}

. scripts/lib/measure.sh
tsync_for_bench bench-push-ceiling
if [ -n "${CEILING_BIN:-}" ]; then
    ceiling_bin=$CEILING_BIN
else
    . scripts/lib/release-build.sh
    ceiling_bin=$(release_build tsync-write-ceiling)
fi
. scripts/lib/serve.sh
bench_databases ceiling

# The records tsync-write-ceiling writes (its `fields`): new, or with `text` changed.
records() {
    awk -v n="$count" -v changed="$1" 'BEGIN {
        for (i = 0; i < n; i++) {
            if (changed) printf "{\"id\":\"item-%07d\",\"text\":\"changed record %d\"}\n", i, i
            else printf "{\"id\":\"item-%07d\",\"text\":\"record number %d\",\"complete\":%s,\"priority\":%d}\n", i, i, (i % 2 ? "true" : "false"), i % 5
        }
    }'
}

quiet() { "$@" >/dev/null 2>"$work/err" || { echo "bench-push-ceiling: '$*' failed:" >&2; cat "$work/err" >&2; exit 1; }; }
json() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$work/out.json" "$1"; }
OUT="$work/out.json"

run_ceiling() {
    "$ceiling_bin" "$(new_database "ceiling-$1")" "$count" >"$OUT" 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
    json insertSeconds >>"$work/ceiling-insert"
    json updateSeconds >>"$work/ceiling-update"
    echo "ceiling run $1: inserts $(rate "$count" "$(json insertSeconds)")/s, updates $(rate "$count" "$(json updateSeconds)")/s"
}

run_push() {
    serve_stop_all
    rm -rf "$work/store"
    serve_start "$bin" "$work/serve-$1.log" --no-auth --db "$(new_database "push-$1")"
    quiet "$bin" init "$work/store" --remote "$SERVE_URL"
    records 0 | quiet "$bin" -C "$work/store" insert items -q
    measure "$bin" -C "$work/store" push -q --json
    [ "$(json pushed)" = "$count" ] || { echo "bench-push-ceiling: pushed $(json pushed) of $count" >&2; exit 1; }
    echo "$seconds" >>"$work/push-insert"
    local inserts=$seconds
    records 1 | quiet "$bin" -C "$work/store" upsert items - -q
    measure "$bin" -C "$work/store" push -q --json
    [ "$(json pushed)" = "$count" ] || { echo "bench-push-ceiling: pushed $(json pushed) of $count updates" >&2; exit 1; }
    echo "$seconds" >>"$work/push-update"
    echo "push    run $1: inserts $(rate "$count" "$inserts")/s, updates $(rate "$count" "$seconds")/s, $(json requests) requests"
    serve_stop_all
}

median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

backend=$([ "$postgres" = true ] && echo PostgreSQL || echo SQLite)
echo "push vs the server's storage writing alone, $count records, $backend, $rounds rounds ($(nproc) cores, load$(uptime | sed 's/.*load average//'))"
for round in $(seq "$rounds"); do
    run_ceiling "$round"
    run_push "$round"
done
for kind in insert update; do
    ceiling=$(median "$work/ceiling-$kind")
    push=$(median "$work/push-$kind")
    awk -v kind="$kind" -v n="$count" -v c="$ceiling" -v p="$push" 'BEGIN {
        printf "%ss: storage alone %.3f s (%.0f/s), push %.2f s (%.0f/s): push / ceiling %.2f\n", kind, c, n / c, p, n / p, c / p }'
done
echo "load after:$(uptime | sed 's/.*load average//')"
