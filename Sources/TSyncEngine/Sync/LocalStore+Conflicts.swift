import GRDB
import TSyncModel

/// One entry of the error table with what is needed to understand and settle it
/// (`tsync conflicts`, docs/DESIGN.md §2.6): the error, and base / ours / theirs.
public struct ConflictDetails: Sendable, Equatable {
    /// The recorded error.
    public var error: OperationError
    /// The last server copy the client saw before its change (nil for a new item).
    public var base: TSyncModel.Record?
    /// The local record now (nil when the operation is a delete or the record is gone).
    public var ours: TSyncModel.Record?
    /// The server's copy from the failed answer (409/412), when it sent one, or a newer one a
    /// pull brought since (and skipped, the change being queued).
    public var theirs: TSyncModel.Record?

    /// The error's class (`version-conflict`, `missing`, …), from its operation and status.
    public var failureClass: FailureClass { error.failureClass }
    /// User fields that differ between ours and theirs.
    public var differingFields: [String] { ThreeWayMerge.differingFields(ours?.fields, theirs?.fields) }
    /// User fields our change touched, against the base.
    public var fieldsChangedByUs: [String] { ThreeWayMerge.differingFields(base?.fields, ours?.fields) }
    /// User fields the server's side changed, against the base.
    public var fieldsChangedByThem: [String] { ThreeWayMerge.differingFields(base?.fields, theirs?.fields) }
}

extension LocalStore {
    /// The error table with base / ours / theirs, in queue order; `ids` and `table` restrict it.
    public func conflictDetails(ids: [Int64]? = nil, table: String? = nil) throws(TSyncError) -> [ConflictDetails] {
        try read { db in
            if let table { try StoreRows.requireTable(db, table) }
            return try Self.conflictDetails(db, ids: ids, table: table)
        }
    }

    static func conflictDetails(_ db: Database, ids: [Int64]?, table: String?) throws -> [ConflictDetails] {
        try ConflictRow.fetch(db, ids: ids, table: table).map { try $0.details() }
    }
}

/// An error with its item's base, local record and skipped copy, as the store holds them (text):
/// one statement reads them for any number of errors (four statements an error before, a tenth
/// of what settling 10,000 cost), and each is decoded only as far as its use needs.
struct ConflictRow {
    var id: Int64
    var operationSeq: Int64
    var table: String
    var itemID: String
    var kind: OperationKind
    var httpStatus: Int?
    var message: String
    var sentItem: String?
    var serverItem: String?
    var createdAt: String
    var base: String?
    /// The `records` row (body, created_at, updated_at, version); nil for a delete's error.
    var record: (body: String, createdAt: String?, updatedAt: String?, version: String?)?
    var skipped: String?
    /// The item sent, when the caller holds it decoded (a push settling a 412 it met): it is
    /// taken instead of `sentItem`.
    var sent: [String: JSONValue]?

    var item: ItemKey { ItemKey(table: table, id: itemID) }

    /// The rows a push settling the answers of `operations` at once needs, by operation: an
    /// error not recorded (id 0, HTTP 412, created `now`; the caller gives the message and the
    /// item sent) with its item's base, record and skipped copy. An operation no longer queued
    /// is absent.
    static func fetch(_ db: Database, operations: [Int64], at now: Timestamp) throws -> [Int64: ConflictRow] {
        guard !operations.isEmpty else { return [:] }
        let createdAt = now.iso8601
        var rows: [Int64: ConflictRow] = [:]
        let cursor = try Row.fetchCursor(
            db,
            sql: """
                SELECT o.seq, o.tbl, o.item_id, o.kind, b.item, r.body, r.created_at, r.updated_at, r.version, s.item
                FROM json_each(?) j
                JOIN operations o ON o.seq = j.value
                LEFT JOIN bases b ON b.tbl = o.tbl AND b.id = o.item_id
                LEFT JOIN records r ON r.tbl = o.tbl AND r.id = o.item_id AND o.kind <> 'delete'
                LEFT JOIN skipped s ON s.tbl = o.tbl AND s.id = o.item_id
                """,
            arguments: [JSONSerializer.string(.array(operations.map(JSONValue.int)))])
        while let row = try cursor.next() {
            let seq: Int64 = row[0]
            let body: String? = row[5]
            rows[seq] = ConflictRow(
                id: 0, operationSeq: seq, table: row[1], itemID: row[2], kind: OperationKind(rawValue: row[3]) ?? .update,
                httpStatus: 412, message: "", sentItem: nil, serverItem: nil, createdAt: createdAt, base: row[4],
                record: body.map { ($0, row[6], row[7], row[8]) }, skipped: row[9])
        }
        return rows
    }

    /// The texts a row is read with (`fetch`); the others are left nil.
    struct Texts: OptionSet {
        let rawValue: Int
        static let sentItem = Texts(rawValue: 1)
        static let serverItem = Texts(rawValue: 2)
        static let base = Texts(rawValue: 4)
        static let record = Texts(rawValue: 8)
        static let skipped = Texts(rawValue: 16)
        static let all: Texts = [.sentItem, .serverItem, .base, .record, .skipped]

        /// What settling with `resolution` reads (`details(settling:)`, the skipped copy).
        static func settling(_ resolution: Resolution) -> Texts {
            switch resolution {
            case .cancel: []
            case .theirs, .ours: [.skipped]
            case .discard: [.base, .skipped]
            case .merge: [.sentItem, .base, .record, .skipped]
            }
        }
    }

