#!/usr/bin/env bash
# Live-sync benchmark, not a test: change-to-event latency of `tsync watch`, measured
# in one run against its anchor. Release build, `tsync serve --no-auth` on SQLite on loopback.
#   live     a store runs `tsync watch --json` against the server (the live route, Prefer: wait);
#   polling  another store runs `tsync watch --json --interval INTERVAL` against a second server,
#            on a database of its own (a SQLite database takes one server), started with
#            --max-watchers 0 (a plain v2 server: polled).
# N records are inserted one at a time with POST /tables/todo (python's urllib, one connection a
# request), PAUSE seconds apart. A record's latency is its `pulled` event's `at` minus its
# `updatedAt` (the commit's time, from the same clock): the time from the commit to the record
# being in the watching store's table and its event on stdout. Millisecond resolution.
# Prints p50, p99 and max of each, and polling / live.
# Then idle watchers: a third server (--max-watchers W) gets W held reads at once (raw sockets,
# `Prefer: wait=25` on an empty page), its resident memory is read before and after (VmRSS), one
# record is inserted, and the time from its commit to each held read's answer is measured.
# Prints KB of server memory per held read, and p50/p99/max of the fan-out.
# Then catch-up after a reconnect: a watcher's server is killed, C records are written meanwhile
# (a batched `tsync push` through a second server on the same database), and the server comes
# back on its port. Prints records/s from the watcher's first `pulled` event of them to its last
# (the events' `at`: each page written to the store and printed), the delay before the first
# (the reconnect's jittered backoff), and the anchor: `tsync pull` of the same records into a
# fresh store in the same run (wall time of the command), and the ratio.
# Usage: scripts/bench-live.sh [N] [INTERVAL] [PAUSE] [W] [C]   (defaults 200 1 0.05 10000 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-200}
interval=${2:-1}
pause=${3:-0.05}
idle=${4:-10000}
catchup=${5:-100000}

if [ -z "${TSYNC_BIN:-}" ]; then
    . scripts/lib/release-build.sh
    bin=$(release_build tsync)
else
    bin=$TSYNC_BIN
fi

. scripts/lib/serve.sh
work=$(mktemp -d /tmp/tsync-bench-live.XXXXXX)
watchers=()
cleanup() {
    for pid in "${watchers[@]}"; do kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
    serve_stop_all
    rm -rf "$work"
}
trap cleanup EXIT

serve_start "$bin" "$work/live.log" --db "sqlite:$work/server.db" --no-auth
live_url=$SERVE_URL
serve_start "$bin" "$work/plain.log" --db "sqlite:$work/plain.db" --no-auth --max-watchers 0
plain_url=$SERVE_URL

for side in live plain; do
    url=$live_url
    [ "$side" = plain ] && url=$plain_url
    "$bin" init "$work/$side" --remote "$url" >/dev/null
    "$bin" -C "$work/$side" pull todo --query-id all >/dev/null 2>&1
done
"$bin" -C "$work/live" watch --json >"$work/live.events" 2>"$work/live.err" &
watchers+=($!)
"$bin" -C "$work/plain" watch --json --interval "$interval" >"$work/plain.events" 2>"$work/plain.err" &
watchers+=($!)
sleep 1

python3 - "$live_url" "$plain_url" "$count" "$pause" "$work" <<'PY'
import json, sys, time, urllib.request
from datetime import datetime

urls = {"live": sys.argv[1], "plain": sys.argv[2]}
count, pause, work = int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]

def millis(text):
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp() * 1000

# Each record is written to both servers (a database each): its latency on a side is from the
# commit that side's server made.
committed = {"live": {}, "plain": {}}
for i in range(count):
    body = json.dumps({"id": f"r{i:06d}", "n": i}).encode()
    for side, url in urls.items():
        request = urllib.request.Request(url + "/tables/todo", data=body, method="POST",
                                         headers={"Content-Type": "application/json", "ZUMO-API-VERSION": "2.0.0"})
        with urllib.request.urlopen(request) as reply:
            record = json.load(reply)
        committed[side][record["id"]] = millis(record["updatedAt"])
    time.sleep(pause)

def latencies(side, wait_seconds):
    deadline = time.time() + wait_seconds
    while True:
        seen = {}
        with open(f"{work}/{side}.events") as events:
            for line in events:
                event = json.loads(line)
                if event.get("event") == "pulled" and event.get("id") in committed[side]:
                    seen.setdefault(event["id"], millis(event["at"]) - committed[side][event["id"]])
        if len(seen) == len(committed[side]) or time.time() > deadline:
            return sorted(seen.values()), len(seen)
        time.sleep(0.2)

def pct(values, p):
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] if values else float("nan")

results = {}
for side in ("live", "plain"):
    values, got = latencies(side, 30)
    results[side] = values
    print(f"{side:8} {got}/{len(committed[side])} events  p50 {pct(values, 50):7.1f} ms  p99 {pct(values, 99):7.1f} ms  max {max(values) if values else float('nan'):7.1f} ms")
if results["live"] and results["plain"]:
    print(f"polling / live: p50 x{pct(results['plain'], 50) / max(pct(results['live'], 50), 0.5):.0f}, p99 x{pct(results['plain'], 99) / max(pct(results['live'], 99), 0.5):.0f}")
PY

