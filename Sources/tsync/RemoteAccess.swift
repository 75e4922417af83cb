import Foundation
import TSyncEngine
import TSyncModel

/// The one place the command line turns its environment into a `SyncSession`.
enum RemoteAccess {
    /// Overrides the token saved by `tsync login` (CI, where the token comes from a secret store).
    static let tokenVariable = "TSYNC_TOKEN"

    static func session(
        _ store: LocalStore, stopRequest: StopRequest? = nil, events: (@Sendable (SyncSession.Event) -> Void)? = nil
    ) throws(TSyncError) -> SyncSession {
        try SyncSession(
            store: store, tokenOverride: ProcessInfo.processInfo.environment[tokenVariable], stopRequest: stopRequest,
            events: events)
    }
}
