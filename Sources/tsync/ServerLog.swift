import ArgumentParser
import Logging
import TSyncModel
import TSyncServer

/// The log of `tsync serve` on stderr, one line per event, as text (`2026-11-24T19:05:53.123Z
/// info listening on http://127.0.0.1:8080`) or, with `--log-format json`, as one JSON object per
/// line (`{"time":…,"level":"info","message":…}`, request lines with their fields). The server's
/// own lines and every warning and error are written; the frameworks' informational lines (their
/// start-up notices) are not, and no line names a framework or a logger.
struct ServerLog: LogHandler {
    enum Format: String, CaseIterable, ExpressibleByArgument {
        case text, json
    }

    var format: Format = .text
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
        guard level >= .warning || source == "TSyncServer" || source == "tsync" else { return }
        let all = metadata.merging(extra ?? [:]) { $1 }
        switch format {
        case .text: Console.note(Self.text(level: level, message: message.description, metadata: all))
        case .json: Console.note(Self.json(level: level, message: message.description, metadata: all))
        }
    }

    /// Metadata as `key=value` after the message, except where the message already says it all
    /// (request lines, failed logins: `LogFields.inMessage`).
    static func text(level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        var text = "\(Timestamp.now().iso8601) \(level) \(message)"
        guard metadata[LogFields.inMessage] == nil else { return text }
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) where !key.hasPrefix("hb.") { text += " \(key)=\(value)" }
        return text
    }

    /// `time`, `level`, `message` first, then the metadata as fields; numbers and nulls where the
    /// field is one (`LogFields`).
    static func json(level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        var out = "{\"time\":\"\(Timestamp.now().iso8601)\",\"level\":\"\(level)\",\"message\":"
        JSONSerializer.writeString(message, to: &out)
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) where !key.hasPrefix("hb.") && key != LogFields.inMessage {
            out += ","
            JSONSerializer.writeString(key, to: &out)
            out += ":"
            let text = value.description
            if LogFields.nullable.contains(key), text == "null" {
                out += "null"
            } else if LogFields.numeric.contains(key), Double(text) != nil {
                out += text
            } else {
                JSONSerializer.writeString(text, to: &out)
            }
        }
        return out + "}"
    }
}
