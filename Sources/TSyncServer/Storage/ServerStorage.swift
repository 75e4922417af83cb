import TSyncModel
import TSyncQuery

/// Everything the server keeps: records of every table, accounts, tokens and login-failure counters.
///
/// The server itself holds no state, so several instances can share one database (docs/DESIGN.md §6.3, §10). Every
/// method is one atomic step on the database: the version check of a write and the write happen in
/// the same transaction, and so does the assignment of `updatedAt` (docs/DESIGN.md §2.2). A backend
/// (SQLite now, PostgreSQL later) implements this protocol and nothing in the routes changes.
///
/// Table names arrive validated (`Identifiers.validateTableName`) and ids validated
/// (`Identifiers.validateRecordID`). Table names are case-insensitive: `Todo` and `todo` are one table.
public protocol ServerStorage: Sendable {
    // MARK: Records

    /// One record, soft-deleted or not; `nil` when missing or not visible in `scope`.
    func record(table: String, id: String, scope: OwnerScope) async throws -> Record?

    /// One page of a query. A table that was never written answers an empty page.
    func query(table: String, _ query: RecordQuery, scope: OwnerScope) async throws -> RecordPage

    /// `query`, read at once on the caller's thread when the storage can tell the read is short
    /// (a pull's page: an index walk bounded by `$top`) and `client`'s share of the database is
    /// free now (`ReadShares`); nil otherwise, and the caller reads the page the general way.
    /// A page is most of a pull's requests, and the general way's hops from thread to thread
    /// (the query deadline's tasks, the database's queue and back) cost the server more than
    /// the read (docs/PERFORMANCE.md, "Bulk sync"). Being short, the read needs no deadline.
    func quickQuery(table: String, _ query: RecordQuery, scope: OwnerScope, client: String?) async throws -> RecordPage?

    /// A pull's page for an account whose view of the table changes (docs/DESIGN.md §11.1):
    /// `query`, narrowed to what the account may read now, merged in (`updatedAt`, `id`) order
    /// with the records that left its view (as deletions) or came into it after the page's
    /// position, all in one read. Nil when the account may read none of the table's records and
    /// is owed no deletions (the route answers the rule's 403); an empty page when its groups
    /// or roles changed since its token was read (its next request reads them again).
    func query(table: String, _ query: RecordQuery, scope: OwnerScope, changes: ViewChanges) async throws -> RecordPage?

    /// Applies `writes` in order in ONE transaction and returns one outcome per write. A write that
    /// fails (409, 404, 412…) does not stop the others; with `atomic`, any failure rolls the whole
    /// batch back and every write that had succeeded answers `.notApplied`. Each touched table's
    /// `updatedAt` is taken once, so that no incremental pull ever passes a write still to commit
    /// (docs/DESIGN.md §2.2, §10). The single
    /// routes' `insert` and `modify` are batches of one (see `RecordWrite`).
    func write(_ writes: [RecordWrite], atomic: Bool) async throws -> [WriteOutcome]

    // MARK: History (docs/DESIGN.md §6.5)

    /// Whether writes append their versions to the history (on unless `--keep-history 0`); set
    /// once, before the server serves.
    func keepHistory(_ keeps: Bool)

    /// A record's versions, newest first, `skip` then at most `top`; empty when it has none or
    /// they are not visible in `scope`.
    func versions(table: String, id: String, scope: OwnerScope, top: Int, skip: Int) async throws -> [RecordVersion]

    /// A page of the table as it was at `time`: each record's newest version at or before it,
    /// then `query` (filter, order, paging, deleted or not) over those, as `query(table:…)` reads
    /// the table now.
    func query(table: String, at time: Timestamp, _ query: RecordQuery, scope: OwnerScope) async throws -> RecordPage

    /// Gives current records without a version one (at start-up, `seed`), prunes versions older
    /// than the retention (keeping each record's version at the cutoff), removes tombstones older
    /// than it and remembers each table's deleted horizon. On PostgreSQL the horizon is stored
    /// `settle` before the tombstones go, so that other instances' cached horizons have it.
    func maintain(_ retention: Retention, now: Timestamp, seed: Bool, settle: Duration) async throws -> MaintenanceReport

