#!/usr/bin/env bash
# The kill -9 campaign (scripts/soak.py), not part of the default test run: random SIGKILL of
# `tsync push`, `tsync pull --query-id`, a large `tsync insert` and of the server during push and
# pull, each run checked against a model of what the user did. Release build, loopback only.
# With --faults, the fault campaign instead (scripts/faultproxy.py between tsync and the server,
# one misbehaving mode per run: an answer tsync cannot explain must cost no record).
# Usage: scripts/soak.sh [--postgres] [--debug] [--runs N] [--seed S] [--seconds LIMIT] [-v]
#                        [--faults [--mode MODE]...]
#   --postgres  the server on a throwaway PostgreSQL cluster instead of SQLite
#   --debug     use the debug build (what CI's short form does)
set -euo pipefail
cd "$(dirname "$0")/.."
postgres=0
configuration=release
args=()
for arg in "$@"; do
    case "$arg" in
        --postgres) postgres=1 ;;
        --debug) configuration=debug ;;
        *) args+=("$arg") ;;
    esac
done
if [ $postgres = 1 ]; then scripts/install-deps.sh --with-postgres; else scripts/install-deps.sh; fi
. scripts/lib/release-build.sh
bin=$(build_tsync "$configuration")
db=sqlite
if [ $postgres = 1 ]; then
    . scripts/postgres.sh
    trap pg_stop EXIT
    pg_start
    db=$TSYNC_TEST_POSTGRES_URL
fi
python3 scripts/soak.py --bin "$bin" --db "$db" ${args[@]+"${args[@]}"}
