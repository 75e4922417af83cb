#!/usr/bin/env bash
# The test command: installs what a fresh machine lacks, starts a throwaway PostgreSQL cluster on
# 127.0.0.1 (so the PostgreSQL tests run too), builds, runs every test, then the short forms of the
# fuzzers and of the kill -9 campaign.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --with-postgres --with-jq --with-netlab
. scripts/postgres.sh
trap pg_stop EXIT
if pg_start; then
    echo "PostgreSQL tests run against $TSYNC_TEST_POSTGRES_URL" >&2
else
    echo "PostgreSQL could not be started: its tests will be skipped" >&2
fi
# The code's layout is checked first (.swift-format; `swift format --in-place --recursive Sources
# Tests Package.swift` fixes it).
swift format lint --strict --recursive --parallel Sources Tests Package.swift
# Every section of docs/DESIGN.md a comment or document cites exists.
scripts/check-citations.sh
swift build --build-tests
# The engine's DocC catalog renders without a warning (swift-docc-plugin; a broken symbol link fails).
docs=$(mktemp -d)
swift package --disable-sandbox generate-documentation --target TSyncEngine --warnings-as-errors --output-path "$docs" >/dev/null
rm -rf "$docs"
# schemathesis (and with it Python's jsonschema, the schema tests' second opinion), from PyPI.
python3 -m pip install --quiet --disable-pip-version-check schemathesis
# One run: the tests' waits for children and sockets hold no thread of the cooperative pool
# (Tests/TSyncEndToEndTests/Support/OffThePool.swift), so the in-process servers of
# TSyncServerTests keep theirs beside the end-to-end suites, and at most twice as many tsync
# commands as cores run at once (CommandSlots), so their deadlines hold on 2 cores.
swift test --skip-build "$@"

# The fuzzers and the kill -9 campaign in their short forms (seconds each); scripts/fuzz.sh and
# scripts/soak.sh run the long ones.
scripts/fuzz.sh 5
bin="$(swift build --show-bin-path)/tsync"
# schemathesis against /openapi.json (scripts/schemathesis.sh): SQLite with a table schema,
# without and with accounts; PostgreSQL with accounts and no schema.
scripts/schemathesis.sh "$bin" -n 25
scripts/schemathesis.sh "$bin" -n 25 --auth
if [ -n "${TSYNC_TEST_POSTGRES_URL:-}" ]; then
    scripts/schemathesis.sh "$bin" -n 25 --auth --no-schema --db "$TSYNC_TEST_POSTGRES_URL"
fi
python3 scripts/soak.py --bin "$bin" --runs 3
# The fault campaign: 4 runs, each of a mode picked at random (scripts/soak.sh --faults runs more).
python3 scripts/soak.py --bin "$bin" --faults --runs 4
if [ -n "${TSYNC_TEST_POSTGRES_URL:-}" ]; then
    python3 scripts/soak.py --bin "$bin" --db "$TSYNC_TEST_POSTGRES_URL" --runs 2
fi
# The network campaign's short form (scripts/netlab.sh; the long one: docs/PERFORMANCE.md,
# "Network campaign"): one run on SQLite, one on two instances on PostgreSQL, about a minute each.
# Exit 77 is a machine without network namespaces or TUN devices: skipped, with a line saying so.
scripts/netlab.sh --bin "$bin" --short --runs 1 || [ $? -eq 77 ]
scripts/netlab.sh --bin "$bin" --short --runs 1 --two-instances || [ $? -eq 77 ]
