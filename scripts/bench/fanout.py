#!/usr/bin/env python3
"""Held-read driver for scripts/bench-fanout.sh, not a test.

Many raw HTTP/1.1 connections per process, one epoll loop each (asyncio's per-callback cost
would be counted as delivery time at 10,000 answers). A process's limit on open files bounds
its connections, so the work is split over several processes (multiprocessing).

  fanout.py hold URL... --watchers N --pid PID[,PID] [--metrics URL]
      N held reads of an empty page (Prefer: wait=25, re-asked when a wait ends empty), spread
      over the URLs; the servers' resident memory (VmRSS of PIDs) before and once all are held
      (the servers' tsync_live_waiting gauge says so); then one write to the first URL, and the
      time from its commit (its updatedAt) to each held read's answer (the moment epoll says
      the answer's socket is readable, then read to its end).
  fanout.py follow URL... --watchers N --rate R --seconds S
      N watchers that follow one table as `tsync watch` does (held reads from a checkpoint,
      `updatedAt, id`, re-asked at once after each page), and a writer that POSTs R single
      records a second for S seconds, alternating between the URLs. Each record's delivery time
      to each watcher (receipt minus its updatedAt), and whether every watcher got every record;
      and the same less the time a record waited for this client to ask for it (the clients
      share the cores with the server: what is left is the server's part).
"""

import argparse
import calendar
import json
import multiprocessing
import os
import re
import select
import socket
import struct
import sys
import time
import urllib.parse
import urllib.request

PER_PROCESS = 9000  # open files per process stay below a hard limit of 10,000 or more
PROCESSES = 4  # at least: a process's turn-around after an answer is part of a watcher's loop
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux; SCM_TIMESTAMPNS has the same number


def received(sock):
    """(bytes, the kernel's time of their arrival in seconds since the epoch): the arrival, not
    when this loop got round to the socket, so a busy client does not add to what is measured."""
    data, ancillary, _, _ = sock.recvmsg(1 << 20, 64)
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            seconds, nanoseconds = struct.unpack("qq", payload[:16])
            return data, seconds + nanoseconds / 1e9
    return data, time.time()


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    """User and system time of a process so far (a figure the machine's load does not stretch)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def gauge(url, name):
    with urllib.request.urlopen(url + "/metrics") as reply:
        for line in reply.read().decode().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.split()[-1])
    return 0.0


def host_port(url):
    parsed = urllib.parse.urlsplit(url)
    return parsed.hostname, parsed.port


def read_path(table, checkpoint):
    if checkpoint is None:
        expression = "updatedAt gt datetimeoffset'2000-01-01T00:00:00.000Z'"
    else:
        stamp, ident = checkpoint
        at = f"datetimeoffset'{stamp}'"
        expression = f"updatedAt ge {at} and (updatedAt gt {at} or (updatedAt eq {at} and id gt '{ident}'))"
    query = urllib.parse.quote(expression, safe="'()")
    return f"/tables/{table}?$filter={query}&$orderby=updatedAt,id&$top=1000&__includeDeleted=true"


def request(host, port, path):
    return (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nZUMO-API-VERSION: 2.0.0\r\n"
            f"Prefer: wait=25\r\n\r\n").encode()


def parse_response(buffer):
    """(body, rest) when `buffer` holds a whole response, else None."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = buffer[:end].lower()
    start = end + 4
    match = re.search(rb"\r\ncontent-length:\s*(\d+)", head)
    if match:
        length = int(match.group(1))
        if len(buffer) < start + length:
            return None
        return buffer[start:start + length], buffer[start + length:]
    if b"transfer-encoding: chunked" in head:
        body, at = bytearray(), start
        while True:
            line_end = buffer.find(b"\r\n", at)
            if line_end < 0:
                return None
            size = int(buffer[at:line_end].split(b";")[0], 16)
            if size == 0:
                if len(buffer) < line_end + 4:
                    return None
                return bytes(body), buffer[line_end + 4:]
            if len(buffer) < line_end + 2 + size + 2:
                return None
            body += buffer[line_end + 2:line_end + 2 + size]
            at = line_end + 2 + size + 2
    return buffer[start:], b""


STAMP = re.compile(rb'"updatedAt":"(\d{4}-\d\d-\d\d)T(\d\d):(\d\d):(\d\d\.\d+)Z"')
RECORD_ID = re.compile(rb'"id":"([^"]*)"')
days = {}


