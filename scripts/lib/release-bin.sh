# The tsync a benchmark measures. Source it: sets `bin` to TSYNC_BIN (a tsync built elsewhere,
# e.g. an older one to compare with), else builds the release product here and names it.
if [ -n "${TSYNC_BIN:-}" ]; then
    bin=$TSYNC_BIN
else
    swift build -c release --product tsync >&2
    bin="$(swift build -c release --show-bin-path)/tsync"
fi
