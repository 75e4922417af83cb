import Foundation
import Testing
import TSyncModel

/// Records that leave or come into an account's view (docs/DESIGN.md §11.1): a record's group
/// field changes, an account leaves or joins a group, loses or gains a role. The next incremental
/// pull brings the records no longer readable as ordinary deletions, which a plain v2 client (raw
/// HTTP here) takes as it takes any deletion, and the records now readable as they are; an
/// account learns no id of a record it never could read. The real server and binary, on SQLite
/// and (with TSYNC_TEST_POSTGRES_URL) PostgreSQL.
@Suite(.serialized) struct AccessViewChangeTests {
    typealias Backend = AccessRuleTests.Backend

    static let rules =
        AccessRuleTests.rules + ["--access", "vault:read=role:admin,write=role:admin"]

    /// A raw pull page as a plain v2 client asks it: after `since`, in `updatedAt` order, deleted
    /// records included.
    static func pull(_ url: String, _ table: String, since: String?, token: String) async throws -> HTTP.Reply {
        var query = "$orderby=updatedAt&__includeDeleted=true&$top=1000"
        if let since {
            let filter = "updatedAt gt datetimeoffset'\(since)'"
            query += "&$filter=" + (filter.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        }
        return try await HTTP.send("GET", url + "/tables/\(table)?" + query, token: token)
    }

    /// The page's records by id: (deleted, updatedAt).
    static func items(_ reply: HTTP.Reply) throws -> [String: (deleted: Bool, updatedAt: String)] {
        #expect(reply.status == 200, "\(reply.status) \(reply.body)")
        var items: [String: (deleted: Bool, updatedAt: String)] = [:]
        guard case .array(let array) = try JSONParser.parse(reply.body) else { return items }
        for item in array {
            guard let object = item.objectValue, let id = object["id"]?.stringValue, let updatedAt = object["updatedAt"]?.stringValue
            else { continue }
            #expect(object["version"]?.stringValue?.isEmpty == false, "every item has a version: \(object)")
            items[id] = (object["deleted"] == .bool(true), updatedAt)
        }
        return items
    }

    static func newest(_ items: [String: (deleted: Bool, updatedAt: String)], after since: String?) -> String? {
        (items.values.map(\.updatedAt) + [since].compactMap { $0 }).max()
    }

    static func user(_ arguments: [String], _ db: String, _ directory: TemporaryDirectory) async throws {
        let result = try await TSyncProcess.run(
            ["user"] + arguments + ["--db", db], in: directory.path, stdin: AccessRuleTests.password + "\n")
        #expect(result.status == 0, "\(arguments): \(result)")
    }

    @Test(arguments: AccessRuleTests.backends) func aPlainClientGetsWhatLeftItsViewAsDeletions(backend: Backend) async throws {
        try await AccessRuleTests.withServer(backend, options: Self.rules) { url, db, directory in
            let alice = try await AccessRuleTests.login(url, "alice")
            try await Self.user(["group", "alice", "--add", "c"], db, directory)
            for (id, team) in [("a1", "a"), ("a2", "a"), ("a4", "a")] {
                #expect(
                    try await HTTP.send("POST", url + "/tables/docs", body: #"{"id":"\#(id)","team":"\#(team)"}"#, token: alice).status
                        == 201)
            }
            try await Self.user(["group", "bob", "--add", "a"], db, directory)
            let bob = try await AccessRuleTests.login(url, "bob")
            let first = try Self.items(try await Self.pull(url, "docs", since: nil, token: bob))
            #expect(Set(first.keys) == ["a1", "a2", "a4"] && first.values.allSatisfy { !$0.deleted }, "\(first)")
            var since = Self.newest(first, after: nil)

            // a1 goes to group c (bob never in it) while bob is in a; then bob leaves a; then a3
            // comes to a, c1 to c, and a4 (which bob held) changes in a.
            #expect(try await HTTP.send("PATCH", url + "/tables/docs/a1", body: #"{"team":"c"}"#, token: alice).status == 200)
            try await Self.user(["group", "bob", "--remove", "a"], db, directory)
            #expect(try await HTTP.send("POST", url + "/tables/docs", body: #"{"id":"a3","team":"a"}"#, token: alice).status == 201)
            #expect(try await HTTP.send("POST", url + "/tables/docs", body: #"{"id":"c1","team":"c"}"#, token: alice).status == 201)
            #expect(try await HTTP.send("PATCH", url + "/tables/docs/a4", body: #"{"n":1}"#, token: alice).status == 200)
            let left = try Self.items(try await Self.pull(url, "docs", since: since, token: bob))
            #expect(Set(left.keys) == ["a1", "a2", "a4"], "what bob held, and nothing he never could read: \(left)")
            #expect(left.values.allSatisfy { $0.deleted && $0.updatedAt > (since ?? "") }, "as deletions after his checkpoint: \(left)")
            since = Self.newest(left, after: since)
            #expect(try Self.items(try await Self.pull(url, "docs", since: since, token: bob)).isEmpty, "each once")

            // The leak probe: an account never in a or c learns none of their ids, from the start.
            try await Self.user(["add", "carol", "--password-stdin", "--group", "b"], db, directory)
            let carol = try await AccessRuleTests.login(url, "carol")
            let stranger = try Self.items(try await Self.pull(url, "docs", since: nil, token: carol))
            #expect(stranger.isEmpty, "\(stranger)")
            // Bob from the start: the deletions of what he could read once, never c1 or a3.
            let fromStart = try Self.items(try await Self.pull(url, "docs", since: nil, token: bob))
            #expect(Set(fromStart.keys).isSubset(of: ["a1", "a2", "a4"]) && fromStart.values.allSatisfy(\.deleted), "\(fromStart)")

            // Joining again brings the group's records as they are, after the checkpoint.
            try await Self.user(["group", "bob", "--add", "a"], db, directory)
            let joined = try Self.items(try await Self.pull(url, "docs", since: since, token: bob))
            #expect(Set(joined.keys) == ["a2", "a3", "a4"] && joined.values.allSatisfy { !$0.deleted }, "\(joined)")

            // A role: gained, its table read; lost, its records come as deletions; never had, 403.
            #expect(try await HTTP.send("POST", url + "/tables/vault", body: #"{"id":"v1"}"#, token: alice).status == 201)
            #expect(try await Self.pull(url, "vault", since: nil, token: bob).status == 403)
            try await Self.user(["role", "bob", "--add", "admin"], db, directory)
            let vault = try Self.items(try await Self.pull(url, "vault", since: nil, token: bob))
            #expect(Set(vault.keys) == ["v1"] && vault.values.allSatisfy { !$0.deleted }, "\(vault)")
            let vaultSince = Self.newest(vault, after: nil)
            try await Self.user(["role", "bob", "--remove", "admin"], db, directory)
            let lost = try Self.items(try await Self.pull(url, "vault", since: vaultSince, token: bob))
            #expect(Set(lost.keys) == ["v1"] && lost.values.allSatisfy(\.deleted), "\(lost)")
            #expect(try await Self.pull(url, "vault", since: Self.newest(lost, after: vaultSince), token: bob).status == 200)
            #expect(try await Self.pull(url, "vault", since: nil, token: carol).status == 403, "never an admin: refused")
            // Single reads stay refused.
            #expect(try await HTTP.send("GET", url + "/tables/vault/v1", token: bob).status == 404)
        }
    }

    /// Records that left bob's view, some by several moves through his groups, reach his next
    /// incremental pull once each, walked in pages of 7 after tsync's checkpoint (so every kind
    /// of change meets page boundaries), and the records still readable once each, as they are.
    @Test(arguments: AccessRuleTests.backends) func eachRecordThatLeftTheViewComesOncePerPull(backend: Backend) async throws {
        try await AccessRuleTests.withServer(backend, options: Self.rules) { url, db, directory in
            try await Self.user(["group", "alice", "--add", "b", "--add", "c", "--add", "d"], db, directory)
            try await Self.user(["group", "bob", "--add", "a", "--add", "c"], db, directory)
            let alice = try await AccessRuleTests.login(url, "alice")
            let bob = try await AccessRuleTests.login(url, "bob")
            let ids = (0..<60).map { "r" + String($0 + 100) }
            for id in ids {
                #expect(try await HTTP.send("POST", url + "/tables/docs", body: #"{"id":"\#(id)","team":"a"}"#, token: alice).status == 201)
            }
            let start = try await Self.walk(url, "docs", after: nil, token: bob)
            #expect(start.count == 60 && start.allSatisfy { !$0.deleted }, "\(start.count)")
            let checkpoint = try #require(start.last)
            // r100–r119 leave once (a to d), r120–r139 twice (a to b to d), r140–r149 three times
            // (a to c to a to d); r150–r159 move to b, which bob still reads.
            func move(_ id: String, _ teams: [String]) async throws {
                for team in teams {
                    let reply = try await HTTP.send("PATCH", url + "/tables/docs/" + id, body: #"{"team":"\#(team)"}"#, token: alice)
                    #expect(reply.status == 200, "\(id) to \(team): \(reply.status) \(reply.body)")
                }
            }
            for (index, id) in ids.enumerated() {
                switch index {
                case ..<20: try await move(id, ["d"])
                case ..<40: try await move(id, ["b", "d"])
                case ..<50: try await move(id, ["c", "a", "d"])
                default: try await move(id, ["b"])
                }
            }
            let pulled = try await Self.walk(url, "docs", after: checkpoint, token: bob)
            var times: [String: Int] = [:]
            for item in pulled { times[item.id, default: 0] += 1 }
            let left = Set(ids.prefix(50))
            #expect(pulled.count == 60, "one item per record, not \(pulled.count): \(times.filter { $0.value > 1 })")
            #expect(times.allSatisfy { $0.value == 1 } && Set(times.keys) == Set(ids), "\(times.filter { $0.value != 1 })")
            #expect(pulled.allSatisfy { $0.deleted == left.contains($0.id) }, "the 50 that left as deletions, the 10 in b as they are")
            #expect(try await Self.walk(url, "docs", after: pulled.last, token: bob).isEmpty)
        }
    }

    /// An incremental pull as tsync walks it: pages of 7 after the checkpoint (`updatedAt`, `id`).
    static func walk(_ url: String, _ table: String, after start: PulledItem?, token: String) async throws -> [PulledItem] {
        var items: [PulledItem] = []
        var last = start
        for _ in 0..<100 {
            var query = "$orderby=updatedAt,id&__includeDeleted=true&$top=7"
            if let last {
                let time = "datetimeoffset'\(last.updatedAt)'"
                let filter = "updatedAt ge \(time) and (updatedAt gt \(time) or updatedAt eq \(time) and id gt '\(last.id)')"
                query += "&$filter=" + (filter.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
            }
            let reply = try await HTTP.send("GET", url + "/tables/\(table)?" + query, token: token)
            #expect(reply.status == 200, "\(reply.status) \(reply.body)")
            guard case .array(let array) = try JSONParser.parse(reply.body), !array.isEmpty else { return items }
            for item in array {
                let object = try #require(item.objectValue)
                let id = try #require(object["id"]?.stringValue)
                let updatedAt = try #require(object["updatedAt"]?.stringValue)
                items.append(PulledItem(id: id, updatedAt: updatedAt, deleted: object["deleted"] == .bool(true)))
            }
            last = items.last
        }
        Issue.record("the walk did not end in 100 pages")
        return items
    }

    struct PulledItem {
        var id: String
        var updatedAt: String
        var deleted: Bool
    }

    /// A model: accounts, groups and a role change between rounds, records move between groups,
    /// and after every round each store, pulled incrementally (one also watching), holds exactly
    /// what its account may read by the test's own evaluation of the rules over the server's rows.
    @Test(arguments: AccessRuleTests.backends) func everyStoreFollowsItsViewAsItChanges(backend: Backend) async throws {
        var generator = SeededGenerator(seed: UInt64(ProcessInfo.processInfo.environment["TSYNC_MODEL_SEED"] ?? "") ?? 11)
        let groups = ["g0", "g1", "g2"]
        var accounts = (0..<4).map { index in
            AccessModelTests.Account(
                name: "u\(index)", roles: index == 0 || Bool.random(using: &generator) ? ["admin"] : [],
                groups: Set(groups.filter { _ in Bool.random(using: &generator) }).union(["g\(index % 3)"]))
        }
        let tables = ["gdocs", "vault"]
        let options = ["--access", "gdocs:read=group:team,write=group:team", "--access", "vault:read=role:admin,write=role:admin"]
        let directory = try TemporaryDirectory()
        func run(_ db: String, rows: @escaping (String) async throws -> [String: AccessModelTests.Row]) async throws {
            for account in accounts {
                let labels = account.roles.sorted().flatMap { ["--role", $0] } + account.groups.sorted().flatMap { ["--group", $0] }
                try await Self.user(["add", account.name, "--password-stdin"] + labels, db, directory)
            }
            let server = try ServerProcess(arguments: ["serve", "--db", db, "--port", "0"] + options, log: directory.path)
            defer { server.stop() }
            let url = try await server.waitForAddress()
            let stores = try await AccessModelTests.loggedInStores(accounts.map(\.name), remote: url)
            for store in stores {
                for table in tables { _ = try await store.run(["pull", table, "--query-id", "all"]) }
            }
            let watcher = try LiveSyncTests.Watcher(stores[1], ["--table", "gdocs", "--interval", "1"])
            defer { watcher.process.signal(SIGINT) }
            var next = 0
            var moved = 0
            var relabelled = 0
            var lostByView = 0
            var held: [[String: Set<String>]] = Array(repeating: [:], count: accounts.count)
            for round in 0..<4 {
                // Labels change first; the round's writes then wake the watcher's held read.
                for _ in 0..<2 {
                    let index = Int.random(in: 0..<accounts.count, using: &generator)
                    let name = accounts[index].name
                    if Bool.random(using: &generator) {
                        let group = groups.randomElement(using: &generator) ?? "g0"
                        let leaves = accounts[index].groups.contains(group)
                        try await Self.user(["group", name, leaves ? "--remove" : "--add", group], db, directory)
                        if leaves { accounts[index].groups.remove(group) } else { accounts[index].groups.insert(group) }
                    } else {
                        let loses = accounts[index].roles.contains("admin")
                        try await Self.user(["role", name, loses ? "--remove" : "--add", "admin"], db, directory)
                        if loses { accounts[index].roles.remove("admin") } else { accounts[index].roles.insert("admin") }
                    }
                    relabelled += 1
                }
                for (index, account) in accounts.enumerated() {
                    let store = stores[index]
                    for _ in 0..<3 {
                        let table = Int.random(in: 0..<3, using: &generator) == 0 ? "vault" : "gdocs"
                        let records = try await AccessModelTests.records(store, table)
                        let team = groups.randomElement(using: &generator) ?? "g0"
                        if Int.random(in: 0..<2, using: &generator) == 0 || records.isEmpty {
                            next += 1
                            try await store.ok(["insert", table, #"{"id": "r\#(next)", "team": "\#(team)", "n": \#(next)}"#])
                        } else if let record = records.randomElement(using: &generator), let id = record["id"]?.stringValue {
                            // Into another group: its old group's other members lose it.
                            try await store.ok(["update", table, id, "--set", "team=\(team)"])
                            if table == "gdocs", record["team"]?.stringValue != team, account.groups.contains(team) { moved += 1 }
                        }
                    }
                    let push = try await store.run(["push"])
                    #expect(
                        push.status == 0 || push.status == 2,
                        "round \(round) \(account.name): \(push) \(push.stderr) \(server.log.split(separator: "\n").suffix(5))")
                    // The local change goes back to what the server last gave (not asked: a table
                    // the account no longer reads is 403).
                    if push.status == 2 { try await store.ok(["resolve", "--all", "--discard"]) }
                }
                let state = try await rows(db)
                func expected(_ account: AccessModelTests.Account, _ table: String) -> [String: [String: JSONValue]] {
                    var expected: [String: [String: JSONValue]] = [:]
                    for (key, row) in state where key.hasPrefix(table + "/") && !row.deleted && Self.mayRead(account, table, row) {
                        expected[String(key.dropFirst(table.count + 1))] = row.fields
                    }
                    return expected
                }
                for (index, account) in accounts.enumerated() {
                    for table in tables {
                        let pull = try await stores[index].run(["pull", table, "--query-id", "all"])
                        let readable = table == "gdocs" || account.roles.contains("admin")
                        #expect(pull.status == 0 || !readable, "round \(round) \(account.name) \(table): \(pull) \(pull.stderr)")
                        let got = try await Self.contents(stores[index], table)
                        #expect(
                            got == expected(account, table),
                            "round \(round): \(account.name) (\(account.roles), \(account.groups)) in \(table)")
                        let ids = Set(got.keys)
                        lostByView += (held[index][table] ?? []).subtracting(ids).count { id in state[table + "/" + id]?.deleted == false }
                        held[index][table] = ids
                    }
                }
                // The watching store comes to the same by itself.
                let want = expected(accounts[1], "gdocs")
                var seen: [String: [String: JSONValue]] = [:]
                let deadline = Date().addingTimeInterval(30)
                while Date() < deadline {
                    seen = try await Self.contents(stores[1], "gdocs")
                    if seen == want { break }
                    try await Task.sleep(for: .milliseconds(100))
                }
                #expect(seen == want, "round \(round): the watching store; \(watcher.process.stderrSoFar)")
            }
            #expect(moved > 0 && relabelled > 0 && lostByView > 0, "moved \(moved), relabelled \(relabelled), lost by view \(lostByView)")
        }
        switch backend {
        case .sqlite:
            let path = (directory.path as NSString).appendingPathComponent("server.db")
            try await run("sqlite:" + path) { _ in try await Self.sqliteRows(path) }
        case .postgres:
            try await PostgresFixture.withFreshDatabase { db in try await run(db) { url in try await AccessModelTests.postgresRows(url) } }
        }
    }

    static func mayRead(_ account: AccessModelTests.Account, _ table: String, _ row: AccessModelTests.Row) -> Bool {
        switch table {
        case "gdocs":
            guard case .string(let team)? = row.fields["team"] else { return false }
            return account.groups.contains(team)
        case "vault": return account.roles.contains("admin")
        default: return false
        }
    }

    /// A store's records of `table` by id, user fields only.
    static func contents(_ store: TSyncSandbox, _ table: String) async throws -> [String: [String: JSONValue]] {
        var got: [String: [String: JSONValue]] = [:]
        for record in try await AccessModelTests.records(store, table) {
            guard let id = record["id"]?.stringValue else { continue }
            got[id] = record.filter { !["id", "createdAt", "updatedAt", "version", "deleted"].contains($0.key) }
        }
        return got
    }

    static func sqliteRows(_ path: String) async throws -> [String: AccessModelTests.Row] {
        var rows: [String: AccessModelTests.Row] = [:]
        for table in ["gdocs", "vault"] {
            let sql = "SELECT json_object('id', id, 'deleted', deleted, 'owner', owner, 'body', json(body)) FROM t_\(table)"
            let (status, output, errors) = try await ChildProcess.output("/usr/bin/env", ["sqlite3", path, sql])
            if status != 0, errors.contains("no such table") { continue }
            #expect(status == 0, "\(errors)")
            for line in output.split(separator: "\n") where !line.isEmpty {
                guard let object = try JSONParser.parse(String(line)).objectValue, let id = object["id"]?.stringValue,
                    case .object(let fields)? = object["body"]
                else { continue }
                let deleted = object["deleted"] == .bool(true) || object["deleted"] == .int(1)
                rows[table + "/" + id] = AccessModelTests.Row(deleted: deleted, owner: object["owner"]?.stringValue, fields: fields)
            }
        }
        return rows
    }
}
