import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The test support's servers and proxies end their threads and close their listening sockets
/// when closed, and when they go out of scope unclosed. Their accept threads held them for the
/// rest of the test process: a full run ended with about 120 threads blocked in `accept`.
///
/// Other tests run in this process meanwhile and start threads of their own, so the threads
/// counted are those named for these listeners' ports (`AcceptLoop`), and a listener is looked for
/// by its socket's inode among this process's descriptors, not by its port.
@Suite struct SupportThreadsTests {
    /// A scripted server behind a lossy proxy behind a forward proxy, each used by a real pull.
    private struct Chain {
        let server: ScriptedServer
        let lossy: LossyProxy
        let forward: ForwardProxy
        var ports: [Int] { [server.port, Self.port(lossy.url), Self.port("http://" + forward.address)] }

        init() async throws {
            let pages = ScriptedCounter()
            server = try ScriptedServer { _, _ in
                pages.next() == 1 ? .json(200, "[" + ReadFailureTests.record("a", at: 1) + "]") : .json(200, "[]")
            }
            lossy = try LossyProxy(upstream: server.url)
            forward = try ForwardProxy()
            let store = try await TSyncSandbox(remote: lossy.url)
            let pull = try await store.run(["pull", "todo"], environment: ["http_proxy": "http://\(forward.address)"])
            #expect(pull.status == 0, "\(pull)")
            #expect(!server.requests.isEmpty && lossy.forwarded > 0 && forward.forwarded > 0, "every link carried the pull")
            let query = try await store.ok(["query", "todo", "--select", "id"])
            #expect(query == #"{"id":"a"}"# + "\n", "\(query)")
        }

        private static func port(_ url: String) -> Int { URLComponents(string: url)?.port ?? -1 }
    }

    /// `close()` ends the accept threads, the threads of the connections (one still open among
    /// them: its peer sees the end) and the listening sockets.
    @Test func closedServersAndProxiesEndTheirThreads() async throws {
        let chain = try await Chain()
        let ports = chain.ports
        let listeners = Self.listening(ports)
        try await Self.expectRunning(ports, listeners)
        let open = try await RawSocket.opened(port: chain.server.port)
        defer { open.close() }
        #expect(try await eventually { Self.threads(on: ports).contains("serve \(chain.server.port)") }, "\(Self.threads(on: ports))")

        chain.forward.close()
        chain.lossy.close()
        chain.server.close()
        #expect(await open.isClosedByPeer())
        try await Self.expectEnded(ports, listeners)
    }

    /// Never closed, they end when the test's last reference to them goes: their threads hold
    /// them only while serving a connection.
    @Test func serversAndProxiesNeverClosedEndWithTheirScope() async throws {
        var ports: [Int] = []
        var listeners: Set<UInt64> = []
        do {
            let chain = try await Chain()
            ports = chain.ports
            listeners = Self.listening(ports)
            try await Self.expectRunning(ports, listeners)
        }
        try await Self.expectEnded(ports, listeners)
    }

    // MARK: - Looking at this process

    /// The names of this process's threads named for `ports`.
    private static func threads(on ports: [Int]) -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { task in
            guard let name = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8) else { return nil }
            let trimmed = name.trimmingCharacters(in: .newlines)
            return ports.contains { trimmed.hasSuffix(" \($0)") } ? trimmed : nil
        }
    }

    /// The inodes of this process's sockets listening at `ports`, one for each port.
    private static func listening(_ ports: [Int]) -> Set<UInt64> {
        var inodes: Set<UInt64> = []
        for descriptor in descriptors() {
            var status = stat()
            guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK,
                let port = listeningPort(descriptor), ports.contains(port)
            else { continue }
            inodes.insert(UInt64(status.st_ino))
        }
        #expect(inodes.count == ports.count, "a listener for each of \(ports): \(inodes)")
        return inodes
    }

    /// The port a socket listens on, nil when it does not listen.
    private static func listeningPort(_ descriptor: Int32) -> Int? {
        var accepting: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &size) == 0, accepting == 1 else { return nil }
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return named == 0 ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }

    /// The inodes of the sockets this process holds open.
    private static func openSockets() -> Set<UInt64> {
        Set(
            descriptors().compactMap { descriptor in
                var status = stat()
                guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK else { return nil }
                return UInt64(status.st_ino)
            })
    }

    /// This process's open descriptors (some may close, or be another file, by the time they are looked at).
    private static func descriptors() -> [Int32] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap { Int32($0) }
    }

    private static func expectRunning(_ ports: [Int], _ listeners: Set<UInt64>, sourceLocation: SourceLocation = #_sourceLocation)
        async throws
    {
        let accepting = Set(ports.map { "accept \($0)" })
        let running = try await eventually({ threads(on: ports) }, until: { accepting.isSubset(of: $0) })
        #expect(accepting.isSubset(of: running), "an accept thread for each listener: \(running)", sourceLocation: sourceLocation)
        #expect(listeners.isSubset(of: openSockets()), "the listeners are this process's", sourceLocation: sourceLocation)
    }

    private static func expectEnded(_ ports: [Int], _ listeners: Set<UInt64>, sourceLocation: SourceLocation = #_sourceLocation)
        async throws
    {
        let left = try await eventually({ threads(on: ports) }, until: \.isEmpty)
        #expect(left.isEmpty, "threads left running: \(left)", sourceLocation: sourceLocation)
        let held = try await eventually({ listeners.intersection(openSockets()) }, until: \.isEmpty)
        #expect(held.isEmpty, "listening sockets left open: \(held)", sourceLocation: sourceLocation)
    }
}
