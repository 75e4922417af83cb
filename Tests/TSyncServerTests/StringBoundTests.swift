import Testing
import TSyncModel

@testable import TSyncServer

/// A filter that builds huge strings is refused on PostgreSQL as on SQLite, before the
/// string is built (docs/DESIGN.md §10.1): one such filter took PostgreSQL from 1 GB to 5.8 GB.
@Suite struct StringBoundTests {
    @Test func stringsAFilterBuildsAreBoundedOnBothBackends() async throws {
        var configuration = ServerConfiguration(requiresAuthentication: false)
        configuration.queryTimeoutSeconds = 20
        try await withTestServer(configuration, queryTimeoutSeconds: 20) { http in
            let big = String(repeating: "x", count: 1_000_000)
            #expect(try await http.post("/tables/t", ["id": "big", "s": .string(big)]).status == 201)
            let forty = String(repeating: "x", count: 40)
            // 16 MB from eight doublings of one concat each, and 40 MB from one replace.
            var doubled = "s"
            for _ in 0..<4 { doubled = "concat(\(doubled),\(doubled))" }
            for filter in ["length(replace(s,'x','\(forty)')) eq 1", "length(\(doubled)) eq 1"] {
                let start = ContinuousClock.now
                let reply = try await http.get("/tables/t?$filter=" + filter)
                #expect(reply.status == 400, "\(http.backend): \(reply.status) \(reply.text.prefix(200))")
                #expect(reply.error?.contains("cannot be evaluated") == true, "\(http.backend): \(reply.text.prefix(200))")
                // Half the 20 s deadline: a loaded machine is slow, but not that slow to refuse.
                #expect(ContinuousClock.now - start < .seconds(10), "\(http.backend): refused before the deadline")
            }
            // Under the bound, both still answer: 8 MB from three doublings, and a replace that
            // would grow each occurrence of a text that has none.
            var eight = "s"
            for _ in 0..<3 { eight = "concat(\(eight),\(eight))" }
            #expect(try await http.get("/tables/t?$filter=length(\(eight)) eq 8000000").array.count == 1, "\(http.backend)")
            #expect(try await http.get("/tables/t?$filter=length(replace(s,'y','\(forty)')) eq 1000000").array.count == 1)
            #expect(try await http.get("/tables/t?$filter=replace(concat('a','b'),'b','cd') eq 'acd'").array.count == 1)
        }
    }
}
