#!/usr/bin/env bash
# Installs the Debian packages tsync needs to build and test, when they are missing.
# Usage: scripts/install-deps.sh [--with-postgres] [--with-jq] [--with-bench] [--with-netlab]
# (jq: the README's CI job script, which a test runs; with PostgreSQL comes pgbouncer, which a
# test puts in front of it; iproute2: the network campaign's namespaces.)
set -euo pipefail
packages=(libsqlite3-dev libargon2-dev pkg-config sqlite3 openssl)
for arg in "$@"; do
    case "$arg" in
        --with-postgres) packages+=(postgresql pgbouncer) ;;
        --with-jq) packages+=(jq) ;;
        --with-bench) packages+=(wrk time) ;;
        --with-netlab) packages+=(iproute2) ;;
        *) echo "usage: $0 [--with-postgres] [--with-jq] [--with-bench] [--with-netlab]" >&2; exit 64 ;;
    esac
done
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
echo "installing: ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
