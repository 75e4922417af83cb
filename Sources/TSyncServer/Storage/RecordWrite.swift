import TSyncModel

/// One write of a batch, as the storage applies it: the single routes send batches of one, the
/// batch route (`POST /tables/$batch`) many, so both go through the same rules (`WriteRules`)
/// and the same transaction code of each backend.
public struct RecordWrite: Sendable {
    public enum Action: Sendable {
        /// A new record; `record.system` is ignored.
        case insert(Record)
        /// An update, soft delete or undelete of an existing record, after checking the version.
        case modify(id: String, change: RecordChange, expected: ExpectedVersion)
    }

    public var table: String
    public var action: Action
    public var scope: OwnerScope
    /// The account that asked for the write (nil without one: `--no-auth`), kept with the
    /// version it makes in the record's history (docs/DESIGN.md §6.5).
    public var user: String?
    /// The table's schema (`--schema`, docs/DESIGN.md §16): an insert or update whose stored
    /// record would not match it is answered `.invalid` and writes nothing.
    public var schema: RecordSchema?
    /// What the table rules require of the record it meets (docs/DESIGN.md §11.1).
    public var access = WriteAccess()

    public init(table: String, action: Action, scope: OwnerScope, user: String? = nil, schema: RecordSchema? = nil) {
        self.table = table
        self.action = action
        self.scope = scope
        self.user = user
        self.schema = schema
    }

    public var id: String {
        switch action {
        case .insert(let record): record.id
        case .modify(let id, _, _): id
        }
    }

    /// Whether the write inserts a record (the one kind of write that may create a table).
    var isInsert: Bool {
        if case .insert = action { return true }
        return false
    }

    /// What the version this write stores is, in the record's history.
    var operation: HistoryOperation {
        switch action {
        case .insert: .insert
        case .modify(_, .update, _): .update
        case .modify(_, .softDelete, _): .delete
        case .modify(_, .undelete, _): .undelete
        }
    }
}

/// What one write of a batch did.
public enum WriteOutcome: Sendable, Equatable {
    case inserted(Record)
    /// The id exists. The existing record is given only when the caller may see it (docs/DESIGN.md §10:
    /// a per-user record never leaves through a 409 body to another user).
    case exists(Record?)
    case modified(Record)
    /// Missing, not visible in the scope, or (for updates and deletes) soft-deleted.
    case notFound
    /// The record's version does not match: the current record, for the 412/409 body.
    case versionMismatch(Record)
    /// The record holds a value this database cannot store (PostgreSQL and U+0000).
    case unstorable(String)
    /// An atomic batch in which another write failed: nothing of it was written.
    case notApplied
    /// The record it would store does not match the table's schema: every way it fails.
    case invalid([SchemaViolation])
    /// The write would create a table its account may not (`--max-tables`): the message says
    /// why (docs/DESIGN.md §10.1).
    case overTableLimit(String)
    /// A table rule refuses the caller this change of a record it may read: the message names
    /// the rule (docs/DESIGN.md §11.1).
    case forbidden(String)

    /// Whether the write was done (an undelete of a live record counts: nothing to do).
    public var succeeded: Bool {
        switch self {
        case .inserted, .modified: true
        default: false
        }
    }

    /// For an atomic batch that failed: the failures stay, everything else becomes `notApplied`.
    static func rolledBack(_ outcomes: [WriteOutcome]) -> [WriteOutcome] {
        outcomes.map { $0.succeeded ? .notApplied : $0 }
    }
}

/// Single writes, for the tests of the backends (the routes write through `write`, batches of one).
extension ServerStorage {
    /// Inserts a new record with fresh system properties. `record.system` is ignored.
    package func insert(table: String, record: Record, scope: OwnerScope) async throws -> InsertOutcome {
        let outcome = try await write([RecordWrite(table: table, action: .insert(record), scope: scope)], atomic: false)
        switch outcome.first {
        case .inserted(let stored)?: return .inserted(stored)
        case .exists(let existing)?: return .exists(existing)
        case .unstorable(let message)?: throw TSyncError.invalidInput(message)
        case .invalid(let violations)?: throw TSyncError.invalidInput(SchemaViolation.summary(violations))
        default: throw TSyncError.failure("the storage gave no outcome for an insert")
        }
    }

