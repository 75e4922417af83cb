#!/usr/bin/env python3
"""Kill -9 campaign: random SIGKILLs of tsync and of `tsync serve`, checked against a model.

Each run is reproducible from its seed. A run builds a queue of local changes with collapse
(inserts, updates, deletes), pushes it (through the batch route, in small batches, or one request
per operation, chosen per run) while SIGKILL hits `tsync push` and/or the server at a random moment (several rounds, with more local edits in between), pulls into a second store with
`pull --query-id` while SIGKILL hits the pull and/or the server, and kills a large NDJSON `insert`
part-way. Then the job is finished and checked against an independent model of what the user did:

- push ends with exit 0, no error in the error table, nothing pending or stuck in flight;
- the server holds exactly the model's records: none lost, none doubled, no field wrong;
- the pulling store ends equal to the server, records and versions;
- the killed insert is all or nothing.

With --faults a run is a fault run instead: a misbehaving proxy
(scripts/faultproxy.py) sits between tsync and the real `tsync serve` and answers wrongly in one mode
picked at random per run (or the ones --mode names): a whole-batch 404, bare 404s to writes, shuffled
batch results, 200 with an empty or HTML body, another id's record, a 5xx after applying, 429/503
with Retry-After, a captive portal, short pages without Link, truncated timestamps, an ignored
$skip; and a replayed page, a far-future updatedAt, a replayed 2xx, a 201 marked
deleted, old fields with a new version, a Link to another table, a 401 to the read-back, pages
without version, an over-compressed page, and one record the server answers 500 every time (which
the run parks with `resolve --park`, then sends again); and writes a proxy retries after the server
applied them, answers lost after they were applied, If-Match stripped from requests, and reads
forwarded without their query string. A push (with a random conflict policy) and
pulls (incremental and by offset) go through it; then the proxy turns honest, the job is finished,
and the server, the pushing store and the pulling store are checked against the model: records
lost, reverted (an older value) or ghost (never made, or deleted by the user), records skipped (the
pulling store lacks them or holds them older than the server after a pull through an honest
proxy), and errors left that only a person could settle. A last probe changes one record from both
stores, one after the other: the second write must meet the first (If-Match), not overwrite it.
Goal: 0 lost, 0 reverted, 0 ghost, 0 skipped and none stuck.

Usage: scripts/soak.py --bin PATH [--runs N] [--seed S] [--db sqlite|URL] [--seconds LIMIT]
                       [--faults [--mode MODE]]
Prints one line per run and ends with "N passed, M failed"; exits 1 when a run failed. The seed of
a failing run reproduces it: scripts/soak.py --bin PATH --runs 1 --seed SEED [--faults].
"""

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultproxy import MODES, OTHER_TABLE, FaultProxy  # noqa: E402


