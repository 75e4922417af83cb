import Foundation
import Testing

/// The databases `tsync serve` runs on in these tests: SQLite always, PostgreSQL when
/// `TSYNC_TEST_POSTGRES_URL` names a server. A test written once with `@Test(arguments:
/// ServerBackend.available)` holds both to the same behaviour; without PostgreSQL its case is
/// simply not among the arguments.
enum ServerBackend: String, CaseIterable, CustomStringConvertible, Sendable {
    case sqlite, postgres

    /// The backends that can run here.
    static var available: [ServerBackend] { PostgresFixture.adminURL == nil ? [.sqlite] : allCases }

    var description: String { rawValue }

    /// Runs `body` with the `--db` of a fresh database: a file in `directory`, or a PostgreSQL
    /// database of its own, dropped afterwards.
    func withDatabase(in directory: TemporaryDirectory, _ body: (String) async throws -> Void) async throws {
        switch self {
        case .sqlite: try await body("sqlite:" + (directory.path as NSString).appendingPathComponent("server.db"))
        case .postgres: try await PostgresFixture.withFreshDatabase(body)
        }
    }

    /// Runs `body` with a `tsync serve --port 0 --no-auth` (plus `options`) on a fresh database,
    /// its URL and its `--db`; the server is stopped afterwards.
    func withServer(
        options: [String] = [], in directory: TemporaryDirectory, _ body: (ServerProcess, _ url: String, _ db: String) async throws -> Void
    ) async throws {
        try await withDatabase(in: directory) { db in
            let server = try ServerProcess(arguments: ["serve", "--db", db, "--port", "0", "--no-auth"] + options, log: directory.path)
            defer { server.stop() }
            try await body(server, try await server.waitForAddress(), db)
        }
    }
}
