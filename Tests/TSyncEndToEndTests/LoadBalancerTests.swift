import Foundation
import Testing
import TSyncModel

/// Two `tsync serve` instances on one PostgreSQL behind a real haproxy that terminates TLS, as
/// operators deploy it: stores reach only the balancer, over https with the test CA; the
/// instances trust it as a proxy (`--trusted-proxy`), so next-page links say https. A pull walks
/// pages served by both instances, a watch held on one hears a write through the other, and an
/// instance killed under the balancer costs a store at most a retried command, never a record.
// Needs a PostgreSQL server (TSYNC_TEST_POSTGRES_URL), haproxy and openssl.
@Suite(
    .serialized, .enabled(if: PostgresFixture.adminURL != nil, "TSYNC_TEST_POSTGRES_URL is not set: no PostgreSQL to test against"),
    .enabled(if: HAProxy.executable != nil, "haproxy is not installed (apt-get install haproxy): no balancer to test behind"))
struct LoadBalancerTests {
    @Test func twoInstancesBehindHAProxyTerminatingTLS() async throws {
        let authority = try await CertificateAuthority()
        var trust = NetworkTests.systemTrust
        trust["SSL_CERT_FILE"] = authority.certificate
        let environment = trust
        try await PostgresFixture.withFreshDatabase { database in
            let options = ["serve", "--db", database, "--no-auth", "--port", "0", "--trusted-proxy", "127.0.0.1"]
            let first = try ServerProcess(arguments: options, log: authority.directory.path)
            defer { first.stop() }
            let second = try ServerProcess(arguments: options, log: authority.directory.path)
            defer { second.stop() }
            let instances = [try await first.waitForAddress(), try await second.waitForAddress()]
            let balancer = try await HAProxy(backends: instances, authority: authority)
            defer { balancer.stop() }
            let url = balancer.url
            #expect(url.hasPrefix("https://"))

            // Writes in one batched push, read back page by page through the balancer: by links
            // (which must come back as https on the balancer's address) and by checkpoints.
            let writer = try await TSyncSandbox(remote: url)
            let items = (0..<60).map { #"{"id": "r\#(String(format: "%02d", $0))", "n": \#($0)}"# }.joined(separator: "\n")
            try await writer.ok(["insert", "rows"], stdin: items)
            let push = try await writer.run(["push"], environment: environment)
            #expect(push.status == 0, "\(push)")
            let reader = try await TSyncSandbox(remote: url)
            let linked = try await reader.run(["pull", "rows", "--page-size", "7", "--json"], environment: environment)
            #expect(linked.status == 0, "\(linked)")
            #expect(JSONOutput.int(try JSONOutput.object(linked.stdout)["received"]) == 60, "\(linked)")
            let walked = try await reader.run(
                ["pull", "rows", "--query-id", "all", "--page-size", "7", "--json"], environment: environment)
            #expect(walked.status == 0, "\(walked)")
            #expect(JSONOutput.int(try JSONOutput.object(walked.stdout)["pages"]) == 9, "\(walked)")
            for instance in [first, second] {
                #expect(instance.log.contains("GET /tables/rows"), "round robin reached both instances: \(instance.log.suffix(2000))")
            }
            let page = try await HTTP.send("GET", instances[0] + "/tables/rows?$top=7", headers: ["X-Forwarded-Proto": "https"])
            #expect(page.headers["Link"]?.contains("https://") == true, "\(page.headers)")

            // A watch (its held read on either instance) hears a write made through the balancer,
            // whichever instance took it.
            let watcher = try LiveSyncTests.Watcher(reader, environment: environment)
            await watcher.waitFor("connected")
            for index in 0..<4 {
                try await writer.ok(["insert", "rows", #"{"id": "live\#(index)", "n": \#(index)}"#])
                let pushed = try await writer.run(["push"], environment: environment)
                #expect(pushed.status == 0, "\(pushed)")
                await watcher.waitFor("pulled", id: "live\(index)")
            }
            _ = await watcher.stop()

            // One instance dies under the balancer: a command may meet it before the health check
            // does (exit 3, everything kept), and the next one goes through the other.
            await first.kill(signal: SIGKILL)
            try await writer.ok(["insert", "rows"], stdin: (0..<20).map { #"{"id": "after\#($0)"}"# }.joined(separator: "\n"))
            var outcomes: [Int32] = []
            for _ in 0..<10 {
                let result = try await writer.run(["push"], environment: environment)
                outcomes.append(result.status)
                if result.status == 0 { break }
                #expect(result.status == 3, "\(result)")
                try await Task.sleep(for: .milliseconds(500))
            }
            #expect(outcomes.last == 0, "\(outcomes)")
            await #expect(try writer.ok(["status", "--porcelain"]) == "", "nothing left queued")
            let after = try await reader.run(["pull", "rows", "--query-id", "all", "--json"], environment: environment)
            #expect(after.status == 0, "\(after)")
            #expect(JSONOutput.int(try JSONOutput.object(after.stdout)["received"]) == 20, "\(after)")
        }
    }
}

/// A haproxy terminating TLS with the test CA's server certificate, balancing round robin over
/// `backends` with `/ready` as the health check, telling them the scheme and the client.
final class HAProxy: Sendable {
    static let executable: String? = ["/usr/sbin/haproxy", "/usr/bin/haproxy", "/usr/local/sbin/haproxy"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    let url: String
    private let process: ChildProcess

    init(backends: [String], authority: CertificateAuthority) async throws {
        let executable = try #require(Self.executable)
        let port = try LoopbackListener.freePort()
        // haproxy reads the certificate and its key from one file.
        let certificate = try String(contentsOfFile: authority.serverCertificate, encoding: .utf8)
        let key = try String(contentsOfFile: authority.serverKey, encoding: .utf8)
        let bundle = try authority.directory.write("haproxy.pem", certificate + key)
        let servers = backends.enumerated().map { index, backend in
            "    server s\(index) \(backend.replacingOccurrences(of: "http://", with: "")) check inter 500ms fall 2 rise 1"
        }
        let configuration = try authority.directory.write(
            "haproxy.cfg",
            """
            global
                maxconn 512
            defaults
                mode http
                timeout connect 2s
                timeout client 60s
                timeout server 60s
                retries 2
                option redispatch
            frontend sync
                bind 127.0.0.1:\(port) ssl crt \(bundle)
                option forwardfor
                http-request set-header X-Forwarded-Proto https
                default_backend tsync
            backend tsync
                balance roundrobin
                option httpchk GET /ready
            \(servers.joined(separator: "\n"))

            """)
        let log = (authority.directory.path as NSString).appendingPathComponent("haproxy.log")
        process = try ChildProcess(executable, ["-db", "-f", configuration], stdout: log, stderr: log)
        url = "https://127.0.0.1:\(port)"
        for _ in 0..<100 {
            if let socket = try? RawSocket(port: port, timeout: 1) {
                socket.close()
                return
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let text = String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self)
        throw TSyncError.failure("haproxy did not start; its log:\n\(text)")
    }

    func stop() { process.signal(SIGTERM) }

    deinit { stop() }
}
