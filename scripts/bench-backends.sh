#!/usr/bin/env bash
# Measures `tsync serve` (release build) on SQLite and on PostgreSQL, with one instance and with two
# instances sharing one database, on this machine and in one run:
#   inserts/s      POST of new records (wrk, unique ids)
#   push ops/s     `tsync push` of 20,000 queued inserts to one table through the batch route
#   filter q/s     GET with a $filter on user fields ($orderby, $top=50): a scan of the JSON bodies
#   page q/s       GET of an incremental-pull page: (updatedAt, id) checkpoint filter, $top=50
# wrk's threads are spread round robin over the instances (scripts/bench/spread.lua), as a load
# balancer would. Servers run with --no-auth on loopback, so the figures are the storage's and the
# HTTP stack's, not Argon2's. A throwaway PostgreSQL cluster is started and removed.
# Usage: scripts/bench-backends.sh [-d SECONDS] [-c CONNECTIONS] [-t THREADS] [-n SEED_RECORDS]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=10
connections=16
threads=2
seed=5000
while getopts "d:c:t:n:" option; do
    case "$option" in
        d) duration=$OPTARG ;;
        c) connections=$OPTARG ;;
        t) threads=$OPTARG ;;
        n) seed=$OPTARG ;;
        *) echo "usage: $0 [-d SECONDS] [-c CONNECTIONS] [-t THREADS] [-n SEED_RECORDS]" >&2; exit 64 ;;
    esac
done
(( threads % 2 == 0 )) || { echo "-t must be even, so that two instances get the same share" >&2; exit 64; }

scripts/install-deps.sh --with-postgres --with-bench
swift build -c release --product tsync >&2
bin="$(swift build -c release --show-bin-path)/tsync"
lua="$PWD/scripts/bench/spread.lua"

. scripts/postgres.sh
work=$(mktemp -d /tmp/tsync-bench.XXXXXX)
server_pids=()
stop_servers() {
    local pid
    for pid in "${server_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${server_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    server_pids=()
}
cleanup() {
    stop_servers
    pg_stop
    rm -rf "$work"
}
trap cleanup EXIT
pg_start
pg_admin_url=$TSYNC_TEST_POSTGRES_URL

# start_server DB LOG: starts `tsync serve` on a free port and sets $started_port (not printed:
# a command substitution would run it in a subshell that forgets the pid).
start_server() {
    "$bin" serve --db "$1" --host 127.0.0.1 --port 0 --no-auth >"$2" 2>&1 &
    server_pids+=($!)
    local port=""
    for _ in $(seq 1 200); do
        port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$2" | head -n 1 | sed 's/.*://' || true)
        [ -n "$port" ] && break
        sleep 0.05
    done
    [ -n "$port" ] || { cat "$2" >&2; return 1; }
    started_port=$port
}

# seed PORT COUNT: inserts COUNT records into table `items` over one keep-alive connection.
seed() {
    python3 - "$1" "$2" <<'PY'
import http.client, json, sys
port, count = int(sys.argv[1]), int(sys.argv[2])
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
for i in range(count):
    body = json.dumps({"id": "item-%05d" % i, "n": i, "text": "item %d" % i, "tag": "t%d" % (i % 10), "done": i % 2 == 0})
    connection.request("POST", "/tables/items", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    response.read()
    if response.status != 201:
        sys.exit("seeding failed: %d" % response.status)
PY
}

# updated_at PORT ID: the updatedAt of one record.
updated_at() {
    python3 - "$1" "$2" <<'PY'
import http.client, json, sys
connection = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
connection.request("GET", "/tables/items/" + sys.argv[2])
print(json.loads(connection.getresponse().read())["updatedAt"])
PY
}

urlencode() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }

# measure MODE PATH PORTS...: runs wrk and prints "requests/s non-2xx".
measure() {
    local mode=$1 path=$2
    shift 2
    local output
    output=$(BENCH_MODE=$mode BENCH_PATH=$path BENCH_PORTS="$*" BENCH_RUN="r$RANDOM" \
        wrk -t "$threads" -c "$connections" -d "${duration}s" --latency -s "$lua" "http://127.0.0.1:$1" 2>&1)
    echo "$output" >>"$work/wrk.log"
    local rate failures
    rate=$(echo "$output" | awk '/^Requests\/sec:/ { printf "%.0f", $2 }')
    failures=$(echo "$output" | awk '/Non-2xx or 3xx responses:/ { print $5 }')
    echo "${rate:-0} ${failures:-0}"
}

filter=$(urlencode "n ge 1000 and n lt 4000 and substringof('7', text) and done eq false")
results=()
for backend in sqlite postgres; do
    if [ "$backend" = sqlite ]; then
        db="sqlite:$work/bench.db"
    else
        psql -q "$pg_admin_url" -c "CREATE DATABASE tsync_bench" >/dev/null
        db="${pg_admin_url%/*}/tsync_bench"
    fi
    # One database per backend, seeded once, so one and two instances query the same data.
    start_server "$db" "$work/$backend-seed.log"
    port=$started_port
    echo "== $backend: seeding $seed records" >&2
    seed "$port" "$seed"
    checkpoint=$(updated_at "$port" "item-$(printf %05d $((seed / 2)))")
    stop_servers
    page_filter=$(urlencode "updatedAt gt datetimeoffset'$checkpoint' or (updatedAt eq datetimeoffset'$checkpoint' and id gt 'item-')")
    for instances in 1 2; do
        ports=()
        for i in $(seq 1 "$instances"); do
            start_server "$db" "$work/$backend-$instances-$i.log"
            ports+=("$started_port")
        done
        echo "== $backend, $instances instance(s) on ports ${ports[*]}: ${duration}s per measure" >&2
        read -r inserts insert_failures < <(measure insert "/tables/bench$instances" "${ports[@]}")
        read -r filtered filter_failures < <(measure get "/tables/items?\$filter=$filter&\$orderby=n%20desc&\$top=50" "${ports[@]}")
        read -r pages page_failures < <(measure get "/tables/items?\$filter=$page_filter&\$orderby=updatedAt,id&\$top=50" "${ports[@]}")
        # tsync push of 20,000 queued inserts to one table through the batch route.
        store="$work/push-$backend-$instances"
        "$bin" init "$store" --remote "http://127.0.0.1:${ports[0]}" >/dev/null
        python3 -c 'import sys; [print("{\"id\": \"p%06d\", \"n\": %d, \"text\": \"pushed %d\"}" % (i, i, i)) for i in range(20000)]' \
            | "$bin" -C "$store" insert "push$instances" >/dev/null
        started=$(date +%s.%N)
        "$bin" -C "$store" push -q
        pushed=$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { printf "%.0f", 20000 / (e - s) }')
        results+=("| $backend | $instances | $inserts | $pushed | $filtered | $pages | $((insert_failures + filter_failures + page_failures)) |")
        stop_servers
    done
done

echo
echo "tsync serve, release build; wrk -t$threads -c$connections, ${duration}s per figure; $seed records queried; $(nproc) CPUs ($(uname -m))"
echo
echo "| backend | instances | inserts/s (one per request) | batched push ops/s | filter q/s | page q/s | non-2xx |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${results[@]}"
