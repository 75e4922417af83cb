import Foundation
import Synchronization
import TSyncModel

/// Whether the remote has shown, in this command, that it speaks the v2 table protocol: nothing is
/// written to it before it has (docs/DESIGN.md §4, "Not a sync server").
///
/// A mistyped URL can reach a static web server, a reverse proxy's page or another API: a write
/// sent there is lost at best and misread at worst, and its answer (an HTML 404 or 501) once went
/// into the error table. So the first write of a command is preceded by the batch route's discovery
/// (`GET /tables/$batch`, which `push` sends anyway) and, when that answer says nothing either way,
/// one GET of a table with `$top=0`: at most one request more per command. A page read that
/// succeeded proves it as well. Shared by the copies of one `RemoteClient`.
final class ServerCheck: Sendable {
    private let proven = Mutex(false)

    var isProven: Bool { proven.withLock { $0 } }

    func prove() { proven.withLock { $0 = true } }

    /// Whether an answer to a GET of a `/tables/…` route is one a v2 server gives: JSON (a page, the
    /// batch route's description, or an error body, such as a plain v2 server's 404 for a table it
    /// does not have), or a bare 401/403 (a server that wants a login first). An HTML page, a body
    /// that is not JSON or an empty answer to anything else is what a static web server or a proxy
    /// answers. tsync serve's own "no such endpoint" 404 (a wrong path prefix) is refused before
    /// this, where every answer is looked at (`RemoteClient.notTheProtocol`).
    static func speaksTheProtocol(_ answer: HTTPAnswer) -> Bool {
        switch answer.json {
        case .object?, .array?: return true
        case nil: break
        default: return false
        }
        return [401, 403].contains(answer.status) && !answer.hasBody
    }
}

extension RemoteClient {
    /// What `checkServer` did: nothing (proven before), or the discovery it sent, with the batch
    /// route it found there.
    enum ServerCheckResult {
        case provenBefore
        case discovered(BatchCapabilities?)
    }

    /// Makes sure the remote speaks the v2 protocol before anything is written to it: throws
    /// `.unreachable` with what it answered ("does not look like a tsync or Mobile Apps v2 server")
    /// when it does not. Only GETs are sent, so nothing can have been applied anywhere.
    package func checkServer() async throws(TSyncError) {
        _ = try await proveServer()
    }

    func proveServer() async throws(TSyncError) -> ServerCheckResult {
        if serverCheck.isProven { return .provenBefore }
        // No token, no login to ask for: a 401 here is an answer like any other (login checks the
        // server before it has a token). With a token, a refusal is thrown as it always is.
        let authenticated = token != nil
        let discoveryURL = endpoint.url(path: ["tables", "/$batch"])
        let discovery = try await send(.GET, discoveryURL, body: nil, authenticated: authenticated, discovering: true)
        let capabilities = Self.capabilities(discovery)
        if capabilities != nil || ServerCheck.speaksTheProtocol(discovery) {
            serverCheck.prove()
            return .discovered(capabilities)
        }
        // A plain v2 server may answer an HTML 404 for the batch route it does not have; a table's
        // route it must answer as the protocol says.
        var last = (answer: discovery, url: discoveryURL)
        if let probeTable {
            let url = endpoint.url(path: ["tables", probeTable], query: [("$top", "0")])
            let probe = try await send(.GET, url, body: nil, authenticated: authenticated, discovering: true)
            if ServerCheck.speaksTheProtocol(probe) {
                serverCheck.prove()
                return .discovered(nil)
            }
            last = (probe, url)
        }
        throw notASyncServer(last.answer, method: .GET, url: last.url, sentNothing: true)
    }
}
