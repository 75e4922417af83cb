import Foundation
import MetricsTestKit
import Testing
import TSyncServer

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A program that embeds the server sends its series to a backend of its own
/// (`ServerConfiguration.metricsFactory`), as any Swift server library's: here swift-metrics'
/// `TestMetrics`. Only what is public is used.
@Suite struct MetricsBackendTests {
    @Test func theServersSeriesGoToTheProgramsBackend() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tsync-metrics-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let backend = TestMetrics()
        var configuration = ServerConfiguration(port: 0, requiresAuthentication: false)
        configuration.metricsFactory = backend
        let server = try SyncServer(configuration: configuration, storage: try SQLiteStorage(path: directory + "/server.db"))
        let (ports, listening) = AsyncStream.makeStream(of: Int.self)
        let application = server.makeApplication { port in listening.yield(port) }
        let serving = Task { try await application.runService() }
        defer { serving.cancel() }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        let base = "http://127.0.0.1:\(port)"

        #expect(try await Self.send("POST", base + "/tables/todo", body: #"{"id": "a", "text": "buy milk"}"#) == 201)
        #expect(try await Self.send("GET", base + "/tables/todo") == 200)
        // Not exposed: the series went to the program's backend only.
        #expect(try await Self.send("GET", base + "/metrics") == 404)

        let inserted = try backend.expectCounter(
            "tsync_http_requests_total", [("method", "POST"), ("route", "/tables/{table}"), ("status", "201")])
        #expect(inserted.totalValue == 1)
        #expect(try backend.expectCounter("tsync_records_written_total").totalValue == 1)
        #expect(try backend.expectCounter("tsync_records_read_total").totalValue == 1)
        let durations = try backend.expectTimer("tsync_http_request_duration_seconds", [("method", "GET"), ("route", "/tables/{table}")])
        #expect(durations.values.count == 1 && durations.values[0] > 0)
        #expect(try backend.expectRecorder("tsync_write_batch_size").values == [1])
        // The connection the requests came on was counted open.
        #expect(try backend.expectMeter("tsync_open_connections").values.contains(1))
    }

    /// One request; its status.
    private static func send(_ method: String, _ url: String, body: String? = nil) async throws -> Int {
        var request = URLRequest(url: try #require(URL(string: url)))
        request.httpMethod = method
        if let body {
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        request.setValue("2.0.0", forHTTPHeaderField: "ZUMO-API-VERSION")
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }
}
