import Foundation
import TSyncModel

/// Waits until `condition` holds, looking again every `interval`, for at most `timeout`; true when
/// it held. A wait on the condition, not a sleep that guesses how long the machine takes: on an
/// idle machine it returns at once, on a loaded one it waits longer, and the caller's expectation
/// says what was missing when the time runs out.
///
/// The only sleep the end-to-end tests use for synchronisation is the pause between looks here.
@discardableResult
func eventually(
    timeout: Duration = .seconds(30), every interval: Duration = .milliseconds(25), _ condition: () async throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return true }
        guard ContinuousClock.now < deadline else { return false }
        try await Task.sleep(for: interval)
    }
}

/// Like `eventually`, for a value: the first value `look` gives that `accept` takes, or the last
/// one it gave when the time ran out (for the caller's expectation to show).
func eventually<Value>(
    timeout: Duration = .seconds(30), every interval: Duration = .milliseconds(25), _ look: () async throws -> Value,
    until accept: (Value) -> Bool
) async throws -> Value {
    let deadline = ContinuousClock.now + timeout
    while true {
        let value = try await look()
        if accept(value) || ContinuousClock.now >= deadline { return value }
        try await Task.sleep(for: interval)
    }
}

/// Waits until the clock has passed `time` (timestamps are whole milliseconds, and a server may
/// stamp writes a little ahead of its clock to keep them in order): a time taken after this is
/// later than `time`. For a test that needs a point between two writes.
func waitForTheClock(toPass time: Timestamp) async throws {
    try await eventually(every: .milliseconds(1)) { Timestamp.now() > time }
}

/// The `updatedAt` the server at `base` gave a record, nil when it has none.
func serverUpdatedAt(_ base: String, _ table: String, _ id: String, token: String? = nil) async throws -> Timestamp? {
    let reply = try await HTTP.send("GET", base + "/tables/\(table)/\(id)", token: token)
    guard reply.status == 200 else { return nil }
    return try JSONParser.parse(reply.body).objectValue?["updatedAt"]?.stringValue.flatMap { Timestamp(iso8601: $0) }
}
