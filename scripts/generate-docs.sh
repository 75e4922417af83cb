#!/bin/sh
# Regenerates man/ and completions/ from the command definitions. Run it after changing any
# command, option or help text, and commit the result: Tests/TSyncEndToEndTests/GeneratedDocsTests
# fails while they are stale.
#
#   man/*.1                 the man pages, rendered by swift-argument-parser's generate-manual plugin
#   man/tsync.dump-help.json  the `tsync --experimental-dump-help` the pages were rendered from
#                           (the test compares it with the binary's: the pages are a pure function of it)
#   completions/tsync.bash, completions/_tsync (zsh), completions/tsync.fish
#   the exit-code table of README.md (from the help's EXIT STATUS)
set -eu
cd "$(dirname "$0")/.."

swift build --product tsync
bin="$(swift build --show-bin-path)/tsync"

mkdir -p completions
"$bin" --generate-completion-script bash > completions/tsync.bash
"$bin" --generate-completion-script zsh > completions/_tsync
"$bin" --generate-completion-script fish > completions/tsync.fish

# The pages' date (.Dd) is the day the commands last changed: today when the help the pages are
# rendered from (--experimental-dump-help) differs from the committed one, else the date the
# committed pages carry, so that a run that changes nothing changes no page. TSYNC_MAN_DATE
# (YYYY-MM-DD) overrides it.
dump="$(mktemp)"
trap 'rm -f "$dump"' EXIT
"$bin" --experimental-dump-help > "$dump"
if [ -z "${TSYNC_MAN_DATE:-}" ]; then
    TSYNC_MAN_DATE="$(date -u +%Y-%m-%d)"
    if [ -f man/tsync.1 ] && cmp -s "$dump" man/tsync.dump-help.json; then
        TSYNC_MAN_DATE="$(python3 -c 'import datetime, re, sys
day = re.search(r"^\.Dd (.+)$", open(sys.argv[1]).read(), re.M).group(1)
print(datetime.datetime.strptime(day, "%B %d, %Y").strftime("%Y-%m-%d"))' man/tsync.1)"
    fi
fi

# The plugin builds the package and writes into its own work directory; copy the pages from there.
swift package --allow-writing-to-package-directory generate-manual \
    --configuration debug --multi-page --date "$TSYNC_MAN_DATE"
pages=".build/plugins/GenerateManual/outputs/tsync"
[ -d "$pages" ] || pages="$(find .build/plugins -type d -path '*GenerateManual*' -name tsync | head -n 1)"
rm -rf man
mkdir man
cp "$pages"/*.1 man/
# The plugin keeps the blank lines between paragraphs, which mdoc warns about ("Empty input
# line"): they become paragraph macros.
sed -i 's/^$/.Pp/' man/*.1
cp "$dump" man/tsync.dump-help.json
# tsync.1: the exit codes as an EXIT STATUS section of their own (the plugin writes a generic
# `.Ex -std`, and the table the root help prints would run together as one paragraph), and a
# COMMANDS section listing every command; no page hyphenates (a JSON field name split at a line
# end cannot be copied).
python3 scripts/lib/man_tsync.py man/tsync.dump-help.json man
# The exit-code table of the README: the help's, in Markdown.
python3 scripts/lib/exit_codes.py man/tsync.dump-help.json README.md
echo "man/ and completions/ regenerated" >&2
