#!/usr/bin/env python3
"""A normal client's latency, and the server's memory, while one client attacks (not a test).

Usage: scripts/fairness-probe.py [--small] [--seconds S] [--label L] TSYNC_BINARY [ATTACK...] [-- SERVE_OPTIONS...]

For each ATTACK (default: all, in the order below) starts `TSYNC_BINARY serve` afresh on a free
loopback port (SQLite; with SERVE_OPTIONS), with accounts alice (the attacker) and bob (the normal
client) where the attack needs accounts, runs the attack for S seconds (default 30, 15 with
--small) while the normal client sends a request every 50 ms on a new connection from 127.0.0.1,
and prints one line:

    RESULT attack=NAME label=L p50=… p99=… ok=N failed={status: count} rss=BASE/PEAK/AFTER MB info

(p50/p99 of the normal client's answered requests in ms; RSS of the server before the attack, its
peak during it, and 2 s after it stopped.) The attacker binds 127.0.0.2 and up: one address, or
as many as the attack needs to get past a per-address share, as a real attacker would. --small
scales the attacks down (sizes in ATTACKS) so that all of them run in a few minutes.
Only options both old and new servers know are passed; an attack that needs more says so.

Attacks (the fairness issue's list; sizes full / --small):
  connections     one anonymous address holds 1,100 keep-alive connections, one request each
  tls-handshakes  over TLS, 1,100 connections from one address that never start their handshake
  held-reads      one account holds 1,100 held reads (over 20 addresses); normal: another account
  slow-filters    one account loops 8 reads whose $filter builds 6 MB strings; normal: another's $top=1
  slow-bodies     1,000 connections from one address trickle a request body, a byte every 2 s
  slow-readers    300 / 100 connections ask for a 16 MB page and never read it (RSS)
  answer-cache    256 / 128 held reads with distinct questions on 40 tables, each answered 1 MB (RSS)
  unknown-tables  held reads on 200,000 / 20,000 tables that never existed, each left at once (RSS)
  tiny-batch      10 / 4 batch bodies of 16 MiB of tiny objects at once, again and again (RSS)
  table-flood     one account creates tables as fast as it can; normal: another's inserts; restart time
  fan-out         5,000 / 1,000 held reads with distinct filters on one table, written 10 times a second
  login-flood     one address floods failed logins; normal: another account's inserts
"""
import http.client
import json
import multiprocessing
import os
import random
import resource
import selectors
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

ATTACKS = ["connections", "tls-handshakes", "held-reads", "slow-filters", "slow-bodies", "slow-readers", "answer-cache",
           "unknown-tables", "tiny-batch", "table-flood", "fan-out", "login-flood"]
PASSWORD = "correct horse battery staple"

small, seconds, extra, binary, label, chosen = False, 30.0, [], "", "", []


def size(full, scaled):
    return scaled if small else full


class Client:
    """Requests to the server on `port`, each on a new connection."""

    def __init__(self, port, tls):
        self.port, self.tls = port, tls

    def connection(self, source="127.0.0.1", timeout=30):
        if self.tls:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout, source_address=(source, 0),
                                               context=context)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout, source_address=(source, 0))

    def request(self, method, path, body=None, token=None, source="127.0.0.1", timeout=30, headers=None):
        """(status or failure name, decoded body) on a new connection."""
        head = {"ZUMO-API-VERSION": "2.0.0", "Content-Type": "application/json"}
        if token:
            head["X-ZUMO-AUTH"] = token
        head.update(headers or {})
        connection = self.connection(source, timeout)
        try:
            connection.request(method, path, body=json.dumps(body).encode() if isinstance(body, (dict, list)) else body,
                               headers=head)
            answer = connection.getresponse()
            data = answer.read()
            return answer.status, data
        except Exception as error:  # a failure is a result here
            return type(error).__name__, b""
        finally:
            connection.close()


