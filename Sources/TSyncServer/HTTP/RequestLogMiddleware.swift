import Hummingbird
import Logging

/// One log line per request: method, path and query, status, duration. Headers are never logged,
/// so tokens (X-ZUMO-AUTH, Authorization) and bodies (passwords) never reach the log.
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    private static let maximumTargetLength = 300

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        var target = request.uri.path
        if let query = request.uri.query, !query.isEmpty { target += "?" + query }
        if target.count > Self.maximumTargetLength { target = String(target.prefix(Self.maximumTargetLength)) + "…" }
        let address = context.clientAddress ?? "-"
        do {
            let response = try await next(request, context)
            context.logger.info("\(address) \(request.method) \(target) \(response.status.code) \(Self.milliseconds(since: start)) ms")
            return response
        } catch {
            // Only reached for errors ErrorMiddleware did not answer (it answers all of them).
            context.logger.info("\(address) \(request.method) \(target) failed \(Self.milliseconds(since: start)) ms")
            throw error
        }
    }

    private static func milliseconds(since start: ContinuousClock.Instant) -> String {
        let elapsed = ContinuousClock.now - start
        let micro = elapsed.components.seconds * 1_000_000 + elapsed.components.attoseconds / 1_000_000_000_000
        return String(Double(micro) / 1000)
    }
}
