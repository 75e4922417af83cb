import Testing
import TSyncModel
@testable import TSyncServer

/// Headers, limits and hostile input: every refusal is a JSON `{"error": …}` with the right status,
/// and the server keeps answering afterwards. A test that hangs (a wait nobody ends) fails with
/// its name at the limit instead of holding the whole run; the limit is far above any test's time
/// on a loaded machine.
@Suite(.timeLimit(.minutes(10))) struct ProtocolLimitsTests {
    @Test func healthAnswersWithoutAuthentication() async throws {
        try await withTestServer(ServerConfiguration()) { http in
            let health = try await http.get("/health")
            #expect(health.status == 200)
            #expect(health.object["status"] == "ok")
        }
    }

    @Test func unknownRoutesAre404JSON() async throws {
        try await withTestServer { http in
            for uri in ["/nothing", "/tables", "/tables/t/a/b", "/.auth/login/other"] {
                let reply = try await http.get(uri)
                #expect(reply.status == 404, "\(uri)")
                #expect(reply.error != nil, "\(uri): \(reply.text)")
            }
            let put = try await http.send(.put, "/tables/t/a", json: [:])
            #expect(put.status == 405, "PUT is a method the path does not have, not a missing path")
            #expect(put.headers[.allow] == "GET, PATCH, DELETE, POST")
            #expect(put.error?.contains("PATCH") == true)
        }
    }

    @Test func apiVersionHeaderMajorMustBe2() async throws {
        try await withTestServer { http in
            #expect(try await http.get("/tables/t", headers: ["ZUMO-API-VERSION": "2.0.0"]).status == 200)
            #expect(try await http.get("/tables/t", headers: ["ZUMO-API-VERSION": "2.1.3"]).status == 200)
            #expect(try await http.get("/tables/t").status == 200, "absent is 2.0.0")
            for version in ["3.0.0", "1.0.0", "banana", ""] {
                let reply = try await http.get("/tables/t", headers: ["ZUMO-API-VERSION": version])
                #expect(reply.status == 400, "\(version)")
                #expect(reply.error?.contains("ZUMO-API-VERSION") == true)
            }
            #expect(try await http.get("/tables/t?ZUMO-API-VERSION=3.0.0").status == 400)
            let login = try await http.post(
                "/.auth/login/custom", ["username": "a", "password": "b"], headers: ["ZUMO-API-VERSION": "1.0.0"])
            #expect(login.status == 400)
        }
    }

    @Test func malformedJSONIs400WithThePosition() async throws {
        try await withTestServer { http in
            let reply = try await http.send(.post, "/tables/t", raw: Array("{\"id\": \"a\",\n \"x\": }".utf8))
            #expect(reply.status == 400)
            #expect(reply.error == "invalid JSON at line 2, column 7: unexpected '}', expected a value")
            #expect(try await http.send(.post, "/tables/t", raw: Array("[1,2]".utf8)).status == 400)
            #expect(try await http.send(.post, "/tables/t", raw: []).status == 400)
            #expect(try await http.send(.patch, "/tables/t/a", raw: Array("\"text\"".utf8)).status == 400)
        }
    }

    @Test func hostileBodiesAreRefusedAndTheServerGoesOn() async throws {
        var configuration = ServerConfiguration(requiresAuthentication: false)
        configuration.maximumBodyBytes = 64 * 1024
        try await withTestServer(configuration) { http in
            let deep = Array(String(repeating: "[", count: 100_000).utf8)
            let deepReply = try await http.send(.post, "/tables/t", raw: Array("{\"a\":".utf8) + deep.prefix(60_000))
            #expect(deepReply.status == 400)
            #expect(deepReply.error?.contains("nested deeper") == true)

            let badUTF8: [UInt8] = Array("{\"id\":\"a\",\"text\":\"".utf8) + [0xFF, 0xFE] + Array("\"}".utf8)
            let utf8Reply = try await http.send(.post, "/tables/t", raw: badUTF8)
            #expect(utf8Reply.status == 400)
            #expect(utf8Reply.error?.contains("UTF-8") == true)

            let large = JSONValue.object(["text": .string(String(repeating: "x", count: 70 * 1024))])
            let largeReply = try await http.post("/tables/t", large)
            #expect(largeReply.status == 413)
            #expect(largeReply.error?.contains("larger than") == true)

            let nearLimit = JSONValue.object(["id": "big", "text": .string(String(repeating: "y", count: 60 * 1024))])
            #expect(try await http.post("/tables/t", nearLimit).status == 201)
            #expect(try await http.get("/tables/t/big").object["text"]?.stringValue?.count == 60 * 1024)
        }
    }

    @Test func hostileQueriesAreRefused() async throws {
        try await withTestServer { http in
            try await http.insert("t", ["id": "a", "n": 1])
            #expect(try await http.get("/tables/t?$top=1000000000000").status == 400)
            let long = try await http.get("/tables/t?$filter=" + String(repeating: "n%20eq%201%20or%20", count: 600) + "n%20eq%201")
            #expect(long.status == 400)
            // Nesting is refused by the parser's one depth guard, before anything recurses past it.
            for deep in [
                "n eq " + String(repeating: "-", count: 2000) + "1",
                String(repeating: "(", count: 2000) + "n eq 1" + String(repeating: ")", count: 2000),
                String(repeating: "not ", count: 500) + "n eq 1",
            ] {
                let reply = try await http.get("/tables/t?$filter=" + QueryString.encode(deep))
                #expect(reply.status == 400)
                #expect(reply.error?.contains("nested more than 100 levels deep") == true, "\(reply.text)")
            }
            // Reasonable nesting, and dashes and parentheses inside literals, are fine.
            let fine = "((n eq 1) and not (n eq -2)) or text eq '((((---' or due gt datetime'2020-01-01'"
            #expect(try await http.get("/tables/t?$filter=" + QueryString.encode(fine)).ids == ["a"])
            #expect(try await http.get("/tables/t?$filter=%FF%FE").status == 400)
            #expect(try await http.get("/tables/t?$filter=%ZZ").status == 400)
            #expect(try await http.get("/tables/t?$top=1&$top=2").status == 400)
            // Still serving.
            #expect(try await http.get("/tables/t?$filter=n%20eq%201").ids == ["a"])
        }
    }

    @Test func errorBodiesNeverLeakSQLOrPaths() async throws {
        try await withTestServer { http in
            try await http.insert("t", ["id": "a", "n": 1])
            let replies = [
                try await http.get("/tables/t?$filter=n%20eq"),
                try await http.get("/tables/t?$filter=nosuchfunction(n)%20eq%201"),
                try await http.get("/tables/t?$orderby=n%20sideways"),
                try await http.get("/tables/t?$filter=n%20eq%20'unclosed"),
            ]
            for reply in replies {
                #expect(reply.status == 400)
                let message = try #require(reply.error)
                #expect(reply.object.count == 1)
                for leak in ["SELECT", "json_extract", "sqlite", "t_t", "/tmp", ".swift"] {
                    #expect(!message.contains(leak), "\(message)")
                }
            }
        }
    }

    // MARK: - Hostile requests

    @Test func orderByIsLimitedToFiveFields() async throws {
        try await withTestServer { http in
            let five = try await http.get("/tables/t?$orderby=a,b,c,d,updatedAt")
            #expect(five.status == 200, "\(five.text)")
            let many = (0..<800).map { "f\($0)" }.joined(separator: ",")
            let reply = try await http.get("/tables/t?$orderby=\(many)")
            #expect(reply.status == 400)
            #expect(reply.error?.contains("at most 5") == true, "\(reply.text)")
            #expect(try await http.get("/tables/t?$orderby=a,b,c,d,e,f").status == 400)
        }
    }

    @Test func aLongSelectIsRefused() async throws {
        try await withTestServer { http in
            let many = (0..<1000).map { "field\($0)" }.joined(separator: ",")
            let reply = try await http.get("/tables/t?$select=\(many)")
            #expect(reply.status == 400)
            #expect(reply.error?.contains("$select is longer") == true, "\(reply.text)")
        }
    }

    /// One `replace` over a 1 MB field made SQLite build a 40 MB string per record: no string a
    /// statement builds may pass `SQLiteStorage.maximumValueBytes`.
    @Test func stringFunctionsCannotAllocateWithoutBound() async throws {
        try await withTestServer(backends: [.sqlite]) { http in
            let big = String(repeating: "x", count: 1_000_000)
            #expect(try await http.post("/tables/t", ["id": "big", "s": .string(big)]).status == 201)
            let forty = String(repeating: "x", count: 40)
            let reply = try await http.get("/tables/t?$filter=length(replace(s,'x','\(forty)')) eq 1")
            #expect(reply.status == 400, "\(reply.status) \(reply.text.prefix(200))")
            #expect(reply.error?.contains("cannot be evaluated") == true)
            #expect(try await http.get("/tables/t?$filter=length(s) eq 1000000").array.count == 1)
        }
    }

    /// A query past `queryTimeoutSeconds` is stopped and answered 503 with a message that says so.
    @Test func aQueryPastTheTimeoutIsStopped() async throws {
        var configuration = ServerConfiguration(requiresAuthentication: false)
        configuration.queryTimeoutSeconds = 1
        try await withTestServer(configuration, queryTimeoutSeconds: 1) { http in
            let text = String(repeating: "x", count: 4000)
            var operations: [JSONValue] = []
            for index in 0..<300 {
                operations.append(["method": "POST", "table": "t", "item": ["id": .string("r\(index)"), "s": .string(text)]])
            }
            #expect(try await http.post("/tables/$batch", ["operations": .array(operations)]).status == 200)
            let forty = String(repeating: "x", count: 40)
            let start = ContinuousClock.now
            let reply = try await http.get(
                "/tables/t?$filter=length(replace(replace(s,'x','\(forty)'),'x','\(forty)')) eq 1")
            let elapsed = ContinuousClock.now - start
            #expect(reply.status == 503, "\(reply.status) \(reply.text.prefix(200))")
            #expect(reply.error?.contains("took longer than the server allows (1 s)") == true, "\(reply.text)")
            #expect(elapsed < .seconds(20), "stopped at the deadline: \(elapsed)")
            #expect(try await http.get("/tables/t?$top=1").status == 200, "the server goes on")
        }
    }

    @Test func ifNoneMatchStarOnPatchIsHonoured() async throws {
        try await withTestServer { http in
            try await http.insert("t", ["id": "a", "n": 1])
            let reply = try await http.patch("/tables/t/a", ["n": 2], headers: ["If-None-Match": "*"])
            #expect(reply.status == 412)
            #expect(reply.object["n"] == 1, "the current item comes back")
            #expect(try await http.get("/tables/t/a").object["n"] == 1, "nothing was written")
            #expect(try await http.patch("/tables/t/missing", ["n": 2], headers: ["If-None-Match": "*"]).status == 404)
        }
    }
}
