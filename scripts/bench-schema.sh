#!/usr/bin/env bash
# What a table schema costs a push (docs/DESIGN.md §16): a batched `tsync push` of RECORDS queued
# inserts of 20-field records into `tsync serve` on SQLite with `--schema` (20 typed properties,
# bounds, a pattern, a format, additionalProperties false) and without, alternating, ROUNDS
# rounds each; medians and the with / without ratio of the rates (goal >= 0.9). The store has not
# pulled the table, so only the server checks: the client's own check is `insert`'s cost.
# Usage: scripts/bench-schema.sh [-n RECORDS] [-r ROUNDS]   (TSYNC_BIN=path: that tsync)
set -euo pipefail
cd "$(dirname "$0")/.."
records=100000
rounds=3
while getopts "n:r:" option; do
    case "$option" in
        n) records=$OPTARG ;;
        r) rounds=$OPTARG ;;
        *) echo "usage: $0 [-n RECORDS] [-r ROUNDS]" >&2; exit 64 ;;
    esac
done
. scripts/lib/release-bin.sh
. scripts/lib/serve.sh
work=$(mktemp -d)
trap 'serve_stop_all; rm -rf "$work"' EXIT
python3 - "$records" "$work" <<'PY'
import json, sys
n, work = int(sys.argv[1]), sys.argv[2]
properties = {}
for i in range(20):
    kind = ("string", "integer", "number", "boolean")[i % 4]
    properties[f"f{i}"] = {"type": kind}
properties["f0"].update({"minLength": 1, "maxLength": 64, "pattern": "^item"})
properties["f1"].update({"minimum": 0})
properties["f4"].update({"format": "date"})
properties["f5"].update({"maximum": 1e9})
schema = {"type": "object", "additionalProperties": False, "required": ["f0", "f1"], "properties": properties}
json.dump(schema, open(f"{work}/items.schema.json", "w"))
with open(f"{work}/items.ndjson", "w") as out:
    for r in range(n):
        record = {"id": f"r{r:07d}"}
        for i in range(20):
            kind = i % 4
            record[f"f{i}"] = (f"item {r} {i}" if kind == 0 else r + i if kind == 1 else (r + i) / 3 if kind == 2 else r % 2 == 0)
        record["f4"] = "2026-11-28"
        out.write(json.dumps(record) + "\n")
PY
run() {  # run MODE -> seconds of the push
    local mode=$1 args=(--db "sqlite:$work/$1-$2.db" --no-auth)
    [ "$mode" = with ] && args+=(--schema "items=$work/items.schema.json")
    serve_start "$bin" "$work/serve-$1-$2.log" "${args[@]}"
    local store="$work/store-$1-$2"
    "$bin" init -q "$store" --remote "$SERVE_URL"
    "$bin" -C "$store" insert items - -q < "$work/items.ndjson"
    local start end
    start=$(date +%s.%N)
    "$bin" -C "$store" push -q
    end=$(date +%s.%N)
    serve_stop_all
    if grep -q '" 400 \| 400 [0-9.]* ms' "$work/serve-$1-$2.log"; then echo "records refused in $1" >&2; exit 1; fi
    echo "$end - $start" | bc
}
with=() without=()
for r in $(seq 1 "$rounds"); do
    without+=("$(run without "$r")")
    with+=("$(run with "$r")")
    echo "round $r: without ${without[-1]} s, with ${with[-1]} s" >&2
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
m_without=$(median "${without[@]}")
m_with=$(median "${with[@]}")
echo "push of $records records, medians of $rounds: without schema $m_without s ($(echo "$records / $m_without" | bc) records/s), with $m_with s ($(echo "$records / $m_with" | bc) records/s); with / without rate: $(echo "scale=2; $m_without / $m_with" | bc) (goal >= 0.9); load $(cut -d' ' -f1-3 /proc/loadavg)"
