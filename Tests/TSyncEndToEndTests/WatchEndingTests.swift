import Foundation
import Testing
import TSyncModel

/// How `tsync watch` ends, and what it does not end on (issues 33 and 34): its reader going
/// (`| head -1`), Ctrl-C said quietly; "connected" before the first change; the reconnect line
/// without "try again later" and said again as the delay grows; and one 500, one garbled page,
/// one page out of order or another command's push lock are retried and reported, never the end.
/// The real `tsync serve` (behind `LossyProxy` where an answer is to be spoiled), the real binary.
@Suite(.serialized) struct WatchEndingTests {
    typealias Watcher = LiveSyncTests.Watcher

    /// `tsync watch | head -1`, `| grep -m1`, and the same with SIGPIPE ignored: the watch ends
    /// as soon as its reader has its line, silently, with 141, not at its next change.
    @Test(arguments: ["head -1", "grep -m1 pulled", "trap '' PIPE; "])
    func aReaderThatGoesEndsTheWatch(reader: String) async throws {
        let server = try await ServeFixture()
        let (a, b) = try await LiveSyncTests.twoStores(server)
        // The last case: `head -1` again, under a shell that ignores SIGPIPE (tsync inherits it).
        let (before, command) = reader.hasPrefix("trap") ? (reader, "head -1") : ("", reader)
        let script = #"\#(before)"$0" watch | \#(command); echo "exit ${PIPESTATUS[0]}" >&2"#
        let shell = try TSyncProcess(["-c", script, TSyncBinary.path], in: b.path, executable: "/bin/bash")
        try await shell.waitFor(stderr: "watching (connected)")
        try await a.ok(["insert", "todo", #"{"id": "first"}"#])
        try await a.ok(["push"])
        let result = await shell.wait(timeout: 20)
        #expect(result.stdout == "pulled todo/first\n", "\(result)")
        #expect(result.stderr.hasSuffix("exit 141\n"), "\(result.stderr)")
        #expect(!result.stderr.contains("error") && !result.stderr.contains("interrupted"), "silent: \(result.stderr)")
    }

    /// Ctrl-C is how a watch is ended: 130, and not a word.
    @Test func ctrlCEndsTheWatchQuietly() async throws {
        let server = try await ServeFixture()
        let (_, b) = try await LiveSyncTests.twoStores(server)
        let process = try TSyncProcess(["watch"], in: b.path)
        try await process.waitFor(stderr: "watching (connected)")
        process.signal(SIGINT)
        let result = await process.wait(timeout: 30)
        #expect(result.status == 130, "\(result)")
        #expect(result.stderr == "watching (connected)\n", "\(result.stderr)")
    }

    /// The changes of the first sync come after "connected", never before.
    @Test func connectedComesBeforeTheFirstChange() async throws {
        let server = try await ServeFixture()
        let (a, b) = try await LiveSyncTests.twoStores(server)
        try await a.ok(["insert", "todo", #"{"id": "waiting"}"#])
        try await a.ok(["push"])
        let watch = try await b.run(["watch", "--json", "--timeout", "2"])
        #expect(watch.status == 0, "\(watch)")
        let events = watch.stdout.split(separator: "\n").compactMap { try? JSONParser.parse(String($0)).objectValue?["event"]?.stringValue }
        #expect(events.first == "connected" && events.contains("pulled"), "\(watch.stdout)")
    }

    /// A server away: "reconnecting" without "try again later", said again as the delay grows.
    @Test func theReconnectLineSaysTheGrowingDelay() async throws {
        let server = try await ServeFixture()
        let (_, b) = try await LiveSyncTests.twoStores(server)
        await server.kill()
        let watch = try await b.run(["watch", "--timeout", "2.5"])
        #expect(watch.status == 0, "\(watch)")
        let lines = watch.stderr.split(separator: "\n").filter { $0.contains("reconnecting in") }
        #expect(lines.count >= 3, "one line per step of the delay: \(watch.stderr)")
        #expect(lines.first?.contains("cannot reach the server") == true, "\(watch.stderr)")
        #expect(!watch.stderr.contains("try again later"), "it retries by itself: \(watch.stderr)")
    }

    /// One 500, one garbled 200 and one page out of order from between the watch and its server:
    /// each is reported and retried, the watch goes on and takes the next change.
    @Test func aSpoiledAnswerIsRetriedNotTheEnd() async throws {
        let server = try await ServeFixture(options: ["--metrics"])
        let proxy = try LossyProxy(upstream: server.url)
        let a = try await TSyncSandbox(remote: server.url)
        let b = try await TSyncSandbox(remote: proxy.url)
        try await a.ok(["insert", "todo", #"{"id": "x0"}"#])
        try await a.ok(["push"])
        try await b.ok(["pull", "todo", "--query-id", "all"])
        // Its held reads are streams of 3 s (a wait of the timeout less 5 s): a fault set for the
        // next read meets it when the stream that brought the change ends, not 20 s later.
        let watcher = try Watcher(b, environment: ["TSYNC_TIMEOUT": "8"])
        await watcher.waitFor("connected")
        let outOfOrder = "[" + FaultyServerTests.record("z2", at: 30) + "," + FaultyServerTests.record("z1", at: 10) + "]"
        let faults: [(status: Int, body: String)] = [
            (500, #"{"error": "internal error"}"#), (200, #"[{"id": "half"#), (200, outOfOrder),
        ]
        for (number, fault) in faults.enumerated() {
            // The read the watch holds now goes through; the one after it gets the fault.
            proxy.replace("GET", "/tables/todo", status: fault.status, contentType: "application/json", body: fault.body, forward: false)
            let id = "after\(number)"
            try await a.ok(["insert", "todo", #"{"id": "\#(id)"}"#])
            try await a.ok(["push"])
            await watcher.waitFor("pulled", id: id)
            await watcher.waitFor("reconnecting", count: number + 1)
            #expect(watcher.process.isRunning, "the watch goes on after fault \(number): \(watcher.process.stderrSoFar)")
            // Its retry (at most 0.25 s later) is held by the server before the next fault is set.
            #expect(try await eventually { try await server.metric("tsync_live_waiting") == 1 }, "the retry is held")
        }
        try await a.ok(["insert", "todo", #"{"id": "last"}"#])
        try await a.ok(["push"])
        await watcher.waitFor("pulled", id: "last")
        // Each retry's answer said the server answers again.
        await watcher.waitFor("connected", count: faults.count + 1)
        let result = await watcher.stop()
        #expect(result.status == 130, "\(result)")
        #expect(!result.stdout.contains(#""id":"z1""#) && !result.stdout.contains(#""id":"half""#), "nothing of a spoiled page is taken")
        await #expect(try b.run(["get", "todo", "z1"]).status != 0)
    }

    /// Another command holds the store's push lock past the push's 10 s: the watch's push is
    /// retried once it is free, and the watch goes on.
    @Test func aPushLockHeldElsewhereIsWaitedOut() async throws {
        let server = try await ServeFixture()
        let (_, b) = try await LiveSyncTests.twoStores(server)
        let watcher = try Watcher(b)
        await watcher.waitFor("connected")
        let lock = (b.path as NSString).appendingPathComponent(".tsync/push.lock")
        // The holder keeps the lock until it is ended: the lock is on its own descriptor 9, which
        // `exec sleep` keeps, so ending that one process frees it. Held for a fixed time instead,
        // a loaded machine's push started after the lock was gone, and no wait was seen.
        let holder = try TSyncProcess(
            ["-c", #"exec 9>>"$0" && flock 9 && exec sleep 600"#, lock], in: b.path, executable: "/bin/sh")
        defer { holder.signal(SIGKILL) }  // Not left holding it when an expectation throws.
        // Held once another `flock` cannot take it (`-n`: exit 1 at once).
        let held = try await eventually {
            try await ChildProcess.run("/usr/bin/flock", ["-n", lock, "true"]).status == 1
        }
        #expect(held, "the lock is held")
        try await b.ok(["insert", "todo", #"{"id": "queued"}"#])
        let reconnecting = await watcher.waitFor("reconnecting", seconds: 60)
        #expect(reconnecting?["message"]?.stringValue?.contains("another tsync is pushing") == true, "\(String(describing: reconnecting))")
        #expect(try await server.record("todo", "queued") == nil, "nothing is pushed while the lock is held")
        holder.signal(SIGTERM)
        #expect(await holder.wait(timeout: 30).status == 128 + SIGTERM, "the holder ended, and the lock with it")
        await watcher.waitFor("pushed", id: "queued", seconds: 60)
        #expect(try await server.record("todo", "queued") != nil)
        await #expect(watcher.stop().status == 130)
    }
}
