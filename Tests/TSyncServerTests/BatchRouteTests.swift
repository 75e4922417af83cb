import Testing
import TSyncModel
@testable import TSyncServer

/// `POST /tables/$batch`: each operation answers exactly what its single route would,
/// in order, in one transaction; `"atomic": true` is all or nothing; limits answer 413. Every test
/// runs on SQLite and on PostgreSQL when configured.
@Suite struct BatchRouteTests {
    /// A write of a script: what one request of a single route sends.
    typealias Step = (method: String, table: String, id: String?, item: JSONValue?, ifMatch: String?)

    /// A step of a script as the batch route's operation.
    static func operation(_ step: Step) -> JSONValue {
        var operation: [String: JSONValue] = ["method": .string(step.method), "table": .string(step.table)]
        if let id = step.id { operation["id"] = .string(id) }
        if let item = step.item { operation["item"] = item }
        if let ifMatch = step.ifMatch { operation["ifMatch"] = .string(ifMatch) }
        return .object(operation)
    }

    static func script(_ versionOfA: String) -> [Step] {
        [
            ("POST", "todo", nil, ["id": "new", "text": "fresh"], nil),
            ("POST", "todo", nil, ["id": "a", "text": "again"], nil),  // 409 with the item
            ("PATCH", "todo", "a", ["text": "changed"], "\"stale\""),  // 412 with the item
            ("PATCH", "todo", "a", ["text": "changed"], "\"\(versionOfA)\""),  // 200
            ("PATCH", "todo", "a", ["text": "again", "version": "stale"], nil),  // 409 (version in the body)
            ("DELETE", "notes", "missing", nil, nil),  // 404
            ("DELETE", "notes", "n", nil, nil),  // 200
            ("POST", "notes", "n", nil, nil),  // undelete: 200
            ("PATCH", "todo", "a", ["id": "other"], nil),  // 400: body id is not the URL id
        ]
    }

    /// A step of a script sent alone, to its single route.
    static func sendAlone(_ step: Step, _ http: TestHTTP) async throws -> Reply {
        let path = "/tables/\(step.table)" + (step.id.map { "/\($0)" } ?? "")
        let headers = step.ifMatch.map { ["If-Match": $0] } ?? [:]
        switch step.method {
        case "POST": return try await http.post(path, step.item, headers: headers)
        case "PATCH": return try await http.patch(path, step.item ?? [:], headers: headers)
        default: return try await http.delete(path, headers: headers)
        }
    }

    /// Seeds `todo/a` and `notes/n`; returns the version of `todo/a`.
    private func seed(_ http: TestHTTP) async throws -> String {
        let a = try await http.insert("todo", ["id": "a", "text": "first"])
        try await http.insert("notes", ["id": "n", "text": "note"])
        return try #require(a["version"]?.stringValue)
    }

    /// Status and user fields of an answer, for comparison (versions and times differ by run).
    private func summary(_ status: Int, _ body: JSONValue?) -> String {
        guard let object = body?.objectValue else { return "\(status)" }
        if let error = object["error"]?.stringValue { return "\(status) error: \(error)" }
        let fields = object.filter { !["createdAt", "updatedAt", "version"].contains($0.key) }
        return "\(status) \(JSONSerializer.string(.object(fields)))"
    }

    /// Each result names its operation (`index`, `id`), so a client can pair them.
    @Test func eachResultNamesItsOperation() async throws {
        try await withTestServer { http in
            _ = try await seed(http)
            let operations: [JSONValue] = [
                ["method": "POST", "table": "todo", "item": ["id": "new", "text": "fresh"]],
                ["method": "DELETE", "table": "notes", "id": "missing"],
                ["method": "GET", "table": "todo", "id": "a"],
                ["method": "PATCH", "table": "todo", "id": "a", "item": ["text": "changed"]],
            ]
            let reply = try await http.post("/tables/$batch", ["operations": .array(operations)])
            guard case .array(let results)? = reply.object["results"] else {
                Issue.record("no results: \(reply.text)")
                return
            }
            #expect(results.map { $0.objectValue?["index"] } == [0, 1, 2, 3])
            #expect(results.map { $0.objectValue?["id"] } == ["new", "missing", "a", "a"])
            #expect(results.map { $0.objectValue?["status"] } == [201, 404, 400, 200])
        }
    }

