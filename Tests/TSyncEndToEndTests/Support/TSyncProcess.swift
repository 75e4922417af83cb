import Foundation
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
struct TSyncResult: CustomStringConvertible {
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

/// One `tsync` process. Output goes to files (no pipe can fill up and stall the child).
final class TSyncProcess {
    private let process = Process()
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
        output = try TemporaryDirectory()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        var childEnvironment = ProcessInfo.processInfo.environment
        // The proxy variables too: every test talks to loopback, and tsync would send even that
        // through a proxy the machine running the tests has set.
        let proxies = ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"]
        for name in ["TSYNC_DIR", "TSYNC_TOKEN", "NO_COLOR"] + proxies { childEnvironment.removeValue(forKey: name) }
        childEnvironment.merge(environment) { _, new in new }
        process.environment = childEnvironment
        let inputPath = try output.write("stdin", stdin ?? "")
        process.standardInput = stdin == nil ? FileHandle.nullDevice : try FileHandle(forReadingFrom: URL(fileURLWithPath: inputPath))
        _ = FileManager.default.createFile(atPath: outputPath("stdout"), contents: nil)
        _ = FileManager.default.createFile(atPath: outputPath("stderr"), contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath("stdout")))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath("stderr")))
        try process.run()
    }

    private func outputPath(_ name: String) -> String { (output.path as NSString).appendingPathComponent(name) }

    /// Sends `signal` to the running process (SIGINT, as Ctrl-C would).
    func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

    var isRunning: Bool { process.isRunning }

    /// Whether the process exists (`kill(pid, 0)`), and the `Sig*` lines of /proc/PID/status
    /// (ignored, blocked, caught signals): for a failure's message.
    var signalDispositions: String {
        let pid = process.processIdentifier
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

    /// Waits for the process (killing it after `timeout` seconds) and collects its output.
    func wait(timeout: TimeInterval = 120) -> TSyncResult {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { usleep(2_000) }
        if process.isRunning {
            process.terminate()
            Issue.record("tsync \(process.arguments ?? []) did not finish in \(timeout) s")
        }
        process.waitUntilExit()
        let read = { (name: String) in
            String(decoding: FileManager.default.contents(atPath: self.outputPath(name)) ?? Data(), as: UTF8.self)
        }
        return TSyncResult(status: process.terminationStatus, stdout: read("stdout"), stderr: read("stderr"))
    }

    /// Runs `tsync arguments...` to the end.
    static func run(
        _ arguments: [String], in directory: String, stdin: String? = nil, environment: [String: String] = [:],
        executable: String = TSyncBinary.path
    ) throws -> TSyncResult {
        try TSyncProcess(arguments, in: directory, stdin: stdin, environment: environment, executable: executable).wait()
    }

    /// Runs `tsync arguments...` with stdin, stdout and stderr on a pseudo-terminal (through
    /// util-linux `script`), as a person at a terminal would; nil when `script` is not installed.
    /// The terminal's output (stdout and stderr mixed) is in `stdout`.
    static func runOnTerminal(
        _ arguments: [String], in directory: String, stdin: String? = nil, environment: [String: String] = [:]
    ) throws -> TSyncResult? {
        let script = "/usr/bin/script"
        guard FileManager.default.isExecutableFile(atPath: script) else { return nil }
        let command = ([TSyncBinary.path] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
            .joined(separator: " ")
        return try TSyncProcess(
            ["-q", "-e", "-c", command, "/dev/null"], in: directory, stdin: stdin, environment: environment, executable: script
        ).wait()
    }
}

/// A temporary directory with an initialized store, and shortcuts to run tsync in it.
final class TSyncSandbox {
    let directory: TemporaryDirectory
    var path: String { directory.path }

    init(remote: String? = nil) throws {
        directory = try TemporaryDirectory()
        let result = try run(["init"] + (remote.map { ["--remote", $0] } ?? []))
        #expect(result.status == 0, "tsync init failed: \(result)")
    }

    /// Runs tsync in the sandbox directory.
    @discardableResult
    func run(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]) throws -> TSyncResult {
        try TSyncProcess.run(arguments, in: path, stdin: stdin, environment: environment)
    }

    /// Runs tsync and expects exit 0; returns stdout.
    @discardableResult
    func ok(_ arguments: [String], stdin: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let result = try run(arguments, stdin: stdin)
        #expect(result.status == 0, "tsync \(arguments.joined(separator: " ")): \(result)", sourceLocation: sourceLocation)
        return result.stdout
    }

    /// A fingerprint of everything a command could change: the queue, the tables and every record.
    func snapshot() throws -> String {
        var text = try ok(["status", "--porcelain"]) + (try ok(["tables", "--json"]))
        for table in try ok(["tables", "--json"]).components(separatedBy: "\"table\":\"").dropFirst() {
            let name = String(table.prefix { $0 != "\"" })
            text += try ok(["query", name, "--json"])
        }
        return text
    }
}
