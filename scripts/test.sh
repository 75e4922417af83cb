#!/usr/bin/env bash
# The test command: installs what a fresh machine lacks, starts a throwaway PostgreSQL cluster on
# 127.0.0.1 (so the PostgreSQL tests run too), builds, runs every test, then the short forms of the
# fuzzers and of the kill -9 campaign.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --with-postgres --with-jq
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
# Three runs instead of one: beside the end-to-end suites (which start many tsync processes) on
# 2 cores, the in-process server tests' clients hit their deadlines (AuthTests first; not yet
# root-caused, see the stop-17 note), and HostileRequestTests make tsync serve burn a core per
# heavy query until its deadline stops it. Each run alone passes.
if [ $# -eq 0 ]; then
    swift test --skip-build --filter TSyncServerTests
    swift test --skip-build --skip TSyncServerTests --skip HostileRequestTests
    swift test --skip-build --filter HostileRequestTests
else
    swift test --skip-build "$@"
fi

# The fuzzers and the kill -9 campaign in their short forms (seconds each); scripts/fuzz.sh and
# scripts/soak.sh run the long ones.
scripts/fuzz.sh 5
bin="$(swift build --show-bin-path)/tsync"
python3 scripts/soak.py --bin "$bin" --runs 3
# The fault campaign: 4 runs, each of a mode picked at random (scripts/soak.sh --faults runs more).
python3 scripts/soak.py --bin "$bin" --faults --runs 4
if [ -n "${TSYNC_TEST_POSTGRES_URL:-}" ]; then
    python3 scripts/soak.py --bin "$bin" --db "$TSYNC_TEST_POSTGRES_URL" --runs 2
fi
