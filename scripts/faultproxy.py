"""A misbehaving HTTP proxy on loopback, between `tsync` and the real `tsync serve`.

Each fault mode is one way a server, proxy or gateway answers wrongly. While a mode is set, the
proxy applies it to the requests it concerns (and passes the others through); `mode = None`
makes it a plain proxy again, so a job can be finished against the real server and checked.

Used by scripts/soak.py --faults; it can also run alone for manual probing:
    python3 scripts/faultproxy.py UPSTREAM_URL MODE   (prints its own URL, Ctrl-C to stop)
"""

import gzip
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
    # Caches, gateways and TLS-terminating proxies that replay, rewrite or strip.
    "replayed-page": "reads answered, one time in two, with the previous answer to a read of that table (a cache)",
    "future-updatedAt": "the last record of one page comes with updatedAt in the year 9999",
    "replayed-2xx": "writes applied, the record in a 2xx answer replaced by an earlier answer's copy of that item",
    "deleted-201": "inserts applied, answered 201 with the item marked deleted",
    "old-fields": "updates applied, answered with the new version but the fields of the copy before",
    "link-other-table": "reads carry a Link to the first page of another table of the same server",
    "401-readback": "writes applied, then answered 200 without a body (a batch: 401); reads of one item answered 401",
    "no-version": "reads: records come without version",
    "over-compressed": "reads gzipped at over 50:1 (the JSON padded with whitespace)",
    "5xx-one-record": "writes of one item (the campaign names it: poisoned) answered 500, not applied",
    # Proxies that retry or drop after the server applied a write.
    "write-retried": "writes applied, sent again (a proxy retrying after its own timeout), the second answer returned",
    "answer-lost": "writes applied, one time in two, then the connection closed without an answer",
    "query-dropped": "reads of a table forwarded without their query string (a proxy that drops it)",
    "if-match-stripped": "If-Match stripped from every request (the campaign pushes one request per operation "
                         "and makes its last probe through the proxy)",
}

# The table `link-other-table` links to: the campaign puts records there.
OTHER_TABLE = "soakother"

WRITE_METHODS = ("POST", "PATCH", "DELETE")


def is_batch(path):
    return urllib.parse.urlsplit(path).path == "/tables/$batch"


