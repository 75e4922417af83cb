#!/usr/bin/env bash
# Installs tsync: builds it in release and copies
#   PREFIX/bin/tsync
#   PREFIX/share/man/man1/tsync*.1 (and tsync-push.1 … links, so `man tsync-push` works as for git)
#   PREFIX/share/bash-completion/completions/tsync
#   PREFIX/share/zsh/site-functions/_tsync
#   PREFIX/share/fish/vendor_completions.d/tsync.fish
# Usage: scripts/install.sh [--prefix DIR] [--binary PATH] [--uninstall]
#   --prefix DIR    where to install (default /usr/local)
#   --binary PATH   install this tsync binary instead of building one
#   --uninstall     remove what an install put there
# A relative --prefix or --binary is taken from the directory you run the script in.
set -euo pipefail
caller=$PWD
prefix=/usr/local
binary=""
uninstall=false
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
        --prefix=*) prefix=${1#--prefix=}; shift ;;
        --binary) binary=${2:?--binary needs a path}; shift 2 ;;
        --uninstall) uninstall=true; shift ;;
        --binary=*) binary=${1#--binary=}; shift ;;
        -h|--help) sed -n '2,/^set /p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 64 ;;
    esac
done
case "$prefix" in /*) ;; *) prefix="$caller/$prefix" ;; esac
case "$binary" in /* | "") ;; *) binary="$caller/$binary" ;; esac
cd "$(dirname "$0")/.."

files=(
    "bin/tsync"
    "share/bash-completion/completions/tsync"
    "share/zsh/site-functions/_tsync"
    "share/fish/vendor_completions.d/tsync.fish"
)
# git-style names: tsync.conflicts.show.1 is also tsync-conflicts-show.1 (a link).
links=()
for page in man/*.1; do
    name=$(basename "$page")
    files+=("share/man/man1/$name")
    if [ "$name" != tsync.1 ]; then
        link=$(echo "${name%.1}" | tr . -).1
        links+=("$name:$link")
        files+=("share/man/man1/$link")
    fi
done

if $uninstall; then
    for file in "${files[@]}"; do rm -f "$prefix/$file"; done
    echo "removed tsync from $prefix"
    exit 0
fi

if [ -z "$binary" ]; then
    scripts/install-deps.sh
    . scripts/lib/release-build.sh
    binary=$(release_build tsync)
fi
install -d "$prefix/bin" "$prefix/share/man/man1" "$prefix/share/bash-completion/completions" \
    "$prefix/share/zsh/site-functions" "$prefix/share/fish/vendor_completions.d"
install -m 755 "$binary" "$prefix/bin/tsync"
install -m 644 man/*.1 "$prefix/share/man/man1/"
for pair in "${links[@]}"; do ln -sf "${pair%%:*}" "$prefix/share/man/man1/${pair##*:}"; done
install -m 644 completions/tsync.bash "$prefix/share/bash-completion/completions/tsync"
install -m 644 completions/_tsync "$prefix/share/zsh/site-functions/_tsync"
install -m 644 completions/tsync.fish "$prefix/share/fish/vendor_completions.d/tsync.fish"
echo "installed tsync $("$prefix/bin/tsync" --version) in $prefix"
