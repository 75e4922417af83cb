#!/usr/bin/env bash
# Local-write benchmark, not a test: how close `pull` and `insert` come to the limit of
# the machine's SQLite, with the anchor measured in the same run: `sqlite3 .import` of the same
# rows into a fresh database in its cheapest form (`.mode tabs`, two tab-separated columns, the id
# and the JSON body as it is: no quoting to undo), which parses nothing and checks nothing.
# For each COUNT:
#   1. a cold clone: `pull --query-id` of COUNT records from `tsync serve` (SQLite, loopback) into
#      an empty store, with its peak memory (/usr/bin/time -v);
#   2. `insert` of the same COUNT records from NDJSON, and from CSV, into empty stores;
#   3. the anchor.
# Prints seconds, records/s, peak memory and each one's ratio to the anchor (aim: insert >= 0.8,
# pull >= 0.7; memory flat from 100,000 to 1,000,000). The four are run ROUNDS times, alternated,
# and the medians are compared (a run of 100,000 takes half a second, so one run swings with the
# machine); the load is printed before and after.
# Usage: scripts/bench-pull.sh [COUNT...]   (default 100000 1000000; TSYNC=path skips the build;
# PULL=0 measures only the inserts and the anchor; ROUNDS=N, default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(100000 1000000)

scripts/install-deps.sh --with-bench   # GNU time, sqlite3
if [ -z "${TSYNC:-}" ]; then
    swift build -c release --product tsync >&2
    TSYNC="$(swift build -c release --show-bin-path)/tsync"
fi
bin=$TSYNC

. scripts/lib/serve.sh
work=$(mktemp -d /tmp/tsync-bench-pull.XXXXXX)
cleanup() {
    serve_stop_all
    rm -rf "$work"
}
trap cleanup EXIT

. scripts/lib/measure.sh
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) b = 0.01; printf "%.2f", a / b }'; }
max() { awk -v a="$1" -v b="$2" 'BEGIN { print (a > b ? a : b) }'; }
# median SECONDS...; spread SECONDS...: " (min-max of N)" when there is more than one.
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
spread() { [ $# -gt 1 ] && printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { printf " (median of %d, %s-%s)", NR, v[1], v[NR] }' || true; }

# Records like bench-read's: six user fields of every scalar kind.
items() {
    awk -v count="$1" 'BEGIN {
        for (i = 0; i < count; i++)
            printf "{\"id\":\"item-%07d\",\"text\":\"record number %d\",\"complete\":%s,\"priority\":%d,\"rank\":%d,\"category\":\"c-%d\",\"due\":\"2026-%02d-%02dT12:00:00.000Z\"}\n",
                i, i, (i % 2 ? "true" : "false"), i % 1000, (i * 7919) % count, i % 100, 1 + i % 12, 1 + i % 28
    }'
}
csv_items() {
    awk -v count="$1" 'BEGIN {
        print "id,text,complete,priority,rank,category,due"
        for (i = 0; i < count; i++)
            printf "item-%07d,\"record number %d\",%s,%d,%d,\"c-%d\",\"2026-%02d-%02dT12:00:00.000Z\"\n",
                i, i, (i % 2 ? "true" : "false"), i % 1000, (i * 7919) % count, i % 100, 1 + i % 12, 1 + i % 28
    }'
}

