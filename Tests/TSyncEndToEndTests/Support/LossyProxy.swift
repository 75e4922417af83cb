import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A loopback HTTP proxy in front of a real `tsync serve` that can lose answers: a request that
/// matches a rule is forwarded, the server applies it and answers, and the proxy closes the
/// client's connection instead of passing the answer on. That is a response lost to a dropped
/// connection, made deterministic, so tests can check what push does with an operation that
/// reached the server without the client learning it. It can also answer in the server's place
/// (a captive portal's HTML page, a damaged body after the server applied the write).
///
/// Blocking sockets, one thread per client connection, one upstream connection per request;
/// enough for tests, bounded by their own request counts.
final class LossyProxy: Sendable {
    /// `POST /tables/todo` and the like, and what becomes of the answer.
    struct Rule: Sendable {
        var method: String
        var pathPrefix: String
        var action: Action
    }

    enum Action: Sendable {
        /// Forward the request, swallow the answer, close the connection.
        case drop
        /// Answer with these raw bytes instead (after forwarding the request when `forward`).
        case replace(response: [UInt8], forward: Bool)
    }

    private let upstreamPort: UInt16
    private let connections: AcceptLoop
    private struct State {
        var rules: [(rule: Rule, remaining: Int)] = []
        var dropped = 0
        var interpositions: [(rule: Rule, remaining: Int, write: @Sendable (Int) -> String)] = []
        var interposedCount = 0
        var requestDelay: TimeInterval = 0
        var forwardedCount = 0
        var timedPath: String?
        var readDelays: [TimeInterval] = []
        var reads: [TimedRead] = []
        var readsHeld = 0
        var rewrites: [(name: String, transform: @Sendable (_ value: String, _ body: [UInt8]) -> String?)] = []
        var rewrittenCount = 0
        var strippedFromRequests: Set<String> = []
        var strippedCount = 0
    }

    /// A GET that `timeReads` watched: when it came, when its answer went back (nil while it is
    /// held), and how many such GETs the proxy held at that moment, this one included.
    struct TimedRead: Sendable {
        var arrived: ContinuousClock.Instant
        var answered: ContinuousClock.Instant?
        var inFlight: Int
    }
    private let state = Mutex(State())
    let url: String

    /// Listens on 127.0.0.1 (a free port) and forwards to `upstream` (`http://127.0.0.1:PORT`).
    init(upstream: String) throws {
        guard let upstream = URLComponents(string: upstream)?.port else {
            throw TSyncTestError("LossyProxy: no port in \(upstream)")
        }
        upstreamPort = UInt16(upstream)
        connections = try AcceptLoop()
        url = "http://127.0.0.1:\(connections.port)"
        connections.start { [weak self] client in self?.serve(client) }
    }

    /// Loses the answers to the next `count` requests that match `method` and `pathPrefix`.
    func drop(_ method: String, _ pathPrefix: String, count: Int = 1) {
        state.withLock { s in s.rules.append((Rule(method: method, pathPrefix: pathPrefix, action: .drop), count)) }
    }

    /// Answers the next `count` matching requests with `status`, `contentType` and `body` instead of
    /// the server's answer; `forward` decides whether the server gets the request at all.
    func replace(
        _ method: String, _ pathPrefix: String, status: Int, contentType: String, body: String, forward: Bool,
        count: Int = 1, headers: [(String, String)] = []
    ) {
        let extra = headers.map { "\($0.0): \($0.1)\r\n" }.joined()
        let response = Array(
            "HTTP/1.1 \(status) Whatever\r\nContent-Type: \(contentType)\r\n\(extra)Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
                .utf8)
        state.withLock { s in
            s.rules.append((Rule(method: method, pathPrefix: pathPrefix, action: .replace(response: response, forward: forward)), count))
        }
    }

    /// Another writer who always gets in first: before each of the next `count` requests that
    /// match, the proxy sends the server the request `write` makes (given how many it made
    /// before), and only then forwards the client's.
    func interpose(_ method: String, _ pathPrefix: String, count: Int, write: @escaping @Sendable (Int) -> String) {
        state.withLock { s in s.interpositions.append((Rule(method: method, pathPrefix: pathPrefix, action: .drop), count, write)) }
    }

    /// How many requests `interpose` sent so far.
    var interposed: Int { state.withLock { s in s.interposedCount } }

    /// How many answers were lost or replaced so far.
    var droppedCount: Int { state.withLock { s in s.dropped } }

    /// Holds every request this long before forwarding it: a slow server, so a test can act while
    /// a long push is under way.
    func delay(_ seconds: TimeInterval) { state.withLock { s in s.requestDelay = seconds } }

    /// Watches every GET whose path starts with `pathPrefix` (`reads`), and holds the n-th of them
    /// (from 0) `delays[n]` seconds before forwarding it (those past the end, not at all): a server
    /// whose answers come late for a while, as behind a queue.
    func timeReads(_ pathPrefix: String, delays: [TimeInterval]) {
        state.withLock { s in
            s.timedPath = pathPrefix
            s.readDelays = delays
        }
    }

