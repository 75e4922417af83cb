import GRDB
import TSyncModel
import TSyncSQLite

/// An item of a table, compared by the bytes of its table name and id, as SQLite compares them
/// (Swift's `String ==` would take "é" and "e" + U+0301 for one id).
package struct ItemKey: Hashable, Sendable {
    let table: String
    let id: String

    /// Equal when table and id are (`String.sameBytes`).
    package static func == (a: ItemKey, b: ItemKey) -> Bool {
        a.id.sameBytes(as: b.id) && a.table.sameBytes(as: b.table)
    }

    /// Hashes the bytes of table and id, each as one buffer: a claim hashes an item key per
    /// operation, and a call per byte was a cost of its own.
    package func hash(into hasher: inout Hasher) {
        var (table, id) = (table, id)
        table.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(0xFF as UInt8)  // never a byte of UTF-8: the two parts cannot run together
        id.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}

/// An operation taken out of the queue by a push, with what to send.
package struct OutgoingOperation: Sendable, Equatable {
    /// The queued operation.
    package var operation: PendingOperation
    /// User fields and `id` (no server properties): the body of a POST or PATCH; for a delete, the
    /// item that was deleted.
    package var item: [String: JSONValue]
    /// The version to send in `If-Match`: the base's (the last server copy the client saw), else
    /// the item's own; nil for an item the server has not seen.
    package var version: String?
    /// An update whose base is a copy the server deleted (`resolve --ours` against a server-side
    /// delete): the server copy is undeleted (`If-Match` the deleted version) before the update,
    /// since the protocol answers 404 to an update of a deleted item.
    package var restoresDeleted = false
    /// Claimed while already in flight: an earlier push sent it and never learned the answer, so
    /// the server may have applied it whatever this push does.
    package var sentBefore = false

    /// An operation as it will be sent.
    package init(
        operation: PendingOperation, item: [String: JSONValue], version: String?, restoresDeleted: Bool = false,
        sentBefore: Bool = false
    ) {
        self.operation = operation
        self.item = item
        self.version = version
        self.restoresDeleted = restoresDeleted
        self.sentBefore = sentBefore
    }
}

/// An operation sent, and what the server's answer to it means. A struct, not a pair: an array's
/// pairs were copied and destroyed through the runtime's generic witnesses for tuples (7% of the
/// client's CPU in a push of new records), a struct's through code the compiler writes out.
package struct AnsweredOperation: Sendable {
    package var outgoing: OutgoingOperation
    package var verdict: PushVerdict

    package init(_ outgoing: OutgoingOperation, _ verdict: PushVerdict) {
        self.outgoing = outgoing
        self.verdict = verdict
    }
}

/// An operation the server accepted, and the record it sent back (nil for a 204). A struct, not a
/// pair, for the reason `AnsweredOperation` is one.
struct AcceptedOperation: Sendable {
    var outgoing: OutgoingOperation
    var record: TSyncModel.Record?

    init(_ outgoing: OutgoingOperation, _ record: TSyncModel.Record?) {
        self.outgoing = outgoing
        self.record = record
    }
}

/// The queue steps of push: claim (mark in flight), complete (apply the answers), release (put
/// back what was not delivered). Operations are claimed and completed in batches, so the store's
/// commit cost (an fsync each) is paid per batch, not per operation. Each step is one
/// transaction, so a push killed at any point leaves every operation pending, in flight (sent
/// again next time, with the very item saved when it was claimed, so `PushVerdict` recognises a
/// duplicate), or done.
extension LocalStore {
    /// Operations push would send now, in queue order, skipping every operation of an item whose
    /// earlier (or own) operation has an unsettled error: an error holds back only its own item
    /// (docs/DESIGN.md §2.3), and an item's operations are never reordered.
    package func pushableOperations(tables: [String]?) throws(TSyncError) -> [OutgoingOperation] {
        try read { db in try Self.selectPushable(db, tables: tables, limit: nil) }
    }

    /// How many operations push would send now (`pushableOperations(tables:).count`, counted by
    /// the database instead of decoding every item: a push of 100,000 must not hold them all).
    package func pushableOperationCount(tables: [String]?) throws(TSyncError) -> Int {
        try read { db in
            let (clause, arguments) = Self.tableClause(tables)
            let unblocked = try Self.hasErrors(db) ? " AND NOT EXISTS (\(Self.blockedByError))" : ""
            return try Int.fetchOne(db, sql: "SELECT count(*) FROM operations o WHERE \(clause)\(unblocked)", arguments: arguments) ?? 0
        }
    }

    /// Operations that wait behind an unsettled error (the errored ones included).
    package func heldBackOperationCount(tables: [String]?) throws(TSyncError) -> Int {
        try read { db in
            let (clause, arguments) = Self.tableClause(tables)
            return try Int.fetchOne(
                db, sql: "SELECT count(*) FROM operations o WHERE \(clause) AND EXISTS (\(Self.blockedByError))",
                arguments: arguments) ?? 0
        }
    }

    /// Whether `table` has queued operations (any state, with or without an error).
    package func hasOperations(table: String) throws(TSyncError) -> Bool {
        try read { db in try StoreRows.hasOperations(db, table: table) }
    }

    /// Marks up to `limit` pushable operations, at most one per item, in flight in one
    /// transaction, and returns them with the item to send (saved with them). An operation already
    /// in flight is returned again with its saved item: callers hold the `PushLock`, so it is the
    /// leftover of a push that died before it learned the answer.
    ///
    /// `skipping` is the rounds this push has claimed and not yet completed (on their way), and
    /// the operations its policies settled: none of their items' operations is taken, so an
    /// item's operations stay in queue order while rounds overlap. The rounds' own operations are
    /// left out by the query, by their state (`selectPushable`), not read and dropped.
    /// They come round by round, as the push holds them: joined into one array, each claim copied
    /// every operation on its way twice, several times the operations it claimed.
    package func claimOperations(tables: [String]?, limit: Int, skipping onItsWay: [[OutgoingOperation]] = []) throws(TSyncError)
        -> [OutgoingOperation]
    {
        try write { db in
            var savedItems: [String?] = []
            var claimed = try Self.selectPushable(db, tables: tables, limit: limit, skipping: onItsWay, savedItems: &savedItems)
            var fromRecords: [JSONValue] = []
            var saves = ChunkedRows(columns: 2, rows: claimed.count, bytesPerRow: 128)
            for index in claimed.indices where claimed[index].operation.state == .pending {
                let seq = claimed[index].operation.seq
                let text: String
                if claimed[index].operation.kind == .delete {
                    var saved = claimed[index].item
                    if let version = claimed[index].version { saved["version"] = .string(version) }
                    text = StoredJSON.encode(saved)
                } else if let fromBody = savedItems[index] {
                    text = fromBody
                } else {
                    fromRecords.append(.int(seq))
                    continue
                }
                saves.append(seq)
                saves.append(text)
            }
            try saves.execute(db, sql: { $0 == ChunkedRows.chunkSize ? Self.claimChunk : Self.claimSQL($0) })
            if !fromRecords.isEmpty {
                try db.execute(sql: Self.claimFromRecords, arguments: [JSONSerializer.string(.array(fromRecords))])
            }
            // Read and changed in place, by index: a copy of each operation (its item's
            // dictionary retained and released) was a cost of its own.
            for index in claimed.indices {
                claimed[index].sentBefore = claimed[index].operation.state == .inflight
                claimed[index].operation.state = .inflight
            }
            return claimed
        }
    }

    /// Puts claimed operations that this push did not deliver (never sent, or refused for want of
    /// a login) back to pending, unchanged, so later edits collapse into them again. An operation
    /// sent without an answer must not come here, and one an earlier push sent (`sentBefore`)
    /// stays in flight whatever this push did: either may have been applied, and only re-sending
    /// exactly what was sent lets the next push recognise that (docs/DESIGN.md §2.4).
    package func releaseOperations(_ operations: [OutgoingOperation]) throws(TSyncError) {
        let undelivered = operations.filter { !$0.sentBefore }
        guard !undelivered.isEmpty else { return }
        try write { db in
            for outgoing in undelivered { try Self.releaseOperation(db, seq: outgoing.operation.seq) }
        }
    }

    /// Applies the server's answers to a batch of sent operations in one transaction.
    ///
    /// With `policies`, a 412 that carried the server's copy, whose table's policy settles it,
    /// is settled in that same transaction, as `resolve` would settle it on that copy (docs/DESIGN.md
    /// §9.1), instead of going into the error table for the policy to read back: the general
    /// path's end state, without the error's row written, read and deleted. Killed before the
    /// commit, the operation is still in flight and the next push sends it again; after it, it is
    /// settled. A merge that is refused is recorded as an error, as the general path leaves it; a
    /// settle that fails rolls the transaction back, and the answers are applied again with every
    /// failure recorded, for the general path to settle (and fail as it does).
    /// `fieldsKept`: the operations whose server record is known to have the fields sent
    /// (`Pusher.Round.fieldsKept`), which are not compared again.
    /// - Returns: what each operation settled at once came to, by its `seq`.
    @discardableResult
    package func completeOperations(
        _ results: [AnsweredOperation], settling policies: ConflictPolicies? = nil, fieldsKept: Set<Int64> = []
    ) throws(TSyncError) -> [Int64: SettledAtOnce] {
        guard !results.isEmpty else { return [:] }
        let now = Timestamp.now()
        if let policies, results.contains(where: { Self.settlesAtOnce($0, policies) != nil }) {
            do {
                return try pool.write { db in try Self.complete(db, results, settling: policies, at: now, fieldsKept: fieldsKept) }
            } catch is SettleCarefully {
                // Applied again below, every failure recorded.
            } catch {
                throw StoreFailure.map(error, location: location)
            }
        }
        return try write { db in try Self.complete(db, results, settling: nil, at: now, fieldsKept: fieldsKept) }
    }

    /// What settling an operation at once (`completeOperations(_:settling:)`) came to.
    package struct SettledAtOnce: Sendable, Equatable {
        /// The policy that settled it.
        package var policy: ConflictPolicy
        /// Settled (an operation of the item still to push, or none) or refused (then recorded as an error).
        package var outcome: ResolutionOutcome
    }

    /// The policy that settles `result` at once: a 412 with the server's copy, of a table whose
    /// policy settles conflicts (`SyncSession.pushSettling` settles the same ones on the copy).
    private static func settlesAtOnce(_ result: AnsweredOperation, _ policies: ConflictPolicies) -> ConflictPolicy? {
        guard case .failed(412, let message, _?) = result.verdict else { return nil }
        let operation = result.outgoing.operation
        let policy = policies.policy(for: operation.table)
        guard policy.resolution != nil,
            ConflictPolicy.settledClasses.contains(FailureClass(kind: operation.kind, status: 412, message: message))
        else { return nil }
        return policy
    }

    /// Thrown out of a transaction that settled without savepoints when a settle fails: the
    /// transaction is rolled back, and done again the careful way.
    struct SettleCarefully: Error {}

    private static func complete(
        _ db: Database, _ results: [AnsweredOperation], settling policies: ConflictPolicies?, at now: Timestamp,
        fieldsKept: Set<Int64>
    ) throws -> [Int64: SettledAtOnce] {
        var succeeded: [AcceptedOperation] = []
        succeeded.reserveCapacity(results.count)
        var atOnce: [(OutgoingOperation, ConflictPolicy, message: String, theirs: TSyncModel.Record)] = []
        // By index: a loop over the answers copied each.
        for index in results.indices {
            switch results[index].verdict {
            case .succeeded(let serverRecord, _):
                succeeded.append(AcceptedOperation(results[index].outgoing, serverRecord))
            case .failed(let status, let message, let serverRecord):
                let result = results[index]
                if let policies, let policy = settlesAtOnce(result, policies), let serverRecord {
                    atOnce.append((result.outgoing, policy, message, serverRecord))
                    continue
                }
                try Self.saveError(
                    db, Self.newError(result.outgoing, status: status, message: message, serverRecord: serverRecord), at: now)
            }
        }
        var settled: [Int64: SettledAtOnce] = [:]
        if let policies, !atOnce.isEmpty {
            let rows = try ConflictRow.fetch(db, operations: atOnce.map(\.0.operation.seq), at: now)
            for (outgoing, policy, message, theirs) in atOnce {
                let seq = outgoing.operation.seq
                guard var row = rows[seq], let resolution = policy.resolution else { throw SettleCarefully() }
                row.message = message
                row.sent = Self.sentItem(outgoing)
                let settlement = Settlement(
                    errorID: row.id, with: resolution, theirs: .record(theirs), prefer: policies.preference(for: outgoing.operation.table))
                do {
                    try db.cachedStatement(sql: "UPDATE operations SET state = 'pending' WHERE seq = ?").execute(arguments: [seq])
                    let changes = db.totalChangesCount
                    let outcome = try Self.settle(db, details: row, settlement)
                    if case .refused = outcome {
                        // Left as the general path leaves it: in the error table.
                        guard db.totalChangesCount == changes else { throw SettleCarefully() }
                        try Self.saveError(db, Self.newError(outgoing, status: 412, message: message, serverRecord: theirs), at: now)
                    }
                    settled[seq] = SettledAtOnce(policy: policy, outcome: outcome)
                } catch {
                    throw SettleCarefully()
                }
            }
        }
        try Self.completeOperations(db, succeeded, fieldsKept: fieldsKept)
        return settled
    }

    /// The error a failed answer leaves, with the item as sent (its version included).
    private static func newError(_ outgoing: OutgoingOperation, status: Int, message: String, serverRecord: TSyncModel.Record?)
        -> NewOperationError
    {
        NewOperationError(
            operationSeq: outgoing.operation.seq, httpStatus: status, message: message, sentItem: sentItem(outgoing),
            serverItem: serverRecord?.wireObject)
    }

    /// The item as sent, its version included, as an error keeps it.
    private static func sentItem(_ outgoing: OutgoingOperation) -> [String: JSONValue] {
        var sent = outgoing.item
        if let version = outgoing.version { sent["version"] = .string(version) }
        return sent
    }

    /// Marks pending inserts and updates (their `seq`s a JSON array) in flight, saving with each
    /// what `selectPushable` sends: the record's fields without server properties, its `id`, and
    /// the version of its base, else its own. One statement for the whole claim, SQLite's JSON
    /// functions doing what a decode and an encode per operation did (the fields' text is copied,
    /// so the saved item reads back as the very values sent). Only for a record whose stored text
    /// names `id` or a server property: the others' items are made from their text as it is read
    /// (`savedItem`), which spared the two JSON functions' parse and write of every body.
    static let claimFromRecords = """
        UPDATE operations AS o SET state = 'inflight', item = (
            SELECT CASE WHEN v.version IS NULL THEN json_set(v.fields, '$.id', o.item_id)
                        ELSE json_set(v.fields, '$.id', o.item_id, '$.version', v.version) END
            FROM (
                SELECT json_remove(r.body, '$.createdAt', '$.updatedAt', '$.version', '$.deleted') AS fields,
                       COALESCE(CASE WHEN json_type(b.item, '$.version') = 'text' THEN json_extract(b.item, '$.version') END,
                                r.version) AS version
                FROM records r LEFT JOIN bases b ON b.tbl = r.tbl AND b.id = r.id
                WHERE r.tbl = o.tbl AND r.id = o.item_id) v)
        WHERE seq IN (SELECT value FROM json_each(?))
        """

    /// Marks operations (rows of `seq`, item) in flight, saving with each the item it sends.
    static func claimSQL(_ rows: Int) -> String {
        """
        UPDATE operations SET state = 'inflight', item = v.column2
        FROM (VALUES \(ChunkedRows.placeholders(rows: rows, columns: 2))) AS v WHERE operations.seq = v.column1
        """
    }

    private static let claimChunk = claimSQL(ChunkedRows.chunkSize)

    // MARK: - Selection

    /// Any operation of the same item, at or before this one, with an error.
    static let blockedByError = """
        SELECT 1 FROM errors e JOIN operations p ON p.seq = e.operation_seq
        WHERE p.tbl = o.tbl AND p.item_id = o.item_id AND p.seq <= o.seq
        """

    /// `o.tbl IN (tables)`, or true for all tables. With `inQueueOrder` the condition keeps SQLite
    /// from answering it through the index on `(tbl, item_id)` (a unary plus): that reads every
    /// pending operation of the tables and sorts them, for each claim of a push (half of what a
    /// push again after settling 10,000 conflicts cost), where the scan in `seq` order stops at
    /// the claim's limit.
    static func tableClause(_ tables: [String]?, inQueueOrder: Bool = false) -> (String, StatementArguments) {
        guard let tables, !tables.isEmpty else { return ("1", []) }
        let column = inQueueOrder ? "+o.tbl" : "o.tbl"
        return ("\(column) IN (\(Array(repeating: "?", count: tables.count).joined(separator: ",")))", StatementArguments(tables))
    }

    /// Pushable operations in queue order with what to send. With a `limit` (a claim), only the
    /// first operation of each item is taken, so a batch never holds two operations of one item.
    static func selectPushable(_ db: Database, tables: [String]?, limit: Int?) throws -> [OutgoingOperation] {
        var unused: [String?] = []
        return try selectPushable(db, tables: tables, limit: limit, skipping: [], savedItems: &unused)
    }

    /// The same, and for each pending insert or update whose stored text names neither `id` nor a
    /// server property (every record the store writes), the item a claim saves (`savedItem`), at
    /// the operation's position (nil for the others): by position, not in a dictionary by `seq`,
    /// whose two hashes an operation were a cost of each claim.
    static func selectPushable(
        _ db: Database, tables: [String]?, limit: Int?, skipping onItsWay: [[OutgoingOperation]], savedItems: inout [String?]
    ) throws -> [OutgoingOperation] {
        var (clause, arguments) = tableClause(tables, inQueueOrder: true)
        let skipped = onItsWay.reduce(0) { $0 + $1.count }
        // The items taken, those of the rounds on their way first. Sized once: grown row by row,
        // the set was rehashed a dozen times in each claim.
        let room = min(limit ?? 0, 10_000)
        var items = Set<ItemKey>(minimumCapacity: skipped + room)
        if skipped > 0 {
            var last = Int64.min
            // Read through the buffer's pointer, their seqs and items in one walk: a loop over
            // the operations copied each, its item's dictionary and strings retained and released.
            for round in onItsWay {
                round.withUnsafeBufferPointer { buffer in
                    guard let round = buffer.baseAddress else { return }
                    for index in buffer.indices {
                        last = max(last, round[index].operation.seq)
                        items.insert(ItemKey(table: round[index].operation.table, id: round[index].operation.itemID))
                    }
                }
            }
            // The skipped operations are this push's, which claimed them holding the `PushLock`,
            // and a claim takes each operation an earlier push left in flight as it meets it (the
            // first of its item, in queue order). So at or before the last of them, every
            // operation in flight is one of them, and is left out by its state; one settled, and
            // pending again, is read and dropped by its item. Looked up among the skipped ones'
            // `seq`s instead (three rounds of 1,000 on their way), each claim built a table of
            // them and searched it for every operation in flight: half of the claim's query.
            clause += " AND (o.state = 'pending' OR o.seq > ?)"
            arguments += [last]
        }
        // Columns are read by position (by name, each read searched the column names). Of the
        // base, only its version (a string) and whether it is deleted: SQLite reads them where a
        // decode of the whole base was a sixth of a claim.
        // Cached: its text has a few forms, and preparing the join again was a cost of each claim.
        let rows = try Row.fetchCursor(
            db.cachedStatement(
                sql: """
                    SELECT o.seq, o.tbl, o.item_id, o.kind, o.state, o.queued_at, o.item AS op_item,
                           r.body, r.version,
                           CASE WHEN json_type(b.item, '$.version') = 'text' THEN json_extract(b.item, '$.version') END,
                           json_type(b.item, '$.deleted') = 'true'
                    FROM operations o
                    LEFT JOIN records r ON r.tbl = o.tbl AND r.id = o.item_id
                    LEFT JOIN bases b ON b.tbl = o.tbl AND b.id = o.item_id
                    WHERE \(clause)\(try hasErrors(db) ? " AND NOT EXISTS (\(blockedByError))" : "")
                    ORDER BY o.seq
                    """), arguments: arguments)
        var selected: [OutgoingOperation] = []
        selected.reserveCapacity(room)
        savedItems.reserveCapacity(room)
        while let row = try rows.next() {
            let table: String = row[1]
            let itemID: String = row[2]
            if limit != nil, !items.insert(ItemKey(table: table, id: itemID)).inserted { continue }
            let operation = PendingOperation(
                seq: row[0], table: table, itemID: itemID,
                kind: OperationKind(rawValue: row[3]) ?? .update,
                state: OperationState(rawValue: row[4]) ?? .pending,
                queuedAt: (row[5] as String?).flatMap(Timestamp.init(iso8601:)) ?? Timestamp(millisecondsSinceEpoch: 0))
            let baseVersion: String? = row[9]
            let baseDeleted = (row[10] as Bool?) == true
            var wire: [String: JSONValue]
            let version: String?
            // The item the claim saves, when `wire` holds user fields only: no server property to take out.
            var saved: String?
            if operation.state == .inflight || operation.kind == .delete {
                // In flight: exactly what was sent before. A delete: the item it deleted.
                guard let text = row[6] as String? else { continue }
                wire = try StoredJSON.decodeObject(text, what: "operation \(operation.seq)")
                version = operation.state == .inflight ? wire["version"]?.stringValue : baseVersion ?? wire["version"]?.stringValue
            } else if let body = row[7] as String? {
                wire = try StoredJSON.decodeObject(body, what: "record \(table)/\(itemID)")
                let ownVersion = row[8] as String?
                version = baseVersion ?? ownVersion ?? wire["version"]?.stringValue
                saved = savedItem(body: body, fields: wire, id: itemID, version: baseVersion ?? ownVersion)
            } else {
                // An insert or update whose record is gone: the delete that removed it follows.
                continue
            }
            if saved == nil { for name in RecordInput.serverProperties { wire.removeValue(forKey: name) } }
            wire["id"] = .string(itemID)
            selected.append(
                OutgoingOperation(
                    operation: operation, item: wire, version: version,
                    restoresDeleted: operation.kind == .update && baseDeleted))
            savedItems.append(saved)
            if let limit, selected.count >= limit { break }
        }
        return selected
    }
}

extension LocalStore {
    /// Whether the error table has a row: without one no operation is held back, and a claim's
    /// query leaves out the check of each operation against it (`blockedByError`, an index search
    /// per operation, a third of the query).
    static func hasErrors(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM errors)")) ?? true
    }

    /// The item a claim saves for a pending insert or update (`claimFromRecords` makes the same
    /// values with SQLite's JSON functions): `id`, the version, and the record's stored text
    /// `body` as it is, whose members `fields` (its parse) shows to be user fields only. Nil when
    /// the text names `id` or a server property, or is not plainly an object: then the JSON
    /// functions make it.
    static func savedItem(body: String, fields: [String: JSONValue], id: String, version: String?) -> String? {
        guard fields["id"] == nil, !RecordInput.serverProperties.contains(where: { fields[$0] != nil }) else { return nil }
        var text: [UInt8] = []
        text.reserveCapacity(body.utf8.count + id.utf8.count + (version?.utf8.count ?? 0) + 24)
        text.append(contentsOf: #"{"id":"#.utf8)
        JSONSerializer.writeString(id, to: &text)
        if let version {
            text.append(contentsOf: #","version":"#.utf8)
            JSONSerializer.writeString(version, to: &text)
        }
        var body = body
        let plain = body.withUTF8 { body -> Bool in
            guard body.first == UInt8(ascii: "{"), body.last == UInt8(ascii: "}") else { return false }
            var rest = body.dropFirst()
            while let first = rest.first, first == 0x20 || first == 0x0A || first == 0x0D || first == 0x09 { rest = rest.dropFirst() }
            if rest.first == UInt8(ascii: "}") {
                text.append(UInt8(ascii: "}"))
            } else {
                text.append(UInt8(ascii: ","))
                text.append(contentsOf: rest)
            }
            return true
        }
        return plain ? String(decoding: text, as: UTF8.self) : nil
    }
}

// MARK: - Steps inside a caller's transaction

extension LocalStore {
    /// The rows (index, table, id) whose item has another operation queued.
    private static func newerChangeSQL(_ rows: Int) -> String {
        """
        SELECT v.column1 FROM (VALUES \(ChunkedRows.placeholders(rows: rows, columns: 3))) AS v
        WHERE EXISTS (SELECT 1 FROM operations o WHERE o.tbl = v.column2 AND o.item_id = v.column3)
        """
    }

    private static let newerChangeChunk = newerChangeSQL(ChunkedRows.chunkSize)

    /// Puts one claimed operation back to pending, as it was before the claim.
    static func releaseOperation(_ db: Database, seq: Int64) throws {
        try db.execute(
            sql: """
                UPDATE operations SET state = 'pending', item = CASE WHEN kind = 'delete' THEN item ELSE NULL END
                WHERE seq = ?
                """,
            arguments: [seq])
    }

    /// The server accepted these operations, at most one per item. Each operation (and its error)
    /// leaves the queue. The server's record (nil for a 204 answer) replaces the local item, unless
    /// a newer local change to the item is queued: then the local fields are kept, but the item
    /// takes the server's version and timestamps, and that copy becomes the base the newer change
    /// is pushed against.
    ///
    /// A pull that ran while the operation was on its way (`tsync watch` pulls and pushes at
    /// once) skipped the item and kept the server's copy (`skipped`), its checkpoint moving past
    /// it. When that copy is newer than the answer (another writer changed the item after this
    /// push reached the server), the answer is not the server's state: an idle item takes the
    /// skipped copy instead, and an item with a newer change keeps it, for the conflict its push
    /// will meet. Taking the older answer would leave the store behind the server for good, no
    /// pull bringing the copy again.
    ///
    /// The steps that apply to every operation alike (leave the queue, look for newer changes,
    /// drop the bases) are one statement each for the whole batch, the operations' keys passed as
    /// one JSON array: statement by statement they were half of what a push spent in the store.
    static func completeOperations(
        _ db: Database, _ accepted: [AcceptedOperation], fieldsKept: Set<Int64> = []
    ) throws {
        guard !accepted.isEmpty else { return }
        var seqs = JSONRowsText(count: accepted.count, bytesPerRow: 8)
        var keys = ChunkedRows(columns: 3, rows: accepted.count, bytesPerRow: 32)
        // By index, the fields read in place (a loop over the elements copied each).
        for index in accepted.indices {
            seqs.append(accepted[index].outgoing.operation.seq)
            keys.append(Int64(index))
            keys.append(accepted[index].outgoing.operation.table)
            keys.append(accepted[index].outgoing.operation.itemID)
        }
        try db.execute(sql: "DELETE FROM operations WHERE seq IN (SELECT value FROM json_each(?))", arguments: [seqs.text])
        guard db.changesCount == accepted.count else {
            throw TSyncError.invalidInput("\(accepted.count - db.changesCount) of the completed operations are no longer queued")
        }
        // The skipped copies newer than the answer, by index (none looked for without any kept).
        var newerSkipped: [Int: TSyncModel.Record] = [:]
        if try StoreRows.hasSkippedCopies(db) {
            for index in accepted.indices {
                let operation = accepted[index].outgoing.operation
                guard let answer = accepted[index].record,
                    let skipped = try StoreRows.skippedCopy(db, table: operation.table, id: operation.itemID),
                    isNewer(skipped, than: answer)
                else { continue }
                newerSkipped[index] = skipped
            }
        }
        var newerChange = Set<Int>()
        try keys.forEachChunk(db, sql: { $0 == ChunkedRows.chunkSize ? newerChangeChunk : newerChangeSQL($0) }) { statement, _ in
            let indices = try Int.fetchCursor(statement)
            while let index = try indices.next() { newerChange.insert(index) }
        }
        // Logged with the version the store holds once done: the newer copy's, where it was taken.
        try DeliveredOperations.append(db, count: accepted.count) { index in
            let answer = accepted[index].record
            let taken = newerChange.contains(index) ? answer : newerSkipped[index] ?? answer
            return (accepted[index].outgoing.operation, taken?.system.version)
        }
        var idle = JSONRowsText(count: accepted.count, bytesPerRow: 32)
        // The records saved by their server properties alone, and where each is in `accepted`.
        var properties = ChunkedRows(columns: 5, rows: accepted.count, bytesPerRow: 96)
        var propertiesOf: [Int] = []
        propertiesOf.reserveCapacity(accepted.count)
        for index in accepted.indices {
            let operation = accepted[index].outgoing.operation
            let answer = accepted[index].record
            let table = operation.table
            let id = operation.itemID
            guard newerChange.contains(index) else {
                idle.append(table, id)
                if let skipped = newerSkipped[index] {
                    if skipped.system.deleted {
                        try StoreRows.deleteRecord(db, table: table, id: id)
                    } else {
                        try StoreRows.upsertRecord(db, table: table, record: skipped)
                    }
                } else if let server = answer {
                    if server.system.deleted {
                        try StoreRows.deleteRecord(db, table: table, id: id)
                    } else if fieldsKept.contains(operation.seq) || StoreRows.keepsFields(server, accepted[index].outgoing.item) {
                        StoreRows.appendProperties(of: server, table: table, to: &properties)
                        propertiesOf.append(index)
                    } else {
                        try StoreRows.upsertRecord(db, table: table, record: server)
                    }
                }
                continue
            }
            guard let server = answer else { continue }
            try db.cachedStatement(sql: "UPDATE records SET created_at = ?, updated_at = ?, version = ? WHERE tbl = ? AND id = ?")
                .execute(arguments: [
                    server.system.createdAt?.iso8601, server.system.updatedAt?.iso8601, server.system.version, table, id,
                ])
            try StoreRows.saveBase(db, table: table, id: id, item: server.wireObject)
        }
        try StoreRows.saveProperties(db, properties) { chunk in
            for position in chunk {
                let accepted = accepted[propertiesOf[position]]
                guard let answer = accepted.record else { continue }
                try StoreRows.saveRecord(db, table: accepted.outgoing.operation.table, record: answer, localFields: accepted.outgoing.item)
            }
        }
        // The other copies a pull skipped of these items are older than the answers (or taken).
        if try StoreRows.hasSkippedCopies(db) {
            for index in accepted.indices where !(newerChange.contains(index) && newerSkipped[index] != nil) {
                let operation = accepted[index].outgoing.operation
                try StoreRows.dropSkippedCopy(db, table: operation.table, id: operation.itemID)
            }
        }
        // A push of new records has no bases to drop: the statement's lookups, one per item, are left out.
        guard !idle.isEmpty, try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM bases)")) != false else { return }
        try db.execute(
            sql: """
                DELETE FROM bases WHERE (tbl, id) IN (
                    SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))
                """,
            arguments: [idle.text])
    }
}
