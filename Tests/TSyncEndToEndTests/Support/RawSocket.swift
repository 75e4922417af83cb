import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A blocking TCP connection to 127.0.0.1 for tests that must control exactly what goes on the
/// wire (a client that writes a whole body before reading, a client that sends a byte a second).
/// Every send and receive gives up after `timeout`, so a misbehaving server fails the test instead
/// of hanging it, and runs on a thread of its own (`OffThePool`), so a test waiting for the
/// server holds none of the cooperative threads the servers of other tests need.
final class RawSocket: Sendable {
    private let descriptor: Int32

    /// `from`: the local address to connect from, another loopback address (127.0.0.2) to stand
    /// for another client.
    /// `receiveBuffer`: the kernel's receive buffer in bytes, small for a client that must not
    /// take much of an answer it never reads.
    init(port: Int, timeout: TimeInterval = 10, from source: String? = nil, receiveBuffer: Int32? = nil) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer { setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                Glibc.close(descriptor)
                throw TSyncTestError("cannot bind to \(source)")
            }
        }
        var limit = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            Glibc.close(descriptor)
            throw TSyncTestError("cannot connect to 127.0.0.1:\(port)")
        }
    }

    /// Connects on a thread of its own (`OffThePool`): a connect the server is slow to accept
    /// (a full backlog, a loaded machine) holds no cooperative thread meanwhile.
    static func opened(port: Int, timeout: TimeInterval = 10, from source: String? = nil) async throws -> RawSocket {
        try await OffThePool.run { Result { try RawSocket(port: port, timeout: timeout, from: source) } }.get()
    }

    private let closed = Mutex(false)

    func close() {
        let first = closed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        if first { Glibc.close(descriptor) }
    }

    deinit { close() }

    /// Writes all of `bytes`; false when the peer stopped reading for `timeout` or closed.
    @discardableResult
    func write(_ bytes: [UInt8]) async -> Bool {
        await OffThePool.run { self.sendAll(bytes) }
    }

    @discardableResult
    func write(_ text: String) async -> Bool { await write(Array(text.utf8)) }

    /// Everything until the peer closes (or `timeout` passes without a byte), as text.
    func readToEnd() async -> String {
        await OffThePool.run { self.receiveAll() }
    }

    /// Whether the peer has closed the connection (a read returns end of file within `timeout`).
    func isClosedByPeer() async -> Bool {
        await OffThePool.run {
            var byte: UInt8 = 0
            return recv(self.descriptor, &byte, 1, 0) == 0
        }
    }

    /// Without waiting: "open" (nothing to read yet), "closed by the peer", or how many bytes
    /// wait to be read. For a failure's message: what became of a connection a test holds.
    var stateNow: String {
        var byte: UInt8 = 0
        let count = recv(descriptor, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if count == 0 { return "closed by the peer" }
        if count < 0 { return errno == EAGAIN || errno == EWOULDBLOCK ? "open" : "failed (errno \(errno))" }
        return "open, with bytes to read"
    }

    private func sendAll(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }

    private func receiveAll() -> String {
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            data.append(contentsOf: chunk[..<count])
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// What arrives until it ends with `marker` (or the peer closes, or `timeout` passes without a
    /// byte), as text: a wait for an interim answer, such as `100 Continue`, instead of a sleep.
    func read(until marker: String) async -> String {
        await OffThePool.run {
            var data: [UInt8] = []
            var byte: UInt8 = 0
            let end = Array(marker.utf8)
            while !data.ends(with: end), recv(self.descriptor, &byte, 1, 0) == 1 { data.append(byte) }
            return String(decoding: data, as: UTF8.self)
        }
    }
}

extension Array where Element: Equatable {
    fileprivate func ends(with suffix: [Element]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
