"""A misbehaving HTTP proxy on loopback, between `tsync` and the real `tsync serve` (issue 18).

Each fault mode is one way a server, proxy or gateway answers wrongly. While a mode is set, the
proxy applies it to the requests it concerns (and passes the others through); `mode = None`
makes it a plain proxy again, so a job can be finished against the real server and checked.

Used by scripts/soak.py --faults; it can also run alone for manual probing:
    python3 scripts/faultproxy.py UPSTREAM_URL MODE   (prints its own URL, Ctrl-C to stop)
"""

import http.client
import json
import random
import re
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Mode -> what it does. "Applied" means the request reached the server first.
MODES = {
    "batch-404": "POST /tables/$batch answered 404 {\"error\": \"not found\"}, not applied",
    "bare-404-writes": "no batch route; every single write answered 404 with no body, not applied",
    "batch-shuffled": "batch applied, its results shuffled or reversed",
    "empty-200": "writes answered 200 with an empty body (applied or not, at random per request)",
    "html-200": "writes answered 200 with an HTML page labelled JSON, not applied",
    "other-id": "writes applied, the record in the answer (200/409/412, batch items too) carries another id",
    "5xx-after-apply": "writes applied, then answered 500",
    "retry-after": "writes answered 429 or 503 with Retry-After: 1, not applied",
    "captive-302": "every request answered 302 to a login page, not forwarded",
    "short-page": "reads capped at 5 records, without Link",
    "truncated-us": "reads act as a server that keeps microseconds and sends milliseconds: a run of "
                    "equal updatedAt comes in a hidden order and \"after (T, id)\" brings the run at T again",
    "ignored-skip": "reads ignore $skip, shuffle their order and send no Link",
}

WRITE_METHODS = ("POST", "PATCH", "DELETE")


def is_batch(path):
    return urllib.parse.urlsplit(path).path == "/tables/$batch"


def is_table_read(method, path):
    parts = urllib.parse.urlsplit(path).path.split("/")
    return method == "GET" and len(parts) == 3 and parts[1] == "tables" and not parts[2].startswith("$")