    /// Declares the indexed fields (`IndexedField`): creates the indexes of tables that exist,
    /// remembers the others' for when the table first appears, and renders queries so that they
    /// use them. An index that is no longer declared is left in place, never dropped. Returns
    /// what it found and did, one line each, for the start-up log.
    func declareIndexes(_ fields: [IndexedField]) async throws -> [String]

    /// Told of every commit that wrote records, to wake the live route's waiting requests
    /// (docs/DESIGN.md §8.1); nil for a storage without one (the live route is then off).
    var changes: ChangeFeed? { get }

    /// Throws unless the database answers a trivial read now (`GET /ready`); the caller bounds
    /// how long it waits.
    func checkReady() async throws

    /// How many reads one client (`ReadShares.client`) may run at once (`--db-share`,
    /// docs/DESIGN.md §10.1); set once, before the server serves.
    func shareReads(perClient: Int)

    /// How many tables one account may create (`--max-tables`, docs/DESIGN.md §10.1; 0 for no
    /// limit); set once, before the server serves. A write that would create one more answers
    /// `WriteOutcome.overTableLimit`.
    func limitTables(perAccount: Int)

    // MARK: Accounts

    /// Creates an account; throws `TSyncError(.invalidInput)` when the name is taken.
    func createAccount(name: String, passwordHash: String, createdAt: Timestamp) async throws
    /// Replaces the password hash and revokes the account's tokens; false when there is no such account.
    func setPasswordHash(name: String, passwordHash: String) async throws -> Bool
    /// Removes the account and its tokens; false when there is no such account. Records stay.
    func removeAccount(name: String) async throws -> Bool
    /// The account `name` denotes: the one spelled exactly so, else the one account whose name
    /// differs from it only in case (`AccountRules.canonicalName`). Nil when there is none, or
    /// when several differ only in case and none is spelled exactly so (a database made before
    /// names were compared that way: docs/DESIGN.md §11).
    func account(name: String) async throws -> Account?
    func accounts() async throws -> [Account]

    // MARK: Tokens (only hashes are ever stored)

    func storeToken(hash: String, accountName: String, expiresAt: Timestamp) async throws
    /// A token narrower than its account (`TokenScope.stored`; "" for the whole account's).
    func storeToken(hash: String, accountName: String, expiresAt: Timestamp, scope: String) async throws
    /// Who a live token speaks for: its account with the account's roles and groups as they are
    /// now, and the token's scope; nil when unknown, revoked or expired at `now`. One read per
    /// request, so that a change of roles or groups applies to every instance's next request
    /// (docs/DESIGN.md §11.1).
    func caller(forTokenHash hash: String, now: Timestamp) async throws -> Caller?
    /// Adds and removes roles or groups of the account spelled exactly `name`; false when there
    /// is no such account.
    func changeLabels(name: String, kind: AccountLabel, add: [String], remove: [String]) async throws -> Bool
    /// Every account's roles and groups, by account name.
    func labels() async throws -> [String: [AccountLabel: [String]]]
    /// The account a live token belongs to; nil when unknown, revoked or expired at `now`.
    func accountName(forTokenHash hash: String, now: Timestamp) async throws -> String?
    func revokeToken(hash: String) async throws
    /// Drops tokens that expired before `now`, so the table does not grow without bound.
    func purgeExpiredTokens(now: Timestamp) async throws

    // MARK: Login throttling (in the database, so that every instance sees the same counters)

