import Foundation
import Testing
import TSyncModel

/// A model of the table rules, against the real server and client: accounts with random roles and
/// groups, tables with rules, and stores of each account making random changes, pushing them,
/// settling what the server refused, and pulling. After every round each store must hold exactly
/// the records its account may read, as the test works it out itself from the rules and the
/// server database's rows (read with sqlite3 or psql, past the server).
@Suite(.serialized) struct AccessModelTests {
    typealias Backend = AccessRuleTests.Backend

    /// The rules served, and the same rules as the model reads them.
    static let tables: [(name: String, rule: String)] = [
        ("gdocs", "gdocs:read=group:team,write=group:team"),
        ("notes", "notes:read=owner,write=owner"),
        ("prices", "prices:read=authenticated,write=role:admin"),
        ("vault", "vault:read=role:admin,write=role:admin"),
    ]
    static let groups = ["g0", "g1", "g2"]

    struct Account {
        var name: String
        var roles: Set<String>
        var groups: Set<String>
    }

    /// A stored record as the model sees it: deleted or not, its owner, its fields.
    /// A new store for each account, logged in to `remote` with the tests' password.
    static func loggedInStores(_ names: [String], remote: String) async throws -> [TSyncSandbox] {
        var stores: [TSyncSandbox] = []
        for name in names {
            let store = try await TSyncSandbox(remote: remote)
            let login = try await store.run(["login", "--user", name, "--password-stdin"], stdin: AccessRuleTests.password + "\n")
            #expect(login.status == 0, "\(login)")
            stores.append(store)
        }
        return stores
    }

    struct Row {
        var deleted: Bool
        var owner: String?
        var fields: [String: JSONValue]
    }

    /// Whether `account` may read `row` of `table`: the rules, evaluated here.
    static func mayRead(_ account: Account, _ table: String, _ row: Row) -> Bool {
        switch table {
        case "gdocs":
            guard case .string(let team)? = row.fields["team"] else { return false }
            return account.groups.contains(team)
        case "notes": return row.owner == account.name
        case "prices": return true
        case "vault": return account.roles.contains("admin")
        default: return false
        }
    }

    @Test(arguments: AccessRuleTests.backends) func everyStoreHoldsExactlyWhatItsAccountMayRead(backend: Backend) async throws {
        var generator = SeededGenerator(seed: UInt64(ProcessInfo.processInfo.environment["TSYNC_MODEL_SEED"] ?? "") ?? 38)
        let accounts = (0..<4).map { index in
            Account(
                name: "u\(index)", roles: index == 0 || Bool.random(using: &generator) ? ["admin"] : [],
                groups: Set(Self.groups.filter { _ in Bool.random(using: &generator) }).union(index == 1 ? ["g0"] : []))
        }
        let options = Self.tables.flatMap { ["--access", $0.rule] }
        let directory = try TemporaryDirectory()
        func run(_ db: String, rows: @escaping (String) async throws -> [String: Row]) async throws {
            for account in accounts {
                let labels = account.roles.sorted().flatMap { ["--role", $0] } + account.groups.sorted().flatMap { ["--group", $0] }
                let add = try await TSyncProcess.run(
                    ["user", "add", account.name, "--password-stdin", "--db", db] + labels, in: directory.path,
                    stdin: AccessRuleTests.password + "\n")
                #expect(add.status == 0, "\(add)")
            }
            let server = try ServerProcess(arguments: ["serve", "--db", db, "--port", "0"] + options, log: directory.path)
            defer { server.stop() }
            let url = try await server.waitForAddress()
            let stores = try await Self.loggedInStores(accounts.map(\.name), remote: url)
            var next = 0
            // What the run went through, so that it cannot pass by refusing or showing nothing.
            var refused = 0
            var shown = 0
            for pass in 0..<3 {
                for (index, account) in accounts.enumerated() {
                    let store = stores[index]
                    for _ in 0..<4 {
                        let table = Self.tables.randomElement(using: &generator)?.name ?? "gdocs"
                        let held = try await Self.records(store, table)
                        let choice = Int.random(in: 0..<10, using: &generator)
                        if choice < 5 || held.isEmpty {
                            next += 1
                            // Sometimes a group the account is not in: the server refuses it.
                            let team = Self.groups.randomElement(using: &generator) ?? "g0"
                            let item = #"{"id": "r\#(next)", "team": "\#(team)", "n": \#(next)}"#
                            try await store.ok(["insert", table, item])
                        } else if let record = held.randomElement(using: &generator), let id = record["id"]?.stringValue {
                            // The group field stays: a record leaving a view is not modelled here.
                            if choice < 8 {
                                try await store.ok(["update", table, id, "--set", "n=\(Int.random(in: 0..<1000, using: &generator))"])
                            } else {
                                try await store.ok(["delete", table, id])
                            }
                        }
                    }
                    let push = try await store.run(["push"])
                    #expect(push.status == 0 || push.status == 2, "round \(pass) \(account.name): \(push)")
                    if push.status == 2 {
                        let errors = try JSONOutput.array(try await store.run(["conflicts", "--json"]).stdout)
                        let classes = Set(errors.compactMap { $0.objectValue?["class"]?.stringValue })
                        #expect(classes.isSubset(of: ["forbidden", "missing"]), "round \(pass) \(account.name): \(errors)")
                        refused += errors.count
                        try await store.ok(["resolve", "--all", "--theirs"])
                    }
                }
                let state = try await rows(db)
                for (index, account) in accounts.enumerated() {
                    for table in Self.tables.map(\.name) {
                        let pull = try await stores[index].run(["pull", table])
                        #expect(pull.status == 0, "round \(pass) \(account.name) \(table): \(pull)")
                        let held = try await Self.records(stores[index], table)
                        var expected: [String: [String: JSONValue]] = [:]
                        for (key, row) in state where key.hasPrefix(table + "/") && !row.deleted && Self.mayRead(account, table, row) {
                            expected[String(key.dropFirst(table.count + 1))] = row.fields
                        }
                        var got: [String: [String: JSONValue]] = [:]
                        for record in held {
                            guard let id = record["id"]?.stringValue else { continue }
                            got[id] = record.filter { !["id", "createdAt", "updatedAt", "version", "deleted"].contains($0.key) }
                        }
                        shown += got.count
                        #expect(got == expected, "round \(pass): \(account.name) (\(account.roles), \(account.groups)) in \(table)")
                    }
                }
            }
            #expect(refused > 0 && shown > 0, "the run refused \(refused) changes and showed \(shown) records")
        }
        switch backend {
        case .sqlite:
            let path = (directory.path as NSString).appendingPathComponent("server.db")
            try await run("sqlite:" + path) { _ in try await Self.sqliteRows(path) }
        case .postgres:
            try await PostgresFixture.withFreshDatabase { db in try await run(db) { url in try await Self.postgresRows(url) } }
        }
    }

