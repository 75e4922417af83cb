#!/usr/bin/env bash
# Fan-out benchmark, not a test: what held reads cost `tsync serve` and how fast one commit
# reaches them. Release build; raw HTTP clients (held: Python, scripts/bench/fanout.py, one epoll
# loop a process, at least four processes; follow: C, scripts/bench/follow.c, one epoll loop),
# so what is measured is the server, not a client library: an answer's time is the kernel's time of its arrival (SO_TIMESTAMPNS), not when a busy
# client got round to it, and each mode also prints the client's own delay and the servers' CPU
# seconds (user+system, which the machine's load does not stretch) per answer or per write.
#   held     W held reads (Prefer: wait=25, an empty page) on one SQLite server: its resident
#            memory (VmRSS) before and once its tsync_live_waiting gauge says all are held,
#            divided by W (aim: < 40 KB each); then one write, and the time from its commit
#            (updatedAt) to each held read's answer: p50/p99/max (aim at 10,000: p99 < 250 ms).
#   follow   F watchers following one table as `tsync watch` does (held reads from a checkpoint,
#            each a stream of pages, `Prefer: wait=25, stream`; then again as a server that does
#            not stream answers them, asked again at once after each page) while a writer POSTs R records a second for
#            S seconds on 128 connections (each sends once its last write is answered; the
#            writes' round trips are printed): each record's delivery to each watcher, p50/p99/max (aim at 1,000 x
#            1,000/s: p99 < 50 ms), and how many watchers ended short of every record (aim: 0);
#            the same less the time each record waited for its watcher's client to ask (the
#            clients share the cores: what is left is the server's part); the same writer
#            without watchers first, for what the writes alone cost.
#   floor    before the follow case, the least an answer could cost at F connections (wrk, the
#            server's CPU seconds per answer): `GET /health`, HTTP and the middlewares alone, then
#            a held read whose every answer is the kept page of one question (60 records, nothing
#            written: no query, no wait). F times these over the cores is the shortest cycle a
#            watcher could have with one request a page (docs/PERFORMANCE.md, "Fan-out").
#   PostgreSQL (with TSYNC_TEST_POSTGRES_URL or PG_URL): held and follow again with the watchers
#            split over two servers on one database, the writes alternating between them.
# The server needs an open file per held read: serve raises its soft limit to the hard one and
# warns when that is below --max-connections; this script needs as many, over its client
# processes. One address may fill only 7/8 of --max-connections (the rest is kept for addresses
# that hold none), so W held reads need --max-connections of 8/7 W and as many open files: W is
# capped at what the hard limit allows (on PostgreSQL, W is split over the two servers).
# Usage: scripts/bench-fanout.sh [W...]   (default 10000 20000; F=1000 R=1000 S=10;
# TSYNC=path skips the build; PG=0 skips PostgreSQL)
set -euo pipefail
cd "$(dirname "$0")/.."
held=("$@")
[ ${#held[@]} -gt 0 ] || held=(10000 20000)
followers=${F:-1000} rate=${R:-1000} seconds=${S:-10}

scripts/install-deps.sh --with-bench   # wrk
if [ -z "${TSYNC:-}" ]; then
    . scripts/lib/release-build.sh
    TSYNC=$(release_build tsync)
fi
bin=$TSYNC

. scripts/lib/serve.sh
work=$(mktemp -d /tmp/tsync-bench-fanout.XXXXXX)
. scripts/lib/measure.sh
pg_databases=()
cleanup() {
    serve_stop_all
    for database in "${pg_databases[@]}"; do psql -q "$pg_admin" -c "DROP DATABASE IF EXISTS $database" >/dev/null 2>&1 || true; done
    rm -rf "$work"
}
trap cleanup EXIT

ulimit -n "$(ulimit -Hn)"
limit=$(ulimit -Hn)
# Every held read is a connection, from one address: the per-address and per-account shares go.
options=(--no-auth --metrics --max-client-connections 100000 --max-account-requests 100000)
echo "tsync serve fan-out ($(nproc) cores, open files $limit, load$(uptime | sed 's/.*load average//'))"

# connections COUNT: the --max-connections that lets one address hold COUNT reads with room for
# the script's own requests (the follow case's 128 writers and the metrics reads), the last eighth
# being kept for addresses that hold none.
connections() { echo $((($1 + 160) * 8 / 7)); }
# The most one server can hold under this limit on open files (64 for the database and the log).
most=$(((limit - 64) * 7 / 8 - 160))
for count in "${held[@]}"; do
    if [ "$count" -gt "$most" ]; then
        echo "(held $count: --max-connections $(connections "$count") would need as many open files; the hard limit is $limit: holding $most)"
        count=$most
    fi
    serve_start "$bin" "$work/held-$count.log" --db "sqlite:$work/held-$count.db" "${options[@]}" \
        --max-watchers "$count" --max-connections "$(connections "$count")"
    python3 scripts/bench/fanout.py hold "$SERVE_URL" --watchers "$count" --pid "${SERVE_PIDS[${#SERVE_PIDS[@]}-1]}"
    grep -h "open files" "$work/held-$count.log" | sed 's/^/  serve: /' || true
    serve_stop_all
done

# The follow case's watchers and writer are one C process (scripts/bench/follow.c): 1,000 Python
# watchers took as much of the cores as the server. FOLLOW=python runs fanout.py's instead.
follow_client() {
    if [ "${FOLLOW:-c}" != python ]; then "$work/follow" "$@"; return; fi
    # fanout.py reads no stream: its watchers only ask again after each page.
    case " $* " in *" --stream "*) echo "follow (streamed): not with FOLLOW=python"; return ;; esac
    python3 scripts/bench/fanout.py follow "$@"
}
"$(command -v cc || command -v clang)" -O2 -o "$work/follow" scripts/bench/follow.c -lm

# The writer alone first: what the server's writes cost without watchers.
serve_start "$bin" "$work/write.log" --db "sqlite:$work/write.db" "${options[@]}"
echo "== the writer alone"
follow_client "$SERVE_URL" --watchers 0 --table alone --rate "$rate" --seconds "$seconds" --pid "${SERVE_PIDS[0]}" | grep -E "^(writes|cpu)"
serve_stop_all

# The least an answer costs (the floor above): the server's CPU (user+system, `cpu_ticks`) over
# what wrk had answered, at as many connections as the follow case has watchers.
serve_start "$bin" "$work/floor.log" --db "sqlite:$work/floor.db" "${options[@]}" --max-connections "$(connections "$followers")"
python3 - "$SERVE_URL" <<'SEED'
import sys, urllib.request
for i in range(1, 61):
    body = ('{"id": "r%02d", "n": %d}' % (i, i)).encode()
    headers = {"ZUMO-API-VERSION": "2.0.0", "Content-Type": "application/json"}
    urllib.request.urlopen(urllib.request.Request(sys.argv[1] + "/tables/kept", body, headers, method="POST")).read()
SEED
kept='/tables/kept?$filter=updatedAt%20gt%20datetimeoffset%272000-01-01T00%3A00%3A00.000Z%27&$orderby=updatedAt,id&$top=1000&__includeDeleted=true'
echo "== the least an answer costs, $followers connections"
for path in /health "$kept"; do
    before=$(cpu_ticks "${SERVE_PIDS[0]}")
    answered=$(wrk -t1 -c"$followers" -d"${seconds}s" -H 'ZUMO-API-VERSION: 2.0.0' -H 'Prefer: wait=25' "$SERVE_URL$path" |
        awk '/requests in/ { print $1 }')
    after=$(cpu_ticks "${SERVE_PIDS[0]}")
    awk -v path="${path%%\?*}" -v n="$answered" -v ticks=$((after - before)) -v hz="$(getconf CLK_TCK)" 'BEGIN {
        printf "floor    %s: %d answers, %.2f s of server CPU, %.1f us an answer\n", path, n, ticks / hz, ticks / hz / n * 1e6 }'
