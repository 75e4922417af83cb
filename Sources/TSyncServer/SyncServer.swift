#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import ServiceLifecycle
import TSyncModel
import UnixSignals

/// The sync server: Mobile Apps v2 table routes, accounts and health, over one `ServerStorage`.
///
/// `run()` serves until SIGINT or SIGTERM, then finishes the requests in flight and returns
/// (graceful shutdown through swift-service-lifecycle).
public struct SyncServer: Sendable {
    public let configuration: ServerConfiguration
    let storage: any ServerStorage
    let authenticator: Authenticator
    let logger: Logger
    /// The series, when `configuration.exposesMetrics` or a `metricsFactory` is given.
    let metrics: ServerMetrics?
    let inFlight = InFlightRequests()
    /// The wall clock, for the history's oldest readable time and its pruning.
    let clock: @Sendable () -> Timestamp

    public init(
        configuration: ServerConfiguration, storage: any ServerStorage, hasher: PasswordHasher = PasswordHasher(),
        logger: Logger = Logger(label: "tsync.serve"), clock: @escaping @Sendable () -> Timestamp = Timestamp.now
    ) throws(TSyncError) {
        try configuration.validate()
        self.configuration = configuration
        let metrics =
            configuration.exposesMetrics || configuration.metricsFactory != nil
            ? ServerMetrics(backend: configuration.metricsFactory, exposes: configuration.exposesMetrics) : nil
        let storage = metrics.map { MeteredStorage(base: storage, metrics: $0) } ?? storage
        self.metrics = metrics
        self.storage = storage
        self.authenticator = Authenticator(storage: storage, hasher: hasher, policy: configuration.authentication, clock: clock)
        self.logger = logger
        self.clock = clock
        storage.keepHistory(configuration.retention.keepsHistory)
        storage.shareReads(perClient: configuration.readsPerClient)
        storage.limitTables(perAccount: configuration.maximumTablesPerAccount)
    }

    /// How long a stop on SIGTERM may take before what is left is cancelled: uploads get
    /// `ConnectionLimits.uploadGrace`, answers `flushGrace` more to reach their sockets; within
    /// the 30 s a service manager waits (`TimeoutStopSec=30` in the README's unit).
    static let shutdownLimit = Duration.seconds(20)

    /// Bytes of answers one client address may leave unread before a large one is refused
    /// (`ResponseShareMiddleware`, docs/DESIGN.md §10.1).
    static let unreadAnswersPerClient = 32 << 20

    /// Every answer's `Server` field.
    static let serverName = "tsync"

