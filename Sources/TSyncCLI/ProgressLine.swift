#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Foundation
import Synchronization
import TSyncEngine

/// A one-line progress display on stderr for long pushes and pulls: only on a terminal, never with
/// `-q`, redrawn at most ten times a second, and erased when the command ends so the summary line
/// stands alone. "pushing 1152/50000 (2%, 3,400/s, 14 s left)": the rate is measured since the
/// phase began, and the time left is shown once the total is known and a second has passed.
final class ProgressLine: Sendable {
    private let enabled: Bool

    private struct State {
        var lastDraw = 0.0
        var drawn = false
        /// When each phase was first reported, and how far it was then.
        var started: [String: (time: Double, done: Int)] = [:]
    }

    private let state = Mutex(State())

    init(quiet: Bool) {
        enabled = !quiet && isatty(STDERR_FILENO) == 1
    }

    /// Whether the line is drawn: a workflow that reports to something else (`sync`'s summaries)
    /// still asks for no progress, and so for no count, when nothing would show it.
    var isShown: Bool { enabled }

    /// `handle` when the line is shown, else nil: a pull with no line to draw asks the server for
    /// no total (`$inlinecount`), which costs it a count of every record the pull may read.
    var events: (@Sendable (SyncSession.Event) -> Void)? {
        guard enabled else { return nil }
        return { @Sendable [self] event in handle(event) }
    }

    /// A `SyncProgress` that draws "VERB done/total" (or "VERB done" when the total is unknown).
    func reporter(_ verb: String) -> SyncProgress? {
        guard enabled else { return nil }
        return { [self] done, total in
            let now = Date().timeIntervalSince1970
            let start = state.withLock { state -> (time: Double, done: Int)? in
                let start = state.started[verb] ?? (now, done)
                state.started[verb] = start
                guard now - state.lastDraw >= 0.1 || (total.map { done >= $0 } ?? false) else { return nil }
                state.lastDraw = now
                state.drawn = true
                return start
            }
            guard let start else { return }
            FileHandle.standardError.write(Data(("\r\u{1B}[K" + Self.text(verb, done: done, total: total, since: start, now: now)).utf8))
        }
    }

    /// Draws the progress events of a `SyncSession` and erases the line when a push or pull ends.
    func handle(_ event: SyncSession.Event) {
        switch event {
        case .progress(let phase, let done, let total): reporter(phase)?(done, total)
        case .pushed, .pulled: finish()
        }
    }

    /// "VERB done[/total (P%)][, R/s][, T left]".
    static func text(_ verb: String, done: Int, total: Int?, since start: (time: Double, done: Int), now: Double) -> String {
        var text = "\(verb) \(done)"
        var details: [String] = []
        if let total, total > 0 {
            text += "/\(total)"
            details.append("\(min(100, done * 100 / total))%")
        }
        let elapsed = now - start.time
        if elapsed >= 1, done > start.done {
            let rate = Double(done - start.done) / elapsed
            details.append("\(Int(rate.rounded()))/s")
            if let total, total > done { details.append(duration(Double(total - done) / rate) + " left") }
        }
        return details.isEmpty ? text : text + " (" + details.joined(separator: ", ") + ")"
    }

    /// "45 s", "3 min 20 s", "2 h 5 min".
    static func duration(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.up))
        if whole < 60 { return "\(whole) s" }
        if whole < 3600 { return "\(whole / 60) min \(whole % 60) s" }
        return "\(whole / 3600) h \((whole % 3600) / 60) min"
    }

    /// Runs a workflow of the command's session; the line is erased when an error ends it, before
    /// or after a stop request, so that the message stands alone.
    func finishing<Result>(_ workflow: () async throws -> CommandSession.Outcome<Result>) async throws
        -> CommandSession.Outcome<Result>
    {
        do {
            let outcome = try await workflow()
            if outcome.result == nil { finish() }
            return outcome
        } catch {
            finish()
            throw error
        }
    }

    /// Erases the line, if anything was drawn.
    func finish() {
        guard enabled, state.withLock({ $0.drawn }) else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}
