#!/usr/bin/env bash
# Benchmark (not a test) of single inserts to one table on `tsync serve` (SQLite, or DB=postgres://…
# naming an empty database, e.g. one made with createdb for it): CONNECTIONS
# clients each POST one record at a time, keep-alive, for DURATION seconds; prints the inserts a second and
# how far the newest `updatedAt` answered was ahead of the wall clock when the run ended (one
# millisecond per write transaction put it ahead past 1,000 writes a second; group commit,
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
python3 - "$SERVE_URL" "${CONNECTIONS:-32}" "${DURATION:-5}" <<'PY'
import asyncio, datetime, json, sys, time
url, connections, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
host, port = url.split("//")[1].split(":")
port = int(port)
done, newest, failures = 0, "", 0

async def client(number):
    global done, newest, failures
    reader, writer = await asyncio.open_connection(host, port)
    end = time.monotonic() + seconds
    serial = 0
    while time.monotonic() < end:
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
        if stamp > newest:
            newest = stamp
    writer.close()

async def main():
    start = time.monotonic()
    await asyncio.gather(*(client(n) for n in range(connections)))
    elapsed = time.monotonic() - start
    now = datetime.datetime.now(datetime.timezone.utc)
    stamp = datetime.datetime.strptime(newest, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    ahead = (stamp - now).total_seconds()
    print(f"RESULT single inserts/s={done / elapsed:.0f} inserts={done} failures={failures} "
          f"connections={connections} seconds={elapsed:.1f} newest-updatedAt-ahead-of-clock={ahead:+.3f}s")

asyncio.run(main())
PY
