import Foundation
import Synchronization
import NIOCore
import NIOPosix
import NIOSSL
import TSyncModel

/// Why the server's certificate was refused: expired (or not yet valid), issued for other names,
/// or signed by a certificate authority this machine does not trust. Each has its own remedy, and
/// only the last is fixed by trusting a CA, so a message must tell them apart.
///
/// BoringSSL's verdict does not reach us (the handshake error says only "CERTIFICATE_VERIFY_FAILED"),
/// so after a refusal a second handshake to the same server (through the same proxy) hands the
/// chain the server presents to a verification callback of ours, which reads it and refuses it:
/// no request is ever sent on that connection. The dates and names are facts read from the chain;
/// "not trusted" is what is left when they are all right.
enum CertificateDiagnosis {
    /// One certificate of the presented chain, in the terms a message needs.
    struct Presented: Sendable {
        var subject: String
        var issuer: String
        var notBefore: Date
        var notAfter: Date
        /// The DNS names and addresses it is for: its subject alternative names, else its common name.
        var names: [String]

        init(_ certificate: NIOSSLCertificate) {
            subject = Self.describe(certificate.subjectName)
            issuer = Self.describe(certificate.issuerName)
            notBefore = Date(timeIntervalSince1970: TimeInterval(certificate.notValidBefore))
            notAfter = Date(timeIntervalSince1970: TimeInterval(certificate.notValidAfter))
            var names: [String] = []
            for name in certificate._subjectAlternativeNames() {
                let bytes = Array(name.contents)
                if name.nameType == .dnsName {
                    names.append(String(decoding: bytes, as: UTF8.self))
                } else if name.nameType == .ipAddress, let address = Self.address(bytes) {
                    names.append(address)
                }
            }
            if names.isEmpty, let common = certificate.subjectName.last(where: { $0.type == .commonName }) { names = [common.value] }
            self.names = names
        }

        private static func describe(_ name: [SSLCertificateName]) -> String {
            if let common = name.last(where: { $0.type == .commonName }) { return common.value }
            return name.map(\.value).joined(separator: ", ")
        }

        private static func address(_ bytes: [UInt8]) -> String? {
            let family: Int32
            switch bytes.count {
            case 4: family = AF_INET
            case 16: family = AF_INET6
            default: return nil
            }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard bytes.withUnsafeBytes({ inet_ntop(family, $0.baseAddress, &text, socklen_t(text.count)) }) != nil else { return nil }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }

        /// Whether it is for `host` (a leftmost `*` stands for one label, as RFC 6125 allows).
        func isFor(_ host: String) -> Bool {
            var host = host.lowercased()
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            return names.contains { name in
                let name = name.lowercased()
                if name == host { return true }
                guard name.hasPrefix("*."), let dot = host.firstIndex(of: ".") else { return false }
                return host[dot...] == name.dropFirst()
            }
        }
    }

    /// The error for a certificate refused by the handshake with `endpoint` (`hostnameOnly`: the
    /// chain was trusted but the name did not match), worded from the chain the server presents.
    static func error(
        endpoint: RemoteEndpoint, hostnameOnly: Bool, trust: CertificateTrust, proxy: RemoteProxy?, now: Date = Date()
    ) async -> TSyncError {
        let chain = await presentedChain(endpoint: endpoint, trust: trust, proxy: proxy)
        return explain(chain, endpoint: endpoint, hostnameOnly: hostnameOnly, now: now)
    }

    /// The message for a refused chain; `chain` nil when it could not be read a second time.
    static func explain(_ chain: [Presented]?, endpoint: RemoteEndpoint, hostnameOnly: Bool, now: Date) -> TSyncError {
        let host = endpoint.host
        func error(_ message: String, remedy: TSyncError.Remedy? = nil) -> TSyncError {
            Unanswered.refusedCertificate(fact: message, remedy: remedy).error
        }
        guard let chain, let leaf = chain.first else {
            if hostnameOnly {
                return error(
                    "the certificate of \(endpoint) is not valid for the name \(host) (name mismatch): use the host name the certificate was issued for, or have it reissued for this one"
                )
            }
            return error(
                "the certificate of \(endpoint) is not trusted: it is not signed by a certificate authority this machine trusts, or it has expired or is not yet valid",
                remedy: .trustCertificateAuthority)
        }
        let mismatch = leaf.isFor(host) ? nil : "it is for \(Self.list(leaf.names)), not \(host)"
        if hostnameOnly {
            return error(
                "the certificate of \(endpoint) does not match its name: \(mismatch ?? "it is not for \(host)") (name mismatch): use a name it was issued for, or have it reissued for \(host)"
            )
        }
        for (position, certificate) in chain.enumerated() {
            let whose = position == 0 ? "the certificate of \(endpoint)" : "the certificate of its issuer \(certificate.subject)"
            if certificate.notAfter < now {
                return error(
                    "\(whose) expired on \(Self.day(certificate.notAfter)) (it was valid from \(Self.day(certificate.notBefore))): the server's operator must renew it (trusting a certificate authority does not help)"
                )
            }
            if certificate.notBefore > now {
                return error(
                    "\(whose) is not valid before \(Self.day(certificate.notBefore)), and this machine's clock says \(Self.day(now)): check the clock here, or have the certificate reissued"
                )
            }
        }
        let top = chain[chain.count - 1]
        let signer =
            chain.count == 1 && leaf.subject == leaf.issuer
            ? "it is self-signed (\(leaf.subject)), not issued by a certificate authority this machine trusts"
            : "it was issued by \(top.issuer), which is not a certificate authority this machine trusts"
        return error(
            "the certificate of \(endpoint) is not trusted: \(signer)\(mismatch.map { "; also, \($0)" } ?? "")",
            remedy: .trustCertificateAuthority)
    }

