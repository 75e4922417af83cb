#!/usr/bin/env bash
# Benchmark (not a test): a normal client's page latency while `tsync serve` is under hostile load
#. Loopback only, bounded in time and count.
#
#   scripts/bench-hostile.sh [TSYNC_BINARY] [-- SERVE_FLAGS...]
#
# Starts the server (SQLite, --no-auth, a free port) with SERVE_FLAGS, seeds 300 records of 4 KB
# (straight into the database) and one small table, then for DURATION seconds (default 30):
#   - SLOW connections (default 1000) each send a POST head and trickle its body, a byte every 2 s;
#   - HEAVY clients (default 4) loop a read whose $filter nests two `replace` (seconds per query);
#   - one normal client reads a one-record page (GET /tables/small?$top=1) again and again,
#     each on a new connection, with a 30 s timeout.
# Prints the normal client's p50/p99 latency, how many of its reads failed, and the heavy reads'
# statuses. Needs python3 and sqlite3; raises the open-file limit to fit the connections.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${1:-.build/debug/tsync}
shift || true
[ "${1:-}" = "--" ] && shift
duration=${DURATION:-30}
slow=${SLOW:-1000}
heavy=${HEAVY:-4}
ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)"

work=$(mktemp -d)
server=""
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

"$bin" serve --no-auth --port 0 --db "sqlite:$work/bench.db" "$@" 2>"$work/serve.log" &
server=$!
for _ in $(seq 100); do grep -q listening "$work/serve.log" && break; sleep 0.1; done
url=$(grep -o 'http://[0-9.:]*' "$work/serve.log" | head -1)
[ -n "$url" ] || { cat "$work/serve.log" >&2; exit 1; }

python3 - "$url" "$work/bench.db" "$duration" "$slow" "$heavy" "$bin $*" <<'PY'
import socket, sqlite3, statistics, subprocess, sys, threading, time, urllib.request, urllib.error
url, db, duration, slow, heavy, label = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
host, port = url.split("//")[1].split(":")
port = int(port)

def request(method, path, body=None, timeout=30):
    req = urllib.request.Request(url + path, data=body, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            r.read(); return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except Exception as e:
        return type(e).__name__

request("POST", "/tables/small", b'{"id": "one"}')
request("POST", "/tables/slow", b'{"id": "seed"}')
subprocess.run(["sqlite3", "-cmd", ".timeout 5000", db, """
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
INSERT INTO t_slow (id, created_at, updated_at, version, deleted, owner, body)
SELECT 'r' || i, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 'v', 0, NULL,
    json_object('s', replace(printf('%4000s', ''), ' ', 'x')) FROM n;"""], check=True)

stop = time.monotonic() + duration
forty = "x" * 40
heavy_path = "/tables/slow?$filter=" + urllib.request.quote(f"length(replace(replace(s,'x','{forty}'),'x','{forty}')) eq 1")
heavy_statuses = []

def heavy_client():
    while time.monotonic() < stop:
        heavy_statuses.append(request("GET", heavy_path, timeout=120))

sockets = []
def open_slow():
    for _ in range(slow):
        try:
            s = socket.create_connection((host, port), timeout=5)
            s.sendall(b"POST /tables/slow HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
            sockets.append(s)
        except OSError:
            pass

def trickle():
    while time.monotonic() < stop:
        for s in list(sockets):
            try: s.send(b" ")
            except OSError: sockets.remove(s)
        time.sleep(2)

open_slow()
held = len(sockets)
threads = [threading.Thread(target=heavy_client) for _ in range(heavy)] + [threading.Thread(target=trickle)]
for t in threads: t.start()
time.sleep(1)
latencies, failures = [], {}
while time.monotonic() < stop:
    start = time.monotonic()
    status = request("GET", "/tables/small?$top=1", timeout=30)
    if status == 200: latencies.append(time.monotonic() - start)
    else: failures[status] = failures.get(status, 0) + 1
    time.sleep(0.05)
for t in threads: t.join()
still_open = len(sockets)
for s in sockets: s.close()

def pct(p):
    if not latencies: return float("nan")
    ordered = sorted(latencies)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] * 1000
counts = {}
for s in heavy_statuses: counts[s] = counts.get(s, 0) + 1
print(f"RESULT {label}: normal reads ok={len(latencies)} failed={failures} p50={pct(50):.1f} ms p99={pct(99):.1f} ms; "
      f"slow-body connections opened={held} still open at the end={still_open}; heavy reads {counts}")
PY
