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

    @Test func tokenIsOnlySentToTheRemoteItCameFromAndTheEnvironmentWins() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Credentials(remote: "http://127.0.0.1:8080", user: "alice", token: "saved").save(storeDirectory: directory)
        let same = try RemoteEndpoint("http://127.0.0.1:8080/")
        let other = try RemoteEndpoint("http://127.0.0.1:9090")
        #expect(try Credentials.token(storeDirectory: directory, remote: same, environment: [:]) == "saved")
        #expect(try Credentials.token(storeDirectory: directory, remote: other, environment: [:]) == nil)
        #expect(try Credentials.token(storeDirectory: directory, remote: other, environment: ["TSYNC_TOKEN": "env"]) == "env")
        #expect(try Credentials.token(storeDirectory: directory, remote: same, environment: ["TSYNC_TOKEN": ""]) == "saved")
    }

    @Test func damagedFileSaysWhatToDo() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = FileManager.default.createFile(atPath: Credentials.filePath(directory), contents: Data("not json".utf8))
        #expect(throws: TSyncError.self) { try Credentials.load(storeDirectory: directory) }
    }
}
