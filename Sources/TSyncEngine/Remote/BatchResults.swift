import TSyncModel

/// Pairs the `results` of a batch answer with the operations sent (docs/DESIGN.md §4).
///
/// A result is an operation's answer only when the pairing is certain: a result attached to the
/// wrong operation makes another writer's copy look like this operation's success, or a 412 of one
/// item settle another. tsync serve names each result's operation (`index`, its
/// position in the request, and `id`); a plain answer without them is paired by position, which
/// is checked as far as the results allow (a record must be the operation's item). Anything that
/// does not pair one to one (a result missing, twice, out of range, or naming another item) is a
/// protocol error for the whole batch: nothing of it is settled, every operation stays in flight.
///
/// An answer is read in one of two ways, paired by the same code: `match` takes results parsed into
/// `JSONValue`s (any server's answer), `read` takes the bytes of an answer as tsync serve writes it
/// (`BatchAnswerDecoder`) and gives up, for `match` to decide, on anything it is not sure of.
enum BatchResults {
    /// One result as read: what pairing and answering need of it.
    struct Entry {
        enum ID {
            case absent
            case text(String)
            /// Present, and not a string.
            case other
        }

        enum Item {
            case none
            case record(Record)
            /// Read from the answer's bytes: the user fields still as their text.
            case stored(StoredRecord)
        }

        /// Whether the result has an `index` member at all (of any type).
        var hasIndex = false
        var index: Int64?
        var id = ID.absent
        var status: Int64?
        /// The `error` member, when it is a string.
        var message: String?
        var item = Item.none
    }

    static func match(_ results: [JSONValue], to operations: [BatchOperation], endpoint: RemoteEndpoint) throws(TSyncError)
        -> [RemoteAnswer]
    {
        var entries: [Entry] = []
        entries.reserveCapacity(results.count)
        for result in results {
            guard let object = result.objectValue else {
                throw refusal(endpoint, operations, "a result is \(result.kindName), not an object")
            }
            var entry = Entry()
            entry.hasIndex = object["index"] != nil
            if case .int(let index)? = object["index"] { entry.index = index }
            switch object["id"] {
            case nil: entry.id = .absent
            case .string(let text)?: entry.id = .text(text)
            case _?: entry.id = .other
            }
            if case .int(let status)? = object["status"] { entry.status = status }
            entry.message = object["error"]?.stringValue
            if let record = object["item"]?.objectValue.flatMap({ try? Record(wire: $0) }) { entry.item = .record(record) }
            entries.append(entry)
        }
        // Records parsed in full need nothing of the request.
        return try answers(entries, to: operations, endpoint: endpoint) { _, _ in nil } ?? []
    }

    /// The answers read from the bytes of a batch answer as tsync serve writes it, nil when the
    /// byte reader is not sure of it (read it with `match`). `sentItems` gives the bytes of the
    /// item each operation sent (as `BatchOperation.write` wrote it): a record whose user fields
    /// are those same bytes takes the sent item's fields without reading them again, and its
    /// position is in `fieldsAsSent`.
    static func read(
        _ body: [UInt8], to operations: [BatchOperation], sentItems: (Int) -> ArraySlice<UInt8>?, endpoint: RemoteEndpoint
    ) throws(TSyncError) -> (answers: [RemoteAnswer], fieldsAsSent: Set<Int>)? {
        guard let entries = BatchAnswerDecoder.entries(body) else { return nil }
        var asSent = Set<Int>(minimumCapacity: operations.count)
        let answers = try answers(entries, to: operations, endpoint: endpoint) { stored, index in
            let (record, same) = record(stored, sent: operations[index], bytes: sentItems(index))
            if same { asSent.insert(index) }
            return record
        }
        return answers.map { ($0, asSent) }
    }