    /// Counts one login attempt for `key`, atomically, and returns the count of its current window.
    /// A window starts at the first attempt and lasts `windowMilliseconds`. Counting before the
    /// password check (and forgiving afterwards on success) means parallel guesses cannot slip
    /// past the limit between a check and a count.
    func countLoginAttempt(key: String, windowMilliseconds: Int64, now: Timestamp) async throws -> LoginAttempts
    /// The attempts of `key` in its current window (nil: none), read without writing: a login
    /// refused on them costs the database nothing (docs/DESIGN.md §11).
    func loginAttempts(key: String, now: Timestamp) async throws -> LoginAttempts?
    /// Takes back one counted attempt: the login it counted succeeded.
    func forgiveLoginAttempt(key: String) async throws
    func clearLoginAttempts(key: String) async throws
    /// `tsync user unlock`: drops the count of `accountKey`, those of the account's known clients
    /// (the keys `tsync_known_clients` holds for `accountName`) and those of every key that starts
    /// with `addressKeyPrefix` (client addresses), in one statement.
    func clearLoginAttempts(accountKey: String, knownClientsOf accountName: String, addressKeyPrefix: String) async throws

    // MARK: Known clients (docs/DESIGN.md §11: who logged in before is not locked out by strangers)

    /// Remembers that the client `key` (a device token's hash, or an account and an address) logged
    /// in to `accountName`, until `expiresAt`. Drops every entry expired at `now` and keeps the
    /// newest `keepPerAccount` of the account, so the table stays bounded.
    func rememberClient(key: String, accountName: String, expiresAt: Timestamp, now: Timestamp, keepPerAccount: Int) async throws
    /// The account the client `key` logged in to before, when that is remembered at `now`.
    func knownClient(key: String, now: Timestamp) async throws -> String?
}

extension ServerStorage {
    public var changes: ChangeFeed? { nil }
    public func shareReads(perClient: Int) {}
    public func limitTables(perAccount: Int) {}
    public func quickQuery(table: String, _ query: RecordQuery, scope: OwnerScope, client: String?) async throws -> RecordPage? { nil }
}

/// Whose records a request may see. Per-user tables (`--per-user`) are scoped to the signed-in
/// account; other tables are shared by everyone.
public enum OwnerScope: Sendable, Hashable {
    case shared
    case owner(String)
}

public struct RecordPage: Sendable {
    /// The records as the storage read them; empty when it wrote them out (`written`): read
    /// `count` and `records()` to see either.
    public var items: [PageRecord]
    /// The records written out already, as `PageRecord.write` writes each, comma-separated, when
    /// the storage wrote them so (SQLite, for a page without `$select`, from its columns' bytes
    /// with no `String` per column); `items` is empty then.
    public var written: WrittenRecords?
    /// Records matching the filter over all pages, when `includeTotalCount` was asked.
    public var totalCount: Int?
    /// The greatest `updatedAt` of a tombstone removed from the table (`--keep-deleted`): a
    /// client whose checkpoint is older may have missed deletes (docs/DESIGN.md §6.5).
    public var deletedHorizon: Timestamp?

    public init(items: [PageRecord], totalCount: Int?) {
        self.items = items
        self.totalCount = totalCount
    }

    public init(records: [Record], totalCount: Int?) {
        self.init(items: records.map(PageRecord.parsed), totalCount: totalCount)
    }

    public init(written: WrittenRecords, totalCount: Int?) {
        self.init(items: [], totalCount: totalCount)
        self.written = written
    }

    /// The number of records on the page.
    public var count: Int { written?.count ?? items.count }

    /// The last record's `updatedAt` and `id` text, taken from its row as the page was read (for
    /// `X-TSync-Page-End`); nil for a page with no records.
    public var end: (updatedAt: String, id: String)? {
        if let written { return written.end }
        return items.last?.end
    }

    /// The records, parsed.
    public func records() throws -> [Record] {
        guard let written else { return try items.map { try $0.record() } }
        guard case .array(let values) = try JSONParser.parse(bytes: [UInt8(ascii: "[")] + written.bytes + [UInt8(ascii: "]")]) else {
            return []
        }
        return try values.map { value in
            guard case .object(let object) = value else { throw TSyncError.failure("a written page holds a record that is not an object") }
            return try Record(wire: object)
        }
    }
}

/// Records as a page sends them, one after another with commas between (`RecordPage.written`).
public struct WrittenRecords: Sendable {
    public var bytes: [UInt8] = []
    public private(set) var count = 0
    /// The last record appended: where its `updatedAt` and `id` text lie in `bytes`, or the
    /// record itself when it was written the general way (its text escaped, or not the stored one).
    private var last: Last?

