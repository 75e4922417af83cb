import Foundation
import GRDB
import Logging
import Testing
import TSyncModel
@testable import TSyncServer

@Suite struct AuthTests {
    static let alice = ("alice", "correct horse")

    @Test func loginTokenLogoutCycle() async throws {
        try await withTestServer(ServerConfiguration(), accounts: [Self.alice]) { http in
            let anonymous = try await http.get("/tables/todo")
            #expect(anonymous.status == 401)
            #expect(anonymous.error?.contains("log in") == true)
            #expect(try await http.get("/tables/todo", token: "not-a-token").status == 401)

            let login = try await http.post("/.auth/login/custom", ["username": "alice", "password": "correct horse"])
            #expect(login.status == 200)
            let token = try #require(login.object["authenticationToken"]?.stringValue)
            #expect(login.object["user"]?.objectValue?["userId"] == "alice")
            #expect(token.utf8.count >= 43, "256 bits")

            #expect(try await http.get("/tables/todo", token: token).status == 200)
            #expect(try await http.get("/tables/todo", headers: ["Authorization": "Bearer \(token)"]).status == 200)
            #expect(try await http.get("/tables/todo", headers: ["Authorization": "Basic \(token)"]).status == 401)
            #expect(try await http.post("/tables/todo", ["id": "a"], token: token).status == 201)

            // Only the hash is stored.
            let stored = try await http.storedStrings("SELECT token_hash FROM tsync_tokens")
            #expect(stored.count == 1)
            #expect(!stored.contains(token))
            #expect(stored.first?.count == 64)

            #expect(try await http.post("/.auth/logout", token: token).status == 200)
            #expect(try await http.get("/tables/todo", token: token).status == 401)
            #expect(try await http.post("/.auth/logout", token: token).status == 401)
            #expect(try await http.post("/.auth/logout").status == 401)
        }
    }

    @Test func wrongPasswordsAndUnknownAccountsAre401() async throws {
        try await withTestServer(ServerConfiguration(), accounts: [Self.alice]) { http in
            let wrong = try await http.post("/.auth/login/custom", ["username": "alice", "password": "wrong password"])
            #expect(wrong.status == 401)
            #expect(wrong.error == "wrong user name or password")
            let unknown = try await http.post("/.auth/login/custom", ["username": "mallory", "password": "whatever1"])
            #expect(unknown.status == 401)
            #expect(unknown.error == wrong.error, "the same answer, so names cannot be probed")
            // A name no database can hold (PostgreSQL's text refuses U+0000) is a made-up name too.
            let unstorable = try await http.post("/.auth/login/custom", ["username": "ali\u{0}ce", "password": "whatever1"])
            #expect(unstorable.status == 401 && unstorable.error == wrong.error, "\(unstorable.status)")
            #expect(try await http.post("/.auth/login/custom", ["username": "alice"]).status == 400)
            #expect(try await http.post("/.auth/login/custom", ["username": "alice", "password": 5]).status == 400)
        }
    }

    @Test func tokensExpire() async throws {
        var configuration = ServerConfiguration()
        configuration.authentication.tokenLifetime = .seconds(3600)
        let clock = TestClock()
        try await withTestServer(configuration, accounts: [Self.alice], clock: clock.now) { http in
            let token = try await http.login("alice", "correct horse")
            clock.advance(by: .seconds(3599))
            #expect(try await http.get("/tables/todo", token: token).status == 200)
            clock.advance(by: .seconds(1))
            let expired = try await http.get("/tables/todo", token: token)
            #expect(expired.status == 401)
            #expect(expired.error != nil)
            _ = try await http.login("alice", "correct horse")
            let left = try await http.storedCount("tsync_tokens")
            #expect(left == 1, "expired tokens are purged at the next login")
        }
    }

