#!/usr/bin/env python3
"""Network campaign: tsync across a lossy, slow, partitioned network of namespaces, checked against a model.

The lab (root only): one network namespace for the server, one per client, joined by the wire
(scripts/netlab/wire.py: a TUN device in each namespace and a user-space link between them that
delays, jitters, loses, reorders, duplicates and partitions packets; kernel TCP on both ends).
The server namespace runs `tsync serve` on SQLite, or (--two-instances) two `tsync serve` on one
PostgreSQL running in that namespace, the clients split between them.

Each run is drawn from its seed: the impairment profile of each link (50-300 ms delay, jitter,
1-10% loss, reordering, duplication, sometimes a rate limit), the partitions (one direction of a
link, sometimes both, down for seconds) and what the users do. Each client namespace has a user
with two stores: a work store, where the user inserts, updates and deletes their own records and
changes their own field of every shared record, then runs `push --on-conflict merge`, `push`,
`pull --query-id all` or `sync --on-conflict merge`; and a watch store, where `watch --json
--on-conflict merge` runs the whole run while the user edits that store too (the watch pushes
those edits). Every field of a shared record has one owner (a store), so what a merge must give is
known. Every command runs with TSYNC_TIMEOUT and a deadline; one that outlives it is stuck. Exits
3 (the server could not be reached) and 2 (an error left for a later policy) are what a bad
network gives: the user's loop carries on, and they are counted.

Then the network heals, the job is finished (the watches push what their stores queued, each work
store syncs until clean) and the run is checked:
- the server holds exactly the model: none lost, none duplicated or a ghost, no field reverted;
- every store (work and watch) equals the server, records and versions;
- every watch is alive, its events (replayed from what its store held when it started) end at the
  server's state, and it stops on SIGINT with 130;
- no command outlived its deadline, and no exit other than 0, 2, 3.

Usage: campaign.py --bin TSYNC [--runs N] [--seed S] [--two-instances] [--short] [--clients N]
                   [--link auto|tun|netem] [--seconds LIMIT] [-v]
The links are tc netem on veth pairs where the kernel has sch_netem (--link auto), else the wire;
--link tun forces the wire.
Prints one line per run and ends with "N passed, M failed" (exit 1 if any failed; exit 77 with one
line when the machine allows no namespaces). A failing run's seed reproduces its parameters:
campaign.py --bin TSYNC --runs 1 --seed SEED [--two-instances].
"""

import argparse
import glob
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PREFIX = "nlab"
SERVER_ADDRESS = "10.77.0.1"
SYSTEM_FIELDS = {"id", "version", "updatedAt", "createdAt", "deleted"}
COMMAND_DEADLINE = 120  # seconds a network command may take before it counts as stuck
LOCAL_DEADLINE = 60  # for a local edit
EXCHANGE_TIMEOUT = "10"  # TSYNC_TIMEOUT: seconds one HTTP exchange may take
CLONE_NEWNET = 0x40000000
# Every long-lived child (the wire, the servers, the watches, each command) is killed with the
# campaign, even by SIGKILL (the kernel's parent-death signal, which survives the exec of `ip netns
# exec`); SIGINT, SIGTERM and SIGHUP end it through `Lab.close`, and what a killed campaign left
# (namespaces, PostgreSQL) the next one removes at its start.
DIE_WITH_CAMPAIGN = ["setpriv", "--pdeathsig", "KILL", "--"] if shutil.which("setpriv") else []
SETTLED = object()  # a watch's last event for a record was "settled" and names no version (the store holds none)


class Failure(Exception):
    pass


class Unavailable(Exception):
    """The machine allows no namespaces or no TUN: the campaign cannot run here."""


def sh(*args, check=True, **kwargs):
    return subprocess.run(list(args), check=check, capture_output=True, text=True, **kwargs)


# -- namespaces ---------------------------------------------------------------------------------

_ns_lock = threading.Lock()


