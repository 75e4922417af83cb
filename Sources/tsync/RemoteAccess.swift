import TSyncEngine
import TSyncModel

/// Opens the connection to the store's remote for one command: the URL from the store's
/// configuration and the token from `TSYNC_TOKEN` or the saved credentials.
enum RemoteAccess {
    static func endpoint(_ store: LocalStore) throws(TSyncError) -> RemoteEndpoint {
        guard let remote = try store.configuration().remote else {
            throw .failure("no remote is set for this store: run `tsync remote URL` first")
        }
        return try RemoteEndpoint(remote)
    }

    /// Runs `body` with a client for the store's remote (one connection pool for the command).
    static func with<Result: Sendable>(
        _ store: LocalStore, _ body: (RemoteClient) async throws(TSyncError) -> Result
    ) async throws(TSyncError) -> Result {
        let endpoint = try endpoint(store)
        let token = try Credentials.token(storeDirectory: store.location.directory, remote: endpoint)
        return try await RemoteClient.withRemoteClient(endpoint: endpoint, token: token, body)
    }
}