    /// Updates, soft-deletes or undeletes an existing record after checking `expectedVersion`.
    package func modify(table: String, id: String, change: RecordChange, expectedVersion: ExpectedVersion, scope: OwnerScope)
        async throws -> ModifyOutcome
    {
        let write = RecordWrite(table: table, action: .modify(id: id, change: change, expected: expectedVersion), scope: scope)
        switch try await self.write([write], atomic: false).first {
        case .modified(let record)?: return .modified(record)
        case .notFound?: return .notFound
        case .versionMismatch(let current)?: return .versionMismatch(current)
        case .unstorable(let message)?: throw TSyncError.invalidInput(message)
        case .invalid(let violations)?: throw TSyncError.invalidInput(SchemaViolation.summary(violations))
        default: throw TSyncError.failure("the storage gave no outcome for a change")
        }
    }
}

/// The rules every backend applies to one write, given the record it finds (nil: none, or not
/// visible in the write's scope).
extension RecordWrite {
    enum Step {
        /// Store `record` as new (insert) or as the next state of the existing one (modify).
        case store(Record, isNew: Bool)
        /// Write nothing; this is the outcome.
        case answer(WriteOutcome)
    }

    /// What to do, given the current record, whether the caller may see it (its owner scope) and
    /// its owner, and the `updatedAt` a write would get (asked for only when something is
    /// written). The table rules (`access`) are checked here, so both backends apply them alike:
    /// a record the caller may not read is 404, one it may read but not change 403.
    func step(current: Record?, visible: Bool, owner: String? = nil, updatedAt: () throws -> Timestamp) rethrows -> Step {
        let visible = visible && (current.map(access.reads) ?? false)
        switch action {
        case .insert(let record):
            // Refused on the rules before anything about the id is said: no existence leak.
            if let message = access.refusal(current: nil, owner: nil, next: record) { return .answer(.forbidden(message)) }
            // A record that cannot be stored is refused first: the same answer whether or not
            // the id is taken, on both backends (PostgreSQL's one-trip insert looks only after).
            if let refused = refusal(of: record.fields) { return refused }
            if let current { return .answer(.exists(visible ? current : nil)) }
            return .store(WriteRules.inserted(record, at: try updatedAt()), isNew: true)
        case .modify(_, let change, let expected):
            guard let current, visible else { return .answer(.notFound) }
            var next: Record?
            if case .update(let fields) = change { next = Record(id: current.id, fields: current.fields.merging(fields) { _, new in new }) }
            if !current.system.deleted || change == .undelete,
                let message = access.refusal(current: current, owner: owner, next: next)
            {
                return .answer(.forbidden(message))
            }
            switch WriteRules.plan(change, on: current, expected: expected) {
            case .notFound: return .answer(.notFound)
            case .versionMismatch: return .answer(.versionMismatch(current))
            case .unchanged: return .answer(.modified(current))
            case .write:
                if let next, let refused = refusal(of: next.fields) {
                    return refused
                }
                return .store(WriteRules.apply(change, to: current, updatedAt: try updatedAt()), isNew: false)
            }
        }
    }

    /// `.invalid` when the record with `fields` would not match the schema. Only inserts and
    /// updates are checked: a delete or undelete changes no field, and must stay possible for a
    /// record stored before the schema was.
    private func refusal(of fields: [String: JSONValue]) -> Step? {
        guard let schema else { return nil }
        let violations = schema.violations(of: fields)
        return violations.isEmpty ? nil : .answer(.invalid(violations))
    }
}
