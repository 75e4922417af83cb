import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import TSyncModel

/// Turns every error into `{"error": "message"}` with the right status (docs/DESIGN.md §4).
///
/// Messages of client mistakes go back as they are; anything unexpected (a database failure, a bug)
/// is logged here and answered with a bare 500, so no SQL, stack trace or path reaches a client.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    /// The routes served: a path one of them serves with another method is 405 with `Allow`,
    /// not 404 (RFC 9110 §15.5.6).
    var routes: [RouteDeclaration] = []
    /// Counts the errors the metrics name (query timeouts), when the server keeps metrics.
    var metrics: ServerMetrics? = nil

    /// The methods the routes serve `path` with, in a stable order: those of the most literal
    /// routes that match it, as the router picks (`$batch` before `{table}`).
    func allowed(_ path: String) -> [String] {
        let segments = path.split(separator: "/")
        let matching = routes.filter { $0.matches(segments) }
        guard let fewest = matching.map(\.pathParameters.count).min() else { return [] }
        var methods: [String] = []
        for route in matching where route.pathParameters.count == fewest && !methods.contains(route.method.rawValue) {
            methods.append(route.method.rawValue)
        }
        return methods
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            return try answer(error, request, context)
        }
    }

    /// The answer to what a request threw. Not async, so that its locals stay out of the async
    /// frame every request in flight keeps (a held read keeps it for as long as it waits).
    @inline(never)
    private func answer(_ error: any Error, _ request: Request, _ context: Context) throws -> Response {
        do {
            throw error
        } catch let error as APIError {
            return try error.response(from: request, context: context)
        } catch let error as TSyncError {
            guard let answer = APIError(error) else { return internalError(error, context: context) }
            return try answer.response(from: request, context: context)
        } catch let error as QueryTimedOut {
            metrics?.recordQueryTimeout()
            return JSONResponse.error(.serviceUnavailable, error.message)
        } catch let error as DatabaseConnectionEnded {
            // Not the server's fault nor the client's: the next connection may well work.
            context.logger.warning("request failed: \(error)")
            return JSONResponse.error(.serviceUnavailable, DatabaseConnectionEnded.answer)
        } catch is ClientGone {
            return JSONResponse.error(
                HTTPResponse.Status(code: 499, reasonPhrase: "Client Closed Request"), "the client closed the connection")
        } catch let error as HTTPParserError {
            // The body could not be read as HTTP: the client's fault, or the client has gone.
            if error == .invalidEOFState || error == .closedConnection {
                return JSONResponse.error(Self.clientClosed, "the client closed the connection before its body ended")
            }
            let encoding = request.headers[.transferEncoding]?.lowercased()
            if let encoding, encoding != "chunked" {
                return JSONResponse.error(.notImplemented, "Transfer-Encoding \(encoding) is not supported: send chunked or Content-Length")
            }
            return JSONResponse.error(.badRequest, "the request body is not valid HTTP/1.1 (\(error))", headers: [.connection: "close"])
        } catch is NIOTooManyBytesError {
            return JSONResponse.error(.contentTooLarge, "the request body is too large")
        } catch let error as HTTPError where error.status == .notFound && !allowed(request.uri.path).isEmpty {
            let methods = allowed(request.uri.path)
            return JSONResponse.error(
                .methodNotAllowed, "\(request.method) is not allowed here: use \(methods.joined(separator: ", "))",
                headers: [.allow: methods.joined(separator: ", ")])
        } catch let error as HTTPError {
            let message =
                error.status == .notFound
                ? "no such endpoint: \(request.method) \(request.uri.path)"
                : error.body ?? error.status.reasonPhrase
            return JSONResponse.error(error.status, message, headers: error.headers)
        } catch let error as any HTTPResponseError {
            return JSONResponse.error(error.status, error.status.reasonPhrase)
        } catch {
            return internalError(error, context: context)
        }
    }

    /// nginx's "client closed request": logged for work that stopped because its client left.
    static let clientClosed = HTTPResponse.Status(code: 499, reasonPhrase: "Client Closed Request")

    private func internalError(_ error: any Error, context: Context) -> Response {
        context.logger.error("request failed: \(String(reflecting: error))")
        return JSONResponse.error(.internalServerError, "internal server error: see the server log")
    }
}
