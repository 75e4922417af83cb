import Logging
import TSyncModel

/// The log of `tsync serve` on stderr, one line per event: `2026-11-24T19:05:53.123Z info
/// listening on http://127.0.0.1:8080`. The server's own lines and every warning and error are
/// written; the frameworks' informational lines (their start-up notices) are not, and no line
/// names a framework or a logger.
struct ServerLog: LogHandler {
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(
        level: Logger.Level, message: Logger.Message, metadata extra: Logger.Metadata?, source: String, file: String,
        function: String, line: UInt
    ) {
        guard level >= .warning || source == "TSyncServer" else { return }
        var text = "\(Timestamp.now().iso8601) \(level) \(message)"
        let all = metadata.merging(extra ?? [:]) { $1 }
        for (key, value) in all.sorted(by: { $0.key < $1.key }) where !key.hasPrefix("hb.") { text += " \(key)=\(value)" }
        Console.note(text)
    }
}
