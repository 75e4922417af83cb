# The tsync a benchmark measures. Source it: sets `bin` to TSYNC_BIN (a tsync built elsewhere,
# e.g. an older one to compare with), else builds the release product here and names it.
. scripts/lib/release-build.sh
if [ -n "${TSYNC_BIN:-}" ]; then
    bin=$TSYNC_BIN
else
    bin=$(release_build tsync)
fi
