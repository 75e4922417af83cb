import TSyncModel

/// Everything about reaching a store's remote that does not come from the store: the token that
/// overrides the saved one, the deadline of one exchange, the CAs trusted, the proxies, and who
/// sees each exchange. One value, handed whole to `SyncSession` (or
/// `CommandSession.syncSession`), so a session is complete when it is made. The remote's URL, the
/// saved token and the device token are the store's (`tsync remote`, `tsync login`).
public struct RemoteSettings: Sendable {
    /// A token to send instead of the saved one (the command line passes `TSYNC_TOKEN`); an empty
    /// one is none.
    public let tokenOverride: String?
    /// The deadline of one HTTP exchange, body included.
    public let timeout: Duration
    /// The CAs trusted for an https remote (the command line passes `SSL_CERT_FILE`/`SSL_CERT_DIR`);
    /// the store's `http.caFile` is added to them.
    public let trust: CertificateTrust
    /// The proxies to reach the remote through (the command line reads them from the environment).
    public let proxies: ProxySettings
    /// Sees every HTTP exchange with the server (`tsync -v`).
    public let exchanges: RemoteExchange.Observer?

    /// The deadline of one HTTP exchange unless the caller gives another.
    public static let defaultTimeout = Duration.seconds(30)

    /// Settings for reaching a remote; a usage error for a timeout under a second.
    public init(
        tokenOverride: String? = nil, timeout: Duration = defaultTimeout, trust: CertificateTrust = CertificateTrust(),
        proxies: ProxySettings = .direct, exchanges: RemoteExchange.Observer? = nil
    ) throws(TSyncError) {
        guard timeout >= .seconds(1) else { throw .usage("the request timeout must be at least 1 second") }
        self.tokenOverride = tokenOverride.flatMap { $0.isEmpty ? nil : $0 }
        self.timeout = timeout
        self.trust = trust
        self.proxies = proxies
        self.exchanges = exchanges
    }

    /// Direct, with the saved token and the default timeout.
    public static let standard = Self(
        tokenOverride: nil, timeoutUnchecked: defaultTimeout, trust: CertificateTrust(), proxies: .direct, exchanges: nil)

    private init(
        tokenOverride: String?, timeoutUnchecked timeout: Duration, trust: CertificateTrust, proxies: ProxySettings,
        exchanges: RemoteExchange.Observer?
    ) {
        self.tokenOverride = tokenOverride
        self.timeout = timeout
        self.trust = trust
        self.proxies = proxies
        self.exchanges = exchanges
    }
}
