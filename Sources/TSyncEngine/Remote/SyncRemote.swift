import TSyncModel

/// What push, pull and resolve need of a sync server. `RemoteClient` speaks it over HTTP; the
/// engine's unit tests put a scripted server behind it, so the rules of `Pusher` and `Puller`
/// (what stays in flight, what goes back to pending, when a pull stops) are tested without a
/// network, while the end-to-end tests keep driving the real server.
///
/// Each call answers what the server answered, or throws `.unreachable` when no answer came (the
/// request may or may not have been applied) and `.unauthorized` when the server refused the
/// token (nothing was applied).
package protocol SyncRemote: Sendable {
    /// The server, as messages name it.
    var endpoint: RemoteEndpoint { get }

    func readPage(_ request: PageRequest) async throws(TSyncError) -> Page
    func read(table: String, id: String) async throws(TSyncError) -> RemoteAnswer
    func insert(table: String, item: [String: JSONValue]) async throws(TSyncError) -> RemoteAnswer
    func update(table: String, id: String, item: [String: JSONValue], version: String?) async throws(TSyncError) -> RemoteAnswer
    func delete(table: String, id: String, version: String?) async throws(TSyncError) -> RemoteAnswer
    func undelete(table: String, id: String, version: String?) async throws(TSyncError) -> RemoteAnswer

    /// The server's batch route, nil when it has none (every write then goes alone).
    func batchCapabilities() async throws(TSyncError) -> BatchCapabilities?
    func batch(_ operations: [BatchOperation], atomic: Bool) async throws(TSyncError) -> BatchReply

    /// The table's schema document (`GET /tables/$schema/{table}`, docs/DESIGN.md §16), asked
    /// only when a page announced one; nil when the server answers anything but one.
    func tableSchema(table: String) async throws(TSyncError) -> JSONValue?
}

extension SyncRemote {
    package func tableSchema(table: String) async throws(TSyncError) -> JSONValue? { nil }
}

extension RemoteClient: SyncRemote {}
