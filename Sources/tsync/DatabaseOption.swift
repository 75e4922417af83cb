import ArgumentParser
import Foundation
import Logging
import TSyncServer

/// `--db`, the server database of `tsync serve` and `tsync user`.
struct DatabaseOption: ParsableArguments {
    @Option(help: ArgumentHelp("Server database: sqlite:PATH or postgres://USER@HOST[:PORT]/DB.", valueName: "url"))
    var db = DatabaseLocation.defaultValue

    func location() throws -> DatabaseLocation {
        try DatabaseLocation(parsing: db, environment: ProcessInfo.processInfo.environment)
    }

    /// Runs `body` with the accounts of the database, which stays open only that long; only
    /// `tsync user add` (`creating`) makes a database that does not exist yet.
    func withAccounts<Result: Sendable>(
        creating: Bool = false, _ body: @Sendable (AccountManager) async throws -> Result
    ) async throws -> Result {
        // Only problems reach the terminal: stdout carries `tsync user list`.
        var logger = Logger(label: "tsync.user") { label in StreamLogHandler.standardError(label: label) }
        logger.logLevel = .warning
        return try await location().withStorage(mustExist: !creating, logger: logger) { storage in
            try await body(AccountManager(storage: storage))
        }
    }
}
