import Foundation
import TSyncEngine
import TSyncModel

/// What `tsync watch` shows of its events, one batch at a time (batches come from several loops
/// at once; an actor keeps their lines and `--exec` runs whole and in order).
actor WatchOutput {
    let json: Bool
    let exec: String?

    init(json: Bool, exec: String?) {
        self.json = json
        self.exec = exec
    }

    func show(_ events: [LiveEvent]) async {
        var lines = ""
        for event in events {
            if json {
                lines += JSONReports.line(Self.object(event))
            } else if let line = Self.line(event) {
                lines += line + "\n"
            } else {
                Console.note(Self.note(event))
            }
        }
        if !lines.isEmpty { Console.write(lines) }
        let changes = events.filter { Self.isChange($0.kind) }
        if let exec, !changes.isEmpty { await run(exec, input: changes.map { JSONReports.line(Self.object($0)) }.joined()) }
    }

    static func isChange(_ kind: LiveEvent.Kind) -> Bool {
        switch kind {
        case .pulled, .deleted, .pushed, .conflict, .settled: true
        case .connected, .reconnecting, .polling: false
        }
    }

    /// `--json`: the event's object (docs/DESIGN.md §3; the fields are an interface).
    static func object(_ event: LiveEvent) -> JSONValue {
        var object: [String: JSONValue] = ["event": .string(event.kind.rawValue), "at": .string(event.at.iso8601)]
        object["table"] = event.table.map(JSONValue.string) ?? .null
        object["id"] = event.id.map(JSONValue.string) ?? .null
        if let queryID = event.queryID { object["queryId"] = .string(queryID) }
        if let version = event.version { object["version"] = .string(version) }
        if let operation = event.operation { object["operation"] = .string(operation) }
        if let policy = event.policy { object["policy"] = .string(policy) }
        if let message = event.message { object["message"] = .string(message) }
        if let retryIn = event.retryIn { object["retryIn"] = .double((retryIn * 1000).rounded() / 1000) }
        if let interval = event.interval { object["interval"] = .double(interval) }
        return .object(object)
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
        case .connected, .reconnecting, .polling: return nil
        }
    }

    static func note(_ event: LiveEvent) -> String {
        switch event.kind {
        case .connected: return "watching (connected)"
        case .reconnecting:
            return
                "reconnecting: \(event.message ?? "the server cannot be reached") (again in \(String(format: "%.1f", event.retryIn ?? 0)) s)"
        case .polling:
            return "the server has no live route: asking it every \(String(format: "%g", event.interval ?? 0)) s"
        default: return line(event) ?? ""
        }
    }

    /// Runs `sh -c command` with `input` on its stdin; a failure is reported, never fatal.
    private func run(_ command: String, input: String) async {
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
                try? handle.write(contentsOf: Data(input.utf8))
                try? handle.close()
            }.start()
        }
        if status > 0 { Console.warning("--exec: the command exited \(status); watching goes on") }
    }
}
