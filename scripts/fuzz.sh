#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ and runs each for a bounded time.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default: 60 s; every target)
#
# Targets: json (JSONParser, serializer round trip), filter ($filter/$orderby/$select parsers and
# both SQL renderers; the SQLite SQL is also run on a real table), querystring (the server's query-string decoding, then the filter parser).
# Each run starts from the seeds in fuzz/seeds/TARGET, copied into a corpus under a temporary
# directory, and prints its executions and crashes. A crashing input is kept in
# .build/fuzz/crashes/ (reproduce it with `.build/fuzz/TARGET FILE`); the script then exits 1.
#
# SwiftPM does not build with -sanitize=fuzzer, so the library sources are compiled here with
# swiftc: TSyncModel and TSyncQuery as static libraries with coverage and AddressSanitizer, and
# the server's QueryString.swift straight into its target, with a stand-in
# for the HTTP error type (fuzz/stubs). The build is redone when a source is newer than it.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(json filter querystring)

build=.build/fuzz
mkdir -p "$build/crashes"
# -package-name: the modules are one package, as SwiftPM builds them (`package` declarations).
flags=(-sanitize=fuzzer,address -parse-as-library -O -g -package-name tsync -I "$build")

# Runs swiftc quietly: the gold linker warns about ASan's local symbols on every link.
compile() {
    local log
    log=$(mktemp)
    if ! swiftc "${flags[@]}" "$@" >"$log" 2>&1; then
        grep -v "Cannot export local symbol" "$log" >&2
        rm -f "$log"
        return 1
    fi
    rm -f "$log"
}

# True when $1 is missing or older than any of the other files.
stale() {
    local output=$1
    shift
    [ -e "$output" ] || return 0
    [ -n "$(find "$@" -newer "$output" -print -quit)" ]
}

# library NAME [DEPENDENCY...]: rebuilt when a source or a library it uses is newer (a type of
# TSyncModel that changed size, compiled into a stale TSyncQuery, overflows its callers' stacks).
library() {
    local name=$1
    shift
    local sources=(Sources/"$name"/*.swift)
    if stale "$build/lib$name.a" "${sources[@]}" "$@"; then
        echo "building $name" >&2
        compile -module-name "$name" -emit-module -emit-module-path "$build/$name.swiftmodule" \
            -emit-library -static "${sources[@]}" -o "$build/lib$name.a"
    fi
}

started=$(date +%s)
library TSyncModel
library TSyncQuery "$build/libTSyncModel.a"
libraries=("$build/libTSyncQuery.a" "$build/libTSyncModel.a")
for target in "${targets[@]}"; do
    case $target in
        json) sources=(fuzz/JSONParserFuzz.swift) ;;
        # Runs the SQLite renderings on the system's libsqlite3 (the one GRDB uses).
        filter) sources=(fuzz/FilterFuzz.swift fuzz/CSQLite/module.modulemap) ;;
        querystring)
            sources=(fuzz/QueryStringFuzz.swift fuzz/stubs/APIError.swift
                Sources/TSyncServer/HTTP/QueryString.swift) ;;
        *) echo "unknown fuzz target '$target' (json, filter, querystring)" >&2; exit 64 ;;
    esac
    if stale "$build/$target" "${sources[@]}" "${libraries[@]}"; then
        echo "building $target" >&2
        swift_sources=()
        for source in "${sources[@]}"; do [[ $source == *.swift ]] && swift_sources+=("$source"); done
        compile -I fuzz/CSQLite "${swift_sources[@]}" "${libraries[@]}" -o "$build/$target"
    fi
done
echo "build: $(( $(date +%s) - started )) s" >&2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
printf '%-12s %12s %8s %8s %s\n' target executions seconds crashes corpus
for target in "${targets[@]}"; do
    corpus="$work/$target"
    mkdir -p "$corpus" "$work/artifacts-$target"
    cp fuzz/seeds/"$target"/* "$corpus"/
    status=0
    # -timeout: an input taking 10 s is a hang, reported like a crash.
    "$build/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -dict="fuzz/$target.dict" -artifact_prefix="$work/artifacts-$target/" "$corpus" \
        >"$work/$target.log" 2>&1 || status=$?
    executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$target.log" | tail -1)
    elapsed=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$work/$target.log" | tail -1)
    crashes=$(find "$work/artifacts-$target" -type f | wc -l)
    if [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes=1; fi
    printf '%-12s %12s %8s %8s %s\n' "$target" "${executions:-?}" "${elapsed:-?}" "$crashes" "$(ls "$corpus" | wc -l) inputs"
    if [ "$crashes" -gt 0 ]; then
        failed=1
        cp "$work/artifacts-$target"/* "$build/crashes/" 2>/dev/null || true
        cp "$work/$target.log" "$build/crashes/$target.log"
        echo "--- $target failed (exit $status); inputs and log kept in $build/crashes/:" >&2
        grep -E "ERROR|Fatal error|SUMMARY|==[0-9]+==|fatal" "$work/$target.log" | head -20 >&2 || true
        ls "$build/crashes" >&2
    fi
done
exit $failed
