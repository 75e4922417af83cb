#!/usr/bin/env bash
# Benchmark (not a test): a normal client's p50/p99, and the server's memory, during each attack of
# scripts/fairness-probe.py, on two tsync binaries, alternating (before, after, before, after …)
# so that the machine's other load falls on both alike. Loopback only.
#
#   scripts/bench-hostile.sh BEFORE_TSYNC AFTER_TSYNC [ATTACK...] [-- SERVE_FLAGS...]
#
# ROUNDS (default 1) runs of each attack on each binary; SMALL=1 the probe's scaled-down sizes
# (every attack in minutes); SECONDS_PER_ATTACK the length of each attack (default the probe's).
# Prints the probe's RESULT lines, then a Markdown table of them (the median p50 and p99 of the
# rounds; the last round's memory and notes).
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# -ge 2 ] || { sed -n '2,12p' "$0" >&2; exit 64; }
before=$1 after=$2
shift 2
attacks=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do attacks+=("$1"); shift; done
options=()
[ "${SMALL:-}" = 1 ] && options+=(--small)
[ -n "${SECONDS_PER_ATTACK:-}" ] && options+=(--seconds "$SECONDS_PER_ATTACK")
[ "${#attacks[@]}" -gt 0 ] || mapfile -t attacks < <(python3 -c '
import importlib.util, sys
spec = importlib.util.spec_from_file_location("probe", "scripts/fairness-probe.py")
probe = importlib.util.module_from_spec(spec); spec.loader.exec_module(probe)
print("\n".join(probe.ATTACKS))')

results=$(mktemp)
trap 'rm -f "$results"' EXIT
for round in $(seq "${ROUNDS:-1}"); do
    for attack in "${attacks[@]}"; do
        for which in before after; do
            bin=$before
            [ "$which" = after ] && bin=$after
            python3 scripts/fairness-probe.py "${options[@]}" --label "$which" "$bin" "$attack" "$@" | tee -a "$results"
        done
    done
done

python3 - "$results" <<'PY'
import json, re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    match = re.match(r"RESULT attack=(\S+) label=(\S+) p50=(\S+) p99=(\S+) ok=(\d+) failed=(\{.*?\}) rss=(\S+) MB (.*)", line)
    if not match:
        continue
    attack, label, p50, p99, ok, failed, rss, info = match.groups()
    row = rows.setdefault((attack, label), {"p50": [], "p99": []})
    row["p50"].append(float(p50))
    row["p99"].append(float(p99))
    row.update(ok=ok, failed=json.loads(failed), rss=rss, info=json.loads(info))
print("\n| attack | binary | normal p50 ms | p99 ms | normal ok / failed | RSS MB base/peak/after | attacker |")
print("|---|---|---|---|---|---|---|")
for (attack, label), row in rows.items():
    failed = ", ".join(f"{count}× {status}" for status, count in row["failed"].items()) or "0"
    info = "; ".join(f"{key} {value}" for key, value in row["info"].items())
    print(f"| {attack} | {label} | {statistics.median(row['p50']):.1f} | {statistics.median(row['p99']):.1f} | "
          f"{row['ok']} / {failed} | {row['rss']} | {info} |")
PY
