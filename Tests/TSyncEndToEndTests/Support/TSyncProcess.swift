import Foundation
import Synchronization
import Testing

/// Runs the built `tsync` binary, for end-to-end tests.
///
/// The binary is `$TSYNC_BIN` when set, else `tsync` in the build products directory: the
/// directory holding the test bundle (`…/debug/tsyncPackageTests.xctest`).
enum TSyncBinary {
    static let path: String = {
        if let path = ProcessInfo.processInfo.environment["TSYNC_BIN"], !path.isEmpty { return path }
        let starts =
            [Bundle.main.bundleURL, URL(fileURLWithPath: CommandLine.arguments.first ?? "")]
            + Bundle.allBundles.map(\.bundleURL)
        for start in starts {
            var url = start.standardizedFileURL
            while url.pathComponents.count > 1 {
                if url.pathExtension == "xctest" {
                    let candidate = url.deletingLastPathComponent().appendingPathComponent("tsync").path
                    if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
                }
                url.deleteLastPathComponent()
            }
            let sibling = start.deletingLastPathComponent().appendingPathComponent("tsync").path
            if FileManager.default.isExecutableFile(atPath: sibling) { return sibling }
        }
        return "tsync-binary-not-found (build it, or set TSYNC_BIN)"
    }()
}

/// What a finished `tsync` run left behind.
struct TSyncResult: CustomStringConvertible, Sendable {
    var status: Int32
    var stdout: String
    var stderr: String

    var lines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) }
    var description: String { "exit \(status)\nstdout: \(stdout)\nstderr: \(stderr)" }
}

