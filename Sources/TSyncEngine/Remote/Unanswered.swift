import TSyncModel

/// An exchange that brought no answer tsync can take as a sync server's: no answer at all, or one
/// it cannot explain (docs/DESIGN.md §2.4: an answer tsync cannot explain is no answer). Every such
/// outcome is exit 3 (one is a bad setting, exit 1), settles nothing and records nothing as
/// failed: what was sent stays in flight, what was not stays pending. This is the one place that
/// words them, what happened and then what became of what was sent.
package enum Unanswered: Sendable {
    /// No answer: the connection failed or timed out (`cause` in words, `ConnectionFailure`).
    case unreachable(RemoteEndpoint, cause: String, neverSent: Bool)
    /// The remote's host name does not resolve (`description`: `TransportFailure`'s words).
    case unresolvedHost(RemoteEndpoint, description: String)
    /// The TLS handshake failed, for `why`; no request went.
    case handshakeFailed(RemoteEndpoint, why: String)
    /// A certificate file given to trust cannot be loaded: a bad setting, no request went.
    case unloadableCAFile
    /// The handshake refused the server's certificate (`fact`: `CertificateDiagnosis`'s words).
    case refusedCertificate(fact: String, remedy: TSyncError.Remedy?)
    /// The proxy, not the server, failed (`fact` names it); the request never reached the server.
    case proxyFailed(fact: String)
    /// Something answered, but its bytes cannot be decoded (`what`: why).
    case undecodable(RemoteEndpoint, what: String)
    /// The server said "not now" (a 5xx, 429, a cut page): `fact` is what it answered to what.
    case notNow(fact: String, neverSent: Bool)
    /// A redirect (a sync server never sends one): `request` is the method and path.
    case redirected(RemoteEndpoint, request: String, target: String?)
    /// An answer that says no v2 route is at the URL (`answered`: to which request, what).
    /// `sentNothing` when said by the check before any write (`ServerCheck`).
    case notASyncServer(RemoteEndpoint, answered: String, sentNothing: Bool)
    /// A success whose body is not JSON where the protocol's JSON belongs (`instead`: what was due).
    case notJSON(RemoteEndpoint, status: Int, contentType: String, instead: String)
    /// An answer no sync server gives, to writes whose fate it leaves unknown.
    case unexplained(RemoteEndpoint, what: String, operations: Int)
    /// A batch answered with a success status but no results that can be read.
    case unreadableBatch(RemoteEndpoint, status: Int)
    /// An answer of the history route no sync server gives (nothing is written by reading it).
    case unexplainedHistory(RemoteEndpoint, what: String)
    /// `request` (its method and path) was answered with another request's answer, `asked` times
    /// (`EchoCheck`); `write` when it may have been applied all the same.
    case anotherRequests(RemoteEndpoint, request: String, asked: Int, write: Bool)

    /// The outcome as the error a command ends with.
    package var error: TSyncError {
        let lost = "nothing was lost"
        let sent = "nothing was sent, " + lost
        let later = lost + ", try again later"
        let queued = lost + ", the operations stay queued"
        let fromAnswer = "did not answer as a sync server does: "
        switch self {
        case .unreachable(let endpoint, let cause, let neverSent):
            return TSyncError(.unreachable, "cannot reach the server at \(endpoint) (\(cause)); \(later)", requestNeverSent: neverSent)
        case .unresolvedHost(let endpoint, let description):
            return TSyncError(
                .unreachable, "\(description) for \(endpoint): check the host name of the remote URL; \(lost)", requestNeverSent: true)
        case .handshakeFailed(let endpoint, let why):
            return TSyncError(.unreachable, "the TLS handshake failed with \(endpoint): \(why); \(sent)", requestNeverSent: true)
        case .unloadableCAFile:
            return TSyncError(
                .failure, "a CA certificate file given to trust cannot be loaded (is it PEM?); \(sent)", requestNeverSent: true)
        case .refusedCertificate(let fact, let remedy):
            var error =
                remedy.map { TSyncError(.unreachable, fact + "; " + sent, remedy: $0) } ?? TSyncError(.unreachable, fact + "; " + sent)
            error.requestNeverSent = true
            return error
        case .proxyFailed(let fact):
            return TSyncError(.unreachable, fact + "; " + later, requestNeverSent: true)
        case .undecodable(let endpoint, let what):
            return TSyncError(
                .unreachable, "\(endpoint) answered, but tsync cannot decode the answer: \(what); \(lost), what was sent stays queued")
        case .notNow(let fact, let neverSent):
            return TSyncError(.unreachable, fact + "; " + later, requestNeverSent: neverSent)
        case .redirected(let endpoint, let request, let target):
            let to = target.map { " to \($0)" } ?? ""
            return TSyncError(
                .unreachable, "\(endpoint) \(fromAnswer)it redirected \(request)\(to) (a captive portal or a proxy?); \(queued)")
        case .notASyncServer(let endpoint, let answered, let sentNothing):
            // A write answered so may have reached something: said as an answer no sync server gives.
            let lead = sentNothing ? "" : fromAnswer + "it "
            return TSyncError(
                .unreachable,
                "\(endpoint) \(lead)does not look like a tsync or Mobile Apps v2 server (it answered \(answered)); check the remote URL and its path; \(sentNothing ? sent : queued)",
                requestNeverSent: sentNothing)
        case .notJSON(let endpoint, let status, let contentType, let instead):
            return TSyncError(
                .unreachable,
                "\(endpoint) answered HTTP \(status) with \(contentType) that is not JSON instead of \(instead): it does not look like a tsync or Mobile Apps v2 server (a captive portal or a proxy?); \(queued)"
            )
        case .unexplained(let endpoint, let what, let operations):
            let them = operations == 1 ? "the operation stays" : "the operations stay"
            return TSyncError(.unreachable, "\(endpoint) \(fromAnswer)\(what); \(lost), \(them) queued (push again)")
        case .unreadableBatch(let endpoint, let status):
            return TSyncError(
                .unreachable, "\(endpoint) answered the batch with HTTP \(status) but no readable results; \(lost), push again")
        case .unexplainedHistory(let endpoint, let what):
            return TSyncError(.unreachable, "\(endpoint) \(fromAnswer)\(what); nothing was changed")
        case .anotherRequests(let endpoint, let request, let asked, let write):
            let times = asked == 1 ? "" : " \(asked) times"
            return TSyncError(
                .unreachable,
                "\(endpoint) answered \(request) with the answer to another request\(times) (it echoes another request's \(EchoCheck.header): a cache or proxy replaying answers?); nothing of it was taken, \(write ? queued : later)"
            )
        }
    }
}

extension RemoteEndpoint {
    /// An answer tsync cannot explain: the server, or something in its place, answered in a way no
    /// sync server does, so what it did with the writes is unknown. Like a lost answer
    /// (docs/DESIGN.md §2.4, §7) it stops the push with exit 3 and leaves what was sent in flight:
    /// the next push re-sends exactly that, and nothing is settled or recorded as failed.
    package func unexplained(_ what: String, operations: Int = 1) -> TSyncError {
        Unanswered.unexplained(self, what: what, operations: operations).error
    }
}
