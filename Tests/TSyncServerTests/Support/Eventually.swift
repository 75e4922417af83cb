/// Waits until `condition` holds, looking again every `interval`, for at most `timeout`; true when
/// it held. A wait on the condition, not a sleep that guesses how long the machine takes (the same
/// helper as the end-to-end tests', which are another module).
@discardableResult
func eventually(
    timeout: Duration = .seconds(30), every interval: Duration = .milliseconds(10), _ condition: () async throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return true }
        guard ContinuousClock.now < deadline else { return false }
        try await Task.sleep(for: interval)
    }
}
