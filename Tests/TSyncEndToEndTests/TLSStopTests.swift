import Foundation
import Testing

/// A stop of `serve --tls-cert` is as quick as a plain one when a connection's client has gone
/// without a close_notify: the server closed the connection after a `Connection: close` answer,
/// and swift-nio-ssl waited 5 s for the client's close_notify, which curl (and a balancer that
/// went away) never sends; the stop waited for that connection.
@Suite(.serialized) struct TLSStopTests {
    @Test func aClientGoneWithoutCloseNotifyDoesNotHoldTheStop() async throws {
        let authority = try await CertificateAuthority()
        let server = try await authority.serve(certificate: authority.serverCertificate)
        defer { server.stop() }
        let url = try await server.waitForAddress()
        let port = try #require(URLComponents(string: url)?.port)
        // HTTP/1.0: the server closes the connection after its answer.
        let answer = try await ChildProcess.output(
            "/usr/bin/curl",
            [
                "-sS", "--http1.0", "--max-time", "15", "--cacert", authority.certificate, "-o", "/dev/null", "-w", "%{http_code}",
                "https://localhost:\(port)/health",
            ])
        #expect(answer.stdout == "200", "\(answer)")
        #expect(try await server.terminate(signal: SIGTERM) == 0)

        // The server's own clock: the test's scheduling on a loaded machine does not count.
        let lines = server.log.split(separator: "\n")
        let stopping = try #require(lines.first { $0.contains("stopping on SIGTERM") }.flatMap(Self.time), "\(server.log)")
        let stopped = try #require(lines.last { $0.hasSuffix(" stopped") }.flatMap(Self.time), "\(server.log)")
        #expect(stopped.timeIntervalSince(stopping) < 2, "the stop took \(stopped.timeIntervalSince(stopping)) s:\n\(server.log)")
    }

    /// A text log line's time (`2026-01-02T03:04:05.678Z info …`).
    private static func time(_ line: Substring) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return line.split(separator: " ").first.flatMap { formatter.date(from: String($0)) }
    }
}