    @Test func aBatchAnswersWhatTheSingleRoutesAnswer() async throws {
        let single = try await withTestServer { http in
            let version = try await seed(http)
            var answers: [String] = []
            for step in Self.script(version) {
                let reply = try await Self.sendAlone(step, http)
                answers.append(summary(reply.status, reply.json))
            }
            return answers
        }
        let batched = try await withTestServer { http in
            let version = try await seed(http)
            let operations = Self.script(version).map(Self.operation)
            let reply = try await http.post("/tables/$batch", ["operations": .array(operations)])
            #expect(reply.status == 200, "\(reply.text)")
            guard case .array(let results)? = reply.object["results"] else { return [String]() }
            let answers = results.map { result in
                var status = 0
                if case .int(let code)? = result.objectValue?["status"] { status = Int(code) }
                return summary(status, result.objectValue?["item"] ?? result)
            }
            // The server ends in the same state too.
            #expect(try await http.get("/tables/todo/a").object["text"] == "changed")
            #expect(try await http.get("/tables/notes/n").status == 200)
            return answers
        }
        #expect(batched.count == Self.script("v").count)
        // Error texts differ only by the batch's "operation N: " prefix.
        let normalized = batched.map { answer in
            answer.replacing(#/operation \d+: /#, with: "")
        }
        #expect(normalized == single)
        #expect(single.map { $0.prefix(3) } == ["201", "409", "412", "200", "409", "404", "200", "200", "400"])
    }

    /// A batch asks the rules once per table and operation and keeps what they allow (a push
    /// sends thousands of writes to one table); a refusal is asked again each time. Operations
    /// of several tables and rules, interleaved and repeated, answer as their single routes do.
    @Test func aBatchUnderTableRulesAnswersWhatTheSingleRoutesAnswer() async throws {
        var configuration = ServerConfiguration(requiresAuthentication: false)
        try configuration.access.add(parsing: "locked:insert=nobody")
        try configuration.access.add(parsing: "notes:delete=nobody")
        let steps: [Step] = [
            ("POST", "todo", nil, ["id": "t1", "text": "one"], nil),  // 201
            ("POST", "locked", nil, ["id": "l1"], nil),  // 403
            ("DELETE", "notes", "n", nil, nil),  // 403
            ("POST", "bad-name", nil, ["id": "s1"], nil),  // 400: not a table name
            ("POST", "todo", nil, ["id": "t2", "text": "two"], nil),  // 201
            ("POST", "locked", nil, ["id": "l2"], nil),  // 403 again
            ("PATCH", "notes", "n", ["text": "changed"], nil),  // 200
            ("POST", "bad-name", nil, ["id": "s2"], nil),  // 400 again
            ("DELETE", "notes", "n", nil, nil),  // 403 again
            ("PATCH", "todo", "t1", ["text": "uno"], nil),  // 200
            ("POST", "todo", nil, ["id": "t1", "text": "again"], nil),  // 409
        ]
        let single = try await withTestServer(configuration) { http in
            try await http.insert("notes", ["id": "n", "text": "note"])
            var answers: [String] = []
            for step in steps {
                let reply = try await Self.sendAlone(step, http)
                answers.append(summary(reply.status, reply.json))
            }
            return answers
        }
        let batched = try await withTestServer(configuration) { http in
            try await http.insert("notes", ["id": "n", "text": "note"])
            let reply = try await http.post("/tables/$batch", ["operations": .array(steps.map(Self.operation))])
            #expect(reply.status == 200, "\(reply.text)")
            guard case .array(let results)? = reply.object["results"] else { return [String]() }
            #expect(try await http.get("/tables/todo/t1").object["text"] == "uno")
            #expect(try await http.get("/tables/locked/l2").status == 404)
            return results.map { result in
                var status = 0
                if case .int(let code)? = result.objectValue?["status"] { status = Int(code) }
                return summary(status, result.objectValue?["item"] ?? result).replacing(#/operation \d+: /#, with: "")
            }
        }
        #expect(batched == single)
        #expect(single.map { $0.prefix(3) } == ["201", "403", "403", "400", "201", "403", "200", "400", "403", "200", "409"])
    }

    /// A batch's changes go into the database together (on PostgreSQL one `UPDATE … FROM unnest`
    /// per table): a record changed several times in one batch, one changed with a stale version
    /// between them, one deleted, undeleted and changed, one inserted and then changed, one
    /// changed after its delete, end as the same requests one by one leave them: answers, records
    /// and history alike.
    @Test func changesOfOneBatchEndAsTheSameRequestsOneByOne() async throws {
        @Sendable func steps(_ versionOfD: String) -> [Step] {
            [
                ("PATCH", "todo", "a", ["text": "one"], nil),
                ("PATCH", "todo", "a", ["n": 2], nil),
                ("PATCH", "todo", "a", ["text": "two"], "\"stale\""),  // 412
                ("POST", "todo", nil, ["id": "b", "text": "new"], nil),
                ("PATCH", "todo", "b", ["text": "newer"], nil),
                ("DELETE", "notes", "n", nil, nil),
                ("POST", "notes", "n", nil, nil),  // undelete
                ("PATCH", "notes", "n", ["text": "back"], nil),
                ("DELETE", "todo", "c", nil, nil),
                ("PATCH", "todo", "c", ["text": "gone"], nil),  // 404: deleted
                ("PATCH", "todo", "d", ["text": "checked"], "\"\(versionOfD)\""),
                ("PATCH", "todo", "a", ["text": "three", "n": nil], nil),
            ]
        }
        func run(batched: Bool) async throws -> [String] {
            try await withTestServer { http in
                try await http.insert("todo", ["id": "a", "text": "first"])
                try await http.insert("todo", ["id": "c", "text": "c"])
                let d = try await http.insert("todo", ["id": "d", "text": "d"])
                try await http.insert("notes", ["id": "n", "text": "note"])
                let script = steps(try #require(d["version"]?.stringValue))
                var answers: [String] = []
                if batched {
                    let operations = script.map(Self.operation)
                    let reply = try await http.post("/tables/$batch", ["operations": .array(operations)])
                    guard case .array(let results)? = reply.object["results"] else { throw BatchTestFailure("no results: \(reply.text)") }
                    for result in results {
                        var status = 0
                        if case .int(let code)? = result.objectValue?["status"] { status = Int(code) }
                        answers.append(summary(status, result.objectValue?["item"] ?? result))
                    }
                } else {
                    for step in script {
                        let reply = try await Self.sendAlone(step, http)
                        answers.append(summary(reply.status, reply.json).replacing(#/operation \d+: /#, with: ""))
                    }
                }
                for (table, id) in [("todo", "a"), ("todo", "b"), ("todo", "c"), ("todo", "d"), ("notes", "n")] {
                    let record = try await http.get("/tables/\(table)/\(id)?__includeDeleted=true")
                    answers.append("\(table)/\(id): " + summary(record.status, record.json))
                    let history = try await http.get("/tables/$history/\(table)/\(id)")
                    guard case .array(let versions)? = history.object["results"] else { throw BatchTestFailure(history.text) }
                    answers.append(
                        "\(table)/\(id) history: "
                            + versions.map { version in
                                let operation = version.objectValue?["operation"]?.stringValue ?? "?"
                                return operation + " " + summary(200, version.objectValue?["item"])
                            }.joined(separator: "; "))
                }
                return answers.map { $0.replacing(#/operation \d+: /#, with: "") }
            }
        }
        let single = try await run(batched: false)
        let batched = try await run(batched: true)
        #expect(batched == single)
        #expect(
            single.prefix(12).map { $0.prefix(3) } == ["200", "200", "412", "201", "200", "200", "200", "200", "200", "404", "200", "200"])
        #expect(single.contains(#"todo/a: 200 {"id":"a","deleted":false,"n":null,"text":"three"}"#), "\(single)")
    }

    @Test func anAtomicBatchWritesNothingWhenOneOperationFails() async throws {
        try await withTestServer { http in
            _ = try await seed(http)
            let operations: [JSONValue] = [
                ["method": "POST", "table": "todo", "item": ["id": "b", "text": "b"]],
                ["method": "PATCH", "table": "notes", "id": "n", "item": ["text": "changed"]],
                ["method": "POST", "table": "todo", "item": ["id": "a", "text": "duplicate"]],
            ]
            let reply = try await http.post("/tables/$batch", ["atomic": true, "operations": .array(operations)])
            #expect(reply.status == 200)
            guard case .array(let results)? = reply.object["results"] else {
                Issue.record("no results: \(reply.text)")
                return
            }
            #expect(results.map { $0.objectValue?["status"] } == [424, 424, 409])
            #expect(try await http.get("/tables/todo/b").status == 404, "nothing was written")
            #expect(try await http.get("/tables/notes/n").object["text"] == "note")

            let good = try await http.post(
                "/tables/$batch", ["atomic": true, "operations": .array(Array(operations.prefix(2)))])
            guard case .array(let applied)? = good.object["results"] else { return }
            #expect(applied.map { $0.objectValue?["status"] } == [201, 200])
            #expect(try await http.get("/tables/notes/n").object["text"] == "changed")
        }
    }

    /// One `updatedAt` per transaction and table: a batch's writes share it (a
    /// reader sees all of them or none, ties broken by id), and the next batch comes strictly
    /// later, so commit order is still (updatedAt, id) order.
    @Test func aBatchSharesOneUpdatedAtAndTheNextComesLater() async throws {
        try await withTestServer { http in
            var batches: [[Timestamp]] = []
            for batch in 0..<3 {
                let operations: [JSONValue] = (0..<50).map { ["method": "POST", "table": "t", "item": ["id": .string("b\(batch)-\($0)")]] }
                let reply = try await http.post("/tables/$batch", ["operations": .array(operations)])
                guard case .array(let results)? = reply.object["results"] else { return }
                batches.append(
                    results.compactMap { $0.objectValue?["item"]?.objectValue?["updatedAt"]?.stringValue }.compactMap(
                        Timestamp.init(iso8601:)))
            }
            #expect(batches.allSatisfy { $0.count == 50 && Set($0).count == 1 }, "one time per transaction")
            #expect(zip(batches, batches.dropFirst()).allSatisfy { $0[0] < $1[0] }, "strictly increasing from one commit to the next")
            let read = try await http.get("/tables/t?$orderby=updatedAt,id&$top=200").array.compactMap {
                $0.objectValue?["id"]?.stringValue
            }
            let committed = (0..<3).flatMap { batch in (0..<50).map { "b\(batch)-\($0)" }.sorted() }
            #expect(read == committed, "(updatedAt, id) order is commit order")
        }
    }

    /// A batched push of thousands of records keeps `updatedAt` at the wall clock:
    /// one millisecond a write put 5,000 writes five seconds in the future.
    @Test func thousandsOfBatchedWritesKeepUpdatedAtAtTheClock() async throws {
        try await withTestServer { http in
            for batch in 0..<5 {
                let operations: [JSONValue] = (0..<1000).map {
                    ["method": "POST", "table": "bulk", "item": ["id": .string("r\(batch)-\($0)")]]
                }
                let reply = try await http.post("/tables/$batch", ["operations": .array(operations)])
                #expect(reply.status == 200)
            }
            let now = Timestamp.now()
            let newest = try await http.get("/tables/bulk?$orderby=updatedAt%20desc&$top=1").array.first?.objectValue?["updatedAt"]?
                .stringValue
            let stamp = try #require(newest.flatMap(Timestamp.init(iso8601:)))
            #expect(stamp.millisecondsSinceEpoch - now.millisecondsSinceEpoch < 1000, "\(stamp) is more than a second after \(now)")
        }
    }

    @Test func limitsAndMalformedBatches() async throws {
        let configuration = ServerConfiguration(requiresAuthentication: false, maximumBodyBytes: 1000, maximumBatchOperations: 3)
        try await withTestServer(configuration) { http in
            let described = try await http.get("/tables/$batch")
            #expect(described.object["maxOperations"] == 3 && described.object["maxItemBytes"] == 1000)
            let four: [JSONValue] = (0..<4).map { ["method": "POST", "table": "t", "item": ["id": .string("r\($0)")]] }
            let tooMany = try await http.post("/tables/$batch", ["operations": .array(four)])
            #expect(tooMany.status == 413 && tooMany.error?.contains("at most 3") == true, "\(tooMany.text)")
            #expect(try await http.get("/tables/t").ids.isEmpty)

            let big: JSONValue = [
                "method": "POST", "table": "t", "item": ["id": "big", "text": .string(String(repeating: "x", count: 2000))],
            ]
            let small: JSONValue = ["method": "POST", "table": "t", "item": ["id": "small"]]
            let mixed = try await http.post("/tables/$batch", ["operations": [big, small]])
            guard case .array(let results)? = mixed.object["results"] else { return }
            #expect(results.map { $0.objectValue?["status"] } == [413, 201], "an item over the limit fails alone")
            // A body over the item limit has its items measured one by one; each of these fits.
            let fitting: [JSONValue] = (0..<3).map {
                ["method": "POST", "table": "t", "item": ["id": .string("fit\($0)"), "text": .string(String(repeating: "y", count: 400))]]
            }
            let measured = try await http.post("/tables/$batch", ["operations": .array(fitting)])
            guard case .array(let fitted)? = measured.object["results"] else { return }
            #expect(fitted.map { $0.objectValue?["status"] } == [201, 201, 201], "\(measured.text)")

            #expect(try await http.post("/tables/$batch", ["nope": 1]).status == 400)
            #expect(try await http.post("/tables/$batch", ["operations": [["method": "GET", "table": "t"]]]).object["results"] != nil)
        }
    }

    @Test func perUserRulesHoldInABatch() async throws {
        let configuration = ServerConfiguration(perUserTables: ["notes"])
        try await withTestServer(configuration, accounts: PerUserTests.accounts) { http in
            let alice = try await http.login("alice", "alice password")
            let bob = try await http.login("bob", "bob password")
            try await http.insert("notes", ["id": "n1", "text": "alice's secret"], token: alice)
            let operations: [JSONValue] = [
                ["method": "POST", "table": "notes", "item": ["id": "n1", "text": "bob's"]],
                ["method": "PATCH", "table": "notes", "id": "n1", "item": ["text": "mine now"]],
                ["method": "DELETE", "table": "notes", "id": "n1"],
            ]
            let reply = try await http.post("/tables/$batch", ["operations": .array(operations)], token: bob)
            #expect(!reply.text.contains("secret"))
            guard case .array(let results)? = reply.object["results"] else { return }
            #expect(results.map { $0.objectValue?["status"] } == [409, 404, 404])
            #expect(results.allSatisfy { $0.objectValue?["item"] == nil })
        }
    }

    @Test func maxBatchZeroServesThePlainProtocol() async throws {
        try await withTestServer(ServerConfiguration(requiresAuthentication: false, maximumBatchOperations: 0)) { http in
            #expect(try await http.get("/tables/$batch").status != 200)
            let reply = try await http.post("/tables/$batch", ["operations": []])
            #expect(reply.status != 200 && reply.object["results"] == nil)
        }
    }
}

private struct BatchTestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
