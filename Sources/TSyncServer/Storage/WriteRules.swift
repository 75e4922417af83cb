import TSyncModel

/// The dialect-free part of a write, shared by every storage backend so that they agree on what a
/// write means: how `updatedAt` advances, how versions are made, and how a change applies.
enum WriteRules {
    /// The `updatedAt` of the next transaction that writes a table, given the last one assigned
    /// to it. Every write of the table in that transaction carries it.
    ///
    /// Strictly increasing per table from one transaction to the next (docs/DESIGN.md §2.1, §2.2,
    /// §10): clients checkpoint on (`updatedAt`, `id`), so a later commit must never carry an
    /// earlier or equal time, even when the wall clock stalls or steps back. Within one
    /// transaction the writes may share it: a reader sees all of them or none, and their ids
    /// order them. One step a transaction, not a write, is what keeps `updatedAt` at the wall
    /// clock: a batch of 1,000 writes used to move it a whole second ahead. Called
    /// inside the write transaction that commits the records.
    static func nextUpdatedAt(now: Timestamp, lastAssigned: Timestamp?) -> Timestamp {
        guard let lastAssigned, lastAssigned >= now else { return now }
        return Timestamp(millisecondsSinceEpoch: lastAssigned.millisecondsSinceEpoch + 1)
    }

    /// A new opaque version: 64 random bits in hex. It only has to differ from every earlier version
    /// of the same record, which random bits give without coordination between server instances.
    static func newVersion() -> String {
        let hex = String(RandomBits.shared.next(), radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// What a write should do with the current record, decided before the clock is touched.
    enum Plan: Equatable {
        /// Updating or deleting a soft-deleted record: the client sees 404, as for GET.
        case notFound
        /// The precondition failed: answer 412/409 with the current record.
        case versionMismatch
        /// Undeleting a record that is not deleted changes nothing and writes nothing, so a retried
        /// undelete does not bump the version under another client's feet.
        case unchanged
        case write
    }

    static func plan(_ change: RecordChange, on current: Record, expected: ExpectedVersion) -> Plan {
        if current.system.deleted, change != .undelete { return .notFound }
        guard let version = current.system.version, expected.accepts(version) else { return .versionMismatch }
        if change == .undelete, !current.system.deleted { return .unchanged }
        return .write
    }

    /// The record after `change`, with a new version and `updatedAt`. Call only when `plan` said `.write`.
    static func apply(_ change: RecordChange, to current: Record, updatedAt: Timestamp) -> Record {
        var next = current
        switch change {
        case .update(let fields): next.fields.merge(fields) { _, new in new }
        case .softDelete: next.system.deleted = true
        case .undelete: next.system.deleted = false
        }
        next.system.updatedAt = updatedAt
        next.system.version = newVersion()
        return next
    }

    /// A freshly inserted record: `createdAt` = `updatedAt`, a new version, not deleted.
    static func inserted(_ record: Record, at updatedAt: Timestamp) -> Record {
        Record(
            id: record.id, fields: record.fields,
            system: SystemProperties(createdAt: updatedAt, updatedAt: updatedAt, version: newVersion(), deleted: false)
        )
    }
}
