import TSyncEngine
import TSyncModel

/// The records `insert` and `upsert` take: one JSON object as an argument, or, with none (or `-`),
/// a JSON array or NDJSON on stdin, or CSV on stdin with `--csv`. Refuses to wait on a terminal.
enum RecordsInput {
    static func read(json: String?, csv: Bool, command: String, table: String) throws -> [[String: JSONValue]] {
        if csv {
            guard json == nil || json == "-" else { throw TSyncError.usage("--csv reads stdin: give no JSON argument (or -)") }
            guard !Console.stdinIsTerminal else {
                throw TSyncError.usage("pipe the CSV to stdin: tsync \(command) \(table) --csv < FILE")
            }
            return try CSVRecords.objects(from: String(decoding: Console.readStandardInput(), as: UTF8.self))
        }
        if let json, json != "-" { return [try RecordInput.object(from: json)] }
        guard !Console.stdinIsTerminal else {
            throw TSyncError.usage("give a record as a JSON argument, or pipe records (a JSON array or NDJSON) to stdin")
        }
        return try RecordInput.objects(from: Console.readStandardInput())
    }
}
