import Foundation
import Testing

/// The README's scripts, run as a reader would run them: what the README promises is tested,
/// not paraphrased in a test.
@Suite(.serialized) struct ReadmeTests {
    static let packageRootURL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The first ```sh block after the heading `## title`.
    static func shellBlock(after title: String) async throws -> String {
        let readme = try String(contentsOf: packageRootURL.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.range(of: "\n## \(title)\n"), "no section \(title)")
        let rest = readme[section.upperBound...]
        let start = try #require(rest.range(of: "```sh\n"))
        let end = try #require(rest[start.upperBound...].range(of: "```\n"))
        return String(rest[start.upperBound..<end.lowerBound])
    }

    /// "Conflicts in CI": the job script, against a server where another writer inserts the same
    /// id just before the job's push. The job's policy (merge, prefer ours) settles it in the one
    /// push, the script exits 0, and `tsync log` shows what the push did.
    @Test func theCIJobSettlesAConflictInOnePush() async throws {
        let server = try await ServeFixture(authenticated: true)
        let token = try #require(try await server.token())
        let proxy = try LossyProxy(upstream: server.url)
        let port = URLComponents(string: server.url)?.port ?? 0
        proxy.interpose("POST", "/tables/$batch", count: 1) { _ in
            let body = #"{"id": "a", "text": "the other writer's"}"#
            return
                "POST /tables/todo HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nZUMO-API-VERSION: 2.0.0\r\nX-ZUMO-AUTH: \(token)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
        }
        let job = try TemporaryDirectory()
        _ = try await job.write("job.sh", try Self.shellBlock(after: "Conflicts in CI"))
        _ = try job.write("new-items.ndjson", #"{"id": "a", "text": "the job's"}"# + "\n" + #"{"id": "b", "text": "two"}"# + "\n")
        let binaries = (TSyncBinary.path as NSString).deletingLastPathComponent
        let environment = [
            "PATH": binaries + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
            "SYNC_URL": proxy.url, "SYNC_TOKEN": token,
        ]
        let result = try await TSyncProcess(["job.sh"], in: job.path, environment: environment, executable: "/bin/sh").wait()
        #expect(result.status == 0, "\(result)")
        #expect(proxy.interposed == 1, "the other writer got in before the push")
        #expect(result.stdout.contains("pushed 2, settled 1 conflicts"), "\(result.stdout)")
        #expect(try await server.records("todo")["a"]?["text"] == "the job's", "merge, prefer ours")
        #expect(result.stdout.contains("tsync push --retries 5 --json") && result.stdout.contains("settled 1 (merge)"), "\(result.stdout)")
        #expect(!result.stdout.contains(token) && !result.stderr.contains(token), "the token is never printed")
    }
}

extension ReadmeTests {
    /// "A short tour", block as it stands, in a fresh directory with `tsync` on the PATH; only the
    /// port changes (8080 may be taken). It must end with the laptop's edit on both sides.
    @Test func theTourRunsAsWritten() async throws {
        let port = try LoopbackListener.freePort()
        let script = try await Self.shellBlock(after: "A short tour").replacingOccurrences(of: "8080", with: String(port))
        let directory = try TemporaryDirectory()
        _ = try directory.write("tour.sh", script)
        let binaries = (TSyncBinary.path as NSString).deletingLastPathComponent
        let result = try await TSyncProcess(
            ["tour.sh"], in: directory.path,
            environment: ["PATH": binaries + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")],
            executable: "/bin/bash"
        ).wait(timeout: 120)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains(#""text": "buy oat milk""#), "the laptop's version, after --theirs: \(result.stdout)")
        #expect(result.stdout.contains("\tupdate todoitem/milk\t412 version-conflict"), "a real conflict: \(result.stdout)")
        #expect(result.stdout.contains("version-conflict\tupdate\ttodoitem\tmilk"), "push --check predicted it")
        #expect(result.stderr.contains("1 failed (1 conflict)"), "\(result.stderr)")
        #expect(result.stderr.contains("settled 1 error (theirs)"))
        #expect(result.stdout.contains("tsync -C phone resolve --all --theirs"), "the log shows it: \(result.stdout)")
    }
}