    /// The Hummingbird application. `onListening` gets the bound port (the chosen one for port 0).
    public func makeApplication(onListening: @escaping @Sendable (Int) -> Void = { _ in }) -> some ApplicationProtocol {
        let router = Router(context: ServerRequestContext.self)
        // Shares of requests in flight (docs/DESIGN.md §10.1): by address behind a trusted proxy
        // here, by account once the token is read.
        let shares = ClientShares()
        router.middlewares.add(outerMiddlewares(shares: shares))
        router.on(ServedRoutes.health) { _, _ in JSONResponse.make(.ok, ["status": "ok"]) }
        let description = JSONSerializer.bytes(OpenAPIDocument.make(configuration))
        router.on(ServedRoutes.openAPI) { _, _ in JSONResponse.make(.ok, bytes: description) }
        OperatorRoutes(storage: storage, metrics: metrics, readinessTimeoutSeconds: configuration.readinessTimeoutSeconds)
            .register(on: router)

        let tables = router.group("tables").add(middleware: tableMiddlewares(shares: shares))
        let tableRoutes = TableRoutes(storage: storage, configuration: configuration, metrics: metrics)
        // Before the table routes: `$batch` is a fixed path, never a table name.
        if configuration.maximumBatchOperations > 0 {
            BatchRoutes(storage: storage, configuration: configuration, tables: tableRoutes).register(on: tables)
        }
        HistoryRoutes(storage: storage, configuration: configuration, tables: tableRoutes, clock: clock).register(on: tables)
        SchemaRoutes(configuration: configuration, tables: tableRoutes).register(on: tables)
        tableRoutes.register(on: tables)

        let auth = router.group(".auth").add(middleware: APIVersionMiddleware())
        AuthRoutes(authenticator: authenticator, configuration: configuration, metrics: metrics).register(on: auth)

        let host = configuration.host
        let logger = logger
        let tls = configuration.tls
        let scheme = tls == nil ? "http" : "https"
        let limits = ConnectionLimits(
            maximumConnections: configuration.maximumConnections, clientConnections: configuration.maximumClientConnections,
            headerTimeout: .seconds(Int64(configuration.headerTimeoutSeconds)),
            bodyTimeout: .seconds(Int64(configuration.bodyTimeoutSeconds)),
            idleTimeout: .seconds(Int64(configuration.idleTimeoutSeconds)),
            trustedProxies: Set(configuration.trustedProxies.compactMap { ClientAddress.canonical($0) }),
            metrics: metrics, onStop: { [changes = storage.changes] in changes?.stop() })
        return Application(
            router: router,
            server: HTTPServerBuilder { responder in
                let channel = GuardedHTTP1Channel(responder: responder, limits: limits)
                guard let tls else { return channel }
                return try TLSChannel(channel, tlsConfiguration: tls.configuration)
            },
            configuration: .init(address: .hostname(host, port: configuration.port), serverName: Self.serverName),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                let shownHost = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
                logger.info("listening on \(scheme)://\(shownHost):\(port)")
                onListening(port)
            },
            logger: logger
        )
    }

    // The middlewares as one value each for the router and the tables, in this order: a stack
    // of one type is called without a responder and an existential call between each two, and
    // the compiler may merge their async frames. Every request in flight keeps those frames, a
    // held read for as long as it waits: they are most of what it costs (docs/PERFORMANCE.md).

    @MiddlewareFixedTypeBuilder<Request, Response, ServerRequestContext>
    private func outerMiddlewares(shares: ClientShares) -> some MiddlewareProtocol<Request, Response, ServerRequestContext> {
        ClientAddressMiddleware(trustedProxies: configuration.trustedProxies)
        RequestLogMiddleware(metrics: metrics, inFlight: inFlight)
        ErrorMiddleware(routes: ServedRoutes.all(configuration), metrics: metrics)
        RequestShareMiddleware(key: .clientAddress, limit: configuration.maximumClientConnections, shares: shares, metrics: metrics)
        ResponseShareMiddleware(limit: Self.unreadAnswersPerClient, unread: UnreadAnswers(), metrics: metrics)
    }

    @MiddlewareFixedTypeBuilder<Request, Response, ServerRequestContext>
    private func tableMiddlewares(shares: ClientShares) -> some MiddlewareProtocol<Request, Response, ServerRequestContext> {
        APIVersionMiddleware()
        AuthMiddleware(
            authenticator: authenticator, required: configuration.requiresAuthentication,
            admitsAnonymous: configuration.rules.admitsAnonymous)
        RequestShareMiddleware(key: .account, limit: configuration.maximumAccountRequests, shares: shares, metrics: metrics)
    }

    /// Serves until SIGINT or SIGTERM, after logging what it runs with and declaring the indexed
    /// fields (their indexes are created first, so a large table delays the start; each is
    /// logged). On the signal it logs that it stops and how many requests it waits for, finishes
    /// them, and logs that it stopped.
    public func run() async throws {
        for line in configuration.summary { logger.info("\(line)") }
        for line in try await storage.declareIndexes(configuration.indexedFields) { logger.info("\(line)") }
        // Before listening: a read of the table as it was must not miss a record that only lacks
        // its first version yet (records written while history was off, DESIGN §6.5).
        let pruner = Pruner(storage: storage, retention: configuration.retention, clock: clock, logger: logger)
        try await pruner.runOnce(seed: true)
        do {
            // The notice traps the signals itself (two traps of one signal do not both see it) and
            // ends on the first, which shuts the group down gracefully.
            var settings = ServiceGroupConfiguration(
                services: [
                    .init(
                        service: ShutdownNotice(logger: logger, inFlight: inFlight),
                        successTerminationBehavior: .gracefullyShutdownGroup),
                    .init(service: makeApplication()),
                    .init(service: pruner, successTerminationBehavior: .ignore),
                    .init(
                        service: SchemaAudit(storage: storage, schemas: configuration.schemas, logger: logger),
                        successTerminationBehavior: .ignore),
                ],
                logger: logger)
            // Past it, what is still under way is cancelled (docs/DESIGN.md §10.1).
            settings.maximumGracefulShutdownDuration = Self.shutdownLimit
            let group = ServiceGroup(configuration: settings)
            try await group.run()
            logger.info("stopped")
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw TSyncError(
                .failure, "cannot listen on \(configuration.host):\(configuration.port): the port is in use by another program",
                remedy: .anotherPort)
        }
    }
}

/// Waits for SIGTERM or SIGINT, logs it with the requests the server still finishes, and ends,
/// which shuts the service group (the server) down gracefully.
struct ShutdownNotice: Service {
    let logger: Logger
    let inFlight: InFlightRequests

    func run() async throws {
        for await signal in await UnixSignalsSequence(trapping: .sigterm, .sigint).cancelOnGracefulShutdown() {
            let count = inFlight.current
            logger.info("stopping on \(signal): waiting for \(count) request\(count == 1 ? "" : "s") in flight")
            return
        }
    }
}

/// Prunes the history and removes old tombstones (`ServerStorage.maintain`) every
/// `Retention.pruningInterval` after the start-up run (`runOnce(seed: true)`, before the server
/// listens), and says in the log what it removed. A periodic run that fails is logged and tried
/// again at the next interval: serving goes on.
struct Pruner: Service {
    let storage: any ServerStorage
    let retention: Retention
    let clock: @Sendable () -> Timestamp
    let logger: Logger
    /// How long PostgreSQL instances get to read a new deleted horizon before its tombstones go.
    static let settle = PostgresStorage.horizonLifetime * 2 + .seconds(1)

    func run() async throws {
        await cancelWhenGracefulShutdown { await self.prune() }
    }

    /// One maintenance run; `seed` also gives every current record without a version its first one.
    func runOnce(seed: Bool) async throws {
        let report = try await storage.maintain(retention, now: clock(), seed: seed, settle: Self.settle)
        if report != MaintenanceReport() {
            logger.info(
                "history: \(report.seeded) current records given a first version, \(report.versionsPruned) old versions pruned, \(report.tombstonesRemoved) deleted records removed"
            )
        }
    }

    private func prune() async {
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: retention.pruningInterval)
            } catch {
                return
            }
            do {
                try await runOnce(seed: false)
            } catch is CancellationError {
                return
            } catch {
                logger.warning("history: pruning failed, tried again in \(ServerConfiguration.spoken(retention.pruningInterval)): \(error)")
            }
        }
    }
}