def stamp_seconds(day, hours, minutes, seconds):
    """Seconds since the epoch; the minute's start is worked out once (a follow run reads a
    million stamps a second)."""
    base = days.get((day, hours, minutes))
    if base is None:
        base = days[(day, hours, minutes)] = (calendar.timegm(time.strptime(day.decode(), "%Y-%m-%d"))
                                              + int(hours) * 3600 + int(minutes) * 60)
    return base + float(seconds)


def worker(urls, count, offset, table, mode, pipe):
    """One process's share of the watchers: `count` connections, an epoll loop; `pipe` gets
    "ready" once every request is sent, and takes "stop" before the process reports."""
    poll = select.epoll()
    state = {}
    # Each request goes as soon as its connection is open: a connection left without one is
    # closed by the server's header timeout while the others open.
    for i in range(count):
        host, port = host_port(urls[(offset + i) % len(urls)])
        sock = socket.create_connection((host, port), timeout=30)
        sock.setblocking(False)
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        state[sock.fileno()] = {"sock": sock, "host": host, "port": port, "buffer": b"", "checkpoint": None, "got": 0,
                                "sent": time.time(), "arrived": 0.0}
        sock.send(request(host, port, read_path(table, None)))
        poll.register(sock.fileno(), select.EPOLLIN)
    poll.register(pipe.fileno(), select.EPOLLIN)
    pipe.send("ready")
    answered = []  # hold: seconds since the epoch at which each held read was answered with records
    latencies = []  # follow: seconds from a record's commit to its receipt, every record and watcher
    # follow: the part of each latency this client spent, not the server: from the record's commit
    # (or the previous page's arrival, when later) to the request that got it, when it went after
    # the commit (the record was there; the client had not asked yet)
    own = []
    pages = 0  # follow: answers received
    lags = []  # this client's own delay: from an answer's arrival to its handling (hold) or to the next request (follow)
    stopping = False
    while not stopping:
        for fd, _ in poll.poll(1.0):
            if fd == pipe.fileno():
                stopping = pipe.recv() == "stop"
                continue
            entry = state[fd]
            try:
                data, now = received(entry["sock"])
            except BlockingIOError:
                continue
            except OSError:  # reset by the server: counted as never answered
                data = b""
            if not data:
                poll.unregister(fd)
                continue
            entry["buffer"] += data
            while True:
                parsed = parse_response(entry["buffer"])
                if parsed is None:
                    break
                body, entry["buffer"] = parsed
                stamps = STAMP.findall(body)
                if mode == "hold":
                    if stamps:
                        answered.append(now)
                        lags.append(time.time() - now)
                        poll.unregister(fd)
                        break
                else:
                    pages += 1
                    sent, arrived = entry["sent"], entry["arrived"]
                    for stamp in stamps:
                        committed = stamp_seconds(*stamp)
                        latencies.append(now - committed)
                        own.append(sent - max(committed, arrived) if committed < sent else 0.0)
                    entry["arrived"] = now
                    if stamps:
                        entry["got"] += len(stamps)
                        last = body.rfind(b'"id":"')
                        ident = RECORD_ID.match(body, last).group(1).decode()
                        day, hours, minutes, seconds = stamps[-1]
                        entry["checkpoint"] = (f"{day.decode()}T{hours.decode()}:{minutes.decode()}:{seconds.decode()}Z", ident)
                try:
                    entry["sock"].send(request(entry["host"], entry["port"], read_path(table, entry["checkpoint"])))
                    entry["sent"] = time.time()
                    if stamps:
                        lags.append(time.time() - now)
                except OSError:
                    poll.unregister(fd)
                    break
    pipe.send({"answered": answered, "latencies": latencies, "own": own, "lags": lags, "cpu": time.process_time(), "pages": pages, "got": [entry["got"] for entry in state.values()]})
    for entry in state.values():
        entry["sock"].close()


def start_workers(urls, watchers, table, mode):
    workers = []
    if watchers == 0:
        return workers
    share = -(-watchers // max(PROCESSES, -(-watchers // PER_PROCESS)))
    for offset in range(0, watchers, share):
        parent, child = multiprocessing.Pipe()
        process = multiprocessing.Process(
            target=worker, args=(urls, min(share, watchers - offset), offset, table, mode, child), daemon=True)
        process.start()
        workers.append((process, parent))
    for _, pipe in workers:
        if pipe.recv() != "ready":
            sys.exit("fanout: a worker failed to start")
    return workers


def stop_workers(workers):
    for _, pipe in workers:
        pipe.send("stop")
    reports = [pipe.recv() for _, pipe in workers]
    for process, _ in workers:
        process.join()
    return reports


def post(url, table, body):
    data = json.dumps(body).encode()
    reply = urllib.request.urlopen(urllib.request.Request(
        url + f"/tables/{table}", data=data, method="POST",
        headers={"Content-Type": "application/json", "ZUMO-API-VERSION": "2.0.0"}))
    return json.load(reply)


def percentile(values, p):
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] if values else float("nan")


