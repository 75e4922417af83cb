#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Synchronization

/// A child process started with `posix_spawn`, whose end is awaited without holding a thread of
/// the cooperative pool (a thread of its own blocks in `waitpid`).
///
/// Not `Foundation.Process`: on Linux its `run()` reads `/proc/self/fd` with a 256-byte copy of
/// each directory entry, which now and then reads past glibc's buffer and crashes the test
/// process (SIGSEGV in `Process.run()`; swift-corelibs-foundation PR 5472, still in Swift 6.3.1).
/// The more descriptors the test process holds (servers, proxies, sockets of tests running side
/// by side), the likelier. Like `Process`, the child gets no descriptor of ours but its stdin,
/// stdout and stderr (`posix_spawn_file_actions_addclosefrom_np`): a socket a test closes must
/// not stay open in a server another test started meanwhile.
final class ChildProcess: Sendable {
    let pid: pid_t
    let executable: String
    let arguments: [String]
    private struct State {
        var waitStatus: Int32?
        var waiters: [UUID: CheckedContinuation<Bool, Never>] = [:]
    }
    private let state = Mutex(State())

    /// Starts `executable` with `arguments` in `directory`.
    /// - Parameters:
    ///   - environment: the child's whole environment; nil: this process's.
    ///   - stdin, stdout, stderr: paths of files (stdout and stderr opened for appending); nil:
    ///     /dev/null.
    init(
        _ executable: String, _ arguments: [String], in directory: String? = nil, environment: [String: String]? = nil,
        stdin: String? = nil, stdout: String? = nil, stderr: String? = nil
    ) throws {
        self.executable = executable
        self.arguments = arguments
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout ?? "/dev/null", O_WRONLY | O_APPEND | O_CREAT, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr ?? "/dev/null", O_WRONLY | O_APPEND | O_CREAT, 0o644)
        guard let closeFrom = Self.closeFrom, let changeDirectory = Self.changeDirectory else {
            throw TSyncTestError("ChildProcess needs glibc 2.34 or later (posix_spawn_file_actions_addclosefrom_np)")
        }
        _ = closeFrom(&actions, 3)
        if let directory { _ = changeDirectory(&actions, directory) }

        let environment = environment ?? ProcessInfo.processInfo.environment
        var argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        // Signals as a shell leaves them: none blocked, none ignored (the test runner may ignore
        // some, and an ignored signal stays ignored across exec).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        sigdelset(&all, SIGKILL)
        sigdelset(&all, SIGSTOP)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var child: pid_t = 0
        let spawned = posix_spawn(&child, executable, &actions, &attributes, &argv, &envp)
        guard spawned == 0 else { throw TSyncTestError("cannot start \(executable): \(String(cString: strerror(spawned)))") }
        pid = child
        Thread { [self, child] in
            var status: Int32 = 0
            while waitpid(child, &status, 0) == -1, errno == EINTR {}
            finish(status)
        }.start()
    }

    // glibc has them since 2.29 and 2.34; Swift's Glibc module does not export them (_GNU_SOURCE).
    typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private typealias ChangeDirectory =
        @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    static let closeFrom: CloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
        unsafeBitCast($0, to: CloseFrom.self)
    }
    private static let changeDirectory: ChangeDirectory? = dlsym(nil, "posix_spawn_file_actions_addchdir_np").map {
        unsafeBitCast($0, to: ChangeDirectory.self)
    }

    private func finish(_ status: Int32) {
        let waiting = state.withLock { state in
            state.waitStatus = status
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiting { waiter.resume(returning: true) }
    }

    var isRunning: Bool { state.withLock { $0.waitStatus == nil } }

    /// The exit code, or 128 + the signal that ended it (as a shell says); nil while it runs.
    var status: Int32? {
        state.withLock { $0.waitStatus.map { $0 & 0x7F == 0 ? ($0 >> 8) & 0xFF : 128 + ($0 & 0x7F) } }
    }

    /// Whether a signal ended it (false while it runs).
    var endedBySignal: Bool { state.withLock { $0.waitStatus.map { $0 & 0x7F != 0 } ?? false } }

    /// Sends `signal` to the child (while it runs: its pid is not yet anybody else's).
    func signal(_ signal: Int32) {
        state.withLock { if $0.waitStatus == nil { _ = kill(pid, signal) } }
    }

    /// True once the process has ended; false when `timeout` seconds passed first.
    @discardableResult
    func wait(timeout: TimeInterval = .infinity) async -> Bool {
        let id = UUID()
        return await withCheckedContinuation { continuation in
            let ended = state.withLock { state in
                if state.waitStatus != nil { return true }
                state.waiters[id] = continuation
                return false
            }
            if ended { return continuation.resume(returning: true) }
            guard timeout.isFinite else { return }
            // Dispatch's global queues are not the cooperative pool; the timer holds no thread.
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [self] in
                state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: false)
            }
        }
    }

    /// Runs `executable` to its end; its status and what it wrote to stdout and to stderr.
    static func output(
        _ executable: String, _ arguments: [String], in directory: String? = nil, environment: [String: String]? = nil
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        let output = try TemporaryDirectory()
        let (out, errors) = (
            (output.path as NSString).appendingPathComponent("stdout"), (output.path as NSString).appendingPathComponent("stderr")
        )
        let child = try ChildProcess(executable, arguments, in: directory, environment: environment, stdout: out, stderr: errors)
        await child.wait()
        let read = { (path: String) in String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self) }
        return (child.status ?? -1, read(out), read(errors))
    }

    /// `curl` for a request over TLS to a `tsync serve` on `port`, trusting `authority` (a
    /// CA certificate file): the HTTP status ("000" when no answer came) and the body. For a test
    /// that must see the server's answer through TLS (a 503 sent after the handshake).
    static func curl(port: Int, _ path: String, authority: String) async throws -> (status: String, body: String, error: String) {
        let output = try TemporaryDirectory()
        let body = (output.path as NSString).appendingPathComponent("body")
        let result = try await Self.output(
            "/usr/bin/curl",
            ["-sS", "--max-time", "15", "--cacert", authority, "-o", body, "-w", "%{http_code}", "https://localhost:\(port)\(path)"])
        return (result.stdout, String(decoding: FileManager.default.contents(atPath: body) ?? Data(), as: UTF8.self), result.stderr)
    }

    /// Runs `executable` to its end; its status and what it wrote to stderr.
    static func run(
        _ executable: String, _ arguments: [String], in directory: String? = nil, environment: [String: String]? = nil
    ) async throws -> (status: Int32, stderr: String) {
        let output = try TemporaryDirectory()
        let errors = (output.path as NSString).appendingPathComponent("stderr")
        let child = try ChildProcess(executable, arguments, in: directory, environment: environment, stderr: errors)
        await child.wait()
        let text = String(decoding: FileManager.default.contents(atPath: errors) ?? Data(), as: UTF8.self)
        return (child.status ?? -1, text)
    }
}
