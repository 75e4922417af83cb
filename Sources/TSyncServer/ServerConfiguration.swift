import CoreMetrics
import TSyncModel

/// What `tsync serve` was asked for. `validate()` refuses combinations that would be unsafe or
/// meaningless before anything listens.
public struct ServerConfiguration: Sendable {
    public var host: String
    /// 0 picks a free port; the chosen one is logged ("listening on http://HOST:PORT").
    public var port: Int
    /// Accounts and tokens required on /tables (on unless `--no-auth`).
    public var requiresAuthentication: Bool
    /// Allows `--no-auth` on an address other than loopback.
    public var allowInsecure: Bool
    /// Tables whose records belong to the user who inserted them (`--per-user`), in lower case.
    public var perUserTables: Set<String>
    public var defaultPageSize: Int
    /// The largest `$top` accepted; over it is 400 (`--max-top`).
    public var maximumPageSize: Int
    /// Request bodies over this are 413 (and each item of a batch).
    public var maximumBodyBytes: Int
    /// Operations one `POST /tables/$batch` may hold (`--max-batch`); 0 turns the batch route off,
    /// so the server speaks the plain v2 protocol only.
    public var maximumBatchOperations: Int
    /// The body limit of the batch route.
    public var maximumBatchBytes: Int
    /// Connections open at once (`--max-connections`); one more is answered 503 and closed.
    public var maximumConnections: Int
    /// Connections one client address may hold (`--max-client-connections`; IPv6 by its /64), and
    /// requests in flight from one address behind a trusted proxy; one more is answered 429.
    public var maximumClientConnections = 64
    /// Requests one account may have in flight, held reads included (`--max-account-requests`);
    /// one more is answered 429.
    public var maximumAccountRequests = 64
    /// Seconds a request's head may take to arrive, from its first byte (`--header-timeout`).
    public var headerTimeoutSeconds: Int
    /// Seconds a connection may stay open with no request under way (`--idle-timeout`).
    public var idleTimeoutSeconds: Int
    /// Seconds a request's body may take to arrive, from its head (`--body-timeout`); past it the
    /// request is answered 408 and the connection closed.
    public var bodyTimeoutSeconds: Int
    /// Seconds a read's database work may take (`--query-timeout`); past it the work is stopped and
    /// the request answered 503.
    public var queryTimeoutSeconds: Int
    /// `$orderby` fields a read may name; more is 400 (ASP.NET OData's `MaxOrderByNodeCount` is 5
    /// too). Each field is a sort key SQLite or PostgreSQL must build for every matching record.
    public var maximumOrderByFields: Int
    /// `$filter` texts longer than this are 400: a hostile filter should not cost the parser or SQLite much.
    public var maximumFilterLength: Int
    public var authentication: Authenticator.Policy
    /// Reverse proxies (exact IP addresses, `--trusted-proxy`) whose `X-Forwarded-For` names the
    /// client for login throttling and the request log, and whose `X-Forwarded-Proto` or
    /// `Forwarded: proto=` the scheme of `Link`; from any other peer these headers are ignored.
    public var trustedProxies: Set<String>
    /// User fields to keep an index on (`--index TABLE.FIELD`); see `IndexedField`.
    public var indexes: [IndexedField]
    /// Requests the live route may hold at once (`--max-watchers`);
    /// 0 turns the route off, so the server answers `Prefer: wait` as a plain v2 server does.
    /// Each held request also holds a connection (`maximumConnections`).
    public var maximumWatchers = 10_000
    /// Serve HTTPS with this certificate and key (`--tls-cert`, `--tls-key`); nil is plain HTTP.
    public var tls: ServerTLS?
    /// Count requests, records and failures and answer `GET /metrics` (`--metrics`), from a
    /// Prometheus registry of this server's own.
    public var exposesMetrics = false
    /// Where a program that embeds the server wants its series (`tsync_http_requests_total` and
    /// the others of docs/DESIGN.md §4): a swift-metrics factory of its own (its Prometheus
    /// registry's `PrometheusMetricsFactory`, StatsD, OpenTelemetry…), with the same names and
    /// labels as `/metrics`. nil: nowhere but `/metrics`, when `exposesMetrics`. The server never
    /// uses `MetricsSystem.factory` and never bootstraps it, so servers in one process keep apart.
    public var metricsFactory: (any MetricsFactory)?
    /// Reads of the database one account (or anonymous client address) may run at once
    /// (`--db-share`, docs/DESIGN.md §10.1); its further reads wait for its own.
    public var readsPerClient = ReadShares.defaultPerClient
    /// Tables one account may create (`--max-tables`, docs/DESIGN.md §10.1); 0 for no limit.
    public var maximumTablesPerAccount = 100
    /// How long `GET /ready` waits for the database before answering 503.
    public var readinessTimeoutSeconds = 2
    /// How long versions and tombstones are kept (`--keep-history`, `--keep-deleted`); a history of
    /// zero turns the history route off and writes no versions (docs/DESIGN.md §6.5).
    public var retention = Retention()
    /// Each table's record type (`--schema TABLE=FILE`, docs/DESIGN.md §16), by lowercased name:
    /// writes that do not match it are refused.
    public var schemas: [String: RecordSchema] = [:]
    /// Table rules (`--access`, docs/DESIGN.md §11.1); `--per-user` and `--no-auth` set the
    /// defaults of the tables and operations they do not name (`rules`).
    public var access = AccessRules()

