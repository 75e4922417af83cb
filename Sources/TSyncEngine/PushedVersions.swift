import TSyncModel

/// The versions a command's pushes wrote on the server, for its `tsync log` entry
/// (docs/DESIGN.md §9.3, §15): the first of them by name, how many in all, and for each table the
/// earliest `updatedAt` the server gave them, which is the moment just after which the table
/// changed (`restore --before-push`). Like `ItemSample`, a push of 100,000 operations keeps a
/// few hundred names, not 100,000.
package struct PushedVersions: Sendable, Equatable {
    /// One version written.
    package struct Entry: Sendable, Equatable {
        /// The record's table.
        package var table: String
        /// The record's id.
        package var id: String
        /// The version the server gave the write; nil when its answer had none.
        package var version: String?
        /// The operation pushed: insert, update or delete.
        package var operation: String
        /// The record's `updatedAt` after the write; nil when the answer had none.
        package var updatedAt: Timestamp?
    }

    /// The first versions written, at most `limit`, in the order the server accepted them.
    package private(set) var sample: [Entry] = []
    /// The versions written in all.
    package private(set) var count = 0
    /// By table, the earliest `updatedAt` of the versions written.
    package private(set) var earliest: [String: Timestamp] = [:]

    /// How many versions an entry keeps by name.
    package static let limit = 300

    /// Nothing written yet.
    package init() {}

    /// One operation the server accepted, with its copy of the record when it sent one.
    mutating func add(_ operation: PendingOperation, _ record: Record?) {
        add(
            Entry(
                table: operation.table, id: operation.itemID, version: record?.system.version, operation: operation.kind.rawValue,
                updatedAt: record?.system.updatedAt))
    }

    /// Adds what a later push of the same command wrote.
    mutating func add(_ other: PushedVersions) {
        for entry in other.sample { add(entry) }
        count += other.count - other.sample.count
        for (table, time) in other.earliest { note(table, time) }
    }

    private mutating func add(_ entry: Entry) {
        count += 1
        if sample.count < Self.limit { sample.append(entry) }
        if let time = entry.updatedAt { note(entry.table, time) }
    }

    private mutating func note(_ table: String, _ time: Timestamp) {
        if earliest[table].map({ time < $0 }) ?? true { earliest[table] = time }
    }

    /// As the journal keeps it and `log --json` prints it (`versions`).
    package var json: JSONValue {
        [
            "count": .int(Int64(count)),
            "sample": .array(
                sample.map { entry in
                    [
                        "table": .string(entry.table), "id": .string(entry.id), "version": entry.version.map(JSONValue.string) ?? .null,
                        "operation": .string(entry.operation), "updatedAt": entry.updatedAt.map { .string($0.iso8601) } ?? .null,
                    ]
                }),
            "earliest": .object(earliest.mapValues { .string($0.iso8601) }),
        ]
    }

    init(json: [String: JSONValue]) {
        var values: [JSONValue] = []
        if case .array(let array)? = json["sample"] { values = array }
        for value in values {
            guard let object = value.objectValue, let table = object["table"]?.stringValue, let id = object["id"]?.stringValue,
                let operation = object["operation"]?.stringValue
            else { continue }
            sample.append(
                Entry(
                    table: table, id: id, version: object["version"]?.stringValue, operation: operation,
                    updatedAt: object["updatedAt"]?.stringValue.flatMap(Timestamp.init(iso8601:))))
        }
        count = max(sample.count, json["count"].flatMap(Journal.int) ?? 0)
        earliest = (json["earliest"]?.objectValue ?? [:]).compactMapValues { $0.stringValue.flatMap(Timestamp.init(iso8601:)) }
    }
}
