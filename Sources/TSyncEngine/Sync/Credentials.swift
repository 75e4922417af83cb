import Foundation
import TSyncModel

/// The token `tsync login` obtained, kept beside the store in `credentials` (mode 0600).
///
/// The file also names the server the token belongs to: a token is only ever sent to that server,
/// so pointing the store at another remote (`tsync remote URL`) cannot leak it. A token given to
/// `SyncSession` (`TSYNC_TOKEN` on the command line) overrides the file, for CI where the token
/// comes from a secret store.
package struct Credentials: Sendable, Equatable {
    /// The remote the token was issued by: it is sent to no other.
    package var remote: String
    /// The user logged in.
    package var user: String
    /// The session token sent as `X-ZUMO-AUTH`.
    package var token: String

    /// The credentials file's name in the store directory (mode 0600).
    package static let fileName = "credentials"

    /// The saved token, when it was obtained from that same remote; else none.
    package static func savedToken(storeDirectory: String, remote: RemoteEndpoint) throws(TSyncError) -> String? {
        guard let saved = try load(storeDirectory: storeDirectory), saved.remote == remote.base else { return nil }
        return saved.token
    }

    /// The credentials saved in `storeDirectory`; nil when nobody is logged in.
    package static func load(storeDirectory: String) throws(TSyncError) -> Credentials? {
        let path = filePath(storeDirectory)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw TSyncError(.failure, "cannot read \(path) (check its permissions)", remedy: .logInAgain)
        }
        guard let object = try? JSONParser.parse(bytes: Array(data)).objectValue,
            let remote = object["remote"]?.stringValue, let user = object["user"]?.stringValue,
            let token = object["token"]?.stringValue
        else {
            throw TSyncError(.failure, "\(path) is damaged", remedy: .logInAgain)
        }
        return Credentials(remote: remote, user: user, token: token)
    }

    /// Writes the file through a temporary file created with mode 0600 and renamed into place, so
    /// the token is never readable by others, not even for a moment, and a crash leaves either the
    /// old file or the new one.
    package func save(storeDirectory: String) throws(TSyncError) {
        let object: JSONValue = ["remote": .string(remote), "user": .string(user), "token": .string(token)]
        try Self.writePrivately(JSONSerializer.bytes(object) + [0x0A], path: Self.filePath(storeDirectory))
    }

    /// The device token `tsync serve` gave at the last login to `remote` (docs/DESIGN.md §11), in
    /// the file `device`: it outlives `logout`, since it only says this store logged in before.
    package static func deviceToken(storeDirectory: String, remote: RemoteEndpoint) -> String? {
        let path = (storeDirectory as NSString).appendingPathComponent(deviceFileName)
        guard let data = FileManager.default.contents(atPath: path),
            let object = try? JSONParser.parse(bytes: Array(data)).objectValue, object["remote"]?.stringValue == remote.base
        else { return nil }
        return object["token"]?.stringValue
    }

    package static func saveDeviceToken(_ token: String, storeDirectory: String, remote: RemoteEndpoint) throws(TSyncError) {
        let object: JSONValue = ["remote": .string(remote.base), "token": .string(token)]
        try writePrivately(
            JSONSerializer.bytes(object) + [0x0A], path: (storeDirectory as NSString).appendingPathComponent(deviceFileName))
    }

    /// The device id file's name in the store directory.
    package static let deviceFileName = "device"

    private static func writePrivately(_ bytes: [UInt8], path: String) throws(TSyncError) {
        let temporary = path + ".tmp"
        unlink(temporary)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_TRUNC, 0o600)
        guard descriptor >= 0 else {
            throw .failure("cannot write \(path): \(String(cString: strerror(errno)))")
        }
        var written = 0
        var failed = fchmod(descriptor, 0o600) != 0
        while !failed, written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if count <= 0 { failed = true } else { written += count }
        }
        if !failed { failed = fsync(descriptor) != 0 }
        close(descriptor)
        if failed || rename(temporary, path) != 0 {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw .failure("cannot write \(path): \(reason)")
        }
    }

    /// Removes the saved token; true when there was one.
    @discardableResult
    package static func remove(storeDirectory: String) throws(TSyncError) -> Bool {
        let path = filePath(storeDirectory)
        guard FileManager.default.fileExists(atPath: path) else { return false }
        guard unlink(path) == 0 else {
            throw .failure("cannot remove \(path): \(String(cString: strerror(errno)))")
        }
        return true
    }

    package static func filePath(_ storeDirectory: String) -> String {
        (storeDirectory as NSString).appendingPathComponent(fileName)
    }
}