done
serve_stop_all
for mode in --stream ""; do
    serve_start "$bin" "$work/follow$mode.log" --db "sqlite:$work/follow$mode.db" "${options[@]}" --max-connections "$(connections "$followers")"
    follow_client "$SERVE_URL" --watchers "$followers" --rate "$rate" --seconds "$seconds" --pid "${SERVE_PIDS[0]}" $mode
    serve_stop_all
done

pg_url=${PG_URL:-${TSYNC_TEST_POSTGRES_URL:-}}
if [ "${PG:-1}" != 0 ] && [ -n "$pg_url" ]; then
    pg_admin=$pg_url
    database="tsync_fanout_$$"
    psql -q "$pg_admin" -c "CREATE DATABASE $database" >/dev/null
    pg_databases+=("$database")
    db_url="${pg_url%/*}/$database"
    count=${held[${#held[@]}-1]}
    [ "$count" -le $((most * 2)) ] || count=$((most * 2))
    pids=() urls=()
    for side in a b; do
        serve_start "$bin" "$work/pg-$side.log" --db "$db_url" "${options[@]}" \
            --max-watchers "$count" --max-connections "$(connections $((count / 2)))"
        pids+=("${SERVE_PIDS[${#SERVE_PIDS[@]}-1]}") urls+=("$SERVE_URL")
    done
    echo "== PostgreSQL, two servers on one database"
    python3 scripts/bench/fanout.py hold "${urls[@]}" --watchers "$count" --pid "$(IFS=,; echo "${pids[*]}")"
    echo "== the writer alone, both servers"
    follow_client "${urls[@]}" --watchers 0 --table alone --rate "$rate" --seconds "$seconds" --pid "$(IFS=,; echo "${pids[*]}")" |
        grep -E "^(writes|cpu)"
    # A table each: the second run on one that the first filled would start a table behind.
    for mode in --stream ""; do
        follow_client "${urls[@]}" --watchers "$followers" --rate "$rate" --seconds "$seconds" --pid "$(IFS=,; echo "${pids[*]}")" \
            --table "feed${mode:+_streamed}" $mode
    done
fi
