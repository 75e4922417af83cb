import Foundation
import Hummingbird
import Synchronization

/// What `GET /metrics` shows (`--metrics`), in the Prometheus text format (version 0.0.4).
///
/// Written by hand rather than with swift-metrics and swift-prometheus: a dozen series need a
/// lock and a formatter, not two more packages to resolve and build (docs/DESIGN.md §4). Every
/// label takes few values: methods outside a fixed set are `other`, routes are templates
/// (`/tables/{table}`) or `unmatched`, statuses are three digits. So what a client can make the
/// server keep here is bounded, whatever paths and methods it sends.
public final class ServerMetrics: Sendable {
    /// Upper bounds of the request duration histogram, in seconds.
    static let durationBuckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    /// Upper bounds of the batch size histogram (writes per database transaction).
    static let batchBuckets: [Double] = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000]
    static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    struct Histogram: Sendable {
        var counts: [Int]
        var sum = 0.0
        var count = 0

        init(buckets: Int) { counts = Array(repeating: 0, count: buckets) }

        mutating func observe(_ value: Double, bounds: [Double]) {
            for (index, bound) in bounds.enumerated() where value <= bound { counts[index] += 1 }
            sum += value
            count += 1
        }
    }

    struct RequestKey: Hashable, Sendable {
        var method: String
        var route: String
        var status: String
    }

    struct RouteKey: Hashable, Sendable {
        var method: String
        var route: String
    }

    struct State: Sendable {
        var requests: [RequestKey: Int] = [:]
        var durations: [RouteKey: Histogram] = [:]
        var responseBytes = 0
        var recordsRead = 0
        var recordsWritten = 0
        var batches = Histogram(buckets: ServerMetrics.batchBuckets.count)
        var loginFailures = 0
        var loginsThrottled = 0
        var queryTimeouts = 0
        var shareRefusals: [ShareRefusal: Int] = [:]
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

    private let state = Mutex(State())
    /// Read when `/metrics` is asked for: the connections open now.
    let openConnections = Mutex<(@Sendable () -> Int)?>(nil)
    /// The live route's held reads now and the queries run for held reads so far (`ChangeFeed`).
    let live = Mutex<(@Sendable () -> (waiting: Int, queries: Int))?>(nil)

    public init() {}

    func recordRequest(method: String, route: String, status: Int?, seconds: Double, bytes: Int?) {
        let method = Self.knownMethods.contains(method) ? method : "other"
        let status = status.map { (100...599).contains($0) ? String($0) : "other" } ?? "failed"
        state.withLock { state in
            state.requests[RequestKey(method: method, route: route, status: status), default: 0] += 1
            state.durations[RouteKey(method: method, route: route), default: Histogram(buckets: Self.durationBuckets.count)]
                .observe(seconds, bounds: Self.durationBuckets)
            state.responseBytes += bytes ?? 0
        }
    }

    func recordRead(records: Int) { state.withLock { $0.recordsRead += records } }

    func recordWrite(batchSize: Int, written: Int) {
        state.withLock { state in
            state.recordsWritten += written
            state.batches.observe(Double(batchSize), bounds: Self.batchBuckets)
        }
    }

    func recordLoginFailure() { state.withLock { $0.loginFailures += 1 } }
    func recordLoginThrottled() { state.withLock { $0.loginsThrottled += 1 } }
    func recordQueryTimeout() { state.withLock { $0.queryTimeouts += 1 } }
    func recordShareRefusal(_ kind: ShareRefusal) { state.withLock { $0.shareRefusals[kind, default: 0] += 1 } }
    /// Read when `/metrics` is asked for: the connections refused so far (`ConnectionLimits`).
    let connectionRefusals = Mutex<(@Sendable () -> (full: Int, clientShare: Int))?>(nil)

    /// The exposition, series sorted so two scrapes compare line by line.
    public func exposition() -> String {
        let state = state.withLock { $0 }
        var out = ""
        out += "# HELP tsync_http_requests_total Requests answered, by method, route template and status.\n"
        out += "# TYPE tsync_http_requests_total counter\n"
        for (key, count) in state.requests.sorted(by: {
            ($0.key.route, $0.key.method, $0.key.status) < ($1.key.route, $1.key.method, $1.key.status)
        }) {
            out +=
                "tsync_http_requests_total{method=\"\(key.method)\",route=\"\(Self.escaped(key.route))\",status=\"\(key.status)\"} \(count)\n"
        }
        out += "# HELP tsync_http_request_duration_seconds Time from a request's head to its answer.\n"
        out += "# TYPE tsync_http_request_duration_seconds histogram\n"
        for (key, histogram) in state.durations.sorted(by: { ($0.key.route, $0.key.method) < ($1.key.route, $1.key.method) }) {
            let labels = "method=\"\(key.method)\",route=\"\(Self.escaped(key.route))\""
            out += Self.histogramLines("tsync_http_request_duration_seconds", labels: labels, histogram, bounds: Self.durationBuckets)
        }
        out += Self.single(
            "tsync_http_response_bytes_total", "Bytes of answer bodies (of known length).", type: "counter", state.responseBytes)
        out += Self.single("tsync_records_read_total", "Records sent in answers to reads.", type: "counter", state.recordsRead)
        out += Self.single("tsync_records_written_total", "Records inserted, updated or deleted.", type: "counter", state.recordsWritten)
        out += "# HELP tsync_write_batch_size Writes per database transaction (1 for the single routes).\n"
        out += "# TYPE tsync_write_batch_size histogram\n"
        out += Self.histogramLines("tsync_write_batch_size", labels: "", state.batches, bounds: Self.batchBuckets)
        let open: Int = openConnections.withLock { $0?() } ?? 0
        out += Self.single("tsync_open_connections", "Client connections open now.", type: "gauge", open)
        out += Self.single(
            "tsync_login_failures_total", "Logins refused for a wrong name or password.", type: "counter", state.loginFailures)
        out += Self.single(
            "tsync_login_throttled_total", "Logins refused because of too many failures (429).", type: "counter", state.loginsThrottled)
        out += Self.single("tsync_query_timeouts_total", "Reads stopped by the query timeout (503).", type: "counter", state.queryTimeouts)
        var refusals = state.shareRefusals
        if let connections = connectionRefusals.withLock({ $0?() }) {
            refusals[.connections, default: 0] += connections.full
            refusals[.clientConnections, default: 0] += connections.clientShare
        }
        out += "# HELP tsync_share_refusals_total Connections and requests refused for a share: a client's, or the server's limit.\n"
        out += "# TYPE tsync_share_refusals_total counter\n"
        for kind in ShareRefusal.allCases {
            out += "tsync_share_refusals_total{share=\"\(kind.rawValue)\",status=\"\(kind.status)\"} \(refusals[kind, default: 0])\n"
        }
        let live = self.live.withLock { $0?() } ?? (waiting: 0, queries: 0)
        out += Self.single("tsync_live_waiting", "Live reads held now (Prefer: wait).", type: "gauge", live.waiting)
        out += Self.single(
            "tsync_live_queries_total", "Queries run for live reads (one per question and commit, shared by the reads that ask it).",
            type: "counter", live.queries)
        return out
    }

    /// The HELP, TYPE and value lines of a series without labels.
    private static func single(_ name: String, _ help: String, type: String, _ value: Int) -> String {
        "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n\(name) \(value)\n"
    }

    private static func histogramLines(_ name: String, labels: String, _ histogram: Histogram, bounds: [Double]) -> String {
        let separator = labels.isEmpty ? "" : ","
        var out = ""
        for (index, bound) in bounds.enumerated() {
            out += "\(name)_bucket{\(labels)\(separator)le=\"\(format(bound))\"} \(histogram.counts[index])\n"
        }
        out += "\(name)_bucket{\(labels)\(separator)le=\"+Inf\"} \(histogram.count)\n"
        let braces = labels.isEmpty ? "" : "{\(labels)}"
        out += "\(name)_sum\(braces) \(format(histogram.sum))\n"
        out += "\(name)_count\(braces) \(histogram.count)\n"
        return out
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }

    /// Label values escaped as the text format wants (backslash, quote, newline).
    static func escaped(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}

/// Counts the errors the metrics name before `ErrorMiddleware` turns them into answers.
struct MetricsErrorMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let metrics: ServerMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as QueryTimedOut {
            metrics.recordQueryTimeout()
            throw error
        }
    }
}
