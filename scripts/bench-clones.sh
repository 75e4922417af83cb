#!/usr/bin/env bash
# Cold clones at once, a benchmark, not a test: COUNT records in one table, then CLONES new stores
# each `pull --query-id` the table from nothing, all started at the same moment, stderr not a
# terminal (as in a script or a CI job). On PostgreSQL (TSYNC_BENCH_POSTGRES_URL, a database URL
# whose server may get a new database) through INSTANCES `tsync serve` behind haproxy (round
# robin, `/ready` checked every second, as an operator runs it); else one instance on SQLite.
# Reports: how many clones exited 0 with every record (aim: all), their wall times, whether any
# page asked for a count, and the server-side time of the pull pages, from the instances'
# /metrics histograms (p99, aim under 1 s), with haproxy's health-check failures.
# The instances trust the balancer (`--trusted-proxy`), as README's deployment says.
# The clones stand for 200 other machines: they run at the lowest priority (CLIENT_NICE, 19), so
# that on one machine they take the cores only when the servers, haproxy and PostgreSQL leave them
# (CLIENT_NICE=0 shares the cores evenly, and the page times then measure the clients' CPU queue).
# The servers' CPU seconds per page are printed too: a figure no machine's load stretches.
# Usage: scripts/bench-clones.sh   (COUNT=1000000 CLONES=200 INSTANCES=3; TSYNC_BIN=path skips
# the build; KEEP=dir keeps the servers', haproxy's and the clones' logs there). Needs sqlite3,
# curl, jq, /usr/bin/time; haproxy for INSTANCES > 1.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${COUNT:-1000000}
clones=${CLONES:-200}
instances=${INSTANCES:-3}
client_nice=${CLIENT_NICE:-19}
pg_url=${TSYNC_BENCH_POSTGRES_URL:-}

. scripts/lib/release-bin.sh
. scripts/lib/serve.sh
work=$(mktemp -d /tmp/tsync-bench-clones.XXXXXX)
haproxy_pid=""
database=""
cleanup() {
    if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$work"/*.log "$work"/c*.result "$KEEP"/ 2>/dev/null || true; fi
    [ -n "$haproxy_pid" ] && kill "$haproxy_pid" 2>/dev/null
    serve_stop_all
    if [ -n "$database" ]; then psql -q "$pg_url" -c "DROP DATABASE IF EXISTS $database WITH (FORCE)" >/dev/null 2>&1 || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
password="bench clones password"

if [ -n "$pg_url" ]; then
    database="tsync_bench_clones_$$"
    psql -q "$pg_url" -c "CREATE DATABASE $database" >/dev/null
    db="${pg_url%/*}/$database"
else
    db="sqlite:$work/server.db"
    instances=1
fi
# A clone is a device of its own: ten devices to an account (each runs at most five requests at
# once, under an account's share of 64), and since every clone here comes from 127.0.0.1, where 200
# devices would come from 200 addresses, the per-address share is raised to let them in.
accounts=$(((clones + 9) / 10))
tokens=()
for a in $(seq 1 "$accounts"); do
    "$bin" user add "cloner$a" --password-stdin --db "$db" <<<"$password" >/dev/null 2>&1
    tokens+=("$("$bin" user token "cloner$a" --ttl 1d --db "$db" 2>/dev/null | tail -n 1)")
done
token=${tokens[0]}
urls=()
for i in $(seq 1 "$instances"); do
    serve_start "$bin" "$work/serve-$i.log" --db "$db" --max-tables 0 --metrics --trusted-proxy 127.0.0.1 \
        --max-client-connections 4096 --max-connections 4096
    urls+=("$SERVE_URL")
done
url=${urls[0]}
if [ "$instances" -gt 1 ]; then
    command -v haproxy >/dev/null || { echo "bench-clones: haproxy is missing (apt-get install haproxy)" >&2; exit 1; }
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    {
        printf 'global\n  maxconn 4096\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 120s\n  timeout server 120s\n'
        printf 'frontend clones\n  bind 127.0.0.1:%s\n  option forwardfor\n  default_backend tsync\nbackend tsync\n  balance roundrobin\n' "$port"
        printf '  option httpchk GET /ready\n  default-server inter 1s fall 2 rise 2\n'
        for i in "${!urls[@]}"; do printf '  server s%d %s check\n' "$i" "${urls[$i]#http://}"; done
    } >"$work/haproxy.cfg"
    haproxy -f "$work/haproxy.cfg" -db >"$work/haproxy.log" 2>&1 &
    haproxy_pid=$!
    up=""
    for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/ready" && up=yes && break; sleep 0.1; done
    [ -n "$up" ] || { echo "bench-clones: haproxy did not come up:" >&2; cat "$work/haproxy.log" >&2; exit 1; }
    url="http://127.0.0.1:$port"
fi

echo "tsync cold clones: $clones stores (nice $client_nice), $count records, $instances instance(s) on $([ -n "$pg_url" ] && echo PostgreSQL || echo SQLite) ($(nproc) cores, load$(uptime | sed 's/.*load average//'))"
awk -v count="$count" 'BEGIN {
    for (i = 0; i < count; i++)
        printf "{\"id\":\"row-%08d\",\"text\":\"record number %d\",\"n\":%d}\n", i, i, i % 1000
}' >"$work/rows.ndjson"
"$bin" init "$work/loader" --remote "${urls[0]}" >/dev/null 2>&1
TSYNC_TOKEN=$token "$bin" -C "$work/loader" insert rows -q <"$work/rows.ndjson"
start=$(date +%s.%N)
TSYNC_TOKEN=$token "$bin" -C "$work/loader" push -q
echo "loaded $count records in $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }') s (one batched push)"
rm -rf "$work/loader" "$work/rows.ndjson"

