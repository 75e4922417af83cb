import Foundation
import Testing

/// A damaged store is reported, never replaced by a new empty one (docs/DESIGN.md §6.1): the probe that
/// found this emptied `store.sqlite` and watched 3,000 queued inserts vanish with exit 0.
@Suite struct StoreDamageTests {
    private func storeWithQueue() async throws -> (TSyncSandbox, String) {
        let store = try await TSyncSandbox()
        let ndjson = (0..<200).map { #"{"id": "r\#($0)", "text": "queued \#($0)"}"# }.joined(separator: "\n")
        try await store.ok(["insert", "todo"], stdin: ndjson)
        return (store, (store.path as NSString).appendingPathComponent(".tsync/store.sqlite"))
    }

    /// The database's page size and the first page (counted from 1) of `table`'s b-tree: where
    /// a page lies depends on the page size a store was made with.
    private func rootPage(of table: String, in database: String) async throws -> (pageSize: Int, root: Int) {
        let result = try await ChildProcess.output(
            "/usr/bin/sqlite3",
            [database, "SELECT (SELECT page_size FROM pragma_page_size), rootpage FROM sqlite_master WHERE name = '\(table)'"])
        let values = result.stdout.split(whereSeparator: { $0 == "|" || $0.isNewline }).compactMap { Int($0) }
        try #require(result.status == 0 && values.count == 2, "\(result)")
        return (values[0], values[1])
    }

    private func expectDamaged(_ store: TSyncSandbox, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        for arguments in [["status"], ["insert", "todo", #"{"text": "new"}"#], ["query", "todo"]] {
            let result = try await store.run(arguments)
            #expect(result.status == 1, "\(arguments): \(result)", sourceLocation: sourceLocation)
            #expect(result.stderr.contains(what), "\(arguments): \(result.stderr)", sourceLocation: sourceLocation)
        }
    }

    @Test func anEmptyDatabaseIsDamagedNotANewStore() async throws {
        let (store, database) = try await storeWithQueue()
        try Data().write(to: URL(fileURLWithPath: database))
        try await expectDamaged(store, "is empty (0 bytes)")
        let size = try FileManager.default.attributesOfItem(atPath: database)[.size] as? NSNumber
        #expect(size?.intValue == 0, "the empty file is left as it was, not re-created")
        let again = try await store.run(["init"])
        #expect(again.status == 1 && again.stderr.contains("empty"), "init does not paper over it either: \(again)")
    }

    @Test func aFileThatIsNotATSyncStoreIsRefused() async throws {
        let (store, database) = try await storeWithQueue()
        // A command closes its store before it exits, so SQLite has folded the WAL back into the
        // database file: the garbage below is what the next command reads, not pages in the WAL.
        #expect(!FileManager.default.fileExists(atPath: database + "-wal"))
        try Data("this is not SQLite".utf8).write(to: URL(fileURLWithPath: database))
        try await expectDamaged(store, "damaged or not a tsync store")
    }

    @Test func damagedPagesAreFoundWhenTheStoreOpens() async throws {
        let (store, database) = try await storeWithQueue()
        // Everything into the database file first: a page damaged there while the WAL holds a
        // newer copy of it would never be read.
        let checkpoint = try await ChildProcess.run("/usr/bin/sqlite3", [database, "PRAGMA wal_checkpoint(TRUNCATE)"])
        #expect(checkpoint.status == 0, "\(checkpoint.stderr)")
        // Garbage over a page: the root of the queue's b-tree.
        let (pageSize, root) = try await rootPage(of: "operations", in: database)
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: database))
        try handle.seek(toOffset: UInt64((root - 1) * pageSize))
        try handle.write(contentsOf: Data(repeating: 0xA5, count: pageSize))
        try handle.close()
        try await expectDamaged(store, "damaged")
    }

    /// Broken cell pointers in a b-tree page: SQLite's page check reports each one (its report
    /// ran to 51 lines on the terminal). The message is one line: where, what, and what to do
    ///.
    @Test func aDamagedStoreIsOneLine() async throws {
        let (store, database) = try await storeWithQueue()
        let checkpoint = try await ChildProcess.run("/usr/bin/sqlite3", [database, "PRAGMA wal_checkpoint(TRUNCATE)"])
        #expect(checkpoint.status == 0, "\(checkpoint.stderr)")
        // The index of the records' ids is one page of 200 cells: 100 bytes in, its cell pointers.
        let (pageSize, root) = try await rootPage(of: "sqlite_autoindex_records_1", in: database)
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: database))
        try handle.seek(toOffset: UInt64((root - 1) * pageSize + 100))
        try handle.write(contentsOf: Data([UInt8](repeating: 0, count: 100).enumerated().map { $0.offset % 2 == 0 ? 0 : 7 }))
        try handle.close()
        for arguments in [["status"], ["query", "todo"]] {
            let result = try await store.run(arguments)
            #expect(result.status == 1, "\(arguments): \(result)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("\(database) is damaged: SQLite's page check found"), "\(result.stderr)")
            #expect(result.stderr.contains("restore it from a backup"), "\(result.stderr)")
        }
    }

    /// A store nobody may write (as root, the commands run as `nobody`, since root writes anyway).
    @Test func aReadOnlyStoreCanStillBeRead() async throws {
        let (store, database) = try await storeWithQueue()
        let runAsOther = getuid() == 0
        let runuser = ["/usr/sbin/runuser", "/sbin/runuser"].first { FileManager.default.isExecutableFile(atPath: $0) }
        if runAsOther {
            guard runuser != nil else {
                Issue.record("running as root without runuser: cannot make a store read-only")
                return
            }
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: store.path)
        }
        let directory = (database as NSString).deletingLastPathComponent
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: directory)
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: database)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory) }

        func run(_ arguments: [String]) async throws -> TSyncResult {
            guard runAsOther, let runuser else { return try await store.run(arguments) }
            return try await TSyncProcess(
                ["-u", "nobody", "--", TSyncBinary.path, "-C", store.path] + arguments, in: "/", executable: runuser
            ).wait()
        }
        let status = try await run(["status", "--porcelain"])
        #expect(status.status == 0, "\(status)")
        #expect(status.stdout.split(separator: "\n").count == 200)
        let query = try await run(["query", "todo", "--filter", "id eq 'r7'"])
        #expect(query.status == 0 && query.stdout.contains("queued 7"), "\(query)")
        let insert = try await run(["insert", "todo", #"{"text": "new"}"#])
        #expect(insert.status == 1, "\(insert)")
        #expect(insert.stderr.contains("read-only"), "\(insert.stderr)")
    }
}