def ns_socket(namespace, address, port, timeout=30):
    """A TCP socket opened inside `namespace`: the thread enters it with setns(2), makes the
    socket (which stays there) and comes back."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    with _ns_lock:
        home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        target = os.open(f"/var/run/netns/{namespace}", os.O_RDONLY)
        try:
            if libc.setns(target, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns")
            try:
                sock = socket.socket()
            finally:
                if libc.setns(home, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns back")
        finally:
            os.close(target)
            os.close(home)
    sock.settimeout(timeout)
    sock.connect((address, port))
    return sock


def http_get(namespace, port, path, timeout=30):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    connection.sock = ns_socket(namespace, "127.0.0.1", port, timeout)
    try:
        connection.request("GET", path, headers={"ZUMO-API-VERSION": "2.0.0"})
        response = connection.getresponse()
        return response.status, response.read(), response.getheader("Link")
    finally:
        connection.close()


def remove_stale_namespaces():
    """Namespaces of earlier campaigns whose process is gone: their processes end, they go."""
    for name in sh("ip", "netns", "list", check=False).stdout.split():
        if not name.startswith(PREFIX):
            continue
        owner = "".join(ch for ch in name[len(PREFIX):].split("-")[0] if ch.isdigit())
        if owner and os.path.exists(f"/proc/{owner}"):
            continue
        kill_namespace_processes(name)
        sh("ip", "netns", "del", name, check=False)


def kill_namespace_processes(name):
    for pid in sh("ip", "netns", "pids", name, check=False).stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


class Lab:
    """The namespaces and the wire between them, for the whole campaign."""

    def __init__(self, clients, seed, workdir, kind):
        self.kind = kind
        self.netem = None
        self.tag = f"{PREFIX}{os.getpid()}-"
        self.server_ns = self.tag + "s"
        self.client_ns = [f"{self.tag}c{k}" for k in range(1, clients + 1)]
        self.workdir = workdir
        self.seed = seed
        self.wire = None
        self.postgres = None
        self.lock = threading.Lock()

    def address(self, k):
        return f"10.77.{k}.2"

    def start(self):
        remove_stale_namespaces()
        if os.geteuid() != 0:
            raise Unavailable("not root: network namespaces need root")
        if not shutil.which("ip"):
            raise Unavailable("iproute2 (`ip`) is not installed")
        if not os.path.exists("/dev/net/tun"):
            raise Unavailable("/dev/net/tun is missing")
        for name in [self.server_ns] + self.client_ns:
            result = sh("ip", "netns", "add", name, check=False)
            if result.returncode != 0:
                raise Unavailable(f"`ip netns add` failed: {result.stderr.strip()}")
        if self.kind == "auto":
            self.kind = "netem" if netem_available(self.server_ns) else "tun"
        if self.kind == "netem":
            self.netem = Netem(self)
            return
        args = [sys.executable, os.path.join(HERE, "wire.py"), "--seed", str(self.seed),
                "--server", f"{self.server_ns}={SERVER_ADDRESS}"]
        for k, name in enumerate(self.client_ns, 1):
            args += ["--client", f"{name}={self.address(k)}"]
        self.wire_log = open(os.path.join(self.workdir, "wire.log"), "ab")
        self.wire = subprocess.Popen(DIE_WITH_CAMPAIGN + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.wire_log, text=True)
        line = self.wire.stdout.readline()
        if not line or not json.loads(line).get("ready"):
            self.wire.wait()
            with open(os.path.join(self.workdir, "wire.log")) as f:
                raise Unavailable("the wire could not start (TUN in a namespace refused?): " + f.read().strip()[-300:])

    def control(self, **message):
        if self.netem:
            with self.lock:
                return self.netem.control(message)
        with self.lock:
            self.wire.stdin.write(json.dumps(message) + "\n")
            self.wire.stdin.flush()
            answer = json.loads(self.wire.stdout.readline())
        if not answer.get("ok"):
            raise Failure(f"wire: {answer}")
        return answer

    def exec(self, k):
        """The command prefix that runs in client k's namespace (0: the server's)."""
        return DIE_WITH_CAMPAIGN + ["ip", "netns", "exec", self.client_ns[k - 1] if k else self.server_ns]

    def start_postgres(self):
        binaries = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: [int(x) for x in p.split("/")[4].split(".")])
        if not binaries:
            raise Unavailable("PostgreSQL is not installed (scripts/install-deps.sh --with-postgres)")
        self.pg_bin = binaries[-1]
        self.pg_dir = tempfile.mkdtemp(prefix="netlab-pg-")
        shutil.chown(self.pg_dir, "postgres")
        as_postgres = self.exec(0) + ["runuser", "-u", "postgres", "--"]
        sh(*as_postgres, f"{self.pg_bin}/initdb", "-D", f"{self.pg_dir}/data", "-A", "trust", "-U", "postgres",
           "--no-sync", "-E", "UTF8")
        sh(*as_postgres, f"{self.pg_bin}/pg_ctl", "-D", f"{self.pg_dir}/data", "-l", f"{self.pg_dir}/server.log",
           "-w", "-t", "60", "start", "-o",
           f"-c listen_addresses=127.0.0.1 -p 5432 -k {self.pg_dir} -c fsync=off -c synchronous_commit=off "
           "-c max_connections=200")
        self.postgres = as_postgres

    def create_database(self, name):
        sh(*self.postgres, f"{self.pg_bin}/createdb", "-h", "127.0.0.1", "-p", "5432", "-U", "postgres", name)
        return f"postgres://postgres@127.0.0.1:5432/{name}"

    def close(self):
        if self.postgres:
            sh(*self.postgres, f"{self.pg_bin}/pg_ctl", "-D", f"{self.pg_dir}/data", "-m", "immediate", "-w", "stop",
               check=False)
            shutil.rmtree(self.pg_dir, ignore_errors=True)
            self.postgres = None
        if self.netem:
            self.netem.close()
            self.netem = None
        if self.wire:
            try:
                self.wire.stdin.close()
            except OSError:
                pass
            try:
                self.wire.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.wire.kill()
                self.wire.wait()
            self.wire = None
        for name in [self.server_ns] + self.client_ns:
            kill_namespace_processes(name)
            sh("ip", "netns", "del", name, check=False)


def netem_available(namespace):
    """Whether the kernel has sch_netem: a netem qdisc on the namespace's loopback is taken."""
    result = sh("ip", "netns", "exec", namespace, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms",
                check=False)
    sh("ip", "netns", "exec", namespace, "tc", "qdisc", "del", "dev", "lo", "root", check=False)
    return result.returncode == 0


