import Foundation
import Hummingbird
import Testing
import TSyncEngine
import TSyncModel
import TSyncServer

/// The libraries as a program outside this package uses them: no `@testable`, so only what is
/// public. A server embedded in-process (`SyncServer` over `SQLiteStorage`), and a store driven
/// from Swift as the DocC article "Driving a sync from Swift" shows, step for step.
@Suite struct LibraryUseTests {
    @Test func aProgramEmbedsTheServerAndSyncsAStoreAgainstIt() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tsync-library-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        // The server, embedded.
        let storage = try SQLiteStorage(path: directory + "/server.db")
        let server = try SyncServer(configuration: ServerConfiguration(port: 0, requiresAuthentication: false), storage: storage)
        let (ports, listening) = AsyncStream.makeStream(of: Int.self)
        let application = server.makeApplication { port in listening.yield(port) }
        let serving = Task { try await application.runService() }
        defer { serving.cancel() }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())

        // The article's example.
        _ = try LocalStore.initialize(
            StoreLocation.forInitializing("phone", workingDirectory: directory), remote: "http://127.0.0.1:\(port)")
        let location = try StoreLocation.find(explicit: "phone", environment: [:], workingDirectory: directory)
        let session = CommandSession(store: try LocalStore.open(location), journal: .init(command: "import", arguments: []))

        let ids = try session.store.insert(table: "todo", objects: [["id": "t1", "text": "buy milk"]])
        session.record(changed: "todo", ids: ids)

        let sync = try session.syncSession(remote: RemoteSettings(timeout: .seconds(30)))
        let outcome = try await session.sync(sync, policies: ConflictPolicies())
        guard case .succeeded = outcome.verdict else {
            Issue.record("the sync did not succeed: \(outcome.verdict)")
            return
        }
        try session.finish(exitCode: 0)

        // The record reached the embedded server.
        let stored = try await storage.record(table: "todo", id: "t1", scope: .shared)
        #expect(stored?.fields["text"] == "buy milk")
        #expect(outcome.result?.push.pushed == 1)
        #expect(outcome.result?.failures.isEmpty == true)
    }
}
