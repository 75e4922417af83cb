#!/usr/bin/env bash
# Table rules' cost, a benchmark, not a test (tsync serve on loopback):
#   1. a batched push and a cold pull of COUNT records by an account, against a table with a
#      group rule (--access items:read=group:team,write=group:team) and against the same table
#      shared; each pair alternated ROUNDS times (each first in turn), medians compared (aim:
#      grouped/shared >= 0.9 as a rate, i.e. the grouped time at most 1/0.9 of the shared one),
#      with the client's and the server's CPU seconds beside them;
#   2. a group's page of 50 (the first page of a pull, and one from the middle) read from tables of
#      SIZES records over ten groups, the reader in one of them: p50 of 100 requests each (aim:
#      flat, p50 at the largest at most 2x the smallest).
# With -P the same on PostgreSQL (a database of its own per server in the server
# TSYNC_TEST_POSTGRES_URL names, else a throwaway cluster; scripts/postgres.sh): there a pull
# page is one call, read ahead, for a shared table and for a group that is owed nothing else
# (`PullPage`).
# Usage: scripts/bench-access.sh [-P]   (COUNT=100000, SIZES="10000 100000 1000000", ROUNDS=3;
# TSYNC_BIN=path skips the build)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/bench-databases.sh
bench_options "[-P]" "$@"
set -- ${BENCH_ARGS[@]+"${BENCH_ARGS[@]}"}
count=${COUNT:-100000}
read -r -a sizes <<<"${SIZES:-10000 100000 1000000}"
rounds=${ROUNDS:-3}

. scripts/lib/measure.sh
tsync_for_bench bench-access
. scripts/lib/serve.sh
bench_databases access
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) b = 0.0001; printf "%.2f", a / b }'; }
password="bench access password"
rule="items:read=group:team,write=group:team"

items() {
    awk -v count="$1" 'BEGIN {
        for (i = 0; i < count; i++)
            printf "{\"id\":\"item-%07d\",\"team\":\"g0\",\"text\":\"record number %d\",\"priority\":%d}\n", i, i, i % 1000
    }'
}

# server NAME [ARGS...]: a server on a new database (DB) with the account alice in group g0; sets URL.
server() {
    local name=$1
    shift
    DB=$(new_database "$name")
    "$bin" user add alice --group g0 --password-stdin --db "$DB" <<<"$password" 2>/dev/null
    serve_start "$bin" "$work/$name.log" --db "$DB" --max-tables 0 "$@"
    URL=$SERVE_URL
}
# sql STATEMENTS: run on the server's database DB (sqlite3 or psql), rows printed bare.
sql() {
    if [ "$postgres" = true ]; then psql -qAt -v ON_ERROR_STOP=1 "$DB" -c "$1"; else sqlite3 "${DB#sqlite:}" "$1"; fi
}
# forget: the server's database goes (a million records per size add up).
forget() {
    if [ "$postgres" = true ]; then
        psql -q "$pg_admin_url" -c "DROP DATABASE IF EXISTS ${DB##*/} WITH (FORCE)" >/dev/null 2>&1 || true
    else
        rm -f "${DB#sqlite:}"*
    fi
}
# store DIR URL: a store logged in as alice.
store() {
    "$bin" init "$1" --remote "$2" >/dev/null
    "$bin" -C "$1" login --user alice --password-stdin <<<"$password" >/dev/null 2>&1
}

