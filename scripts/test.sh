#!/usr/bin/env bash
# The test command: installs what a fresh machine lacks, starts a throwaway PostgreSQL cluster on
# 127.0.0.1 (so the PostgreSQL tests run too), builds, and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --with-postgres
. scripts/postgres.sh
trap pg_stop EXIT
if pg_start; then
    echo "PostgreSQL tests run against $TSYNC_TEST_POSTGRES_URL" >&2
else
    echo "PostgreSQL could not be started: its tests will be skipped" >&2
fi
swift build --build-tests
swift test --skip-build "$@"
# The fuzz targets in their short form (a few seconds each; the build and run take about a minute).
scripts/fuzz.sh 5