    /// Pairs `entries` with `operations` and makes each answer. `record` turns a stored item into
    /// a `Record` for operation N; nil when it cannot, and then the whole answer is nil.
    private static func answers(
        _ entries: [Entry], to operations: [BatchOperation], endpoint: RemoteEndpoint, record: (StoredRecord, Int) -> Record?
    ) throws(TSyncError) -> [RemoteAnswer]? {
        func refuse(_ why: String) -> TSyncError { refusal(endpoint, operations, why) }
        let indexed = entries.filter(\.hasIndex).count
        var ordered: [Int?] = Array(repeating: nil, count: operations.count)
        if indexed == 0 {
            guard entries.count == operations.count else {
                throw refuse("\(entries.count) results for \(operations.count) operations")
            }
            ordered = Array(entries.indices)
        } else {
            guard indexed == entries.count else { throw refuse("some results carry an index, others none") }
            for (position, entry) in entries.enumerated() {
                guard let index = entry.index, index >= 0, index < operations.count else {
                    throw refuse("a result's index is not one of the operations'")
                }
                guard ordered[Int(index)] == nil else { throw refuse("two results for operation \(index)") }
                ordered[Int(index)] = position
            }
            if let missing = ordered.firstIndex(where: { $0 == nil }) { throw refuse("no result for operation \(missing)") }
        }
        var answers: [RemoteAnswer] = []
        answers.reserveCapacity(operations.count)
        for (index, operation) in operations.enumerated() {
            let entry = ordered[index].map { entries[$0] } ?? Entry()
            switch entry.id {
            case .absent: break
            case .text(let id) where id.utf8.elementsEqual(operation.id.utf8): break
            case .text, .other: throw refuse("the result for \(operation.table)/\(operation.id) names another item")
            }
            guard let code = entry.status else { throw refuse("a result has no status") }
            let status = Int(code)
            let itemID: String?
            switch entry.item {
            case .none: itemID = nil
            case .record(let record): itemID = record.id
            case .stored(let stored): itemID = stored.id
            }
            if let itemID, !itemID.utf8.elementsEqual(operation.id.utf8) {
                throw refuse("the result for \(operation.table)/\(operation.id) carries the record of \(itemID)")
            }
            let serverRecord: Record?
            switch entry.item {
            case .none: serverRecord = nil
            case .record(let parsed): serverRecord = parsed
            case .stored(let stored):
                guard let made = record(stored, index) else { return nil }
                serverRecord = made
            }
            if (200..<300).contains(status) {
                answers.append(.accepted(status: status, record: serverRecord))
            } else {
                answers.append(.rejected(status: status, message: entry.message ?? "HTTP \(status)", serverRecord: serverRecord))
            }
        }
        return answers
    }

    private static func refusal(_ endpoint: RemoteEndpoint, _ operations: [BatchOperation], _ why: String) -> TSyncError {
        endpoint.unexplained("its batch results do not match the operations sent (\(why))", operations: operations.count)
    }

    /// The record of a stored item. Its user fields are the text `BatchAnswerDecoder` wrote as
    /// the serializer writes them; when that text is the sent item's without its `id` (a write
    /// stored as sent, nearly every answer of a push), they are the sent item's values, which the
    /// same text reads back to, and nothing is parsed (`asSent`).
    private static func record(_ stored: StoredRecord, sent operation: BatchOperation, bytes: ArraySlice<UInt8>?)
        -> (Record?, asSent: Bool)
    {
        let system = SystemProperties(
            createdAt: stored.createdAt, updatedAt: stored.updatedAt, version: stored.version, deleted: stored.deleted)
        if let bytes, var fields = operation.item, fields["id"] == .string(operation.id),
            sameFields(stored.body, asSentItem: bytes, id: operation.id)
        {
            fields.removeValue(forKey: "id")
            return (Record(id: stored.id, fields: fields, system: system), true)
        }
        guard let fields = try? StoredJSON.decodeObject(stored.body, what: "answer") else { return (nil, false) }
        return (Record(id: stored.id, fields: fields, system: system), false)
    }

