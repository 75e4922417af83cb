# Starting and stopping `tsync serve` from the scripts. Source it.
#
#   serve_start BIN LOG [ARGS...]   runs `BIN serve --port 0 ARGS...` in the background with its
#                                   output in LOG, waits (10 s at most) for its "listening on" line,
#                                   sets SERVE_URL and appends the process id to SERVE_PIDS
#   serve_stop_all                  stops every server started so (SIGTERM) and waits for it

SERVE_PIDS=()
SERVE_URL=""

serve_start() {
    local bin=$1 log=$2
    shift 2
    "$bin" serve --port 0 "$@" >"$log" 2>&1 &
    SERVE_PIDS+=($!)
    SERVE_URL=""
    for _ in $(seq 1 100); do
        SERVE_URL=$(grep -o 'listening on http://[^ "]*' "$log" 2>/dev/null | head -n 1 | sed 's/^listening on //' || true)
        [ -n "$SERVE_URL" ] && return 0
        sleep 0.1
    done
    echo "tsync serve did not start:" >&2
    cat "$log" >&2
    return 1
}

serve_stop_all() {
    local pid
    for pid in "${SERVE_PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    done
    SERVE_PIDS=()
}
