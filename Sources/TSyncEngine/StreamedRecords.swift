import TSyncModel

/// Input read in pieces, so that `insert` holds a window of it instead of all of it.
package protocol ByteSource: AnyObject {
    /// Appends the next bytes of the input, at most `limit`, to `buffer`; 0 at its end.
    func read(into buffer: inout [UInt8], limit: Int) throws(TSyncError) -> Int
}

/// The records of NDJSON, a JSON array or CSV, read a window at a time by the fast readers
/// (`NewRecordsDecoder`, `CSVRecords.Layout`), which give what `NewRecords` gives for the same
/// input. They word no errors: whatever they are not sure of, or find wrong, ends the stream with
/// `.declined`, and the caller reads the whole input the general way, which decides and words it.
struct StreamedRecords {
    enum Format {
        case json
        case csv
    }

    enum Progress {
        /// The batch is full; more may follow.
        case more
        /// The input is read to its end (the batch holds its last records, if any).
        case end
        /// Read the input the general way.
        case declined
    }

    private enum Step {
        case record((id: String, body: String), end: Int)
        /// Something other than a record was read (a '[', a header, blank lines).
        case advanced(Int)
        case end
        /// More input may settle it: a record cut by the window's end, or one that is wrong.
        case stuck
        case declined
    }

    private enum JSONShape {
        case unknown
        case ndjson
        case arrayFirst
        case arrayNext
        case arrayClosed
    }

    /// Bytes read from the source at a time: records are small, and a window holds this much
    /// plus the record it cut.
    static let chunkSize = 1 << 20

    private let source: any ByteSource
    private let format: Format
    private var buffer: [UInt8] = []
    /// Where the next record starts in `buffer`.
    private var start = 0
    /// Whether `buffer` holds the end of the input.
    private var atEndOfInput = false
    /// Whether `buffer[0]` is the input's first byte (where a CSV byte order mark may be).
    private var atStartOfInput = true
    private var shape = JSONShape.unknown
    private var layout: CSVRecords.Layout?
    private var body: [UInt8] = []
    /// The members of the record being read, kept for the next (`NewRecordsDecoder.readRecord`).
    private var members = CanonicalJSONCursor.Members(start: 0)
    private var cells: [CSVRecords.CellSpan] = []
    /// The fields in the input's order (`FieldOrder`): the CSV header's, or the first JSON
    /// record's names as written; read once, with the header or that record.
    private(set) var fieldOrder: [String] = []
    private var readARecord = false
    /// Upsert's: a record without an id declines the stream (the general path says so).
    private let requiringIDs: Bool

    init(_ source: any ByteSource, format: Format, requiringIDs: Bool = false) {
        self.source = source
        self.format = format
        self.requiringIDs = requiringIDs
        body.reserveCapacity(512)
    }

    /// Appends records to `batch` until it holds `limit`.
    mutating func next(into batch: inout [(id: String, body: String)], limit: Int) throws(TSyncError) -> Progress {
        while batch.count < limit {
            switch format == .json ? jsonStep() : csvStep() {
            case .record(let record, let end):
                batch.append(record)
                if !readARecord, format == .json {
                    fieldOrder = buffer.withUnsafeBufferPointer { FieldOrder.names(json: $0, from: start) }
                }
                readARecord = true
                start = end
            case .advanced(let end): start = end
            case .end: return .end
            case .declined: return .declined
            case .stuck:
                // At the end of the input nothing more can settle it: the general path words it.
                guard !atEndOfInput else { return .declined }
                try refill()
            }
        }
        return .more
    }

    /// Drops what was read and reads more (at least a byte, or up to the end of the input).
    private mutating func refill() throws(TSyncError) {
        if start > 0 {
            buffer.removeFirst(start)
            start = 0
            atStartOfInput = false
        }
        if buffer.capacity < buffer.count + Self.chunkSize { buffer.reserveCapacity(buffer.count + Self.chunkSize) }
        while true {
            let count = try source.read(into: &buffer, limit: Self.chunkSize)
            if count == 0 { atEndOfInput = true }
            if count > 0 || atEndOfInput { return }
        }
    }