class Netem:
    """The wire's commands done with veth pairs and `tc netem`, where the kernel has it: one pair
    per client (10.77.K.2 at the client's end, 10.77.0.1 at the server's), netem on each end's
    egress (the client's end: up; the server's: down). A partition is `loss 100%` until a timer
    puts the profile back. Counters are the qdiscs' own (sent, dropped)."""

    def __init__(self, lab):
        self.lab = lab
        self.profiles = {}  # (k, "up"|"down") -> netem arguments
        self.timers = {}
        for k, name in enumerate(lab.client_ns, 1):
            server_end, client_end = f"s{k}", f"c{k}"
            sh("ip", "link", "add", server_end, "netns", lab.server_ns, "type", "veth", "peer", "name", client_end,
               "netns", name)
            for ns, device, mine, theirs in ((lab.server_ns, server_end, SERVER_ADDRESS, lab.address(k)),
                                             (name, client_end, lab.address(k), SERVER_ADDRESS)):
                sh("ip", "-n", ns, "addr", "add", f"{mine}/32", "dev", device)
                sh("ip", "-n", ns, "link", "set", device, "up")
                sh("ip", "-n", ns, "link", "set", "lo", "up")
                sh("ip", "-n", ns, "route", "add", f"{theirs}/32", "dev", device, "src", mine)
            self.profiles[(k, "up")] = self.profiles[(k, "down")] = []

    def device(self, k, which):
        if which == "up":
            return self.lab.client_ns[k - 1], f"c{k}"
        return self.lab.server_ns, f"s{k}"

    def apply(self, k, which, arguments):
        ns, device = self.device(k, which)
        if arguments:
            sh("ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", device, "root", "netem", *arguments)
        else:
            sh("ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", device, "root", check=False)

    def keys(self, link, which):
        links = range(1, len(self.lab.client_ns) + 1) if link == "*" else [int(link)]
        names = ("up", "down") if which == "both" else (which,)
        return [(k, name) for k in links for name in names]

    def restore(self, key):
        with self.lab.lock:
            self.timers.pop(key, None)
            self.apply(*key, self.profiles[key])

    def control(self, message):
        kind = message["cmd"]
        if kind == "profile":
            arguments = ["delay", f"{message.get('delay', 0)}ms", f"{message.get('jitter', 0)}ms",
                         "loss", f"{100 * message.get('loss', 0)}%"]
            if message.get("reorder"):
                arguments += ["reorder", f"{100 * message['reorder']}%"]
            if message.get("duplicate"):
                arguments += ["duplicate", f"{100 * message['duplicate']}%"]
            if message.get("rate"):
                arguments += ["rate", f"{message['rate']}kbit"]
            for key in self.keys(message.get("link", "*"), message.get("dir", "both")):
                self.profiles[key] = arguments
                if key not in self.timers:
                    self.apply(*key, arguments)
        elif kind == "partition":
            for key in self.keys(message["link"], message.get("dir", "both")):
                if key in self.timers:
                    self.timers.pop(key).cancel()
                self.apply(*key, ["loss", "100%"])
                timer = threading.Timer(float(message["seconds"]), self.restore, args=(key,))
                timer.daemon = True
                self.timers[key] = timer
                timer.start()
        elif kind == "heal":
            for timer in self.timers.values():
                timer.cancel()
            self.timers.clear()
            for key in self.keys("*", "both"):
                self.profiles[key] = []
                self.apply(*key, [])
        elif kind == "stats":
            links = {}
            for k, which in self.keys("*", "both"):
                ns, device = self.device(k, which)
                text = sh("ip", "netns", "exec", ns, "tc", "-s", "qdisc", "show", "dev", device, check=False).stdout
                sent = dropped = 0
                words = text.split()
                if "Sent" in words:
                    at = words.index("Sent")
                    sent = int(words[at + 3])
                    dropped = int(words[at + 6].rstrip(","))
                links.setdefault(str(k), {})[which] = {"packets": sent + dropped, "lost": dropped, "partitioned": 0,
                                                       "duplicated": 0, "reordered": 0}
            return {"ok": True, "links": links}
        return {"ok": True}

    def close(self):
        for timer in self.timers.values():
            timer.cancel()


# -- server and stores --------------------------------------------------------------------------