class Server:
    """`tsync serve` in a directory of its own; accounts alice and bob when `auth`."""

    def __init__(self, auth=False, tls=False, options=()):
        self.directory = tempfile.mkdtemp(prefix="fairness-")
        self.database = "sqlite:" + os.path.join(self.directory, "s.db")
        self.auth, self.tls = auth, tls
        self.options = list(options)
        if auth:
            for name in ("alice", "bob"):
                subprocess.run([binary, "user", "add", name, "--password-stdin", "--db", self.database],
                               input=PASSWORD.encode(), check=True, capture_output=True)
        if tls:
            self.cert = os.path.join(self.directory, "cert.pem")
            self.key = os.path.join(self.directory, "key.pem")
            subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                            "-keyout", self.key, "-out", self.cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                            "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
        self.start()

    def start(self):
        arguments = [binary, "serve", "--port", "0", "--db", self.database] + self.options + extra
        if not self.auth:
            arguments.append("--no-auth")
        if self.tls:
            arguments += ["--tls-cert", self.cert, "--tls-key", self.key]
        self.log_path = os.path.join(self.directory, f"serve-{time.monotonic_ns()}.log")
        self.log = open(self.log_path, "w")
        started = time.monotonic()
        self.process = subprocess.Popen(arguments, stdout=self.log, stderr=self.log)
        self.port = None
        for _ in range(1200):
            text = open(self.log_path).read()
            if "listening on http" in text:
                self.port = int(text.split("listening on http", 1)[1].split()[0].rsplit(":", 1)[1].strip('"'))
                break
            if self.process.poll() is not None:
                break
            time.sleep(0.025)
        if self.port is None:
            self.process.kill()
            sys.exit("tsync serve did not start: " + open(self.log_path).read()[-2000:])
        self.start_seconds = time.monotonic() - started

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def rss(self):
        """Resident memory in MB."""
        try:
            for line in open(f"/proc/{self.process.pid}/status"):
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return 0.0

    def request(self, *arguments, **options):
        return Client(self.port, self.tls).request(*arguments, **options)

    def login(self, name, source="127.0.0.1"):
        status, data = self.request("POST", "/.auth/login/custom", {"username": name, "password": PASSWORD}, source=source)
        if status != 200:
            sys.exit(f"login of {name}: {status} {data[:200]}")
        return json.loads(data)["authenticationToken"]

    def raw(self, source, timeout=10):
        sock = socket.socket()
        sock.settimeout(timeout)
        sock.bind((source, 0))
        sock.connect(("127.0.0.1", self.port))
        return sock


def head_status(sock):
    """The status of the answer on `sock` (its head only), or why there is none."""
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                return "closed"
            data += chunk
    except OSError as error:
        return type(error).__name__
    return data.split(b" ", 2)[1].decode()


