#!/usr/bin/env python3
"""The wire of the network lab: a user-space link between network namespaces, with impairment.

Each namespace gets one TUN device (`tw0`), created inside it (the process enters the namespace
with setns(2), opens /dev/net/tun, and returns: the device stays in the namespace, its file
descriptor here). The wire reads the IPv4 packets each namespace's kernel sends, and writes each
to the namespace that owns its destination address, after the impairment of its link and
direction: a delay with jitter, loss, reordering (a packet sent without the delay), duplication,
an optional rate, and partitions (everything dropped in one direction, or both, for a while).
Kernel TCP runs on both ends, in their own namespaces, as it would across a real network.

Why not `tc netem`: kernels built without sch_netem (and without tc classifiers or netfilter)
are common on CI machines; a TUN device and a Python loop need neither. Where netem exists,
scripts/netlab/campaign.py --netem uses it on veth pairs instead, with the same profiles.

Usage (root; the namespaces exist):
    wire.py --server NS=10.77.0.1 --client NS1=10.77.1.2 --client NS2=10.77.2.2 ... [--seed S]
It prints {"ready": true} on stdout once every device is up, then reads one JSON command a line on
stdin and answers each with one JSON line:
    {"cmd": "profile", "link": K|"*", "dir": "up"|"down"|"both", "delay": MS, "jitter": MS,
     "loss": P, "reorder": P, "duplicate": P, "rate": KBIT}      (up: client to server)
    {"cmd": "partition", "link": K, "dir": "up"|"down"|"both", "seconds": S}
    {"cmd": "cut", "link": K, "match": TEXT, "seconds": S}   the next client packet holding TEXT
                        (e.g. "POST /tables") goes through, and the way back is cut for S seconds
                        from then: the server gets the request, the client never its answer
    {"cmd": "heal"}     every link clean, partitions over
    {"cmd": "stats"}    counters per link and direction
It ends when stdin closes (the devices go with it).
"""

import argparse
import ctypes
import fcntl
import heapq
import json
import os
import random
import selectors
import socket
import struct
import subprocess
import sys
import time

CLONE_NEWNET = 0x40000000
TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
DEVICE = "tw0"

libc = ctypes.CDLL(None, use_errno=True)


def setns(fd):
    if libc.setns(fd, CLONE_NEWNET) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"setns: {os.strerror(error)}")


def open_tun_in(namespace):
    """A TUN device named tw0 inside `namespace` (a name under /var/run/netns); its fd."""
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(f"/var/run/netns/{namespace}", os.O_RDONLY)
    try:
        setns(target)
        try:
            fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
            fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH22x", DEVICE.encode(), IFF_TUN | IFF_NO_PI))
        finally:
            setns(home)
    finally:
        os.close(target)
        os.close(home)
    return fd


def configure(namespace, address):
    for args in (["addr", "add", f"{address}/16", "dev", DEVICE], ["link", "set", DEVICE, "up"],
                 ["link", "set", "lo", "up"]):
        subprocess.run(["ip", "-n", namespace] + args, check=True, capture_output=True)


class Direction:
    """One direction of one link: its impairment, partition and counters."""

    def __init__(self):
        self.clean()
        self.partitioned_until = 0.0
        self.cut = None  # (bytes to match, seconds): cut the other direction after a matching packet
        self.next_free = 0.0
        self.counts = {"packets": 0, "delivered": 0, "lost": 0, "partitioned": 0, "duplicated": 0, "reordered": 0}

    def clean(self):
        self.delay = self.jitter = 0.0
        self.loss = self.reorder = self.duplicate = 0.0
        self.rate = 0.0  # bytes per second; 0: unlimited

    def delays(self, rng, now, size):
        """When each copy of a packet arrives, or [] if it is dropped."""
        self.counts["packets"] += 1
        if now < self.partitioned_until:
            self.counts["partitioned"] += 1
            return []
        if rng.random() < self.loss:
            self.counts["lost"] += 1
            return []
        copies = 2 if rng.random() < self.duplicate else 1
        if copies == 2:
            self.counts["duplicated"] += 1
        start = now
        if self.rate > 0:
            self.next_free = max(now, self.next_free) + size / self.rate
            start = self.next_free
        out = []
        for _ in range(copies):
            if self.reorder and rng.random() < self.reorder:
                self.counts["reordered"] += 1
                out.append(start)
            else:
                out.append(start + max(0.0, self.delay + rng.uniform(-self.jitter, self.jitter)) / 1000)
        return out


