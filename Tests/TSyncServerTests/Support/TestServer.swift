import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Synchronization
import TSyncModel
@testable import TSyncServer

/// Cheap Argon2 parameters so tests that log in many times stay fast; verification reads the
/// parameters from the stored hash, so the code path is the production one.
let cheapHasher = PasswordHasher(parameters: .init(memoryKiB: 256, iterations: 1, parallelism: 1))

/// A fresh SQLite database in its own temporary directory, removed by `cleanUp()`.
struct TemporaryDatabase {
    let directory: URL
    let path: String

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tsync-server-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        path = directory.appendingPathComponent("server.db").path
    }

    func open(clock: @escaping @Sendable () -> Timestamp = Timestamp.now) throws -> SQLiteStorage {
        try SQLiteStorage(path: path, clock: clock)
    }

    func cleanUp() {
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Runs a real server (live HTTP on a free loopback port, AsyncHTTPClient as the client) on a fresh
/// database with the given accounts, and hands `body` a client for it: once per backend of
/// `backends` (SQLite, and PostgreSQL when a test server is configured; see `TestBackend`).
func withTestServer<T: Sendable>(
    _ configuration: ServerConfiguration = ServerConfiguration(requiresAuthentication: false),
    accounts: [(String, String)] = [],
    logger: Logger = Logger(label: "tsync.test", factory: { _ in SwiftLogNoOpLogHandler() }),
    clock: @escaping @Sendable () -> Timestamp = Timestamp.now,
    backends: [TestBackend] = TestBackend.available,
    queryTimeoutSeconds: Int? = nil,
    _ body: @Sendable (TestHTTP) async throws -> T
) async throws -> T {
    var result: T?
    for backend in backends {
        do {
            result = try await backend.withFreshStorage(clock: clock, queryTimeoutSeconds: queryTimeoutSeconds) { storage in
                let manager = AccountManager(storage: storage, hasher: cheapHasher)
                for (name, password) in accounts { try await manager.add(name: name, password: password) }
                let server = try SyncServer(
                    configuration: configuration, storage: storage, hasher: cheapHasher, logger: logger, clock: clock)
                return try await server.makeApplication().test(.ahc(.http)) { client in
                    try await body(TestHTTP(client: client, storage: storage, backend: backend))
                }
            }
        } catch {
            throw BackendTestError(backend: backend, underlying: error)
        }
    }
    guard let result else { throw TSyncError.failure("withTestServer was given no backend") }
    return result
}

/// One answer, with its body parsed by the project's own JSON parser.
struct Reply: Sendable {
    var status: Int
    var headers: HTTPFields
    var text: String
    var json: JSONValue?

    var object: [String: JSONValue] { json?.objectValue ?? [:] }
    var array: [JSONValue] {
        if case .array(let items)? = json { return items }
        return []
    }
    var ids: [String] { array.compactMap { $0.objectValue?["id"]?.stringValue } }
    var error: String? { object["error"]?.stringValue }
    var etag: String? { headers[.eTag] }
    var link: String? { headers[HTTPField.Name("Link")!] }
    var version: String? { object["version"]?.stringValue }
}

struct TestHTTP: Sendable {
    let client: any TestClientProtocol
    let storage: any ServerStorage
    let backend: TestBackend

    func send(
        _ method: HTTPRequest.Method, _ uri: String, json: JSONValue? = nil, raw: [UInt8]? = nil,
        token: String? = nil, headers extra: [String: String] = [:]
    ) async throws -> Reply {
        var headers: HTTPFields = [:]
        if let token { headers[HTTPField.Name("X-ZUMO-AUTH")!] = token }
        for (name, value) in extra { headers[HTTPField.Name(name)!] = value }
        var body: ByteBuffer?
        if let json { body = ByteBuffer(bytes: JSONSerializer.bytes(json)) }
        if let raw { body = ByteBuffer(bytes: raw) }
        if body != nil { headers[.contentType] = "application/json" }
        let response = try await client.execute(uri: uri, method: method, headers: headers, body: body)
        let bytes = Array(response.body.readableBytesView)
        return Reply(
            status: Int(response.status.code), headers: response.headers, text: String(decoding: bytes, as: UTF8.self),
            json: bytes.isEmpty ? nil : try? JSONParser.parse(bytes: bytes)
        )
    }

    func get(_ uri: String, token: String? = nil, headers: [String: String] = [:]) async throws -> Reply {
        try await send(.get, uri, token: token, headers: headers)
    }

    func post(_ uri: String, _ json: JSONValue? = nil, token: String? = nil, headers: [String: String] = [:]) async throws -> Reply {
        try await send(.post, uri, json: json, token: token, headers: headers)
    }

    func patch(_ uri: String, _ json: JSONValue, token: String? = nil, headers: [String: String] = [:]) async throws -> Reply {
        try await send(.patch, uri, json: json, token: token, headers: headers)
    }

    func delete(_ uri: String, token: String? = nil, headers: [String: String] = [:]) async throws -> Reply {
        try await send(.delete, uri, token: token, headers: headers)
    }

    /// Logs in and returns the token; fails the test when the login is refused.
    func login(_ name: String, _ password: String) async throws -> String {
        let reply = try await post("/.auth/login/custom", ["username": .string(name), "password": .string(password)])
        guard reply.status == 200, let token = reply.object["authenticationToken"]?.stringValue else {
            throw TSyncError.failure("login of \(name) failed: \(reply.status) \(reply.text)")
        }
        return token
    }

    /// Inserts and returns the stored item; fails unless the server answers 201.
    @discardableResult
    func insert(_ table: String, _ item: JSONValue, token: String? = nil) async throws -> [String: JSONValue] {
        let reply = try await post("/tables/\(table)", item, token: token)
        guard reply.status == 201 else { throw TSyncError.failure("insert into \(table) failed: \(reply.status) \(reply.text)") }
        return reply.object
    }
}

/// A wall clock that tests move by hand (token expiry, login windows, a stalled clock).
final class TestClock: Sendable {
    private let current = Mutex(Timestamp(millisecondsSinceEpoch: 1_800_000_000_000))

    var now: @Sendable () -> Timestamp { { self.current.withLock { $0 } } }

    func advance(by duration: Duration) {
        current.withLock { $0 = Timestamp(millisecondsSinceEpoch: $0.millisecondsSinceEpoch + duration.milliseconds) }
    }
}

/// A flag one task clears and others watch (`while flag.isSet`).
final class SharedFlag: Sendable {
    private let value = Mutex(true)
    var isSet: Bool { value.withLock { $0 } }
    func clear() { value.withLock { $0 = false } }
}

/// A log handler that keeps every message, to check what the server logs (and what it never does).
struct CapturingLogHandler: LogHandler {
    final class Sink: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    let sink: Sink
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    init(sink: Sink) { self.sink = sink }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        sink.append("\(event.level) \(event.message) \(event.metadata ?? [:])")
    }
}
