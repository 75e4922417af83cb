#!/bin/sh
# Offline benchmark: a release build of tsync on 100,000 records.
#   1. insert 100,000 records from one NDJSON stream, in one command
#   2. status and status --porcelain with 100,000 pending operations
#   3. the same query --filter over 100,000 records
# Prints wall time, CPU time (user + system: what the machine's load does not change) and peak
# memory, from /usr/bin/time -v, per step. Check `uptime` first: wall times mean little on a busy machine.
# Usage: scripts/bench-offline.sh [COUNT]   (default 100000; needs /usr/bin/time: apt-get install time)
set -eu
cd "$(dirname "$0")/.."
count="${1:-100000}"

[ -x /usr/bin/time ] || { echo "bench-offline: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }

echo "building release tsync (this can take several minutes)..." >&2
swift build -c release --product tsync >&2
bin="$(swift build -c release --show-bin-path)/tsync"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$bin" init "$work/store" 2>/dev/null

# Records like a todo app's: a few strings, a number, a boolean, a nested object.
awk -v n="$count" 'BEGIN {
    for (i = 1; i <= n; i++)
        printf "{\"id\":\"rec-%07d\",\"text\":\"item number %d\",\"n\":%d,\"done\":%s,\"tags\":[\"a\",\"b\"],\"meta\":{\"owner\":\"user%d\"}}\n", i, i, i % 1000, (i % 3 == 0 ? "true" : "false"), i % 50
}' > "$work/records.ndjson"

measure() {
    label="$1"; shift
    /usr/bin/time -v "$@" > "$work/out" 2> "$work/time" < "${STDIN:-/dev/null}" || {
        echo "bench-offline: '$label' failed:" >&2; cat "$work/time" >&2; exit 1; }
    wall="$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/time")"
    user="$(sed -n 's/.*User time (seconds): //p' "$work/time")"
    system="$(sed -n 's/.*System time (seconds): //p' "$work/time")"
    rss="$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time")"
    lines="$(wc -l < "$work/out" | tr -d ' ')"
    printf '%-48s wall %-8s cpu %5.2f s  peak RSS %4d MB  stdout %s lines\n' \
        "$label" "$wall" "$(awk -v u="$user" -v s="$system" 'BEGIN { print u + s }')" "$((rss / 1024))" "$lines"
}

cd "$work/store"
echo "tsync offline benchmark, $count records ($(uname -m), $(nproc 2>/dev/null || echo '?') cores, load$(uptime | sed 's/.*load average//'))"
STDIN="$work/records.ndjson" measure "insert $count (one NDJSON stream)" "$bin" insert todo
measure "status ($count pending)" "$bin" status
measure "status --porcelain ($count pending)" "$bin" status --porcelain
measure "status --json ($count pending)" "$bin" status --json
measure "tables" "$bin" tables
filter="done eq true and n ge 500"
measure "query --filter '$filter'" "$bin" query todo --filter "$filter"
measure "query --filter ... --json" "$bin" query todo --filter "$filter" --json
measure "query --filter ... --orderby 'n desc' --top 10" "$bin" query todo --filter "$filter" --orderby "n desc" --top 10