    @Test func failedLoginsAreThrottledPerAccount() async throws {
        var configuration = ServerConfiguration()
        configuration.authentication.maximumFailures = 3
        configuration.authentication.failureWindow = .seconds(900)
        let clock = TestClock()
        try await withTestServer(configuration, accounts: [Self.alice], clock: clock.now) { http in
            for _ in 0..<3 {
                #expect(try await http.post("/.auth/login/custom", ["username": "alice", "password": "guess123"]).status == 401)
            }
            clock.advance(by: .seconds(100))
            let throttled = try await http.post("/.auth/login/custom", ["username": "alice", "password": "correct horse"])
            #expect(throttled.status == 429, "even the right password waits")
            #expect(throttled.headers[.retryAfter] == "800")
            #expect(throttled.error?.contains("too many failed logins") == true)

            clock.advance(by: .seconds(799))
            #expect(try await http.post("/.auth/login/custom", ["username": "alice", "password": "correct horse"]).status == 429)
            clock.advance(by: .seconds(1))
            #expect(try await http.post("/.auth/login/custom", ["username": "alice", "password": "correct horse"]).status == 200)
        }
    }

    @Test func failedLoginsAreThrottledPerAddress() async throws {
        var configuration = ServerConfiguration()
        configuration.authentication.maximumFailures = 3
        configuration.authentication.failureWindow = .seconds(60)
        try await withTestServer(configuration, accounts: [Self.alice]) { http in
            // Three different names from one address: the address is used up, for every account.
            for name in ["u1", "u2", "u3"] {
                #expect(try await http.post("/.auth/login/custom", ["username": .string(name), "password": "guess123"]).status == 401)
            }
            let reply = try await http.post("/.auth/login/custom", ["username": "alice", "password": "correct horse"])
            #expect(reply.status == 429)
            #expect(reply.headers[.retryAfter] != nil)
            let keys = try await http.storedStrings("SELECT key FROM tsync_login_attempts ORDER BY key")
            #expect(keys.count == 4, "three names' keys and one address key, in the database (alice's refused login wrote none): \(keys)")
            #expect(keys.filter { $0.hasPrefix("address:") }.count == 1)
        }
    }

