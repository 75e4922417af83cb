#!/usr/bin/env bash
# Conflicts settled per second, end to end (release build, `tsync serve --no-auth` on loopback).
# Two stores hold the same COUNT records; each changes every one of them:
#   A: `text` and `priority`, pushed first;
#   B: `note` and `priority`, then one of
#   merge    `push --on-conflict merge --prefer ours`: every push meets a 412, settles it by a
#            three-way merge (`note` from B, `text` from A, `priority` by --prefer) and pushes the
#            merged record, all in one command;
#   theirs   a plain `push` (every operation fails, COUNT entries in the error table), then
#            `resolve --all --theirs`, timed alone.
# Each timed command is a whole process, as a user runs it; the figure is COUNT divided by its wall
# time (its CPU time is printed too, and the server's over the same command: on a loaded machine
# the wall time is mostly waiting for a core). Every run starts from a new server database and new stores, and checks what the command
# did (COUNT settled, the error table empty, the server holding the merge). Medians of ROUNDS runs,
# the two cases alternated. With -P the same on PostgreSQL (a database of its own in the server
# TSYNC_TEST_POSTGRES_URL names, else a throwaway cluster; scripts/postgres.sh).
# Goal: at least 5,000 conflicts settled per second each.
# Usage: scripts/bench-conflicts.sh [-P] [COUNT]   (default 10000; ROUNDS=5; TSYNC_BIN=path uses
# that tsync instead of building one)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/bench-databases.sh
bench_options "[-P] [COUNT]" "$@"
set -- ${BENCH_ARGS[@]+"${BENCH_ARGS[@]}"}
count=${1:-10000}
rounds=${ROUNDS:-5}

. scripts/lib/measure.sh
tsync_for_bench bench-conflicts
. scripts/lib/serve.sh
bench_databases conflicts

# records FIELD...: COUNT NDJSON lines of `items`, each with the named fields set (`text`,
# `note`, `priority` from side a or b; `new` the records as first inserted).
records() {
    awk -v n="$count" -v fields="$*" 'BEGIN {
        split(fields, f, " ")
        for (i = 0; i < n; i++) {
            line = sprintf("{\"id\":\"item-%07d\"", i)
            for (k in f) {
                if (f[k] == "new") line = line sprintf(",\"text\":\"record %d\",\"note\":\"\",\"priority\":0,\"complete\":false", i)
                if (f[k] == "text-a") line = line sprintf(",\"text\":\"changed by a %d\"", i)
                if (f[k] == "priority-a") line = line ",\"priority\":1"
                if (f[k] == "note-b") line = line sprintf(",\"note\":\"changed by b %d\"", i)
                if (f[k] == "priority-b") line = line ",\"priority\":2"
            }
            print line "}"
        }
    }'
}

quiet() { "$@" >/dev/null 2>"$work/err" || { echo "bench-conflicts: '$*' failed:" >&2; cat "$work/err" >&2; exit 1; }; }

# setup NAME: a new server and two stores a and b that both changed every record, a's pushed.
setup() {
    local name=$1
    serve_stop_all
    rm -rf "$work/a" "$work/b"
    serve_start "$bin" "$work/$name.log" --no-auth --db "$(new_database "$name")"
    quiet "$bin" init "$work/a" --remote "$SERVE_URL"
    quiet "$bin" init "$work/b" --remote "$SERVE_URL"
    records new | quiet "$bin" -C "$work/a" insert items -q
    quiet "$bin" -C "$work/a" push -q
    quiet "$bin" -C "$work/b" pull items -q
    records text-a priority-a | quiet "$bin" -C "$work/a" upsert items - -q
    quiet "$bin" -C "$work/a" push -q
    records note-b priority-b | quiet "$bin" -C "$work/b" upsert items - -q
}

# The CPU time (user + system) of the command `measure` timed last.
cpu_seconds() { awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { print u + s }' "$work/time.log"; }

json() { python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {"d": d}))' "$work/out.json" "$1"; }

