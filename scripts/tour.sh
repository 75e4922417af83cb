#!/usr/bin/env bash
# The main job: starts `tsync serve` on embedded SQLite in a temporary directory, creates an
# account, and runs the seeds' tour with two stores — offline inserts, status, push, a conflicting
# edit from a second store, conflicts, resolve, and an incremental pull. Each command is printed
# before its output; the server is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build --product tsync 2>&1 | grep -v "unhandled\|CMakeLists" >&2
bin="$(swift build --show-bin-path)/tsync"

. scripts/lib/serve.sh
work=$(mktemp -d /tmp/tsync-tour.XXXXXX)
cleanup() {
    serve_stop_all
    rm -rf "$work"
}
trap cleanup EXIT

# Prints a command (quoted so it can be pasted back, bold on a terminal) before running it.
show() {
    local bold="" plain=""
    if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then bold=$'\033[1m'; plain=$'\033[0m'; fi
    printf '\n%s$' "$bold"
    printf ' %q' "$@"
    printf '%s\n' "$plain"
}
step() {
    show "$@"
    "$@"
}
# A command that is expected to exit non-zero: show its exit code and go on.
step_status() {
    show "$@"
    local code=0
    "$@" || code=$?
    printf '(exit %d)\n' "$code"
}
tsync() { "$bin" "$@"; }

cd "$work"
echo "== the server: SQLite in $work/server.db, one account"
printf 'correct horse battery staple\n' | step tsync user add alice --password-stdin --db "sqlite:$work/server.db"
serve_start "$bin" "$work/server.log" --db "sqlite:$work/server.db"
url=$SERVE_URL
echo "server listening on $url"

echo
echo "== phone A works offline: the remote points at a closed port"
step tsync init phone-a --remote http://127.0.0.1:9
cd phone-a
step tsync insert todoitem '{"id": "milk", "text": "buy milk", "complete": false}'
step tsync insert todoitem '{"id": "bread", "text": "buy bread", "complete": false}'
step tsync status
step_status tsync push

echo
echo "== back online"
step tsync remote "$url"
printf 'correct horse battery staple\n' | step tsync login --user alice --password-stdin
step tsync push
step tsync status --short

echo
echo "== phone B pulls the same items"
cd "$work"
step tsync init phone-b --remote "$url"
cd phone-b
printf 'correct horse battery staple\n' | step tsync login --user alice --password-stdin
step tsync pull todoitem --query-id all-todos
step tsync query todoitem --orderby text

echo
echo "== both phones edit the same item; B pushes first"
step tsync update todoitem milk --set text="buy oat milk"
step tsync push
cd "$work/phone-a"
step tsync update todoitem milk --set complete=true --set text="buy 2 milk"
step_status tsync push
step tsync conflicts
step tsync conflicts show 1
step tsync diff todoitem milk
step tsync resolve --all --ours --push
step tsync get todoitem milk

echo
echo "== B pulls again: only what changed since its checkpoint comes down"
cd "$work/phone-b"
step tsync pull todoitem --query-id all-todos --json
step tsync get todoitem milk
step tsync queries
step tsync status
