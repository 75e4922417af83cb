import Foundation
import TSyncEngine
import TSyncModel

/// What `tsync watch` shows of its events, one batch at a time (batches come from several loops
/// at once; an actor keeps their lines and `--exec` runs whole and in order).
actor WatchOutput {
    let json: Bool
    let exec: String?
    /// Called once stdout's reader has gone (EPIPE with SIGPIPE ignored): the watch ends.
    let readerGone: @Sendable () -> Void

    init(json: Bool, exec: String?, readerGone: @escaping @Sendable () -> Void) {
        self.json = json
        self.exec = exec
        self.readerGone = readerGone
    }

    func show(_ events: [LiveEvent]) async {
        var json: [UInt8] = []
        var lines = ""
        var times = EventTimes()
        for event in events {
            if self.json {
                Self.write(event, to: &json, times: &times)
            } else if let line = Self.line(event) {
                lines += line + "\n"
            } else {
                Console.note(Self.note(event))
            }
        }
        var written = true
        if !json.isEmpty { written = json.withUnsafeBufferPointer { Console.writeAll(STDOUT_FILENO, $0) } }
        if !lines.isEmpty { written = Console.writeAll(STDOUT_FILENO, lines) && written }
        if !written { readerGone() }
        let changes = events.filter { Self.isChange($0.kind) }
        guard let exec, !changes.isEmpty else { return }
        var input: [UInt8] = []
        for change in changes { Self.write(change, to: &input, times: &times) }
        await run(exec, input: input)
    }

    static func isChange(_ kind: LiveEvent.Kind) -> Bool {
        switch kind {
        case .pulled, .deleted, .pushed, .conflict, .settled: true
        case .connected, .reconnecting, .polling, .resynced: false
        }
    }

    /// `--json`: the event's line (docs/DESIGN.md §3; the fields are an interface), in the
    /// serializer's key order (`id` first, then code-point order), written straight to bytes: a
    /// catch-up after a reconnect writes one per record, and an object per event built and
    /// sorted was a seventh of its time.
    static func write(_ event: LiveEvent, to output: inout [UInt8], times: inout EventTimes) {
        func member(_ key: String, _ value: String?, first: Bool = false) {
            if !first { output.append(UInt8(ascii: ",")) }
            output.append(UInt8(ascii: "\""))
            output.append(contentsOf: key.utf8)
            output.append(contentsOf: "\":".utf8)
            if let value { JSONSerializer.writeString(value, to: &output) } else { output.append(contentsOf: "null".utf8) }
        }
        func member(_ key: String, _ number: Double?) {
            guard let number else { return }
            output.append(contentsOf: ",\"\(key)\":".utf8)
            JSONSerializer.write(.double(number), to: &output)
        }
        output.append(UInt8(ascii: "{"))
        member("id", event.id, first: true)
        member("at", times.iso8601(event.at))
        if let resync = event.resync { output.append(contentsOf: ",\"dropped\":\(resync.dropped)".utf8) }
        member("event", event.kind.rawValue)
        if let resync = event.resync { member("horizon", resync.horizon.iso8601) }
        member("interval", event.interval)
        if let resync = event.resync { output.append(contentsOf: ",\"kept\":\(resync.kept)".utf8) }
        if let message = event.message { member("message", message) }
        if let operation = event.operation { member("operation", operation) }
        if let policy = event.policy { member("policy", policy) }
        if let queryID = event.queryID { member("queryId", queryID) }
        member("retryIn", event.retryIn.map { ($0 * 1000).rounded() / 1000 })
        member("table", event.table)
        if let version = event.version { member("version", version) }
        output.append(contentsOf: "}\n".utf8)
    }

    /// The last event time written and its text: a page's events share one time.
    struct EventTimes {
        private var last: (Timestamp, String)?

        mutating func iso8601(_ time: Timestamp) -> String {
            if let last, last.0 == time { return last.1 }
            let text = time.iso8601
            last = (time, text)
            return text
        }
    }

    /// The stdout line of a change; nil for what goes to stderr.
    static func line(_ event: LiveEvent) -> String? {
        let item = "\(event.table ?? "")/\(event.id ?? "")"
        switch event.kind {
        case .pulled: return "pulled \(item)"
        case .deleted: return "deleted \(item)"
        case .pushed: return "pushed \(event.operation ?? "operation") \(item)"
        case .conflict: return "conflict \(event.operation ?? "operation") \(item): \(event.message ?? "")"
        case .settled: return "settled \(item) by \(event.policy ?? "policy")"
        case .connected, .reconnecting, .polling, .resynced: return nil
        }
    }

    static func note(_ event: LiveEvent) -> String {
        switch event.kind {
        case .connected: return "watching (connected)"
        case .reconnecting:
            let wait = event.retryIn ?? 0
            return
                "\(event.message ?? "the server cannot be reached"); reconnecting in \(String(format: wait < 9.95 ? "%.1f" : "%.0f", wait)) s"
        case .polling:
            return "the server has no live route: asking it every \(String(format: "%g", event.interval ?? 0)) s"
        case .resynced:
            guard let resync = event.resync else { return "" }
            return SyncFormat.horizonLine(event.table ?? "", resync)
        default: return line(event) ?? ""
        }
    }

    /// Runs `sh -c command` with `input` on its stdin; a failure is reported, never fatal.
    private func run(_ command: String, input: [UInt8]) async {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        let pipe = Pipe()
        process.standardInput = pipe
        let status: Int32 = await withCheckedContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                Console.warning("--exec: cannot run sh: \(error.localizedDescription)")
                continuation.resume(returning: -1)
                return
            }
            // Written by a thread of its own that blocks SIGPIPE: a command that does not read
            // its input makes the write fail (EPIPE) instead of killing tsync, and the signal
            // left pending ends with the thread. (Ignoring SIGPIPE would be inherited by the
            // command's own children.)
            let handle = pipe.fileHandleForWriting
            Thread {
                var signals = sigset_t()
                sigemptyset(&signals)
                sigaddset(&signals, SIGPIPE)
                pthread_sigmask(SIG_BLOCK, &signals, nil)
                try? handle.write(contentsOf: Data(input))
                try? handle.close()
            }.start()
        }
        if status > 0 { Console.warning("--exec: the command exited \(status); watching goes on") }
    }
}
