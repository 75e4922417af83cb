#!/usr/bin/env bash
# Tries README's reverse-proxy example for real, on loopback (not a test: needs nginx and openssl).
# nginx terminates TLS on 127.0.0.1:PORT and proxies to `tsync serve --trusted-proxy 127.0.0.1`;
# curl connects from 127.0.0.2, so the log must show that address as the client, the id nginx
# made as the request id, and /metrics must be refused by nginx; a held read asked as a stream
# (`Prefer: wait=N, stream`, as `tsync watch` asks) must come through as one, each line as its
# commit comes, not buffered to the answer's end.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nginx >/dev/null || { echo "nginx is needed: apt-get install nginx" >&2; exit 1; }
bin="${TSYNC_BIN:-$(swift build --show-bin-path)/tsync}"

. scripts/lib/serve.sh
work=$(mktemp -d)
cleanup() {
    [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
    serve_stop_all
    rm -rf "$work"
}
trap cleanup EXIT

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" -days 1 \
    -subj "/CN=localhost" -addext "subjectAltName=IP:127.0.0.1" 2>/dev/null
serve_start "$bin" "$work/serve.log" --no-auth --metrics --trusted-proxy 127.0.0.1 --db "sqlite:$work/s.db"
upstream=${SERVE_URL#http://}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

cat >"$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/error.log;
events { worker_connections 64; }
http {
    access_log $work/access.log;
    client_body_temp_path $work; proxy_temp_path $work; fastcgi_temp_path $work; uwsgi_temp_path $work; scgi_temp_path $work;
    server {
        listen 127.0.0.1:$port ssl;
        server_name localhost;
        ssl_certificate     $work/cert.pem;
        ssl_certificate_key $work/key.pem;
        client_max_body_size 17m;
        location = /metrics { deny all; }
        location / {
            proxy_pass http://$upstream;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$host;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto \$scheme;
            proxy_set_header X-Request-Id \$request_id;
        }
    }
}
CONF
nginx -c "$work/nginx.conf" -p "$work"
sleep 0.5
base="https://127.0.0.1:$port"
curl_() { curl -sS --cacert "$work/cert.pem" --interface 127.0.0.2 "$@"; }

id=$(curl_ -o /dev/null -D - "$base/tables/todo?\$top=1" -H 'ZUMO-API-VERSION: 2.0.0' | tr -d '\r' | awk -F': ' 'tolower($1)=="x-request-id" {print $2}')
metrics=$(curl_ -o /dev/null -w '%{http_code}' "$base/metrics")
ready=$(curl_ "$base/ready")
sleep 0.2
line=$(grep "GET /tables/todo" "$work/serve.log" | head -n 1)
echo "through nginx: X-Request-Id $id; /metrics $metrics; /ready $ready"
echo "tsync's log: $line"
status=0
[ "${#id}" = 32 ] && grep -q "id=$id" <<<"$line" || { echo "FAIL: the request id is not nginx's" >&2; status=1; }
grep -q ' info 127.0.0.2 GET' <<<"$line" || { echo "FAIL: the client is not 127.0.0.2" >&2; status=1; }
[ "$metrics" = 403 ] || { echo "FAIL: /metrics is not denied" >&2; status=1; }
[ "$ready" = '{"status":"ready"}' ] || { echo "FAIL: /ready" >&2; status=1; }
# A stream through nginx: the line of a record inserted 1 s into a 4 s stream arrives at once.
start=$(date +%s.%N)
curl_ -N "$base/tables/todo?\$orderby=updatedAt,id&\$top=50" -H 'ZUMO-API-VERSION: 2.0.0' -H 'Prefer: wait=4, stream' -D "$work/stream.head" |
    while IFS= read -r streamed; do echo "$(date +%s.%N) $streamed"; done >"$work/stream.lines" &
reader=$!
sleep 1
curl_ -o /dev/null -X POST "$base/tables/todo" -H 'ZUMO-API-VERSION: 2.0.0' -H 'Content-Type: application/json' -d '{"id": "through"}'
wait $reader
applied=$(tr -d '\r' <"$work/stream.head" | awk -F': ' 'tolower($1)=="preference-applied" {print $2}')
after=$(awk -v start="$start" '/"through"/ { printf "%.1f", $1 - start; exit }' "$work/stream.lines")
echo "a stream through nginx: Preference-Applied $applied; the record's line after ${after:-never} s"
[ "$applied" = "wait=4, stream" ] || { echo "FAIL: the read was not a stream through nginx" >&2; status=1; }
awk -v a="${after:-99}" 'BEGIN { exit !(a < 2.5) }' || { echo "FAIL: the line did not come as it was committed" >&2; status=1; }
[ $status = 0 ] && echo "OK: TLS terminated by nginx, client address and request id passed through, /metrics denied, a stream's lines as they come"
exit $status
