import TSyncEngine
import TSyncModel

/// The records `insert` and `upsert` take: one JSON object as an argument, or, with none (or `-`),
/// a JSON array or NDJSON on stdin, or CSV on stdin with `--csv`. Refuses to wait on a terminal.
enum RecordsInput {
    static func read(json: String?, csv: Bool, command: String, table: String) throws -> [[String: JSONValue]] {
        switch try source(json: json, csv: csv, command: command, table: table) {
        case .argument(let text): return [try RecordInput.object(from: text)]
        case .json: return try RecordInput.objects(from: Console.readStandardInput())
        case .csv: return try CSVRecords.objects(from: String(decoding: Console.readStandardInput(), as: UTF8.self))
        }
    }

    /// The same for `insert`, which takes records in the store's form where the input allows.
    static func newRecords(json: String?, csv: Bool, command: String, table: String) throws -> NewRecords {
        switch try source(json: json, csv: csv, command: command, table: table) {
        case .argument(let text): return NewRecords(objects: [try RecordInput.object(from: text)])
        case .json: return try NewRecords.json(Console.readStandardInput())
        case .csv: return try NewRecords.csv(String(decoding: Console.readStandardInput(), as: UTF8.self))
        }
    }

    private enum Source {
        case argument(String)
        case json
        case csv
    }

    private static func source(json: String?, csv: Bool, command: String, table: String) throws -> Source {
        if csv {
            guard json == nil || json == "-" else { throw TSyncError.usage("--csv reads stdin: give no JSON argument (or -)") }
            guard !Console.stdinIsTerminal else {
                throw TSyncError.usage("pipe the CSV to stdin: tsync \(command) \(table) --csv < FILE")
            }
            return .csv
        }
        if let json, json != "-" { return .argument(json) }
        guard !Console.stdinIsTerminal else {
            throw TSyncError.usage("give a record as a JSON argument, or pipe records (a JSON array or NDJSON) to stdin")
        }
        return .json
    }
}