class Wire:
    def __init__(self, server, clients, seed):
        self.rng = random.Random(seed)
        self.selector = selectors.DefaultSelector()
        self.by_address = {}  # 4-byte address -> (fd, link index; 0 for the server)
        self.links = {}  # client index -> {"up": Direction, "down": Direction}
        self.heap = []
        self.sequence = 0
        names = [server] + clients
        for index, (namespace, address) in enumerate(names):
            fd = open_tun_in(namespace)
            configure(namespace, address)
            self.by_address[socket.inet_aton(address)] = (fd, index)
            self.selector.register(fd, selectors.EVENT_READ, index)
            if index:
                self.links[index] = {"up": Direction(), "down": Direction()}

    def directions(self, link, which):
        links = self.links.values() if link == "*" else [self.links[int(link)]]
        names = ("up", "down") if which == "both" else (which,)
        return [pair[name] for pair in links for name in names]

    def command(self, message):
        now = time.monotonic()
        kind = message["cmd"]
        if kind == "profile":
            for direction in self.directions(message.get("link", "*"), message.get("dir", "both")):
                direction.delay = float(message.get("delay", 0))
                direction.jitter = float(message.get("jitter", 0))
                direction.loss = float(message.get("loss", 0))
                direction.reorder = float(message.get("reorder", 0))
                direction.duplicate = float(message.get("duplicate", 0))
                direction.rate = float(message.get("rate", 0)) * 1000 / 8
            return {"ok": True}
        if kind == "partition":
            for direction in self.directions(message["link"], message.get("dir", "both")):
                direction.partitioned_until = now + float(message["seconds"])
            return {"ok": True}
        if kind == "cut":
            self.links[int(message["link"])]["up"].cut = (message["match"].encode(), float(message["seconds"]))
            return {"ok": True}
        if kind == "heal":
            for direction in self.directions("*", "both"):
                direction.clean()
                direction.partitioned_until = 0.0
                direction.cut = None
            return {"ok": True}
        if kind == "stats":
            return {"ok": True, "links": {str(k): {name: d.counts for name, d in pair.items()}
                                          for k, pair in self.links.items()}}
        return {"ok": False, "error": f"unknown command {kind}"}

    def packet(self, source, data, now):
        if len(data) < 20 or data[0] >> 4 != 4:
            return  # IPv6 chatter (router solicitations) has nowhere to go
        target = self.by_address.get(data[16:20])
        if target is None:
            return
        fd, index = target
        if source and index:
            return  # client to client: not part of the lab
        link = source or index
        direction = self.links[link]["up" if source else "down"]
        if direction.cut and direction.cut[0] in data:
            self.links[link]["down"].partitioned_until = now + direction.cut[1]
            direction.cut = None
        for at in direction.delays(self.rng, now, len(data)):
            self.sequence += 1
            heapq.heappush(self.heap, (at, self.sequence, fd, data, direction))

    def deliver(self, now):
        while self.heap and self.heap[0][0] <= now:
            _, _, fd, data, direction = heapq.heappop(self.heap)
            try:
                os.write(fd, data)
                direction.counts["delivered"] += 1
            except (BlockingIOError, OSError):
                direction.counts["lost"] += 1

    def run(self, control):
        os.set_blocking(control, False)
        self.selector.register(control, selectors.EVENT_READ, "control")
        buffer = b""
        print(json.dumps({"ready": True}), flush=True)
        while True:
            now = time.monotonic()
            self.deliver(now)
            timeout = max(0.0, self.heap[0][0] - now) if self.heap else 1.0
            for key, _ in self.selector.select(timeout):
                if key.data == "control":
                    chunk = os.read(control, 65536)
                    if not chunk:
                        return
                    buffer += chunk
                    while b"\n" in buffer:
                        line, buffer = buffer.split(b"\n", 1)
                        if line.strip():
                            try:
                                answer = self.command(json.loads(line))
                            except (ValueError, KeyError) as error:
                                answer = {"ok": False, "error": str(error)}
                            print(json.dumps(answer), flush=True)
                    continue
                now = time.monotonic()
                for _ in range(64):  # bounded, so that delivery is not starved
                    try:
                        data = os.read(key.fd, 65536)
                    except BlockingIOError:
                        break
                    self.packet(key.data, data, now)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", required=True, metavar="NS=ADDRESS")
    parser.add_argument("--client", action="append", default=[], metavar="NS=ADDRESS")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    server = tuple(args.server.split("=", 1))
    clients = [tuple(c.split("=", 1)) for c in args.client]
    Wire(server, clients, args.seed).run(sys.stdin.fileno())


if __name__ == "__main__":
    main()
