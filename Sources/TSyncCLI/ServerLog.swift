import ArgumentParser
import Logging
import TSyncModel
import TSyncServer

/// The log of `tsync serve` on stderr, one line per event, as text (`2026-11-24T19:05:53.123Z
/// info listening on http://127.0.0.1:8080`) or, with `--log-format json`, as one JSON object per
/// line (`{"time":…,"level":"info","message":…}`, request lines with their fields). The server's
/// own lines and every warning and error are written; the frameworks' informational lines (their
/// start-up notices) are not, and no line names a framework or a logger. A fatal start-up error is
/// a line of the log too (`ServeCommand.run`). Request lines are written in batches (`LogBatch`),
/// every other line at once with the request lines before it.
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

    func log(event: LogEvent) {
        guard event.level >= .warning || event.source == "TSyncServer" || event.source == "TSyncCLI" else { return }
        let message = event.message.description
        // A request line (one per request): its fields are written only in JSON, straight from
        // the line, with no metadata to merge or sort.
        if case .stringConvertible(let line as RequestLogLine)? = event.metadata?[LogFields.request] {
            // Batched (`LogBatch`): a wake answers thousands of requests at once.
            switch format {
            case .text: LogBatch.standardError.add(Self.prefix(level: event.level) + message)
            case .json:
                var out = Self.jsonHead(level: event.level, message: message)
                line.writeJSONFields(to: &out)
                out += "}"
                LogBatch.standardError.add(out)
            }
            return
        }
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        switch format {
        case .text: LogBatch.standardError.writeNow(Self.text(level: event.level, message: message, metadata: all))
        case .json: LogBatch.standardError.writeNow(Self.json(level: event.level, message: message, metadata: all))
        }
    }

    private static func prefix(level: Logger.Level) -> String { "\(Timestamp.now().iso8601) \(level) " }

    private static func jsonHead(level: Logger.Level, message: String) -> String {
        var out = "{\"time\":\"\(Timestamp.now().iso8601)\",\"level\":\"\(level)\",\"message\":"
        JSONSerializer.writeString(message, to: &out)
        return out
    }

    /// Metadata as `key=value` after the message, except where the message already says it all
    /// (request lines, failed logins: `LogFields.inMessage`).
    static func text(level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        var text = prefix(level: level) + message
        guard metadata[LogFields.inMessage] == nil else { return text }
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) where !key.hasPrefix("hb.") { text += " \(key)=\(value)" }
        return text
    }

    /// `time`, `level`, `message` first, then the metadata as text fields (a request line's typed
    /// fields are its own: `RequestLogLine`).
    static func json(level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        var out = jsonHead(level: level, message: message)
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) where !key.hasPrefix("hb.") && key != LogFields.inMessage {
            out += ","
            JSONSerializer.writeString(key, to: &out)
            out += ":"
            JSONSerializer.writeString(value.description, to: &out)
        }
        return out + "}"
    }
}
