import Foundation
import GRDB
import Testing
import TSyncModel

@testable import TSyncEngine

/// Creating, finding and opening stores; configuration; concurrent access.
@Suite struct StoreTests {
    @Test func findsTheStoreExplicitlyFromTheEnvironmentAndUpwards() throws {
        let temporary = try TemporaryStore()
        let root = temporary.root
        let nested = (root as NSString).appendingPathComponent("a/b")
        try FileManager.default.createDirectory(atPath: nested, withIntermediateDirectories: true)
        let expected = temporary.store.location

        #expect(try StoreLocation.find(explicit: root, environment: [:], workingDirectory: "/") == expected)
        #expect(try StoreLocation.find(explicit: expected.directory, environment: [:], workingDirectory: "/") == expected)
        #expect(try StoreLocation.find(explicit: nil, environment: ["TSYNC_DIR": root], workingDirectory: "/") == expected)
        #expect(try StoreLocation.find(explicit: nil, environment: [:], workingDirectory: nested) == expected)
        // Explicit beats the environment, which beats the search.
        #expect(throws: TSyncError.self) {
            try StoreLocation.find(explicit: nested, environment: ["TSYNC_DIR": root], workingDirectory: nested)
        }
    }

    @Test func outsideAStoreSaysSo() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tsync-none-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            _ = try StoreLocation.find(explicit: nil, environment: [:], workingDirectory: directory)
            Issue.record("no store expected")
        } catch {
            #expect(error.kind == .noStore)
            #expect(error.message.hasPrefix("not a tsync store: no .tsync/ in"))
            #expect(error.remedy == .createStore && !error.message.contains("tsync init"), "the library names no command")
        }
    }

    @Test func initializeIsIdempotentAndKeepsTheConfiguration() throws {
        let temporary = try TemporaryStore()
        let location = temporary.store.location
        try temporary.store.insert("todo", ["id": "a"])
        let (store, existed) = try LocalStore.initialize(location, remote: "http://127.0.0.1:9/")
        #expect(existed)
        #expect(try store.configuration().remote == "http://127.0.0.1:9/")
        #expect(try store.record(table: "todo", id: "a") != nil)
        let (again, _) = try LocalStore.initialize(location, remote: nil)
        #expect(try again.configuration().remote == "http://127.0.0.1:9/")
        #expect(throws: TSyncError.self) { try LocalStore.initialize(location, remote: "ftp://x") }
    }

    @Test func configurationKeepsUnknownKeys() throws {
        let temporary = try TemporaryStore()
        let path = temporary.store.location.configurationPath
        try Data(#"{"future": {"x": 1}, "remote": "http://a"}"#.utf8).write(to: URL(fileURLWithPath: path))
        var configuration = try temporary.store.configuration()
        #expect(configuration.remote == "http://a")
        configuration.remote = "https://b"
        try temporary.store.saveConfiguration(configuration)
        let reloaded = try temporary.store.configuration()
        let saved = try JSONParser.parse(String(contentsOfFile: path, encoding: .utf8)).objectValue
        #expect(saved?["future"] == ["x": 1])
        #expect(reloaded.remote == "https://b")
        #expect(reloaded.entries.map(\.key) == [.remoteURL], "an unknown key is kept, not listed")
    }

    @Test func theDatabaseIsInWALModeWithTheSchemaMigrated() throws {
        let temporary = try TemporaryStore()
        let (mode, migrations) = try temporary.store.pool.read { db in
            (try String.fetchOne(db, sql: "PRAGMA journal_mode"), try StoreSchema.migrator.appliedMigrations(db))
        }
        #expect(mode == "wal")
        #expect(
            migrations.count == 8,
            "v1, v2 (journal), v3 (skipped copies), v4 (delivered operations), v5 (versions pushes wrote), v6 (field order), v7 (stopped pulls), v8 (schemas)"
        )
    }

    @Test func aNewStoreHasLargePagesAndAStoreWithSmallOnesKeepsThemAndItsQueue() throws {
        let temporary = try TemporaryStore()
        try temporary.store.insert(table: "todo", objects: (0..<500).map { ["id": .string("n\($0)"), "text": "new"] })
        #expect(try temporary.reopen().pool.read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") } == LocalStore.pageSize)

        // A store made before, with SQLite's default page size, and changes queued in it.
        let root = temporary.root + "-old"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let location = StoreLocation.forInitializing(root, workingDirectory: "/")
        try FileManager.default.createDirectory(atPath: location.directory, withIntermediateDirectories: true)
        do {
            var configuration = Configuration()
            configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA page_size = 4096") }
            let pool = try DatabasePool(path: location.databasePath, configuration: configuration)
            try StoreSchema.migrator.migrate(pool)
        }
        let old = try LocalStore.open(location)
        try old.insert(table: "todo", objects: (0..<500).map { ["id": .string("o\($0)"), "text": "old"] })
        try old.delete(table: "todo", ids: ["o7"])
        let reopened = try LocalStore.open(location)
        #expect(try reopened.pool.read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") } == 4096)
        let pending = try reopened.pendingOperations()
        #expect(pending.count == 499, "the inserts but o7's, which its delete cancelled")
        #expect(try reopened.record(table: "todo", id: "o8")?.fields["text"] == "old")
        #expect(try reopened.record(table: "todo", id: "o7") == nil)
    }

    @Test func aStoreFromANewerTsyncIsRefused() throws {
        let temporary = try TemporaryStore()
        try temporary.store.pool.write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99: from the future')")
        }
        #expect(throws: TSyncError.self) { try temporary.reopen() }
    }

    @Test func aBusyStoreWaitsThenSaysSoAndStaysIntact() throws {
        let temporary = try TemporaryStore()
        let holder = temporary.store
        let waiter = try temporary.reopen(busyTimeout: 0.3)
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            try? holder.pool.write { db in
                try db.execute(sql: "INSERT INTO tables (name, created_at) VALUES ('held', 'x')")
                started.signal()
                release.wait()
            }
            finished.signal()
        }
        started.wait()
        let clock = ContinuousClock()
        let start = clock.now
        #expect(throws: TSyncError.failure(StoreFailure.busyMessage)) {
            try waiter.insert("todo", ["id": "a"])
        }
        #expect(clock.now - start >= .milliseconds(250), "it waited for the other writer first")
        release.signal()
        finished.wait()
        try waiter.insert("todo", ["id": "a"])
        let names = try waiter.pool.read { db in try String.fetchAll(db, sql: "SELECT name FROM tables ORDER BY name") }
        #expect(names == ["held", "todo"], "both writers' work is there")
    }

    @Test func twoConnectionsWritingAtOnceLoseNothing() async throws {
        let temporary = try TemporaryStore()
        let stores = [temporary.store, try temporary.reopen()]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, store) in stores.enumerated() {
                group.addTask {
                    for batch in 0..<20 {
                        let objects: [[String: JSONValue]] = (0..<50).map { ["id": .string("w\(index)-\(batch)-\($0)")] }
                        try store.insert(table: "todo", objects: objects)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try temporary.store.tables() == [TableSummary(table: "todo", records: 2_000, pending: 2_000, errors: 0)])
    }
}
