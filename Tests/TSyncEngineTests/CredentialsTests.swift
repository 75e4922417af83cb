import Foundation
import Testing
import TSyncModel

@testable import TSyncEngine

@Suite("Credentials file")
struct CredentialsTests {
    private func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "tsync-credentials-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func savedWithOwnerOnlyPermissionsAndReadBack() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let credentials = Credentials(remote: "http://127.0.0.1:8080", user: "alice", token: "secret-token")
        try credentials.save(storeDirectory: directory)
        let attributes = try FileManager.default.attributesOfItem(atPath: Credentials.filePath(directory))
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(try Credentials.load(storeDirectory: directory) == credentials)
        #expect(try Credentials.remove(storeDirectory: directory))
        #expect(try Credentials.load(storeDirectory: directory) == nil)
        #expect(try !Credentials.remove(storeDirectory: directory))
    }

    @Test func tokenIsOnlySentToTheRemoteItCameFrom() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Credentials(remote: "http://127.0.0.1:8080", user: "alice", token: "saved").save(storeDirectory: directory)
        let same = try RemoteEndpoint("http://127.0.0.1:8080/")
        let other = try RemoteEndpoint("http://127.0.0.1:9090")
        #expect(try Credentials.savedToken(storeDirectory: directory, remote: same) == "saved")
        #expect(try Credentials.savedToken(storeDirectory: directory, remote: other) == nil)
    }

    /// The session's configuration: an empty override is no override, and a push needs at least
    /// one request in flight.
    @Test func sessionConfigurationIsValidated() throws {
        let temporary = try TemporaryStore()
        #expect(try SyncSession(store: temporary.store, remote: RemoteSettings(tokenOverride: "")).tokenOverride == nil)
        #expect(try SyncSession(store: temporary.store, remote: RemoteSettings(tokenOverride: "ci-secret")).tokenOverride == "ci-secret")
        #expect(try SyncSession(store: temporary.store).pushConcurrency == Pusher.defaultConcurrency)
        #expect(throws: TSyncError.self) { try SyncSession(store: temporary.store, pushConcurrency: 0) }
        #expect(throws: TSyncError.self) { try SyncSession(store: temporary.store, pushConcurrency: -3) }
        #expect(throws: TSyncError.self) { try RemoteSettings(timeout: .milliseconds(500)) }
        #expect(RemoteSettings.standard.timeout == SyncSession.defaultTimeout)
    }

    @Test func damagedFileSaysWhatToDo() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = FileManager.default.createFile(atPath: Credentials.filePath(directory), contents: Data("not json".utf8))
        #expect(throws: TSyncError.self) { try Credentials.load(storeDirectory: directory) }
    }
}
