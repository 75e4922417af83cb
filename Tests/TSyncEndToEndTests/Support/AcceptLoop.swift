import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The listening half of the test support's servers and proxies: a listener on 127.0.0.1 whose
/// accept thread, and the thread of each connection it accepted, end at `stop()`. Their owners
/// stop it in `close()` and `deinit`, and hand `start` a closure that holds them weakly, so an
/// owner a test never closes still ends with its scope. (An accept thread that held its owner
/// kept both alive for the rest of the test process: a full run ended with about 120 threads
/// blocked in `accept`, each holding a listening socket.)
///
/// The threads close their own descriptors; `stop()` only shuts them down, which wakes a blocked
/// `accept` or `recv`. A descriptor closed from another thread could be reused by then for
/// another test's socket, which the loop would go on reading.
///
/// The threads are named `accept PORT` and `serve PORT` (`/proc/self/task/*/comm`), so a test can
/// tell them from the rest of the process's.
final class AcceptLoop: Sendable {
    let port: Int
    private let listener: Int32
    private struct State {
        var listening = true
        var stopped = false
        var connections: Set<Int32> = []
    }
    private let state = Mutex(State())

    /// Listens on a free port; nothing is accepted before `start`.
    init() throws {
        (listener, port) = try LoopbackListener.open()
    }

    /// Accepts connections until `stop()`, each served by `serve` on a thread of its own and closed
    /// when `serve` returns.
    func start(_ serve: @escaping @Sendable (_ client: Int32) -> Void) {
        Thread.detachNewThread { [self] in acceptLoop(serve) }
    }

    /// Stops accepting and shuts every open connection down: the threads return from `accept` and
    /// `recv`, and end. Idempotent.
    func stop() {
        state.withLock { s in
            if s.listening && !s.stopped { shutdown(listener, Int32(SHUT_RDWR)) }
            s.stopped = true
            for client in s.connections { shutdown(client, Int32(SHUT_RDWR)) }
        }
    }

    private func acceptLoop(_ serve: @escaping @Sendable (Int32) -> Void) {
        Self.nameThread("accept \(port)")
        defer {
            state.withLock { s in
                s.listening = false
                Glibc.close(listener)
            }
        }
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if (errno == EINTR || errno == ECONNABORTED) && !state.withLock({ $0.stopped }) { continue }
                return
            }
            let admitted = state.withLock { s in
                guard !s.stopped else { return false }
                s.connections.insert(client)
                return true
            }
            guard admitted else {
                Glibc.close(client)
                return
            }
            Thread.detachNewThread { [self] in
                Self.nameThread("serve \(port)")
                serve(client)
                state.withLock { s in
                    s.connections.remove(client)
                    Glibc.close(client)
                }
            }
        }
    }

    /// Names the calling thread (Linux keeps 15 bytes of it). Written to `/proc/thread-self/comm`
    /// at once: Foundation's `Thread.name` did not always reach the system's name.
    private static func nameThread(_ name: String) {
        let file = open("/proc/thread-self/comm", O_WRONLY)
        guard file >= 0 else { return }
        defer { Glibc.close(file) }
        let bytes = Array(name.utf8.prefix(15))
        _ = Glibc.write(file, bytes, bytes.count)
    }
}
