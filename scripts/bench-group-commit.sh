#!/usr/bin/env bash
# Benchmark (not a test) of single inserts to one table on `tsync serve` (SQLite, or DB=postgres://…
# naming an empty database, e.g. one made with createdb for it): CONNECTIONS
# clients each POST one record at a time, keep-alive, for DURATION seconds, as fast as they are
# answered or, with RATE, RATE inserts a second offered in all (each client sends on its own
# schedule, late sends go at once); prints the inserts a second and how far `updatedAt` was ahead
# of the wall clock: the most any answer was when it came, and the newest's when the run ended
# (one millisecond per write transaction put it ahead past 1,000 writes a second; group commit,
# docs/DESIGN.md §10, keeps it at the clock). BIN=path picks the binary (default: the debug build,
# whose figures are not release figures); CONNECTIONS (default 32), DURATION seconds (default 5).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${BIN:-}" ]; then bin=$BIN; else
    swift build --product tsync >&2
    bin="$(swift build --show-bin-path)/tsync"
fi

. scripts/lib/serve.sh
work=$(mktemp -d)
cleanup() {
    serve_stop_all
    rm -rf "$work"
}
trap cleanup EXIT

serve_start "$bin" "$work/serve.log" --db "${DB:-sqlite:$work/server.db}" --no-auth --keep-history 0
python3 - "$SERVE_URL" "${CONNECTIONS:-32}" "${DURATION:-5}" "${RATE:-0}" "${PROCESSES:-2}" <<'PY'
import asyncio, datetime, json, os, sys, time
url, connections, seconds, rate, processes = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
host, port = url.split("//")[1].split(":")
port = int(port)
done, newest, failures, lead = 0, "", 0, float("-inf")

def parse(stamp):
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)

async def client(number):
    global done, newest, failures, lead
    reader, writer = await asyncio.open_connection(host, port)
    start = time.monotonic()
    end = start + seconds
    interval = connections / rate if rate > 0 else 0
    serial = 0
    while time.monotonic() < end:
        if interval:
            due = start + (serial + number / connections) * interval
            if due > time.monotonic():
                await asyncio.sleep(due - time.monotonic())
        body = json.dumps({"id": f"c{number}-{serial}", "n": serial}).encode()
        serial += 1
        writer.write(b"POST /tables/burst HTTP/1.1\r\nHost: x\r\nZUMO-API-VERSION: 2.0.0\r\n"
                     b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        answer = await reader.readexactly(length)
        if not head.startswith(b"HTTP/1.1 201"):
            failures += 1
            continue
        done += 1
        stamp = json.loads(answer)["updatedAt"]
        lead = max(lead, (parse(stamp) - datetime.datetime.now(datetime.timezone.utc)).total_seconds())
        if stamp > newest:
            newest = stamp
    writer.close()

async def clients(numbers):
    start = time.monotonic()
    await asyncio.gather(*(client(n) for n in numbers))
    return time.monotonic() - start

def main():
    # PROCESSES (default 2) Python processes share the clients: one cannot offer 5,000 a second.
    global done, newest, failures, lead
    pipes = []
    for index in range(processes):
        read, write = os.pipe()
        if os.fork() == 0:
            os.close(read)
            elapsed = asyncio.run(clients(range(index, connections, processes)))
            os.write(write, json.dumps([done, newest, failures, lead, elapsed]).encode())
            os._exit(0)
        os.close(write)
        pipes.append(read)
    elapsed = 0.0
    for read in pipes:
        with os.fdopen(read) as answer:
            part, part_newest, part_failures, part_lead, part_elapsed = json.load(answer)
        done, failures, lead = done + part, failures + part_failures, max(lead, part_lead)
        newest, elapsed = max(newest, part_newest), max(elapsed, part_elapsed)
    for _ in pipes:
        os.wait()
    now = datetime.datetime.now(datetime.timezone.utc)
    ahead = (parse(newest) - now).total_seconds()
    offered = f"{rate:.0f}" if rate > 0 else "max"
    print(f"RESULT single inserts/s={done / elapsed:.0f} offered/s={offered} inserts={done} failures={failures} "
          f"connections={connections} seconds={elapsed:.1f} max-updatedAt-ahead-when-answered={lead:+.3f}s "
          f"newest-updatedAt-ahead-of-clock={ahead:+.3f}s")

main()
PY
