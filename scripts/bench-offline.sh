#!/bin/sh
# Offline benchmark: a release build of tsync on COUNT records, then the queue's reports on BIG.
#   1. insert COUNT records from one NDJSON stream, in one command
#   2. status, status --porcelain, status --json and diff --ndjson with COUNT pending operations
#   3. the same query --filter over COUNT records
#   4. insert BIG records, and the reports of step 2 with BIG pending operations: the streamed
#      forms (status --json, diff --ndjson) should keep the same peak memory as with COUNT
# Prints wall time, CPU time (user + system: what the machine's load does not change) and peak
# memory, from /usr/bin/time -v, per step, and for the streamed reports the time to their first
# output (a pipe's first read). Check `uptime` first: wall times mean little on a busy machine.
# Goals: status (long and --porcelain) with 1,000,000 pending < 1 s; diff --ndjson of
# 100,000 < 2 s; status --json and diff --ndjson streamed: first output at once, memory flat.
# Usage: scripts/bench-offline.sh [COUNT] [BIG]   (defaults 100000 1000000; BIG 0 skips step 4;
# needs /usr/bin/time: apt-get install time; TSYNC_BIN=path uses that tsync instead of building one)
set -eu
cd "$(dirname "$0")/.."
count="${1:-100000}"
big="${2:-1000000}"

. scripts/lib/measure.sh
tsync_for_bench bench-offline

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Records like a todo app's: a few strings, a number, a boolean, a nested object.
records() {
    awk -v n="$1" 'BEGIN {
        for (i = 1; i <= n; i++)
            printf "{\"id\":\"rec-%07d\",\"text\":\"item number %d\",\"n\":%d,\"done\":%s,\"tags\":[\"a\",\"b\"],\"meta\":{\"owner\":\"user%d\"}}\n", i, i, i % 1000, (i % 3 == 0 ? "true" : "false"), i % 50
    }'
}

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

# first_output LABEL COMMAND...: the time from start to the first bytes read from its stdout (a
# pipe), and to its end, with the whole output read.
first_output() {
    label="$1"; shift
    python3 - "$@" <<'PY' | { read -r first total; printf '%-48s first output %s s  (all read %s s)\n' "$label" "$first" "$total"; }
import os, subprocess, sys, time
start = time.monotonic()
process = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
descriptor = process.stdout.fileno()
first = None
while True:
    chunk = os.read(descriptor, 1 << 16)
    if first is None:
        first = time.monotonic() - start
    if not chunk:
        break
process.wait()
if process.returncode not in (0, 1):
    sys.exit("exit code %d" % process.returncode)
print("%.3f %.3f" % (first, time.monotonic() - start))
PY
}

# reports N: the queue's reports of a store with N pending inserts (the current directory).
reports() {
    measure "status ($1 pending)" "$bin" status
    measure "status --porcelain ($1 pending)" "$bin" status --porcelain
    measure "status --json ($1 pending)" "$bin" status --json
    measure "diff --ndjson ($1 pending)" "$bin" diff --ndjson
    first_output "status --json ($1 pending)" "$bin" status --json
    first_output "diff --ndjson ($1 pending)" "$bin" diff --ndjson
}

echo "tsync offline benchmark, $count records ($(uname -m), $(nproc 2>/dev/null || echo '?') cores, load$(uptime | sed 's/.*load average//'))"
"$bin" init "$work/store" 2>/dev/null
records "$count" > "$work/records.ndjson"
cd "$work/store"
STDIN="$work/records.ndjson" measure "insert $count (one NDJSON stream)" "$bin" insert todo
reports "$count"
measure "tables" "$bin" tables
filter="done eq true and n ge 500"
measure "query --filter '$filter'" "$bin" query todo --filter "$filter"
measure "query --filter ... --json" "$bin" query todo --filter "$filter" --json
measure "query --filter ... --orderby 'n desc' --top 10" "$bin" query todo --filter "$filter" --orderby "n desc" --top 10

[ "$big" -gt 0 ] || exit 0
"$bin" init "$work/big" 2>/dev/null
records "$big" > "$work/records.ndjson"
cd "$work/big"
STDIN="$work/records.ndjson" measure "insert $big (one NDJSON stream)" "$bin" insert todo
rm -f "$work/records.ndjson"
reports "$big"
