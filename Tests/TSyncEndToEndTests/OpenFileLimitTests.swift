import Foundation
import Testing

/// `tsync serve` raises its soft limit on open files to the hard one at start: every held read
/// keeps a connection, and a server left at a soft limit of 1,024 would fail to accept the
/// 1,025th connection long before `--max-connections` refuses one. Started from a shell that
/// lowered the limits first (`ulimit`), so the test does not depend on how it was run.
@Suite struct OpenFileLimitTests {
    /// Starts `tsync serve` after `limits` (shell `ulimit` commands), waits for its address, and
    /// returns its log and its "Max open files" line of /proc/PID/limits, then stops it.
    static func serve(after limits: String, options: [String] = []) async throws -> (log: String, limits: String) {
        let directory = try TemporaryDirectory()
        let log = (directory.path as NSString).appendingPathComponent("serve.log")
        let database = (directory.path as NSString).appendingPathComponent("server.db")
        let child = try ChildProcess(
            "/bin/sh",
            ["-c", "\(limits) && exec \"$0\" \"$@\"", TSyncBinary.path, "serve", "--port", "0", "--no-auth", "--db", "sqlite:" + database]
                + options, stdout: log, stderr: log)
        defer {
            child.signal(SIGTERM)
        }
        var text = ""
        for _ in 0..<600 where !text.contains("listening on") {
            guard child.isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
            text = String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self)
        }
        #expect(text.contains("listening on"), "serve started: \(text)")
        let table = (try? String(contentsOfFile: "/proc/\(child.pid)/limits", encoding: .utf8)) ?? ""
        let line = table.split(separator: "\n").first { $0.hasPrefix("Max open files") }.map(String.init) ?? ""
        child.signal(SIGTERM)
        #expect(await child.wait(timeout: 15), "serve stopped on SIGTERM")
        return (text, line)
    }

    /// The numbers of a /proc/PID/limits line: soft, hard.
    static func numbers(_ line: String) -> [UInt64] { line.split(separator: " ").compactMap { UInt64($0) } }

    @Test func serveRaisesItsSoftLimitToTheHardOne() async throws {
        var limit = rlimit()
        #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        let hard = min(UInt64(limit.rlim_max), 4096)
        try #require(hard > 300, "the test needs a hard limit above 300 open files")
        let (log, limits) = try await Self.serve(after: "ulimit -Sn 256 && ulimit -Hn \(hard)", options: ["--max-connections", "1000"])
        #expect(log.contains("open files: soft limit raised from 256 to \(hard)"), "\(log)")
        #expect(Self.numbers(limits) == [hard, hard], "the server's limits: \(limits)")
        #expect(!log.contains("fewer than"), "no warning when the hard limit allows every connection: \(log)")
    }

    @Test func serveWarnsWhenTheHardLimitIsBelowTheConnectionsAllowed() async throws {
        let (log, limits) = try await Self.serve(after: "ulimit -n 300", options: ["--max-connections", "1024"])
        #expect(Self.numbers(limits) == [300, 300], "the server's limits: \(limits)")
        #expect(!log.contains("soft limit raised"), "nothing to raise: \(log)")
        #expect(log.contains("open files: the limit is 300 (hard 300), fewer than the 1024 connections"), "\(log)")
    }
}