    private enum Last {
        case text(updatedAt: Range<Int>, id: Range<Int>)
        case record(PageRecord)
    }

    /// `RecordPage.end`: read back from the last record's columns, not from the page's JSON.
    var end: (updatedAt: String, id: String)? {
        switch last {
        case .text(let updatedAt, let id)?:
            (String(decoding: bytes[updatedAt], as: UTF8.self), String(decoding: bytes[id], as: UTF8.self))
        case .record(let record)?: record.end
        case nil: nil
        }
    }
    /// The records the page will likely hold: after the first, room for as many more like it is
    /// made at once (a page's bytes grew by doubling, copied each time).
    private let expected: Int

    public init(expected: Int = 0) { self.expected = min(expected, 10_000) }

    /// The most made room for at once: a page of large records grows as before.
    static let largestReserve = 4 << 20

    /// Appends a record as `PageRecord.write` writes it.
    mutating func append(_ record: PageRecord) throws {
        if count > 0 { bytes.append(UInt8(ascii: ",")) }
        try record.write(to: &bytes)
        last = .record(record)
        count += 1
    }

    /// Appends one stored record: `columns` hands its columns' text to the writer, in the
    /// writer's order; when the writer is unsure of them, `general` gives the record for the
    /// general path.
    mutating func appendStored(
        deleted: Bool, _ columns: (inout StoredRecordWriter, inout [UInt8]) throws -> Void, general: () throws -> PageRecord
    ) throws {
        if count > 0 { bytes.append(UInt8(ascii: ",")) }
        var writer = StoredRecordWriter(deleted: deleted, output: bytes)
        try columns(&writer, &bytes)
        if writer.finish(&bytes), let updatedAt = writer.updatedAtText, let id = writer.idText {
            last = .text(updatedAt: updatedAt, id: id)
        } else {
            let record = try general()
            try record.write(to: &bytes)
            last = .record(record)
        }
        count += 1
        if count == 1, expected > 1 { bytes.reserveCapacity(min(bytes.count * expected / 4 * 5, Self.largestReserve)) }
    }
}

/// Writes a stored record as a page sends it, from its columns' text: `id` and the system
/// properties first, then the fields' own text. Each column is handed over on its own
/// (`id`, `createdAt`, `updatedAt`, `version`, `fields`, in that order), so a caller whose
/// columns are each readable only inside a closure (`String.withUTF8`, a `ByteBuffer`) need
/// not nest one in another. A text to escape, invalid UTF-8, or fields that are not an
/// object's text make `finish` false, with nothing written: the caller takes the general path.
struct StoredRecordWriter {
    private let start: Int
    private let deleted: Bool
    private var sure = true
    /// Where the `id` and `updatedAt` text went in the output (`WrittenRecords.end`).
    private(set) var idText: Range<Int>?
    private(set) var updatedAtText: Range<Int>?

    init(deleted: Bool, output: [UInt8]) {
        start = output.count
        self.deleted = deleted
    }