/// A temporary directory for one test, removed with the value.
final class TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("tsync-e2e-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func subdirectory(_ relative: String) throws -> String {
        let path = (self.path as NSString).appendingPathComponent(relative)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func write(_ relative: String, _ text: String) throws -> String {
        let path = (self.path as NSString).appendingPathComponent(relative)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// One `tsync` process. Output goes to files (no pipe can fill up and stall the child). Its end
/// is awaited, never waited for on a cooperative thread (see `OffThePool`, `ChildProcess`).
final class TSyncProcess {
    private let process: ChildProcess
    private let output: TemporaryDirectory

    /// Starts `tsync arguments...` (or another `executable`) in `directory`.
    /// - Parameters:
    ///   - stdin: bytes for standard input; nil gives an empty stdin (/dev/null), which is not a terminal.
    ///   - environment: added to a clean environment (TSYNC_DIR, TSYNC_TOKEN and the proxy variables
    ///     removed, NO_COLOR unset).
    init(
        _ arguments: [String], in directory: String, stdin: String? = nil, environment: [String: String] = [:],
        executable: String = TSyncBinary.path
    ) throws {
        let output = try TemporaryDirectory()
        self.output = output
        var childEnvironment = ProcessInfo.processInfo.environment
        // The proxy variables too: every test talks to loopback, and tsync would send even that
        // through a proxy the machine running the tests has set.
        let proxies = ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"]
        for name in ["TSYNC_DIR", "TSYNC_TOKEN", "NO_COLOR"] + proxies { childEnvironment.removeValue(forKey: name) }
        childEnvironment.merge(environment) { _, new in new }
        let input = try stdin.map { try output.write("stdin", $0) }
        process = try ChildProcess(
            executable, arguments, in: directory, environment: childEnvironment, stdin: input,
            stdout: (output.path as NSString).appendingPathComponent("stdout"),
            stderr: (output.path as NSString).appendingPathComponent("stderr"))
    }

    private func outputPath(_ name: String) -> String { (output.path as NSString).appendingPathComponent(name) }

    /// Sends `signal` to the running process (SIGINT, as Ctrl-C would).
    func signal(_ signal: Int32) { process.signal(signal) }

    var isRunning: Bool { process.isRunning }

    /// Whether the process exists (`kill(pid, 0)`), and the `Sig*` lines of /proc/PID/status
    /// (ignored, blocked, caught signals): for a failure's message.
    var signalDispositions: String {
        let pid = process.pid
        let alive = kill(pid, 0) == 0 ? "alive" : "kill(\(pid), 0) failed: errno \(errno)"
        let descriptor = open("/proc/\(pid)/status", O_RDONLY)
        guard descriptor >= 0 else { return "\(alive); /proc/\(pid)/status: errno \(errno)" }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 8192)
        let count = read(descriptor, &bytes, bytes.count)
        let lines = String(decoding: bytes.prefix(max(0, count)), as: UTF8.self).split(separator: "\n")
        return "\(alive); " + lines.filter { $0.hasPrefix("Sig") || $0.hasPrefix("State") || $0.hasPrefix("Name") }.joined(separator: " ")
    }

    /// What it has written to stdout so far.
    var stdoutSoFar: String {
        String(decoding: FileManager.default.contents(atPath: outputPath("stdout")) ?? Data(), as: UTF8.self)
    }

    /// What it has written to stderr so far.
    var stderrSoFar: String {
        String(decoding: FileManager.default.contents(atPath: outputPath("stderr")) ?? Data(), as: UTF8.self)
    }

    /// Whether stderr comes to contain `text` within `timeout` (false at once when the process
    /// ends without writing it): a wait for what the command says, not for a time.
    @discardableResult
    func waitFor(stderr text: String, timeout: Duration = .seconds(10)) async throws -> Bool {
        try await eventually(timeout: timeout) { stderrSoFar.contains(text) || !isRunning } && stderrSoFar.contains(text)
    }

    /// Waits for the process and collects its output; its status is the exit code, or 128 + the
    /// signal that ended it. After `timeout` seconds it is sent SIGTERM, and SIGKILL 5 s later,
    /// and the test fails.
    func wait(timeout: TimeInterval = 120) async -> TSyncResult {
        if !(await process.wait(timeout: timeout)) {
            Issue.record("\(process.executable) \(process.arguments) did not finish in \(timeout) s")
            process.signal(SIGTERM)
            if !(await process.wait(timeout: 5)) {
                process.signal(SIGKILL)
                await process.wait()
            }
        }
        let read = { (name: String) in
            String(decoding: FileManager.default.contents(atPath: self.outputPath(name)) ?? Data(), as: UTF8.self)
        }
        return TSyncResult(status: process.status ?? -1, stdout: read("stdout"), stderr: read("stderr"))
    }

    /// Runs `tsync arguments...` to the end.
    static func run(
        _ arguments: [String], in directory: String, stdin: String? = nil, environment: [String: String] = [:],
        executable: String = TSyncBinary.path
    ) async throws -> TSyncResult {
        try await CommandSlots.shared.holding {
            try await TSyncProcess(arguments, in: directory, stdin: stdin, environment: environment, executable: executable).wait()
        }
    }

    /// Runs `tsync arguments...` to the end, as `run` does, and says how long the process took:
    /// from its start, after its wait for a slot (`CommandSlots`), which under the whole suite
    /// can be longer than any bound a test puts on the command itself.
    static func runTimed(
        _ arguments: [String], in directory: String, stdin: String? = nil, environment: [String: String] = [:]
    ) async throws -> (result: TSyncResult, took: Duration) {
        try await CommandSlots.shared.holding {
            let start = ContinuousClock.now
            let result = try await TSyncProcess(arguments, in: directory, stdin: stdin, environment: environment).wait()
            return (result, ContinuousClock.now - start)
        }
    }

    /// Runs `tsync arguments...` with stdin, stdout and stderr on a pseudo-terminal (through
    /// util-linux `script`), as a person at a terminal would; nil when `script` is not installed.
    /// The terminal's output (stdout and stderr mixed) is in `stdout`.
    static func runOnTerminal(
        _ arguments: [String], in directory: String, stdin: String? = nil, environment: [String: String] = [:]
    ) async throws -> TSyncResult? {
        let script = "/usr/bin/script"
        guard FileManager.default.isExecutableFile(atPath: script) else { return nil }
        let command = ([TSyncBinary.path] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
            .joined(separator: " ")
        return try await CommandSlots.shared.holding {
            try await TSyncProcess(
                ["-q", "-e", "-c", command, "/dev/null"], in: directory, stdin: stdin, environment: environment, executable: script
            ).wait()
        }
    }
}

/// How many commands run to their end (`TSyncProcess.run`) at once, across all tests: twice the
/// cores. Swift Testing starts every test at once; now that a waiting test holds no thread, only
/// this keeps a hundred tests from starting a hundred `tsync` processes together on 2 cores, where
/// every deadline in the process (the in-process servers' clients, the 5 s a writer waits for a
/// busy store) would pass. A test's own processes it starts and stops itself (`TSyncProcess(…)`, a
/// server) are not counted, so a test never waits for a slot while holding one.
final class CommandSlots: Sendable {
    static let shared = CommandSlots(permits: 2 * max(1, ProcessInfo.processInfo.activeProcessorCount))

    private struct State {
        var permits: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
        /// Tests waiting for every slot (`exclusively`): served before `waiters`, so a slot that
        /// frees up goes to them, and no new command starts while they wait.
        var exclusives: [CheckedContinuation<Void, Never>] = []
    }
    private let total: Int
    private let state: Mutex<State>

    init(permits: Int) {
        state = Mutex(State(permits: permits))
        total = permits
    }

    /// Runs `body` while no command of any other test runs: for a test that must hold hundreds of
    /// requests within a server's 25 s wait, which the whole suite's commands on 2 cores could
    /// stretch past. It waits only for the commands under way. `body` must not run a command
    /// through `TSyncProcess.run` (it would wait for itself).
    func exclusively<T>(_ body: () async throws -> T) async rethrows -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { s in
                if s.permits == total, s.exclusives.isEmpty {
                    s.permits = 0
                    return true
                }
                s.exclusives.append(continuation)
                return false
            }
            if granted { continuation.resume() }
        }
        defer { releaseAll() }
        return try await body()
    }

    /// Runs `body` once a slot is free (waiting holds no thread), and frees it after.
    func holding<T>(_ body: () async throws -> T) async rethrows -> T {
        await acquire()
        defer { release() }
        return try await body()
    }

    private func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { s in
                if s.permits > 0, s.exclusives.isEmpty {
                    s.permits -= 1
                    return true
                }
                s.waiters.append(continuation)
                return false
            }
            if granted { continuation.resume() }
        }
    }

    private func release() {
        let next: CheckedContinuation<Void, Never>? = state.withLock { s in
            if !s.exclusives.isEmpty {
                s.permits += 1
                guard s.permits == total else { return nil }
                s.permits = 0
                return s.exclusives.removeFirst()
            }
            if s.waiters.isEmpty {
                s.permits += 1
                return nil
            }
            return s.waiters.removeFirst()
        }
        next?.resume()
    }

    /// The end of an exclusive run: the next exclusive one, or every slot back to the waiters.
    private func releaseAll() {
        let next: [CheckedContinuation<Void, Never>] = state.withLock { s in
            if !s.exclusives.isEmpty { return [s.exclusives.removeFirst()] }
            s.permits = total
            var resumed: [CheckedContinuation<Void, Never>] = []
            while s.permits > 0, !s.waiters.isEmpty {
                s.permits -= 1
                resumed.append(s.waiters.removeFirst())
            }
            return resumed
        }
        for continuation in next { continuation.resume() }
    }
}

