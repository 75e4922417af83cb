import ArgumentParser
import Logging
import TSyncModel
import TSyncServer

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the sync server (Mobile Apps v2 table protocol).",
        discussion: """
            Serves every table of the database over HTTP until SIGINT or SIGTERM, then finishes the \
            requests in flight and exits 0. Accounts are required unless --no-auth: create them with \
            `tsync user add NAME`. Logs one line per request on stderr; the first lines tell the \
            address it listens on ("listening on http://HOST:PORT").
            """
    )

    @Option(help: ArgumentHelp("Server database: sqlite:PATH.", valueName: "url"))
    var db = DatabaseLocation.defaultValue

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one.")
    var port = 8080

    @Flag(name: .customLong("no-auth"), help: "Serve without accounts (only on a loopback address unless --insecure).")
    var noAuth = false

    @Flag(help: "Allow --no-auth on an address other than loopback.")
    var insecure = false

    @Option(
        name: .customLong("per-user"),
        help: ArgumentHelp(
            "A table whose records only the user who inserted them sees (repeatable).",
            discussion: "Other users get 404 for those records; an insert that reuses one of their ids gets 409 without the item.",
            valueName: "table"
        )
    )
    var perUser: [String] = []

    @Option(name: .customLong("max-top"), help: "Largest page ($top) a client may ask for.")
    var maxTop = 1000

    @Option(name: .customLong("token-ttl"), help: ArgumentHelp("Lifetime of a login token, in seconds.", valueName: "seconds"))
    var tokenTTL = 24 * 3600

    func validate() throws {
        guard tokenTTL >= 1 else { throw ValidationError("--token-ttl must be at least 1 second") }
    }

    func run() async throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .info
            return handler
        }
        let configuration = ServerConfiguration(
            host: host, port: port, requiresAuthentication: !noAuth, allowInsecure: insecure, perUserTables: Set(perUser),
            maximumPageSize: maxTop, authentication: .init(tokenLifetime: .seconds(tokenTTL))
        )
        try configuration.validate()
        let storage = try DatabaseLocation(parsing: db).open()
        try await SyncServer(configuration: configuration, storage: storage, logger: Logger(label: "tsync.serve")).run()
    }
}