    // Each string's closing quote is written with what follows it: two appends a column.
    mutating func id(_ text: UnsafeBufferPointer<UInt8>, to output: inout [UInt8]) {
        string(after: #"{"id":""#, text, to: &output)
        if sure { idText = output.count - text.count..<output.count }
    }

    mutating func createdAt(_ text: UnsafeBufferPointer<UInt8>, to output: inout [UInt8]) {
        string(after: #"","createdAt":""#, text, to: &output)
    }

    mutating func updatedAt(_ text: UnsafeBufferPointer<UInt8>, to output: inout [UInt8]) {
        string(after: deleted ? #"","deleted":true,"updatedAt":""# : #"","deleted":false,"updatedAt":""#, text, to: &output)
        if sure { updatedAtText = output.count - text.count..<output.count }
    }

    mutating func version(_ text: UnsafeBufferPointer<UInt8>, to output: inout [UInt8]) {
        string(after: #"","version":""#, text, to: &output)
    }

    mutating func fields(_ text: UnsafeBufferPointer<UInt8>, to output: inout [UInt8]) {
        guard sure, text.first == UInt8(ascii: "{"), text.last == UInt8(ascii: "}"), Self.isUTF8(text) else {
            sure = false
            return
        }
        if text.count > 2 {
            Self.append(#"","#, to: &output)
            output.append(contentsOf: UnsafeBufferPointer(rebasing: text.dropFirst()))
        } else {
            Self.append(#""}"#, to: &output)
        }
    }

    /// Whether the record is written; if not, what was written of it is taken back.
    func finish(_ output: inout [UInt8]) -> Bool {
        if !sure { output.removeSubrange(start...) }
        return sure
    }

    /// A string with nothing to escape, copied as it is, after `prefix` (which opens its quote).
    private mutating func string(after prefix: StaticString, _ text: UnsafeBufferPointer<UInt8>, to output: inout [UInt8]) {
        guard sure, Self.isPlain(text) else {
            sure = false
            return
        }
        Self.append(prefix, to: &output)
        output.append(contentsOf: text)
    }

    private static func append(_ text: StaticString, to output: inout [UInt8]) {
        output.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Nothing to escape, and valid UTF-8: one pass over the bytes, eight at a time, and a
    /// second only for text above ASCII.
    private static func isPlain(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        let (escape, ascii) = scan(text, escapes: true)
        return !escape && (ascii || String(validating: text, as: UTF8.self) != nil)
    }

    /// Valid UTF-8, as a `String` of the column would hold it.
    private static func isUTF8(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        scan(text, escapes: false).ascii || String(validating: text, as: UTF8.self) != nil
    }

    /// Whether `text` holds a byte a JSON string must escape (below 0x20, `"`, `\`; looked for
    /// only with `escapes`) and whether all its bytes are ASCII. Eight bytes a step: a page's
    /// columns are most of what the server reads, and a byte a step was a fifth of its CPU.
    static func scan(_ text: UnsafeBufferPointer<UInt8>, escapes: Bool) -> (escape: Bool, ascii: Bool) {
        guard let base = text.baseAddress else { return (false, true) }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        var any: UInt64 = 0
        var found: UInt64 = 0
        var index = 0
        while index + 8 <= text.count {
            let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
            any |= word
            if escapes {
                // A byte is zero in `x` exactly when some byte of `(x - 1…) & ~x` has its high bit
                // (and one below 0x20 likewise with `x - 0x20…`), in each byte's own bit.
                let quote = word ^ (ones &* 0x22)
                let backslash = word ^ (ones &* 0x5C)
                found |= ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word)
            }
            index += 8
        }
        var escape = found & highs != 0
        var ascii = any & highs == 0
        while index < text.count {
            let byte = base[index]
            if escapes, byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { escape = true }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        return (escape, ascii)
    }
}

/// One record of a page, as the storage read it. Both backends keep the fields as the JSON text
/// tsync wrote (SQLite as the body itself, PostgreSQL beside its jsonb) and the timestamps as ISO
/// text: a page is answered from that text as it is, with no parse and no serialization of what
/// is sent unchanged (docs/DESIGN.md §6.2, §6.3). Only rows PostgreSQL stored before it kept the
/// text come back parsed.
public enum PageRecord: Sendable {
    case parsed(Record)
    /// The columns' text; `fields` a JSON object written by `JSONSerializer`, without `id` or
    /// system properties.
    case stored(id: String, createdAt: String, updatedAt: String, version: String, deleted: Bool, fields: String)

    public var id: String {
        switch self {
        case .parsed(let record): record.id
        case .stored(let id, _, _, _, _, _): id
        }
    }

    /// Its `updatedAt` text and `id` (`RecordPage.end`); nil for a record without `updatedAt`.
    var end: (updatedAt: String, id: String)? {
        switch self {
        case .parsed(let record): record.system.updatedAt.map { ($0.iso8601, record.id) }
        case .stored(let id, _, let updatedAt, _, _, _): (updatedAt, id)
        }
    }

    public func record() throws -> Record {
        switch self {
        case .parsed(let record):
            return record
        case .stored(let id, let createdAt, let updatedAt, let version, let deleted, let text):
            guard case .object(let fields) = try JSONParser.parse(text) else {
                throw TSyncError.failure("record \(Identifiers.quoted(id)) has a corrupt body in the server database")
            }
            return Record(
                id: id, fields: fields,
                system: SystemProperties(
                    createdAt: Timestamp(iso8601: createdAt), updatedAt: Timestamp(iso8601: updatedAt), version: version, deleted: deleted))
        }
    }

    /// Appends the record as the protocol sends it. Stored text goes out as it is: `id` and the
    /// system properties first, then the fields' own text.
    func write(to output: inout [UInt8]) throws {
        switch self {
        case .parsed(let record):
            JSONSerializer.writeRecord(record, to: &output)
        case .stored(var id, var createdAt, var updatedAt, var version, let deleted, var fields):
            var writer = StoredRecordWriter(deleted: deleted, output: output)
            id.withUTF8 { writer.id($0, to: &output) }
            createdAt.withUTF8 { writer.createdAt($0, to: &output) }
            updatedAt.withUTF8 { writer.updatedAt($0, to: &output) }
            version.withUTF8 { writer.version($0, to: &output) }
            fields.withUTF8 { writer.fields($0, to: &output) }
            if !writer.finish(&output) { JSONSerializer.writeRecord(try record(), to: &output) }
        }
    }
}

/// What a write does to an existing record.
public enum RecordChange: Sendable, Equatable {
    /// Merge these user fields into the record (PATCH semantics: absent fields are kept).
    case update([String: JSONValue])
    case softDelete
    case undelete
}

/// The precondition of a write, from `If-Match` or from `version` in the body.
public enum ExpectedVersion: Sendable, Equatable {
    case any
    /// `If-Match` with one or more entity tags (`*` is `.any`).
    case oneOf([String])

    func accepts(_ version: String) -> Bool {
        switch self {
        case .any: true
        case .oneOf(let versions): versions.contains(version)
        }
    }
}

package enum InsertOutcome: Sendable {
    case inserted(Record)
    /// The id exists. The existing record is given only when the caller may see it (docs/DESIGN.md §10:
    /// a per-user record never leaves through a 409 body to another user).
    case exists(Record?)
}

package enum ModifyOutcome: Sendable {
    case modified(Record)
    /// Missing, not visible in the scope, or (for updates and deletes) soft-deleted.
    case notFound
    /// The record's version does not match: the current record, for the 412/409 body.
    case versionMismatch(Record)
}

/// The login attempts of one key (an account or an address) in its current window.
public struct LoginAttempts: Sendable, Equatable {
    public var count: Int
    public var windowEnd: Timestamp

    public init(count: Int, windowEnd: Timestamp) {
        self.count = count
        self.windowEnd = windowEnd
    }
}

/// What an account carries for the table rules (`AccessRule.role`, `AccessRule.group`).
public enum AccountLabel: String, Sendable, Hashable, CaseIterable {
    case role, group
}

public struct Account: Sendable, Hashable {
    public var name: String
    public var passwordHash: String
    public var createdAt: Timestamp
    /// Filled by `AccountManager.list`; empty elsewhere.
    public var roles: [String] = []
    public var groups: [String] = []

    public init(name: String, passwordHash: String, createdAt: Timestamp) {
        self.name = name
        self.passwordHash = passwordHash
        self.createdAt = createdAt
    }
}

extension Account {
    /// Of the accounts whose names equal `name` but for case (the exact spelling first), the one
    /// `name` denotes: the exact spelling, else the only one. Several without the exact spelling
    /// (possible only in a database made before case was folded) denote none: guessing which
    /// would let one person log in to another's account.
    static func denoted(by name: String, among candidates: [Account]) -> Account? {
        if let first = candidates.first, first.name == name { return first }
        return candidates.count == 1 ? candidates.first : nil
    }
}
