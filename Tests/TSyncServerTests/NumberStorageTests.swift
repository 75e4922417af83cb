import Testing
import TSyncModel
@testable import TSyncServer

/// Numbers go in and come out exactly, or are refused with 400 — on both backends.
@Suite struct NumberStorageTests {
    @Test func numbersAreKeptExactlyOrRefused() async throws {
        try await withTestServer { http in
            // Reals whose stored form loses the exponent (PostgreSQL's jsonb) come back as reals.
            let large = try await http.insert("n", ["id": "large", "a": 1e20, "b": 1.5e300, "c": 9_007_199_254_740_993])
            let read = try await http.get("/tables/n/large")
            #expect(read.object["a"] == .double(1e20) && read.object["b"] == .double(1.5e300), "\(read.text)")
            #expect(read.object["c"] == .int(9_007_199_254_740_993), "integers stay integers")
            #expect(large["a"] == read.object["a"])

            // An integer beyond 64 bits is never rounded.
            let wide = try await http.send(.post, "/tables/n", raw: Array(#"{"id": "wide", "n": 123456789012345678901234567890}"#.utf8))
            #expect(wide.status == 400 && wide.error?.contains("64 bits") == true, "\(wide.text)")

            // -0.0 is kept where the database can keep it, refused where it cannot.
            let negativeZero = try await http.send(.post, "/tables/n", raw: Array(#"{"id": "nz", "z": -0.0}"#.utf8))
            switch http.backend {
            case .sqlite:
                #expect(negativeZero.status == 201)
                #expect(try await http.get("/tables/n/nz").text.contains(#""z":-0.0"#))
            case .postgres:
                #expect(negativeZero.status == 400 && negativeZero.error?.contains("-0.0") == true, "\(negativeZero.text)")
            }
        }
    }
}