class Servers:
    """`tsync serve` in the server namespace: one on SQLite, or two on one PostgreSQL database."""

    def __init__(self, lab, binary, workdir, database, count):
        self.lab = lab
        self.ports = [8080 + i for i in range(count)]
        self.processes = []
        self.log = open(os.path.join(workdir, "serve.log"), "ab")
        for port in self.ports:
            process = subprocess.Popen(
                lab.exec(0) + [binary, "serve", "--db", database, "--host", "0.0.0.0", "--port", str(port),
                               "--no-auth", "--insecure"],
                stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL)
            self.processes.append(process)
            deadline = time.time() + 60
            while True:
                if process.poll() is not None:
                    raise Failure(f"tsync serve exited {process.returncode} (see {workdir}/serve.log)")
                try:
                    if http_get(lab.server_ns, port, "/health", timeout=2)[0] == 200:
                        break
                except OSError:
                    pass
                if time.time() > deadline:
                    raise Failure("tsync serve did not answer /health within 60 s")
                time.sleep(0.1)

    def url(self, k):
        return f"http://{SERVER_ADDRESS}:{self.ports[k % len(self.ports)]}"

    def records(self, table):
        """Every live record of `table`, by id, read on the server's loopback (not through the wire)."""
        out, skip = {}, 0
        while True:
            status, body, _ = http_get(self.lab.server_ns, self.ports[0],
                                       f"/tables/{table}?$orderby=id&$top=1000&$skip={skip}")
            if status != 200:
                raise Failure(f"reading {table} from the server: {status} {body[:200]!r}")
            items = json.loads(body)
            for item in items:
                if item["id"] in out:
                    raise Failure(f"the server lists {table}/{item['id']} twice", )
                out[item["id"]] = item
            if len(items) < 1000:
                return out
            skip += len(items)

    def alive(self):
        return all(p.poll() is None for p in self.processes)

    def stop(self):
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class Tally:
    """What commands did, across the campaign: exits by command, stuck ones."""

    def __init__(self):
        self.lock = threading.Lock()
        self.exits = {}
        self.stuck = []
        self.unexpected = []

    def add(self, name, code):
        with self.lock:
            self.exits.setdefault(name, {}).setdefault(code, 0)
            self.exits[name][code] += 1

    def summary(self):
        parts = []
        for name, codes in sorted(self.exits.items()):
            total = sum(codes.values())
            failed = ", ".join(f"exit {c}: {n}" for c, n in sorted(codes.items(), key=lambda kv: str(kv[0])) if c != 0)
            parts.append(f"{name} {total}" + (f" ({failed})" if failed else ""))
        return "; ".join(parts)


class Store:
    def __init__(self, run, k, name):
        self.run_ = run
        self.k = k
        self.name = name
        self.path = os.path.join(run.workdir, name)
        os.makedirs(self.path)

    def command(self, args):
        return self.run_.lab.exec(self.k) + [self.run_.binary, "-C", self.path] + list(args)

    def run(self, *args, stdin=None, deadline=COMMAND_DEADLINE, allowed=(0,), label=None):
        """Runs a command; one that outlives its deadline is killed and counted stuck."""
        label = label or args[0]
        started = time.time()
        try:
            result = subprocess.run(self.command(args), input=stdin, capture_output=True, text=True,
                                    timeout=deadline, env=self.run_.env)
        except subprocess.TimeoutExpired:
            self.run_.tally.add(label, "stuck")
            self.run_.tally.stuck.append(f"{self.name}: tsync {' '.join(args)} still running after {deadline} s")
            raise Failure(f"{self.name}: tsync {' '.join(args)} did not end within {deadline} s (stuck)")
        self.run_.tally.add(label, result.returncode)
        if result.returncode not in allowed:
            raise Failure(f"{self.name}: tsync {' '.join(args)}: exit {result.returncode} after "
                          f"{time.time() - started:.1f} s: {result.stderr.strip()[:400]}")
        return result

    def query(self, table):
        records = {}
        for line in self.run("query", table, deadline=LOCAL_DEADLINE, label="query").stdout.splitlines():
            item = json.loads(line)
            records[item["id"]] = item
        return records

    def pending(self):
        return self.run("status", "--porcelain", deadline=LOCAL_DEADLINE, label="status").stdout.strip()

    def errors(self):
        return json.loads(self.run("conflicts", "--json", deadline=LOCAL_DEADLINE, label="conflicts").stdout)


def user_fields(record):
    return {k: v for k, v in record.items() if k not in SYSTEM_FIELDS}


# -- a run --------------------------------------------------------------------------------------

def draw_profile(rng):
    delay = rng.uniform(50, 300)
    profile = {"delay": round(delay), "jitter": round(rng.uniform(0, delay / 3)), "loss": round(rng.uniform(0.01, 0.10), 3),
               "reorder": round(rng.choice([0, rng.uniform(0.01, 0.1)]), 3),
               "duplicate": round(rng.choice([0, rng.uniform(0.01, 0.05)]), 3)}
    if rng.random() < 0.25:
        profile["rate"] = rng.choice([256, 1000, 4000])  # kbit/s
    return profile


