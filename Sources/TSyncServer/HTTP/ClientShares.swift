import Hummingbird
import NIOCore
import Synchronization

/// What one client may hold of what everyone shares (docs/DESIGN.md §10.1): counts per key (a
/// client address, `ClientAddress.shareKey`, or an account), each against its own limit. Taking
/// past the limit fails and counts nothing; each successful take is given back once.
final class ClientShares: Sendable {
    private let held = Mutex<[String: Int]>([:])

    /// Takes one place for `key` when it holds fewer than `limit`.
    func take(_ key: String, limit: Int) -> Bool {
        held.withLock { held in
            let count = held[key, default: 0]
            guard count < limit else { return false }
            held[key] = count + 1
            return true
        }
    }

    func give(_ key: String) {
        held.withLock { held in
            let count = held[key, default: 0] - 1
            held[key] = count > 0 ? count : nil
        }
    }

    func count(_ key: String) -> Int { held.withLock { $0[key, default: 0] } }
}

/// Requests in flight per account, and per client address behind a trusted proxy (whose
/// connections, all from the proxy, the connection share cannot tell apart): one over the share is
/// answered 429 with `Retry-After`, before any work, while other clients are served. Held reads
/// are requests in flight, so this is their share too. A client that talks to the server directly
/// has one request in flight per connection, which the connection share already bounds.
struct RequestShareMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    enum Key { case clientAddress, account }

    let key: Key
    let limit: Int
    let shares: ClientShares

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let name: String?
        switch key {
        case .clientAddress: name = context.fromTrustedProxy ? context.clientAddress.map { "client " + ClientAddress.shareKey($0) } : nil
        case .account: name = context.accountName.map { "account " + $0 }
        }
        guard let name else { return try await next(request, context) }
        guard shares.take(name, limit: limit) else {
            let who = key == .account ? "this account" : "this address"
            var error = APIError(
                .tooManyRequests, "\(who) has \(limit) requests under way, as many as the server gives one client; try again later")
            error.headers[.retryAfter] = "1"
            throw error
        }
        defer { shares.give(name) }
        return try await next(request, context)
    }
}
