import Foundation
import Testing
import TSyncModel

/// Table rules (`--access`), roles and groups of accounts, and scoped tokens: the real `tsync
/// serve` on SQLite and (with TSYNC_TEST_POSTGRES_URL) PostgreSQL, driven by raw HTTP as a plain
/// v2 client would, and by the real `tsync` binary.
@Suite(.serialized) struct AccessRuleTests {
    enum Backend: String, CaseIterable, CustomStringConvertible {
        case sqlite, postgres
        var description: String { rawValue }
    }

    static let backends: [Backend] = PostgresFixture.adminURL == nil ? [.sqlite] : Backend.allCases

    static let password = "access rule password"

    /// The rules every test here serves with: `docs` shared within groups by their `team`,
    /// `prices` readable by all and changed by admins, `board` readable by anyone (no token).
    static let rules = [
        "--access", "docs:read=group:team,write=group:team",
        "--access", "prices:read=authenticated,write=role:admin",
        "--access", "board:read=anyone,write=nobody",
    ]

    /// A server on `backend` with `rules` and the accounts alice (role admin, group a) and bob
    /// (group b), made with `tsync user add`; `body` gets the server's URL, the database URL and
    /// a directory to run tsync in.
    static func withServer(
        _ backend: Backend, options: [String] = rules, _ body: (String, String, TemporaryDirectory) async throws -> Void
    ) async throws {
        let directory = try TemporaryDirectory()
        func run(_ db: String) async throws {
            for (name, labels) in [("alice", ["--role", "admin", "--group", "a"]), ("bob", ["--group", "b"])] {
                let add = try await TSyncProcess.run(
                    ["user", "add", name, "--password-stdin", "--db", db] + labels, in: directory.path, stdin: password + "\n")
                #expect(add.status == 0, "\(add)")
            }
            let server = try ServerProcess(arguments: ["serve", "--db", db, "--port", "0"] + options, log: directory.path)
            defer { server.stop() }
            try await body(try await server.waitForAddress(), db, directory)
        }
        switch backend {
        case .sqlite: try await run("sqlite:" + (directory.path as NSString).appendingPathComponent("server.db"))
        case .postgres: try await PostgresFixture.withFreshDatabase { db in try await run(db) }
        }
    }

