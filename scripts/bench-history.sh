#!/usr/bin/env bash
# Measures what the history of records costs (docs/DESIGN.md §6.5), release build, on
# SQLite and on PostgreSQL, in one run:
#   push      `tsync push` (batch route) of RECORDS queued inserts, then of RECORDS updates of them,
#             against `tsync serve` with the history on (the default --keep-history) and with
#             --keep-history 0, alternating, ROUNDS rounds each; medians, and on / off ratios of
#             the rates (goal >= 0.8)
#   bytes     per version: the database's size after the two pushes with the history, less its
#             size without, over the 2 x RECORDS versions written (records of ~100 bytes of JSON)
#   page      p50 of GET /tables/$history/items/{id} ($top=50) of a record with 1,000 versions,
#             over one keep-alive connection (goal < 5 ms)
#   at-T      the RECORDS records read as they were at a time T (GET /tables/$history/items?at=T,
#             $top=1000, each page from the last id before, `$filter=id gt 'LAST'`, as tsync's
#             restore reads it), against a plain full read of them the same way
#             (GET /tables/items), alternating, medians (goal <= 2x)
# PostgreSQL: the server TSYNC_TEST_POSTGRES_URL names (a database per run, dropped after), else
# a throwaway cluster (scripts/postgres.sh).
# Usage: scripts/bench-history.sh [-n RECORDS] [-r ROUNDS] [-b "sqlite postgres"]
#        (TSYNC_BIN=path uses that tsync instead of building one)
set -euo pipefail
cd "$(dirname "$0")/.."
records=100000
rounds=3
backends="sqlite postgres"
while getopts "n:r:b:" option; do
    case "$option" in
        n) records=$OPTARG ;;
        r) rounds=$OPTARG ;;
        b) backends=$OPTARG ;;
        *) echo "usage: $0 [-n RECORDS] [-r ROUNDS] [-b BACKENDS]" >&2; exit 64 ;;
    esac
done

. scripts/lib/release-bin.sh

. scripts/postgres.sh
work=$(mktemp -d /tmp/tsync-bench-history.XXXXXX)
server_pids=()
databases=()
own_cluster=false
stop_servers() {
    local pid
    for pid in "${server_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${server_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    server_pids=()
}
cleanup() {
    stop_servers
    local name
    for name in "${databases[@]}"; do psql -q "$pg_admin_url" -c "DROP DATABASE IF EXISTS $name" >/dev/null 2>&1 || true; done
    $own_cluster && pg_stop
    rm -rf "$work"
}
trap cleanup EXIT
if [[ " $backends " == *" postgres "* ]]; then
    if [ -z "${TSYNC_TEST_POSTGRES_URL:-}" ]; then
        pg_start
        own_cluster=true
    fi
    pg_admin_url=$TSYNC_TEST_POSTGRES_URL
fi

# start_server DB LOG OPTIONS...: starts `tsync serve` on a free port, sets $started_port.
start_server() {
    local db=$1 log=$2
    shift 2
    "$bin" serve --db "$db" --host 127.0.0.1 --port 0 --no-auth "$@" >"$log" 2>&1 &
    server_pids+=($!)
    local port=""
    for _ in $(seq 1 400); do
        port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$log" | head -n 1 | sed 's/.*://' || true)
        [ -n "$port" ] && break
        sleep 0.05
    done
    [ -n "$port" ] || { cat "$log" >&2; return 1; }
    started_port=$port
}

# fresh_database BACKEND NAME: the --db of a new, empty database.
fresh_database() {
    if [ "$1" = sqlite ]; then
        echo "sqlite:$work/$2.db"
    else
        psql -q "$pg_admin_url" -c "DROP DATABASE IF EXISTS $2" -c "CREATE DATABASE $2" >/dev/null
        databases+=("$2")
        echo "${pg_admin_url%/*}/$2"
    fi
}

# database_bytes BACKEND DB NAME: the database's size (SQLite: the file, checkpointed by the stop).
database_bytes() {
    if [ "$1" = sqlite ]; then
        stat -c %s "$work/$3.db"
    else
        psql -Atq "$2" -c "VACUUM" -c "SELECT pg_database_size(current_database())"
    fi
}