backend=$([ "$postgres" = true ] && echo PostgreSQL || echo SQLite)
echo "tsync table rules on $backend: group rule vs shared table ($(nproc) cores, load$(uptime | sed 's/.*load average//'))"
echo "== push and pull of $count records, $rounds rounds alternated"
items "$count" >"$work/items.ndjson"
push_shared=() push_group=() pull_shared=() pull_group=()
# CPU seconds beside the wall clock (the load stretches the one, not the other): the client's,
# and the server's over the push or the pull (/proc/PID/stat).
push_cpu_shared=() push_cpu_group=() pull_cpu_shared=() pull_cpu_group=()
push_server_shared=() push_server_group=() pull_server_shared=() pull_server_group=()
push_database_shared=() push_database_group=() pull_database_shared=() pull_database_group=()
ticks=$(getconf CLK_TCK)
server_cpu() { awk -v a="$1" -v b="$2" -v t="$ticks" 'BEGIN { printf "%.2f", (b - a) / t }'; }
# On PostgreSQL also the database's: the backends serving DB, "PID TICKS" a line (a backend
# that was not there before counts from 0).
backends() {
    [ "$postgres" = true ] || return 0
    local pid
    for pid in $(sql "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"); do
        if [ -r "/proc/$pid/stat" ]; then echo "$pid $(cpu_ticks "$pid")"; fi
    done
}
database_cpu() {
    awk -v t="$ticks" 'NR == FNR { before[$1] = $2; next } { used += $2 - ($1 in before ? before[$1] : 0) } END { printf "%.2f", used / t }' \
        <(echo "$1") <(echo "$2")
}
for round in $(seq 1 "$rounds"); do
    # Alternated, and in turn first: a drift of the load falls on both.
    order="shared group"
    [ $((round % 2)) = 0 ] && order="group shared"
    for kind in $order; do
        if [ "$kind" = group ]; then server "$kind-$round" --access "$rule"; else server "$kind-$round"; fi
        store "$work/w-$kind-$round" "$URL"
        "$bin" -C "$work/w-$kind-$round" insert items -q <"$work/items.ndjson"
        before=$(cpu_ticks "${SERVE_PIDS[0]}") backends_before=$(backends)
        measure "$bin" -C "$work/w-$kind-$round" push -q
        after=$(cpu_ticks "${SERVE_PIDS[0]}") backends_after=$(backends)
        eval "push_$kind+=(\"$seconds\") push_cpu_$kind+=(\"$cpu_seconds\") push_server_$kind+=(\"$(server_cpu "$before" "$after")\")"
        eval "push_database_$kind+=(\"$(database_cpu "$backends_before" "$backends_after")\")"
        store "$work/r-$kind-$round" "$URL"
        before=$(cpu_ticks "${SERVE_PIDS[0]}") backends_before=$(backends)
        measure "$bin" -C "$work/r-$kind-$round" pull items --query-id clone -q
        after=$(cpu_ticks "${SERVE_PIDS[0]}") backends_after=$(backends)
        eval "pull_$kind+=(\"$seconds\") pull_cpu_$kind+=(\"$cpu_seconds\") pull_server_$kind+=(\"$(server_cpu "$before" "$after")\")"
        eval "pull_database_$kind+=(\"$(database_cpu "$backends_before" "$backends_after")\")"
        pulled=$(sqlite3 "$work/r-$kind-$round/.tsync/store.sqlite" "SELECT count(*) FROM records")
        [ "$pulled" = "$count" ] || { echo "the $kind pull holds $pulled records, not $count" >&2; exit 1; }
        serve_stop_all
        forget
        rm -rf "$work/w-$kind-$round" "$work/r-$kind-$round"
    done
    echo "round $round done (load$(uptime | sed 's/.*load average//'))"
done
ps=$(median "${push_shared[@]}") pg=$(median "${push_group[@]}") ls=$(median "${pull_shared[@]}") lg=$(median "${pull_group[@]}")
echo "push: shared ${ps}s (${push_shared[*]}), group rule ${pg}s (${push_group[*]}); rate ratio $(ratio "$ps" "$pg") (aim >= 0.9)"
echo "pull: shared ${ls}s (${pull_shared[*]}), group rule ${lg}s (${pull_group[*]}); rate ratio $(ratio "$ls" "$lg") (aim >= 0.9)"
for step in push pull; do
    sides="cpu server"
    [ "$postgres" = true ] && sides="cpu server database"
    for side in $sides; do
        eval "shared=(\"\${${step}_${side}_shared[@]}\") group=(\"\${${step}_${side}_group[@]}\")"
        cs=$(median "${shared[@]}") cg=$(median "${group[@]}")
        echo "$step: $([ "$side" = cpu ] && echo client || echo "$side") CPU shared ${cs}s (${shared[*]}), group rule ${cg}s (${group[*]}); ratio shared/group $(ratio "$cs" "$cg")"
    done
done

