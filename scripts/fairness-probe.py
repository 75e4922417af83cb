#!/usr/bin/env python3
"""A normal client's latency while one address holds many keep-alive connections (not a test).

Usage: scripts/fairness-probe.py TSYNC_BINARY [ATTACK_CONNECTIONS] [REQUESTS] [-- SERVE_OPTIONS...]
       (defaults 1100 and 200)

Starts `TSYNC_BINARY serve --no-auth` on a free loopback port with SERVE_OPTIONS, then the attack of
one client on every connection: ATTACK_CONNECTIONS connections from 127.0.0.2, each sending one request and then staying
open (keep-alive, as a client that sends a request a minute). Meanwhile a normal client on
127.0.0.1 sends REQUESTS reads, each on a new connection, and the probe prints how they were
answered (status counts) and their p50 / p99 in milliseconds. To compare with a server without
per-client shares, pass `-- --max-client-connections 100000`.
"""
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

arguments = sys.argv[1:]
extra = []
if "--" in arguments:
    extra = arguments[arguments.index("--") + 1:]
    arguments = arguments[:arguments.index("--")]
binary = arguments[0]
attackers = int(arguments[1]) if len(arguments) > 1 else 1100
requests = int(arguments[2]) if len(arguments) > 2 else 200

directory = tempfile.mkdtemp(prefix="fairness-")
log_path = os.path.join(directory, "serve.log")
log = open(log_path, "w")
server = subprocess.Popen(
    [binary, "serve", "--no-auth", "--port", "0", "--db", "sqlite:" + os.path.join(directory, "s.db"),
     "--idle-timeout", "600", "--header-timeout", "600"] + extra, stdout=log, stderr=log)
port = None
for _ in range(200):
    text = open(log_path).read()
    if "listening on http://" in text:
        port = int(text.split("listening on http://", 1)[1].split()[0].rsplit(":", 1)[1].strip('"'))
        break
    time.sleep(0.05)
if port is None:
    server.terminate()
    sys.exit("tsync serve did not start: " + open(log_path).read())

REQUEST = b"GET /tables/todo?$top=1 HTTP/1.1\r\nHost: x\r\nZUMO-API-VERSION: 2.0.0\r\n\r\n"


def answer(sock):
    """The status of one answer read off `sock` (head and a small body), or the failure."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            return "closed" if not data else data.split(b" ", 2)[1].decode()
        data += chunk
    return data.split(b" ", 2)[1].decode()


held = []
refused = 0
for _ in range(attackers):
    try:
        sock = socket.socket()
        sock.settimeout(10)
        sock.bind(("127.0.0.2", 0))
        sock.connect(("127.0.0.1", port))
        sock.sendall(REQUEST)
        if answer(sock) != "200":
            refused += 1
        held.append(sock)
    except OSError:
        refused += 1

statuses = {}
times = []
for _ in range(requests):
    start = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(REQUEST)
            status = answer(sock)
    except OSError as error:
        status = type(error).__name__
    times.append((time.monotonic() - start) * 1000)
    statuses[status] = statuses.get(status, 0) + 1
    time.sleep(0.01)

server.terminate()
server.wait()
times.sort()
print(f"attack: {attackers} connections from 127.0.0.2, {refused} not served")
print(f"normal client: {requests} reads, statuses {statuses}")
print(f"p50 {statistics.median(times):.2f} ms, p99 {times[int(len(times) * 0.99) - 1]:.2f} ms")
