#!/bin/bash
# upsert --csv against insert --csv on the same CSV of COUNT rows: in each of ROUNDS
# rounds, in turn, (1) insert --csv into a new store, (2) upsert --csv into a new store, (3) the
# same upsert --csv again into that store (a no-op: every record unchanged). Prints each step's
# median wall and CPU time (user + system, which the machine's load changes less) over the rounds,
# and the ratios to insert's. Goal: both upserts within 1.5x of insert --csv.
# Usage: scripts/bench-upsert.sh [COUNT]   (default 50000; ROUNDS=5; needs /usr/bin/time:
# apt-get install time; TSYNC_BIN=path uses that tsync instead of building one)
set -euo pipefail
cd "$(dirname "$0")/.."
count="${1:-50000}"
rounds="${ROUNDS:-5}"

. scripts/lib/measure.sh
tsync_for_bench bench-upsert

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# A CSV export of a todo app: an id column, text, a number, a boolean, text with a comma.
awk -v n="$count" 'BEGIN {
    print "id,text,n,done,owner,note"
    for (i = 1; i <= n; i++)
        printf "rec-%07d,item number %d,%d,%s,user%d,\"quoted, with a comma\"\n", i, i, i % 1000, (i % 3 == 0 ? "true" : "false"), i % 50
}' > "$work/records.csv"

# run LABEL STORE ARGS...: one command in STORE, its wall and CPU seconds appended to LABEL's lists.
run() {
    local label="$1" store="$2"; shift 2
    /usr/bin/time -f '%e %U %S' -o "$work/time" "$bin" "$@" -C "$store" < "$work/records.csv" > /dev/null 2> "$work/err" || {
        echo "bench-upsert: '$label' failed:" >&2; cat "$work/err" "$work/time" >&2; exit 1; }
    read -r wall user system < "$work/time"
    echo "$wall" >> "$work/$label.wall"
    awk -v u="$user" -v s="$system" 'BEGIN { print u + s }' >> "$work/$label.cpu"
}

median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "upsert --csv against insert --csv, $count rows, $rounds rounds ($(uname -m), $(nproc 2>/dev/null || echo '?') cores, load$(uptime | sed 's/.*load average//'))"
for round in $(seq "$rounds"); do
    rm -rf "$work/a" "$work/b"
    "$bin" init "$work/a" > /dev/null 2>&1
    "$bin" init "$work/b" > /dev/null 2>&1
    run insert "$work/a" insert todo --csv -q
    run upsert "$work/b" upsert todo --csv -q
    run rerun "$work/b" upsert todo --csv -q
done

insert_wall=$(median "$work/insert.wall")
insert_cpu=$(median "$work/insert.cpu")
for label in insert upsert rerun; do
    wall=$(median "$work/$label.wall")
    cpu=$(median "$work/$label.cpu")
    case "$label" in
        insert) name="insert --csv" ;;
        upsert) name="upsert --csv (new store)" ;;
        rerun) name="upsert --csv again (no-op)" ;;
    esac
    awk -v name="$name" -v w="$wall" -v c="$cpu" -v iw="$insert_wall" -v ic="$insert_cpu" \
        'BEGIN { printf "%-28s wall %6.2f s (%5.2fx)   cpu %6.2f s (%5.2fx)\n", name, w, w / iw, c, c / ic }'
done
