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
    let metrics: ServerMetrics?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let name = try take(context)
        defer { if let name { shares.give(name) } }
        return try await next(request, context)
    }

    /// The share taken for the request (nil when it is not counted); throws 429 when its client
    /// holds its limit. Not async, so that its locals stay out of the async frame every request
    /// in flight keeps.
    @inline(never)
    private func take(_ context: Context) throws -> String? {
        let name: String?
        switch key {
        case .clientAddress: name = context.fromTrustedProxy ? context.clientAddress.map { "client " + ClientAddress.shareKey($0) } : nil
        case .account: name = context.accountName.map { "account " + $0 }
        }
        guard let name else { return nil }
        guard shares.take(name, limit: limit) else {
            metrics?.recordShareRefusal(key == .account ? .accountRequests : .clientRequests)
            let who = key == .account ? "this account" : "this address"
            var error = APIError(
                .tooManyRequests, "\(who) has \(limit) requests under way, as many as the server gives one client; try again later")
            error.headers[.retryAfter] = "1"
            throw error
        }
        return name
    }
}

/// Answers a client has not taken yet, per client address (docs/DESIGN.md §10.1): a page is built
/// whole in memory, and a client that asks for large pages and never reads them kept each one in
/// the server (300 of 16 MB took it from 97 MB to 4.7 GB). A large answer is charged to its
/// client's address until it has all been written to the socket; one that would take the address
/// past `limit` while it has some unread already is dropped and answered 429 instead, so what one
/// address holds is at most `limit` plus one answer. The body goes in slices, each written once
/// the connection can take it, so the server never queues more than a slice beyond what the
/// socket holds (`ConnectionGuard` closes a connection that takes nothing for the idle timeout).
struct ResponseShareMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    /// Answers up to this size are neither charged nor sliced.
    static let slice = 64 << 10

    let limit: Int
    let unread: UnreadAnswers
    let metrics: ServerMetrics?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let key = try admit(context)
        return try charged(try await next(request, context), key: key, context)
    }

    /// The client's key; throws 429 when it is past its share already (refused before any work).
    /// Not async, as `charged`, so that their locals stay out of the async frame every request
    /// in flight keeps.
    @inline(never)
    private func admit(_ context: Context) throws -> String {
        let key = "client " + ClientAddress.shareKey(context.clientAddress ?? "")
        guard unread.bytes(key) < limit else { throw refused() }
        return key
    }

    /// The response, its large body charged to the client's unread bytes and written in slices.
    @inline(never)
    private func charged(_ response: Response, key: String, _ context: Context) throws -> Response {
        var response = response
        guard let length = response.body.contentLength, length > Self.slice else { return response }
        guard let charge = unread.charge(key, bytes: length, limit: limit) else { throw refused() }
        let body = response.body
        let channel = context.channel
        response.body = ResponseBody(contentLength: length) { writer in
            try await body.write(SlicingWriter(parent: writer, channel: channel, charge: charge))
        }
        return response
    }

    private func refused() -> APIError {
        metrics?.recordShareRefusal(.unreadAnswers)
        var error = APIError(
            .tooManyRequests,
            "this address has \(limit >> 20) MiB of answers it has not read yet, as much as the server keeps for one client; read them or try again later"
        )
        error.headers[.retryAfter] = "1"
        return error
    }
}

/// Bytes of answers not yet written, per key.
final class UnreadAnswers: Sendable {
    private let held = Mutex<[String: Int]>([:])

    /// Charges `bytes` to `key`, nil when `key` has answers unread and they would pass `limit`.
    func charge(_ key: String, bytes: Int, limit: Int) -> Charge? {
        let taken = held.withLock { held -> Bool in
            let current = held[key, default: 0]
            guard current == 0 || current + bytes <= limit else { return false }
            held[key] = current + bytes
            return true
        }
        return taken ? Charge(key: key, bytes: bytes, owner: self) : nil
    }

    func bytes(_ key: String) -> Int { held.withLock { $0[key, default: 0] } }

    fileprivate func release(_ key: String, bytes: Int) {
        held.withLock { held in
            let current = held[key, default: 0] - bytes
            held[key] = current > 0 ? current : nil
        }
    }

    /// Given back when the answer is written or dropped, whichever way that happens.
    final class Charge: Sendable {
        let key: String
        let bytes: Int
        let owner: UnreadAnswers

        init(key: String, bytes: Int, owner: UnreadAnswers) {
            self.key = key
            self.bytes = bytes
            self.owner = owner
        }

        deinit { owner.release(key, bytes: bytes) }
    }
}

/// Writes each buffer in slices of `ResponseShareMiddleware.slice`, each once the connection has
/// taken the last: the async writer's own backpressure lets a fast producer hand on many slices
/// before the event loop has written the first and seen the socket full.
private struct SlicingWriter: ResponseBodyWriter {
    var parent: any ResponseBodyWriter
    let channel: any Channel
    let charge: UnreadAnswers.Charge

    mutating func write(_ buffer: ByteBuffer) async throws {
        var buffer = buffer
        while let slice = buffer.readSlice(length: min(ResponseShareMiddleware.slice, buffer.readableBytes)), slice.readableBytes > 0 {
            try await parent.write(slice)
            let channel = channel
            try await channel.eventLoop.flatSubmit {
                guard let handler = try? channel.pipeline.syncOperations.handler(type: ConnectionGuard.self) else {
                    return channel.eventLoop.makeSucceededVoidFuture()
                }
                return handler.whenWritable(channel.eventLoop)
            }.get()
        }
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
        try await parent.finish(trailingHeaders)
        withExtendedLifetime(charge) {}
    }
}
