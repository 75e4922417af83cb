#!/usr/bin/env bash
# Sync benchmark (not a test): a release build of tsync against `tsync serve --no-auth` on
# loopback with SQLite, in a temporary directory.
#   1. push of 10,000 queued inserts                          aim: > 2,000 ops/s
#   2. pull of 100,000 records into an empty store            aim: > 20,000 records/s
#   3. the same pull the original SDKs' way: page size 50 and one SQLite transaction per record
#      (TSYNC_BENCH_ROW_TRANSACTIONS=1, a benchmark-only knob) — the baseline; aim: ≥ 10× faster
# Prints records/s and peak memory (maximum resident set size from /usr/bin/time -v).
# Usage: scripts/bench-sync.sh [RECORDS] [PUSH_OPS]   (defaults 100000 10000)
set -euo pipefail
cd "$(dirname "$0")/.."
records=${1:-100000}
push_ops=${2:-10000}

scripts/install-deps.sh --with-bench   # GNU time, for peak memory
swift build -c release --product tsync >&2
bin="$(swift build -c release --show-bin-path)/tsync"

. scripts/lib/serve.sh
work=$(mktemp -d /tmp/tsync-bench.XXXXXX)
cleanup() {
    serve_stop_all
    rm -rf "$work"
}
trap cleanup EXIT

serve_start "$bin" "$work/server.log" --no-auth --db "sqlite:$work/server.db"
url=$SERVE_URL
echo "server: $url (SQLite $work/server.db)"

# Runs a command under /usr/bin/time -v; sets `seconds` and `peak_kb`.
measure() {
    local log="$work/time.log"
    /usr/bin/time -v "$@" >"$work/out.json" 2>"$log" || { cat "$log" >&2; exit 1; }
    seconds=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log" | awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
    peak_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
}
rate() { awk -v n="$1" -v s="$2" 'BEGIN { if (s <= 0) s = 0.01; printf "%.0f", n / s }'; }

items() {  # NDJSON records: $1 = first index, $2 = count
    awk -v first="$1" -v count="$2" 'BEGIN {
        for (i = first; i < first + count; i++)
            printf "{\"id\":\"item-%07d\",\"text\":\"record number %d\",\"complete\":%s,\"priority\":%d}\n", i, i, (i % 2 ? "true" : "false"), i % 5
    }'
}

echo
echo "== 1. push of $push_ops queued inserts"
"$bin" init "$work/writer" --remote "$url" >/dev/null
items 0 "$push_ops" | "$bin" -C "$work/writer" insert items >/dev/null
measure "$bin" -C "$work/writer" push -q --json
push_seconds=$seconds
push_rate=$(rate "$push_ops" "$seconds")
echo "push: $push_ops ops in ${seconds}s = $push_rate ops/s, peak memory $((peak_kb / 1024)) MB"

if [ "$records" -gt "$push_ops" ]; then
    echo "   (seeding the other $((records - push_ops)) records on the server through push)"
    items "$push_ops" "$((records - push_ops))" | "$bin" -C "$work/writer" insert items >/dev/null
    "$bin" -C "$work/writer" push -q >/dev/null
fi

echo
echo "== 2. pull of $records records into an empty store (one transaction per page)"
"$bin" init "$work/reader" --remote "$url" >/dev/null
measure "$bin" -C "$work/reader" pull items --query-id bench -q --json
pull_rate=$(rate "$records" "$seconds")
echo "pull: $records records in ${seconds}s = $pull_rate records/s, peak memory $((peak_kb / 1024)) MB"
echo "      $(cat "$work/out.json")"

echo
echo "== 3. baseline: the same pull with page size 50 and one transaction per record"
"$bin" init "$work/baseline" --remote "$url" >/dev/null
measure env TSYNC_BENCH_ROW_TRANSACTIONS=1 "$bin" -C "$work/baseline" pull items --page-size 50 -q --json
base_rate=$(rate "$records" "$seconds")
echo "baseline: $records records in ${seconds}s = $base_rate records/s, peak memory $((peak_kb / 1024)) MB"

echo
awk -v p="$push_rate" -v r="$pull_rate" -v b="$base_rate" 'BEGIN {
    printf "summary: push %d ops/s (aim > 2000); pull %d records/s (aim > 20000); baseline %d records/s; pull is %.1fx the baseline (aim >= 10x)\n", p, r, b, (b > 0 ? r / b : 0)
}'