    static func login(_ url: String, _ name: String) async throws -> String {
        let reply = try await HTTP.send("POST", url + "/.auth/login/custom", body: #"{"username":"\#(name)","password":"\#(password)"}"#)
        #expect(reply.status == 200, "\(reply.body)")
        return try #require(try JSONOutput.object(reply.body)["authenticationToken"]?.stringValue)
    }

    static func ids(_ reply: HTTP.Reply) throws -> [String] {
        var items = try JSONParser.parse(reply.body)
        if let results = items.objectValue?["results"] { items = results }
        guard case .array(let array) = items else { return [] }
        return array.compactMap { $0.objectValue?["id"]?.stringValue }.sorted()
    }

    @Test(arguments: backends) func groupRecordsNeverLeaveTheirGroup(backend: Backend) async throws {
        try await Self.withServer(backend) { url, _, _ in
            let alice = try await Self.login(url, "alice")
            let bob = try await Self.login(url, "bob")
            #expect(
                try await HTTP.send("POST", url + "/tables/docs", body: #"{"id":"a1","team":"a","text":"alice's secret"}"#, token: alice)
                    .status == 201)
            #expect(
                try await HTTP.send("POST", url + "/tables/docs", body: #"{"id":"b1","team":"b","text":"bob's"}"#, token: bob).status == 201
            )

            // An insert into a group the account is not in: 403, naming the rule.
            let intruding = try await HTTP.send("POST", url + "/tables/docs", body: #"{"id":"b2","team":"a"}"#, token: bob)
            #expect(intruding.status == 403 && intruding.body.contains("insert=group:team"), "\(intruding)")
            let groupless = try await HTTP.send("POST", url + "/tables/docs", body: #"{"id":"b3"}"#, token: bob)
            #expect(groupless.status == 403, "\(groupless)")

            // Pages, counts and filters: only the group's records.
            #expect(try Self.ids(try await HTTP.send("GET", url + "/tables/docs", token: bob)) == ["b1"])
            #expect(try Self.ids(try await HTTP.send("GET", url + "/tables/docs", token: alice)) == ["a1"])
            let counted = try await HTTP.send("GET", url + "/tables/docs?$inlinecount=allpages&__includeDeleted=true", token: bob)
            #expect(try JSONOutput.object(counted.body)["count"] == 1, "\(counted)")
            let asked = try await HTTP.send("GET", url + "/tables/docs?$filter=id%20eq%20'a1'&$inlinecount=allpages", token: bob)
            #expect(try JSONOutput.object(asked.body)["count"] == 0 && !asked.body.contains("secret"), "\(asked)")

            // Another group's record is 404 on every route, as a missing one is.
            let replies = [
                try await HTTP.send("GET", url + "/tables/docs/a1", token: bob),
                try await HTTP.send("PATCH", url + "/tables/docs/a1", body: #"{"text":"mine"}"#, token: bob),
                try await HTTP.send(
                    "PATCH", url + "/tables/docs/a1", headers: ["If-Match": "\"stale\""], body: #"{"text":"x"}"#, token: bob),
                try await HTTP.send("DELETE", url + "/tables/docs/a1", token: bob),
                try await HTTP.send("POST", url + "/tables/docs/a1", token: bob),
                try await HTTP.send("GET", url + "/tables/$history/docs/a1", token: bob),
                try await HTTP.send("GET", url + "/tables/docs/nothing", token: bob),
            ]
            for reply in replies {
                #expect(reply.status == 404 && !reply.body.contains("secret"), "\(reply)")
            }
            let at = Timestamp.now().iso8601
            let past = try await HTTP.send("GET", url + "/tables/$history/docs?at=\(at)", token: bob)
            let pastIDs = try Self.ids(past)
            #expect(past.status == 200 && pastIDs == ["b1"], "\(past)")

            // The batch route decides the same, operation by operation.
            let batch = try await HTTP.send(
                "POST", url + "/tables/$batch",
                body: #"""
                    {"operations": [
                      {"method": "PATCH", "table": "docs", "id": "a1", "item": {"text": "x"}},
                      {"method": "DELETE", "table": "docs", "id": "a1"},
                      {"method": "POST", "table": "docs", "item": {"id": "b4", "team": "a"}},
                      {"method": "POST", "table": "docs", "item": {"id": "b5", "team": "b"}}
                    ]}
                    """#, token: bob)
            guard case .array(let results)? = try JSONOutput.object(batch.body)["results"] else {
                Issue.record("no results: \(batch)")
                return
            }
            let statuses = results.compactMap { JSONOutput.int($0.objectValue?["status"]) }
            #expect(statuses == [404, 404, 403, 201], "\(batch)")
            #expect(!batch.body.contains("secret"))

            // A member may not move a record out of its groups.
            let moved = try await HTTP.send("PATCH", url + "/tables/docs/a1", body: #"{"team":"b"}"#, token: alice)
            #expect(moved.status == 403, "\(moved)")
            #expect(try await HTTP.send("PATCH", url + "/tables/docs/a1", body: #"{"text":"edited"}"#, token: alice).status == 200)

            // No token: 401 on a table for accounts; a table for anyone answers without one.
            #expect(try await HTTP.send("GET", url + "/tables/docs").status == 401)
            #expect(try await HTTP.send("GET", url + "/tables/board").status == 200)
            let posted = try await HTTP.send("POST", url + "/tables/board", body: #"{"id":"n1"}"#, token: alice)
            #expect(posted.status == 403 && posted.body.contains("insert=nobody"), "\(posted)")
        }
    }

    @Test(arguments: backends) func readableButNotChangeableIs403(backend: Backend) async throws {
        try await Self.withServer(backend) { url, _, _ in
            let alice = try await Self.login(url, "alice")
            let bob = try await Self.login(url, "bob")
            #expect(try await HTTP.send("POST", url + "/tables/prices", body: #"{"id":"p1","eur":3}"#, token: alice).status == 201)
            #expect(try await HTTP.send("GET", url + "/tables/prices/p1", token: bob).status == 200)
            for reply in [
                try await HTTP.send("PATCH", url + "/tables/prices/p1", body: #"{"eur":0}"#, token: bob),
                try await HTTP.send("DELETE", url + "/tables/prices/p1", token: bob),
                try await HTTP.send("POST", url + "/tables/prices", body: #"{"id":"p2","eur":1}"#, token: bob),
            ] {
                #expect(reply.status == 403 && reply.body.contains("role:admin"), "\(reply)")
            }
            // A record that is not there stays 404, not 403: nothing is said of what is not.
            #expect(try await HTTP.send("PATCH", url + "/tables/prices/none", body: #"{"eur":0}"#, token: bob).status == 404)
            #expect(try JSONOutput.object(try await HTTP.send("GET", url + "/tables/prices/p1", token: bob).body)["eur"] == 3)
        }
    }

    @Test(arguments: backends) func aWatcherGetsNoOtherGroupsRecord(backend: Backend) async throws {
        try await Self.withServer(backend, options: Self.rules + ["--metrics"]) { url, _, _ in
            // A read is held once the server counts it (`tsync_live_waiting`), not after a guess.
            func holding() async throws -> Bool {
                try await eventually { try await HTTP.metric("tsync_live_waiting", at: url) == 1 }
            }
            let alice = try await Self.login(url, "alice")
            let bob = try await Self.login(url, "bob")
            #expect(try await HTTP.send("POST", url + "/tables/docs", body: #"{"id":"b0","team":"b"}"#, token: bob).status == 201)
            let since = try #require(
                try JSONOutput.object(try await HTTP.send("GET", url + "/tables/docs/b0", token: bob).body)["updatedAt"]?.stringValue)
            let filter = "$filter=" + "updatedAt gt datetimeoffset'\(since)'".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            // Bob holds a read; alice's commit to group a wakes it, and it answers nothing.
            async let held = HTTP.send("GET", url + "/tables/docs?\(filter)", headers: ["Prefer": "wait=3"], token: bob)
            #expect(try await holding())
            #expect(
                try await HTTP.send("POST", url + "/tables/docs", body: #"{"id":"a9","team":"a","text":"secret"}"#, token: alice).status
                    == 201)
            let answer = try await held
            let answered = try Self.ids(answer)
            #expect(answer.status == 200 && answered == [] && !answer.body.contains("secret"), "\(answer)")
            // His own group's commit is answered.
            async let mine = HTTP.send("GET", url + "/tables/docs?\(filter)", headers: ["Prefer": "wait=10"], token: bob)
            #expect(try await holding())
            #expect(try await HTTP.send("POST", url + "/tables/docs", body: #"{"id":"b9","team":"b"}"#, token: bob).status == 201)
            #expect(try Self.ids(try await mine) == ["b9"])
        }
    }

    @Test(arguments: backends) func aRefusedPushIsForbiddenAndKept(backend: Backend) async throws {
        try await Self.withServer(backend) { url, _, _ in
            let store = try await TSyncSandbox(remote: url)
            let login = try await store.run(["login", "--user", "bob", "--password-stdin"], stdin: Self.password + "\n")
            #expect(login.status == 0, "\(login)")
            try await store.ok(["insert", "prices", #"{"id": "p7", "eur": 1}"#])
            try await store.ok(["insert", "docs", #"{"id": "b7", "team": "b"}"#])
            for _ in 0..<2 {
                let push = try await store.run(["push"])
                #expect(push.status == 2, "\(push)")
            }
            let errors = try JSONOutput.array(try await store.run(["conflicts", "--json"]).stdout)
            #expect(errors.count == 1, "\(errors)")
            let error = try #require(errors.first?.objectValue)
            #expect(error["class"] == "forbidden" && JSONOutput.int(error["status"]) == 403, "\(error)")
            #expect(error["message"]?.stringValue?.contains("role:admin") == true, "\(error)")
            #expect(try await store.run(["get", "prices", "p7"]).status == 0, "the refused record stays in the store")
            let docs = try await store.ok(["pull", "docs", "--json"])
            #expect(try JSONOutput.object(docs)["received"] == 1, "\(docs)")
        }
    }

    /// Settling against the server's copy of a table the account (or its token) may not read:
    /// the copy cannot be known, so resolve says so in words, exits 1 and settles nothing.
    @Test(arguments: backends) func settlingAgainstATableNoLongerReadableKeepsTheErrors(backend: Backend) async throws {
        try await Self.withServer(backend, options: Self.rules + ["--access", "vault:read=role:admin,write=role:admin"]) {
            url, db, directory in
            let store = try await TSyncSandbox(remote: url)
            let login = try await store.run(["login", "--user", "bob", "--password-stdin"], stdin: Self.password + "\n")
            #expect(login.status == 0, "\(login)")
            try await store.ok(["insert", "vault", #"{"id": "v1", "n": 1}"#])
            #expect(try await store.run(["push"]).status == 2)
            for resolution in ["--theirs", "--ours", "--merge"] {
                let resolve = try await store.run(["resolve", "--all", resolution])
                #expect(resolve.status == 1, "\(resolution): \(resolve)")
                #expect(
                    resolve.stderr.contains("HTTP 403") && resolve.stderr.contains("may no longer read the table")
                        && resolve.stderr.contains("nothing was settled, the error stays in the error table"), "\(resolve.stderr)")
            }
            let errors = try JSONOutput.array(try await store.run(["conflicts", "--json"]).stdout)
            #expect(errors.count == 1 && errors.first?.objectValue?["class"] == "forbidden", "\(errors)")
            let local = try JSONOutput.object(try await store.ok(["get", "vault", "v1"]))
            #expect(JSONOutput.int(local["n"]) == 1, "the local record as it was: \(local)")

            // A token narrowed to docs, for an account that reads prices: the same, for each error.
            let alice = try await TSyncSandbox(remote: url)
            let aliceLogin = try await alice.run(["login", "--user", "alice", "--password-stdin"], stdin: Self.password + "\n")
            #expect(aliceLogin.status == 0, "\(aliceLogin)")
            try await alice.ok(["insert", "prices", #"{"id": "p1", "eur": 1}"#])
            try await alice.ok(["insert", "prices", #"{"id": "p2", "eur": 2}"#])
            try await alice.ok(["push"])
            let minted = try await TSyncProcess.run(
                ["user", "token", "alice", "--table", "docs", "--ttl", "1h", "--db", db], in: directory.path)
            let token = minted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            try await alice.ok(["update", "prices", "p1", "--set", "eur=3"])
            try await alice.ok(["update", "prices", "p2", "--set", "eur=4"])
            #expect(try await alice.run(["push"], environment: ["TSYNC_TOKEN": token]).status == 2)
            let resolve = try await alice.run(["resolve", "--all", "--theirs"], environment: ["TSYNC_TOKEN": token])
            #expect(resolve.status == 1 && resolve.stderr.contains("the 2 errors stay in the error table"), "\(resolve)")
            #expect(try JSONOutput.array(try await alice.run(["conflicts", "--json"]).stdout).count == 2)
            // With the account's own token the same errors settle.
            let settled = try await alice.run(["resolve", "--all", "--theirs"])
            #expect(settled.status == 0, "\(settled)")
            #expect(try JSONOutput.array(try await alice.run(["conflicts", "--json"]).stdout).isEmpty)
        }
    }

    @Test(arguments: backends) func rolesAndGroupsApplyAtTheNextRequest(backend: Backend) async throws {
        try await Self.withServer(backend) { url, db, directory in
            let alice = try await Self.login(url, "alice")
            let bob = try await Self.login(url, "bob")
            #expect(try await HTTP.send("POST", url + "/tables/docs", body: #"{"id":"a1","team":"a"}"#, token: alice).status == 201)
            #expect(try await HTTP.send("GET", url + "/tables/docs/a1", token: bob).status == 404)

            let join = try await TSyncProcess.run(["user", "group", "bob", "--add", "a", "--db", db], in: directory.path)
            #expect(join.status == 0 && join.stderr.contains("a, b"), "\(join)")
            #expect(try await HTTP.send("GET", url + "/tables/docs/a1", token: bob).status == 200, "the same token, no restart")
            let role = try await TSyncProcess.run(["user", "role", "bob", "--add", "admin", "--db", db], in: directory.path)
            #expect(role.status == 0, "\(role)")
            #expect(try await HTTP.send("POST", url + "/tables/prices", body: #"{"id":"p1"}"#, token: bob).status == 201)

            let list = try await TSyncProcess.run(["user", "list", "--json", "--db", db], in: directory.path)
            let accounts = try JSONOutput.array(list.stdout).compactMap(\.objectValue)
            let entry = try #require(accounts.first { $0["name"] == "bob" })
            #expect(entry["roles"] == ["admin"] && entry["groups"] == ["a", "b"], "\(list)")
            let text = try await TSyncProcess.run(["user", "list", "--db", db], in: directory.path)
            #expect(text.lines.contains("bob\trole:admin group:a group:b"), "\(text)")

            let leave = try await TSyncProcess.run(["user", "group", "bob", "--remove", "a", "--db", db], in: directory.path)
            #expect(leave.status == 0, "\(leave)")
            #expect(try await HTTP.send("GET", url + "/tables/docs/a1", token: bob).status == 404)
            #expect(try Self.ids(try await HTTP.send("GET", url + "/tables/docs", token: bob)) == [])
            _ = try await TSyncProcess.run(["user", "role", "bob", "--remove", "admin", "--db", db], in: directory.path)
            #expect(try await HTTP.send("PATCH", url + "/tables/prices/p1", body: #"{"eur":1}"#, token: bob).status == 403)

            let unknown = try await TSyncProcess.run(["user", "group", "carol", "--add", "a", "--db", db], in: directory.path)
            #expect(unknown.status == 65 && unknown.stderr.contains("no account named"), "\(unknown)")
            let invalid = try await TSyncProcess.run(["user", "role", "bob", "--add", "a b", "--db", db], in: directory.path)
            #expect(invalid.status == 64, "\(invalid)")
        }
    }

    @Test(arguments: backends) func scopedTokensGet403AndLoseNothing(backend: Backend) async throws {
        try await Self.withServer(backend) { url, db, directory in
            let minted = try await TSyncProcess.run(
                ["user", "token", "alice", "--read-only", "--table", "docs", "--ttl", "1h", "--db", db], in: directory.path)
            #expect(minted.status == 0, "\(minted)")
            let token = minted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(try await HTTP.send("GET", url + "/tables/docs", token: token).status == 200)
            let write = try await HTTP.send("POST", url + "/tables/docs", body: #"{"id":"a5","team":"a"}"#, token: token)
            #expect(write.status == 403 && write.body.contains("may only read"), "\(write)")
            let other = try await HTTP.send("GET", url + "/tables/prices", token: token)
            #expect(other.status == 403 && other.body.contains("docs"), "\(other)")

            let store = try await TSyncSandbox(remote: url)
            try await store.ok(["insert", "docs", #"{"id": "a6", "team": "a"}"#])
            let push = try await store.run(["push"], environment: ["TSYNC_TOKEN": token])
            #expect(push.status == 2, "\(push)")
            let errors = try JSONOutput.array(try await store.run(["conflicts", "--json"]).stdout)
            #expect(errors.first?.objectValue?["class"] == "forbidden", "\(errors)")
            #expect(try await store.run(["get", "docs", "a6"]).status == 0)

            let whoami = try await store.run(["whoami", "--json"], environment: ["TSYNC_TOKEN": token])
            #expect(whoami.status == 0, "\(whoami)")
            let identity = try JSONOutput.object(whoami.stdout)
            #expect(identity["user"] == "alice" && identity["roles"] == ["admin"] && identity["groups"] == ["a"], "\(identity)")
            #expect(identity["token"] == ["readOnly": true, "tables": ["docs"]], "\(identity)")
        }
    }
}

/// `--access` as `tsync serve` reads it: bad rules are usage errors before anything listens, and
/// the config file takes the same rules.
@Suite struct AccessRuleOptionTests {
    @Test func badRulesAreUsageErrors() async throws {
        let directory = try TemporaryDirectory()
        for (rule, words) in [
            ("docs", "TABLE:OP=RULE"), ("docs:fly=anyone", "invalid operation"), ("docs:read=group:", "group:FIELD"),
            ("docs:read=friends", "use anyone, authenticated"), ("docs:read=role:a b", "invalid role"),
            ("docs:read=group:updatedAt", "group:FIELD"),
        ] {
            let serve = try await TSyncProcess.run(
                ["serve", "--db", "sqlite:" + directory.path + "/s.db", "--port", "0", "--access", rule], in: directory.path)
            #expect(serve.status == 64 && serve.stderr.contains(words), "\(rule): \(serve)")
        }
        let open = try await TSyncProcess.run(
            ["serve", "--db", "sqlite:" + directory.path + "/s.db", "--port", "0", "--no-auth", "--access", "docs:read=owner"],
            in: directory.path)
        #expect(open.status == 64 && open.stderr.contains("needs authentication"), "\(open)")
    }

    @Test func theConfigFileTakesRules() async throws {
        let directory = try TemporaryDirectory()
        let config = directory.path + "/serve.toml"
        try #"access = ["board:read=anyone,write=nobody"]"#.write(toFile: config, atomically: true, encoding: .utf8)
        let server = try ServerProcess(
            arguments: ["serve", "--db", "sqlite:" + directory.path + "/s.db", "--port", "0", "--config", config], log: directory.path)
        defer { server.stop() }
        let url = try await server.waitForAddress()
        #expect(try await HTTP.send("GET", url + "/tables/board").status == 200, "read=anyone: no token needed")
        #expect(try await HTTP.send("GET", url + "/tables/todo").status == 401, "other tables keep the default")
        #expect(try await HTTP.send("POST", url + "/tables/board", body: #"{"id":"x"}"#).status == 403)
    }
}
