import Foundation
import TSyncModel

/// Records as CSV, for `insert --csv` and `query --csv` (sqlite-utils users expect it): a header
/// row of field names, then one row per record.
///
/// The rule, PostgreSQL COPY's: **a quoted cell is always text**, and only an unquoted cell is read
/// as something else, so every record tsync can hold comes back exactly (`query --csv | insert
/// --csv` changes nothing; docs/DESIGN.md §12). Reading (RFC 4180: cells separated by commas, rows
/// by CRLF or LF; a cell in double quotes may hold commas, line breaks and quotes written twice),
/// each cell is taken byte for byte (white space included: no trimming): a quoted cell is text
/// (`""` the empty text); an unquoted empty cell leaves the field out; unquoted `true` and `false`
/// are booleans, `null` is null, a number as JSON writes one (`12`, `-3.5`, `1e3`, but not `007` or
/// `+1`) is a number, and a cell that starts with `{` or `[` and is one whole JSON object or array
/// is that value (its commas and quotes belong to it, as in `{"x":[1,2]}`); any other unquoted
/// cell is text. The `id` column is always text. Blank lines are skipped, never a record.
/// Writing is the inverse: every text quoted, numbers and booleans as JSON writes them, null as
/// `null`, objects and arrays as their JSON text unquoted, and an absent field as an empty cell.
package enum CSVRecords {
    /// The records of CSV text: the first row names the fields. No text, no records.
    package static func objects(from text: String) throws(TSyncError) -> [[String: JSONValue]] {
        var reader = CSVReader(text)
        var rows = try reader.rows()[...]
        guard let first = rows.popFirst() else { return [] }
        let header = first.cells.map(\.text)
        guard header.allSatisfy({ !$0.isEmpty }) else {
            throw .invalidInput("the CSV's first row must name every column (a header row of field names)")
        }
        var seen = Set<String>()
        for name in header where !seen.insert(name).inserted {
            throw .invalidInput("the CSV header names the column \(Identifiers.quoted(name)) twice")
        }
        var objects: [[String: JSONValue]] = []
        objects.reserveCapacity(rows.count)
        for row in rows {
            guard row.cells.count <= header.count else {
                throw .invalidInput(
                    "invalid CSV at line \(row.line): the row has \(row.cells.count) cells, more than the \(header.count) columns of the header"
                )
            }
            var object: [String: JSONValue] = [:]
            for (name, cell) in zip(header, row.cells) {
                if name == "id" {
                    if cell.quoted || !cell.text.isEmpty { object[name] = .string(cell.text) }
                } else if let value = value(of: cell) {
                    object[name] = value
                }
            }
            objects.append(object)
        }
        return objects
    }

    /// What `objects(from:)`, `RecordInput.newRecord` and `StoredJSON.encode` make of CSV text,
    /// made without a dictionary per row: ids (generated where the cell is empty) and bodies,
    /// each row's cells written in the serializer's order of the header's names (sorted once).
    /// Nil on anything wrong, for the general path to word: no rows, a bad header or row, an
    /// invalid id, or with `requiringIDs` (upsert's) a row without one.
    static func prepared(from text: String, requiringIDs: Bool = false) -> [(id: String, body: String)]? {
        var reader = CSVReader(text)
        guard var rows = (try? reader.rows())?[...], let first = rows.popFirst(), let layout = Layout(header: first) else {
            return nil
        }
        var records: [(id: String, body: String)] = []
        records.reserveCapacity(rows.count)
        var body: [UInt8] = []
        for row in rows {
            guard let record = layout.record(row, body: &body, requiringID: requiringIDs) else { return nil }
            records.append(record)
        }
        return records
    }

    /// The header's columns in the order the serializer writes their names (sorted once), for
    /// making a record's id and body from a row without a dictionary.
    struct Layout {
        let width: Int
        let idColumn: Int?
        let columns: [(column: Int, name: [UInt8])]

        /// Nil for a header the general path refuses: an empty name, or a name twice.
        init?(header row: CSVReader.Row) {
            let header = row.cells.map(\.text)
            guard header.allSatisfy({ !$0.isEmpty }), Set(header).count == header.count else { return nil }
            width = header.count
            idColumn = header.firstIndex(of: "id")
            columns = header.indices.filter { header[$0] != "id" && !RecordInput.serverProperties.contains(header[$0]) }
                .sorted { header[$0] < header[$1] }
                .map { column in
                    var name: [UInt8] = []
                    JSONSerializer.writeString(header[column], to: &name)
                    name.append(UInt8(ascii: ":"))
                    return (column: column, name: name)
                }
        }

        /// The row's id (generated where the cell is empty) and body; nil for a row with more
        /// cells than the header, or an invalid id, or with `requiringID` none. `body` is scratch space.
        func record(_ row: CSVReader.Row, body: inout [UInt8], requiringID: Bool = false) -> (id: String, body: String)? {
            guard row.cells.count <= width else { return nil }
            var id: String?
            if let idColumn, idColumn < row.cells.count, row.cells[idColumn].quoted || !row.cells[idColumn].text.isEmpty {
                id = row.cells[idColumn].text
            }
            if let id, (try? Identifiers.validateRecordID(id)) == nil { return nil }
            if requiringID, id == nil { return nil }
            body.removeAll(keepingCapacity: true)
            body.append(UInt8(ascii: "{"))
            for (column, name) in columns where column < row.cells.count {
                guard let value = CSVRecords.value(of: row.cells[column]) else { continue }
                if body.count > 1 { body.append(UInt8(ascii: ",")) }
                body.append(contentsOf: name)
                JSONSerializer.write(value, to: &body)
            }
            body.append(UInt8(ascii: "}"))
            return (id ?? RecordInput.newID(), String(decoding: body, as: UTF8.self))
        }

        /// What `CSVReader.row()` and `record(_:body:)` make of the row at `start`, read straight
        /// from the input's bytes into the body's: no text, cell or value per cell, and each cell
        /// written as its bytes where they are the JSON for it (plain text, an integer, `true`,
        /// `false`, `null`). Cells that are not (escapes, other numbers, bytes above ASCII) go
        /// through `value(of:)` as before. Nil where the row is left to those readers: a cell that
        /// starts with `{` or `[` (maybe a JSON value holding commas), a quote where none may be,
        /// a quoted cell the input ends inside, a row with more cells than the header, an id to
        /// check; and at the input's end or a blank line; with `requiringID`, a row without an id.
        /// `cells` is scratch space.
        func record(
            in bytes: UnsafeBufferPointer<UInt8>, from start: Int, body: inout [UInt8], cells: inout [CellSpan],
            requiringID: Bool = false
        ) -> (record: (id: String, body: String), end: Int)? {
            guard let end = Self.cells(in: bytes, from: start, into: &cells), cells.count <= width else { return nil }
            var id: String?
            if let idColumn, idColumn < cells.count {
                let cell = cells[idColumn]
                if cell.quoted || cell.end > cell.start {
                    let text = Self.text(of: cell, in: bytes)
                    guard (try? Identifiers.validateRecordID(text)) != nil else { return nil }
                    id = text
                }
            }
            if requiringID, id == nil { return nil }
            body.removeAll(keepingCapacity: true)
            body.append(UInt8(ascii: "{"))
            for (column, name) in columns where column < cells.count {
                let cell = cells[column]
                let cellBytes = UnsafeBufferPointer(rebasing: bytes[cell.start..<cell.end])
                if !cell.quoted, cellBytes.isEmpty { continue }
                if body.count > 1 { body.append(UInt8(ascii: ",")) }
                body.append(contentsOf: name)
                if cell.special {
                    let text = Self.text(of: cell, in: bytes)
                    if cell.quoted {
                        JSONSerializer.writeString(text, to: &body)
                    } else if let value = CSVRecords.value(of: CSVReader.Cell(text: text, quoted: false)) {
                        JSONSerializer.write(value, to: &body)
                    }
                } else if cell.quoted || Self.isVerbatimJSON(cellBytes) {
                    if cell.quoted { body.append(UInt8(ascii: "\"")) }
                    body.append(contentsOf: cellBytes)
                    if cell.quoted { body.append(UInt8(ascii: "\"")) }
                } else if let first = cellBytes.first, first == UInt8(ascii: "-") || (first >= 0x30 && first <= 0x39) {
                    // A number other than a plain integer, or text that looks like one ("007").
                    let text = String(decoding: cellBytes, as: UTF8.self)
                    if let value = CSVRecords.value(of: CSVReader.Cell(text: text, quoted: false)) {
                        JSONSerializer.write(value, to: &body)
                    }
                } else {
                    body.append(UInt8(ascii: "\""))
                    body.append(contentsOf: cellBytes)
                    body.append(UInt8(ascii: "\""))
                }
            }
            body.append(UInt8(ascii: "}"))
            return ((id ?? RecordInput.newID(), String(decoding: body, as: UTF8.self)), end)
        }

        /// An unquoted plain cell whose bytes are the JSON its value is written as: `true`,
        /// `false`, `null`, or an integer as JSON writes it, short enough to be an Int64
        /// (`-0` is read as 0, so it is not).
        private static func isVerbatimJSON(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
            switch bytes.count {
            case 4:
                if bytes.elementsEqual("true".utf8) || bytes.elementsEqual("null".utf8) { return true }
            case 5:
                if bytes.elementsEqual("false".utf8) { return true }
            default: break
            }
            var digits = bytes[...]
            if digits.first == UInt8(ascii: "-") { digits = digits.dropFirst() }
            guard let first = digits.first, digits.count <= 18, first >= UInt8(ascii: "1") && first <= UInt8(ascii: "9") else {
                return false
            }
            return digits.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        }

        /// A cell's text as `CSVReader` reads it: doubled quotes made one, the bytes decoded as
        /// UTF-8 the way `String(decoding:as:)` does.
        private static func text(of cell: CellSpan, in bytes: UnsafeBufferPointer<UInt8>) -> String {
            let raw = UnsafeBufferPointer(rebasing: bytes[cell.start..<cell.end])
            guard cell.quoted, raw.contains(UInt8(ascii: "\"")) else { return String(decoding: raw, as: UTF8.self) }
            var text: [UInt8] = []
            text.reserveCapacity(raw.count)
            var index = raw.startIndex
            while index < raw.endIndex {
                text.append(raw[index])
                // Inside a quoted cell a quote only stands doubled.
                index += raw[index] == UInt8(ascii: "\"") ? 2 : 1
            }
            return String(decoding: text, as: UTF8.self)
        }

        /// The cells of the row at `start` (blank lines before it skipped, as `CSVReader` does),
        /// and where the next row starts; nil for a row `CSVReader` is to read (see `record`).
        private static func cells(in bytes: UnsafeBufferPointer<UInt8>, from start: Int, into cells: inout [CellSpan]) -> Int? {
            let quote = UInt8(ascii: "\"")
            let comma = UInt8(ascii: ",")
            let lineFeed: UInt8 = 0x0A
            let carriageReturn: UInt8 = 0x0D
            let count = bytes.count
            var index = start
            while index < count, bytes[index] == lineFeed || bytes[index] == carriageReturn { index += 1 }
            guard index < count else { return nil }
            cells.removeAll(keepingCapacity: true)
            while true {
                let first = index < count ? bytes[index] : comma
                if first == UInt8(ascii: "{") || first == UInt8(ascii: "[") { return nil }
                if first == quote {
                    index += 1
                    let cellStart = index
                    var special = false
                    while true {
                        guard index < count else { return nil }
                        let byte = bytes[index]
                        if byte == quote {
                            guard index + 1 < count else { return nil }
                            guard bytes[index + 1] == quote else { break }
                            special = true
                            index += 2
                            continue
                        }
                        if CSVRecords.isSpecial(byte) { special = true }
                        index += 1
                    }
                    cells.append(CellSpan(start: cellStart, end: index, quoted: true, special: special))
                    index += 1
                    if index < count, bytes[index] != comma, bytes[index] != lineFeed, bytes[index] != carriageReturn { return nil }
                } else {
                    let cellStart = index
                    var special = false
                    while index < count {
                        let byte = bytes[index]
                        if byte == comma || byte == lineFeed || byte == carriageReturn { break }
                        if byte == quote { return nil }
                        if CSVRecords.isSpecial(byte) { special = true }
                        index += 1
                    }
                    cells.append(CellSpan(start: cellStart, end: index, quoted: false, special: special))
                }
                guard index < count, bytes[index] == comma else { break }
                index += 1
            }
            if index < count {
                if bytes[index] == carriageReturn, index + 1 < count, bytes[index + 1] == lineFeed { index += 1 }
                index += 1
            }
            return index
        }
    }

    /// Where a cell of a row lies in the input, as `Layout.record(in:from:body:cells:)` finds it.
    struct CellSpan {
        /// The cell's bytes, its quotes left out (a doubled quote inside still doubled).
        var start: Int
        var end: Int
        var quoted: Bool
        /// Whether its text is not its bytes as they are, or is not all plain ASCII: a doubled
        /// quote, a byte that JSON escapes, or one above 0x7F (read as Swift reads it, repaired).
        var special: Bool
    }

    /// The byte of `bytes` at `index` cannot be part of an ASCII cell's text unchanged.
    @inline(__always)
    fileprivate static func isSpecial(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte >= 0x80 || byte == UInt8(ascii: "\\")
    }

    /// The JSON value a cell stands for (see the type's rules); nil for an absent field.
    static func value(of cell: CSVReader.Cell) -> JSONValue? {
        if cell.quoted { return .string(cell.text) }
        switch cell.text {
        case "": return nil
        case "true": return .bool(true)
        case "false": return .bool(false)
        case "null": return .null
        default: break
        }
        if looksLikeJSONNumber(cell.text), let number = try? JSONParser.parse(cell.text) {
            return number
        }
        if let first = cell.text.utf8.first, first == UInt8(ascii: "{") || first == UInt8(ascii: "["),
            let value = try? JSONParser.parse(cell.text)
        {
            return value
        }
        return .string(cell.text)
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

    /// CSV text of records: `columns` in order (or `id`, then every other field by name; `query
    /// --csv` gives `LocalStore.csvColumns`), a header row, then one row per record; lines end
    /// with CRLF as RFC 4180 has them.
    package static func text(_ objects: [[String: JSONValue]], columns: [String]? = nil) -> String {
        let columns = columns ?? defaultColumns(objects)
        var text = columns.map(quoted).joined(separator: ",") + "\r\n"
        for object in objects {
            text += columns.map { cell(object[$0]) }.joined(separator: ",")
            text += "\r\n"
        }
        return text
    }

    private static func defaultColumns(_ objects: [[String: JSONValue]]) -> [String] {
        FieldOrder.columns(objects, remembered: [])
    }

    /// One cell as the reading rules read it back: text always quoted, anything else unquoted.
    private static func cell(_ value: JSONValue?) -> String {
        switch value {
        case nil: ""
        case .string(let text)?: "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        case let other?: JSONSerializer.string(other)
        }
    }

    /// A header cell quoted when it holds a comma, a quote, or a line break (RFC 4180).
    private static func quoted(_ cell: String) -> String {
        guard cell.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }) else { return cell }
        return "\"" + cell.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

/// RFC 4180 CSV, read byte for byte. SwiftCSV (used before) drops the white space at the start of
/// a cell and after a closing quote, and makes a record of a blank line, with no option to do
/// otherwise; a cell's text must reach the record as it was written.
struct CSVReader {
    /// One cell's text, and whether it was written in quotes (then it is text, whatever it holds).
    struct Cell: Equatable {
        var text: String
        var quoted: Bool
    }

    /// The cells of one row, and the line it starts on (1-based; a quoted cell can span lines).
    struct Row {
        var cells: [Cell]
        var line: Int
    }

    private let bytes: [UInt8]
    private var index = 0
    private var line = 1
    /// Where the current line starts, for columns in error messages.
    private var lineStart = 0

    private static let quote = UInt8(ascii: "\"")
    private static let comma = UInt8(ascii: ",")
    private static let carriageReturn: UInt8 = 0x0D
    private static let lineFeed: UInt8 = 0x0A

    init(_ text: String) {
        bytes = Array(text.utf8)
        // A byte order mark (spreadsheets write one) is not part of the first field's name.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            index = 3
            lineStart = 3
        }
    }

    /// A window of input read in pieces (`StreamedRecords`), from `start`. Line numbers count
    /// from the window, so its errors are not for users: the general path words those.
    init(bytes: [UInt8], from start: Int) {
        self.bytes = bytes
        index = start
        lineStart = start
    }

    /// Where the next row starts.
    var position: Int { index }

    /// Whether the input is read to its end.
    var atEnd: Bool { index >= bytes.count }

    /// Every row; blank lines (nothing between two line ends) are skipped.
    mutating func rows() throws(TSyncError) -> [Row] {
        var rows: [Row] = []
        while let row = try row() { rows.append(row) }
        return rows
    }

    /// The next row, blank lines skipped; nil at the end of the input.
    mutating func row() throws(TSyncError) -> Row? {
        while index < bytes.count, isLineEnd(bytes[index]) { skipLineEnd() }
        guard index < bytes.count else { return nil }
        let start = line
        var cells: [Cell] = []
        while true {
            cells.append(try cell())
            guard index < bytes.count, bytes[index] == Self.comma else { break }
            index += 1
        }
        if index < bytes.count { skipLineEnd() }
        return Row(cells: cells, line: start)
    }

    /// The cell at `index`, which is left at the comma, line end or end of input after it.
    private mutating func cell() throws(TSyncError) -> Cell {
        let start = index
        if let end = jsonEnd(from: index) {
            index = end
            return Cell(text: String(decoding: bytes[start..<end], as: UTF8.self), quoted: false)
        }
        guard index < bytes.count, bytes[index] == Self.quote else {
            while index < bytes.count, bytes[index] != Self.comma, !isLineEnd(bytes[index]) {
                if bytes[index] == Self.quote {
                    throw error(
                        "a quote inside a cell that does not start with one; a cell holding quotes is written in quotes, each quote inside doubled (\"say \"\"hi\"\"\")"
                    )
                }
                index += 1
            }
            return Cell(text: String(decoding: bytes[start..<index], as: UTF8.self), quoted: false)
        }
        let (openLine, openColumn) = (line, column(at: index))
        index += 1
        var text: [UInt8] = []
        while true {
            guard index < bytes.count else {
                throw .invalidInput(
                    "invalid CSV: the quoted cell that starts at line \(openLine), column \(openColumn) has no closing quote")
            }
            let current = bytes[index]
            if current == Self.quote {
                if index + 1 < bytes.count, bytes[index + 1] == Self.quote {
                    text.append(Self.quote)
                    index += 2
                    continue
                }
                index += 1
                break
            }
            text.append(current)
            if current == Self.lineFeed || (current == Self.carriageReturn && byte(at: index + 1) != Self.lineFeed) {
                line += 1
                lineStart = index + 1
            }
            index += 1
        }
        if index < bytes.count, bytes[index] != Self.comma, !isLineEnd(bytes[index]) {
            throw error(
                "text after the closing quote of a cell; a quote inside a quoted cell is written twice (\"say \"\"hi\"\"\")"
            )
        }
        return Cell(text: String(decoding: text, as: UTF8.self), quoted: true)
    }

    /// Where an unquoted JSON object or array starting at `start` ends, when it is the whole cell
    /// (a comma, a line end or the end of the input follows) and valid JSON; nil otherwise, and the
    /// cell is read as any other. Strings inside are skipped with their escapes, so their commas,
    /// quotes and brackets belong to the value; JSON text holds no raw line break.
    private func jsonEnd(from start: Int) -> Int? {
        guard start < bytes.count, bytes[start] == UInt8(ascii: "{") || bytes[start] == UInt8(ascii: "[") else { return nil }
        var depth = 0
        var offset = start
        var inString = false
        while offset < bytes.count {
            let current = bytes[offset]
            if inString {
                if current == UInt8(ascii: "\\") {
                    offset += 1
                } else if current == Self.quote {
                    inString = false
                } else if isLineEnd(current) {
                    return nil
                }
            } else {
                switch current {
                case Self.quote: inString = true
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
                case Self.carriageReturn, Self.lineFeed: return nil
                default: break
                }
            }
            offset += 1
            if depth == 0 && !inString { break }
        }
        guard depth == 0, !inString else { return nil }
        if let next = byte(at: offset), next != Self.comma, !isLineEnd(next) { return nil }
        guard (try? JSONParser.parse(bytes: Array(bytes[start..<offset]))) != nil else { return nil }
        return offset
    }

    private func byte(at offset: Int) -> UInt8? { offset < bytes.count ? bytes[offset] : nil }

    private func isLineEnd(_ byte: UInt8) -> Bool { byte == Self.lineFeed || byte == Self.carriageReturn }

    /// Steps over one line end: CRLF, LF or CR.
    private mutating func skipLineEnd() {
        if bytes[index] == Self.carriageReturn, byte(at: index + 1) == Self.lineFeed { index += 1 }
        index += 1
        line += 1
        lineStart = index
    }

    /// The 1-based column of `offset` on the current line, in Unicode scalars.
    private func column(at offset: Int) -> Int {
        bytes[lineStart..<offset].reduce(1) { $1 & 0xC0 == 0x80 ? $0 : $0 + 1 }
    }

    private func error(_ message: String) -> TSyncError {
        .invalidInput("invalid CSV at line \(line), column \(column(at: index)): \(message)")
    }
}
