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
    /// push, the script exits 0, and `tsync log` shows what the push did. A CI job is retried:
    /// the same script run again in the same place passes too, and changes nothing.
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

        let again = try await TSyncProcess(["job.sh"], in: job.path, environment: environment, executable: "/bin/sh").wait()
        #expect(again.status == 0, "a retried job passes: \(again)")
        #expect(again.stdout.contains("pushed 0, settled 0 conflicts"), "nothing new to push: \(again.stdout)")
        #expect(try await server.records("todo")["a"]?["text"] == "the job's")
    }

    /// "Live sync": the block as written, in a store of a running server, with `jq` as its
    /// `--exec`; the change the block makes comes out of the watch into changes.log. Run twice,
    /// as a reader who tries it again would (the second run changes nothing, and fails nothing).
    @Test func theLiveSyncExampleRunsAsWritten() async throws {
        let server = try await ServeFixture()
        let store = try await TSyncSandbox(remote: server.url)
        let block = try await Self.shellBlock(after: "Live sync")
        let log = (store.path as NSString).appendingPathComponent("changes.log")
        // The block leaves its watch in the background: the harness waits for its line, then
        // stops it with SIGTERM (a background job of a script ignores SIGINT until tsync's
        // handler is in place, so an early Ctrl-C's signal could be lost).
        let script =
            block
                + """
                watcher=$!
                for _ in $(seq 200); do grep -q milk changes.log 2>/dev/null && break; sleep 0.1; done
                kill -TERM $watcher; wait $watcher; echo "watch exit $?"

                """
        _ = try store.directory.write("live.sh", script)
        let binaries = (TSyncBinary.path as NSString).deletingLastPathComponent
        let environment = ["PATH": binaries + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")]
        for run in 1...2 {
            let result = try await TSyncProcess(["live.sh"], in: store.path, environment: environment, executable: "/bin/bash").wait(
                timeout: 60)
            #expect(result.status == 0, "run \(run): \(result)")
            #expect(result.stdout.contains("watch exit 143"), "run \(run): \(result)")
            #expect(!result.stderr.contains("--exec"), "the --exec command succeeds: \(result.stderr)")
            let lines = String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self)
            #expect(lines == "pushed\ttodo\tmilk\n", "run \(run): \(lines)")
        }
        #expect(try await server.record("todo", "milk") != nil)
    }
}

extension ReadmeTests {
    /// "A short tour", block as it stands, in a fresh directory with `tsync` on the PATH; only the
    /// port changes (8080 may be taken). It must end with the laptop's edit on both sides, and
    /// do the same when a reader pastes it again in the same place.
    @Test func theTourRunsAsWritten() async throws {
        let port = try LoopbackListener.freePort()
        let script = try await Self.shellBlock(after: "A short tour").replacingOccurrences(of: "8080", with: String(port))
        let directory = try TemporaryDirectory()
        _ = try directory.write("tour.sh", script)
        let binaries = (TSyncBinary.path as NSString).deletingLastPathComponent
        for run in 1...2 {
            let result = try await TSyncProcess(
                ["tour.sh"], in: directory.path,
                environment: ["PATH": binaries + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")],
                executable: "/bin/bash"
            ).wait(timeout: 120)
            #expect(result.status == 0, "run \(run): \(result)")
            Self.expectTheTourEnded(result)
        }
    }

    private static func expectTheTourEnded(_ result: TSyncResult) {
        #expect(result.stdout.contains(#""text": "buy oat milk""#), "the laptop's version, after --theirs: \(result.stdout)")
        #expect(result.stdout.contains("\tupdate todoitem/milk\t412 version-conflict"), "a real conflict: \(result.stdout)")
        #expect(result.stdout.contains("version-conflict\tupdate\ttodoitem\tmilk"), "push --check predicted it")
        #expect(result.stderr.contains("1 failed (1 conflict)"), "\(result.stderr)")
        #expect(result.stderr.contains("settled 1 error (theirs)"))
        #expect(result.stdout.contains("tsync -C phone resolve --all --theirs"), "the log shows it: \(result.stdout)")
    }
}