    @Test func parallelGuessesCannotSlipPastTheLimit() async throws {
        var configuration = ServerConfiguration()
        configuration.authentication.maximumFailures = 3
        try await withTestServer(configuration, accounts: [Self.alice]) { http in
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for guess in 0..<10 {
                    group.addTask {
                        try await http.post("/.auth/login/custom", ["username": "alice", "password": .string("guess \(guess)")]).status
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            // Each guess counts on the account and on the address; concurrent guesses may take their
            // two counts in different orders (PostgreSQL runs them in parallel), so a guess can be
            // refused by one count while an earlier one is still within it: at most 3 get through.
            let guessed = statuses.filter { $0 == 401 }.count
            #expect((1...3).contains(guessed))
            #expect(statuses.filter { $0 == 429 }.count == 10 - guessed)
        }
    }

    @Test func successfulLoginsDoNotUseUpTheAddress() async throws {
        var configuration = ServerConfiguration()
        configuration.authentication.maximumFailures = 2
        try await withTestServer(configuration, accounts: [Self.alice]) { http in
            for _ in 0..<6 { _ = try await http.login("alice", "correct horse") }
            #expect(try await http.post("/.auth/login/custom", ["username": "alice", "password": "wrong one"]).status == 401)
            _ = try await http.login("alice", "correct horse")
        }
    }

    @Test func passwordChangeAndRemovalRevokeTokens() async throws {
        try await withTestServer(ServerConfiguration(), accounts: [Self.alice, ("bob", "bob password")]) { http in
            let manager = AccountManager(storage: http.storage, hasher: cheapHasher)
            let aliceToken = try await http.login("alice", "correct horse")
            let bobToken = try await http.login("bob", "bob password")
            try await manager.changePassword(name: "alice", password: "new password")
            #expect(try await http.get("/tables/t", token: aliceToken).status == 401)
            #expect(try await http.post("/.auth/login/custom", ["username": "alice", "password": "correct horse"]).status == 401)
            _ = try await http.login("alice", "new password")
            try await manager.remove(name: "bob")
            #expect(try await http.get("/tables/t", token: bobToken).status == 401)
            #expect(try await manager.list().map(\.name) == ["alice"])
        }
    }

    @Test func accountRules() async throws {
        let database = try TemporaryDatabase()
        defer { database.cleanUp() }
        let manager = AccountManager(storage: try database.open(), hasher: cheapHasher)
        try await manager.add(name: "carol.smith@example", password: "long enough")
        await #expect(throws: TSyncError.self) { try await manager.add(name: "carol.smith@example", password: "another one") }
        await #expect(throws: TSyncError.self) { try await manager.add(name: "bad name", password: "long enough") }
        await #expect(throws: TSyncError.self) { try await manager.add(name: "", password: "long enough") }
        await #expect(throws: TSyncError.self) { try await manager.add(name: "dave", password: "short") }
        await #expect(throws: TSyncError.self) { try await manager.remove(name: "nobody") }
        await #expect(throws: TSyncError.self) { try await manager.changePassword(name: "nobody", password: "long enough") }
    }

    @Test func passwordsAreArgon2idWithOWASPParameters() async throws {
        let hasher = PasswordHasher()
        let hash = try await hasher.hash("correct horse")
        #expect(hash.hasPrefix("$argon2id$v=19$m=19456,t=2,p=1$"))
        #expect(try await hasher.hash("correct horse") != hash, "a random salt each time")
        #expect(await hasher.verify("correct horse", against: hash))
        #expect(!(await hasher.verify("correct horsE", against: hash)))
        #expect(!(await hasher.verify("x", against: "not a hash")))
    }

    @Test func unsafeConfigurationsAreRefused() throws {
        #expect(throws: TSyncError.self) { try ServerConfiguration(host: "0.0.0.0", requiresAuthentication: false).validate() }
        try ServerConfiguration(host: "0.0.0.0", requiresAuthentication: false, allowInsecure: true).validate()
        try ServerConfiguration(host: "127.0.0.1", requiresAuthentication: false).validate()
        try ServerConfiguration(host: "::1", requiresAuthentication: false).validate()
        #expect(throws: TSyncError.self) { try ServerConfiguration(requiresAuthentication: false, perUserTables: ["notes"]).validate() }
        #expect(throws: TSyncError.self) { try ServerConfiguration(perUserTables: ["bad-name"]).validate() }
        #expect(throws: TSyncError.self) { try ServerConfiguration(maximumPageSize: 0).validate() }
    }

    @Test func databaseLocations() throws {
        #expect(try DatabaseLocation(parsing: "sqlite:data/server.db") == .sqlite(path: "data/server.db"))
        #expect(try DatabaseLocation(parsing: "sqlite:///var/tsync.db") == .sqlite(path: "/var/tsync.db"))
        #expect(
            try DatabaseLocation(parsing: "postgres://user@localhost/tsync")
                == .postgres(try PostgresURL(parsing: "postgres://user@localhost/tsync", environment: [:])))
        #expect(throws: TSyncError.self) { try DatabaseLocation(parsing: "postgres://user@localhost") }
        #expect(throws: TSyncError.self) { try DatabaseLocation(parsing: "sqlite:") }
        #expect(throws: TSyncError.self) { try DatabaseLocation(parsing: "/tmp/x.db") }
    }

    @Test func requestLogNeverContainsTheToken() async throws {
        let sink = CapturingLogHandler.Sink()
        let logger = Logger(label: "capture", factory: { _ in CapturingLogHandler(sink: sink) })
        try await withTestServer(ServerConfiguration(), accounts: [Self.alice], logger: logger) { http in
            let token = try await http.login("alice", "correct horse")
            #expect(try await http.get("/tables/todo?$top=5", token: token).status == 200)
            #expect(try await http.get("/tables/todo", headers: ["Authorization": "Bearer \(token)"]).status == 200)
            let lines = sink.all
            #expect(lines.contains { $0.contains("GET /tables/todo?$top=5 200") })
            #expect(lines.contains { $0.contains("POST /.auth/login/custom 200") })
            #expect(!lines.contains { $0.contains(token) })
            #expect(!lines.contains { $0.contains("correct horse") })
        }
    }

    // MARK: - Hostile clients

    /// A name longer than any account's is refused before anything is written: 200 logins with
    /// 1 MB names grew the database by 400 MB.
    @Test func aLongUserNameIsRefusedBeforeAnythingIsWritten() async throws {
        try await withTestServer(ServerConfiguration(), accounts: [Self.alice]) { http in
            let long = String(repeating: "n", count: AccountRules.maximumNameLength + 1)
            let reply = try await http.post("/.auth/login/custom", ["username": .string(long), "password": "whatever1"])
            #expect(reply.status == 400)
            #expect(reply.error?.contains("longer than 64 bytes") == true, "\(reply.text)")
            let huge = String(repeating: "n", count: 500_000)
            #expect(try await http.post("/.auth/login/custom", ["username": .string(huge), "password": "whatever1"]).status == 400)
            #expect(try await http.storedCount("tsync_login_attempts") == 0, "nothing written")
        }
    }

    /// Names that are no account share a fixed set of counters: guesses at made-up names cannot
    /// grow the table.
    @Test func countersOfNamesThatAreNoAccountStayBounded() async throws {
        var configuration = ServerConfiguration(trustedProxies: ["127.0.0.1"])
        configuration.authentication.nameCounters = 4
        try await withTestServer(configuration, accounts: [Self.alice]) { http in
            for index in 0..<30 {
                _ = try await http.post(
                    "/.auth/login/custom", ["username": .string("made-up-\(index)"), "password": "guess123"],
                    headers: ["X-Forwarded-For": "10.0.0.\(index)"])
            }
            let keys = try await http.storedStrings("SELECT key FROM tsync_login_attempts WHERE key NOT LIKE 'address:%'")
            #expect(keys.count <= 4, "\(keys)")
            #expect(keys.allSatisfy { $0.hasPrefix("name:") })
        }
    }

    /// A login as alice from `address` (through a trusted proxy), with `device` if any.
    static func loginAsAlice(_ http: TestHTTP, _ password: String, from address: String, device: String?) async throws -> Reply {
        var body: [String: JSONValue] = ["username": "alice", "password": .string(password)]
        if let device { body["deviceToken"] = .string(device) }
        return try await http.post("/.auth/login/custom", .object(body), headers: ["X-Forwarded-For": address])
    }

    /// Strangers guessing alice's password (from any number of addresses) are refused most of
    /// their guesses, but alice, from a store or an address she logged in from before, gets in.
    @Test func strangersCannotLockOutAKnownClient() async throws {
        var configuration = ServerConfiguration(trustedProxies: ["127.0.0.1"])
        configuration.authentication.maximumFailures = 5
        try await withTestServer(configuration, accounts: [Self.alice]) { http in
            func login(_ password: String, from address: String, device: String? = nil) async throws -> Reply {
                try await Self.loginAsAlice(http, password, from: address, device: device)
            }
            let first = try await login("correct horse", from: "10.0.0.1")
            #expect(first.status == 200)
            let device = try #require(first.object["deviceToken"]?.stringValue)
            #expect(device.utf8.count >= 43)

            // A guesser rotating addresses: past the account's 5, every guess is refused.
            var statuses: [Int] = []
            for index in 0..<20 { statuses.append(try await login("guess \(index)", from: "203.0.113.\(index)").status) }
            #expect(statuses.filter { $0 == 401 }.count == 5, "\(statuses)")
            #expect(statuses.filter { $0 == 429 }.count == 15)
            // A stranger with the right password is refused too: the account is locked for strangers.
            #expect(try await login("correct horse", from: "203.0.113.99").status == 429)

            // Alice, from a new address but with her store's device token, gets in; so does her
            // known address without it.
            let fromDevice = try await login("correct horse", from: "198.51.100.7", device: device)
            #expect(fromDevice.status == 200, "\(fromDevice.text)")
            #expect(fromDevice.object["deviceToken"]?.stringValue == device, "a valid device token is kept")
            #expect(try await login("correct horse", from: "10.0.0.1").status == 200)

            // A stolen device token gets its own 5 guesses, no more.
            var deviceStatuses: [Int] = []
            for index in 0..<8 { deviceStatuses.append(try await login("guess \(index)", from: "203.0.113.50", device: device).status) }
            #expect(deviceStatuses.filter { $0 == 401 }.count == 5, "\(deviceStatuses)")
            #expect(deviceStatuses.suffix(3).allSatisfy { $0 == 429 })
            // A token of another account counts for nothing.
            #expect(try await login("correct horse", from: "203.0.113.51", device: "forged").status == 429)
        }
    }

    @Test func knownClientsAreBoundedPerAccount() async throws {
        var configuration = ServerConfiguration(trustedProxies: ["127.0.0.1"])
        configuration.authentication.knownClientsPerAccount = 3
        try await withTestServer(configuration, accounts: [Self.alice]) { http in
            var statuses: [Int] = []
            for index in 0..<10 {
                let reply = try await http.post(
                    "/.auth/login/custom", ["username": "alice", "password": "correct horse"],
                    headers: ["X-Forwarded-For": "10.0.1.\(index)"])
                statuses.append(reply.status)
            }
            #expect(statuses == Array(repeating: 200, count: 10))
            let kept = try await http.storedCount("tsync_known_clients")
            #expect(kept == 3, "newest 3 of 10 addresses and 10 device tokens")
        }
    }

    /// `alice`, `Alice` and `ALICE` are one account; names with anything but ASCII letters, digits
    /// and `.` `_` `-` `@` (look-alikes, other normalization forms, zero-width or control
    /// characters, `/`) are refused.
    @Test func namesThatReadAlikeAreOneAccount() async throws {
        try await withTestServer(ServerConfiguration(), accounts: [Self.alice]) { http in
            let manager = AccountManager(storage: http.storage, hasher: cheapHasher)
            for name in ["Alice", "ALICE"] {
                do {
                    try await manager.add(name: name, password: "long enough")
                    Issue.record("\(name) was added beside alice")
                } catch let error as TSyncError {
                    #expect(error.kind == .invalidInput)
                    #expect(error.message.contains("differ only in case"), "\(error.message)")
                }
            }
            for name in ["al\u{200B}ice", "al/ice", "ali\u{0007}ce", "caf\u{00E9}", "cafe\u{0301}", "\u{0430}lice"] {
                await #expect(throws: TSyncError.self, "\(name)") { try await manager.add(name: name, password: "long enough") }
            }
            #expect(try await manager.list().map(\.name) == ["alice"])
            let login = try await http.post("/.auth/login/custom", ["username": "ALICE", "password": "correct horse"])
            #expect(login.status == 200)
            #expect(login.object["user"]?.objectValue?["userId"] == "alice", "the account's own spelling")
        }
    }

    /// A database made before names were compared without case may hold `bob` and `Bob`: it
    /// opens, each logs in by its exact spelling, and a third spelling denotes neither.
    @Test func olderDatabasesWithNamesDifferingInCaseStillWork() async throws {
        try await withTestServer(ServerConfiguration()) { http in
            try await http.storage.createAccount(name: "bob", passwordHash: try await cheapHasher.hash("lower case"), createdAt: .now())
            try await http.storage.createAccount(name: "Bob", passwordHash: try await cheapHasher.hash("upper case"), createdAt: .now())
            let lower = try await http.post("/.auth/login/custom", ["username": "bob", "password": "lower case"])
            #expect(lower.object["user"]?.objectValue?["userId"] == "bob")
            let upper = try await http.post("/.auth/login/custom", ["username": "Bob", "password": "upper case"])
            #expect(upper.object["user"]?.objectValue?["userId"] == "Bob")
            #expect(try await http.post("/.auth/login/custom", ["username": "BOB", "password": "upper case"]).status == 401)
        }
    }

    /// One address sending guesses at made-up names filled the shared counters, after
    /// which every made-up name was 429 at once while a real one was 401 after its password
    /// check. Now refused guesses count nothing, and real and made-up names are counted alike.
    @Test func aMadeUpNameIsAnsweredAsARealOneEvenAfterAFlood() async throws {
        var configuration = ServerConfiguration(trustedProxies: ["127.0.0.1"])
        configuration.authentication.maximumFailures = 5
        // One counter for every name: the flood below would fill it if it could.
        configuration.authentication.nameCounters = 1
        try await withTestServer(configuration, accounts: [Self.alice]) { http in
            func login(_ name: String, from address: String) async throws -> Int {
                try await http.post(
                    "/.auth/login/custom", ["username": .string(name), "password": "guess123"], headers: ["X-Forwarded-For": address]
                ).status
            }
            for index in 0..<40 { _ = try await login("made-up-\(index)", from: "203.0.113.1") }
            let counts = try await http.storedStrings("SELECT CAST(attempts AS TEXT) FROM tsync_login_attempts WHERE key LIKE 'name:%'")
            #expect(counts.compactMap { Int($0) }.reduce(0, +) <= 5, "one address counted past its own limit: \(counts)")
            // Another client: a real name and a made-up one get the same answer.
            let real = try await login("alice", from: "198.51.100.2")
            let madeUp = try await login("nobody", from: "198.51.100.3")
            #expect(real == madeUp, "alice: \(real), nobody: \(madeUp)")
        }
    }

    /// A login refused on its counts writes nothing (each one used to cost two writes).
    @Test func aRefusedLoginWritesNothing() async throws {
        var configuration = ServerConfiguration()
        configuration.authentication.maximumFailures = 3
        try await withTestServer(configuration, accounts: [Self.alice]) { http in
            for _ in 0..<3 {
                #expect(try await http.post("/.auth/login/custom", ["username": "alice", "password": "guess123"]).status == 401)
            }
            let before = try await http.storedStrings("SELECT key || ' ' || CAST(attempts AS TEXT) FROM tsync_login_attempts ORDER BY key")
            for _ in 0..<5 {
                #expect(try await http.post("/.auth/login/custom", ["username": "alice", "password": "guess123"]).status == 429)
                #expect(try await http.post("/.auth/login/custom", ["username": "nobody", "password": "guess123"]).status == 429)
            }
            let after = try await http.storedStrings("SELECT key || ' ' || CAST(attempts AS TEXT) FROM tsync_login_attempts ORDER BY key")
            #expect(before == after, "the counters moved: \(before) to \(after)")
        }
    }

    /// A device token is known by the password it logged in with: `passwd` ends its exemption
    /// from strangers' lockout.
    @Test func aPasswordChangeEndsTheDeviceTokensExemption() async throws {
        // The default limit, 5 failures.
        try await withTestServer(ServerConfiguration(trustedProxies: ["127.0.0.1"]), accounts: [Self.alice]) { http in
            let login = { @Sendable (password: String, address: String, device: String?) in
                try await Self.loginAsAlice(http, password, from: address, device: device)
            }
            let device = try #require(try await login("correct horse", "10.0.0.1", nil).object["deviceToken"]?.stringValue)
            for index in 0..<6 { _ = try await login("guess \(index)", "203.0.113.\(index)", nil) }
            #expect(try await login("correct horse", "198.51.100.7", device).status == 200, "exempt before")

            try await AccountManager(storage: http.storage, hasher: cheapHasher).changePassword(name: "alice", password: "new horse")
            #expect(try await login("new horse", "198.51.100.8", device).status == 429, "a stranger after")
            #expect(try await login("new horse", "10.0.0.1", nil).status == 429, "its known address too")
        }
    }
}