    /// The rules in force: `access`, over the defaults `--per-user` and `--no-auth` give.
    public var rules: AccessRules {
        var rules = access
        rules.perUserTables = perUserTables
        rules.requiresAuthentication = requiresAuthentication
        return rules
    }

    /// JSON values (keys included) one batch body may hold, counted before it is parsed: as many as
    /// the largest item can hold (two bytes a value), and 64 more per operation
    /// (docs/DESIGN.md §10.1).
    public var maximumBatchValues: Int { maximumBodyBytes / 2 + 64 * maximumBatchOperations }

    /// `indexes`, each marked per-user when its table's records are read by their owner; and
    /// the field of each `group:FIELD` read rule, so that a group's page reads an index.
    public var indexedFields: [IndexedField] {
        let rules = rules
        var fields = indexes
        for (table, operations) in rules.tables.sorted(by: { $0.key < $1.key }) {
            guard case .group(let name)? = operations[.read], var field = try? IndexedField(table: table, field: name) else { continue }
            field.grouped = true
            fields.append(field)
        }
        return fields.map { field in
            var field = field
            field.perUser = rules.rule(field.table, .read) == .owner
            return field
        }
    }

    public init(
        host: String = "127.0.0.1", port: Int = 8080, requiresAuthentication: Bool = true, allowInsecure: Bool = false,
        perUserTables: Set<String> = [], defaultPageSize: Int = 50, maximumPageSize: Int = 5000,
        maximumBodyBytes: Int = 1 << 20, maximumBatchOperations: Int = 1000, maximumBatchBytes: Int = 16 << 20,
        maximumFilterLength: Int = 4096, authentication: Authenticator.Policy = .init(), trustedProxies: Set<String> = [],
        maximumConnections: Int = 1024, headerTimeoutSeconds: Int = 10, idleTimeoutSeconds: Int = 60,
        indexes: [IndexedField] = [], bodyTimeoutSeconds: Int = 60, queryTimeoutSeconds: Int = 10, maximumOrderByFields: Int = 5,
        exposesMetrics: Bool = false
    ) {
        self.exposesMetrics = exposesMetrics
        self.bodyTimeoutSeconds = bodyTimeoutSeconds
        self.queryTimeoutSeconds = queryTimeoutSeconds
        self.maximumOrderByFields = maximumOrderByFields
        self.indexes = indexes
        self.maximumConnections = maximumConnections
        self.headerTimeoutSeconds = headerTimeoutSeconds
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.host = host
        self.port = port
        self.requiresAuthentication = requiresAuthentication
        self.allowInsecure = allowInsecure
        self.perUserTables = Set(perUserTables.map { $0.lowercased() })
        self.defaultPageSize = defaultPageSize
        self.maximumPageSize = maximumPageSize
        self.maximumBodyBytes = maximumBodyBytes
        self.maximumBatchOperations = maximumBatchOperations
        self.maximumBatchBytes = maximumBatchBytes
        self.maximumFilterLength = maximumFilterLength
        self.authentication = authentication
        self.trustedProxies = trustedProxies
    }

