import Foundation
import Testing
import TSyncModel

/// Answers that a cache, gateway or TLS-terminating proxy replays, rewrites or strips, in front of
/// the real `tsync serve`: none may lose, revert or skip a record while tsync exits 0.
/// A `LossyProxy` answers chosen requests in the server's place with bodies taken from the server
/// itself, then rewritten.
@Suite(.serialized) struct RewrittenAnswerTests {
    /// The body of a page as the server answers it to a plain read (`$orderby`, `$top`).
    private static func page(_ server: ServeFixture, _ table: String, orderBy: String, top: Int) async throws -> String {
        let reply = try await HTTP.send("GET", server.url + "/tables/\(table)?$orderby=\(orderBy)&$top=\(top)&__includeDeleted=true")
        #expect(reply.status == 200, "\(reply)")
        return reply.body
    }

    /// A table `todo` on the server whose rows are exactly `rows` (id, updatedAt), written with
    /// SQL so that several share one timestamp.
    private static func rows(_ server: ServeFixture, _ rows: [(String, String)]) async throws {
        let values = rows.map { id, time in "('\(id)', '\(time)', '\(time)', 'v-\(id)', 0, NULL, '{\"text\":\"\(id)\"}')" }
        try await server.sql(
            "INSERT INTO t_todo (id, created_at, updated_at, version, deleted, owner, body) VALUES \(values.joined(separator: ", "));")
    }