    /// The records a store holds in `table`; none when it has never held one (`query` exits 65).
    static func records(_ store: TSyncSandbox, _ table: String) async throws -> [[String: JSONValue]] {
        let query = try await store.run(["query", table, "--json"])
        if query.status == 65 { return [] }
        #expect(query.status == 0, "\(query)")
        return try JSONOutput.array(query.stdout).compactMap(\.objectValue)
    }

    /// Every stored record of the model's tables, by `TABLE/ID`, from the SQLite database.
    static func sqliteRows(_ path: String) async throws -> [String: Row] {
        var rows: [String: Row] = [:]
        for (table, _) in tables {
            let sql = "SELECT json_object('id', id, 'deleted', deleted, 'owner', owner, 'body', json(body)) FROM t_\(table)"
            let (status, output, errors) = try await ChildProcess.output("/usr/bin/env", ["sqlite3", path, sql])
            if status != 0, errors.contains("no such table") { continue }
            #expect(status == 0, "\(errors)")
            try decode(output, table: table, into: &rows)
        }
        return rows
    }

    /// The same from PostgreSQL.
    static func postgresRows(_ url: String) async throws -> [String: Row] {
        let sql =
            "SELECT json_build_object('table', table_name, 'id', id, 'deleted', deleted, 'owner', owner, 'body', body) FROM tsync_records"
        let (status, output, errors) = try await ChildProcess.output("/usr/bin/env", ["psql", "-qAt", url, "-c", sql])
        #expect(status == 0, "\(errors)")
        var rows: [String: Row] = [:]
        try decode(output, table: nil, into: &rows)
        return rows
    }

    private static func decode(_ output: String, table: String?, into rows: inout [String: Row]) throws {
        for line in output.split(separator: "\n") where !line.isEmpty {
            guard let object = try JSONParser.parse(String(line)).objectValue, let id = object["id"]?.stringValue,
                let name = table ?? object["table"]?.stringValue, case .object(let fields)? = object["body"]
            else { continue }
            let deleted = object["deleted"] == .bool(true) || object["deleted"] == .int(1)
            rows[name + "/" + id] = Row(deleted: deleted, owner: object["owner"]?.stringValue, fields: fields)
        }
    }
}

/// A small deterministic generator (SplitMix64), so a failing model run can be replayed with
/// TSYNC_MODEL_SEED.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49EB_133B_11EB
        return z ^ (z >> 31)
    }
}

extension ChildProcess {
    /// Runs `executable` to its end; its status, stdout and stderr.
    static func output(_ executable: String, _ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        let files = try TemporaryDirectory()
        let out = (files.path as NSString).appendingPathComponent("stdout")
        let errors = (files.path as NSString).appendingPathComponent("stderr")
        let child = try ChildProcess(executable, arguments, stdout: out, stderr: errors)
        await child.wait()
        func text(_ path: String) -> String { String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self) }
        return (child.status ?? -1, text(out), text(errors))
    }
}
