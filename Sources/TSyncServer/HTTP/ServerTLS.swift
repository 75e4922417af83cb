import Foundation
import HummingbirdTLS
import NIOSSL
import TSyncModel

/// The certificate chain and private key `tsync serve --tls-cert --tls-key` answers HTTPS with.
///
/// Both files are read and checked once, before anything listens, so a wrong file is a start-up
/// error that names it (a missing or unreadable file `.fileMissing`, one that is not a PEM
/// certificate or key, or a key that does not belong to the certificate, `.invalidConfiguration`)
/// rather than a failure of every handshake later.
public struct ServerTLS: Sendable {
    let configuration: TLSConfiguration
    /// The certificate file, for the log.
    public let certificatePath: String

    /// The messages say what is wrong with which file and what to give instead; never the TLS
    /// library's names for its failures.
    public init(certificatePath: String, keyPath: String) throws(TSyncError) {
        let certificateBytes = try Self.read(certificatePath, what: "TLS certificate")
        let keyBytes = try Self.read(keyPath, what: "TLS private key")
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMBytes(certificateBytes)
        } catch {
            throw TSyncError(
                .invalidConfiguration,
                "the TLS certificate \(certificatePath) is not a PEM certificate: give the file that begins with "
                    + "-----BEGIN CERTIFICATE----- (the server's certificate first, then any intermediates)")
        }
        guard !chain.isEmpty else {
            throw TSyncError(.invalidConfiguration, "the TLS certificate \(certificatePath) holds no PEM certificate")
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(bytes: keyBytes, format: .pem)
        } catch {
            throw TSyncError(
                .invalidConfiguration,
                "the TLS private key \(keyPath) is not a PEM private key: give the unencrypted key file that begins with "
                    + "-----BEGIN PRIVATE KEY----- (or RSA PRIVATE KEY, EC PRIVATE KEY)")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = Self.minimumVersion
        configuration.cipherSuites = Self.cipherSuites
        // Building the context checks that the key belongs to the first certificate.
        do {
            _ = try NIOSSLContext(configuration: configuration)
        } catch {
            throw TSyncError(
                .invalidConfiguration,
                "the TLS private key \(keyPath) does not belong to the certificate \(certificatePath): give the key the "
                    + "certificate was made with (they match when `openssl x509 -noout -pubkey -in \(certificatePath)` and "
                    + "`openssl pkey -pubout -in \(keyPath)` print the same key)")
        }
        self.configuration = configuration
        self.certificatePath = certificatePath
    }

    /// TLS 1.0 and 1.1 are deprecated (RFC 8996); every client tsync supports speaks 1.2 or 1.3.
    static let minimumVersion = TLSVersion.tlsv12

    /// TLS 1.2's suites with forward secrecy (ECDHE key exchange) and an AEAD cipher; TLS 1.3's
    /// suites all have both and are not configured here (docs/DESIGN.md §10.1).
    static let cipherSuites = [
        "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
    ].joined(separator: ":")

    private static func read(_ path: String, what: String) throws(TSyncError) -> [UInt8] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw TSyncError(.fileMissing, "the \(what) \(path) does not exist")
        }
        guard !isDirectory.boolValue, let data = FileManager.default.contents(atPath: path) else {
            throw TSyncError(.fileMissing, "the \(what) \(path) cannot be read (a directory, or no permission)")
        }
        return Array(data)
    }
}