    /// The errors `ids` and `table` select (all when both are nil), in queue order, read with
    /// `texts` only (the bodies and items a settle does not decode are not copied out either).
    static func fetch(_ db: Database, ids: [Int64]?, table: String?, texts: Texts = .all) throws -> [ConflictRow] {
        var conditions = ["1"]
        var arguments = StatementArguments()
        if let ids {
            if ids.isEmpty { return [] }
            conditions.append("e.id IN (SELECT value FROM json_each(?))")
            _ = arguments.append(contentsOf: [JSONSerializer.string(.array(ids.map(JSONValue.int)))])
        }
        if let table {
            conditions.append("e.tbl = ?")
            _ = arguments.append(contentsOf: [table])
        }
        func column(_ text: Texts, _ name: String) -> String { texts.contains(text) ? name : "NULL" }
        let record = texts.contains(.record) ? "r.body, r.created_at, r.updated_at, r.version" : "NULL, NULL, NULL, NULL"
        let cursor = try Row.fetchCursor(
            db.cachedStatement(
                sql: """
                    SELECT e.id, e.operation_seq, e.tbl, e.item_id, e.kind, e.http_status, e.message, \(column(.sentItem, "e.sent_item")),
                        \(column(.serverItem, "e.server_item")), e.created_at, \(column(.base, "b.item")), \(record),
                        \(column(.skipped, "s.item"))
                    FROM errors e
                    LEFT JOIN bases b ON b.tbl = e.tbl AND b.id = e.item_id
                    LEFT JOIN records r ON r.tbl = e.tbl AND r.id = e.item_id AND e.kind <> 'delete'
                    LEFT JOIN skipped s ON s.tbl = e.tbl AND s.id = e.item_id
                    WHERE \(conditions.joined(separator: " AND ")) ORDER BY e.operation_seq
                    """),
            arguments: arguments)
        var rows: [ConflictRow] = []
        while let row = try cursor.next() {
            let body: String? = row[11]
            rows.append(
                ConflictRow(
                    id: row[0], operationSeq: row[1], table: row[2], itemID: row[3], kind: OperationKind(rawValue: row[4]) ?? .update,
                    httpStatus: row[5], message: row[6], sentItem: row[7], serverItem: row[8], createdAt: row[9], base: row[10],
                    record: body.map { ($0, row[12], row[13], row[14]) }, skipped: row[15]))
        }
        return rows
    }

    /// The error and base / ours / theirs, as `tsync conflicts` shows them.
    func details() throws -> ConflictDetails {
        try details(sentItem: true, serverItem: true, base: true, ours: true)
    }

    /// What settling with `resolution` reads of the error: never the server's item and theirs
    /// (it is given the server's copy); the item sent and the local record only for a merge; the
    /// base only for a merge or a discard. The rest is left nil.
    func details(settling resolution: Resolution) throws -> ConflictDetails {
        try details(
            sentItem: resolution == .merge, serverItem: false, base: resolution == .merge || resolution == .discard,
            ours: resolution == .merge)
    }

    private func details(sentItem decodeSentItem: Bool, serverItem decodeServerItem: Bool, base decodeBase: Bool, ours decodeOurs: Bool)
        throws -> ConflictDetails
    {
        let error = OperationError(
            id: id, operationSeq: operationSeq, table: table, itemID: itemID, kind: kind, httpStatus: httpStatus, message: message,
            sentItem: try decodeSentItem ? sent ?? sentItem.map { try StoredJSON.decodeObject($0, what: "error item") } : nil,
            serverItem: try decodeServerItem ? serverItem.map { try StoredJSON.decodeObject($0, what: "error item") } : nil,
            createdAt: Timestamp(iso8601: createdAt) ?? Timestamp(millisecondsSinceEpoch: 0))
        let base = try (decodeBase ? base : nil).map {
            try TSyncModel.Record(wire: try StoredJSON.decodeObject($0, what: "base of \(table)/\(itemID)"))
        }
        let ours = try (decodeOurs ? record : nil).map { record in
            TSyncModel.Record(
                id: itemID, fields: try StoredJSON.decodeObject(record.body, what: "record \(table)/\(itemID)"),
                system: SystemProperties(
                    createdAt: record.createdAt.flatMap(Timestamp.init(iso8601:)),
                    updatedAt: record.updatedAt.flatMap(Timestamp.init(iso8601:)), version: record.version))
        }
        guard decodeServerItem else { return ConflictDetails(error: error, base: base, ours: ours, theirs: nil) }
        var theirs = try error.serverItem.map { try TSyncModel.Record(wire: $0) }
        // A pull after the failure may have skipped a newer copy (docs/DESIGN.md §8): theirs is the
        // newest copy the store has seen.
        if let skipped = try skippedCopy(),
            theirs.map({ LocalStore.isNewer(skipped, than: $0) }) ?? (httpStatus != 404 && httpStatus != 410)
        {
            theirs = skipped
        }
        return ConflictDetails(error: error, base: base, ours: ours, theirs: theirs)
    }

    /// The server copy a pull skipped, if one is kept.
    func skippedCopy() throws -> TSyncModel.Record? {
        try skipped.map { try TSyncModel.Record(wire: try StoredJSON.decodeObject($0, what: "skipped copy of \(table)/\(itemID)")) }
    }
}