def wait_held(urls, total, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if sum(gauge(url, "tsync_live_waiting") for url in urls) >= total:
            return True
        time.sleep(0.2)
    return False


def hold(args):
    pids = [int(p) for p in args.pid.split(",")]
    before = sum(rss_kb(pid) for pid in pids)
    started = time.time()
    workers = start_workers(args.urls, args.watchers, "held", "hold")
    wait_held(args.urls, args.watchers, 300)
    opened = time.time() - started
    time.sleep(2)  # the allocator settles; the servers' gauge says all are held already
    held = sum(rss_kb(pid) for pid in pids)
    parked = sum(gauge(u, 'tsync_live_waiting') for u in args.urls)
    print(f"held     {args.watchers} connections, {parked:.0f} reads held, in {opened:.1f} s: server RSS {before} KB -> {held} KB, "
          f"{(held - before) / args.watchers:.1f} KB a connection")
    cpu_before = sum(cpu_seconds(pid) for pid in pids)
    record = post(args.urls[0], "held", {"id": "wake", "n": 1})
    committed = stamp_seconds(*STAMP.search(json.dumps(record, separators=(",", ":")).encode()).groups())
    deadline = time.time() + 30
    while time.time() < deadline and sum(gauge(url, "tsync_live_waiting") for url in args.urls) > 0:
        time.sleep(0.1)
    cpu = sum(cpu_seconds(pid) for pid in pids) - cpu_before
    time.sleep(0.5)
    reports = stop_workers(workers)
    values = sorted(t - committed for report in reports for t in report["answered"])
    print(f"fan-out  {len(values)}/{args.watchers} answered after one write: p50 {percentile(values, 50) * 1000:.0f} ms  "
          f"p99 {percentile(values, 99) * 1000:.0f} ms  max {values[-1] * 1000 if values else float('nan'):.0f} ms")
    print(f"cpu      the server(s) from the write to the last answer: {cpu:.2f} s user+system, "
          f"{cpu / max(1, len(values)) * 1e6:.0f} us an answer")
    if values and os.environ.get("FANOUT_WINDOW"):  # for a profile of the fan-out alone
        print(f"window   {committed:.6f} {committed + values[-1]:.6f}")
    lags = sorted(v for report in reports for v in report["lags"])
    print(f"client   from an answer's arrival (kernel time, what is measured) to its handling by this client: "
          f"p50 {percentile(lags, 50) * 1000:.0f} ms  p99 {percentile(lags, 99) * 1000:.0f} ms (not counted above)")
    print(f"summary hold {args.watchers}: {(held - before) / args.watchers:.1f} KB each ({parked:.0f} held); "
          f"fan-out p99 {percentile(values, 99) * 1000:.0f} ms ({len(values)}/{args.watchers})")


def writer(urls, table, rate, seconds, count, pipe):
    """R POSTs a second, paced by the clock, on `count` keep-alive connections spread over the URLs
    (a write waits for a free one: a commit takes longer than the gap between two writes; with
    too few, the writes' round trips, not the server, would hold the rate, as in follow.c)."""
    poll = select.epoll()
    connections = {}
    for k in range(count):
        host, port = host_port(urls[k % len(urls)])
        sock = socket.create_connection((host, port))
        sock.setblocking(False)
        poll.register(sock.fileno(), select.EPOLLIN)
        connections[sock.fileno()] = {"sock": sock, "host": host, "port": port, "buffer": b"", "busy": False}
    start, sent, failed, i = time.time(), 0, 0, 0
    total = int(rate * seconds)
    while i < total or any(c["busy"] for c in connections.values()):
        due = start + i / rate
        idle = [c for c in connections.values() if not c["busy"]]
        wait = max(0.0, due - time.time()) if i < total and idle else 0.5
        for fd, _ in poll.poll(wait):
            entry = connections[fd]
            entry["buffer"] += entry["sock"].recv(65536)
            parsed = parse_response(entry["buffer"])
            if parsed is not None:
                entry["buffer"] = parsed[1]
                entry["busy"] = False
                sent += 1
                failed += b'"updatedAt"' not in parsed[0]
        idle = [c for c in connections.values() if not c["busy"]]
        while i < total and idle and start + i / rate <= time.time():
            entry = idle.pop()
            body = json.dumps({"id": f"w{i:08d}", "n": i}).encode()
            entry["sock"].sendall((f"POST /tables/{table} HTTP/1.1\r\nHost: {entry['host']}:{entry['port']}\r\n"
                                   f"ZUMO-API-VERSION: 2.0.0\r\nContent-Type: application/json\r\n"
                                   f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
            entry["busy"] = True
            i += 1
    pipe.send({"sent": sent, "seconds": time.time() - start, "failed": failed})


def follow(args):
    pids = [int(p) for p in args.pid.split(",") if p]
    workers = start_workers(args.urls, args.watchers, args.table, "follow")
    wait_held(args.urls, args.watchers, 60)
    cpu_before = sum(cpu_seconds(pid) for pid in pids)
    parent, child = multiprocessing.Pipe()
    process = multiprocessing.Process(target=writer, args=(args.urls, args.table, args.rate, args.seconds, args.writers, child), daemon=True)
    process.start()
    written = parent.recv()
    process.join()
    # Every watcher has every record, or 10 s have passed: the servers hold every watcher again.
    deadline = time.time() + 10
    while time.time() < deadline and sum(gauge(url, "tsync_live_waiting") for url in args.urls) < args.watchers:
        time.sleep(0.1)
    cpu = sum(cpu_seconds(pid) for pid in pids) - cpu_before
    time.sleep(1)
    reports = stop_workers(workers)
    values = sorted(v for report in reports for v in report["latencies"])
    got = [g for report in reports for g in report["got"]]
    delivered = written["sent"] - written["failed"]
    behind = sum(1 for g in got if g < delivered)
    print(f"writes   {written['sent']} in {written['seconds']:.1f} s ({written['sent'] / written['seconds']:.0f}/s, "
          f"{written['failed']} failed) over {len(args.urls)} server(s)")
    pages = sum(report["pages"] for report in reports)
    print(f"follow   {args.watchers} watchers, {len(values)} deliveries of {delivered * args.watchers} in {pages} answers: "
          f"p50 {percentile(values, 50) * 1000:.1f} ms  p99 {percentile(values, 99) * 1000:.1f} ms  "
          f"max {values[-1] * 1000 if values else float('nan'):.1f} ms; {behind} watchers short of every record "
          f"(fewest {min(got) if got else 0})")
    if pids:
        print(f"cpu      the server(s) from the first write to every watcher held again: {cpu:.2f} s user+system, "
              f"{cpu / max(1, written['sent']) * 1e3:.2f} ms a write")
    servers = sorted(v - o for report in reports for v, o in zip(report["latencies"], report["own"]))
    print(f"server   the same deliveries less the time the record waited for the watcher's client to ask: "
          f"p50 {percentile(servers, 50) * 1000:.1f} ms  p99 {percentile(servers, 99) * 1000:.1f} ms")
    lags = sorted(v for report in reports for v in report["lags"])
    print(f"client   from a page's arrival to the watcher's next request: p50 {percentile(lags, 50) * 1000:.1f} ms  "
          f"p99 {percentile(lags, 99) * 1000:.1f} ms (counted above: a record committed meanwhile waits for it)")
    print(f"client   CPU of the watchers' processes: {sum(report['cpu'] for report in reports):.2f} s "
          f"(shares the cores with the server)")
    print(f"summary follow {args.watchers} x {args.rate}/s on {len(args.urls)} server(s): p99 {percentile(values, 99) * 1000:.1f} ms, "
          f"{written['sent'] / written['seconds']:.0f} writes/s, {behind} behind")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["hold", "follow"])
    parser.add_argument("urls", nargs="+")
    parser.add_argument("--watchers", type=int, required=True)
    parser.add_argument("--pid", default="")
    parser.add_argument("--rate", type=float, default=1000)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--writers", type=int, default=128, help="follow: the writer's connections")
    parser.add_argument("--table", default="feed", help="follow: the table written and followed")
    args = parser.parse_args()
    hold(args) if args.mode == "hold" else follow(args)


if __name__ == "__main__":
    main()