    /// Whether `body` (`{…}`, user fields as the serializer writes them) is `item` (the serializer's
    /// bytes of the fields with `id`, which it writes first) without its `id` member.
    static func sameFields(_ body: String, asSentItem item: ArraySlice<UInt8>, id: String) -> Bool {
        var prefix = Array(#"{"id":"#.utf8)
        JSONSerializer.writeString(id, to: &prefix)
        guard item.count > prefix.count, item.starts(with: prefix) else { return false }
        let rest = item[(item.startIndex + prefix.count)...]
        var body = body
        return body.withUTF8 { body in
            guard let first = rest.first, body.count >= 2, body[0] == UInt8(ascii: "{") else { return false }
            if first == UInt8(ascii: "}") { return rest.count == 1 && body.count == 2 && body[1] == UInt8(ascii: "}") }
            // `,"a":1}` against `{"a":1}`.
            return first == UInt8(ascii: ",") && body.count == rest.count && body[1...].elementsEqual(rest.dropFirst())
        }
    }
}

/// Reads a batch answer as tsync serve writes it (`{"results": [{"error"?, "id", "index", "item"?,
/// "status"}, …]}`, `WriteAnswer.write`) straight from its bytes: each result's item is read as a
/// page's record is (`StoredPageDecoder`), its user fields kept as text, with no `JSONValue` tree
/// for the answer, which was most of the work of reading it.
///
/// It takes only what it is sure of: results whose members are those, each once, of their own
/// types (strings without escapes, integers, a record the page reader takes). Anything else (an
/// unknown member, an escaped message, `violations`, another server's answer, a damaged one) gives
/// nil, and the answer is read the general way (`BatchResults.match`), which decides and words
/// every refusal.
enum BatchAnswerDecoder {
    static func entries(_ body: [UInt8]) -> [BatchResults.Entry]? {
        body.withUnsafeBufferPointer { buffer in
            var cursor = CanonicalJSONCursor(buffer)
            guard cursor.take(UInt8(ascii: "{")), let name = cursor.memberName(), cursor.range(name, is: "results"),
                cursor.take(UInt8(ascii: "["))
            else { return nil }
            var entries: [BatchResults.Entry] = []
            var recordBody: [UInt8] = []
            recordBody.reserveCapacity(512)
            var members = CanonicalJSONCursor.Members(start: 0)
            if !cursor.take(UInt8(ascii: "]")) {
                repeat {
                    guard let entry = entry(&cursor, body: &recordBody, members: &members) else { return nil }
                    entries.append(entry)
                } while cursor.take(UInt8(ascii: ","))
                guard cursor.take(UInt8(ascii: "]")) else { return nil }
            }
            guard cursor.take(UInt8(ascii: "}")) else { return nil }
            cursor.skipWhitespace()
            guard cursor.atEnd else { return nil }
            return entries
        }
    }

    private static func entry(
        _ cursor: inout CanonicalJSONCursor, body: inout [UInt8], members: inout CanonicalJSONCursor.Members
    ) -> BatchResults.Entry? {
        guard cursor.take(UInt8(ascii: "{")) else { return nil }
        var entry = BatchResults.Entry()
        if cursor.take(UInt8(ascii: "}")) { return entry }
        var seenID = false
        var seenItem = false
        repeat {
            guard let name = cursor.memberName() else { return nil }
            if cursor.range(name, is: "index") {
                guard !entry.hasIndex, let index = cursor.integer() else { return nil }
                entry.hasIndex = true
                entry.index = index
            } else if cursor.range(name, is: "id") {
                guard !seenID, let id = cursor.plainStringValue() else { return nil }
                seenID = true
                entry.id = .text(id)
            } else if cursor.range(name, is: "status") {
                guard entry.status == nil, let status = cursor.integer() else { return nil }
                entry.status = status
            } else if cursor.range(name, is: "item") {
                var days = Timestamp.DayMemo()
                guard !seenItem, let record = StoredPageDecoder.readRecord(&cursor, body: &body, members: &members, days: &days)
                else { return nil }
                seenItem = true
                entry.item = .stored(record)
            } else if cursor.range(name, is: "error") {
                guard entry.message == nil, let message = cursor.plainStringValue() else { return nil }
                entry.message = message
            } else {
                return nil
            }
        } while cursor.take(UInt8(ascii: ","))
        guard cursor.take(UInt8(ascii: "}")) else { return nil }
        return entry
    }
}
