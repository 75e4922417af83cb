import ArgumentParser
import Foundation
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
            `tsync user add NAME`. Logs on stderr: start-up lines (version, database, auth mode, \
            limits), then the address it listens on ("listening on http://HOST:PORT", or https:// \
            with --tls-cert), then one line per request.

            With --tls-cert and --tls-key it speaks HTTPS only, with the same routes. Both files are \
            read at start-up: a missing or unreadable one exits 66, one that is not a PEM \
            certificate or key (or a key of another certificate) exits 78, and the message names \
            the file. Behind a reverse proxy that terminates TLS, serve plain HTTP on loopback and \
            give the proxy's address with --trusted-proxy instead.

            Besides the v2 table routes it offers POST /tables/$batch, a tsync extension: many \
            inserts, updates and deletes of any tables in one request, applied in order in one \
            transaction and answered one by one exactly as the single routes would answer them \
            ("atomic": true applies all or nothing). GET /tables/$batch describes it \
            ({"maxOperations", "maxBytes", "maxItemBytes", "atomic"}); `tsync push` discovers it \
            there and sends one request per operation to servers without it.

            The live route, another extension: a page read with `Prefer: wait=N` that would be \
            empty is held until a commit to its table, or N seconds (25 at most), then answered, \
            with `Preference-Applied: wait=N`; `tsync watch` uses it. --max-watchers bounds the \
            requests held at once.

            A SQLite file takes one server: a second `tsync serve` on it exits 1, saying to use \
            PostgreSQL for several instances (`tsync user` commands work beside the server). On \
            PostgreSQL behind a transaction pooler (PgBouncer), see --listen-db.

            For the person who runs it: --log-format json writes one JSON object per line (request \
            lines with method, path, status, durationMs, bytes, user, client, requestId and route, \
            the route template as /metrics counts it; the id also goes back as X-Request-Id). GET /health answers while the process runs; GET /ready \
            answers 200 when the database answers and takes writes, and 503 with the reason when \
            it does not (a read-only replica, a full disk), on a connection of its own, so that it \
            answers under load too; with --metrics, \
            GET /metrics answers counters in the Prometheus text format. --config FILE reads \
            settings from a TOML file whose keys are the long flag names (port = 8080, \
            no-auth = true, index = ["todo.n"]); flags on the command line win. An unknown key or a \
            bad value exits 78, naming the file, line and key; a missing file exits 66.

            EXAMPLES
              tsync serve --db sqlite:server.db --port 8080
              tsync serve --db sqlite:server.db --host 0.0.0.0 --port 8443 --tls-cert cert.pem --tls-key key.pem
              tsync serve --db postgres://tsync@127.0.0.1/tsync --index todo.owner --per-user notes
              tsync serve --config /etc/tsync/serve.toml --log-format json --metrics
            """
    )

    @OptionGroup var database: DatabaseOption

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(parsing: .unconditional, help: "Port to listen on; 0 picks a free one.")
    var port = 8080

    @Option(
        name: .customLong("listen-db"),
        help: ArgumentHelp(
            "PostgreSQL only: where to LISTEN for other instances' writes, when --db goes through a transaction pooler.",
            discussion: """
                The live route wakes this instance's held reads when another instance writes, through \
                PostgreSQL's LISTEN/NOTIFY on one connection that stays open. A transaction pooler \
                (PgBouncer with pool_mode = transaction) cannot keep it: serve checks at start-up \
                that it hears its own NOTIFY, and exits 1 saying so when it does not. Give here a URL \
                of the same database that reaches PostgreSQL itself (or a session-mode pool); \
                everything else still goes through --db.
                """,
            valueName: "url"))
    var listenDB: String?

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

    @Option(
        name: .customLong("access"),
        help: ArgumentHelp(
            "Who may read and change a table, TABLE:OP=RULE[,OP=RULE]... (repeatable).",
            discussion: """
                OP is read, insert, update, delete, or write (the three writes); RULE is anyone (no \
                token needed), authenticated (the default), role:ROLE, owner (the account that \
                inserted the record; --per-user T is read=owner,write=owner), group:FIELD (members \
                of the group the record's FIELD names; an insert needs membership of it), or nobody. \
                A record the caller may not read is 404 whether or not it exists; one it may read \
                but not change is 403, naming the rule. Roles and groups: `tsync user role`, \
                `tsync user group`; a group field is indexed.
                """,
            valueName: "rule"
        )
    )
    var access: [String] = []

    @Option(
        name: .customLong("index"),
        help: ArgumentHelp(
            "Keep an index on a user field of a table, TABLE.FIELD (repeatable).",
            discussion: """
                Filters comparing the field with a literal (eq, gt, ge, lt, le), startswith on it, and \
                $orderby on it then read the index instead of the table (on PostgreSQL: all but \
                boolean comparisons). Results are the same as without. Indexes are created at \
                start-up and when a table first appears; one no longer named is left in place.
                """,
            valueName: "table.field"
        )
    )
    var index: [String] = []

    @Option(
        name: .customLong("schema"),
        help: ArgumentHelp(
            "Check a table's records against a JSON Schema, TABLE=FILE.json (repeatable).",
            discussion: """
                Draft 2020-12, over the record's own fields (system properties are not its \
                business). An insert or update that does not match is refused with 400, naming \
                every failing field's path and why; clients read the schema and check changes \
                before they queue them. A keyword outside those that describe records is refused \
                at start-up (exit 78); stored records that do not match are counted in the log.
                """,
            valueName: "table=file"
        )
    )
    var schema: [String] = []

    @Option(name: .customLong("max-top"), parsing: .unconditional, help: "Largest page ($top) a client may ask for.")
    var maxTop = 5000

    @Option(
        name: .customLong("max-batch"), parsing: .unconditional,
        help: ArgumentHelp(
            "Most operations one POST /tables/$batch may hold; 0 turns the batch route off.", valueName: "n"))
    var maxBatch = 1000

    @Option(
        name: .customLong("max-connections"), parsing: .unconditional,
        help: ArgumentHelp("Connections open at once; one more is answered 503 and closed.", valueName: "n"))
    var maxConnections = 1024

    @Option(
        name: .customLong("max-client-connections"), parsing: .unconditional,
        help: ArgumentHelp(
            "Connections one client address may hold (IPv6 by its /64); one more is answered 429.",
            discussion: "Behind a --trusted-proxy, the requests under way from one forwarded address.", valueName: "n"))
    var maxClientConnections = 64

    @Option(
        name: .customLong("max-account-requests"), parsing: .unconditional,
        help: ArgumentHelp("Requests one account may have under way, held reads included; one more is answered 429.", valueName: "n"))
    var maxAccountRequests = 64

    @Option(
        name: .customLong("max-watchers"), parsing: .unconditional,
        help: ArgumentHelp(
            "Requests the live route may hold at once; 0 turns it off.",
            discussion: "Each held request keeps its connection, which counts against --max-connections.",
            valueName: "n"))
    var maxWatchers = 10_000

    @Option(
        name: .customLong("header-timeout"), parsing: .unconditional,
        help: ArgumentHelp("How long a request's head may take to arrive, from its first byte.", valueName: "duration"),
        transform: WrittenDuration.argument)
    var headerTimeout = WrittenDuration(seconds: 10)

    @Option(
        name: .customLong("idle-timeout"), parsing: .unconditional,
        help: ArgumentHelp("How long a connection may stay open with no request under way.", valueName: "duration"),
        transform: WrittenDuration.argument)
    var idleTimeout = WrittenDuration(seconds: 60)

    @Option(
        name: .customLong("body-timeout"), parsing: .unconditional,
        help: ArgumentHelp(
            "How long a request's body may take to arrive, from its head; past it the answer is 408.", valueName: "duration"),
        transform: WrittenDuration.argument)
    var bodyTimeout = WrittenDuration(seconds: 60)

    @Option(
        name: .customLong("query-timeout"), parsing: .unconditional,
        help: ArgumentHelp(
            "How long a read may spend in the database; past it the query is stopped and the answer is 503.",
            valueName: "duration"),
        transform: WrittenDuration.argument)
    var queryTimeout = WrittenDuration(seconds: 10)

    @Option(
        name: .customLong("trusted-proxy"),
        help: ArgumentHelp(
            "Address of a reverse proxy whose X-Forwarded-* headers are believed (repeatable).",
            discussion: """
                Failed logins are limited per client address. Behind a proxy every request comes from \
                the proxy's address, so give that exact IPv4 or IPv6 address here: requests from it are \
                counted under the rightmost X-Forwarded-For address that is not a trusted proxy. From \
                any other address the header is ignored, and so are X-Forwarded-Proto and Forwarded \
                (which set the scheme of the Link to the next page).
                """,
            valueName: "address"
        )
    )
    var trustedProxy: [String] = []

    @Option(
        name: .customLong("tls-cert"),
        help: ArgumentHelp(
            "Serve HTTPS with this PEM certificate (chain: the server's first, then intermediates).", valueName: "file"))
    var tlsCert: String?

    @Option(
        name: .customLong("tls-key"), help: ArgumentHelp("The PEM private key of --tls-cert.", valueName: "file"))
    var tlsKey: String?

    @Option(
        name: .customLong("token-ttl"), parsing: .unconditional,
        help: ArgumentHelp("Lifetime of a login token.", valueName: "duration"), transform: WrittenDuration.argument)
    var tokenTTL = WrittenDuration(seconds: 24 * 3600)

    @Option(name: .customLong("log-format"), help: ArgumentHelp("How log lines are written on stderr: text or json.", valueName: "format"))
    var logFormat: ServerLog.Format = .text

    @Flag(help: "Count requests, records and failures and answer GET /metrics (Prometheus text format).")
    var metrics = false

    @Option(
        name: .customLong("keep-history"), parsing: .unconditional,
        help: ArgumentHelp(
            "How long every version of every record is kept; 0 keeps none and turns GET /tables/$history off.",
            discussion: """
                Each write also stores the record's new state with who wrote it, in the same \
                transaction. Older versions are pruned at start-up and periodically, but a record \
                keeps the version it had at the cutoff, so the table can be read as it was at any \
                time within the duration.
                """,
            valueName: "duration"),
        transform: WrittenDuration.argument)
    var keepHistory = WrittenDuration(seconds: 30 * 86_400)

    @Option(
        name: .customLong("keep-deleted"), parsing: .unconditional,
        help: ArgumentHelp(
            "How long deleted records are kept before they are removed; 0 keeps them forever.",
            discussion: """
                A page read of a table that lost some carries X-TSync-Deleted-Horizon, so a client \
                whose last pull is older reads the table again rather than miss those deletes.
                """,
            valueName: "duration"),
        transform: WrittenDuration.argument)
    var keepDeleted = WrittenDuration(seconds: 90 * 86_400)

    // The database's fairness between accounts (docs/DESIGN.md §10.1).
    @Option(
        name: .customLong("db-share"), parsing: .unconditional,
        help: ArgumentHelp(
            "Reads of the database one account (or one anonymous client address) may run at once.",
            discussion: """
                Further reads of the same account wait for its own to end (within --query-timeout), \
                so one account's slow filters do not hold the database from the others.
                """,
            valueName: "n"))
    var dbShare = ServerConfiguration().readsPerClient

    @Option(
        name: .customLong("max-tables"), parsing: .unconditional,
        help: ArgumentHelp(
            "Tables one account may create; 0 for no limit.",
            discussion: "A write that would create one more is answered 403; tables that exist stay writable.",
            valueName: "n"))
    var maxTables = ServerConfiguration().maximumTablesPerAccount

    @Option(
        help: ArgumentHelp(
            "Read settings from a TOML file whose keys are the long flag names; flags given here win.", valueName: "file"))
    var config: String?

    func validate() throws {
        if (tlsCert == nil) != (tlsKey == nil) {
            throw ValidationError("--tls-cert and --tls-key go together: give the certificate and its private key")
        }
        guard tokenTTL.seconds >= 1 else { throw ValidationError("--token-ttl must be at least 1s (got \(tokenTTL))") }
        guard maxTop >= 1 else { throw ValidationError("--max-top must be at least 1 (got \(maxTop))") }
        guard maxBatch >= 0 else { throw ValidationError("--max-batch must be 0 (no batch route) or more (got \(maxBatch))") }
        guard maxWatchers >= 0 else { throw ValidationError("--max-watchers must be 0 (no live route) or more (got \(maxWatchers))") }
        guard maxConnections >= 1 else { throw ValidationError("--max-connections must be at least 1 (got \(maxConnections))") }
        guard maxClientConnections >= 1 else {
            throw ValidationError("--max-client-connections must be at least 1 (got \(maxClientConnections))")
        }
        guard maxAccountRequests >= 1 else {
            throw ValidationError("--max-account-requests must be at least 1 (got \(maxAccountRequests))")
        }
        guard headerTimeout.seconds >= 1 else { throw ValidationError("--header-timeout must be at least 1s (got \(headerTimeout))") }
        guard idleTimeout.seconds >= 1 else { throw ValidationError("--idle-timeout must be at least 1s (got \(idleTimeout))") }
        guard bodyTimeout.seconds >= 1 else { throw ValidationError("--body-timeout must be at least 1s (got \(bodyTimeout))") }
        guard queryTimeout.seconds >= 1 else { throw ValidationError("--query-timeout must be at least 1s (got \(queryTimeout))") }
        guard keepHistory.seconds >= 0 else { throw ValidationError("--keep-history must be 0 (none) or more (got \(keepHistory))") }
        guard dbShare >= 1 else { throw ValidationError("--db-share must be at least 1 (got \(dbShare))") }
        guard maxTables >= 0 else { throw ValidationError("--max-tables must be 0 (no limit) or more (got \(maxTables))") }
        guard keepDeleted.seconds >= 0 else { throw ValidationError("--keep-deleted must be 0 (forever) or more (got \(keepDeleted))") }
        if let proxy = configuration.invalidTrustedProxy {
            throw ValidationError(
                "--trusted-proxy \(proxy) is not an IP address: give the proxy's exact IPv4 or IPv6 address, e.g. 10.0.0.5 or fd00::5")
        }
        for text in schema {
            do {
                _ = try TableSchemas.parse(text)
            } catch {
                throw ValidationError(error.message)
            }
        }
        for text in index {
            do {
                _ = try IndexedField(parsing: text)
            } catch {
                throw ValidationError("--index \(text): \(error.message)")
            }
        }
        for text in access {
            do {
                _ = try AccessRules.parse(text)
            } catch {
                throw ValidationError("--access \(text): \(error.message)")
            }
        }
        do {
            try configuration.rules.validate()
        } catch {
            throw ValidationError("--access: \(error.message)")
        }
        if noAuth, !perUser.isEmpty {
            throw ValidationError("--per-user needs accounts to know whose records are whose: it cannot be combined with --no-auth")
        }
        if configuration.exposedWithoutAuthentication {
            throw ValidationError(
                "refusing --no-auth on \(host), which is not a loopback address: anyone who reaches it could read and change every table; add --insecure if you really mean it"
            )
        }
    }

    private var configuration: ServerConfiguration {
        var configuration = ServerConfiguration(
            host: host, port: port, requiresAuthentication: !noAuth, allowInsecure: insecure, perUserTables: Set(perUser),
            maximumPageSize: maxTop, maximumBatchOperations: maxBatch, authentication: .init(tokenLifetime: tokenTTL.duration),
            trustedProxies: Set(trustedProxy), maximumConnections: maxConnections, headerTimeoutSeconds: headerTimeout.seconds,
            idleTimeoutSeconds: idleTimeout.seconds, indexes: index.compactMap { try? IndexedField(parsing: $0) },
            bodyTimeoutSeconds: bodyTimeout.seconds,
            queryTimeoutSeconds: queryTimeout.seconds, exposesMetrics: metrics
        )
        configuration.maximumWatchers = maxWatchers
        configuration.maximumClientConnections = maxClientConnections
        configuration.maximumAccountRequests = maxAccountRequests
        configuration.retention = Retention(history: keepHistory.duration, deleted: keepDeleted.duration)
        configuration.readsPerClient = dbShare
        configuration.maximumTablesPerAccount = maxTables
        for text in access { try? configuration.access.add(parsing: text) }
        return configuration
    }

    func run() async throws {
        // The log's format is known before anything can fail: with --log-format json, a fatal
        // start-up error is a JSON line of the log too, not the terminal's "tsync: error:".
        let format = Self.logFormat(commandLine: logFormat, config: config)
        LoggingSystem.bootstrap { _ in ServerLog(format: format) }
        // Request lines still waiting for their batch are written before the command ends, and
        // before any error the command line prints after it.
        defer { LogBatch.standardError.flush() }
        do {
            try await (config.map(Self.withConfigFile) ?? self).serve()
        } catch  where format == .json && !(error is ExitCode) {
            let message = (error as? TSyncError)?.commandLineMessage ?? Self.message(for: error)
            LogBatch.standardError.writeNow(ServerLog.json(level: .error, message: message, metadata: [:]))
            throw ExitCode((error as? TSyncError).map { ExitStatus.code(for: $0.kind) } ?? Self.exitCode(for: error).rawValue)
        }
    }

    /// The command line's --log-format, else the config file's `log-format` (when the file can be
    /// read that far), else text.
    static func logFormat(commandLine: ServerLog.Format, config: String?) -> ServerLog.Format {
        guard let config, !commandLineArguments.contains(where: { ServeConfigFile.longName($0) == "log-format" }) else {
            return commandLine
        }
        guard case .string(let text)? = (try? ServeConfigFile(path: config))?.entries.first(where: { $0.key == "log-format" })?.value
        else { return commandLine }
        return ServerLog.Format(rawValue: text) ?? commandLine
    }

    private func serve() async throws {
        let logger = Logger(label: "tsync.serve")
        var settings = self.configuration
        if let tlsCert, let tlsKey {
            settings.tls = try ServerTLS(certificatePath: tlsCert, keyPath: tlsKey)
        }
        settings.schemas = try TableSchemas.load(schema)
        let configuration = settings
        try configuration.validate()
        let location = try database.location()
        let created = location.sqliteFileToCreate
        let listenLocation = try listenDB.map { try DatabaseLocation(parsing: $0, environment: ProcessInfo.processInfo.environment) }
        try await location.withStorage(
            logger: Logger(label: "tsync.storage"), queryTimeoutSeconds: configuration.queryTimeoutSeconds, serving: true,
            listenAt: listenLocation
        ) { storage in
            // Said once the database is open: a server that cannot reach it never claims to serve it.
            logger.info("tsync \(TSync.currentVersion) serving \(location.logDescription)")
            if let created { logger.info("created database at \(created)") }
            Self.raiseOpenFileLimit(connections: configuration.maximumConnections, logger: logger)
            if configuration.requiresAuthentication, try await AccountManager(storage: storage).list().isEmpty {
                logger.warning(
                    "no accounts yet, so no one can log in: add one with `tsync user add NAME --db \(location.logDescription)`")
            }
            try await SyncServer(configuration: configuration, storage: storage, logger: logger).run()
        }
    }

    /// Raises the soft limit on open files to the hard one: every connection, held reads above
    /// all, is a file descriptor, and the usual soft limit of 1,024 would refuse the 1,025th
    /// connection (accept fails) long before --max-connections does. Says so in the log, and
    /// warns when even the hard limit is below the connections allowed.
    static func raiseOpenFileLimit(connections: Int, logger: Logger) {
        guard let (before, after) = FileDescriptorLimit.raiseToHard() else { return }
        if after.soft > before.soft {
            logger.info("open files: soft limit raised from \(before.soft) to \(after.soft)")
        }
        // The database's files, the listening sockets and the log take a few dozen more.
        let needed = UInt64(connections) + 64
        if after.soft < needed {
            logger.warning(
                "open files: the limit is \(after.soft) (hard \(after.hard)), fewer than the \(connections) connections --max-connections allows need (about \(needed)): raise the hard limit (ulimit -Hn, LimitNOFILE= in a systemd unit)"
            )
        }
    }

    /// The command the config file and the command line make together: the file's settings
    /// first, then the command line's, which replace any the file gives. A value the file gave
    /// that serve refuses is a config error (78) naming the file, line and key.
    static func withConfigFile(_ path: String) throws -> ServeCommand {
        let file = try ServeConfigFile(path: path)
        let commandLine = Self.commandLineArguments
        do {
            var command = try Self.parse(file.arguments(overriddenBy: commandLine) + commandLine.filter { $0 != "--config" })
            command.config = nil
            return command
        } catch {
            let message = Self.message(for: error)
            let fromFile = ServeConfigFile.keys.keys.filter { message.contains("--" + $0) }.max { $0.count < $1.count }
            if let key = fromFile, let line = file.line(of: key), !commandLine.contains(where: { ServeConfigFile.longName($0) == key }) {
                throw TSyncError(.invalidConfiguration, "\(path) line \(line): \(key): \(message)")
            }
            throw error
        }
    }

    /// The arguments after `serve` on the command line, without `--config FILE`.
    static var commandLineArguments: [String] {
        let all = Array(CommandLine.arguments.dropFirst())
        guard let serve = all.firstIndex(of: "serve") else { return [] }
        var arguments: [String] = []
        var rest = all[(serve + 1)...]
        while let argument = rest.popFirst() {
            if argument == "--config" {
                _ = rest.popFirst()
            } else if !argument.hasPrefix("--config=") {
                arguments.append(argument)
            }
        }
        return arguments
    }
}
