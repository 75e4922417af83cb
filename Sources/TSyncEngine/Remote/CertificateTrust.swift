import NIOSSL

/// Which certificate authorities the client trusts for `https://` remotes.
///
/// The command line fills it from `SSL_CERT_FILE` and `SSL_CERT_DIR` (read there: the engine reads
/// no environment) and the store adds its `http.caFile` setting. As in OpenSSL, curl and git, a
/// file or directory from the environment replaces the system's CA bundle; `http.caFile` is trusted
/// in addition to whatever the roots are, so a store can add its private CA without losing the
/// public ones.
public struct CertificateTrust: Sendable, Equatable {
    /// A PEM bundle of CA certificates (`SSL_CERT_FILE`).
    public var file: String?
    /// A directory of hashed CA certificates, as `openssl rehash` makes it (`SSL_CERT_DIR`).
    public var directory: String?
    /// More PEM bundles trusted besides the roots (`http.caFile`).
    public var additionalFiles: [String]

    /// Trust in `file` or `directory` (else the system's roots) and in `additionalFiles` besides; an
    /// empty path counts as none.
    public init(file: String? = nil, directory: String? = nil, additionalFiles: [String] = []) {
        self.file = file.flatMap { $0.isEmpty ? nil : $0 }
        self.directory = directory.flatMap { $0.isEmpty ? nil : $0 }
        self.additionalFiles = additionalFiles
    }

    /// The client side of TLS with these roots.
    var tlsConfiguration: TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        var additional: [NIOSSLAdditionalTrustRoots] = additionalFiles.map { .file($0) }
        // swift-nio-ssl reads additional roots as PEM files, so a directory can only be the roots.
        switch (file, directory) {
        case (let file?, let directory?):
            configuration.trustRoots = .file(directory)
            additional.insert(.file(file), at: 0)
        case (let file?, nil): configuration.trustRoots = .file(file)
        case (nil, let directory?): configuration.trustRoots = .file(directory)
        case (nil, nil): break
        }
        configuration.additionalTrustRoots = additional
        return configuration
    }
}