class Failure(Exception):
    def __init__(self, message, outcome=None):
        super().__init__(message)
        self.outcome = outcome


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`tsync serve --no-auth` on a fixed loopback port, restartable on the same database."""

    def __init__(self, binary, db, workdir, options=()):
        self.binary = binary
        self.db = db
        self.options = list(options)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(os.path.join(workdir, "serve.log"), "ab")
        self.process = None

    def start(self):
        for _ in range(50):
            self.process = subprocess.Popen(
                [self.binary, "serve", "--no-auth", "--db", self.db, "--port", str(self.port)] + self.options,
                stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL)
            deadline = time.time() + 15
            while time.time() < deadline:
                if self.process.poll() is not None:
                    break  # the port may still be held by the killed one: try again
                try:
                    with urllib.request.urlopen(self.url + "/health", timeout=2):
                        return
                except (urllib.error.URLError, ConnectionError, OSError):
                    time.sleep(0.05)
            self.kill()
            time.sleep(0.2)
        raise Failure("tsync serve did not start")

    def kill(self):
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def records(self, table):
        """Every live record of `table`, by id, read with plain HTTP."""
        out, skip = {}, 0
        while True:
            url = f"{self.url}/tables/{table}?$orderby=id&$top=1000&$skip={skip}"
            request = urllib.request.Request(url, headers={"ZUMO-API-VERSION": "2.0.0"})
            with urllib.request.urlopen(request, timeout=30) as response:
                items = json.load(response)
            for item in items:
                if item["id"] in out:
                    raise Failure(f"the server lists {table}/{item['id']} twice")
                out[item["id"]] = item
            if len(items) < 1000:
                return out
            skip += len(items)


class Store:
    def __init__(self, binary, path, remote):
        self.binary = binary
        self.path = path
        os.makedirs(path)
        self.run("init", "--remote", remote)

    def command(self, args):
        return [self.binary, "-C", self.path] + list(args)

    def run(self, *args, stdin=None, allowed=(0,), timeout=300):
        try:
            result = subprocess.run(self.command(args), input=stdin, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Failure(f"tsync {' '.join(args)} did not end within {timeout} s")
        if result.returncode not in allowed:
            raise Failure(f"tsync {' '.join(args)}: exit {result.returncode}: {result.stderr.strip()}")
        return result

    def start(self, *args, stdin_path=None):
        stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
        return subprocess.Popen(self.command(args), stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def query(self, table):
        result = self.run("query", table)
        records = {}
        for line in result.stdout.splitlines():
            item = json.loads(line)
            records[item["id"]] = item
        return records


USER_FIELDS = ("text", "n", "done")


def user_fields(record):
    return {k: v for k, v in record.items() if k in USER_FIELDS}


class Campaign:
    # Faults that struck a command still running: SIGKILL of tsync, SIGKILL of the server.
    hits = {"client": 0, "server": 0, "insert": 0}

    def __init__(self, binary, db, seed, workdir, log):
        self.binary = binary
        self.db = db
        self.random = random.Random(seed)
        self.seed = seed
        self.workdir = workdir
        self.log = log
        self.table = f"soak{seed}"
        self.model = {}   # id -> user fields the user last gave the record (live records only)
        self.next_id = 0

    # -- local changes, mirrored in the model ------------------------------------------------

    def new_record(self):
        self.next_id += 1
        rid = f"s{self.seed}-{self.next_id:05d}"
        return rid, {"text": f"text {self.random.randrange(10**6)}", "n": self.random.randrange(1000), "done": False}

    def insert_many(self, store, count):
        lines = []
        for _ in range(count):
            rid, fields = self.new_record()
            self.model[rid] = fields
            lines.append(json.dumps(dict(fields, id=rid)))
        store.run("insert", self.table, stdin="\n".join(lines) + "\n")

    def edit(self, store, count):
        for _ in range(count):
            choice = self.random.random()
            if choice < 0.15 or not self.model:
                rid, fields = self.new_record()
                store.run("insert", self.table, json.dumps(dict(fields, id=rid)))
                self.model[rid] = fields
            elif choice < 0.30:
                rid = self.random.choice(sorted(self.model))
                store.run("delete", self.table, rid)
                del self.model[rid]
            else:
                rid = self.random.choice(sorted(self.model))
                field = self.random.choice(USER_FIELDS)
                value = {"text": f"edit {self.random.randrange(10**6)}", "n": self.random.randrange(1000),
                         "done": self.random.random() < 0.5}[field]
                store.run("update", self.table, rid, json.dumps({field: value}))
                self.model[rid][field] = value

    # -- faults -------------------------------------------------------------------------------

    def with_faults(self, server, start_command, max_delay):
        """Starts a command, then SIGKILLs it, the server, both, or neither at random moments."""
        process = start_command()
        fault = self.random.choice(["client", "server", "both", "none"])
        kill_client_at = self.random.uniform(0, max_delay)
        kill_server_at = self.random.uniform(0, max_delay)
        started = time.time()
        server_killed = False
        while process.poll() is None:
            elapsed = time.time() - started
            if fault in ("client", "both") and elapsed >= kill_client_at:
                process.kill()
                break
            if fault in ("server", "both") and not server_killed and elapsed >= kill_server_at:
                server.kill()
                server_killed = True
            if elapsed > 120:
                process.kill()
                raise Failure("a command ran for more than 120 s")
            time.sleep(0.002)
        process.wait()
        stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
        if process.returncode == -signal.SIGKILL:
            Campaign.hits["client"] += 1
        if server_killed and process.returncode != -signal.SIGKILL:
            Campaign.hits["server"] += 1
        if process.returncode not in (0, 3, -signal.SIGKILL):
            raise Failure(f"{fault} fault: exit {process.returncode}: {stderr.strip()}")
        if server_killed or server.process is None:
            server.start()
        return fault, process.returncode

    # -- the run --------------------------------------------------------------------------------

    def run(self):
        # Push through the batch route (default size, or small batches), or one request per
        # operation as against any v2 server.
        batching = self.random.choice([[], ["--max-batch", "13"], ["--max-batch", "0"]])
        self.log(f"  server options: {batching or 'default'}")
        server = Server(self.binary, self.db_for_run(), self.workdir, batching)
        server.start()
        try:
            self.run_with(server)
        finally:
            server.stop()

    def db_for_run(self):
        if self.db == "sqlite":
            return "sqlite:" + os.path.join(self.workdir, "server.db")
        return self.db

    def run_with(self, server):
        a = Store(self.binary, os.path.join(self.workdir, "a"), server.url)
        b = Store(self.binary, os.path.join(self.workdir, "b"), server.url)

        # Push with faults, several rounds, edits in between (some collapse into pending ones,
        # some queue after operations a killed push left in flight).
        self.insert_many(a, self.random.randrange(200, 600))
        self.edit(a, self.random.randrange(10, 30))
        for _ in range(self.random.randrange(2, 5)):
            fault, code = self.with_faults(server, lambda: a.start("push"), max_delay=0.3)
            self.log(f"  push with {fault} fault: exit {code}")
            self.edit(a, self.random.randrange(3, 15))
            if self.random.random() < 0.5:
                fault, code = self.with_faults(
                    server, lambda: b.start("pull", self.table, "--query-id", "all", "--page-size", "17"), max_delay=0.4)
                self.log(f"  pull with {fault} fault: exit {code}")

        # Finish the job: push until done (exit 3 only while the server restarts).
        push = a.run("push", "--json", allowed=(0, 2))
        summary = json.loads(push.stdout)
        if push.returncode != 0 or summary["failed"] or summary["conflicts"]:
            raise Failure(f"final push: exit {push.returncode}, {summary}; conflicts: {a.run('conflicts').stdout}")
        if a.run("status", "--porcelain").stdout:
            raise Failure("operations left in the queue after a clean push:\n" + a.run("status", "--porcelain").stdout)
        errors = json.loads(a.run("conflicts", "--json").stdout)
        if errors:
            raise Failure(f"error table not empty: {errors}")

        # The server holds exactly what the user did.
        on_server = server.records(self.table)
        missing = sorted(set(self.model) - set(on_server))
        extra = sorted(set(on_server) - set(self.model))
        wrong = sorted(rid for rid in set(self.model) & set(on_server) if user_fields(on_server[rid]) != self.model[rid])
        if missing or extra or wrong:
            detail = "; ".join(f"{rid}: server {user_fields(on_server[rid])} model {self.model[rid]}" for rid in wrong[:5])
            raise Failure(f"server differs from the model: missing {missing[:5]} ({len(missing)}), "
                          f"extra {extra[:5]} ({len(extra)}), wrong {len(wrong)} {detail}")

        # The pushing store agrees with the server, versions included.
        self.compare(a, on_server, "store a")

        # Pull with faults until complete; the pulling store equals the server.
        for _ in range(self.random.randrange(1, 4)):
            fault, code = self.with_faults(
                server, lambda: b.start("pull", self.table, "--query-id", "all", "--page-size", "23"), max_delay=0.3)
            self.log(f"  pull with {fault} fault: exit {code}")
        b.run("pull", self.table, "--query-id", "all")
        self.compare(b, on_server, "store b after pull")
        self.check_history(server)

        # An NDJSON insert killed part-way is all or nothing.
        self.killed_insert(server)

    # -- fault runs (--faults) ---------------------------------------------------------------------

    def run_faults(self, mode):
        # Through the batch route, or one request per operation (where a PATCH's read-back and
        # single-route answers are what the fault meets).
        batching = self.random.choice([[], ["--max-batch", "0"]])
        if mode == "if-match-stripped":
            batching = ["--max-batch", "0"]  # a batch carries its If-Match values in its body
        self.log(f"  mode {mode}, server options: {batching or 'default'}")
        server = Server(self.binary, self.db_for_run(), self.workdir, batching)
        server.start()
        proxy = FaultProxy(server.url, seed=self.seed)
        try:
            return self.fault_job(server, proxy, mode)
        finally:
            proxy.close()
            server.stop()

    def fault_job(self, server, proxy, mode):
        a = Store(self.binary, os.path.join(self.workdir, "a"), proxy.url)
        b = Store(self.binary, os.path.join(self.workdir, "b"), proxy.url)
        any_exit = tuple(range(256))
        # Records the server has, so that updates and deletes meet server copies.
        self.insert_many(a, self.random.randrange(30, 120))
        a.run("push")
        self.edit(a, self.random.randrange(15, 40))
        if mode == "link-other-table":
            # Another table of the same server, which a Link must not make this table's.
            other = Store(self.binary, os.path.join(self.workdir, "other"), server.url)
            other.run("insert", OTHER_TABLE, stdin="".join(
                json.dumps({"id": f"o{self.seed}-{i}", "text": "other table", "n": i}) + "\n" for i in range(20)))
            other.run("push")
        poisoned = None
        if mode == "5xx-one-record":
            # One item the server fails every time: it must not block the pulls, and can be parked.
            poisoned = self.random.choice(sorted(self.model))
            value = self.random.randrange(1000)
            a.run("update", self.table, poisoned, json.dumps({"n": value}))
            self.model[poisoned]["n"] = value
            proxy.poisoned = poisoned

        proxy.mode = mode
        policy = self.random.choice(["fail", "theirs", "ours"])
        seen = []
        incomplete = []
        commands = [["push", "--on-conflict", policy],
                    ["pull", self.table, "--query-id", "all", "--page-size", "7"],
                    ["pull", self.table, "--page-size", "7"]]
        if poisoned:
            commands += [["sync"], ["resolve", "--park", f"{self.table}/{poisoned}"]]
        for args in commands:
            store = a if args[0] in ("push", "sync", "resolve") else b
            result = store.run(*args, allowed=any_exit, timeout=120)
            first = (result.stderr.strip().splitlines() or [""])[0][:160]
            seen.append(f"{' '.join(args[:2])}: exit {result.returncode}" + (f" ({first})" if first else ""))
            if args[0] == "pull":
                # A pull that says it is done has everything; against a server that can be read
                # (pages capped, timestamps truncated) it must be done.
                if result.returncode == 0:
                    truth = server.records(self.table)
                    local = b.query(self.table)
                    missed = sorted(rid for rid in truth if rid not in local or user_fields(local[rid]) != user_fields(truth[rid]))
                    if missed:
                        incomplete.append(f"{' '.join(args[:4])} exit 0 without {missed[:3]} ({len(missed)})")
                elif mode in ("short-page", "truncated-us"):
                    incomplete.append(f"{' '.join(args[:4])} refused a readable server: exit {result.returncode} ({first})")
        self.log("  with the fault: " + "; ".join(seen))
        faults = proxy.faults

        proxy.mode = None
        if poisoned:
            # A parked operation is settled like any error: sent again, now that the server takes it.
            a.run("resolve", f"{self.table}/{poisoned}", "--cancel", allowed=any_exit)
        push = a.run("push", "--json", allowed=(0, 2, 3))
        errors = json.loads(a.run("conflicts", "--json").stdout)
        pending = a.run("status", "--porcelain").stdout.splitlines()
        final_pull = b.run("pull", self.table, "--query-id", "all", allowed=any_exit)
        if final_pull.returncode != 0:
            incomplete.append(f"pull --query-id all through an honest proxy: exit {final_pull.returncode} "
                              f"({final_pull.stderr.strip()[:160]})")
        on_server = server.records(self.table)

        counts = {"lost": 0, "reverted": 0, "ghost": 0, "skipped": 0}
        details = []

        def check(name, records, expected, missing="lost"):
            """`missing` names what an absent or older record is: a user's change lost (or
            reverted), or a server record a pull skipped."""
            lost = sorted(set(expected) - set(records))
            ghost = sorted(set(records) - set(expected))
            reverted = sorted(rid for rid in set(expected) & set(records) if user_fields(records[rid]) != expected[rid])
            if missing == "skipped":
                counts["skipped"] += len(lost) + len(reverted)
            else:
                counts["lost"] += len(lost)
                counts["reverted"] += len(reverted)
            counts["ghost"] += len(ghost)
            if lost or ghost or reverted:
                details.append(f"{name}: {'skipped' if missing == 'skipped' else 'lost'} {lost[:3]} ({len(lost)}), "
                               f"{'stale' if missing == 'skipped' else 'reverted'} {reverted[:3]} ({len(reverted)}), "
                               f"ghost {ghost[:3]} ({len(ghost)})")

        # What the user sees locally must be what they did; the server must hold it too unless
        # operations are stuck in the error table (then they are stuck, not lost). The pulling
        # store must hold what the server holds: a record it lacks or holds older was skipped.
        stuck = len(errors) + (len(pending) if not errors else 0)
        check("store a", a.query(self.table), self.model)
        if not stuck:
            check("server", on_server, self.model)
        check("store b", b.query(self.table), {rid: user_fields(r) for rid, r in on_server.items()}, missing="skipped")
        if not stuck:
            if mode == "if-match-stripped":
                proxy.mode = mode  # the probe's second write is the one a stripped If-Match would let overwrite
            self.blind_write_probe(a, b, server, counts, details)
        outcome = dict(counts, stuck=stuck, faults=faults, final_push=push.returncode, incomplete_pulls=len(incomplete))
        if push.returncode != 0 or stuck or any(counts.values()) or incomplete:
            raise Failure(f"mode {mode}: {outcome}; " + "; ".join(details + incomplete)
                          + (f"; errors left: {[e.get('class') for e in errors][:5]}" if errors else ""), outcome)
        return outcome

    def blind_write_probe(self, a, b, server, counts, details):
        """A record the pulling store holds is changed by the pushing store, then by the pulling
        one (another field): the second write must be checked against the first (`If-Match`), not
        overwrite it, whatever the faulty pull left in the pulling store (a record without
        version, as a rewritten page leaves it). With `--on-conflict merge` both changes end on the server."""
        local = b.query(self.table)
        shared = sorted(set(self.model) & set(local))
        if not shared:
            return
        rid = self.random.choice(shared)
        text = f"probe {self.random.randrange(10**6)}"
        a.run("update", self.table, rid, json.dumps({"text": text}))
        a.run("push", allowed=(0, 2, 3))
        self.model[rid]["text"] = text
        n = self.random.randrange(1000, 2000)
        b.run("update", self.table, rid, json.dumps({"n": n}))
        self.model[rid]["n"] = n
        b.run("push", "--on-conflict", "merge", allowed=(0, 2, 3))
        record = server.records(self.table).get(rid)
        if record is None or user_fields(record) != self.model[rid]:
            counts["reverted"] += 1
            details.append(f"blind write: {rid} is {record and user_fields(record)} on the server, "
                           f"the two writes made {self.model[rid]}")

    def compare(self, store, on_server, name):
        local = store.query(self.table)
        if set(local) != set(on_server):
            raise Failure(f"{name}: ids differ from the server: local-only {sorted(set(local) - set(on_server))[:5]}, "
                          f"server-only {sorted(set(on_server) - set(local))[:5]}")
        for rid, record in on_server.items():
            mine = local[rid]
            if user_fields(mine) != user_fields(record) or mine.get("version") != record.get("version"):
                raise Failure(f"{name}: {rid} is {mine}, the server has {record}")

    def check_history(self, server):
        """The history after kill -9s: no write without its version, no version without
        its write. The table read as it is now from the history (each record's newest version)
        must be the table itself, deleted records included, version for version and field for
        field: a write committed without its version, or a version of a write that did not commit,
        would differ."""
        def read_all(path):
            out, url = {}, f"{server.url}{path}"
            while url:
                request = urllib.request.Request(url, headers={"ZUMO-API-VERSION": "2.0.0"})
                with urllib.request.urlopen(request, timeout=30) as response:
                    items = json.load(response)
                    link = response.headers.get("Link") or ""
                for item in items:
                    out[item["id"]] = item
                url = link[1:link.index(">")] if "rel=next" in link else None
            return out

        later = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() + 60))
        live = read_all(f"/tables/{self.table}?__includeDeleted=true&$top=1000")
        latest = read_all(f"/tables/$history/{self.table}?at={later}&__includeDeleted=true&$top=1000")
        without = sorted(set(live) - set(latest))
        orphans = sorted(set(latest) - set(live))
        differ = sorted(rid for rid in set(live) & set(latest) if live[rid] != latest[rid])
        if without or orphans or differ:
            raise Failure(f"history differs from the table: writes without a version {without[:5]} ({len(without)}), "
                          f"versions without a record {orphans[:5]} ({len(orphans)}), "
                          f"newest version not the record {differ[:3]} ({len(differ)})")
        self.log(f"  history: {len(live)} records, each with its newest version")

    def killed_insert(self, server):
        c = Store(self.binary, os.path.join(self.workdir, "c"), server.url)
        count = 20000
        path = os.path.join(self.workdir, "big.ndjson")
        with open(path, "w") as f:
            for i in range(count):
                f.write(json.dumps({"id": f"big{i:06d}", "text": f"bulk {i}", "n": i}) + "\n")
        process = c.start("insert", "big", stdin_path=path)
        time.sleep(self.random.uniform(0, 0.25))
        process.kill()
        process.wait()
        if process.returncode == -signal.SIGKILL:
            Campaign.hits["insert"] += 1
        result = c.run("query", "big", "--select", "id", allowed=(0, 65))
        local = len(result.stdout.splitlines()) if result.returncode == 0 else 0
        queued = len(c.run("status", "--porcelain").stdout.splitlines())
        if local not in (0, count) or queued != local:
            raise Failure(f"killed insert left {local} of {count} records and {queued} queued operations")
        self.log(f"  killed insert: {local} of {count} records (exit {process.returncode})")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="the tsync binary")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=None, help="seed of the first run (default: random)")
    parser.add_argument("--db", default="sqlite", help="sqlite (a new file per run) or a postgres:// URL")
    parser.add_argument("--seconds", type=float, default=3600, help="stop starting runs after this long")
    parser.add_argument("--faults", action="store_true", help="fault runs through a misbehaving proxy")
    parser.add_argument("--mode", choices=sorted(MODES), action="append",
                        help="with --faults: only these modes (repeatable; default: all, one at random per run)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    if args.faults:
        # Bounded exchanges: a fault may leave an answer hanging.
        os.environ.setdefault("TSYNC_TIMEOUT", "20")
    by_mode = {}

    first = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10**6)
    started = time.time()
    passed = failed = 0
    for index in range(args.runs):
        if time.time() - started > args.seconds:
            print(f"time limit reached after {index} runs")
            break
        seed = first + index
        workdir = tempfile.mkdtemp(prefix=f"tsync-soak-{seed}-")
        lines = []
        campaign = Campaign(os.path.abspath(args.bin), args.db, seed, workdir,
                            log=(print if args.verbose else lines.append))
        run_started = time.time()
        mode = random.Random(seed).choice(args.mode or sorted(MODES)) if args.faults else None
        tally = by_mode.setdefault(mode, {"runs": 0, "failed": 0, "faults": 0, "lost": 0, "reverted": 0, "ghost": 0,
                                          "skipped": 0, "stuck": 0})
        tally["runs"] += 1
        try:
            if args.faults:
                outcome = campaign.run_faults(mode)
                tally["faults"] += outcome["faults"]
                label = f"mode {mode}: ok ({outcome['faults']} faults, "
            else:
                campaign.run()
                label = "ok ("
            passed += 1
            print(f"run {index + 1} seed {seed}: {label}{len(campaign.model)} records, {time.time() - run_started:.1f} s)",
                  flush=True)
            shutil.rmtree(workdir, ignore_errors=True)
        except Failure as failure:
            failed += 1
            tally["failed"] += 1
            for key in ("faults", "lost", "reverted", "ghost", "skipped", "stuck"):
                tally[key] += (failure.outcome or {}).get(key, 0)
            print(f"run {index + 1} seed {seed}: FAILED: {failure}", flush=True)
            for line in lines:
                print(line)
            faults = f" --faults --mode {mode}" if args.faults else ""
            print(f"  kept {workdir}; reproduce: scripts/soak.py --bin {args.bin} --db {args.db} --runs 1 --seed {seed}"
                  f"{faults}", flush=True)
    if args.faults:
        for mode, tally in sorted(by_mode.items()):
            print(f"mode {mode}: {tally['runs']} runs, {tally['failed']} failed, {tally['faults']} faults applied, "
                  f"lost {tally['lost']}, reverted {tally['reverted']}, ghost {tally['ghost']}, skipped {tally['skipped']}, "
                  f"stuck {tally['stuck']}")
        print(f"soak --faults: {passed} passed, {failed} failed")
        sys.exit(1 if failed else 0)
    hits = Campaign.hits
    print(f"faults that struck a running command: {hits['client']} tsync push/pull killed, "
          f"{hits['server']} server kills during push/pull, {hits['insert']} inserts killed")
    print(f"soak: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