    private mutating func jsonStep() -> Step {
        let (step, shape) = buffer.withUnsafeBufferPointer { buffer in
            var cursor = CanonicalJSONCursor(buffer)
            cursor.index = start
            return Self.jsonStep(
                &cursor, shape: self.shape, body: &body, members: &members, atEndOfInput: atEndOfInput, requiringIDs: requiringIDs)
        }
        if case .record = step { self.shape = shape } else if case .advanced = step { self.shape = shape }
        return step
    }

    /// One step of `NewRecordsDecoder.decode`'s grammar: a record of NDJSON; a record of an array
    /// and the ',' or ']' after it; the '[' or white space before the first.
    private static func jsonStep(
        _ cursor: inout CanonicalJSONCursor, shape: JSONShape, body: inout [UInt8], members: inout CanonicalJSONCursor.Members,
        atEndOfInput: Bool, requiringIDs: Bool
    ) -> (Step, JSONShape) {
        cursor.skipWhitespace()
        if cursor.atEnd {
            let closed = shape == .ndjson || shape == .arrayClosed || shape == .unknown
            return (atEndOfInput && closed ? .end : .stuck, shape)
        }
        switch shape {
        case .unknown:
            return (.advanced(cursor.index), cursor.take(UInt8(ascii: "[")) ? .arrayFirst : .ndjson)
        case .ndjson:
            guard let record = NewRecordsDecoder.readRecord(&cursor, body: &body, members: &members, requiringID: requiringIDs) else {
                return (.stuck, shape)
            }
            return (.record(record, end: cursor.index), shape)
        case .arrayFirst, .arrayNext:
            if shape == .arrayFirst, cursor.take(UInt8(ascii: "]")) { return (.advanced(cursor.index), .arrayClosed) }
            guard let record = NewRecordsDecoder.readRecord(&cursor, body: &body, members: &members, requiringID: requiringIDs) else {
                return (.stuck, shape)
            }
            if cursor.take(UInt8(ascii: ",")) { return (.record(record, end: cursor.index), .arrayNext) }
            if cursor.take(UInt8(ascii: "]")) { return (.record(record, end: cursor.index), .arrayClosed) }
            return (.stuck, shape)
        case .arrayClosed:
            return (.declined, shape)
        }
    }

    private mutating func csvStep() -> Step {
        if layout == nil, atStartOfInput, start == 0 {
            // A byte order mark (spreadsheets write one) is not part of the first field's name.
            if buffer.count < 3, !atEndOfInput { return .stuck }
            if buffer.starts(with: [0xEF, 0xBB, 0xBF]) { return .advanced(3) }
        }
        if let layout {
            let read = buffer.withUnsafeBufferPointer {
                layout.record(in: $0, from: start, body: &body, cells: &cells, requiringID: requiringIDs)
            }
            if let read {
                // A row that reaches the window's end may go on in the next.
                guard read.end < buffer.count || atEndOfInput else { return .stuck }
                return .record(read.record, end: read.end)
            }
        }
        var reader = CSVReader(bytes: buffer, from: start)
        let next: CSVReader.Row?
        do {
            next = try reader.row()
        } catch {
            // A row that is wrong, or a quoted cell still open at the window's end.
            return .stuck
        }
        guard let row = next else { return atEndOfInput ? .end : .stuck }
        // A row that reaches the window's end may go on in the next.
        guard reader.position < buffer.count || atEndOfInput else { return .stuck }
        guard let layout else {
            guard let header = CSVRecords.Layout(header: row) else { return .declined }
            layout = header
            fieldOrder = FieldOrder.names(header: row.cells.map(\.text))
            return .advanced(reader.position)
        }
        guard let record = layout.record(row, body: &body, requiringID: requiringIDs) else { return .declined }
        return .record(record, end: reader.position)
    }
}
