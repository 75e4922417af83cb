import SwiftCSV
import TSyncModel

/// Records as CSV, for `insert --csv` and `query --csv` (sqlite-utils users expect it): a header
/// row of field names, then one row per record.
///
/// Reading (SwiftCSV parses, RFC 4180 quoting included), each cell becomes a JSON value by these
/// rules, the same for every column: an empty cell leaves the field out; `true` and `false` are
/// booleans; `null` is null; a number written as JSON writes one (`12`, `-3.5`, `1e3`, but not
/// `007` or `+1`, which stay text) is a number; anything else is text. The `id` column is always
/// text. Writing, text is written as it is, numbers and booleans as JSON writes them, null and an
/// absent field as an empty cell, and objects and arrays as their JSON text.
public enum CSVRecords {
    /// The records of CSV text: the first row names the fields.
    public static func objects(from text: String) throws(TSyncError) -> [[String: JSONValue]] {
        let csv: EnumeratedCSV
        do {
            csv = try EnumeratedCSV(string: text, delimiter: .comma, loadColumns: false)
        } catch {
            throw .invalidInput("the CSV could not be read: \(error)")
        }
        let header = csv.header
        guard !header.isEmpty, header.allSatisfy({ !$0.isEmpty }) else {
            throw .invalidInput("the CSV's first row must name every column (a header row of field names)")
        }
        var seen = Set<String>()
        for name in header where !seen.insert(name).inserted {
            throw .invalidInput("the CSV header names the column \(Identifiers.quoted(name)) twice")
        }
        var objects: [[String: JSONValue]] = []
        objects.reserveCapacity(csv.rows.count)
        for (offset, row) in csv.rows.enumerated() {
            guard row.count <= header.count else {
                throw .invalidInput("CSV row \(offset + 2) has \(row.count) cells, more than the \(header.count) columns of the header")
            }
            var object: [String: JSONValue] = [:]
            for (name, cell) in zip(header, row) where !cell.isEmpty {
                object[name] = name == "id" ? .string(cell) : value(of: cell)
            }
            objects.append(object)
        }
        return objects
    }

    /// The JSON value a cell stands for (see the type's rules).
    static func value(of cell: String) -> JSONValue {
        switch cell {
        case "true": return .bool(true)
        case "false": return .bool(false)
        case "null": return .null
        default: break
        }
        if looksLikeJSONNumber(cell), let number = try? JSONParser.parse(cell) {
            return number
        }
        return .string(cell)
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`: JSON's number syntax exactly.
    private static func looksLikeJSONNumber(_ text: String) -> Bool {
        var bytes = Array(text.utf8)[...]
        func digits() -> Int {
            let count = bytes.prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }.count
            bytes = bytes.dropFirst(count)
            return count
        }
        if bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        if bytes.first == UInt8(ascii: "0") {
            bytes = bytes.dropFirst()
        } else if digits() == 0 {
            return false
        }
        if bytes.first == UInt8(ascii: ".") {
            bytes = bytes.dropFirst()
            if digits() == 0 { return false }
        }
        if bytes.first == UInt8(ascii: "e") || bytes.first == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            if bytes.first == UInt8(ascii: "+") || bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
            if digits() == 0 { return false }
        }
        return bytes.isEmpty
    }

    /// CSV text of records: `columns` in order (or `id`, then every other field by name), a
    /// header row, then one row per record; lines end with CRLF as RFC 4180 has them.
    public static func text(_ objects: [[String: JSONValue]], columns: [String]? = nil) -> String {
        let columns = columns ?? defaultColumns(objects)
        var text = columns.map(quoted).joined(separator: ",") + "\r\n"
        for object in objects {
            text += columns.map { quoted(cell(object[$0])) }.joined(separator: ",")
            text += "\r\n"
        }
        return text
    }

    private static func defaultColumns(_ objects: [[String: JSONValue]]) -> [String] {
        var names = Set<String>()
        for object in objects { names.formUnion(object.keys) }
        names.remove("id")
        return ["id"] + names.sorted()
    }

    private static func cell(_ value: JSONValue?) -> String {
        switch value {
        case nil, .null?: ""
        case .string(let text)?: text
        case let other?: JSONSerializer.string(other)
        }
    }

    /// A cell quoted when it holds a comma, a quote, or a line break (RFC 4180).
    private static func quoted(_ cell: String) -> String {
        guard cell.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }) else { return cell }
        return "\"" + cell.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
