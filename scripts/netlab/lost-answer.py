#!/usr/bin/env python3
"""A lost answer, then another user's write, then a merge: one scenario of the network lab, exactly.

Store a changes field `a` of a shared record and pushes; the wire lets the request through and
cuts the way back (the server applies the write, a never hears so: exit 3, the operation stays in
flight). Store b changes field `b` of the same record and pushes with merge. Store a changes `a`
again and runs `push --on-conflict merge`: each field has one writer, so the merge must give
{a: 2, b: 1} on the server, nothing left in a's error table.

Usage (root): scripts/netlab/lost-answer.py --bin TSYNC
Prints what each step did; exit 0 when the server ends with {a: 2, b: 1} and a has no error,
1 otherwise, 77 where the lab cannot run.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from campaign import SERVER_ADDRESS, Lab, Unavailable, http_get  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True)
    binary = os.path.abspath(parser.parse_args().bin)
    work = tempfile.mkdtemp(prefix="tsync-lost-answer-")
    lab = Lab(2, 1, work, "tun")
    try:
        lab.start()
    except Unavailable as reason:
        print(f"lost-answer: skipped: {reason}")
        lab.close()
        sys.exit(77)
    env = dict(os.environ, TSYNC_TIMEOUT="3")

    def tsync(k, store, *args):
        result = subprocess.run(lab.exec(k) + [binary, "-C", os.path.join(work, store)] + list(args),
                                capture_output=True, text=True, env=env, timeout=60)
        print(f"{store}: tsync {' '.join(args)}: exit {result.returncode} {result.stdout.strip()} {result.stderr.strip()}")
        return result

    def server():
        return json.loads(http_get(lab.server_ns, 8080, "/tables/t")[1])

    serve = subprocess.Popen(lab.exec(0) + [binary, "serve", "--db", f"sqlite:{work}/server.db", "--host", "0.0.0.0",
                                            "--port", "8080", "--no-auth", "--insecure"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                if http_get(lab.server_ns, 8080, "/health", timeout=1)[0] == 200:
                    break
            except OSError:
                time.sleep(0.1)
        for k, store in ((1, "a"), (2, "b")):
            os.makedirs(os.path.join(work, store))
            tsync(k, store, "init", "--remote", f"http://{SERVER_ADDRESS}:8080")
        tsync(1, "a", "insert", "t", '{"id": "x", "a": 0, "b": 0}')
        tsync(1, "a", "push")
        tsync(2, "b", "pull", "t", "--query-id", "all")
        tsync(1, "a", "update", "t", "x", '{"a": 1}')
        lab.control(cmd="cut", link=1, match="POST /tables", seconds=5)
        tsync(1, "a", "push", "--on-conflict", "merge")
        print(f"server after the lost answer: {server()[0]}")
        time.sleep(5)
        tsync(2, "b", "update", "t", "x", '{"b": 1}')
        tsync(2, "b", "push", "--on-conflict", "merge")
        tsync(1, "a", "update", "t", "x", '{"a": 2}')
        tsync(1, "a", "push", "--on-conflict", "merge")
        errors = json.loads(tsync(1, "a", "conflicts", "--json").stdout)
        final = server()[0]
        print(f"server at the end: {final}")
        ok = final.get("a") == 2 and final.get("b") == 1 and not errors
        print("lost-answer: " + ("ok" if ok else "FAILED: the merge did not give {a: 2, b: 1} with no error left"))
        sys.exit(0 if ok else 1)
    finally:
        serve.kill()
        serve.wait()
        lab.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
