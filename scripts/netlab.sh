#!/usr/bin/env bash
# The network campaign (scripts/netlab/campaign.py): tsync across network namespaces joined by a
# lossy, slow, partitioned link (tc netem on veth pairs where the kernel has sch_netem, else the
# TUN wire of scripts/netlab/wire.py), one `tsync serve` on SQLite or two on one PostgreSQL, each
# run checked against a model of what the users did. Needs root; where namespaces or TUN devices
# are not allowed it says so in one line and exits 77 (scripts/test.sh takes that as a skip).
# Usage: scripts/netlab.sh [--bin PATH] [--release] [--runs N] [--seed S] [--two-instances]
#                          [--short] [--clients N] [--link auto|tun|netem] [--seconds LIMIT] [-v]
#   --bin PATH  the tsync binary to use (default: build it, debug unless --release)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=""
configuration=debug
args=()
postgres=0
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) bin="$2"; shift ;;
        --release) configuration=release ;;
        --two-instances) postgres=1; args+=("$1") ;;
        *) args+=("$1") ;;
    esac
    shift
done
if [ "$(id -u)" != 0 ]; then
    echo "netlab: skipped: not root (network namespaces need root)"
    exit 77
fi
if [ $postgres = 1 ]; then scripts/install-deps.sh --with-netlab --with-postgres; else scripts/install-deps.sh --with-netlab; fi
if [ -z "$bin" ]; then
    . scripts/lib/release-build.sh
    bin=$(build_tsync "$configuration")
fi
exec python3 scripts/netlab/campaign.py --bin "$bin" ${args[@]+"${args[@]}"}