for c in $(seq 1 "$clones"); do "$bin" init "$work/c$c" --remote "$url" >/dev/null 2>&1; done
metrics() { for u in "${urls[@]}"; do curl -sf "$u/metrics" || echo "bench-clones: $u did not answer /metrics" >&2; done; }
# User and system CPU of the instances, in clock ticks (/proc/PID/stat fields 14 and 15).
server_ticks() { for pid in "${SERVE_PIDS[@]}"; do awk '{ print $14 + $15 }' "/proc/$pid/stat"; done | awk '{ s += $1 } END { print s }'; }
ticks_before=$(server_ticks)
before=$(metrics)
start=$(date +%s.%N)
pids=()
for c in $(seq 1 "$clones"); do
    (
        s=$(date +%s.%N)
        rc=0
        TSYNC_TOKEN=${tokens[$((c % accounts))]} nice -n "$client_nice" "$bin" -C "$work/c$c" pull rows --query-id clone -q >/dev/null 2>"$work/c$c.err" || rc=$?
        echo "$rc $(awk -v s="$s" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }')" >"$work/c$c.result"
    ) &
    pids+=($!)
done
wait "${pids[@]}"
wall=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
after=$(metrics)
ticks_after=$(server_ticks)
for i in "${!SERVE_PIDS[@]}"; do
    kill -0 "${SERVE_PIDS[$i]}" 2>/dev/null || { echo "instance $((i + 1)) is gone; its log ends:"; tail -n 5 "$work/serve-$((i + 1)).log"; }
done

ok=0
for c in $(seq 1 "$clones"); do
    read -r rc _ <"$work/c$c.result"
    held=$(sqlite3 "$work/c$c/.tsync/store.sqlite" "SELECT count(*) FROM records" 2>/dev/null || echo 0)
    if [ "$rc" = 0 ] && [ "$held" = "$count" ]; then ok=$((ok + 1)); else echo "clone $c: exit $rc, $held records: $(head -c 300 "$work/c$c.err")"; fi
done
percentile() { sort -g | awk -v p="$1" '{ v[NR] = $1 } END { i = int(NR * p / 100 + 0.999); if (i < 1) i = 1; print v[i] }'; }
echo "clones: $ok of $clones succeeded with all $count records, in ${wall} s"
echo "clone wall time: p50 $(cat "$work"/c*.result | awk '{ print $2 }' | percentile 50) s, p99 $(cat "$work"/c*.result | awk '{ print $2 }' | percentile 99) s"
counted=$(grep -h 'GET /tables/rows' "$work"/serve-*.log | grep -c 'inlinecount' || true)
echo "pages that asked for a count: $counted"
# The pull pages' server-side time: the histogram of GET on the table route, the difference
# between after and before summed over instances; p99 is the bucket bound the 99th falls under.
TICKS_BEFORE=$ticks_before TICKS_AFTER=$ticks_after python3 - "$work" <<'PY' 3<<<"$before" 4<<<"$after"
import os, re, sys
def buckets(text):
    total = {}
    for line in text.splitlines():
        m = re.match(r'tsync_http_request_duration_seconds_bucket\{(.*)\} ([0-9.e+]+)', line)
        if not m or 'method="GET"' not in m.group(1) or '/tables/{table}"' not in m.group(1):
            continue
        le = re.search(r'le="([^"]+)"', m.group(1)).group(1)
        total[le] = total.get(le, 0) + float(m.group(2))
    return total
before, after = buckets(os.fdopen(3).read()), buckets(os.fdopen(4).read())
delta = {le: after[le] - before.get(le, 0) for le in after}
order = sorted(delta, key=lambda le: float("inf") if le == "+Inf" else float(le))
n = delta.get("+Inf", 0)
def at(p):
    for le in order:
        if delta[le] >= n * p:
            return le
print(f"server-side page time over {int(n)} pages: p50 <= {at(0.5)} s, p99 <= {at(0.99)} s (aim: p99 under 1 s)")
if n:
    print("share of pages within: " + ", ".join(f"{le} s {100 * delta[le] / n:.1f}%" for le in order if le != "+Inf"))
ticks = (int(os.environ["TICKS_AFTER"]) - int(os.environ["TICKS_BEFORE"])) / os.sysconf("SC_CLK_TCK")
if n:
    print(f"servers' CPU: {ticks:.1f} s in all, {1000 * ticks / n:.2f} ms a page")
PY
# Page requests at the instances at once, from their log lines (each ends at its time stamp and
# began its duration before): what the clones asked for at once, against what was served.
python3 - "$work"/serve-*.log <<'PY'
import datetime, re, sys
events = []
for name in sys.argv[1:]:
    for line in open(name):
        m = re.match(r'(\S+) info \S+ GET /tables/rows\?\S+ \d+ ([0-9.]+) ms', line)
        if m:
            end = datetime.datetime.fromisoformat(m.group(1).replace("Z", "+00:00")).timestamp()
            events += [(end - float(m.group(2)) / 1000, 1), (end, -1)]
events.sort()
if events:
    now = top = 0
    area = 0.0
    for (t, step), (t_next, _) in zip(events, events[1:] + [events[-1]]):
        now += step
        top = max(top, now)
        area += now * (t_next - t)
    print(f"page requests at the instances at once: at most {top}, {area / (events[-1][0] - events[0][0]):.1f} on average")
PY
if [ -n "$haproxy_pid" ]; then
    echo "haproxy: $(grep -c 'is DOWN' "$work/haproxy.log" || true) instance(s) marked down during the run"
    # Why, in haproxy's words ("Layer7 timeout", "Layer4 connection problem", the check's status).
    grep 'is DOWN' "$work/haproxy.log" | sed 's/.*\(Server [^ ]* is DOWN\)/  \1/' | head -n 5 || true
fi
