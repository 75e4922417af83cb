import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A forward HTTP proxy on loopback, as a company network puts between a client and the
/// internet: it takes `CONNECT HOST:PORT` (what AsyncHTTPClient sends for http:// and https://
/// remotes alike), opens the tunnel to a 127.0.0.1 port only (nothing else is reached), and
/// counts the requests it carries. Since the remotes in the tests speak plain HTTP, it reads
/// each request and answer through the tunnel, so it can count requests, not only tunnels.
///
/// With `credentials` it answers 407 to a `CONNECT` without that `Proxy-Authorization: Basic`.
/// Blocking sockets, one thread per client connection; enough for tests.
final class ForwardProxy: @unchecked Sendable {
    private let listener: Int32
    private let credentials: String?
    private let lock = NSLock()
    private var requestCount = 0
    private var tunnelCount = 0
    private var refusedCount = 0
    /// `HOST:PORT` of the proxy, for `http_proxy`.
    let address: String

    init(credentials: (user: String, password: String)? = nil) throws {
        self.credentials = credentials.map { Data("\($0.user):\($0.password)".utf8).base64EncodedString() }
        let (descriptor, port) = try LoopbackListener.open()
        listener = descriptor
        address = "127.0.0.1:\(port)"
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Requests carried to the server so far.
    var forwarded: Int { lock.withLock { requestCount } }
    /// Tunnels opened so far.
    var tunnels: Int { lock.withLock { tunnelCount } }
    /// `CONNECT`s refused for missing or wrong credentials.
    var refused: Int { lock.withLock { refusedCount } }

    func close() { LoopbackListener.close(listener) }

    deinit { close() }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 { return }
            Thread.detachNewThread { [self] in serve(client) }
        }
    }

    private func serve(_ client: Int32) {
        defer { Glibc.close(client) }
        var buffer: [UInt8] = []
        guard let request = LossyProxy.readMessage(client, &buffer, isResponse: false) else { return }
        let head = String(decoding: request, as: UTF8.self)
        let lines = head.split(separator: "\r\n")
        let words = lines.first?.split(separator: " ") ?? []
        guard words.count == 3, words[0] == "CONNECT" else {
            _ = LossyProxy.writeAll(client, Array("HTTP/1.1 405 Only CONNECT\r\nContent-Length: 0\r\n\r\n".utf8))
            return
        }
        if let credentials {
            let given = lines.first { $0.lowercased().hasPrefix("proxy-authorization:") }
            guard given?.dropFirst("proxy-authorization:".count).trimmingCharacters(in: .whitespaces) == "Basic \(credentials)" else {
                lock.withLock { refusedCount += 1 }
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
        lock.withLock { tunnelCount += 1 }
        guard LossyProxy.writeAll(client, Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8)) else { return }
        var answers: [UInt8] = []
        while let request = LossyProxy.readMessage(client, &buffer, isResponse: false) {
            guard LossyProxy.writeAll(upstream, request) else { return }
            lock.withLock { requestCount += 1 }
            guard let answer = LossyProxy.readMessage(upstream, &answers, isResponse: true),
                LossyProxy.writeAll(client, answer)
            else { return }
        }
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
