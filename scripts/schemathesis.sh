#!/usr/bin/env bash
# schemathesis (PyPI), a fuzzer nobody here wrote, against the /openapi.json of a real
# `tsync serve` on SQLite: every route it describes, generated and mutated requests, all checks
# (status codes, content types, response schemas, what must be refused and what accepted), the
# stateful phase included; then the server's log must hold no 5xx.
#
#   scripts/schemathesis.sh [TSYNC] [-n EXAMPLES] [--seed S] [--auth] [--db URL] [--no-schema]
#
# --auth: a server with accounts, fuzzed with a token (the routes' 401s aside, the same); --db: a
# PostgreSQL database instead of a fresh SQLite file; --no-schema: no table schema. CI runs 25
# examples an operation; a long run is `-n 500`. What the API's schema cannot say is in
# scripts/schemathesis/schemathesis.toml, each with its reason.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="" examples=25 seed="$RANDOM" auth=0 db="" schema=1
while [ $# -gt 0 ]; do
    case "$1" in
    -n) examples=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --auth) auth=1; shift ;;
    --db) db=$2; shift 2 ;;
    --no-schema) schema=0; shift ;;
    *) bin=$1; shift ;;
    esac
done
[ -n "$bin" ] || bin="$(swift build --show-bin-path)/tsync"
command -v st >/dev/null 2>&1 || python3 -m pip install --quiet schemathesis
. scripts/lib/serve.sh
work=$(mktemp -d)
trap 'serve_stop_all; rm -rf "$work"' EXIT
[ -n "$db" ] || db="sqlite:$work/server.db"
args=(--db "$db" --max-batch 50)
[ "$schema" = 0 ] || args+=(--schema "todo=scripts/schemathesis/todo.schema.json")
headers=()
if [ "$auth" = 1 ]; then
    printf 'fuzz-password-1\n' | "$bin" user add fuzzer --db "$db" --password-stdin >/dev/null 2>&1 || true
    token=$("$bin" user token fuzzer --db "$db" --ttl 1h 2>/dev/null)
    # Logging out would revoke the token every later request carries.
    headers=(-H "X-ZUMO-AUTH: $token" --exclude-path /.auth/logout)
else
    args+=(--no-auth)
fi
serve_start "$bin" "$work/serve.log" "${args[@]}"
echo "schemathesis against $SERVE_URL on ${db%%:*} (seed $seed, $examples examples an operation, auth $auth, schema $schema)" >&2
status=0
st --config-file scripts/schemathesis/schemathesis.toml run "$SERVE_URL/openapi.json" --checks all \
    -n "$examples" --seed "$seed" --request-timeout 10 "${headers[@]}" >"$work/st.out" 2>&1 || status=$?
tail -n 25 "$work/st.out"; cp "$work/st.out" "${SCHEMATHESIS_OUT:-/dev/null}" 2>/dev/null || true
if grep -Eq ' 5[0-9]{2} [0-9.]+ ms ' "$work/serve.log"; then
    echo "the server answered 5xx:" >&2
    grep -E ' 5[0-9]{2} [0-9.]+ ms ' "$work/serve.log" | head -n 5 >&2
    status=1
fi
[ "$status" = 0 ] || { echo "schemathesis found failures (seed $seed): rerun with --seed $seed" >&2; grep -E '^_{5,}|^- ST|curl ' "$work/st.out" | cut -c1-400 | head -n 40 >&2; }
exit "$status"
