import TSyncModel

/// A record of a pull in the form the store keeps it: the system properties, and the user fields
/// as the text of the `records.body` column (`StoredJSON.encode(fields)`, byte for byte).
package struct StoredRecord: Sendable, Equatable {
    package var id: String
    package var createdAt: Timestamp?
    package var updatedAt: Timestamp?
    package var version: String?
    package var deleted: Bool
    /// The user fields, as the store writes them.
    package var body: String

    package init(_ record: Record) {
        id = record.id
        createdAt = record.system.createdAt
        updatedAt = record.system.updatedAt
        version = record.system.version
        deleted = record.system.deleted
        body = StoredJSON.encode(record.fields)
    }

    init(id: String, createdAt: Timestamp?, updatedAt: Timestamp?, version: String?, deleted: Bool, body: String) {
        self.id = id
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.version = version
        self.deleted = deleted
        self.body = body
    }

    /// The record itself, for the rare uses that need its fields (a copy kept for `resolve`).
    func record() throws(TSyncError) -> Record {
        Record(
            id: id, fields: try StoredJSON.decodeObject(body, what: "record \(id) of a page"),
            system: SystemProperties(createdAt: createdAt, updatedAt: updatedAt, version: version, deleted: deleted))
    }
}

/// One page of a pull, its records in the store's form (`SyncRemote.readStoredPage`).
package struct StoredPage: Sendable {
    package var records: [StoredRecord]
    /// The server's `Link` to the next page, as sent (`Page.nextLink`); nil on the last.
    package var nextLink: String?
    /// The server's count of the matching records over all pages, when it was asked and told.
    package var totalCount: Int?
    /// For a request with `wait`: the seconds the server says it applied (`Page.waitApplied`).
    package var waitApplied: Int?
    /// The answer's `Date`, the server's clock (`Page.serverDate`).
    package var serverDate: Timestamp?
    /// The server's tombstone horizon (`Page.deletedHorizon`).
    package var deletedHorizon: Timestamp?
    /// The tag of the table's schema (`Page.schemaTag`).
    package var schemaTag: String?
    /// The largest `$top` the server takes (`Page.maximumTop`).
    package var maximumTop: Int?
    /// The rest of a streamed answer, whose next line is the page after this one (`PageLines`).
    package var lines: PageLines?

    package init(_ page: Page) {
        records = page.records.map(StoredRecord.init)
        nextLink = page.nextLink
        totalCount = page.totalCount
        waitApplied = page.waitApplied
        serverDate = page.serverDate
        deletedHorizon = page.deletedHorizon
        schemaTag = page.schemaTag
        maximumTop = page.maximumTop
    }

    init(records: [StoredRecord], nextLink: String?, totalCount: Int?, waitApplied: Int?, serverDate: Timestamp?) {
        self.records = records
        self.nextLink = nextLink
        self.totalCount = totalCount
        self.waitApplied = waitApplied
        self.serverDate = serverDate
    }
}

/// Reads a page as `tsync serve` writes it (docs/DESIGN.md §6.2, `PageRecord.stored`) straight
/// into `StoredRecord`s: each record's user fields are copied as the store keeps them, with no
/// `JSONValue`, dictionary or re-serialization per record, which were most of a pull's work.
///
/// It takes only what it is sure of (`CanonicalJSONCursor`): a JSON array of records, or an object
/// of `results` and `count`; in each record a string `id`, system properties of their own types,
/// and user fields named in plain ASCII, each once. Anything else (another server's order or
/// escapes in names, a damaged page) gives nil, and the caller reads the page the general way,
/// which keeps every rule and error message of `Record(wire:)` and `JSONParser`.
enum StoredPageDecoder {
    static func decode(_ body: [UInt8]) -> (records: [StoredRecord], totalCount: Int?)? {
        body.withUnsafeBufferPointer { buffer in
            var cursor = CanonicalJSONCursor(buffer)
            var records: [StoredRecord] = []
            var totalCount: Int?
            if cursor.next(is: UInt8(ascii: "[")) {
                guard readRecords(&cursor, into: &records) else { return nil }
            } else {
                guard cursor.take(UInt8(ascii: "{")) else { return nil }
                var sawResults = false
                var sawCount = false
                repeat {
                    guard let name = cursor.memberName() else { return nil }
                    if cursor.range(name, is: "results"), !sawResults {
                        sawResults = true
                        guard readRecords(&cursor, into: &records) else { return nil }
                    } else if cursor.range(name, is: "count"), !sawCount {
                        sawCount = true
                        guard let count = cursor.integer() else { return nil }
                        if count >= 0 { totalCount = Int(count) }
                    } else {
                        return nil
                    }
                } while cursor.take(UInt8(ascii: ","))
                guard sawResults, cursor.take(UInt8(ascii: "}")) else { return nil }
            }
            cursor.skipWhitespace()
            guard cursor.atEnd else { return nil }
            return (records, totalCount)
        }
    }

    private static func readRecords(_ cursor: inout CanonicalJSONCursor, into records: inout [StoredRecord]) -> Bool {
        guard cursor.take(UInt8(ascii: "[")) else { return false }
        if cursor.take(UInt8(ascii: "]")) { return true }
        var body: [UInt8] = []
        body.reserveCapacity(512)
        var members = CanonicalJSONCursor.Members(start: 0)
        var days = Timestamp.DayMemo()
        repeat {
            guard let record = readRecord(&cursor, body: &body, members: &members, days: &days) else { return false }
            records.append(record)
        } while cursor.take(UInt8(ascii: ","))
        return cursor.take(UInt8(ascii: "]"))
    }