    /// An empty table `todo` on the server (a write creates it).
    private static func emptyTable(_ server: ServeFixture) async throws {
        let writer = try await TSyncSandbox(remote: server.url)
        try await writer.ok(["insert", "todo", #"{"id": "seed"}"#])
        try await writer.ok(["push"])
        try await server.sql("DELETE FROM t_todo;")
    }

    /// A store whose remote is a `LossyProxy` in front of a server that takes batches or not.
    private static func storeBehindProxy(batched: Bool) async throws -> (ServeFixture, LossyProxy, TSyncSandbox) {
        let server = try await ServeFixture(options: batched ? [] : ["--max-batch", "0"])
        let proxy = try LossyProxy(upstream: server.url)
        return (server, proxy, try await TSyncSandbox(remote: proxy.url))
    }

    private static func ids(_ store: TSyncSandbox, _ table: String = "todo") async throws -> [String] {
        try JSONOutput.array(try await store.ok(["query", table, "--json"])).compactMap { $0.objectValue?["id"]?.stringValue }.sorted()
    }

    // MARK: - 34.1

    /// 34.1: a replayed page that repeats the checkpoint's own run of equal timestamps looks like a
    /// server with finer timestamps than it sends. The pull used to walk on by `$skip` past real
    /// records (here `c` and `d`), for good. It asks again before such a walk: the real answer
    /// comes, and nothing is skipped.
    @Test func aReplayedPageAtTheCheckpointSkipsNothing() async throws {
        let server = try await ServeFixture()
        try await Self.emptyTable(server)
        try await Self.rows(server, [("a", "2020-01-01T00:00:00.000Z"), ("b", "2020-01-01T00:00:00.000Z")])
        let proxy = try LossyProxy(upstream: server.url)
        let reader = try await TSyncSandbox(remote: proxy.url)
        try await reader.ok(["pull", "todo", "--query-id", "all", "--page-size", "2"])
        let replay = try await Self.page(server, "todo", orderBy: "updatedAt,id", top: 2)
        try await Self.rows(
            server, [("c", "2020-01-01T00:00:01.000Z"), ("d", "2020-01-01T00:00:01.000Z"), ("e", "2020-01-01T00:00:01.000Z")])

        proxy.replace("GET", "/tables/todo", status: 200, contentType: "application/json", body: replay, forward: false)
        let pull = try await reader.run(["pull", "todo", "--query-id", "all", "--page-size", "2"])
        #expect(pull.status == 0, "\(pull)")
        #expect(proxy.droppedCount == 1, "the replay was sent")
        #expect(try await Self.ids(reader) == ["a", "b", "c", "d", "e"])
        try await reader.ok(["pull", "todo", "--query-id", "all", "--page-size", "2"])
        #expect(try await Self.ids(reader) == ["a", "b", "c", "d", "e"])
    }

    // MARK: - 34.2

    /// 34.2: one record stamped in the future (a rewritten page: year 9999, or a day ahead) used
    /// to move the checkpoint there, and every later pull received nothing, exit 0. A warning
    /// names it, the checkpoint never takes its stamp, and the walk goes on from the record before
    /// it, so the pull reads the record's real copy (the proxy rewrote one answer) and the next
    /// pull brings what was written since.
    @Test(arguments: ["9999-12-31T23:59:59.999Z", "a day ahead"])
    func aRecordFromTheFutureDoesNotMoveTheCheckpoint(stamp: String) async throws {
        let server = try await ServeFixture()
        let writer = try await TSyncSandbox(remote: server.url)
        try await writer.ok(["insert", "todo", #"{"id": "a", "text": "a"}"#])
        try await writer.ok(["push"])
        try await writer.ok(["insert", "todo", #"{"id": "b", "text": "b"}"#])
        try await writer.ok(["push"])
        let future =
            stamp == "a day ahead" ? Timestamp(millisecondsSinceEpoch: Timestamp.now().millisecondsSinceEpoch + 86_400_000).iso8601 : stamp
        guard case .array(var records) = try JSONParser.parse(try await Self.page(server, "todo", orderBy: "updatedAt,id", top: 10)),
            records.count == 2, case .object(var last) = records[1]
        else {
            Issue.record("the server's page is not two records")
            return
        }
        last["updatedAt"] = .string(future)
        records[1] = .object(last)
        let proxy = try LossyProxy(upstream: server.url)
        proxy.replace(
            "GET", "/tables/todo", status: 200, contentType: "application/json", body: JSONSerializer.string(.array(records)),
            forward: false)
        let reader = try await TSyncSandbox(remote: proxy.url)
        let pull = try await reader.run(["pull", "todo", "--query-id", "all"])
        #expect(pull.status == 0, "\(pull)")
        #expect(pull.stderr.contains("warning:") && pull.stderr.contains("todo/b") && pull.stderr.contains(future), "\(pull.stderr)")
        #expect(try await Self.ids(reader) == ["a", "b"], "the record is written")
        let queries = try JSONOutput.array(try await reader.ok(["queries", "--json"]))
        let checkpoint = queries.first?.objectValue?["checkpoint"]?.objectValue
        #expect(checkpoint?["id"] == "b" && checkpoint?["updatedAt"] != .string(future), "the checkpoint never takes the stamp: \(queries)")
        #expect(
            try JSONOutput.object(try await reader.ok(["get", "todo", "b", "--json"]))["updatedAt"] != .string(future),
            "the walk went on and read b's real copy")

        try await writer.ok(["insert", "todo", #"{"id": "c", "text": "c"}"#])
        try await writer.ok(["push"])
        let again = try await reader.run(["pull", "todo", "--query-id", "all"])
        #expect(again.status == 0, "\(again)")
        #expect(try await Self.ids(reader) == ["a", "b", "c"], "later pulls still receive")
        #expect(try JSONOutput.object(try await reader.ok(["get", "todo", "b", "--json"]))["updatedAt"] != .string(future))
    }

    // MARK: - 34.4

    /// 34.4: a next-page link to another table of the same server, or one that changes the query
    /// asked, would store other records as this table's: refused (exit 1), nothing of them stored.
    @Test(arguments: [
        "/tables/secret?$orderby=id&$top=2&$skip=0&__includeDeleted=true",
        "/tables/todo?$orderby=id&$top=2&$skip=2&__includeDeleted=true&$select=id",
        "/tables/todo?$orderby=id&$top=2&$skip=2",
    ])
    func aNextLinkToAnotherReadIsRefused(link: String) async throws {
        let server = try await ServeFixture()
        let writer = try await TSyncSandbox(remote: server.url)
        for id in ["a", "b", "c"] { try await writer.ok(["insert", "todo", #"{"id": "\#(id)", "text": "\#(id)"}"#]) }
        for id in ["s1", "s2"] { try await writer.ok(["insert", "secret", #"{"id": "\#(id)", "text": "secret"}"#]) }
        try await writer.ok(["push"])
        let first = try await Self.page(server, "todo", orderBy: "id", top: 2)
        let proxy = try LossyProxy(upstream: server.url)
        proxy.replace(
            "GET", "/tables/todo", status: 200, contentType: "application/json", body: first, forward: false,
            headers: [("Link", "<\(proxy.url)\(link)>; rel=next")])
        let reader = try await TSyncSandbox(remote: proxy.url)
        let pull = try await reader.run(["pull", "todo", "--page-size", "2"])
        #expect(pull.status == 1, "\(pull)")
        #expect(pull.stderr.contains(link.hasPrefix("/tables/secret") ? "reads another table" : "changes the query"), "\(pull.stderr)")
        let held = try await reader.run(["query", "todo", "--json"])
        let ids = held.status == 0 ? try JSONOutput.array(held.stdout).compactMap { $0.objectValue?["id"]?.stringValue } : []
        #expect(!ids.contains("s1") && !ids.contains("s2"), "\(ids)")
    }

    /// A full page whose link names another origin (a TLS-terminating proxy
    /// in front of a server that writes `http://`) does not stop `pull --query-id`, which pages
    /// by checkpoint and needs no link; a pull that follows links names the scheme it refuses.
    @Test func aForeignLinkDoesNotStopAnIncrementalPull() async throws {
        let server = try await ServeFixture()
        let writer = try await TSyncSandbox(remote: server.url)
        for id in ["a", "b", "c"] { try await writer.ok(["insert", "todo", #"{"id": "\#(id)", "text": "\#(id)"}"#]) }
        try await writer.ok(["push"])
        let first = try await Self.page(server, "todo", orderBy: "updatedAt,id", top: 2)
        let proxy = try LossyProxy(upstream: server.url)
        let https = proxy.url.replacingOccurrences(of: "http://", with: "https://")
        let link = "<\(https)/tables/todo?$orderby=updatedAt%2Cid&$top=2&$skip=2&__includeDeleted=true>; rel=next"
        proxy.replace(
            "GET", "/tables/todo", status: 200, contentType: "application/json", body: first, forward: false, headers: [("Link", link)])
        let reader = try await TSyncSandbox(remote: proxy.url)
        let pull = try await reader.run(["pull", "todo", "--query-id", "all", "--page-size", "2"])
        #expect(pull.status == 0, "\(pull)")
        #expect(try await Self.ids(reader) == ["a", "b", "c"])

        proxy.replace(
            "GET", "/tables/todo", status: 200, contentType: "application/json", body: first, forward: false, headers: [("Link", link)])
        let other = try await TSyncSandbox(remote: proxy.url)
        let plain = try await other.run(["pull", "todo", "--page-size", "2"])
        #expect(plain.status == 1, "\(plain)")
        #expect(
            plain.stderr.contains("https://, while the remote is http://") && !plain.stderr.contains("another server"), "\(plain.stderr)")
    }

    // MARK: - 34.3

    /// 34.3: a success that carries the item is compared with what was sent. A cache replaying an
    /// earlier answer (another version, the old fields) used to revert the local record and drop
    /// the update; an insert answered 201 with the item deleted used to make it vanish locally.
    /// Neither shows the write stored: read back, found not applied, the operation stays queued
    /// (exit 3), and past the proxy it reaches the server.
    @Test(arguments: [("update", false), ("update", true), ("insert", false), ("insert", true)])
    func aSuccessThatIsNotWhatWasSentIsReadBack(kind: String, batched: Bool) async throws {
        let (server, proxy, store) = try await Self.storeBehindProxy(batched: batched)
        let item: String
        if kind == "update" {
            try await store.ok(["insert", "todo", #"{"id": "a", "text": "first"}"#])
            try await store.ok(["push"])
            let earlier = try #require(try await server.record("todo", "a"))  // the answer a cache keeps
            try await store.ok(["update", "todo", "a", "--set", "text=second"])
            try await store.ok(["push"])
            try await store.ok(["update", "todo", "a", "--set", "text=third"])
            item = JSONSerializer.string(.object(earlier))
        } else {
            try await store.ok(["insert", "todo", #"{"id": "a", "text": "third"}"#])
            item =
                #"{"id": "a", "text": "third", "version": "v9", "updatedAt": "2026-01-01T00:00:00.000Z", "createdAt": "2026-01-01T00:00:00.000Z", "deleted": true}"#
        }
        let status = kind == "update" ? 200 : 201
        if batched {
            proxy.replace(
                "POST", "/tables/$batch", status: 200, contentType: "application/json",
                body: #"{"results": [{"index": 0, "id": "a", "status": \#(status), "item": \#(item)}]}"#, forward: false)
        } else {
            proxy.replace(
                kind == "update" ? "PATCH" : "POST", kind == "update" ? "/tables/todo/a" : "/tables/todo", status: status,
                contentType: "application/json", body: item, forward: false)
        }
        let push = try await store.run(["push"])
        #expect(push.status == 3, "\(push)")
        #expect(push.stderr.contains("not what was sent"), "\(push.stderr)")
        #expect(try await store.ok(["status", "--porcelain"]) == (kind == "update" ? "M\ttodo\ta\n" : "A\ttodo\ta\n"))
        #expect(try JSONOutput.object(try await store.ok(["get", "todo", "a", "--json"]))["text"] == "third", "the local record stays")
        #expect(try await store.ok(["conflicts", "--json"]) == "[]\n")
        let again = try await store.run(["push"])
        #expect(again.status == 0, "\(again)")
        #expect(try await server.record("todo", "a")?["text"] == "third")
    }

    // MARK: - 34.5

    /// 34.5: a write the server applied, then a 401 (to the read-back of a write answered without
    /// its record, or to the batch, from an intermediary): the write used to go back to pending,
    /// the next edit collapsed into it and met a 412 against tsync's own write, which
    /// `--on-conflict theirs` settled by dropping the edit. It stays in flight: the edit queues
    /// behind it, and once logged in (here: past the proxy) both reach the server.
    @Test(arguments: [false, true])
    func aWriteAppliedThenAnswered401StaysInFlight(batched: Bool) async throws {
        let (server, proxy, store) = try await Self.storeBehindProxy(batched: batched)
        try await store.ok(["insert", "todo", #"{"id": "a", "text": "old"}"#])
        try await store.ok(["push"])
        try await store.ok(["update", "todo", "a", "--set", "text=new"])
        let refused = #"{"error": "the token expired"}"#
        if batched {
            proxy.replace("POST", "/tables/$batch", status: 401, contentType: "application/json", body: refused, forward: true)
        } else {
            proxy.replace("PATCH", "/tables/todo/a", status: 200, contentType: "application/json", body: "", forward: true)
            proxy.replace("GET", "/tables/todo/a", status: 401, contentType: "application/json", body: refused, forward: false)
        }
        let push = try await store.run(["push"])
        #expect(push.status == 4, "\(push)")
        #expect(try await server.record("todo", "a")?["text"] == "new", "the server applied it")
        try await store.ok(["update", "todo", "a", "--set", "text=newer"])
        #expect(try await store.ok(["status", "--porcelain"]) == "M\ttodo\ta\nM\ttodo\ta\n", "the edit queued behind the write in flight")
        try await store.ok(["remote", server.url])
        let again = try await store.run(["push", "--on-conflict", "theirs", "--json"])
        #expect(again.status == 0, "\(again)")
        #expect(JSONOutput.int(try JSONOutput.object(again.stdout)["conflicts"]) == 0, "\(again.stdout)")
        #expect(try await server.record("todo", "a")?["text"] == "newer")
        #expect(try JSONOutput.object(try await store.ok(["get", "todo", "a", "--json"]))["text"] == "newer")
    }

    // MARK: - 34.6

    /// 34.6: a page record without `version` would make the next update of it a blind overwrite
    /// (no `If-Match`), and another writer's change would be lost. Such a page is refused, nothing
    /// of it written.
    @Test func aPageRecordWithoutAVersionIsRefused() async throws {
        let server = try await ServeFixture()
        let writer = try await TSyncSandbox(remote: server.url)
        try await writer.ok(["insert", "todo", #"{"id": "a", "text": "old"}"#])
        try await writer.ok(["push"])
        let stripped =
            #"[{"id": "a", "text": "old", "createdAt": "2026-01-01T00:00:00.000Z", "updatedAt": "2026-01-01T00:00:00.000Z", "deleted": false}]"#
        try await writer.ok(["update", "todo", "a", "--set", "text=theirs"])
        try await writer.ok(["push"])
        let proxy = try LossyProxy(upstream: server.url)
        proxy.replace("GET", "/tables/todo", status: 200, contentType: "application/json", body: stripped, forward: false)
        let reader = try await TSyncSandbox(remote: proxy.url)
        let pull = try await reader.run(["pull", "todo"])
        #expect(pull.status == 1, "\(pull)")
        #expect(pull.stderr.contains("without a version"), "\(pull.stderr)")
        if try await reader.run(["get", "todo", "a"]).status == 0 {
            try await reader.ok(["update", "todo", "a", "--set", "text=mine"])
            _ = try await reader.run(["push"])
        }
        #expect(try await server.record("todo", "a")?["text"] == "theirs", "no blind overwrite")
    }

    /// A proxy that strips `If-Match` from the requests it passes would make an update without
    /// the batch route a blind overwrite: another writer's change, made since this store's copy,
    /// would be gone with no conflict. The update's version also goes in its body, which the
    /// server checks when no `If-Match` came: the update meets the other change (409).
    @Test func anUpdateBehindAProxyThatStripsIfMatchMeetsTheOtherChange() async throws {
        let server = try await ServeFixture(options: ["--max-batch", "0"])
        let other = try await TSyncSandbox(remote: server.url)
        try await other.ok(["insert", "todo", #"{"id": "a", "text": "old", "n": 1}"#])
        try await other.ok(["push"])
        let proxy = try LossyProxy(upstream: server.url)
        proxy.stripRequestHeader("If-Match")
        let store = try await TSyncSandbox(remote: proxy.url)
        try await store.ok(["pull", "todo"])
        try await other.ok(["update", "todo", "a", "--set", "text=theirs"])
        try await other.ok(["push"])
        try await store.ok(["update", "todo", "a", "--set", "n=2"])
        let push = try await store.run(["push"])
        #expect(proxy.strippedFromRequests >= 1, "the PATCH went without If-Match")
        #expect(push.status == 2, "a conflict, not an overwrite: \(push)")
        #expect(try await server.record("todo", "a")?["text"] == "theirs", "the other change stays")
        let settled = try await store.run(["resolve", "--all", "--merge", "--push"])
        #expect(settled.status == 0, "\(settled)")
        let merged = try await server.record("todo", "a")
        #expect(merged?["text"] == "theirs" && merged?["n"] == 2, "both changes: \(String(describing: merged))")
    }

    // MARK: - Another request's answer

    /// Six records `a`…`f` at six times, on the server.
    private static func sixRecords(_ server: ServeFixture) async throws {
        try await Self.emptyTable(server)
        try await Self.rows(server, ["a", "b", "c", "d", "e", "f"].enumerated().map { ($1, "2020-01-01T00:00:0\($0).000Z") })
    }

    /// A page of the records from `first` on, as the server answers it: what a cache keeps.
    private static func page(_ server: ServeFixture, from first: Int) async throws -> String {
        let reply = try await HTTP.send(
            "GET", server.url + "/tables/todo?$orderby=updatedAt,id&$top=2&$skip=\(first)&__includeDeleted=true")
        #expect(reply.status == 200, "\(reply)")
        return reply.body
    }

    /// A cache that keys answers by path hands a read the answer to a later page (the soak's
    /// replayed-page fault: the next page, asked ahead, answered first). Its records come after
    /// the checkpoint, in order: the pull used to write them and move its checkpoint past the
    /// records between, for good, exit 0. The answer echoes another request's token: it is not
    /// taken, the read is asked again, and nothing is skipped.
    @Test(arguments: ["the first read", "a read after a checkpoint"])
    func aLaterPageHandedToAReadSkipsNothing(read: String) async throws {
        let server = try await ServeFixture()
        try await Self.sixRecords(server)
        let proxy = try LossyProxy(upstream: server.url)
        // The first read (no checkpoint, no filter) is handed c and d; the read after a and b, e and f.
        let first = read == "the first read"
        proxy.replace(
            "GET", first ? "/tables/todo?%24orderby" : "/tables/todo?%24filter", status: 200, contentType: "application/json",
            body: try await Self.page(server, from: first ? 2 : 4), forward: false,
            headers: [("X-TSync-Echo", "0123456789abcdef0123456789abcdef")])
        let reader = try await TSyncSandbox(remote: proxy.url)
        let pull = try await reader.run(["pull", "todo", "--query-id", "all", "--page-size", "2"])
        #expect(pull.status == 0, "\(pull)")
        #expect(proxy.droppedCount == 1, "the cache's answer was sent")
        #expect(try await Self.ids(reader) == ["a", "b", "c", "d", "e", "f"])
    }

    /// A cache that hands every read another's answer: the pull asks each read three times, then
    /// stops (exit 3) with nothing of those answers written and its checkpoint where its records
    /// are complete; the next pull, past the cache, brings the rest.
    @Test func aReadAlwaysAnsweredWithAnothersStopsWithNothingTaken() async throws {
        let server = try await ServeFixture()
        try await Self.sixRecords(server)
        let proxy = try LossyProxy(upstream: server.url)
        proxy.replace(
            "GET", "/tables/todo?%24filter", status: 200, contentType: "application/json", body: try await Self.page(server, from: 4),
            forward: false, count: 100, headers: [("X-TSync-Echo", "0123456789abcdef0123456789abcdef")])
        let reader = try await TSyncSandbox(remote: proxy.url)
        let pull = try await reader.run(["pull", "todo", "--query-id", "all", "--page-size", "2"])
        #expect(pull.status == 3, "\(pull)")
        #expect(pull.stderr.contains("with the answer to another request 3 times"), "\(pull.stderr)")
        #expect(pull.stderr.contains("X-TSync-Echo") && pull.stderr.contains("nothing of it was taken"), "\(pull.stderr)")
        #expect(try await Self.ids(reader) == ["a", "b"], "the first page, checked, is written; nothing of the cache's")
        try await reader.ok(["remote", server.url])
        try await reader.ok(["pull", "todo", "--query-id", "all", "--page-size", "2"])
        #expect(try await Self.ids(reader) == ["a", "b", "c", "d", "e", "f"])
    }

    /// A write answered with another request's answer (a cache keeping answers to POST by path) may
    /// have been applied or not: it is not sent twice, nothing of the answer is taken, the
    /// operation stays in flight (exit 3), and the next push settles it with the server's copy.
    @Test(arguments: [false, true])
    func aWriteAnsweredWithAnothersStaysInFlight(batched: Bool) async throws {
        let (server, proxy, store) = try await Self.storeBehindProxy(batched: batched)
        try await store.ok(["insert", "todo", #"{"id": "a", "text": "mine"}"#])
        let other = #"{"id": "z", "text": "another's", "version": "v1", "updatedAt": "2026-01-01T00:00:00.000Z", "deleted": false}"#
        proxy.replace(
            "POST", batched ? "/tables/$batch" : "/tables/todo", status: batched ? 200 : 201, contentType: "application/json",
            body: batched ? #"{"results": [{"index": 0, "id": "z", "status": 201, "item": \#(other)}]}"# : other, forward: true,
            headers: [("X-TSync-Echo", "0123456789abcdef0123456789abcdef")])
        let push = try await store.run(["push"])
        #expect(push.status == 3, "\(push)")
        #expect(push.stderr.contains("answer to another request") && push.stderr.contains("stay queued"), "\(push.stderr)")
        #expect(try await store.ok(["status", "--porcelain"]) == "A\ttodo\ta\n", "the insert stays in flight")
        #expect(try await store.run(["get", "todo", "z"]).status != 0, "nothing of the answer is taken")
        #expect(try await server.record("todo", "a")?["text"] == "mine", "the server applied it")
        let again = try await store.run(["push"])
        #expect(again.status == 0, "\(again)")
        #expect(try await store.ok(["status", "--porcelain"]) == "")
        #expect(try await store.ok(["conflicts", "--json"]) == "[]\n")
    }

    /// A login answered with another request's answer takes nothing of it (no token saved) and
    /// says to try again: it has no operations to leave queued.
    @Test func aLoginAnsweredWithAnothersSavesNothing() async throws {
        let server = try await ServeFixture(authenticated: true)
        let proxy = try LossyProxy(upstream: server.url)
        proxy.replace(
            "POST", "/.auth/login", status: 200, contentType: "application/json",
            body: #"{"authenticationToken": "another's", "user": {"userId": "mallory"}}"#, forward: true,
            headers: [("X-TSync-Echo", "0123456789abcdef0123456789abcdef")])
        let store = try await TSyncSandbox(remote: proxy.url)
        let login = try await store.run(["login", "--user", "alice", "--password-stdin"], stdin: ServeFixture.password + "\n")
        #expect(login.status == 3, "\(login)")
        #expect(login.stderr.contains("answer to another request") && login.stderr.contains("try again later"), "\(login.stderr)")
        #expect(!login.stderr.contains("queued"), "a login has no operations: \(login.stderr)")
        #expect(try await store.run(["whoami"]).status != 0, "no token saved")
        let again = try await store.run(["login", "--user", "alice", "--password-stdin"], stdin: ServeFixture.password + "\n")
        #expect(again.status == 0, "past the cache: \(again)")
    }

    /// A plain v2 server echoes nothing, nor does a proxy that strips the headers it does not
    /// know: nothing can be checked that way, and sync works as it did.
    @Test func aServerThatEchoesNothingIsSyncedAsBefore() async throws {
        let server = try await ServeFixture()
        let proxy = try LossyProxy(upstream: server.url)
        proxy.rewriteHeader("X-TSync-Echo") { _, _ in nil }
        let writer = try await TSyncSandbox(remote: proxy.url)
        for id in ["a", "b", "c"] { try await writer.ok(["insert", "todo", #"{"id": "\#(id)", "text": "\#(id)"}"#]) }
        try await writer.ok(["push"])
        let reader = try await TSyncSandbox(remote: proxy.url)
        try await reader.ok(["pull", "todo", "--query-id", "all", "--page-size", "2"])
        #expect(try await Self.ids(reader) == ["a", "b", "c"])
        #expect(proxy.rewritten >= 4, "every answer came without its echo")
    }

    /// `tsync serve` echoes a plain token, and no other (a client cannot make it send a header of
    /// its making); every answer tells caches to keep nothing.
    @Test func theServerEchoesAPlainTokenOnly() async throws {
        let server = try await ServeFixture()
        for (token, echoed) in [
            ("abc-DEF_123", true), (String(repeating: "a", count: 64), true), (String(repeating: "a", count: 65), false),
            ("a b", false), ("a;b", false),
        ] {
            let reply = try await HTTP.send("GET", server.url + "/tables/todo?$top=1", headers: ["X-TSync-Echo": token])
            #expect(reply.headers["X-TSync-Echo"] == (echoed ? token : nil), "\(token): \(reply.headers)")
            #expect(reply.headers["Cache-Control"] == "no-store", "\(reply.headers)")
        }
        let missing = try await HTTP.send("GET", server.url + "/tables/no-such/x")
        #expect(missing.headers["X-TSync-Echo"] == nil && missing.headers["Cache-Control"] == "no-store", "\(missing)")
    }
}
