import GRDB
import TSyncModel

/// The first items a command touched, and how many there were in all: enough for `tsync log` to
/// say which records a sync changed without keeping 100,000 ids per entry.
///
/// While the sample is not full, an item met again (pushed again after its conflict was settled,
/// pulled after it was pushed) counts once; once it is full, where remembering every id would cost
/// what the sample saves, `count` counts each time an item is met, and nothing else is done.
package struct ItemSample: Sendable, Equatable {
    /// At most `limit` distinct items as `table/id`, in the order they were first met.
    package private(set) var items: [String] = []
    private var sampled = Set<String>()
    /// The items met, the sampled ones included.
    package private(set) var count = 0

    /// How many items a sample keeps by name: enough to recognise a command's work, small enough for every entry.
    package static let limit = 300

    /// An empty sample.
    package init() {}

    /// Counts one item met, and keeps its name while the sample is not full.
    package mutating func add(table: String, id: String) {
        guard items.count < Self.limit else {
            count += 1
            return
        }
        add(item: table + "/" + id)
    }

    /// Counts items of one table met, keeping their names while the sample is not full.
    package mutating func add(table: String, ids: some Collection<String>) {
        add(table: table, ids: ids, of: ids.count)
    }

    /// Counts `total` items of one table met, of which `ids` are the first (at least as many as
    /// the sample keeps, or all of them): a command that does not hold every id.
    package mutating func add(table: String, ids: some Collection<String>, of total: Int) {
        var rest = total
        for id in ids {
            guard items.count < Self.limit else { break }
            add(table: table, id: id)
            rest -= 1
        }
        count += rest
    }

    /// Adds what another sample met (a later step of the same command).
    package mutating func add(_ other: ItemSample) {
        for item in other.items {
            if items.count < Self.limit { add(item: item) } else { count += 1 }
        }
        count += other.count - other.items.count
    }

    private mutating func add(item: String) {
        guard sampled.insert(item).inserted else { return }
        count += 1
        items.append(item)
    }
}

/// What a journaled command did, as `tsync log` shows it. Every count is zero unless the command
/// did that kind of thing.
package struct JournalCounts: Sendable, Equatable {
    /// Operations the server accepted.
    package var pushed = 0
    /// Records pulled from the server (upserted or deleted locally).
    package var pulled = 0
    /// Conflicts the server answered (409/412), settled or not.
    package var conflicts = 0
    /// Errors settled, by the policy or resolution that settled them (`ours`, `merge`, …).
    package var settled: [String: Int] = [:]
    /// Operations that failed and were left in the error table by this command.
    package var failed = 0
    /// Local changes queued (insert, update, delete).
    package var changed = 0
    /// Errors in the error table when the command ended.
    package var errorsLeft = 0

    /// No counts yet.
    package init() {}

    /// Adds what a push did (`tsync log` shows one line per command, sync and retries included).
    package mutating func add(_ push: PushSummary) {
        pushed += push.pushed
        conflicts += push.conflictsMet
        failed += push.failed
        for (policy, count) in push.settled { settled[policy.rawValue, default: 0] += count }
    }

    /// The counts as stored in the journal and printed by `log --json`.
    package var json: JSONValue {
        [
            "pushed": .int(Int64(pushed)), "pulled": .int(Int64(pulled)), "conflicts": .int(Int64(conflicts)),
            "settled": .object(settled.mapValues { .int(Int64($0)) }), "failed": .int(Int64(failed)),
            "changed": .int(Int64(changed)), "errorsLeft": .int(Int64(errorsLeft)),
        ]
    }

    init(json: [String: JSONValue]) {
        func count(_ key: String) -> Int { json[key].flatMap(Journal.int) ?? 0 }
        pushed = count("pushed")
        pulled = count("pulled")
        conflicts = count("conflicts")
        failed = count("failed")
        changed = count("changed")
        errorsLeft = count("errorsLeft")
        settled = (json["settled"]?.objectValue ?? [:]).compactMapValues(Journal.int)
    }
}

/// One entry of `tsync log`.
package struct JournalEntry: Sendable, Equatable {
    /// The entry's number, increasing: `tsync log` lists the newest first.
    package var id: Int64
    /// When the command opened the store.
    package var startedAt: Timestamp
    /// Nil while the command runs, or when it never finished (killed, or the machine stopped).
    package var finishedAt: Timestamp?
    /// The command's name (`push`), and its arguments with every secret replaced.
    package var command: String
    /// The command line's arguments, secrets masked.
    package var arguments: [String]
    /// The store's remote when the command began, without credentials; nil when none was set.
    package var remote: String?
    /// Nil when the command never finished.
    package var exitCode: Int?
    /// What the command did.
    package var counts: JournalCounts
    /// The items it touched (the first of them by name).
    package var items: ItemSample
    /// The versions its pushes wrote on the server (the first of them by name).
    package var written: PushedVersions
}