seconds_since() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.3f", e - s }'; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# push_round BACKEND MODE ROUND: fresh database and server (MODE on: default history, off:
# --keep-history 0), times the push of the inserts and of the updates; appends to the figures.
declare -A insert_seconds update_seconds size_bytes
push_round() {
    local backend=$1 mode=$2 round=$3 name="tsync_bh_${1}_${2}_$3"
    local db options=()
    db=$(fresh_database "$backend" "$name")
    [ "$mode" = off ] && options=(--keep-history 0)
    start_server "$db" "$work/$name.log" "${options[@]}"
    local store="$work/store-$name"
    "$bin" init "$store" --remote "http://127.0.0.1:$started_port" >/dev/null
    awk -v n="$records" 'BEGIN {
        for (i = 0; i < n; i++)
            printf "{\"id\":\"item-%07d\",\"text\":\"record number %d\",\"complete\":%s,\"priority\":%d,\"tags\":[\"a\",\"b\"]}\n", i, i, (i % 2 ? "true" : "false"), i % 5
    }' | "$bin" -C "$store" insert items >/dev/null
    local started
    started=$(date +%s.%N)
    "$bin" -C "$store" push -q
    insert_seconds[$backend,$mode]+="$(seconds_since "$started") "
    "$bin" -C "$store" update items --filter "priority ge 0" --set "text=changed" >/dev/null
    started=$(date +%s.%N)
    "$bin" -C "$store" push -q
    update_seconds[$backend,$mode]+="$(seconds_since "$started") "
    stop_servers
    size_bytes[$backend,$mode]+="$(database_bytes "$backend" "$db" "$name") "
    # Only a round with the history on: the reads need its versions (an "off" database has none
    # until a server with the history seeds them, which PostgreSQL does after it listens).
    if [ "$mode" = on ]; then keep_db[$backend]=$db; fi
}

# reads BACKEND DB: the history page p50 and the at-T read against a plain read, on the database
# of the last round with the history on.
reads() {
    local backend=$1 db=$2
    start_server "$db" "$work/reads-$backend.log"
    python3 - "$started_port" "$records" <<'PY'
import http.client, json, statistics, sys, time, urllib.parse
port, records = int(sys.argv[1]), int(sys.argv[2])
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
headers = {"Content-Type": "application/json", "ZUMO-API-VERSION": "2.0.0"}

def call(method, path, body=None):
    connection.request(method, path, None if body is None else json.dumps(body), headers)
    response = connection.getresponse()
    data = response.read()
    if response.status >= 300:
        sys.exit(f"{method} {path}: {response.status} {data[:200]!r}")
    return response, data

# A record with 1,000 versions.
call("POST", "/tables/hist", {"id": "r", "n": 0, "text": "a record of about a hundred bytes", "tags": ["a", "b"]})
for n in range(1, 1000):
    call("PATCH", "/tables/hist/r", {"n": n})
timings = []
for _ in range(300):
    started = time.perf_counter()
    _, data = call("GET", "/tables/$history/hist/r")
    timings.append(time.perf_counter() - started)
    assert len(json.loads(data)["results"]) == 50
page_p50 = statistics.median(timings) * 1000

def read_all(path):
    # As tsync reads a table whole (WholeTable): pages in id order, each from the last id before.
    count, last = 0, None
    while True:
        after = "" if last is None else "&$filter=" + urllib.parse.quote(f"id gt '{last}'")
        _, data = call("GET", f"{path}&$orderby=id{after}")
        page = json.loads(data)
        if not page:
            return count
        count += len(page)
        last = page[-1]["id"]

at = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() + 5))
plain, history = [], []
for _ in range(3):
    started = time.perf_counter()
    assert read_all("/tables/items?$top=1000") == records
    plain.append(time.perf_counter() - started)
    started = time.perf_counter()
    assert read_all(f"/tables/$history/items?at={at}&$top=1000") == records
    history.append(time.perf_counter() - started)
print(f"{page_p50:.2f} {statistics.median(plain):.3f} {statistics.median(history):.3f}")
PY
    stop_servers
}

declare -A keep_db
lines=()
for backend in $backends; do
    for round in $(seq 1 "$rounds"); do
        for mode in on off; do
            echo "== $backend round $round, history $mode: push of $records inserts and $records updates" >&2
            push_round "$backend" "$mode" "$round"
        done
    done
    echo "== $backend: history page and table at T" >&2
    read -r page_p50 plain_seconds at_seconds < <(reads "$backend" "${keep_db[$backend]}")
    insert_on=$(median ${insert_seconds[$backend,on]}); insert_off=$(median ${insert_seconds[$backend,off]})
    update_on=$(median ${update_seconds[$backend,on]}); update_off=$(median ${update_seconds[$backend,off]})
    bytes_on=$(median ${size_bytes[$backend,on]}); bytes_off=$(median ${size_bytes[$backend,off]})
    lines+=("$(awk -v b="$backend" -v n="$records" -v io="$insert_on" -v if_="$insert_off" -v uo="$update_on" -v uf="$update_off" \
        -v so="$bytes_on" -v sf="$bytes_off" -v p="$page_p50" -v pl="$plain_seconds" -v at="$at_seconds" 'BEGIN {
        printf "| %s | %.0f / %.0f (%.2f) | %.0f / %.0f (%.2f) | %.0f | %.2f ms | %.3f s / %.3f s (%.2fx) |",
            b, n / io, n / if_, if_ / io, n / uo, n / uf, uf / uo, (so - sf) / (2 * n), p, at, pl, at / pl }')")
    echo "${lines[-1]}" >&2
done
echo
echo "tsync serve with and without history, release build; $records records, medians of $rounds alternating rounds; $(nproc) CPUs ($(uname -m))"
echo
echo "| backend | inserts/s pushed on / off (ratio) | updates/s pushed on / off (ratio) | bytes per version | history page p50 | at T / plain read (ratio) |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${lines[@]}"
