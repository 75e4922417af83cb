import Hummingbird
import Logging
import TSyncModel

/// The routes for whoever runs the server, beside `/health` (liveness): `GET /ready` (the
/// database answers) and, with `--metrics`, `GET /metrics` (docs/DESIGN.md §4).
struct OperatorRoutes: Sendable {
    let storage: any ServerStorage
    let metrics: ServerMetrics?
    let readinessTimeoutSeconds: Int

    func register(on router: Router<ServerRequestContext>) {
        router.on(ServedRoutes.ready, use: ready)
        if metrics?.exposes == true { router.on(ServedRoutes.metrics, use: exposition) }
    }

    /// 200 when the database answers within the readiness timeout and takes writes, 503
    /// otherwise. The client learns which of the two failed; the details (the database's words
    /// and address) go to the log, not to the (anonymous) client.
    @Sendable func ready(_ request: Request, context: ServerRequestContext) async throws -> Response {
        do {
            try await QueryDeadline.run(seconds: readinessTimeoutSeconds, channel: nil) { [storage] in try await storage.checkReady() }
            return JSONResponse.make(.ok, ["status": "ready"])
        } catch let error as DatabaseTakesNoWrites {
            context.logger.warning("not ready: \(error.detail)")
            return JSONResponse.make(
                .serviceUnavailable, ["status": "unavailable", "error": .string("writes would fail: \(error.reason)")])
        } catch {
            let reason =
                (error as? TSyncError)?.message ?? (error as? QueryTimedOut).map { _ in
                    "no answer within \(readinessTimeoutSeconds) s"
                } ?? String(describing: error)
            context.logger.warning("not ready: the database does not answer: \(reason)")
            return JSONResponse.make(.serviceUnavailable, ["status": "unavailable", "error": "the database does not answer"])
        }
    }

    @Sendable func exposition(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let text = metrics?.exposition() ?? ""
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