/// The store's journal of the commands that changed it or talked to its server (docs/DESIGN.md §9.3).
///
/// An entry is written in two steps, each one transaction: when the command opens the store (so
/// a command killed mid-push still leaves a trace, shown as unfinished) and when it ends. No step
/// can leave half an entry. The journal keeps the newest `log.maxEntries` entries.
package enum Journal {
    /// How many entries are kept when `log.maxEntries` is not set.
    package static let defaultMaxEntries = 1000

    static func int(_ value: JSONValue) -> Int? {
        if case .int(let number) = value { return Int(number) }
        return nil
    }

    static func strings(_ text: String?) -> [String] {
        guard let text, case .array(let values)? = try? JSONParser.parse(text) else { return [] }
        return values.compactMap(\.stringValue)
    }

    static func encode(_ strings: [String]) -> String {
        JSONSerializer.string(.array(strings.map(JSONValue.string)))
    }
}

extension LocalStore {
    /// Starts an entry; returns its id for `finishJournalEntry`.
    package func beginJournalEntry(command: String, arguments: [String], remote: String?) throws(TSyncError) -> Int64 {
        let arguments = Journal.encode(arguments)
        return try write { db in
            try db.execute(
                sql: "INSERT INTO journal (started_at, command, arguments, remote) VALUES (?, ?, ?, ?)",
                arguments: [Timestamp.now().iso8601, command, arguments, remote])
            return db.lastInsertedRowID
        }
    }

    /// Ends an entry with what the command did, and drops the oldest entries beyond `keep`.
    package func finishJournalEntry(
        _ id: Int64, exitCode: Int, counts: JournalCounts, items: ItemSample, written: PushedVersions = PushedVersions(), keep: Int
    ) throws(TSyncError) {
        let itemsJSON = Journal.encode(items.items)
        let writtenJSON = written.count == 0 ? nil : JSONSerializer.string(written.json)
        try write { db in
            var counts = counts
            counts.errorsLeft = try Int.fetchOne(db, sql: "SELECT count(*) FROM errors") ?? 0
            try db.execute(
                sql: """
                    UPDATE journal SET finished_at = ?, exit_code = ?, counts = ?, items = ?, item_count = ?, versions = ?
                    WHERE id = ?
                    """,
                arguments: [
                    Timestamp.now().iso8601, exitCode, JSONSerializer.string(counts.json), itemsJSON, items.count, writtenJSON, id,
                ])
            try db.execute(
                sql: "DELETE FROM journal WHERE id <= (SELECT max(id) FROM journal) - ?", arguments: [max(1, keep)])
        }
    }

    /// Forgets an entry: the command was refused before it did anything (a usage error).
    package func dropJournalEntry(_ id: Int64) throws(TSyncError) {
        try write { db in try db.execute(sql: "DELETE FROM journal WHERE id = ?", arguments: [id]) }
    }

    /// The newest `limit` entries, newest first.
    package func journal(limit: Int) throws(TSyncError) -> [JournalEntry] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT id, started_at, finished_at, command, arguments, remote, exit_code, counts, items, item_count, versions
                    FROM journal ORDER BY id DESC LIMIT ?
                    """,
                arguments: [max(0, limit)]
            ).map { row in
                let counts = try (row[7] as String?).map { try StoredJSON.decodeObject($0, what: "log entry") } ?? [:]
                var sample = ItemSample()
                for text in Journal.strings(row[8]) {
                    guard let slash = text.firstIndex(of: "/") else { continue }
                    sample.add(table: String(text[..<slash]), id: String(text[text.index(after: slash)...]))
                }
                let total: Int? = row[9]
                return JournalEntry(
                    id: row[0], startedAt: Timestamp(iso8601: row[1]) ?? Timestamp(millisecondsSinceEpoch: 0),
                    finishedAt: (row[2] as String?).flatMap(Timestamp.init(iso8601:)), command: row[3],
                    arguments: Journal.strings(row[4]), remote: row[5], exitCode: row[6],
                    counts: JournalCounts(json: counts), items: sample.withCount(total ?? sample.count),
                    written: PushedVersions(
                        json: try (row[10] as String?).map { try StoredJSON.decodeObject($0, what: "log entry") } ?? [:]))
            }
        }
    }
}

extension ItemSample {
    func withCount(_ count: Int) -> ItemSample {
        var sample = self
        sample.count = max(count, items.count)
        return sample
    }
}

extension LocalStore {
    /// The log entry `id`, or nil when the journal no longer has it.
    package func journalEntry(_ id: Int64) throws(TSyncError) -> JournalEntry? {
        try journal(limit: Int.max).first { $0.id == id }
    }
}
