import Foundation
import Testing
import TSyncModel

/// A blocker once: over `tsync serve --tls-cert` every next-page `Link` said `http://`, which
/// the client rightly refuses, so every read that goes past one page failed: a pull of a table
/// larger than a page, `resolve`, `push --check` and `push --on-conflict` (they read the server's
/// copy a page of one at a time) and the catch-up of `watch`. A `Link` carries the scheme the
/// request came in on. The real server over TLS (a private CA made with `openssl`), the real
/// binary.
@Suite(.serialized) struct TLSPagingTests {
    /// Two stores of one TLS server that trust its CA (`http.caFile`): A wrote `count` records.
    /// The CA's directory lives as long as the authority does.
    private static func twoStores(count: Int) async throws -> (
        authority: CertificateAuthority, server: ServerProcess, a: TSyncSandbox, b: TSyncSandbox
    ) {
        let authority = try await CertificateAuthority()
        let server = try await authority.serve(certificate: authority.serverCertificate)
        let url = try await server.waitForAddress()
        #expect(url.hasPrefix("https://"))
        let a = try await TSyncSandbox(remote: url)
        let b = try await TSyncSandbox(remote: url)
        for store in [a, b] { try await store.ok(["config", "http.caFile", authority.certificate]) }
        let records = (0..<count).map { #"{"id": "r\#($0)", "n": \#($0)}"# }.joined(separator: "\n")
        try await a.ok(["insert", "todo", "-", "-q"], stdin: records + "\n")
        try await a.ok(["push", "-q"])
        return (authority, server, a, b)
    }

    @Test func aPullOfMoreThanAPageFollowsAnHTTPSLink() async throws {
        let (authority, server, _, b) = try await Self.twoStores(count: 7)
        defer { withExtendedLifetime(authority) { server.stop() } }
        // Without a query id the pull follows the server's Link from page to page.
        for arguments in [["pull", "todo", "--page-size", "3"], ["pull", "todo", "--query-id", "all", "--page-size", "3"]] {
            let pull = try await b.run(arguments + ["--json"])
            #expect(pull.status == 0, "\(arguments): \(pull)")
            #expect(!pull.stderr.contains("http://"), "\(pull)")
            #expect(try await b.ok(["query", "todo"]).split(separator: "\n").count == 7, "\(arguments)")
        }
    }

    @Test func resolveAndPushCheckAndOnConflictReadOverHTTPS() async throws {
        let (authority, server, a, b) = try await Self.twoStores(count: 3)
        defer { withExtendedLifetime(authority) { server.stop() } }
        try await b.ok(["pull", "todo", "--query-id", "all"])
        // One conflict: A changes r1 and pushes, B changes it too.
        try await a.ok(["update", "todo", "r1", "--set", "n=100"])
        try await a.ok(["push"])
        try await b.ok(["update", "todo", "r1", "--set", "n=200"])

        let check = try await b.run(["push", "--check", "--json"])
        #expect(check.status == 2, "a conflict predicted, not a refused link: \(check)")
        #expect(check.stdout.contains(#""outcome":"version-conflict""#), "\(check)")

        let settled = try await b.run(["push", "--on-conflict", "ours", "--json"])
        #expect(settled.status == 0, "\(settled)")
        #expect(JSONOutput.int(try JSONOutput.object(settled.stdout)["settled"]?.objectValue?["ours"]) == 1, "\(settled)")

        // Another conflict, left to `resolve`, which reads the server's copy.
        try await a.ok(["pull", "todo", "--query-id", "all"])
        try await a.ok(["update", "todo", "r2", "--set", "n=300"])
        try await a.ok(["push"])
        try await b.ok(["update", "todo", "r2", "--set", "n=400"])
        #expect(try await b.run(["push"]).status == 2)
        let resolve = try await b.run(["resolve", "--all", "--theirs"])
        #expect(resolve.status == 0, "\(resolve)")
        #expect(!resolve.stderr.contains("http://"), "\(resolve)")
        #expect(try JSONOutput.object(try await b.ok(["get", "todo", "r2", "--json"]))["n"] == .int(300))
    }

    @Test func watchCatchesUpOverHTTPSPastOnePage() async throws {
        let (authority, server, a, b) = try await Self.twoStores(count: 3)
        defer { withExtendedLifetime(authority) { server.stop() } }
        try await b.ok(["pull", "todo", "--query-id", "all"])
        // More than the watch's page (1000) waits for it: its first sync reads it by Link.
        let more = (3..<1003).map { #"{"id": "r\#($0)", "n": \#($0)}"# }.joined(separator: "\n")
        try await a.ok(["insert", "todo", "-", "-q"], stdin: more + "\n")
        try await a.ok(["push", "-q"])
        let watch = try await b.run(["watch", "--timeout", "3"])
        #expect(watch.status == 0, "\(watch.stderr)")
        #expect(watch.stderr.contains("watching (connected)"), "\(watch.stderr)")
        #expect(watch.stdout.split(separator: "\n").count == 1000, "every record pulled: \(watch.stdout.suffix(200))")
        #expect(try await b.ok(["query", "todo"]).split(separator: "\n").count == 1003)
    }
}
