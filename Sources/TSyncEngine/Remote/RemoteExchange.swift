/// One HTTP exchange with the server, as `tsync -v` shows it. It carries no header and no body,
/// so neither a token nor a password can be in it.
public struct RemoteExchange: Sendable {
    public typealias Observer = @Sendable (RemoteExchange) -> Void

    public var method: String
    public var url: String
    /// `HOST:PORT` of the proxy it went through; nil when direct.
    public var proxy: String?
    /// Nil when no answer came (refused connection, timeout).
    public var status: Int?
    public var bytesSent: Int
    public var bytesReceived: Int
    public var duration: Duration
}