echo "== a group's page of 50, p50 of 100 requests (ten groups, the reader in one)"
first_p50=() middle_p50=() first_server_p50=() middle_server_p50=()
for size in "${sizes[@]}"; do
    server "page-$size" --access "$rule"
    token=$(curl -sf -H 'ZUMO-API-VERSION: 2.0.0' -H 'Content-Type: application/json' \
        -d "{\"username\":\"alice\",\"password\":\"$password\"}" "$URL/.auth/login/custom" | jq -r .authenticationToken)
    curl -sf -o /dev/null -H 'ZUMO-API-VERSION: 2.0.0' -H "X-ZUMO-AUTH: $token" -H 'Content-Type: application/json' \
        -d '{"id":"seed","team":"g0"}' "$URL/tables/items"
    # The records straight into the server's table, as its writes store them: times one
    # millisecond apart, groups in turn.
    if [ "$postgres" = true ]; then
        sql "INSERT INTO tsync_records (table_name, id, created_at, updated_at, version, deleted, owner, body, body_text)
            SELECT 'items', 'item-' || lpad(i::text, 8, '0'), t, t, lpad(to_hex(i), 16, '0'), false, NULL, b::jsonb, b
            FROM (SELECT i, to_char(timestamp '2023-11-14 22:13:20' + i * interval '1 millisecond', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') AS t,
                         '{\"priority\":' || (i % 1000) || ',\"team\":\"g' || (i % 10) || '\",\"text\":\"record number ' || i || '\"}' AS b
                  FROM generate_series(0, $size - 1) AS i) AS s;
            ANALYZE tsync_records;"
        middle=$(sql "SELECT updated_at FROM tsync_records WHERE table_name = 'items' AND id = 'item-' || lpad(($size / 2 - ($size / 2) % 10)::text, 8, '0')")
    else
        sql "
            WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < $size - 1)
            INSERT INTO t_items (id, created_at, updated_at, version, deleted, owner, body)
            SELECT printf('item-%08d', i), t, t, printf('%016x', i), 0, NULL,
                   '{\"team\":\"g' || (i % 10) || '\",\"text\":\"record number ' || i || '\",\"priority\":' || (i % 1000) || '}'
            FROM (SELECT i, strftime('%Y-%m-%dT%H:%M:%fZ', 1700000000 + i / 1000.0, 'unixepoch') AS t FROM n);
            PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
        middle=$(sql "SELECT updated_at FROM t_items WHERE id = printf('item-%08d', $size / 2 - ($size / 2) % 10)")
    fi
    filter=$(jq -rn --arg t "$middle" '"updatedAt gt datetimeoffset'"'"'\($t)'"'"'" | @uri')
    for page in first middle; do
        query='$orderby=updatedAt,id&$top=50&__includeDeleted=true'
        [ "$page" = middle ] && query="$query&\$filter=$filter"
        times=()
        # Ten first, not counted: the first reads of a table just written warm its pages.
        for request in $(seq 1 110); do
            time=$(curl -sf -o "$work/page.json" -w '%{time_total}' -H 'ZUMO-API-VERSION: 2.0.0' -H "X-ZUMO-AUTH: $token" "$URL/tables/items?$query")
            [ "$request" -gt 10 ] && times+=("$time")
        done
        got=$(jq 'length' "$work/page.json")
        [ "$got" = 50 ] || { echo "a $page page of $size holds $got records" >&2; exit 1; }
        [ "$(jq '[.[] | select(.team != "g0")] | length' "$work/page.json")" = 0 ] || { echo "another group's record in the page" >&2; exit 1; }
        p50=$(median "${times[@]}")
        eval "${page}_p50+=(\"$p50\")"
        # The server's own time for the same requests (its log: "GET … 200 1.234 ms"), which
        # the load stretches less than curl's.
        handled=$(grep -F "GET /tables/items?$query 200 " "$work/page-$size.log" | tail -n 100 | sed 's/.* 200 \([0-9.]*\) ms.*/\1/')
        # shellcheck disable=SC2086
        server_p50=$(median $handled)
        eval "${page}_server_p50+=(\"$server_p50\")"
        echo "$size records: $page page p50 ${p50}s, in the server ${server_p50} ms (load$(uptime | sed 's/.*load average//'))"
    done
    serve_stop_all
    forget
done
for page in first middle; do
    eval "client=(\"\${${page}_p50[@]}\") server=(\"\${${page}_server_p50[@]}\")"
    echo "$page page: p50 ratio largest/smallest $(ratio "${client[-1]}" "${client[0]}") (aim <= 2); in the server $(ratio "${server[-1]}" "${server[0]}")"
done