def is_item_read(path):
    parts = urllib.parse.urlsplit(path).path.split("/")
    return len(parts) == 4 and parts[1] == "tables" and not parts[2].startswith("$")


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
        self.poisoned = None  # 5xx-one-record: the id of the item whose writes fail
        self.last_page = {}  # replayed-page: table path -> the previous answer to a read of it
        self.moved_clock = False  # future-updatedAt: done once
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def handle_any(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                status, headers, payload = proxy.answer(self.command, self.path, dict(self.headers), body)
                if status is None:
                    self.close_connection = True  # answer-lost: the connection ends with no answer
                    return
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client went (a timeout, a killed tsync): nothing to answer

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
        if mode == "if-match-stripped" and any(k.lower() == "if-match" for k in headers):
            headers = {k: v for k, v in headers.items() if k.lower() != "if-match"}
            self.changed()
        if mode == "query-dropped" and is_table_read(method, path) and "?" in path:
            self.changed()
            return self.forward(method, urllib.parse.urlsplit(path).path, headers, body)
        if mode == "write-retried" and write:
            self.forward(method, path, headers, body)
            self.changed()
            return self.forward(method, path, headers, body)
        if mode == "answer-lost" and write and self.random.random() < 0.5:
            self.forward(method, path, headers, body)
            self.changed()
            return None, [], b""
        if mode == "5xx-after-apply" and write:
            self.forward(method, path, headers, body)
            self.changed()
            return 500, json_type, b'{"error": "internal error"}'
        handled = self.answer_issue34(mode, method, path, headers, body)
        if handled is not None:
            return handled
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

    # -- rewritten and replayed answers ---------------------------------------------------------------------------------

    def answer_issue34(self, mode, method, path, headers, body):
        """The answer in one of the rewritten-answer modes, or None when the mode leaves this request alone."""
        write = method in WRITE_METHODS and path.startswith("/tables/")
        read = is_table_read(method, path)
        json_type = [("Content-Type", "application/json")]
        if mode == "5xx-one-record" and write and self.poisoned and self.names_item(path, body, self.poisoned):
            self.changed()
            return 500, json_type, b'{"error": "internal error"}'
        if mode == "401-readback":
            if write:
                self.forward(method, path, headers, body)
                self.changed()
                if is_batch(path):
                    return 401, json_type, b'{"error": "unauthorized"}'
                return 200, json_type, b""
            if method == "GET" and is_item_read(path):
                self.changed()
                return 401, json_type, b'{"error": "unauthorized"}'
            return None
        if mode in ("replayed-2xx", "deleted-201", "old-fields") and write:
            before = self.copies_before(method, path, headers, body) if mode != "deleted-201" else {}
            status, kept, payload = self.forward(method, path, headers, body)
            if 200 <= status < 300:
                payload = self.rewrite_items(mode, method, path, payload, before)
            return status, kept, payload
        if not read:
            return None
        if mode == "replayed-page":
            key = urllib.parse.urlsplit(path).path
            status, kept, payload = self.forward(method, path, headers, body)
            previous = self.last_page.get(key)
            if status == 200:
                self.last_page[key] = (status, kept, payload)
            if previous is not None and self.random.random() < 0.5:
                self.changed()
                return previous
            return status, kept, payload
        if mode == "future-updatedAt":
            status, kept, payload = self.forward(method, path, headers, body)
            items, rebuild = self.page_items(payload)
            if status != 200 or not items or len(items) < 2 or self.moved_clock:
                return status, kept, payload
            self.moved_clock = True
            self.changed()
            # The page's last record: the one a checkpoint is taken from.
            items[-1]["updatedAt"] = "9999-12-31T23:59:59.999Z"
            return status, kept, rebuild(items)
        if mode == "link-other-table":
            status, kept, payload = self.forward(method, path, headers, body)
            items, _ = self.page_items(payload)
            if status != 200 or not items or urllib.parse.urlsplit(path).path == f"/tables/{OTHER_TABLE}":
                return status, kept, payload
            self.changed()
            link = f"{self.url}/tables/{OTHER_TABLE}?$top={len(items)}&$skip=0&__includeDeleted=true"
            return status, [(k, v) for k, v in kept if k.lower() != "link"] + [("Link", f"<{link}>; rel=next")], payload
        if mode == "no-version":
            status, kept, payload = self.forward(method, path, headers, body)
            items, rebuild = self.page_items(payload)
            if status != 200 or not items:
                return status, kept, payload
            self.changed()
            for item in items:
                if isinstance(item, dict):
                    item.pop("version", None)
            return status, kept, rebuild(items)
        if mode == "over-compressed":
            status, kept, payload = self.forward(method, path, headers, body)
            if status != 200:
                return status, kept, payload
            self.changed()
            padded = payload + b" " * max(200_000, 60 * len(payload))
            kept = [(k, v) for k, v in kept if k.lower() != "content-encoding"] + [("Content-Encoding", "gzip")]
            return status, kept, gzip.compress(padded, 9)
        return None

    @staticmethod
    def names_item(path, body, rid):
        """Whether a write (single or batch) concerns the item `rid`."""
        parts = urllib.parse.urlsplit(path).path.split("/")
        if len(parts) == 4 and urllib.parse.unquote(parts[3]) == rid:
            return True
        try:
            value = json.loads(body) if body else None
        except ValueError:
            return False
        if isinstance(value, dict) and value.get("id") == rid:
            return True
        operations = value.get("operations") if isinstance(value, dict) else None
        return isinstance(operations, list) and any(
            isinstance(op, dict) and (op.get("id") == rid or (op.get("item") or {}).get("id") == rid) for op in operations)

    def copies_before(self, method, path, headers, body):
        """The server's copies of the items a write changes, read just before it (what a cache
        would have kept): id -> record."""
        targets = []
        parts = urllib.parse.urlsplit(path).path.split("/")
        if is_batch(path):
            try:
                operations = json.loads(body).get("operations") or []
            except (ValueError, AttributeError):
                operations = []
            targets = [(op.get("table"), op.get("id")) for op in operations
                       if isinstance(op, dict) and op.get("method") in ("PATCH", "DELETE") and op.get("id")]
        elif method in ("PATCH", "DELETE") and len(parts) == 4:
            targets = [(parts[2], urllib.parse.unquote(parts[3]))]
        copies = {}
        for table, rid in targets:
            quoted = urllib.parse.quote(rid, safe="")
            read = {k: v for k, v in headers.items() if k.lower() in ("x-zumo-auth", "authorization", "zumo-api-version")}
            status, _, payload = self.forward("GET", f"/tables/{table}/{quoted}?__includeDeleted=true", read, b"")
            if status == 200:
                try:
                    copies[rid] = json.loads(payload)
                except ValueError:
                    pass
        return copies

    def rewrite_items(self, mode, method, path, payload, before):
        """A 2xx answer's records (the single route's, or each of a batch's results) rewritten."""
        try:
            value = json.loads(payload)
        except ValueError:
            return payload
        results = value.get("results") if isinstance(value, dict) and is_batch(path) else None
        if isinstance(results, list):
            for result in results:
                if isinstance(result, dict) and isinstance(result.get("item"), dict) and 200 <= int(result.get("status") or 0) < 300:
                    item = result["item"]
                    result["item"] = self.rewritten(mode, result.get("status"), item, before.get(item.get("id")))
        elif isinstance(value, dict) and isinstance(value.get("id"), str):
            value = self.rewritten(mode, 201 if method == "POST" else 200, value, before.get(value["id"]))
        return json.dumps(value).encode()

    def rewritten(self, mode, status, item, before):
        if mode == "deleted-201" and status == 201:
            self.changed()
            return dict(item, deleted=True)
        if mode == "replayed-2xx" and before is not None and before != item:
            self.changed()
            return before
        if mode == "old-fields" and status == 200 and before is not None and not item.get("deleted"):
            system = ("id", "version", "updatedAt", "createdAt", "deleted")
            old = {k: v for k, v in before.items() if k not in system}
            if old != {k: v for k, v in item.items() if k not in system}:
                self.changed()
                return dict({k: v for k, v in item.items() if k in system}, **old)
        return item

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
