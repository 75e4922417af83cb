#!/usr/bin/env bash
# Sync benchmark (not a test): release builds against `tsync serve --no-auth` on loopback with SQLite,
# in a temporary directory, all in one run so the figures compare:
#   1. push of PUSH_OPS and of BIG_PUSH queued inserts through the batch route (tsync serve's default)
#   2. the same pushes one request per operation (a server with --max-batch 0, as any v2 server)
#   3. the anchor: wrk's ceiling for single-record POSTs on the same server (16 connections)
#   4. pull of RECORDS records into an empty store (one transaction per page, next page prefetched)
#   5. the baseline pull the original SDKs' way: pages of 50 one after the other and one SQLite
#      transaction per record (the separate tsync-pull-baseline executable, not part of tsync)
# Prints rates, ratios and peak memory (maximum resident set size, /usr/bin/time -v).
# Aims: batched push >= 10x the per-request push and >= 3x the wrk single-insert ceiling;
# peak memory flat between PUSH_OPS and BIG_PUSH.
# Usage: scripts/bench-sync.sh [RECORDS] [PUSH_OPS] [BIG_PUSH]   (defaults 100000 10000 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
records=${1:-100000}
push_ops=${2:-10000}
big_push=${3:-100000}

scripts/install-deps.sh --with-bench   # wrk, GNU time
. scripts/lib/release-build.sh
bin=$(release_build tsync)
baseline=$(release_build tsync-pull-baseline)

. scripts/lib/serve.sh
work=$(mktemp -d /tmp/tsync-bench.XXXXXX)
cleanup() {
    serve_stop_all
    rm -rf "$work"
}
trap cleanup EXIT

. scripts/lib/measure.sh
# Each command's JSON report, for json_field.
OUT="$work/out.json"
json_field() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$work/out.json" "$1"; }

items() {  # NDJSON records: $1 = first index, $2 = count
    awk -v first="$1" -v count="$2" 'BEGIN {
        for (i = first; i < first + count; i++)
            printf "{\"id\":\"item-%07d\",\"text\":\"record number %d\",\"complete\":%s,\"priority\":%d}\n", i, i, (i % 2 ? "true" : "false"), i % 5
    }'
}

# push_case NAME SERVER_URL COUNT: a fresh store queues COUNT inserts and pushes them.
push_case() {
    local name=$1 url=$2 count=$3
    "$bin" init "$work/$name" --remote "$url" >/dev/null
    items 0 "$count" | "$bin" -C "$work/$name" insert items >/dev/null
    measure "$bin" -C "$work/$name" push -q --json
    push_rate=$(rate "$count" "$seconds")
    push_requests=$(json_field requests)
    echo "$name: $count ops in ${seconds}s = $push_rate ops/s, $push_requests requests, peak memory $((peak_kb / 1024)) MB"
}

echo "== 1. batched push (tsync serve, --max-batch 1000)"
serve_start "$bin" "$work/batched.log" --no-auth --db "sqlite:$work/batched-small.db"
push_case batched-small "$SERVE_URL" "$push_ops"
batched_small=$push_rate
serve_start "$bin" "$work/batched-big.log" --no-auth --db "sqlite:$work/batched-big.db"
push_case batched-big "$SERVE_URL" "$big_push"
batched_big=$push_rate
batched_big_kb=$peak_kb

echo
echo "== 2. one request per operation (tsync serve --max-batch 0, 8 in flight)"
serve_start "$bin" "$work/single.log" --no-auth --max-batch 0 --db "sqlite:$work/single-small.db"
push_case single-small "$SERVE_URL" "$push_ops"
single_small=$push_rate
serve_start "$bin" "$work/single-big.log" --no-auth --max-batch 0 --db "sqlite:$work/single-big.db"
push_case single-big "$SERVE_URL" "$big_push"
single_big=$push_rate

echo
echo "== 3. anchor: wrk single-record POST ceiling on a fresh server (16 connections, 10 s)"
serve_start "$bin" "$work/wrk.log" --no-auth --db "sqlite:$work/wrk.db"
port=${SERVE_URL##*:}
wrk_out=$(BENCH_MODE=insert BENCH_PATH=/tables/items BENCH_PORTS="$port" BENCH_RUN="w$RANDOM" \
    wrk -t 2 -c 16 -d 10s --latency -s scripts/bench/spread.lua "$SERVE_URL" 2>&1)
ceiling=$(echo "$wrk_out" | awk '/^Requests\/sec:/ { printf "%.0f", $2 }')
echo "wrk: $ceiling inserts/s"

echo
echo "== 4. pull of $records records into an empty store"
serve_start "$bin" "$work/pull.log" --no-auth --db "sqlite:$work/pull.db"
pull_url=$SERVE_URL
"$bin" init "$work/writer" --remote "$pull_url" >/dev/null
items 0 "$records" | "$bin" -C "$work/writer" insert items >/dev/null
"$bin" -C "$work/writer" push -q >/dev/null
"$bin" init "$work/reader" --remote "$pull_url" >/dev/null
measure "$bin" -C "$work/reader" pull items --query-id bench -q --json
pull_rate=$(rate "$records" "$seconds")
echo "pull: $records records in ${seconds}s = $pull_rate records/s, peak memory $((peak_kb / 1024)) MB"

echo
echo "== 5. baseline: pages of 50, one transaction per record (tsync-pull-baseline)"
"$bin" init "$work/baseline" --remote "$pull_url" >/dev/null
measure "$baseline" "$work/baseline" items
base_rate=$(rate "$records" "$seconds")
echo "baseline: $records records in ${seconds}s = $base_rate records/s"

echo
awk -v bs="$batched_small" -v bb="$batched_big" -v ss="$single_small" -v sb="$single_big" -v c="$ceiling" \
    -v r="$pull_rate" -v b="$base_rate" -v kb="$batched_big_kb" -v n="$push_ops" -v big="$big_push" 'BEGIN {
    printf "summary: batched push %d ops/s (%d ops), %d ops/s (%d ops, peak %d MB)\n", bs, n, bb, big, kb / 1024
    printf "         one request per operation %d ops/s (%d ops), %d ops/s (%d ops)\n", ss, n, sb, big
    printf "         batched / per-request: %.1fx and %.1fx (aim >= 10x); batched / wrk ceiling (%d/s): %.1fx (aim >= 3x)\n", bs / ss, bb / sb, c, bb / c
    printf "         pull %d records/s; baseline %d records/s; pull is %.1fx the baseline\n", r, b, (b > 0 ? r / b : 0)
}'