    /// The GETs watched so far (`timeReads`), in the order they came.
    var reads: [TimedRead] { state.withLock { s in s.reads } }

    /// Rewrites the header `name` of every answer passed on: `transform` gets its value and the
    /// answer's body, and gives the value sent instead, or nil to strip it (a proxy that drops the
    /// headers it does not know, or a server that claims what is not so).
    func rewriteHeader(_ name: String, _ transform: @escaping @Sendable (_ value: String, _ body: [UInt8]) -> String?) {
        state.withLock { s in s.rewrites.append((name, transform)) }
    }

    /// How many headers `rewriteHeader` rewrote or stripped so far.
    var rewritten: Int { state.withLock { s in s.rewrittenCount } }

    /// Strips the header `name` from every request passed on (a proxy that drops the headers it
    /// does not pass, `If-Match` among them).
    func stripRequestHeader(_ name: String) { state.withLock { s in _ = s.strippedFromRequests.insert(name.lowercased()) } }

    /// How many request headers `stripRequestHeader` stripped so far.
    var strippedFromRequests: Int { state.withLock { s in s.strippedCount } }

    /// How many requests reached the server so far.
    var forwarded: Int { state.withLock { s in s.forwardedCount } }

    /// Stops listening and ends every connection (a test that never calls it ends them when the
    /// proxy goes out of scope).
    func close() { connections.stop() }

    deinit { close() }

    // MARK: - Plumbing

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    /// The action for this request, if a rule matches (and counts it).
    private func action(for head: String) -> Action? {
        let parts = head.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2 else { return nil }
        let method = String(parts[0])
        let path = String(parts[1])
        return state.withLock { s in
            guard
                let index = s.rules.firstIndex(where: { $0.remaining > 0 && $0.rule.method == method && path.hasPrefix($0.rule.pathPrefix) }
                )
            else { return nil }
            s.rules[index].remaining -= 1
            s.dropped += 1
            return s.rules[index].rule.action
        }
    }

    /// The request another writer sends before this one, if an interposition matches.
    private func interposition(for head: String) -> String? {
        let parts = head.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2 else { return nil }
        return state.withLock { s in
            guard
                let index = s.interpositions.firstIndex(where: {
                    $0.remaining > 0 && $0.rule.method == parts[0] && parts[1].hasPrefix($0.rule.pathPrefix)
                })
            else { return nil }
            s.interpositions[index].remaining -= 1
            s.interposedCount += 1
            return s.interpositions[index].write(s.interposedCount - 1)
        }
    }

    private func serve(_ client: Int32) {
        var buffer: [UInt8] = []
        while let request = Self.readMessage(client, &buffer, isResponse: false) {
            let head = String(decoding: request.prefix(200), as: UTF8.self)
            if let other = interposition(for: head) { _ = forward(Array(other.utf8)) }
            let action = action(for: head)
            if case .replace(let response, forward: false)? = action {
                guard Self.writeAll(client, response) else { return }
                continue
            }
            let timed = beginRead(head)
            defer { if let timed { endRead(timed) } }
            let delay = state.withLock { s in s.requestDelay + (timed.map { s.readDelays.indices.contains($0) ? s.readDelays[$0] : 0 } ?? 0)
            }
            if delay > 0 { Thread.sleep(forTimeInterval: delay) }
            guard let answer = forward(stripped(request)) else { return }
            state.withLock { s in s.forwardedCount += 1 }
            switch action {
            case .drop?: return  // the server has applied it; the client never hears
            case .replace(let response, _)?: guard Self.writeAll(client, response) else { return }
            case nil: guard Self.writeAll(client, rewritten(answer)) else { return }
            }
        }
    }

    /// The answer with its headers rewritten (`rewriteHeader`); the body as it came.
    private func rewritten(_ answer: [UInt8]) -> [UInt8] {
        let rewrites = state.withLock { s in s.rewrites }
        guard !rewrites.isEmpty else { return answer }
        let (message, count) = Self.editingHeaders(of: answer) { name, value, body in
            guard let rewrite = rewrites.first(where: { $0.name.lowercased() == name.lowercased() }) else { return .keep }
            return rewrite.transform(value, body).map { .replace($0) } ?? .strip
        }
        state.withLock { s in s.rewrittenCount += count }
        return message
    }

    /// The request without the headers `stripRequestHeader` names; the body as it came.
    private func stripped(_ request: [UInt8]) -> [UInt8] {
        let names = state.withLock { s in s.strippedFromRequests }
        guard !names.isEmpty else { return request }
        let (message, count) = Self.editingHeaders(of: request) { name, _, _ in names.contains(name.lowercased()) ? .strip : .keep }
        state.withLock { s in s.strippedCount += count }
        return message
    }

    private enum HeaderEdit {
        case keep, strip
        case replace(String)
    }