    /// One record of a page (also an item of a batch answer, `BatchAnswerDecoder`).
    static func readRecord(
        _ cursor: inout CanonicalJSONCursor, body: inout [UInt8], members: inout CanonicalJSONCursor.Members,
        days: inout Timestamp.DayMemo
    ) -> StoredRecord? {
        guard cursor.take(UInt8(ascii: "{")) else { return nil }
        body.removeAll(keepingCapacity: true)
        body.append(UInt8(ascii: "{"))
        var id: String?
        var createdAt: Timestamp??
        var updatedAt: Timestamp??
        var version: String??
        var deleted: Bool??
        members.reset(start: body.count)
        if !cursor.take(UInt8(ascii: "}")) {
            repeat {
                guard let name = cursor.memberName() else { return nil }
                // The system properties' names are 2, 7 and 9 bytes long: most user fields'
                // names are told apart by their length alone.
                let system = name.count == 2 || name.count == 7 || name.count == 9
                if system, cursor.range(name, is: "id") {
                    guard id == nil, let text = cursor.plainStringValue(), (try? Identifiers.validateRecordID(text)) != nil
                    else { return nil }
                    id = text
                } else if system, cursor.range(name, is: "createdAt") {
                    guard createdAt == nil, let timestamp = timestamp(&cursor, memo: &days) else { return nil }
                    createdAt = timestamp
                } else if system, cursor.range(name, is: "updatedAt") {
                    guard updatedAt == nil, let timestamp = timestamp(&cursor, memo: &days) else { return nil }
                    updatedAt = timestamp
                } else if system, cursor.range(name, is: "version") {
                    guard version == nil else { return nil }
                    if cursor.null() {
                        version = .some(nil)
                    } else {
                        guard let text = cursor.plainStringValue() else { return nil }
                        version = text
                    }
                } else if system, cursor.range(name, is: "deleted") {
                    guard deleted == nil, let flag = cursor.booleanOrNull() else { return nil }
                    deleted = flag
                } else {
                    members.begin(name, in: cursor, output: &body)
                    guard cursor.copyValue(to: &body) else { return nil }
                    members.end(output: body)
                }
            } while cursor.take(UInt8(ascii: ","))
            guard cursor.take(UInt8(ascii: "}")), members.finish(in: cursor, output: &body) else { return nil }
        }
        guard let id else { return nil }
        body.append(UInt8(ascii: "}"))
        return StoredRecord(
            id: id, createdAt: createdAt ?? nil, updatedAt: updatedAt ?? nil, version: version ?? nil,
            deleted: (deleted ?? nil) ?? false, body: String(decoding: body, as: UTF8.self))
    }

    /// The `id` and `updatedAt` of the last record of a page as `tsync serve` writes it (each
    /// record opens with `{"id":…,"createdAt":…,"deleted":…,"updatedAt":…`), found from the end
    /// without reading the page. A guess, and only that: a page of another form, or a last record
    /// with an object of that shape among its fields, may give nil or the wrong record. The
    /// caller checks it against the page once the page is read.
    static func lastPosition(_ body: [UInt8]) -> (id: String, updatedAt: Timestamp)? {
        let opening = Array(#"{"id":""#.utf8)
        guard body.count > opening.count else { return nil }
        // Records are far shorter than this; a page of another form is not searched through.
        let lowest = max(0, body.count - 65_536)
        var start = body.count - opening.count
        while start >= lowest, !body[start..<start + opening.count].elementsEqual(opening) { start -= 1 }
        guard start >= lowest else { return nil }
        return body.withUnsafeBufferPointer { buffer in
            var cursor = CanonicalJSONCursor(buffer)
            cursor.index = start
            var days = Timestamp.DayMemo()
            guard cursor.take(UInt8(ascii: "{")), let name = cursor.memberName(), cursor.range(name, is: "id"),
                let id = cursor.plainStringValue()
            else { return nil }
            while cursor.take(UInt8(ascii: ",")), let name = cursor.memberName() {
                if cursor.range(name, is: "updatedAt") {
                    guard case .some(.some(let updatedAt)) = timestamp(&cursor, memo: &days) else { return nil }
                    return (id, updatedAt)
                } else if cursor.range(name, is: "createdAt") {
                    guard timestamp(&cursor, memo: &days) != nil else { return nil }
                } else if cursor.range(name, is: "deleted") {
                    guard cursor.booleanOrNull() != nil else { return nil }
                } else {
                    return nil
                }
            }
            return nil
        }
    }

    /// A date string or null: `.some(nil)` for null, nil when neither. One in the fixed-width form
    /// (nearly all) is read straight from its bytes, its date through `memo`; any other goes
    /// through the string and the general parser, which decide.
    private static func timestamp(_ cursor: inout CanonicalJSONCursor, memo: inout Timestamp.DayMemo) -> Timestamp?? {
        if cursor.null() { return .some(nil) }
        let start = cursor.index
        if start + 26 <= cursor.bytes.count, cursor.bytes[start] == UInt8(ascii: "\""),
            cursor.bytes[start + 25] == UInt8(ascii: "\""),
            let timestamp = Timestamp.fixedWidth(UnsafeBufferPointer(rebasing: cursor.bytes[start + 1..<start + 25]), memo: &memo)
        {
            cursor.index = start + 26
            return timestamp
        }
        guard let range = cursor.plainString(),
            let timestamp = Timestamp(iso8601: UnsafeBufferPointer(rebasing: cursor.bytes[range]))
        else { return nil }
        return timestamp
    }
}
