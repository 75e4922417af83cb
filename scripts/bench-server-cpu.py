#!/usr/bin/env python3
"""Server CPU time per request of two running `tsync serve` instances, side by side (not a test).

Usage: scripts/bench-server-cpu.py PORT_A PID_A PORT_B PID_B [N] [ROUNDS]   (defaults 4000 9)

Sends N incremental-pull-page GETs on one keep-alive connection to A, then to B, ROUNDS times,
and reads each server's CPU time (utime + stime, /proc/PID/stat) before and after: microseconds
of server CPU per request, each round's and the medians, and B / A. CPU time moves far less than
wrk's throughput when other work shares the machine; the cost of
`--log-format json --metrics` was measured this way (B started with them, A without, on one database).
"""
import http.client
import os
import statistics
import sys

port_a, pid_a, port_b, pid_b = map(int, sys.argv[1:5])
count = int(sys.argv[5]) if len(sys.argv) > 5 else 4000
rounds = int(sys.argv[6]) if len(sys.argv) > 6 else 9
path = ("/tables/items?$filter=updatedAt%20gt%20datetime'2000-01-01T00:00:00.000Z'"
        "&$orderby=updatedAt,id&$top=50&__includeDeleted=true")
tick = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tick


def per_request(port, pid):
    connection = http.client.HTTPConnection("127.0.0.1", port)
    before = cpu_seconds(pid)
    for _ in range(count):
        connection.request("GET", path, headers={"ZUMO-API-VERSION": "2.0.0"})
        answer = connection.getresponse()
        answer.read()
        if answer.status != 200:
            sys.exit(f"port {port} answered {answer.status}")
    return (cpu_seconds(pid) - before) / count * 1e6


a, b = [], []
for _ in range(rounds):
    a.append(per_request(port_a, pid_a))
    b.append(per_request(port_b, pid_b))
for name, values in (("A", a), ("B", b)):
    print(f"{name}: {statistics.median(values):.0f} µs of server CPU per request (rounds: {', '.join(f'{v:.0f}' for v in values)})")
print(f"B / A: {statistics.median(b) / statistics.median(a):.3f}")
