#if os(Linux)
    import Foundation
    import Testing
    import TSyncModel

    @testable import TSyncEngine

    /// What a command writes goes to the disk as it is written, not all at once at the store's
    /// next `fsync` (`SQLiteSettings.writebackBytes`).
    @Suite struct WritebackTests {
        @Test func aLargeWriteIsWrittenOutAsItGoesAndReadsBackWhole() throws {
            SQLiteSettings.installWriteback()
            let temporary = try TemporaryStore()
            let walPath = temporary.store.location.databasePath + "-wal"
            let text = String(repeating: "w", count: 1_000)
            let count = 8_000
            // Other tests may write meanwhile: the count only grows.
            let before = SQLiteSettings.writebackRequests
            _ = try temporary.store.insert(
                table: "todo", objects: (0..<count).map { ["id": .string("r\($0)"), "text": .string(text)] })
            // Still open: the WAL is not copied into the database yet (`LocalStore.walCheckpointPages`).
            let walBytes = try #require(try FileManager.default.attributesOfItem(atPath: walPath)[.size] as? NSNumber).intValue
            #expect(walBytes > 8 * SQLiteSettings.writebackBytes, "a WAL of \(walBytes) bytes")
            let requests = SQLiteSettings.writebackRequests - before
            #expect(
                requests >= walBytes / SQLiteSettings.writebackBytes / 2,
                "\(requests) write-outs for a WAL of \(walBytes) bytes: it waited in the page cache for the close's fsync")

            let reopened = try temporary.reopen()
            #expect(try reopened.query(table: "todo").count == count)
            #expect(try reopened.record(table: "todo", id: "r\(count - 1)")?.fields["text"] == .string(text))
        }
    }
#endif