    /// Refuses settings the server cannot run with. Messages name the settings in words, as a
    /// library's user sets them; `tsync serve` checks its own flags first, in their terms.
    public func validate() throws(TSyncError) {
        guard (0...65535).contains(port) else { throw .usage("invalid port \(port): use 0 to 65535 (0 picks a free port)") }
        guard maximumPageSize >= 1 else { throw .usage("the maximum page size must be at least 1") }
        guard maximumBatchOperations >= 0 else { throw .usage("the batch limit must be 0 (no batch route) or more") }
        guard maximumWatchers >= 0 else { throw .usage("the watcher limit must be 0 (no live route) or more") }
        guard maximumConnections >= 1 else { throw .usage("the connection limit must be at least 1") }
        guard maximumClientConnections >= 1, maximumAccountRequests >= 1 else {
            throw .usage("the per-client connection and per-account request limits must be at least 1")
        }
        guard headerTimeoutSeconds >= 1, idleTimeoutSeconds >= 1 else {
            throw .usage("the header and idle timeouts must be at least 1 second")
        }
        guard bodyTimeoutSeconds >= 1, queryTimeoutSeconds >= 1 else {
            throw .usage("the body and query timeouts must be at least 1 second")
        }
        guard retention.history >= .zero, retention.deleted >= .zero else {
            throw .usage("the history and tombstone durations must be 0 or more")
        }
        guard readsPerClient >= 1 else { throw .usage("the database share of a client must be at least 1 read") }
        guard maximumTablesPerAccount >= 0 else { throw .usage("the table limit of an account must be 0 (none) or more") }
        guard maximumOrderByFields >= 2 else { throw .usage("the $orderby limit must be at least 2 (updatedAt and id)") }
        for table in perUserTables { try Identifiers.validateTableName(table) }
        try rules.validate()
        if let proxy = invalidTrustedProxy {
            throw .usage(
                "trusted proxy \(proxy) is not an IP address: give the proxy's exact IPv4 or IPv6 address, e.g. 10.0.0.5 or fd00::5")
        }
        if !requiresAuthentication {
            if !perUserTables.isEmpty {
                throw .usage("per-user tables need accounts to know whose records are whose: they need authentication")
            }
            if exposedWithoutAuthentication {
                throw .usage(
                    "refusing to serve without authentication on \(host), which is not a loopback address: anyone who reaches it could read and change every table; allow it explicitly if you really mean it"
                )
            }
        }
    }

    /// The first trusted proxy that is not an IP address, if any.
    public var invalidTrustedProxy: String? { trustedProxies.sorted().first { ClientAddress.canonical($0) == nil } }

    /// Serving without authentication on an address other hosts can reach, not explicitly allowed.
    public var exposedWithoutAuthentication: Bool { !requiresAuthentication && !Self.isLoopback(host) && !allowInsecure }

    /// The page size of a request: the default, or `$top` within the maximum.
    func pageSize(top: Int?) -> Int { top ?? min(defaultPageSize, maximumPageSize) }

    func isPerUser(_ table: String) -> Bool { perUserTables.contains(table.lowercased()) }

    func schema(of table: String) -> RecordSchema? { schemas.isEmpty ? nil : schemas[table.lowercased()] }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }
}