class Run:
    def __init__(self, campaign, seed, workdir, log):
        self.campaign = campaign
        self.lab = campaign.lab
        self.binary = campaign.binary
        self.tally = campaign.tally
        self.seed = seed
        self.rng = random.Random(seed)
        self.workdir = workdir
        self.log = log
        self.short = campaign.short
        self.table = f"net{seed}"
        self.env = dict(os.environ, TSYNC_TIMEOUT=EXCHANGE_TIMEOUT)
        self.model = {}
        self.model_lock = threading.Lock()
        self.stop_users = threading.Event()
        self.failures = []
        self.faults = {"partitions": 0, "partition_seconds": 0.0, "one_way": 0}
        self.counters = {}
        self.watch_outcome = {"dead": 0, "late": 0, "missing": 0, "settled": 0}

    # -- the users' edits, mirrored in the model ---------------------------------------------

    def user(self, store, field, rng, prefix, network):
        """One user at one store: edits, then (work store) a network command, until told to stop."""
        counter = 0
        own = []
        try:
            while not self.stop_users.is_set():
                for _ in range(rng.randrange(1, 5)):
                    counter += 1
                    choice = rng.random()
                    if choice < 0.3 or not own:
                        rid = f"{prefix}-{counter:04d}"
                        fields = {"text": f"{prefix} {counter}", "n": counter}
                        store.run("insert", self.table, json.dumps(dict(fields, id=rid)), deadline=LOCAL_DEADLINE)
                        with self.model_lock:
                            self.model[rid] = fields
                        own.append(rid)
                    elif choice < 0.42:
                        rid = own.pop(rng.randrange(len(own)))
                        store.run("delete", self.table, rid, deadline=LOCAL_DEADLINE)
                        with self.model_lock:
                            del self.model[rid]
                    elif choice < 0.65:
                        rid = rng.choice(own)
                        store.run("update", self.table, rid, json.dumps({"n": counter}), deadline=LOCAL_DEADLINE)
                        with self.model_lock:
                            self.model[rid]["n"] = counter
                    else:
                        rid = f"shared-{rng.randrange(self.shared):02d}"
                        store.run("update", self.table, rid, json.dumps({field: counter}), deadline=LOCAL_DEADLINE)
                        with self.model_lock:
                            self.model[rid][field] = counter
                if network:
                    args = rng.choice([["push", "--on-conflict", "merge"], ["push"],
                                       ["pull", self.table, "--query-id", "all"],
                                       ["sync", "--on-conflict", "merge"], ["sync", "--on-conflict", "merge"]])
                    label = args[0] + (" merge" if "merge" in args else "")
                    store.run(*args, allowed=(0, 2, 3), label=label)
                else:
                    self.stop_users.wait(rng.uniform(0.5, 2.0))
        except Failure as failure:
            self.failures.append(str(failure))
            self.stop_users.set()

    # -- faults ------------------------------------------------------------------------------

    def partitions(self, rng, clients, seconds):
        """Random partitions while the users work: one direction of one link mostly, both now and then."""
        started = time.time()
        while not self.stop_users.is_set():
            if self.stop_users.wait(rng.uniform(1, 4 if self.short else 6)):
                break
            if time.time() - started > seconds:
                break
            k = rng.randrange(1, clients + 1)
            which = rng.choice(["up", "down", "up", "down", "both"])
            length = round(rng.uniform(1, 4 if self.short else 10), 1)
            self.lab.control(cmd="partition", link=k, dir=which, seconds=length)
            self.faults["partitions"] += 1
            self.faults["partition_seconds"] += length
            self.faults["one_way"] += which != "both"
            self.log(f"  partition link {k} {which} for {length} s at {time.time() - started:.1f} s")

    # -- the run -------------------------------------------------------------------------------

    def execute(self):
        campaign = self.campaign
        clients = len(self.lab.client_ns)
        if campaign.two_instances:
            database = self.lab.create_database(self.table)
        else:
            database = "sqlite:" + os.path.join(self.workdir, "server.db")
        servers = Servers(self.lab, self.binary, self.workdir, database, 2 if campaign.two_instances else 1)
        watches = []
        try:
            self.job(servers, clients, watches)
        finally:
            for watch in watches:
                if watch["process"].poll() is None:
                    watch["process"].kill()
                    watch["process"].wait()
            servers.stop()

    def job(self, servers, clients, watches):
        rng = self.rng
        self.lab.control(cmd="heal")
        # Shared records, one field per store (w1, v1, w2, v2, ...), made on a clean network.
        self.shared = rng.randrange(4, 9)
        setup = Store(self, 1, "setup")
        setup.run("init", "--remote", servers.url(0))
        lines = []
        for i in range(self.shared):
            fields = {"text": f"shared {i}"}
            for k in range(1, clients + 1):
                fields[f"w{k}"] = 0
                fields[f"v{k}"] = 0
            self.model[f"shared-{i:02d}"] = fields
            lines.append(json.dumps(dict(fields, id=f"shared-{i:02d}")))
        setup.run("insert", self.table, stdin="\n".join(lines) + "\n")
        setup.run("push")

        work, watch_stores = {}, {}
        for k in range(1, clients + 1):
            for name, stores in (("work", work), ("watch", watch_stores)):
                store = Store(self, k, f"{name}{k}")
                store.run("init", "--remote", servers.url(k - 1))
                store.run("pull", self.table, "--query-id", "all")
                stores[k] = store
        for k, store in watch_stores.items():
            start = {rid: r.get("version") for rid, r in store.query(self.table).items()}
            out = open(os.path.join(self.workdir, f"watch{k}.out"), "w")
            err = open(os.path.join(self.workdir, f"watch{k}.err"), "w")
            process = subprocess.Popen(store.command(["watch", "--json", "--on-conflict", "merge"]),
                                       stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=self.env)
            watches.append({"k": k, "process": process, "start": start, "out": out.name, "err": err.name})

        # The network turns bad: each link its own profile, both directions. The wire counts
        # across runs: this run's counts are the difference.
        before = self.lab.control(cmd="stats")["links"]
        profiles = {}
        for k in range(1, clients + 1):
            profiles[k] = draw_profile(rng)
            self.lab.control(cmd="profile", link=k, dir="both", **profiles[k])
            self.log(f"  link {k} ({'instance ' + str((k - 1) % len(servers.ports) + 1)}): {profiles[k]}")
        self.profiles = profiles

        seconds = 12 if self.short else 40
        threads = []
        for k in range(1, clients + 1):
            threads.append(threading.Thread(target=self.user, daemon=True,
                                            args=(work[k], f"w{k}", random.Random(rng.random()), f"w{k}", True)))
            threads.append(threading.Thread(target=self.user, daemon=True,
                                            args=(watch_stores[k], f"v{k}", random.Random(rng.random()), f"v{k}", False)))
        partitioner = threading.Thread(target=self.partitions, daemon=True,
                                       args=(random.Random(rng.random()), clients, seconds))
        for thread in threads + [partitioner]:
            thread.start()
        self.stop_users.wait(seconds)
        self.stop_users.set()
        for thread in threads + [partitioner]:
            thread.join()
        if self.failures:
            raise Failure("; ".join(self.failures))

        # Heal, and finish the job.
        stats = self.lab.control(cmd="stats")["links"]
        self.lab.control(cmd="heal")
        for key in ("packets", "lost", "partitioned", "duplicated", "reordered"):
            self.counters[key] = sum(d[key] - before[k][name][key] for k, pair in stats.items() for name, d in pair.items())
        self.finish(servers, work, watch_stores, watches)

    def wait_for(self, what, condition, seconds):
        deadline = time.time() + seconds
        while True:
            problem = condition()
            if problem is None:
                return
            if time.time() > deadline:
                raise Failure(f"{what} within {seconds} s: {problem}")
            time.sleep(1)

    def finish(self, servers, work, watch_stores, watches):
        """Ends the job on a healed network; what cannot be finished (an error only a person
        could settle) is counted and the checks go on, so that a run reports all it found."""
        problems = []
        stuck_errors = {}

        def describe(errors):
            return "; ".join(f"{e.get('table')}/{e.get('itemId')} {e.get('kind')} {e.get('status')}: {e.get('message')}"
                             for e in errors[:3])

        first_seen = {}  # (watch, error id) -> when the error was first seen

        def watch_queues_empty():
            for k, store in watch_stores.items():
                if k in stuck_errors:
                    continue
                errors = store.errors()
                if errors:
                    # The watch settles conflicts with merge as it meets them: an error lives
                    # between a push's answer and the settling in the same push, so one is stuck
                    # only when it is still there 20 s later.
                    now = time.time()
                    ages = [now - first_seen.setdefault((k, e.get("id")), now) for e in errors]
                    if min(ages) < 20:
                        return f"watch{k} is settling {len(errors)} error(s)"
                    stuck_errors[k] = errors
                    problems.append(f"watch{k} left {len(errors)} error(s) only a person could settle: "
                                    f"{describe(errors)}")
                    continue
                if store.pending():
                    return f"watch{k} still has queued operations: {store.pending().splitlines()[:3]}"
            return None

        self.wait_for("the watches did not push their stores' edits", watch_queues_empty, 120)
        for k, store in work.items():
            for attempt in range(5):
                result = store.run("sync", "--on-conflict", "merge", allowed=(0, 2, 3), label="final sync")
                if result.returncode == 0 and not store.pending() and not store.errors():
                    break
            else:
                errors = store.errors()
                stuck_errors[f"work{k}"] = errors
                problems.append(f"work{k}: sync --on-conflict merge not clean after 5 attempts on a healed network: "
                                f"exit {result.returncode} {result.stderr.strip()[:200]}; {len(errors)} error(s) left: "
                                f"{describe(errors)}")
        for store in work.values():
            store.run("pull", self.table, "--query-id", "all", allowed=(0, 2), label="final pull")
        on_server = servers.records(self.table)

        def watches_converged():
            for k, store in watch_stores.items():
                if k in stuck_errors:
                    continue  # its store keeps its unsettled change
                problem = self.differs(store.query(self.table), on_server)
                if problem:
                    return f"watch{k}: {problem}"
            return None

        try:
            self.wait_for("the watch stores did not reach the server's state", watches_converged, 120)
        except Failure as failure:
            problems.append(str(failure))
        self.stuck_errors = sum(len(e) for e in stuck_errors.values())

        # Every watch is alive and stops on SIGINT with 130; its events end at the server's state.
        for watch in watches:
            process = watch["process"]
            if process.poll() is not None:
                self.watch_outcome["dead"] += 1
                problems.append(f"watch{watch['k']} exited {process.returncode} before the end: "
                                f"{open(watch['err']).read().strip()[-300:]}")
                continue
            process.send_signal(signal.SIGINT)
            try:
                code = process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                self.tally.stuck.append(f"watch{watch['k']}: did not stop within 30 s of SIGINT")
                problems.append(f"watch{watch['k']} did not stop within 30 s of SIGINT")
                continue
            if code != 130:
                problems.append(f"watch{watch['k']} stopped by SIGINT exited {code}")
            state = dict(watch["start"])
            seen = {}  # id -> every version its events named
            events = []
            with open(watch["out"]) as f:
                for line in f:
                    event = json.loads(line)
                    events.append(event)
                    if event.get("table") != self.table:
                        continue
                    seen.setdefault(event["id"], set()).add(event.get("version"))
                    if event["event"] == "deleted" or (event["event"] == "pushed" and event.get("operation") == "delete"):
                        state.pop(event["id"], None)
                    elif event["event"] in ("pulled", "pushed"):
                        state[event["id"]] = event.get("version")
                    elif event["event"] == "settled":
                        # The version the store holds once settled; none when it holds none.
                        state[event["id"]] = event.get("version", SETTLED)
            watch["events"] = len(events)
            for name in ("reconnecting", "resynced", "conflict", "settled"):
                self.counters["watch " + name] = self.counters.get("watch " + name, 0) + sum(
                    1 for e in events if e["event"] == name)
            expected = {rid: r.get("version") for rid, r in on_server.items()}
            for error in stuck_errors.get(watch["k"], []):  # an item held by its error is not pulled
                state.pop(error.get("itemId"), None)
                expected.pop(error.get("itemId"), None)
            unnamed = [rid for rid, version in state.items() if version is SETTLED]
            self.watch_outcome["settled"] += len(unnamed)
            for rid in unnamed:
                del state[rid]
                expected.pop(rid, None)
            if state != expected:
                wrong = sorted(rid for rid in set(state) | set(expected) if state.get(rid) != expected.get(rid))
                # Late: the server's version was in an event, but a later event named another
                # (an older push answer printed after a newer pull). Missing: never in an event.
                late = [rid for rid in wrong if expected.get(rid) in seen.get(rid, set())]
                self.watch_outcome["late"] += len(late)
                self.watch_outcome["missing"] += len(wrong) - len(late)
                problems.append(f"watch{watch['k']}'s last events end elsewhere than the server for {len(wrong)} "
                                f"record(s), {len(late)} of them late (the server's version came in an earlier event): "
                                + ", ".join(f"{rid} last event {state.get(rid)}, server {expected.get(rid)}"
                                            for rid in wrong[:3]))

        # The server holds the model; every store holds the server.
        # A change held in an error is stuck (counted above), not lost.
        held = {e.get("itemId") for errors in stuck_errors.values() for e in errors}
        self.records = len(on_server)
        lost = sorted(set(self.model) - set(on_server) - held)
        ghost = sorted(set(on_server) - set(self.model) - held)
        reverted = sorted(rid for rid in set(self.model) & set(on_server) - held
                          if user_fields(on_server[rid]) != self.model[rid])
        self.outcome = {"lost": len(lost), "ghost": len(ghost), "reverted": len(reverted), "errors": self.stuck_errors,
                        "watch dead": self.watch_outcome["dead"], "events late": self.watch_outcome["late"],
                        "events missing": self.watch_outcome["missing"], "settled last": self.watch_outcome["settled"]}
        if lost or ghost or reverted:
            detail = "; ".join(f"{rid}: server {user_fields(on_server[rid])} model {self.model[rid]}" for rid in reverted[:4])
            problems.append(f"server differs from the model: lost {lost[:5]} ({len(lost)}), ghost/duplicated "
                            f"{ghost[:5]} ({len(ghost)}), reverted {len(reverted)} {detail}")
        for name, store in [(s.name, s) for s in list(work.values()) + list(watch_stores.values())]:
            # A store with an error left keeps that item as it is; every other item must be the server's.
            key = int(name[5:]) if name.startswith("watch") else name
            mine = {e.get("itemId") for e in stuck_errors.get(key, [])}
            problem = self.differs({rid: r for rid, r in store.query(self.table).items() if rid not in mine},
                                   {rid: r for rid, r in on_server.items() if rid not in mine})
            if problem:
                problems.append(f"{name}: {problem}")
        if problems:
            raise Failure("; ".join(problems))

    @staticmethod
    def differs(local, on_server):
        if set(local) != set(on_server):
            return (f"ids differ: local-only {sorted(set(local) - set(on_server))[:4]}, "
                    f"server-only {sorted(set(on_server) - set(local))[:4]}")
        for rid, record in on_server.items():
            mine = local[rid]
            if user_fields(mine) != user_fields(record) or mine.get("version") != record.get("version"):
                return f"{rid} is {user_fields(mine)} v{mine.get('version')}, the server has {user_fields(record)} v{record.get('version')}"
        return None