# One row of the server's copy, to check what the merge left.
server_row() { curl -s "$SERVE_URL/tables/items/$1" -H 'ZUMO-API-VERSION: 2.0.0'; }

check_merged() {
    local row want
    row=$(server_row item-0000007)
    want='"text":"changed by a 7"|"note":"changed by b 7"|"priority":2'
    for field in ${want//|/ }; do
        [[ $row == *"$field"* ]] || { echo "bench-conflicts: the server's item-0000007 lacks $field: $row" >&2; exit 1; }
    done
}

OUT="$work/out.json"
ticks_per_second=$(getconf CLK_TCK)

# timed CMD...: `measure`s CMD and sets `server_cpu`, the seconds of CPU the server used meanwhile.
timed() {
    local before
    before=$(cpu_ticks "${SERVE_PIDS[-1]}")
    measure "$@"
    server_cpu=$(awk -v t="$(($(cpu_ticks "${SERVE_PIDS[-1]}") - before))" -v hz="$ticks_per_second" 'BEGIN { printf "%.2f", t / hz }')
}

run_merge() {
    setup "merge-$1"
    timed "$bin" -C "$work/b" push -q --json --on-conflict merge --prefer ours
    local settled failed
    settled=$(json 'd["settled"].get("merge", 0)')
    failed=$(json 'd["failed"]')
    [ "$settled" = "$count" ] && [ "$failed" = 0 ] || { echo "bench-conflicts: merge settled $settled, failed $failed of $count" >&2; cat "$OUT" >&2; exit 1; }
    check_merged
    echo "$seconds" >>"$work/merge.wall"
    cpu_seconds >>"$work/merge.cpu"
    echo "$server_cpu" >>"$work/merge.server"
    echo "merge  run $1: $count in ${seconds}s = $(rate "$count" "$seconds")/s ($(cpu_seconds) s CPU, server $server_cpu s), $(json 'd["requests"]') push requests, peak $((peak_kb / 1024)) MB"
}

run_theirs() {
    setup "theirs-$1"
    local status=0
    "$bin" -C "$work/b" push -q >/dev/null 2>&1 || status=$?
    [ "$status" = 2 ] || { echo "bench-conflicts: the conflicting push exited $status, not 2" >&2; exit 1; }
    timed "$bin" -C "$work/b" resolve --all --theirs --json
    local settled left
    settled=$(json 'sum(1 for e in d if e["settled"])')
    left=$("$bin" -C "$work/b" conflicts --json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')
    [ "$settled" = "$count" ] && [ "$left" = 0 ] || { echo "bench-conflicts: resolve settled $settled of $count, $left left" >&2; exit 1; }
    echo "$seconds" >>"$work/theirs.wall"
    cpu_seconds >>"$work/theirs.cpu"
    echo "$server_cpu" >>"$work/theirs.server"
    echo "theirs run $1: $count in ${seconds}s = $(rate "$count" "$seconds")/s ($(cpu_seconds) s CPU, server $server_cpu s), peak $((peak_kb / 1024)) MB"
}

median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

backend=$([ "$postgres" = true ] && echo PostgreSQL || echo SQLite)
echo "conflicts settled per second, $count records, $backend, $rounds rounds ($(nproc) cores, load$(uptime | sed 's/.*load average//'))"
for round in $(seq "$rounds"); do
    run_merge "$round"
    run_theirs "$round"
done
serve_stop_all
merge=$(median "$work/merge.wall")
theirs=$(median "$work/theirs.wall")
echo
echo "push --on-conflict merge --prefer ours: median ${merge}s, $(rate "$count" "$merge") conflicts/s (median CPU $(median "$work/merge.cpu") s, server $(median "$work/merge.server") s)"
echo "resolve --all --theirs:                 median ${theirs}s, $(rate "$count" "$theirs") conflicts/s (median CPU $(median "$work/theirs.cpu") s, server $(median "$work/theirs.server") s)"
echo "load after:$(uptime | sed 's/.*load average//')"
