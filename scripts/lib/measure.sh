# Sourced by the benchmark scripts (they set $work first).
# measure CMD...: runs CMD under /usr/bin/time -v, stdin from $STDIN and stdout to $OUT (both
# /dev/null unless set); sets `seconds` (wall clock), `cpu_seconds` (user + system: on a busy
# machine the wall clock measures the other processes as well) and `peak_kb` (maximum resident set
# size).
measure() {
    local log="$work/time.log"
    /usr/bin/time -v "$@" <"${STDIN:-/dev/null}" >"${OUT:-/dev/null}" 2>"$log" || { cat "$log" >&2; exit 1; }
    seconds=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log" | awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
    cpu_seconds=$(awk -F': ' '/User time|System time/ { s += $2 } END { print s }' "$log")
    peak_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
}
# cpu_ticks PID: the CPU time a running process has used so far, in clock ticks (/proc/PID/stat).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# rate N SECONDS: N per second, whole.
rate() { awk -v n="$1" -v s="$2" 'BEGIN { if (s <= 0) s = 0.01; printf "%.0f", n / s }'; }
# tsync_for_bench NAME: checks that /usr/bin/time is there (NAME says who needs it) and sets `bin`
# to $TSYNC_BIN when given, else to a release build of tsync, built first.
tsync_for_bench() {
    [ -x /usr/bin/time ] || { echo "$1: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
    if [ -n "${TSYNC_BIN:-}" ]; then
        bin="$TSYNC_BIN"
    else
        echo "building release tsync (this can take several minutes)..." >&2
        . scripts/lib/release-build.sh
        bin=$(release_build tsync)
    fi
}
