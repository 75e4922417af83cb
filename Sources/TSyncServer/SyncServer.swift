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
import TSyncModel

/// The sync server: Mobile Apps v2 table routes, accounts and health, over one `ServerStorage`.
///
/// `run()` serves until SIGINT or SIGTERM, then finishes the requests in flight and returns
/// (graceful shutdown through swift-service-lifecycle).
public struct SyncServer: Sendable {
    public let configuration: ServerConfiguration
    let storage: any ServerStorage
    let authenticator: Authenticator
    let logger: Logger

    public init(
        configuration: ServerConfiguration, storage: any ServerStorage, hasher: PasswordHasher = PasswordHasher(),
        logger: Logger = Logger(label: "tsync.serve"), clock: @escaping @Sendable () -> Timestamp = Timestamp.now
    ) throws(TSyncError) {
        try configuration.validate()
        self.configuration = configuration
        self.storage = storage
        self.authenticator = Authenticator(storage: storage, hasher: hasher, policy: configuration.authentication, clock: clock)
        self.logger = logger
    }

    /// The Hummingbird application. `onListening` gets the bound port (the chosen one for port 0).
    public func makeApplication(onListening: @escaping @Sendable (Int) -> Void = { _ in }) -> some ApplicationProtocol {
        let router = Router(context: ServerRequestContext.self)
        router.middlewares.add(ClientAddressMiddleware(trustedProxies: configuration.trustedProxies))
        router.middlewares.add(RequestLogMiddleware())
        router.middlewares.add(ErrorMiddleware())
        router.get("health") { _, _ in JSONResponse.make(.ok, ["status": "ok"]) }

        let tables = router.group("tables")
            .add(middleware: APIVersionMiddleware())
            .add(middleware: AuthMiddleware(authenticator: authenticator, required: configuration.requiresAuthentication))
        let tableRoutes = TableRoutes(storage: storage, configuration: configuration)
        // Before the table routes: `$batch` is a fixed path, never a table name.
        if configuration.maximumBatchOperations > 0 {
            BatchRoutes(storage: storage, configuration: configuration, tables: tableRoutes).register(on: tables)
        }
        tableRoutes.register(on: tables)

        let auth = router.group(".auth").add(middleware: APIVersionMiddleware())
        AuthRoutes(authenticator: authenticator, configuration: configuration).register(on: auth)

        let host = configuration.host
        let logger = logger
        let tls = configuration.tls
        let scheme = tls == nil ? "http" : "https"
        let limits = ConnectionLimits(
            maximumConnections: configuration.maximumConnections,
            headerTimeout: .seconds(Int64(configuration.headerTimeoutSeconds)),
            bodyTimeout: .seconds(Int64(configuration.bodyTimeoutSeconds)),
            idleTimeout: .seconds(Int64(configuration.idleTimeoutSeconds)))
        return Application(
            router: router,
            server: HTTPServerBuilder { responder in
                let channel = GuardedHTTP1Channel(responder: responder, limits: limits)
                guard let tls else { return channel }
                return try TLSChannel(channel, tlsConfiguration: tls.configuration)
            },
            configuration: .init(address: .hostname(host, port: configuration.port), serverName: "tsync"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                let shownHost = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
                logger.info("listening on \(scheme)://\(shownHost):\(port)")
                onListening(port)
            },
            logger: logger
        )
    }

    /// Serves until SIGINT or SIGTERM, after declaring the indexed fields (their indexes are
    /// created first, so a large table delays the start; each is logged).
    public func run() async throws {
        for line in try await storage.declareIndexes(configuration.indexedFields) { logger.info("\(line)") }
        do {
            try await makeApplication().runService()
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw TSyncError(
                .failure, "cannot listen on \(configuration.host):\(configuration.port): the port is in use by another program",
                remedy: .anotherPort)
        }
    }
}