def get(path, token=None, prefer=None):
    lines = [f"GET {path} HTTP/1.1", "Host: x", "ZUMO-API-VERSION: 2.0.0"]
    if token:
        lines.append(f"X-ZUMO-AUTH: {token}")
    if prefer:
        lines.append(f"Prefer: {prefer}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def address(n):
    """The attacker's n-th address (127.0.0.2 and up)."""
    n += 2
    return f"127.0.{n // 250}.{n % 250 + 1}" if n >= 250 else f"127.0.0.{n}"


def normal_client(port, tls, kind, token, stop, results):
    """The normal client, in a process of its own (the attack's threads share this one's
    interpreter lock): one request every 50 ms, each on a new connection, until `stop`."""
    client = Client(port, tls)
    times, failed, serial = [], {}, 0
    while not stop.is_set():
        serial += 1
        if kind == "inserts":
            request = ("POST", "/tables/mine", {"id": f"n{serial}-{random.random()}", "n": serial})
        else:
            request = ("GET", "/tables/small?$top=1", None)
        start = time.monotonic()
        status, _ = client.request(*request, token=token, timeout=30)
        if status in (200, 201):
            times.append((time.monotonic() - start) * 1000)
        else:
            failed[str(status)] = failed.get(str(status), 0) + 1
        time.sleep(0.05)
    results.put((times, failed))


class Normal:
    """The normal client's process, and the server's memory sampled meanwhile."""

    def __init__(self, server, kind, token):
        self.server, self.kind, self.token = server, kind, token
        self.times, self.failed = [], {}
        context = multiprocessing.get_context("spawn")
        self.stopping = context.Event()
        self.results = context.Queue()
        self.process = context.Process(target=normal_client,
                                       args=(server.port, server.tls, kind, token, self.stopping, self.results))
        self.running = True
        self.sampler = threading.Thread(target=self.sample)

    def sample(self):
        while self.running:
            self.peak = max(self.peak, self.server.rss())
            time.sleep(0.1)

    def start(self):
        self.base = self.peak = self.server.rss()
        self.process.start()
        self.sampler.start()

    def stop(self):
        self.stopping.set()
        self.times, self.failed = self.results.get()
        self.process.join()
        self.running = False
        self.sampler.join()

    def percentile(self, p):
        if not self.times:
            return float("nan")
        ordered = sorted(self.times)
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def run(name):
    """Runs attack `name`; returns (server, normal client, info)."""
    info = {}
    auth = name in ("held-reads", "slow-filters", "table-flood", "login-flood")
    server = Server(auth=auth, tls=name == "tls-handshakes")
    alice = server.login("alice") if auth else None
    bob = server.login("bob") if auth else None
    server.request("POST", "/tables/small", {"id": "one"}, token=bob)
    normal = Normal(server, "reads", bob)
    threads, held = [], []
    stop = threading.Event()

    def background(target, *args):
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        threads.append(thread)

    def hold(count, request, spread):
        """`count` connections, `spread` per address, each sending `request` (one, or made per index)."""
        refused = 0
        for index in range(count):
            try:
                sock = server.raw(address(index // spread))
                sock.sendall(request(index) if callable(request) else request)
                held.append(sock)
            except OSError:
                refused += 1
        return refused

    if name == "connections":
        refused = 0
        for index in range(1100):
            try:
                sock = server.raw(address(0))
                sock.sendall(get("/tables/small?$top=1"))
                if head_status(sock) != "200":
                    refused += 1
                held.append(sock)
            except OSError:
                refused += 1
        info["attacker refused"] = refused
        normal.start()
        time.sleep(seconds)
    elif name == "tls-handshakes":
        for _ in range(1100):
            try:
                held.append(server.raw(address(0)))
            except OSError:
                info["not connected"] = info.get("not connected", 0) + 1
        normal.start()
        time.sleep(seconds)
        info["still open"] = sum(1 for sock in held if still_open(sock))
    elif name == "held-reads":
        info["attacker not connected"] = hold(1100, get("/tables/feed", alice, "wait=600"), 55)
        time.sleep(1)
        normal.start()
        time.sleep(seconds)
        info["held at the end"] = sum(1 for sock in held if still_open(sock))
    elif name == "slow-filters":
        blob = "x" * 4000
        for start in range(0, 300, 100):
            server.request("POST", "/tables/$batch",
                           {"atomic": False, "operations": [{"method": "POST", "table": "slow", "item": {"id": f"r{i}", "s": blob}}
                                                            for i in range(start, start + 100)]}, token=alice)
        forty = "x" * 40
        path = "/tables/slow?$filter=" + urlquote(f"length(replace(replace(s,'x','{forty}'),'x','{forty}')) eq 1")
        statuses = {}

        def heavy(index):
            while not stop.is_set():
                status, _ = server.request("GET", path, token=alice, source=address(index), timeout=120)
                statuses[status] = statuses.get(status, 0) + 1

        for index in range(8):
            background(heavy, index)
        time.sleep(1)
        normal.start()
        time.sleep(seconds)
        info["heavy reads"] = statuses
    elif name == "slow-bodies":
        info["not connected"] = hold(1000, b"POST /tables/slow HTTP/1.1\r\nHost: x\r\nZUMO-API-VERSION: 2.0.0\r\n"
                                     b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", 1000)

        def trickle():
            while not stop.is_set():
                for sock in list(held):
                    try:
                        sock.send(b" ")
                    except OSError:
                        held.remove(sock)
                stop.wait(2)

        background(trickle)
        normal.start()
        time.sleep(seconds)
        info["still open"] = len(held)
    elif name == "slow-readers":
        record = "y" * 900_000
        for index in range(19):
            server.request("POST", "/tables/big", {"id": f"b{index}", "s": record})
        count = size(300, 100)
        normal.start()
        refused = 0
        for index in range(count):
            try:
                sock = socket.socket()
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                sock.settimeout(10)
                sock.bind((address(index // 30), 0))
                sock.connect(("127.0.0.1", server.port))
                sock.sendall(get("/tables/big?$top=19"))
                held.append(sock)
            except OSError:
                refused += 1
        info["not connected"] = refused
        time.sleep(seconds)
    elif name == "answer-cache":
        tables, questions = 40, size(256, 128)
        for table in range(tables):
            server.request("POST", f"/tables/c{table}", {"id": "seed", "k": "seed"})
        normal.start()
        info["not connected"] = hold(
            questions, lambda i: get(f"/tables/c{i % tables}?$orderby=updatedAt&$filter=" +
                                     urlquote(f"updatedAt gt datetimeoffset'2001-01-01T00:00:00.000Z' and k ne 'q{i}' and k ne 'seed'"),
                                     prefer="wait=600"), 30)
        time.sleep(1)
        record = "z" * 900_000
        for table in range(tables):
            server.request("POST", f"/tables/c{table}", {"id": "big", "k": "big", "s": record}, source=address(50))
        time.sleep(seconds)
    elif name == "unknown-tables":
        total = size(200_000, 20_000)
        sent = [0]

        def leave(worker):
            index = worker
            while not stop.is_set() and index < total:
                try:
                    sock = server.raw(address(worker))
                    sock.sendall(get(f"/tables/never{index}", prefer="wait=600"))
                    sock.close()
                    sent[0] += 1
                except OSError:
                    pass
                index += 40

        normal.start()
        for worker in range(40):
            background(leave, worker)
        time.sleep(seconds)
        info["tables asked"] = sent[0]
    elif name == "tiny-batch":
        body = b'{"atomic":false,"operations":[' + b",".join([b"{}"] * (16 * 1024 * 1024 // 3 - 20)) + b"]}"
        statuses = {}

        def batch(index):
            while not stop.is_set():
                status, _ = server.request("POST", "/tables/$batch", body, source=address(index), timeout=120)
                statuses[status] = statuses.get(status, 0) + 1

        normal.start()
        for index in range(size(10, 4)):
            background(batch, index)
        time.sleep(seconds)
        info["batches"] = statuses
    elif name == "table-flood":
        normal = Normal(server, "inserts", bob)
        made = [0]

        def flood(worker):
            serial = worker
            while not stop.is_set():
                status, _ = server.request("POST", f"/tables/flood{serial}", {"id": "x"}, token=alice, source=address(worker))
                if status == 201:
                    made[0] += 1
                serial += 8

        normal.start()
        for worker in range(8):
            background(flood, worker)
        time.sleep(seconds)
        info["tables made"] = made[0]
    elif name == "fan-out":
        watchers = size(5000, 1000)
        answered = [0]

        def watch(indices):
            selector = selectors.DefaultSelector()
            for index in indices:
                try:
                    sock = server.raw(address(index // 50), timeout=60)
                    sock.sendall(fan_question(index))
                    sock.setblocking(False)
                    selector.register(sock, selectors.EVENT_READ, index)
                except OSError:
                    pass
            while not stop.is_set() and selector.get_map():
                for key, _ in selector.select(timeout=0.2):
                    sock, index = key.fileobj, key.data
                    try:
                        data = sock.recv(1 << 20)
                        if data and b"HTTP/1.1 " in data:
                            answered[0] += 1
                            sock.sendall(fan_question(index))
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError:
                        data = b""
                    if not data:
                        selector.unregister(sock)
                        sock.close()
            for key in list(selector.get_map().values()):
                key.fileobj.close()

        for start in range(0, watchers, 250):
            background(watch, range(start, min(watchers, start + 250)))
        time.sleep(3)

        def write():
            serial = 0
            while not stop.is_set():
                server.request("POST", "/tables/live", {"id": f"w{serial}", "n": -1}, source=address(watchers // 50 + 1))
                serial += 1
                stop.wait(0.1)

        background(write)
        normal.start()
        time.sleep(seconds)
        info["answers to watchers"] = answered[0]
    elif name == "login-flood":
        normal = Normal(server, "inserts", bob)
        statuses = {}

        def guess(worker):
            serial = 0
            while not stop.is_set():
                status, _ = server.request("POST", "/.auth/login/custom",
                                           {"username": f"made-up-{worker}-{serial}", "password": "guess"}, source=address(0))
                statuses[status] = statuses.get(status, 0) + 1
                serial += 1

        normal.start()
        for worker in range(16):
            background(guess, worker)
        time.sleep(seconds)
        info["logins"] = statuses
    normal.stop()
    stop.set()
    for sock in held:
        sock.close()
    for thread in threads:
        thread.join(timeout=130)
    time.sleep(2)
    after = server.rss()
    if name == "table-flood":
        server.stop()
        server.start()
        info["restart s"] = round(server.start_seconds, 1)
    server.stop()
    return normal, after, info


def fan_question(index):
    return get("/tables/live?$orderby=updatedAt&$filter=" + urlquote(f"n eq {index}"), prefer="wait=600")


def still_open(sock):
    sock.setblocking(False)
    try:
        return sock.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def urlquote(text):
    from urllib.parse import quote
    return quote(text, safe="")


def main():
    global small, seconds, extra, binary, label, chosen
    arguments = sys.argv[1:]
    extra = []
    if "--" in arguments:
        extra = arguments[arguments.index("--") + 1:]
        arguments = arguments[:arguments.index("--")]
    small = "--small" in arguments
    arguments = [a for a in arguments if a != "--small"]
    seconds = 15.0 if small else 30.0
    label = ""
    while arguments and arguments[0] in ("--seconds", "--label"):
        if arguments[0] == "--seconds":
            seconds = float(arguments[1])
        else:
            label = arguments[1]
        arguments = arguments[2:]
    if not arguments:
        sys.exit(__doc__)
    binary = os.path.abspath(arguments[0])
    chosen = arguments[1:] or ATTACKS
    for name in chosen:
        if name not in ATTACKS:
            sys.exit(f"unknown attack {name}: one of {', '.join(ATTACKS)}")
    label = label or binary

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    for name in chosen:
        normal, after, info = run(name)
        failed = {str(k): v for k, v in normal.failed.items()}
        print(f"RESULT attack={name} label={label} p50={normal.percentile(50):.1f} p99={normal.percentile(99):.1f} "
              f"ok={len(normal.times)} failed={json.dumps(failed)} rss={normal.base:.0f}/{normal.peak:.0f}/{after:.0f} MB "
              f"{json.dumps(info, default=str)}", flush=True)


if __name__ == "__main__":
    main()
