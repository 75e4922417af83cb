#!/usr/bin/env bash
# Read-path benchmark, not a test: release build, `tsync serve --no-auth` on SQLite on
# loopback, in a temporary directory, all in one run so the figures compare.
#   For a table of SMALL and one of LARGE records (6 user fields each, loaded by a batched push),
#   wrk (16 connections, SECONDS s each) on three pages of 50:
#     filter     $filter=priority eq 500            (0.1% of the records match)
#     prefix     $filter=startswith(category, 'c-42') (1%)
#     sorted     $orderby=rank desc
#     range      $filter=rank ge 1000&$orderby=rank  (the filter and the order on one field)
#   first on a server without indexes, then restarted with --index on the three fields.
#   Then a pull of the SMALL table into an empty store, against the anchor: `sqlite3 .import` of
#   the same records (id and JSON body, tab-separated, `.mode tabs`) into a fresh database.
# Prints requests/s and p99 latency per case, the LARGE/SMALL cost ratio of each indexed page
# (aim: about 1 where the page reads only its own records: sorted, range; filter and prefix match
# 0.1% and 1% of the table, so their matches grow with it), and pull / .import.
# Usage: scripts/bench-read.sh [SMALL] [LARGE] [SECONDS]   (defaults 100000 1000000 5)
set -euo pipefail
cd "$(dirname "$0")/.."
small=${1:-100000}
large=${2:-1000000}
seconds=${3:-5}

scripts/install-deps.sh --with-bench   # wrk, GNU time, sqlite3
. scripts/lib/release-build.sh
bin=$(release_build tsync)

. scripts/lib/serve.sh
work=$(mktemp -d /tmp/tsync-bench-read.XXXXXX)
cleanup() {
    serve_stop_all
    rm -rf "$work"
}
trap cleanup EXIT

items() {  # NDJSON records: $1 = count
    awk -v count="$1" 'BEGIN {
        for (i = 0; i < count; i++)
            printf "{\"id\":\"item-%07d\",\"text\":\"record number %d\",\"complete\":%s,\"priority\":%d,\"rank\":%d,\"category\":\"c-%d\",\"due\":\"2026-%02d-%02dT12:00:00.000Z\"}\n",
                i, i, (i % 2 ? "true" : "false"), i % 1000, (i * 7919) % count, i % 100, 1 + i % 12, 1 + i % 28
    }'
}

# load NAME COUNT: a server database with COUNT records in table `items`, pushed in batches.
load() {
    local name=$1 count=$2
    serve_start "$bin" "$work/$name-load.log" --no-auth --db "sqlite:$work/$name.db"
    "$bin" init "$work/$name-writer" --remote "$SERVE_URL" >/dev/null
    items "$count" | "$bin" -C "$work/$name-writer" insert items >/dev/null
    "$bin" -C "$work/$name-writer" push -q >/dev/null
    serve_stop_all
}

declare -A pages=(
    [filter]='/tables/items?$filter=priority%20eq%20500&$top=50'
    [prefix]='/tables/items?$filter=startswith(category,%20%27c-42%27)&$top=50'
    [sorted]='/tables/items?$orderby=rank%20desc&$top=50'
    [range]='/tables/items?$filter=rank%20ge%201000&$orderby=rank&$top=50'
)
declare -A rates latencies

# measure NAME LABEL [serve options]: wrk on each page against the database NAME.
measure() {
    local name=$1 label=$2
    shift 2
    serve_start "$bin" "$work/$name-$label.log" --no-auth --db "sqlite:$work/$name.db" "$@"
    local port=${SERVE_URL##*:} page out
    for page in filter prefix sorted range; do
        out=$(BENCH_MODE=get BENCH_PATH="${pages[$page]}" BENCH_PORTS="$port" \
            wrk -t 2 -c 16 -d "${seconds}s" --timeout 30s --latency -s scripts/bench/spread.lua "$SERVE_URL" 2>&1)
        rates[$name-$label-$page]=$(echo "$out" | awk '/^Requests\/sec:/ { printf "%.0f", $2 }')
        latencies[$name-$label-$page]=$(echo "$out" | awk '$1 == "99%" { print $2 }')
        echo "$name $label $page: ${rates[$name-$label-$page]} requests/s, p99 ${latencies[$name-$label-$page]}"
    done
    serve_stop_all
}

indexes=(--index items.priority --index items.category --index items.rank)
for name in small large; do
    count=$small
    [ "$name" = large ] && count=$large
    echo "== $name: $count records"
    load "$name" "$count"
    measure "$name" plain
    measure "$name" indexed "${indexes[@]}"
done

echo
echo "== pull of $small records into an empty store, and the anchor: sqlite3 .import of the same rows"
serve_start "$bin" "$work/pull.log" --no-auth --db "sqlite:$work/small.db"
"$bin" init "$work/reader" --remote "$SERVE_URL" >/dev/null
start=$(date +%s.%N)
"$bin" -C "$work/reader" pull items --query-id bench -q
pull_seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
serve_stop_all
items "$small" | awk '{ id = substr($0, 8, 12); printf "%s\t%s\n", id, $0 }' >"$work/items.tsv"
start=$(date +%s.%N)
sqlite3 "$work/import.db" "CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT);" ".mode tabs" ".import $work/items.tsv t"
import_seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
echo "pull: ${pull_seconds}s; sqlite3 .import: ${import_seconds}s"

echo
for page in filter prefix sorted range; do
    awk -v p="$page" -v sp="${rates[small-plain-$page]}" -v si="${rates[small-indexed-$page]}" \
        -v lp="${rates[large-plain-$page]}" -v li="${rates[large-indexed-$page]}" \
        -v lpl="${latencies[large-plain-$page]}" -v lil="${latencies[large-indexed-$page]}" -v s="$small" -v l="$large" 'BEGIN {
        printf "summary %-6s: indexed %d req/s at %d records, %d at %d (cost ratio %.2f); without index %d and %d req/s; at %d: p99 %s indexed, %s without\n",
            p, si, s, li, l, (li > 0 ? si / li : 0), sp, lp, l, lil, lpl
    }'
done
awk -v s="$small" -v p="$pull_seconds" -v i="$import_seconds" 'BEGIN {
    printf "summary pull  : %d records/s; sqlite3 .import %d rows/s; pull / .import = %.2f\n", s / p, s / i, i / p
}'