echo "tsync pull/insert vs sqlite3 .import ($(nproc) cores, load$(uptime | sed 's/.*load average//'))"
summary=()
for count in "${counts[@]}"; do
    echo "== $count records"
    items "$count" >"$work/items.ndjson"
    csv_items "$count" >"$work/items.csv"
    # A JSON text holds no raw tab or newline (JSON escapes them), so each line is one row as it is.
    awk '{ id = substr($0, 8, 12); printf "%s\t%s\n", id, $0 }' "$work/items.ndjson" >"$work/import.tsv"

    pull_times=() ndjson_times=() csv_times=() import_times=() pull_kb=0 ndjson_kb=0 csv_kb=0
    if [ "${PULL:-1}" != 0 ]; then
        serve_start "$bin" "$work/serve-$count.log" --no-auth --db "sqlite:$work/server-$count.db"
        "$bin" init "$work/writer-$count" --remote "$SERVE_URL" >/dev/null
        "$bin" -C "$work/writer-$count" insert items -q <"$work/items.ndjson"
        "$bin" -C "$work/writer-$count" push -q >/dev/null
        rm -rf "$work/writer-$count"
    fi
    for _ in $(seq 1 "${ROUNDS:-5}"); do
        if [ "${PULL:-1}" != 0 ]; then
            "$bin" init "$work/reader-$count" --remote "$SERVE_URL" >/dev/null
            measure "$bin" -C "$work/reader-$count" pull items --query-id clone -q
            pull_times+=("$seconds") pull_kb=$(max "$pull_kb" "$peak_kb")
            pulled=$(sqlite3 "$work/reader-$count/.tsync/store.sqlite" "SELECT count(*) FROM records")
            [ "$pulled" = "$count" ] || { echo "bench-pull: the pull brought $pulled records, not $count" >&2; exit 1; }
            rm -rf "$work/reader-$count"
        fi

        "$bin" init "$work/ndjson-$count" >/dev/null
        STDIN="$work/items.ndjson" measure "$bin" -C "$work/ndjson-$count" insert items -q
        ndjson_times+=("$seconds") ndjson_kb=$(max "$ndjson_kb" "$peak_kb")
        rm -rf "$work/ndjson-$count"
        "$bin" init "$work/csv-$count" >/dev/null
        STDIN="$work/items.csv" measure "$bin" -C "$work/csv-$count" insert items --csv -q
        csv_times+=("$seconds") csv_kb=$(max "$csv_kb" "$peak_kb")
        rm -rf "$work/csv-$count"

        measure sqlite3 "$work/import-$count.db" "CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT);" ".mode tabs" ".import $work/import.tsv t"
        import_times+=("$seconds")
        rm -f "$work/import-$count.db"
    done
    serve_stop_all
    rm -f "$work/server-$count.db"*
    pull_s=$(median "${pull_times[@]:-0}") ndjson_s=$(median "${ndjson_times[@]}") csv_s=$(median "${csv_times[@]}")
    import_s=$(median "${import_times[@]}")

    if [ "${PULL:-1}" != 0 ]; then
        echo "pull (cold clone)  : ${pull_s}s$(spread "${pull_times[@]}"), $(rate "$count" "$pull_s") records/s, peak memory $((pull_kb / 1024)) MB"
    fi
    echo "insert from NDJSON : ${ndjson_s}s$(spread "${ndjson_times[@]}"), $(rate "$count" "$ndjson_s") records/s, peak memory $((ndjson_kb / 1024)) MB"
    echo "insert from CSV    : ${csv_s}s$(spread "${csv_times[@]}"), $(rate "$count" "$csv_s") records/s, peak memory $((csv_kb / 1024)) MB"
    echo "sqlite3 .import    : ${import_s}s$(spread "${import_times[@]}"), $(rate "$count" "$import_s") rows/s"
    pull_summary="pull / .import = $(ratio "$import_s" "$pull_s") (peak $((pull_kb / 1024)) MB)"
    [ "${PULL:-1}" != 0 ] || pull_summary="pull not measured"
    summary+=("$(printf 'summary %8d: %s; insert NDJSON / .import = %s (peak %d MB); insert CSV / .import = %s (peak %d MB)' \
        "$count" "$pull_summary" "$(ratio "$import_s" "$ndjson_s")" "$((ndjson_kb / 1024))" "$(ratio "$import_s" "$csv_s")" "$((csv_kb / 1024))")")
done
echo
echo "load at the end$(uptime | sed 's/.*load average//')"
printf '%s\n' "${summary[@]}"
