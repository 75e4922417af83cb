import CoreMetrics
import Foundation
import Hummingbird
import Prometheus
import Synchronization

/// The server's series (docs/DESIGN.md §4), emitted through swift-metrics: the program that
/// embeds the server chooses where they go (`ServerConfiguration.metricsFactory`), and `GET
/// /metrics` (`--metrics`) renders them in the Prometheus text format (version 0.0.4) from a
/// registry of this server's own (swift-prometheus). Nothing is bootstrapped process-wide
/// (`MetricsSystem.bootstrap` can be called once), so servers in one process never share counts.
///
/// Every label takes few values: methods outside a fixed set are `other`, routes are templates
/// (`/tables/{table}`) or `unmatched`, statuses are three digits. So what a client can make the
/// server keep here is bounded, whatever paths and methods it sends. Each series is made once and
/// kept: a request counts through a handler found by its labels, never by a name.
public final class ServerMetrics: Sendable {
    /// The series, in the order `/metrics` lists them, with their help (`# HELP`, which
    /// swift-metrics does not carry).
    static let series: [(name: String, help: String)] = [
        (Names.requests, "Requests answered, by method, route template and status."),
        (Names.requestDuration, "Time from a request's head to its answer."),
        (Names.responseBytes, "Bytes of answer bodies (of known length)."),
        (Names.recordsRead, "Records sent in answers to reads."),
        (Names.recordsWritten, "Records inserted, updated or deleted."),
        (Names.batchSize, "Writes per database transaction (1 for the single routes)."),
        (Names.openConnections, "Client connections open now."),
        (Names.loginFailures, "Logins refused for a wrong name or password."),
        (Names.loginsThrottled, "Logins refused because of too many failures (429)."),
        (Names.queryTimeouts, "Reads stopped by the query timeout (503)."),
        (Names.shareRefusals, "Connections and requests refused for a share: a client's, or the server's limit."),
        (Names.liveWaiting, "Live reads held now (Prefer: wait)."),
        (Names.liveQueries, "Queries run for live reads (one per question and commit, shared by the reads that ask it)."),
    ]

    /// The series' names: a program's backend sees these labels (swift-metrics' word for a name).
    enum Names {
        static let requests = "tsync_http_requests_total"
        static let requestDuration = "tsync_http_request_duration_seconds"
        static let responseBytes = "tsync_http_response_bytes_total"
        static let recordsRead = "tsync_records_read_total"
        static let recordsWritten = "tsync_records_written_total"
        static let batchSize = "tsync_write_batch_size"
        static let openConnections = "tsync_open_connections"
        static let loginFailures = "tsync_login_failures_total"
        static let loginsThrottled = "tsync_login_throttled_total"
        static let queryTimeouts = "tsync_query_timeouts_total"
        static let liveWaiting = "tsync_live_waiting"
        static let liveQueries = "tsync_live_queries_total"
        static let shareRefusals = "tsync_share_refusals_total"
    }