    private static func list(_ names: [String]) -> String {
        names.isEmpty ? "no name" : names.joined(separator: ", ")
    }

    /// A date as `2026-11-25 17:54 UTC`.
    private static func day(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: date)
        func two(_ value: Int?) -> String { String(format: "%02d", value ?? 0) }
        return "\(parts.year ?? 0)-\(two(parts.month))-\(two(parts.day)) \(two(parts.hour)):\(two(parts.minute)) UTC"
    }

    // MARK: - The second handshake

    /// The chain the server presents, read by a handshake that our callback refuses; nil when the
    /// server (or the proxy) cannot be reached again within 10 s.
    static func presentedChain(endpoint: RemoteEndpoint, trust: CertificateTrust, proxy: RemoteProxy?) async -> [Presented]? {
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(configuration: trust.tlsConfiguration)
        } catch {
            return nil
        }
        var host = endpoint.host
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let isAddress = host.contains(":") || host.allSatisfy { $0.isNumber || $0 == "." }
        let serverName = isAddress ? nil : host
        let seen = SeenChain()
        let makeTLS: @Sendable () throws -> NIOSSLClientHandler = {
            try NIOSSLClientHandler(context: context, serverHostname: serverName) { certificates, verdict in
                seen.set(certificates.map(Presented.init))
                verdict.succeed(NIOSSLVerificationResult.failed)
            }
        }
        let target = endpoint.host + ":\(endpoint.port)"
        let connect: String? = proxy.map { proxy in
            var request = "CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n"
            if let user = proxy.username {
                request += "Proxy-Authorization: Basic \(Data("\(user):\(proxy.password ?? "")".utf8).base64EncodedString())\r\n"
            }
            return request + "\r\n"
        }
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(5))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let connect {
                        try channel.pipeline.syncOperations.addHandler(TunnelOpener(request: connect, makeTLS: makeTLS))
                    } else {
                        try channel.pipeline.syncOperations.addHandler(try makeTLS())
                    }
                }
            }
        do {
            let channel = try await bootstrap.connect(host: proxy?.host ?? host, port: proxy?.port ?? endpoint.port).get()
            channel.eventLoop.scheduleTask(in: .seconds(10)) { channel.close(promise: nil) }
            try? await channel.closeFuture.get()
        } catch {
            return nil
        }
        return seen.chain
    }

    /// The chain, as the verification callback saw it (on an event loop).
    private final class SeenChain: Sendable {
        private let seen = Mutex<[Presented]?>(nil)
        var chain: [Presented]? { seen.withLock { $0 } }
        func set(_ chain: [Presented]) { seen.withLock { $0 = chain } }
    }

    /// Asks the proxy for a tunnel (`CONNECT`), then hands the connection to TLS.
    private final class TunnelOpener: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        private let request: String
        private let makeTLS: @Sendable () throws -> NIOSSLClientHandler
        private var received = ByteBuffer()

        init(request: String, makeTLS: @escaping @Sendable () throws -> NIOSSLClientHandler) {
            self.request = request
            self.makeTLS = makeTLS
        }

        func channelActive(context: ChannelHandlerContext) {
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: request)), promise: nil)
            context.fireChannelActive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var chunk = unwrapInboundIn(data)
            received.writeBuffer(&chunk)
            let text = String(buffer: received)
            guard text.contains("\r\n\r\n") else {
                if received.readableBytes > 16384 { context.close(promise: nil) }
                return
            }
            guard text.hasPrefix("HTTP/1.1 200") || text.hasPrefix("HTTP/1.0 200") else {
                context.close(promise: nil)
                return
            }
            do {
                try context.pipeline.syncOperations.addHandler(try makeTLS())
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            } catch {
                context.close(promise: nil)
            }
        }
    }
}
