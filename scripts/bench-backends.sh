#!/usr/bin/env bash
# Measures `tsync serve` (release build) on SQLite and on PostgreSQL, with one instance and with two
# instances sharing one database, on this machine and in one run:
#   inserts/s      POST of new records (wrk, unique ids)
#   push ops/s     `tsync push` of 20,000 queued inserts to one table through the batch route
#   filter q/s     GET with a $filter on user fields ($orderby, $top=50): a scan of the JSON bodies
#   page q/s       GET of an incremental-pull page: (updatedAt, id) checkpoint filter, $top=50
# wrk's threads are spread round robin over the instances (scripts/bench/spread.lua), as a load
# balancer would. Servers run with --no-auth on loopback, so the figures are the storage's and the
#   pull rec/s     `tsync pull --query-id` of PULL_RECORDS records into an empty store, one instance,
#                  with its ratio to the same pull over SQLite (PostgreSQL >= 0.7 of SQLite)
# HTTP stack's, not Argon2's. A throwaway PostgreSQL cluster is started and removed.
# Usage: scripts/bench-backends.sh [-d SECONDS] [-c CONNECTIONS] [-t THREADS] [-n SEED_RECORDS]
#                                  [-p PULL_RECORDS] [-P]   (-P: the pulls only, no wrk figures;
#                                  TSYNC_BIN=path uses that tsync instead of building one)
set -euo pipefail
cd "$(dirname "$0")/.."
duration=10
connections=16
threads=2
seed=5000
pull_records=100000
pull_only=false
while getopts "d:c:t:n:p:P" option; do
    case "$option" in
        d) duration=$OPTARG ;;
        c) connections=$OPTARG ;;
        t) threads=$OPTARG ;;
        n) seed=$OPTARG ;;
        p) pull_records=$OPTARG ;;
        P) pull_only=true ;;
        *) echo "usage: $0 [-d SECONDS] [-c CONNECTIONS] [-t THREADS] [-n SEED_RECORDS] [-p PULL_RECORDS] [-P]" >&2; exit 64 ;;
    esac
done
(( threads % 2 == 0 )) || { echo "-t must be even, so that two instances get the same share" >&2; exit 64; }

scripts/install-deps.sh --with-postgres --with-bench
. scripts/lib/release-bin.sh
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

# fresh_database BACKEND NAME: the --db of a new, empty database NAME on BACKEND.
fresh_database() {
    if [ "$1" = sqlite ]; then
        echo "sqlite:$work/$2.db"
    else
        psql -q "$pg_admin_url" -c "CREATE DATABASE $2" >/dev/null
        echo "${pg_admin_url%/*}/$2"
    fi
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

# pull_case BACKEND DB: seeds PULL_RECORDS records (one push through the batch route), then times
# `tsync pull --query-id` of them into an empty store; sets pull_seconds and pull_peak_kb.
pull_case() {
    local backend=$1 db=$2
    start_server "$db" "$work/pull-$backend.log"
    local url="http://127.0.0.1:$started_port"
    "$bin" init "$work/pull-writer-$backend" --remote "$url" >/dev/null
    awk -v n="$pull_records" 'BEGIN {
        for (i = 0; i < n; i++)
            printf "{\"id\":\"item-%07d\",\"text\":\"record number %d\",\"complete\":%s,\"priority\":%d,\"tags\":[\"a\",\"b\"]}\n", i, i, (i % 2 ? "true" : "false"), i % 5
    }' | "$bin" -C "$work/pull-writer-$backend" insert items >/dev/null
    "$bin" -C "$work/pull-writer-$backend" push -q
    pull_into "$backend" "$url" first
    if [ "$backend" = postgres ]; then
        # Right after a bulk load PostgreSQL has no statistics of the new rows yet and plans a page
        # as a sort of every later row; autovacuum's ANALYZE comes within a minute. Both figures.
        pull_cold_seconds=$pull_seconds
        psql -q "$db" -c "ANALYZE tsync_records"
        pull_into "$backend" "$url" analyzed
    fi
    stop_servers
}

# pull_into BACKEND URL NAME: one timed pull into a new empty store.
pull_into() {
    local log="$work/pull-$1-$3-time.log" store="$work/pull-reader-$1-$3"
    "$bin" init "$store" --remote "$2" >/dev/null
    /usr/bin/time -v "$bin" -C "$store" pull items --query-id all -q >/dev/null 2>"$log" || { cat "$log" >&2; exit 1; }
    pull_seconds=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log" | awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
    pull_peak_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
    local pulled
    pulled=$("$bin" -C "$store" query items --json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')
    [ "$pulled" = "$pull_records" ] || { echo "bench-backends: the pull over $1 brought $pulled records, not $pull_records" >&2; exit 1; }
}

pull_lines=()
declare -A pull_rate
for backend in sqlite postgres; do
    db=$(fresh_database "$backend" tsync_pull)
    echo "== $backend: pull of $pull_records records into an empty store" >&2
    pull_case "$backend" "$db"
    pull_rate[$backend]=$(awk -v n="$pull_records" -v s="$pull_seconds" 'BEGIN { if (s <= 0) s = 0.01; printf "%.0f", n / s }')
    label=$backend
    if [ "$backend" = postgres ]; then
        pull_rate[cold]=$(awk -v n="$pull_records" -v s="$pull_cold_seconds" 'BEGIN { if (s <= 0) s = 0.01; printf "%.0f", n / s }')
        pull_lines+=("| postgres, just loaded (no statistics yet) | $pull_records | ${pull_cold_seconds}s | ${pull_rate[cold]} | |")
        label="postgres, analyzed"
    fi
    pull_lines+=("| $label | $pull_records | ${pull_seconds}s | ${pull_rate[$backend]} | $((pull_peak_kb / 1024)) MB |")
done
echo
echo "tsync pull --query-id into an empty store, release build, one instance; $(nproc) CPUs ($(uname -m))"
echo
echo "| backend | records | wall | records/s | client peak memory |"
echo "|---|---|---|---|---|"
printf '%s\n' "${pull_lines[@]}"
awk -v p="${pull_rate[postgres]}" -v c="${pull_rate[cold]}" -v s="${pull_rate[sqlite]}" \
    'BEGIN { printf "\npull over PostgreSQL / pull over SQLite: %.2f analyzed, %.2f just loaded (goal >= 0.7)\n", p / s, c / s }'
$pull_only && exit 0

filter=$(urlencode "n ge 1000 and n lt 4000 and substringof('7', text) and done eq false")
results=()
for backend in sqlite postgres; do
    db=$(fresh_database "$backend" tsync_bench)
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