# Catch-up after a reconnect.
serve_start "$bin" "$work/catch.log" --db "sqlite:$work/catch.db" --no-auth
catch_url=$SERVE_URL
catch_pid=${SERVE_PIDS[${#SERVE_PIDS[@]}-1]}
"$bin" init "$work/catch" --remote "$catch_url" >/dev/null
"$bin" -C "$work/catch" pull items --query-id all >/dev/null 2>&1
"$bin" -C "$work/catch" watch --json >"$work/catch.events" 2>"$work/catch.err" &
watchers+=($!)
for _ in $(seq 1 100); do grep -q '"connected"' "$work/catch.events" && break; sleep 0.1; done
kill -KILL "$catch_pid"
wait "$catch_pid" 2>/dev/null || true
serve_start "$bin" "$work/catch-writer.log" --db "sqlite:$work/catch.db" --no-auth
"$bin" init "$work/catch-writer" --remote "$SERVE_URL" >/dev/null
awk -v count="$catchup" 'BEGIN { for (i = 0; i < count; i++) printf "{\"id\":\"c%07d\",\"text\":\"record number %d\",\"n\":%d}\n", i, i, i }' |
    "$bin" -C "$work/catch-writer" insert items >/dev/null
"$bin" -C "$work/catch-writer" push -q >/dev/null
# The writer's server ends before the watched one comes back: a SQLite database takes one server.
writer_pid=${SERVE_PIDS[${#SERVE_PIDS[@]}-1]}
kill -TERM "$writer_pid"
wait "$writer_pid" 2>/dev/null || true
restarted=$(date +%s.%N)
"$bin" serve --port "${catch_url##*:}" --db "sqlite:$work/catch.db" --no-auth >"$work/catch-again.log" 2>&1 &
SERVE_PIDS+=($!)
"$bin" init "$work/catch-anchor" --remote "$catch_url" >/dev/null
python3 - "$work" "$catchup" "$restarted" <<'PY'
import json, sys, time
from datetime import datetime

work, count, restarted = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
deadline = time.time() + 120
while True:
    ats = []
    with open(f"{work}/catch.events") as events:
        for line in events:
            if '"pulled"' in line:
                event = json.loads(line)
                if event.get("table") == "items":
                    ats.append(datetime.strptime(event["at"], "%Y-%m-%dT%H:%M:%S.%fZ").timestamp())
    if len(ats) >= count or time.time() > deadline:
        break
    time.sleep(0.2)
if not ats:
    print(f"catch-up  0/{count} records after the restart")
    sys.exit(0)
spent = max(ats[-1] - ats[0], 0.001)
with open(f"{work}/catch.rate", "w") as out:
    out.write(f"{len(ats) / spent:.0f}")
print(f"catch-up  {len(ats)}/{count} records: {len(ats) / spent:,.0f} records/s ({spent:.2f} s from the first pulled event to the last; "
      f"first {ats[0] - restarted:.2f} s after the restart)")
PY
anchor_start=$(date +%s.%N)
"$bin" -C "$work/catch-anchor" pull items --query-id all -q >/dev/null
anchor_end=$(date +%s.%N)
python3 - "$catchup" "$anchor_start" "$anchor_end" "$work/catch.rate" <<'PY'
import os, sys
count, start, end, rate_file = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
pull = count / (end - start)
line = f"pull      {count} records: {pull:,.0f} records/s ({end - start:.2f} s, the whole command)"
if os.path.exists(rate_file):
    line += f"; catch-up / pull: {float(open(rate_file).read()) / pull:.2f}"
print(line)
PY

# Idle watchers.
# The held reads come from one address: its shares go (as in bench-fanout.sh), and one address
# may fill only 7/8 of --max-connections.
serve_start "$bin" "$work/idle.log" --db "sqlite:$work/idle.db" --no-auth --max-watchers "$idle" \
    --max-connections $((idle * 8 / 7 + 128)) --max-client-connections 100000 --max-account-requests 100000
idle_url=$SERVE_URL
idle_pid=${SERVE_PIDS[${#SERVE_PIDS[@]}-1]}
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
python3 - "$idle_url" "$idle" "$idle_pid" <<'PY'
import asyncio, json, sys, time, urllib.request
from datetime import datetime

url, count, pid = sys.argv[1], int(sys.argv[2]), sys.argv[3]
host, port = url.split("//")[1].split(":")
path = "/tables/idle?$filter=updatedAt%20gt%20datetimeoffset'2000-01-01T00:00:00.000Z'&__includeDeleted=true"
request = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nZUMO-API-VERSION: 2.0.0\r\n"
           f"Prefer: wait=25\r\n\r\n").encode()

def rss_kb():
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])

async def main():
    before = rss_kb()
    connections = []
    for i in range(count):
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(request)
        connections.append((reader, writer))
        if i % 500 == 499:
            await asyncio.sleep(0.05)
    await asyncio.sleep(3)
    held = rss_kb()
    received = []

    async def answer(reader):
        data = await reader.readuntil(b"\r\n\r\n")
        received.append(time.time() * 1000)
        return data

    tasks = [asyncio.create_task(answer(reader)) for reader, _ in connections]
    await asyncio.sleep(0.5)
    early = sum(task.done() for task in tasks)
    body = json.dumps({"id": "wake"}).encode()
    post = urllib.request.Request(url + "/tables/idle", data=body, method="POST",
                                  headers={"Content-Type": "application/json", "ZUMO-API-VERSION": "2.0.0"})
    reply = await asyncio.to_thread(lambda: json.load(urllib.request.urlopen(post)))
    committed = datetime.strptime(reply["updatedAt"], "%Y-%m-%dT%H:%M:%S.%fZ").timestamp() * 1000
    await asyncio.wait(tasks, timeout=30)
    values = sorted(r - committed for r in received)
    pct = lambda p: values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]
    print(f"idle     {count} held reads ({early} answered before the write): server RSS {before} KB -> {held} KB, "
          f"{(held - before) / count:.1f} KB each")
    print(f"fan-out  {len(values)}/{count} answered after one write: p50 {pct(50):.0f} ms  p99 {pct(99):.0f} ms  max {values[-1]:.0f} ms")
    for _, writer in connections:
        writer.close()

asyncio.run(main())
PY