    /// `message` with each header line edited by `edit` (given its name, value and the body), and
    /// how many lines it replaced or stripped.
    private static func editingHeaders(
        of message: [UInt8], _ edit: (_ name: Substring, _ value: String, _ body: [UInt8]) -> HeaderEdit
    ) -> (message: [UInt8], edited: Int) {
        let end = Array("\r\n\r\n".utf8)
        guard let blank = message.indices.first(where: { message[$0...].starts(with: end) }) else { return (message, 0) }
        let body = Array(message[(blank + 4)...])
        var lines: [String] = []
        var count = 0
        for line in String(decoding: message[..<blank], as: UTF8.self).components(separatedBy: "\r\n") {
            let name = line.prefix { $0 != ":" }
            let value = line.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces)
            switch name.count < line.count ? edit(name, value, body) : .keep {
            case .keep: lines.append(line)
            case .replace(let replaced):
                lines.append("\(name): \(replaced)")
                count += 1
            case .strip: count += 1
            }
        }
        return (Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8) + body, count)
    }

    /// The index of this request among the watched GETs, if it is one (`timeReads`).
    private func beginRead(_ head: String) -> Int? {
        state.withLock { s in
            guard let path = s.timedPath, head.hasPrefix("GET " + path) else { return nil }
            s.readsHeld += 1
            s.reads.append(TimedRead(arrived: .now, inFlight: s.readsHeld))
            return s.reads.count - 1
        }
    }

    private func endRead(_ index: Int) {
        state.withLock { s in
            s.readsHeld -= 1
            s.reads[index].answered = .now
        }
    }

    private func forward(_ request: [UInt8]) -> [UInt8]? {
        let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(upstream) }
        var address = Self.loopback(port: upstreamPort)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0, Self.writeAll(upstream, request) else { return nil }
        var buffer: [UInt8] = []
        return Self.readMessage(upstream, &buffer, isResponse: true)
    }

    static func writeAll(_ socket: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }

    /// Reads one HTTP message (head and a Content-Length or chunked body) from `socket`, keeping
    /// what follows it in `buffer`. Nil when the peer closed first.
    static func readMessage(_ socket: Int32, _ buffer: inout [UInt8], isResponse: Bool) -> [UInt8]? {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        while true {
            if headEnd == nil, let range = buffer.firstRange(of: separator) { headEnd = range.upperBound }
            if let headEnd {
                let head = String(decoding: buffer[..<headEnd], as: UTF8.self).lowercased()
                if let length = contentLength(head) {
                    if buffer.count >= headEnd + length {
                        let message = Array(buffer[..<(headEnd + length)])
                        buffer.removeFirst(headEnd + length)
                        return message
                    }
                } else if head.contains("transfer-encoding: chunked") {
                    let end: [UInt8] = Array("\r\n0\r\n\r\n".utf8)
                    if let range = buffer[(headEnd - 2)...].firstRange(of: end) {
                        let message = Array(buffer[..<range.upperBound])
                        buffer.removeFirst(range.upperBound)
                        return message
                    }
                } else if !isResponse || head.hasPrefix("http/1.1 204") || head.hasPrefix("http/1.1 304") {
                    let message = Array(buffer[..<headEnd])
                    buffer.removeFirst(headEnd)
                    return message
                }
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return nil }
            buffer.append(contentsOf: chunk[..<count])
        }
    }

    private static func contentLength(_ head: String) -> Int? {
        for line in head.split(separator: "\r\n") where line.hasPrefix("content-length:") {
            return Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }
}

/// A listening TCP socket on 127.0.0.1, on a port the system picks.
enum LoopbackListener {
    static func open() throws -> (descriptor: Int32, port: Int) {
        try open(listening: true)
    }

    /// A port that refuses connections for as long as its socket is open: bound and not
    /// listening, so the system gives the port to no other socket meanwhile. (A port merely
    /// free now may be another test's listener by the time a command connects to it.)
    static func refusing() throws -> RefusingPort {
        let (descriptor, port) = try open(listening: false)
        return RefusingPort(descriptor: descriptor, port: port)
    }

    private static func open(listening: Bool) throws -> (descriptor: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        // Without SO_REUSEADDR, a socket bound to hold a port shares it with nobody.
        if listening { setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size)) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, !listening || listen(fd, 64) == 0 else {
            Glibc.close(fd)
            throw TSyncTestError("cannot listen on 127.0.0.1")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// A port nothing listens on right now (for a process that must be given one).
    static func freePort() throws -> Int {
        let (descriptor, port) = try open()
        close(descriptor)
        return port
    }

    static func close(_ descriptor: Int32) {
        shutdown(descriptor, Int32(SHUT_RDWR))
        Glibc.close(descriptor)
    }
}

/// A loopback port that refuses connections until `close()` (`LoopbackListener.refusing`).
struct RefusingPort: Sendable {
    let descriptor: Int32
    let port: Int

    func close() { LoopbackListener.close(descriptor) }
}

/// A failure of the test machinery itself.
struct TSyncTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