class Campaign:
    def __init__(self, args):
        self.binary = os.path.abspath(args.bin)
        self.short = args.short
        self.two_instances = args.two_instances
        self.tally = Tally()
        self.workdir = tempfile.mkdtemp(prefix="tsync-netlab-")
        self.lab = Lab(args.clients, args.seed or 0, self.workdir, args.link)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="the tsync binary")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=None, help="seed of the first run (default: random)")
    parser.add_argument("--two-instances", action="store_true", help="two `tsync serve` on one PostgreSQL")
    parser.add_argument("--short", action="store_true", help="short runs (CI): 12 s of traffic instead of 40")
    parser.add_argument("--clients", type=int, default=None, help="client namespaces (default 4; 3 with --short)")
    parser.add_argument("--seconds", type=float, default=86400, help="stop starting runs after this long")
    parser.add_argument("--link", choices=["auto", "tun", "netem"], default="auto",
                        help="how links are impaired: netem on veth pairs where the kernel has sch_netem (auto), "
                             "else the TUN wire")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    if args.clients is None:
        args.clients = 3 if args.short else 4
    first = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10**6)
    args.seed = first

    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    campaign = Campaign(args)
    passed = failed = 0
    started = time.time()
    totals = {"lost": 0, "ghost": 0, "reverted": 0, "errors": 0, "watch dead": 0, "events late": 0,
              "events missing": 0, "settled last": 0, "partitions": 0, "one_way": 0, "partition_seconds": 0.0}
    counters = {}
    try:
        try:
            campaign.lab.start()
            if args.two_instances:
                campaign.lab.start_postgres()
        except Unavailable as reason:
            print(f"netlab: skipped: {reason}")
            sys.exit(77)
        except subprocess.CalledProcessError as error:
            print(f"netlab: skipped: {' '.join(error.cmd)}: {error.stderr.strip()[:300]}")
            sys.exit(77)
        kind = "two instances on PostgreSQL" if args.two_instances else "one instance on SQLite"
        link = "tc netem on veth pairs" if campaign.lab.kind == "netem" else "the TUN wire"
        print(f"netlab: {args.clients} client namespaces, {kind}, {link}, first seed {first}", flush=True)
        for index in range(args.runs):
            if time.time() - started > args.seconds:
                print(f"time limit reached after {index} runs")
                break
            seed = first + index
            workdir = os.path.join(campaign.workdir, f"run{seed}")
            os.makedirs(workdir)
            lines = []
            run = Run(campaign, seed, workdir, log=(print if args.verbose else lines.append))
            run_started = time.time()
            stuck_before = len(campaign.tally.stuck)
            try:
                run.execute()
                passed += 1
                outcome = "ok"
                shutil.rmtree(workdir, ignore_errors=True)
            except (Failure, subprocess.CalledProcessError) as failure:
                failed += 1
                message = str(failure) if isinstance(failure, Failure) else f"{failure.cmd}: {failure.stderr}"
                outcome = f"FAILED: {message}"
            for key in ("partitions", "one_way", "partition_seconds"):
                totals[key] += run.faults[key]
            for key, value in getattr(run, "outcome", {}).items():
                totals[key] += value
            for key, value in run.counters.items():
                counters[key] = counters.get(key, 0) + value
            profiles = list(getattr(run, "profiles", {}).values())
            links = (f"delay {min(p['delay'] for p in profiles)}-{max(p['delay'] for p in profiles)} ms, "
                     f"loss {100 * min(p['loss'] for p in profiles):.1f}-{100 * max(p['loss'] for p in profiles):.1f}%, "
                     if profiles else "")
            print(f"run {index + 1} seed {seed}: {outcome} ({getattr(run, 'records', '?')} records, {links}"
                  f"{run.faults['partitions']} partitions, {run.counters.get('lost', 0)} packets lost, "
                  f"{run.counters.get('duplicated', 0)} duplicated, {time.time() - run_started:.1f} s)", flush=True)
            if outcome != "ok":
                for line in lines:
                    print(line)
                print(f"  kept {workdir}; reproduce: scripts/netlab.sh --runs 1 --seed {seed}"
                      + (" --two-instances" if args.two_instances else "") + (" --short" if args.short else ""), flush=True)
            if len(campaign.tally.stuck) > stuck_before:
                for line in campaign.tally.stuck[stuck_before:]:
                    print(f"  stuck: {line}")
    except KeyboardInterrupt:
        print("netlab: interrupted", flush=True)
        failed += 1
    finally:
        campaign.lab.close()
    packets = ("packets", "lost", "partitioned", "duplicated", "reordered")
    print(f"faults: {totals['partitions']} partitions ({totals['one_way']} one-way, "
          f"{totals['partition_seconds']:.0f} s in all); packets: "
          + ", ".join(f"{k} {counters.get(k, 0)}" for k in packets))
    print("watch events: " + ", ".join(f"{k[6:]} {v}" for k, v in sorted(counters.items()) if k.startswith("watch ")))
    print(f"commands: {campaign.tally.summary()}")
    print(f"outcomes: lost {totals['lost']}, duplicated or ghost {totals['ghost']}, reverted {totals['reverted']}, "
          f"errors left for a person {totals['errors']}, stuck commands {len(campaign.tally.stuck)}; "
          f"watches dead {totals['watch dead']}, records whose last watch event is late {totals['events late']} "
          f"or missing {totals['events missing']} (and {totals['settled last']} whose last event is a settled "
          f"one naming no version); "
          f"{time.time() - started:.0f} s")
    print(f"netlab: {passed} passed, {failed} failed")
    if failed == 0:
        shutil.rmtree(campaign.workdir, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
