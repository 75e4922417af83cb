import ArgumentParser
import Foundation
import Logging
import TSyncModel
import TSyncServer

/// `--db`, the server database of `tsync serve` and `tsync user`.
struct DatabaseOption: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Server database: sqlite:PATH or postgres://USER@HOST[:PORT]/DB (default: \(DatabaseLocation.defaultValue)).",
            valueName: "url"))
    var db: String?

    /// `--db`, else `fallback` (a config file's `db`), else the default.
    func location(fallback: String? = nil) throws -> DatabaseLocation {
        try DatabaseLocation(parsing: db ?? fallback ?? DatabaseLocation.defaultValue, environment: ProcessInfo.processInfo.environment)
    }
}

/// The server database of the `tsync user` commands: `--db`, else the `db` of the server's
/// `--config` file (read as `tsync serve --config` reads it), else `tsync-server.db` here. What
/// they change they say on stderr, with the database it was written to (and that it was created,
/// when `user add` created it), so that an account never lands in a database the server does not
/// serve unnoticed.
struct AccountDatabase: ParsableArguments {
    @OptionGroup var database: DatabaseOption

    @Option(
        help: ArgumentHelp("The server's TOML config file (as `serve --config`): its db is the database; --db wins.", valueName: "file"),
        completion: .file(extensions: ["toml"]))
    var config: String?

    func location() throws -> DatabaseLocation {
        let fromFile = try config.flatMap { path throws(TSyncError) in try ServeConfigFile(path: path).string("db") }
        return try database.location(fallback: fromFile)
    }

    /// Runs `body` with the accounts of the database, which stays open only that long; only
    /// `tsync user add` (`creating`) makes a database that does not exist yet, and says so.
    /// Returns `body`'s result and the database as the server's log names it.
    func withAccounts<Result: Sendable>(
        creating: Bool = false, _ body: @Sendable (AccountManager) async throws -> Result
    ) async throws -> (result: Result, database: String) {
        // Only problems reach the terminal: stdout carries `tsync user list`.
        var logger = Logger(label: "tsync.user") { label in StreamLogHandler.standardError(label: label) }
        logger.logLevel = .warning
        let location = try location()
        let created = creating ? location.sqliteFileToCreate : nil
        let result = try await location.withStorage(mustExist: !creating, logger: logger) { storage in
            try await body(AccountManager(storage: storage))
        }
        if let created { Console.note("created the server database \(created) (no database was there)") }
        return (result, location.logDescription)
    }
}