class FaultProxy:
    def __init__(self, upstream, seed=0):
        split = urllib.parse.urlsplit(upstream)
        self.upstream_host = split.hostname
        self.upstream_port = split.port
        self.mode = None
        self.random = random.Random(seed)
        self.lock = threading.Lock()
        self.faults = 0  # answers the proxy changed
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def handle_any(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                status, headers, payload = proxy.answer(self.command, self.path, dict(self.headers), body)
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = handle_any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    # -- forwarding -------------------------------------------------------------------------------

    def forward(self, method, path, headers, body):
        connection = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=60)
        try:
            sent = {k: v for k, v in headers.items() if k.lower() not in ("connection", "content-length", "transfer-encoding")}
            connection.request(method, path, body=body if body else None, headers=sent)
            response = connection.getresponse()
            payload = response.read()
            kept = [(k, v) for k, v in response.getheaders()
                    if k.lower() not in ("content-length", "connection", "transfer-encoding", "keep-alive")]
            return response.status, kept, payload
        finally:
            connection.close()

    def changed(self):
        with self.lock:
            self.faults += 1

    def answer(self, method, path, headers, body):
        mode = self.mode
        write = method in WRITE_METHODS and path.startswith("/tables/")
        json_type = [("Content-Type", "application/json")]
        if mode == "captive-302":
            self.changed()
            return 302, [("Location", "http://portal.invalid/login"), ("Content-Type", "text/html")], b"<html>log in</html>"
        if mode == "batch-404" and method == "POST" and is_batch(path):
            self.changed()
            return 404, json_type, b'{"error": "not found"}'
        if mode == "bare-404-writes":
            if method == "GET" and is_batch(path):
                return 404, json_type, b'{"error": "no batch route"}'
            if write:
                self.changed()
                return 404, [], b""
        if mode == "html-200" and write:
            self.changed()
            return 200, json_type, b"<html><body>Welcome to the network</body></html>"
        if mode == "retry-after" and write:
            self.changed()
            status = self.random.choice([429, 503])
            return status, json_type + [("Retry-After", "1")], b'{"error": "slow down"}'
        if mode == "empty-200" and write:
            self.changed()
            if self.random.random() < 0.5:
                self.forward(method, path, headers, body)
            return 200, json_type, b""
        if mode == "5xx-after-apply" and write:
            self.forward(method, path, headers, body)
            self.changed()
            return 500, json_type, b'{"error": "internal error"}'
        if mode == "short-page" and is_table_read(method, path):
            status, kept, payload = self.forward(method, self.rewrite_query(path, top_cap=5), headers, body)
            self.changed()
            return status, [(k, v) for k, v in kept if k.lower() != "link"], payload
        if mode == "ignored-skip" and is_table_read(method, path):
            status, kept, payload = self.forward(method, self.rewrite_query(path, drop_skip=True), headers, body)
            return status, [(k, v) for k, v in kept if k.lower() != "link"], self.shuffled_page(payload)
        if mode == "truncated-us" and is_table_read(method, path):
            return self.truncated_read(method, path, headers, body)
        status, kept, payload = self.forward(method, path, headers, body)
        if mode == "batch-shuffled" and method == "POST" and is_batch(path) and status == 200:
            return status, kept, self.shuffled_results(payload)
        if mode == "other-id" and write and status in (200, 201, 409, 412):
            return status, kept, self.other_id(payload)
        return status, kept, payload

    # -- rewriting ------------------------------------------------------------------------------

    @staticmethod
    def rewrite_query(path, top_cap=None, drop_skip=False, filter_text=None):
        split = urllib.parse.urlsplit(path)
        items = urllib.parse.parse_qsl(split.query, keep_blank_values=True)
        out = []
        for name, value in items:
            if name == "$top" and top_cap is not None:
                value = str(min(int(value), top_cap))
            if name == "$skip" and drop_skip:
                continue
            if name == "$filter" and filter_text is not None:
                value = filter_text
            out.append((name, value))
        if top_cap is not None and not any(name == "$top" for name, _ in out):
            out.append(("$top", str(top_cap)))
        return urllib.parse.urlunsplit(("", "", split.path, urllib.parse.urlencode(out, quote_via=urllib.parse.quote), ""))

    def page_items(self, payload):
        try:
            value = json.loads(payload)
        except ValueError:
            return None, None
        if isinstance(value, list):
            return value, lambda items: json.dumps(items).encode()
        if isinstance(value, dict) and isinstance(value.get("results"), list):
            return value["results"], lambda items: json.dumps(dict(value, results=items)).encode()
        return None, None

    def shuffled_page(self, payload):
        items, rebuild = self.page_items(payload)
        if items is None:
            return payload
        self.changed()
        self.random.shuffle(items)
        return rebuild(items)

    def shuffled_results(self, payload):
        try:
            value = json.loads(payload)
        except ValueError:
            return payload
        results = value.get("results") if isinstance(value, dict) else None
        if not isinstance(results, list) or len(results) < 2:
            return payload
        self.changed()
        if self.random.random() < 0.5:
            results.reverse()
        else:
            self.random.shuffle(results)
        return json.dumps(value).encode()

    def other_id(self, payload):
        try:
            value = json.loads(payload)
        except ValueError:
            return payload

        def swap(item):
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                item["id"] = item["id"] + "-other"
                self.changed()

        if isinstance(value, dict) and isinstance(value.get("results"), list):
            for result in value["results"]:
                if isinstance(result, dict):
                    swap(result.get("item"))
        else:
            swap(value)
        return json.dumps(value).encode()

    def truncated_read(self, method, path, headers, body):
        """A server with hidden sub-millisecond digits: "after (T, I)" is read as "updatedAt ge T"
        (the run at T comes again), and each run of equal updatedAt is put in an order the ids do
        not give (a hash of the id stands for the hidden digits)."""
        split = urllib.parse.urlsplit(path)
        query = dict(urllib.parse.parse_qsl(split.query, keep_blank_values=True))
        filter_text = query.get("$filter")
        if filter_text:
            match = re.search(r"updatedAt ge (datetimeoffset'[^']*') and \(\(updatedAt gt \1\) or \(updatedAt eq \1 and id gt '(?:[^']|'')*'\)\)",
                              filter_text)
            if match:
                filter_text = filter_text.replace(match.group(0), f"updatedAt ge {match.group(1)}")
                path = self.rewrite_query(path, filter_text=filter_text)
        status, kept, payload = self.forward(method, path, headers, body)
        items, rebuild = self.page_items(payload)
        if status != 200 or items is None:
            return status, kept, payload
        items.sort(key=lambda item: (item.get("updatedAt", ""), hash(("hidden", item.get("id")))))
        self.changed()
        return status, kept, rebuild(items)


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in MODES:
        print(__doc__)
        print("modes:\n" + "\n".join(f"  {name}: {what}" for name, what in MODES.items()))
        sys.exit(64)
    proxy = FaultProxy(sys.argv[1])
    proxy.mode = sys.argv[2]
    print(proxy.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        proxy.close()


if __name__ == "__main__":
    main()
