#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ against the project's own sources and runs each for a
# bounded time. Not part of the default test run; scripts/test.sh runs a short form.
#   fuzz/JSONFuzz.swift         JSON parser and serializer (round trip must be exact)
#   fuzz/FilterFuzz.swift       $filter / $orderby / $select parsers, SQLite and PostgreSQL renderers
#   fuzz/QueryStringFuzz.swift  the server's query-string and path-segment decoding
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 60)
# Prints executions per target; exits 1 when a target crashes (the crashing input is kept in
# fuzz/crashes/: turn it into a regression test).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
work=$(mktemp -d /tmp/tsync-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
flags=(-sanitize=fuzzer,address -parse-as-library -O -g)

# Each library as a static module built with the fuzzer's coverage instrumentation.
swiftc "${flags[@]}" -emit-library -static -emit-module -module-name TSyncModel \
    -emit-module-path "$work/TSyncModel.swiftmodule" Sources/TSyncModel/*.swift -o "$work/libTSyncModel.a" 2>/dev/null
swiftc "${flags[@]}" -emit-library -static -emit-module -module-name TSyncQuery -I "$work" \
    -emit-module-path "$work/TSyncQuery.swiftmodule" Sources/TSyncQuery/*.swift -o "$work/libTSyncQuery.a" 2>/dev/null

build() {  # name, sources...
    local name=$1
    shift
    swiftc "${flags[@]}" -I "$work" -L "$work" "$@" -o "$work/$name" 2>/dev/null
}
build json fuzz/JSONFuzz.swift -lTSyncModel
build filter fuzz/FilterFuzz.swift -lTSyncQuery -lTSyncModel
build querystring fuzz/QueryStringFuzz.swift fuzz/APIErrorStandIn.swift Sources/TSyncServer/HTTP/QueryString.swift

mkdir -p fuzz/crashes
failed=0
for target in json filter querystring; do
    mkdir -p "$work/corpus-$target"
    [ -d "fuzz/corpus/$target" ] && cp fuzz/corpus/"$target"/* "$work/corpus-$target/" 2>/dev/null || true
    if "$work/$target" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=4096 \
        -artifact_prefix="fuzz/crashes/$target-" "$work/corpus-$target" >"$work/$target.log" 2>&1; then
        runs=$(grep -o 'Done [0-9]* runs' "$work/$target.log" | tail -n 1 | grep -o '[0-9]*')
        echo "fuzz $target: ${runs:-?} executions in ${seconds} s, no crash"
    else
        failed=1
        echo "fuzz $target: CRASHED; input kept in fuzz/crashes/" >&2
        grep -E 'ERROR|Fatal error|SUMMARY' "$work/$target.log" | head -n 5 >&2
    fi
done
exit $failed
