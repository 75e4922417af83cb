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
# machine); the load is printed before and after. The ratios of CPU time (user + system; the
# pull's with its server's) are printed too: a busy machine stretches the wall clock of whichever
# process it happens to starve.
# Usage: scripts/bench-pull.sh [COUNT...]   (default 100000 1000000; TSYNC=path skips the build;
# PULL=0 measures only the inserts and the anchor; ROUNDS=N, default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(100000 1000000)

scripts/install-deps.sh --with-bench   # GNU time, sqlite3
if [ -z "${TSYNC:-}" ]; then
    . scripts/lib/release-build.sh
    TSYNC=$(release_build tsync)
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
summary=() cpu_summary=()
for count in "${counts[@]}"; do
    echo "== $count records"
    items "$count" >"$work/items.ndjson"
    csv_items "$count" >"$work/items.csv"
    # A JSON text holds no raw tab or newline (JSON escapes them), so each line is one row as it is.
    awk '{ id = substr($0, 8, 12); printf "%s\t%s\n", id, $0 }' "$work/items.ndjson" >"$work/import.tsv"

    pull_times=() ndjson_times=() csv_times=() import_times=() pull_kb=0 ndjson_kb=0 csv_kb=0
    pull_cpu=() ndjson_cpu=() csv_cpu=() import_cpu=()
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
            server_before=$(cpu_ticks "${SERVE_PIDS[0]}")
            measure "$bin" -C "$work/reader-$count" pull items --query-id clone -q
            pull_times+=("$seconds") pull_kb=$(max "$pull_kb" "$peak_kb")
            # The server's CPU counts: it shares the cores.
            pull_cpu+=("$(awk -v c="$cpu_seconds" -v a="$server_before" -v b="$(cpu_ticks "${SERVE_PIDS[0]}")" -v hz="$(getconf CLK_TCK)" 'BEGIN { print c + (b - a) / hz }')")
            pulled=$(sqlite3 "$work/reader-$count/.tsync/store.sqlite" "SELECT count(*) FROM records")
            [ "$pulled" = "$count" ] || { echo "bench-pull: the pull brought $pulled records, not $count" >&2; exit 1; }
            rm -rf "$work/reader-$count"
        fi

        "$bin" init "$work/ndjson-$count" >/dev/null
        STDIN="$work/items.ndjson" measure "$bin" -C "$work/ndjson-$count" insert items -q
        ndjson_times+=("$seconds") ndjson_kb=$(max "$ndjson_kb" "$peak_kb") ndjson_cpu+=("$cpu_seconds")
        rm -rf "$work/ndjson-$count"
        "$bin" init "$work/csv-$count" >/dev/null
        STDIN="$work/items.csv" measure "$bin" -C "$work/csv-$count" insert items --csv -q
        csv_times+=("$seconds") csv_kb=$(max "$csv_kb" "$peak_kb") csv_cpu+=("$cpu_seconds")
        rm -rf "$work/csv-$count"

        measure sqlite3 "$work/import-$count.db" "CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT);" ".mode tabs" ".import $work/import.tsv t"
        import_times+=("$seconds") import_cpu+=("$cpu_seconds")
        rm -f "$work/import-$count.db"
    done
    serve_stop_all
    rm -f "$work/server-$count.db"*
    pull_s=$(median "${pull_times[@]:-0}") ndjson_s=$(median "${ndjson_times[@]}") csv_s=$(median "${csv_times[@]}")
    import_s=$(median "${import_times[@]}")
    pull_c=$(median "${pull_cpu[@]:-0}") ndjson_c=$(median "${ndjson_cpu[@]}") csv_c=$(median "${csv_cpu[@]}") import_c=$(median "${import_cpu[@]}")

    if [ "${PULL:-1}" != 0 ]; then
        echo "pull (cold clone)  : ${pull_s}s$(spread "${pull_times[@]}"), $(rate "$count" "$pull_s") records/s, peak memory $((pull_kb / 1024)) MB"
    fi
    echo "insert from NDJSON : ${ndjson_s}s$(spread "${ndjson_times[@]}"), $(rate "$count" "$ndjson_s") records/s, peak memory $((ndjson_kb / 1024)) MB"
    echo "insert from CSV    : ${csv_s}s$(spread "${csv_times[@]}"), $(rate "$count" "$csv_s") records/s, peak memory $((csv_kb / 1024)) MB"
    echo "sqlite3 .import    : ${import_s}s$(spread "${import_times[@]}"), $(rate "$count" "$import_s") rows/s"
    echo "CPU seconds (user + system, medians; the pull's with the server's): pull $pull_c, NDJSON $ndjson_c, CSV $csv_c, .import $import_c"
    cpu_summary+=("$(printf 'summary %8d CPU time: pull / .import = %s; insert NDJSON / .import = %s; insert CSV / .import = %s' \
        "$count" "$(ratio "$import_c" "$pull_c")" "$(ratio "$import_c" "$ndjson_c")" "$(ratio "$import_c" "$csv_c")")")
    pull_summary="pull / .import = $(ratio "$import_s" "$pull_s") (peak $((pull_kb / 1024)) MB)"
    [ "${PULL:-1}" != 0 ] || pull_summary="pull not measured"
    summary+=("$(printf 'summary %8d: %s; insert NDJSON / .import = %s (peak %d MB); insert CSV / .import = %s (peak %d MB)' \
        "$count" "$pull_summary" "$(ratio "$import_s" "$ndjson_s")" "$((ndjson_kb / 1024))" "$(ratio "$import_s" "$csv_s")" "$((csv_kb / 1024))")")
done
echo
echo "load at the end$(uptime | sed 's/.*load average//')"
printf '%s\n' "${summary[@]}" "${cpu_summary[@]}"
