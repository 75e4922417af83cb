import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A forward HTTP proxy on loopback, as a company network puts between a client and the
/// internet: it takes `CONNECT HOST:PORT` (what AsyncHTTPClient sends for http:// and https://
/// remotes alike), opens the tunnel to a 127.0.0.1 port only (nothing else is reached), and
/// counts the requests it carries. Through a tunnel that carries plain HTTP it reads each request
/// and answer, so it can count requests, not only tunnels; a tunnel that carries TLS (its first
/// byte a handshake record) it relays as bytes it cannot read. A request that is not a `CONNECT`
/// (a plain proxy request, `GET http://…`) is refused and counted.
///
/// With `credentials` it answers 407 to a `CONNECT` without that `Proxy-Authorization: Basic`.
/// Blocking sockets, one thread per client connection; enough for tests.
final class ForwardProxy: Sendable {
    private let connections: AcceptLoop
    private let credentials: String?
    private struct Counts {
        var requestCount = 0
        var tunnelCount = 0
        var refusedCount = 0
        var encryptedCount = 0
        var plainCount = 0
    }
    private let counts = Mutex(Counts())
    /// `HOST:PORT` of the proxy, for `http_proxy`.
    let address: String

    init(credentials: (user: String, password: String)? = nil) throws {
        self.credentials = credentials.map { Data("\($0.user):\($0.password)".utf8).base64EncodedString() }
        connections = try AcceptLoop()
        address = "127.0.0.1:\(connections.port)"
        connections.start { [weak self] client in self?.serve(client) }
    }

    /// Requests carried to the server so far.
    var forwarded: Int { counts.withLock { $0.requestCount } }
    /// Tunnels opened so far.
    var tunnels: Int { counts.withLock { $0.tunnelCount } }
    /// `CONNECT`s refused for missing or wrong credentials.
    var refused: Int { counts.withLock { $0.refusedCount } }
    /// Tunnels that carried TLS.
    var encryptedTunnels: Int { counts.withLock { $0.encryptedCount } }
    /// Requests that were not a `CONNECT` (refused with 405).
    var plainRequests: Int { counts.withLock { $0.plainCount } }

    /// Stops listening and ends every connection and tunnel (a test that never calls it ends them
    /// when the proxy goes out of scope).
    func close() { connections.stop() }

    deinit { close() }

    private func serve(_ client: Int32) {
        var buffer: [UInt8] = []
        guard let request = LossyProxy.readMessage(client, &buffer, isResponse: false) else { return }
        let head = String(decoding: request, as: UTF8.self)
        let lines = head.split(separator: "\r\n")
        let words = lines.first?.split(separator: " ") ?? []
        guard words.count == 3, words[0] == "CONNECT" else {
            counts.withLock { $0.plainCount += 1 }
            _ = LossyProxy.writeAll(client, Array("HTTP/1.1 405 Only CONNECT\r\nContent-Length: 0\r\n\r\n".utf8))
            return
        }
        if let credentials {
            let given = lines.first { $0.lowercased().hasPrefix("proxy-authorization:") }
            guard given?.dropFirst("proxy-authorization:".count).trimmingCharacters(in: .whitespaces) == "Basic \(credentials)" else {
                counts.withLock { $0.refusedCount += 1 }
                _ = LossyProxy.writeAll(
                    client,
                    Array(
                        "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"t\"\r\nContent-Length: 0\r\n\r\n"
                            .utf8))
                return
            }
        }
        let target = words[1]
        guard target.hasPrefix("127.0.0.1:"), let port = UInt16(target.dropFirst("127.0.0.1:".count)),
            let upstream = Self.connectLoopback(port)
        else {
            _ = LossyProxy.writeAll(client, Array("HTTP/1.1 403 Loopback only\r\nContent-Length: 0\r\n\r\n".utf8))
            return
        }
        defer { Glibc.close(upstream) }
        counts.withLock { $0.tunnelCount += 1 }
        guard LossyProxy.writeAll(client, Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8)) else { return }
        if buffer.isEmpty {
            var first: UInt8 = 0
            guard recv(client, &first, 1, Int32(MSG_PEEK)) == 1 else { return }
            if first == 0x16 {  // a TLS handshake record: relay bytes both ways
                counts.withLock { $0.encryptedCount += 1 }
                Self.relay(client, upstream)
                return
            }
        }
        var answers: [UInt8] = []
        while let request = LossyProxy.readMessage(client, &buffer, isResponse: false) {
            guard LossyProxy.writeAll(upstream, request) else { return }
            counts.withLock { $0.requestCount += 1 }
            guard let answer = LossyProxy.readMessage(upstream, &answers, isResponse: true),
                LossyProxy.writeAll(client, answer)
            else { return }
        }
    }

    /// Copies bytes both ways until either side closes.
    private static func relay(_ client: Int32, _ upstream: Int32) {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            copy(from: upstream, to: client)
            done.signal()
        }
        copy(from: client, to: upstream)
        done.wait()
    }

    private static func copy(from source: Int32, to destination: Int32) {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
            guard count > 0, LossyProxy.writeAll(destination, Array(chunk[..<count])) else { break }
        }
        shutdown(destination, Int32(SHUT_WR))
        shutdown(source, Int32(SHUT_RD))
    }

    private static func connectLoopback(_ port: UInt16) -> Int32? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            Glibc.close(descriptor)
            return nil
        }
        return descriptor
    }
}