    /// Upper bounds of the request duration histogram.
    static let durationBuckets: [Duration] = [
        .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
    ]
    /// Upper bounds of the batch size histogram (writes per database transaction).
    static let batchBuckets: [Double] = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000]
    static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    struct RequestKey: Hashable, Sendable {
        var method: String
        var route: String
        var status: String
    }

    struct RouteKey: Hashable, Sendable {
        var method: String
        var route: String
    }

    struct Labelled: Sendable {
        var requests: [RequestKey: (count: CoreMetrics.Counter, duration: CoreMetrics.Timer)] = [:]
        var durations: [RouteKey: CoreMetrics.Timer] = [:]
    }

    /// A request or connection refused because its client held its share, or the server its
    /// limit (docs/DESIGN.md §10.1): the label of `tsync_share_refusals_total`.
    enum ShareRefusal: String, CaseIterable, Sendable {
        /// Over `--max-connections`: 503.
        case connections
        /// Over `--max-client-connections` from one address: 429.
        case clientConnections = "client_connections"
        /// Over one address's requests in flight behind a trusted proxy: 429.
        case clientRequests = "client_requests"
        /// Over `--max-account-requests`: 429.
        case accountRequests = "account_requests"
        /// Over the answers one address has not read: 429.
        case unreadAnswers = "unread_answers"

        var status: Int { self == .connections ? 503 : 429 }
    }

    /// Where the series go.
    private let factory: any MetricsFactory
    /// The registry `/metrics` renders; nil when the series go only to a program's own backend.
    private let registry: PrometheusCollectorRegistry?
    /// The labelled series, made at their first request: per label set, the counter and the
    /// route's timer together, so that a request finds both under one lock.
    private let labelled = Mutex(Labelled())
    private let responseBytes: CoreMetrics.Counter
    private let recordsRead: CoreMetrics.Counter
    private let recordsWritten: CoreMetrics.Counter
    private let batchSizes: Recorder
    private let loginFailures: CoreMetrics.Counter
    private let loginsThrottled: CoreMetrics.Counter
    private let queryTimeouts: CoreMetrics.Counter
    private let liveQueries: CoreMetrics.Counter
    /// `tsync_share_refusals_total`, one counter per kind, all made at start (shown at 0).
    private let shareRefusals: [ShareRefusal: CoreMetrics.Counter]
    /// Client connections open now (`ConnectionLimits` moves it).
    let openConnections: Meter
    /// Live reads held now (`LiveWait` moves it).
    let liveWaiting: Meter

    /// Whether `/metrics` is answered: the series go to a registry of this server's own.
    var exposes: Bool { registry != nil }

    /// Series rendered by `/metrics` only, in a registry of their own.
    public convenience init() { self.init(backend: nil, exposes: true) }

    /// Series sent to `backend` (a program's own, `ServerConfiguration.metricsFactory`) and, when
    /// `exposes` (`--metrics`), to a Prometheus registry of this server's own for `/metrics`.
    init(backend: (any MetricsFactory)?, exposes: Bool) {
        var own: PrometheusMetricsFactory?
        if exposes {
            var prometheus = PrometheusMetricsFactory(registry: PrometheusCollectorRegistry())
            prometheus.durationHistogramBuckets = [Names.requestDuration: Self.durationBuckets]
            prometheus.valueHistogramBuckets = [Names.batchSize: Self.batchBuckets]
            own = prometheus
        }
        registry = own?.registry
        let factories: [any MetricsFactory] = [backend, own].compactMap { $0 }
        let factory = factories.count == 1 ? factories[0] : MultiplexMetricsHandler(factories: factories)
        self.factory = factory
        func counter(_ name: String) -> CoreMetrics.Counter { CoreMetrics.Counter(label: name, factory: factory) }
        responseBytes = counter(Names.responseBytes)
        recordsRead = counter(Names.recordsRead)
        recordsWritten = counter(Names.recordsWritten)
        batchSizes = Recorder(label: Names.batchSize, aggregate: true, factory: factory)
        openConnections = Meter(label: Names.openConnections, factory: factory)
        loginFailures = counter(Names.loginFailures)
        loginsThrottled = counter(Names.loginsThrottled)
        queryTimeouts = counter(Names.queryTimeouts)
        liveWaiting = Meter(label: Names.liveWaiting, factory: factory)
        liveQueries = counter(Names.liveQueries)
        shareRefusals = Dictionary(
            uniqueKeysWithValues: ShareRefusal.allCases.map { kind in
                let refusals = CoreMetrics.Counter(
                    label: Names.shareRefusals, dimensions: [("share", kind.rawValue), ("status", String(kind.status))], factory: factory)
                refusals.increment(by: 0)
                return (kind, refusals)
            })
        // Made now, so that `/metrics` shows them at 0 from the start.
        openConnections.set(0)
        liveWaiting.set(0)
    }

    func recordRequest(method: String, route: String, status: Int?, seconds: Double, bytes: Int?) {
        let method = Self.knownMethods.contains(method) ? method : "other"
        let status = status.map { (100...599).contains($0) ? String($0) : "other" } ?? "failed"
        let key = RequestKey(method: method, route: route, status: status)
        let series = labelled.withLock { labelled in
            if let series = labelled.requests[key] { return series }
            let routeKey = RouteKey(method: method, route: route)
            let duration =
                labelled.durations[routeKey]
                ?? CoreMetrics.Timer(label: Names.requestDuration, dimensions: [("method", method), ("route", route)], factory: factory)
            labelled.durations[routeKey] = duration
            let count = CoreMetrics.Counter(
                label: Names.requests, dimensions: [("method", method), ("route", route), ("status", status)], factory: factory)
            labelled.requests[key] = (count, duration)
            return (count, duration)
        }
        series.count.increment()
        series.duration.recordNanoseconds(Int64((seconds * 1e9).rounded()))
        if let bytes, bytes > 0 { responseBytes.increment(by: bytes) }
    }

    func recordRead(records: Int) { recordsRead.increment(by: records) }

    func recordWrite(batchSize: Int, written: Int) {
        recordsWritten.increment(by: written)
        batchSizes.record(batchSize)
    }

    func recordLoginFailure() { loginFailures.increment() }
    func recordLoginThrottled() { loginsThrottled.increment() }
    func recordQueryTimeout() { queryTimeouts.increment() }
    func recordLiveQuery() { liveQueries.increment() }
    func recordShareRefusal(_ kind: ShareRefusal) { shareRefusals[kind]?.increment() }

    /// The exposition of the server's own registry ("" when it has none): the series in the
    /// order of `series`, each with its help, the label sets of a series sorted (so two scrapes
    /// compare line by line), and whole numbers written whole (`le="1"`, not swift-prometheus's
    /// `le="1.0"`: the labels stay as they were before the registry wrote them).
    public func exposition() -> String {
        guard let registry else { return "" }
        return Self.arranged(registry.emitToString())
    }

    /// `text` (a registry's exposition without help) as `exposition` writes it.
    static func arranged(_ text: String) -> String {
        var families: [String: (type: Substring, samples: [Substring])] = [:]
        var current: String?
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                let words = line.split(separator: " ")
                guard words.count == 4 else { continue }
                current = String(words[2])
                families[String(words[2]), default: (words[3], [])].type = words[3]
            } else if !line.hasPrefix("#"), let name = current {
                families[name]?.samples.append(line)
            }
        }
        let help = Dictionary(series.map { ($0.name, $0.help) }, uniquingKeysWith: { first, _ in first })
        let order = series.map(\.name) + families.keys.filter { help[$0] == nil }.sorted()
        var out = ""
        for name in order {
            guard let family = families[name] else { continue }
            if let help = help[name] { out += "# HELP \(name) \(help)\n" }
            out += "# TYPE \(name) \(family.type)\n"
            // A histogram's series is its buckets, sum and count together: sorted as one.
            var blocks: [[Substring]] = []
            var block: [Substring] = []
            for sample in family.samples {
                block.append(sample)
                if family.type != "histogram" || sample.hasPrefix(name + "_count") {
                    blocks.append(block)
                    block = []
                }
            }
            if !block.isEmpty { blocks.append(block) }
            for block in blocks.sorted(by: { $0[0] < $1[0] }) {
                for sample in block { out += wholeNumbersWhole(sample) + "\n" }
            }
        }
        return out
    }

    /// `1.0` as `1`, in the value and in an `le` label.
    private static func wholeNumbersWhole(_ sample: Substring) -> String {
        guard let space = sample.lastIndex(of: " ") else { return String(sample) }
        var head = String(sample[..<space])
        if let range = head.range(of: #"le="(\d+)\.0""#, options: .regularExpression) {
            head.replaceSubrange(range, with: head[range].replacingOccurrences(of: ".0\"", with: "\""))
        }
        var value = sample[sample.index(after: space)...]
        if value.hasSuffix(".0"), value.dropLast(2).allSatisfy({ $0.isASCII && $0.isNumber || $0 == "-" }), value.count > 2 {
            value = value.dropLast(2)
        }
        return head + " " + value
    }
}
