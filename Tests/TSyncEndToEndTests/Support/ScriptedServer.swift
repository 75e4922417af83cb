import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A small HTTP server on 127.0.0.1 that answers what the test scripts: a server that ignores
/// `$orderby` or `$skip`, loops its `Link`s, sends a body a byte at a time, or answers 503. For the
/// client's behaviour against servers that misbehave; never a stand-in for `tsync serve`.
final class ScriptedServer: Sendable {
    /// One answer: status, headers and body, and an optional pause between the body's bytes.
    struct Answer: Sendable {
        var status: Int
        var headers: [(String, String)] = [("Content-Type", "application/json")]
        var body: [UInt8]
        var dripEvery: TimeInterval? = nil
        /// A chunked answer instead (a stream, docs/DESIGN.md §8.1): these chunks, `pause` apart,
        /// then the last chunk, or (`cut`) the connection closed without it.
        var chunks: [[UInt8]]? = nil
        var pause: TimeInterval = 0
        var cut = false

        static func json(_ status: Int, _ text: String, headers: [(String, String)] = []) -> Answer {
            Answer(status: status, headers: [("Content-Type", "application/json")] + headers, body: Array(text.utf8))
        }
    }

    typealias Script = @Sendable (_ method: String, _ target: String) -> Answer

    private let connections: AcceptLoop
    private let script: Script
    private let requestLog = Mutex<[String]>([])
    let port: Int
    var url: String { "http://127.0.0.1:\(port)" }

    init(_ script: @escaping Script) throws {
        self.script = script
        connections = try AcceptLoop()
        port = connections.port
        connections.start { [weak self] client in self?.serve(client) }
    }

    /// "METHOD target" of every request so far.
    var requests: [String] { requestLog.withLock { $0 } }

    /// Stops listening and ends every connection (a test that never calls it ends them when the
    /// server goes out of scope).
    func close() { connections.stop() }

    deinit { close() }

    private func serve(_ client: Int32) {
        var buffer: [UInt8] = []
        while let request = LossyProxy.readMessage(client, &buffer, isResponse: false) {
            let head = String(decoding: request.prefix(4096), as: UTF8.self)
            let parts = head.split(separator: " ", maxSplits: 2)
            guard parts.count >= 2 else { return }
            let method = String(parts[0])
            let target = String(parts[1])
            requestLog.withLock { $0.append("\(method) \(target)") }
            let answer = script(method, target)
            let length = answer.chunks == nil ? "Content-Length: \(answer.body.count)" : "Transfer-Encoding: chunked"
            var text = "HTTP/1.1 \(answer.status) Scripted\r\n\(length)\r\n"
            for (name, value) in answer.headers { text += "\(name): \(value)\r\n" }
            guard LossyProxy.writeAll(client, Array((text + "\r\n").utf8)) else { return }
            if let chunks = answer.chunks {
                for chunk in chunks {
                    Thread.sleep(forTimeInterval: answer.pause)
                    guard LossyProxy.writeAll(client, Array(String(chunk.count, radix: 16).utf8) + [13, 10] + chunk + [13, 10]) else {
                        return
                    }
                }
                if answer.cut { return }
                guard LossyProxy.writeAll(client, Array("0\r\n\r\n".utf8)) else { return }
                continue
            }
            if let pause = answer.dripEvery {
                for byte in answer.body {
                    Thread.sleep(forTimeInterval: pause)
                    guard LossyProxy.writeAll(client, [byte]) else { return }
                }
            } else {
                guard LossyProxy.writeAll(client, answer.body) else { return }
            }
        }
    }
}