/// A temporary directory with an initialized store, and shortcuts to run tsync in it.
final class TSyncSandbox {
    let directory: TemporaryDirectory
    var path: String { directory.path }

    init(remote: String? = nil) async throws {
        directory = try TemporaryDirectory()
        let result = try await run(["init"] + (remote.map { ["--remote", $0] } ?? []))
        #expect(result.status == 0, "tsync init failed: \(result)")
    }

    /// Runs tsync in the sandbox directory.
    @discardableResult
    func run(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]) async throws -> TSyncResult {
        try await TSyncProcess.run(arguments, in: path, stdin: stdin, environment: environment)
    }

    /// Runs tsync and expects exit 0; returns stdout.
    @discardableResult
    func ok(_ arguments: [String], stdin: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) async throws -> String {
        let result = try await run(arguments, stdin: stdin)
        #expect(result.status == 0, "tsync \(arguments.joined(separator: " ")): \(result)", sourceLocation: sourceLocation)
        return result.stdout
    }

    /// A fingerprint of everything a command could change: the queue, the tables and every record.
    func snapshot() async throws -> String {
        var text = try await ok(["status", "--porcelain"]) + (try await ok(["tables", "--json"]))
        for table in try await ok(["tables", "--json"]).components(separatedBy: "\"table\":\"").dropFirst() {
            let name = String(table.prefix { $0 != "\"" })
            text += try await ok(["query", name, "--json"])
        }
        return text
    }
}
