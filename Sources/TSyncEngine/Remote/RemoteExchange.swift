/// One HTTP exchange with the server, as `tsync -v` shows it. It carries no header and no body,
/// so neither a token nor a password can be in it.
public struct RemoteExchange: Sendable {
    /// Called once per request with what it cost (`-v` prints it, the journal counts it).
    public typealias Observer = @Sendable (RemoteExchange) -> Void

    /// The HTTP method.
    public var method: String
    /// The URL requested, without credentials.
    public var url: String
    /// `HOST:PORT` of the proxy it went through; nil when direct.
    public var proxy: String?
    /// Nil when no answer came (refused connection, timeout).
    public var status: Int?
    /// Bytes of the request body.
    public var bytesSent: Int
    /// Bytes of the answer's body.
    public var bytesReceived: Int
    /// How long the exchange took.
    public var duration: Duration
}
