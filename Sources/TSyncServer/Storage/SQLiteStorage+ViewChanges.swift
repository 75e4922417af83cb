import GRDB
import Synchronization
import TSyncModel
import TSyncQuery

/// Records that leave or come into an account's view, on SQLite (docs/DESIGN.md §11.1).
extension SQLiteStorage {
    public func query(table: String, _ query: RecordQuery, scope: OwnerScope, changes: ViewChanges) async throws -> RecordPage? {
        let sqlName = SQLiteSchema.recordTableName(table)
        let skip = query.skip ?? 0
        var widened = query
        widened.skip = 0
        widened.top = query.top.map { $0 + skip }
        // The first skip + top rows of each part: the page is found among them.
        let wide = widened
        let main = changes.readsRecords ? try statements(sqlName: sqlName, query, scope: scope) : nil
        // Without a skip (a pull's pages) the wide statements are the page's own.
        let mainWide = skip == 0 ? main : changes.readsRecords ? try statements(sqlName: sqlName, wide, scope: scope) : nil
        let position = ViewChanges.position(query.filter)
        return try await clientRead { db in
            let arms = Self.arms(sqlName: sqlName, table: SQLiteSchema.clockKey(table), changes, position, limit: wide.top)
            var page = RecordPage(records: [], totalCount: query.includeTotalCount ? 0 : nil)
            guard try Self.labelsHold(db, changes) else { return page }
            page.deletedHorizon = try Self.deletedHorizon(db, table: table)
            let exists = try self.tableExists(db, sqlName)
            var found: [ViewChanges.Arm] = []
            func fetch(_ statements: [(String, StatementArguments)]) throws {
                for (sql, arguments) in statements {
                    // Cached: a pull's every page runs the same few statements (their text
                    // varies only by table, field, number of groups and kind of position).
                    let items = try Row.fetchAll(db.cachedStatement(sql: sql), arguments: arguments).map { row -> PageRecord in
                        .stored(id: row[0], createdAt: row[1], updatedAt: row[2], version: row[3], deleted: row[4], fields: row[5])
                    }
                    found.append(ViewChanges.Arm(items: items, full: wide.top.map { items.count >= $0 } ?? false))
                }
            }
            var read: (arm: ViewChanges.Arm, total: Int?)?
            func readMain() throws -> (arm: ViewChanges.Arm, total: Int?)? {
                guard let mainWide else { return nil }
                if let read { return read }
                let page = try Self.page(db, mainWide, wide)
                let records = try page.records().map(PageRecord.parsed)
                read = (ViewChanges.Arm(items: records, full: wide.top.map { records.count >= $0 } ?? false), page.totalCount)
                return read
            }
            if exists, let position {
                try fetch(arms.exits)
                // The label changes' rows are all at or after the first one's time: read only
                // when the page may reach it (a full page of records before it would cut them).
                if let first = try String.fetchOne(
                    db.cachedStatement(sql: "SELECT min(at) FROM tsync_label_changes WHERE account_name = ? AND at >= ?"),
                    arguments: [changes.account, position.at])
                {
                    let main = try readMain()?.arm
                    if main?.full != true || (main?.items.last.map { ViewChanges.key($0).at } ?? "") >= first { try fetch(arms.labels()) }
                }
            }
            let owed = found.contains { !$0.items.isEmpty }
            guard let main else {
                guard try owed || Self.owesDeletions(db, changes) else { return nil }
                page.items = ViewChanges.merge(found, skip: skip, top: query.top)
                return page
            }
            guard exists else { return page }
            guard owed else {
                let horizon = page.deletedHorizon
                page = try Self.page(db, main, query)
                page.deletedHorizon = horizon
                return page
            }
            if let (arm, total) = try readMain() {
                found.insert(arm, at: 0)
                page.totalCount = total
            }
            page.items = ViewChanges.merge(found, skip: skip, top: query.top)
            return page
        }
    }

    /// Whether the account's groups and roles are still those `changes` was made under.
    private static func labelsHold(_ db: Database, _ changes: ViewChanges) throws -> Bool {
        var groups: Set<String> = []
        var roles: Set<String> = []
        for row in try Row.fetchAll(
            db.cachedStatement(sql: "SELECT kind, label FROM tsync_account_labels WHERE account_name = ?"), arguments: [changes.account])
        {
            switch AccountLabel(rawValue: row[0]) {
            case .group?: groups.insert(row[1])
            case .role?: roles.insert(row[1])
            case nil: break
            }
        }
        return groups == changes.groups && roles == changes.roles
    }

    /// Whether the account lost the role of a `role:` table while its changes are kept: its
    /// pull is then answered (deletions, then empty pages), not refused.
    private static func owesDeletions(_ db: Database, _ changes: ViewChanges) throws -> Bool {
        guard case .role(let role) = changes.rule else { return false }
        return try Bool.fetchOne(
            db,
            sql: "SELECT 1 FROM tsync_label_changes WHERE account_name = ? AND kind = 'role' AND label = ? AND joined = 0 LIMIT 1",
            arguments: [changes.account, role]) ?? false
    }

    /// One statement per kind of change, each in (time, id) order from `position`, at most
    /// `limit` rows of (id, created_at, updatedAt as placed, version, deleted, body). The label
    /// changes' are made only when asked for: most pages have none to read.
    /// None from the start (no position): such a store holds nothing to delete, and the walk
    /// brings every record it may read. Of a group or role joined, only the records the walk
    /// has passed (`updatedAt` at or before the position): it brings the others itself.
    static func arms(sqlName: String, table: String, _ changes: ViewChanges, _ position: ViewChanges.Position?, limit: Int?)
        -> (exits: [(String, StatementArguments)], labels: () -> [(String, StatementArguments)])
    {
        guard let position else { return ([], { [] }) }
        let passed = position.at
        let record = "\"\(sqlName)\""
        let account = changes.account
        func after(_ at: String, _ id: String) -> (String, [(any DatabaseValueConvertible)?]) {
            if let last = position.id { return ("(\(at) > ? OR (\(at) = ? AND \(id) > ?))", [position.at, position.at, last]) }
            return (position.inclusive ? "\(at) >= ?" : "\(at) > ?", [position.at])
        }
        // An argument, not text: the cached statements do not grow with the pages' sizes.
        let bound: [(any DatabaseValueConvertible)?] = [limit ?? -1]
        func arm(
            _ sql: String, _ before: [(any DatabaseValueConvertible)?], at: String, id: String,
            _ rest: [(any DatabaseValueConvertible)?] = []
        )
            -> (String, StatementArguments)
        {
            let (condition, arguments) = after(at, id)
            return (armText(sql, condition, at: at, id: id), StatementArguments(before + arguments + rest + bound))
        }
        switch changes.rule {
        case .role(let role):
            if changes.readsRecords {
                // Joined the role: every record, as it is, at the time it was given.
                return (
                    [],
                    {
                        [
                            arm(
                                """
                                SELECT r.id, r.created_at, c.at, r.version, r.deleted, r.body FROM tsync_label_changes AS c
                                JOIN \(record) AS r ON r.updated_at <= c.at
                                WHERE c.account_name = ? AND c.kind = 'role' AND c.label = ? AND c.joined = 1 AND r.updated_at <= ? AND $AFTER
                                """, [account, role, passed], at: "c.at", id: "r.id")
                        ]
                    }
                )
            }
            // Lost the role: every record that existed then, deleted, at the time it was lost.
            return (
                [],
                {
                    [
                        arm(
                            """
                            SELECT r.id, r.created_at, c.at, r.version, 1, '{}' FROM tsync_label_changes AS c
                            JOIN \(record) AS r ON r.created_at <= c.at
                            WHERE c.account_name = ? AND c.kind = 'role' AND c.label = ? AND c.joined = 0 AND $AFTER
                            """, [account, role], at: "c.at", id: "r.id")
                    ]
                }
            )
        case .group(let field):
            let value = SQLiteSchema.querySchema.indexExpression(field)
            let isText = "json_type(\"body\", '$.\"\(field)\"') = 'text'"
            let groups = changes.groups.sorted()
            let list = "(" + groups.map { _ in "?" }.joined(separator: ", ") + ")"
            let groupArguments: [(any DatabaseValueConvertible)?] = groups
            let readable = "coalesce(\(value) IN \(list) AND \(isText), 0)"
            // The group a record was in at the account's leave, by its history.
            let wasIn = """
                (SELECT json_extract(h.body, '$."\(field)"') FROM tsync_history AS h WHERE h.table_name = ? AND h.id = r.id
                AND h.updated_at <= c.at ORDER BY h.updated_at DESC, h.seq DESC LIMIT 1) = c.label
                """
            let exit =
                // A record left a group the account was in then and is in now: deleted, at the
                // time it left, unless the account may read it where it went; of its exits from
                // such groups only the last, so it comes once however often it moved.
                arm(
                    """
                    SELECT e.id, coalesce(r.created_at, e.at), e.at, coalesce(r.version, 'gone'), 1, '{}' FROM tsync_record_exits AS e
                    JOIN tsync_account_labels AS l ON l.account_name = ? AND l.kind = 'group' AND l.label = e.grp AND l.since < e.at
                    LEFT JOIN \(record) AS r ON r.id = e.id
                    WHERE e.table_name = ? AND NOT \(readable) AND $AFTER AND NOT EXISTS (
                        SELECT 1 FROM tsync_record_exits AS later JOIN tsync_account_labels AS m ON m.account_name = ? AND m.kind = 'group'
                        AND m.label = later.grp AND m.since < later.at
                        WHERE later.table_name = e.table_name AND later.id = e.id AND later.at > e.at)
                    """, [account, table] + groupArguments, at: "e.at", id: "e.id", [account])
            return (
                [exit],
                {
                    [

                        // The account left a group: the group's records then, deleted, at the time it left
                        // (those unchanged since; those changed since, by their history; those that left
                        // the group while it was in it).
                        arm(
                            """
                            SELECT r.id, r.created_at, c.at, r.version, 1, '{}' FROM tsync_label_changes AS c
                            JOIN \(record) AS r ON \(value) = c.label AND \(isText) AND r.updated_at <= c.at
                            WHERE c.account_name = ? AND c.kind = 'group' AND c.joined = 0 AND c.label NOT IN \(list)
                            AND $AFTER
                            """, [account] + groupArguments, at: "c.at", id: "r.id"),
                        arm(
                            """
                            SELECT r.id, r.created_at, c.at, r.version, 1, '{}' FROM tsync_label_changes AS c
                            JOIN \(record) AS r ON \(value) = c.label AND \(isText) AND r.updated_at > c.at AND r.created_at <= c.at
                            WHERE c.account_name = ? AND c.kind = 'group' AND c.joined = 0 AND c.label NOT IN \(list) AND \(wasIn)
                            AND $AFTER
                            """, [account] + groupArguments + [table], at: "c.at", id: "r.id"),
                        arm(
                            """
                            SELECT e.id, coalesce(r.created_at, e.at), c.at, coalesce(r.version, 'gone'), 1, '{}' FROM tsync_label_changes AS c
                            JOIN tsync_record_exits AS e ON e.table_name = ? AND e.grp = c.label AND e.at > c.since
                            JOIN \(record) AS r ON r.id = e.id
                            WHERE c.account_name = ? AND c.kind = 'group' AND c.joined = 0 AND NOT \(readable) AND (e.at <= c.at OR \(wasIn))
                            AND $AFTER
                            """, [table, account] + groupArguments + [table], at: "c.at", id: "e.id"),
                        // The account joined a group: the group's records as they are, at the time it joined
                        // (those changed since come as they are, at their own time).
                        arm(
                            """
                            SELECT r.id, r.created_at, c.at, r.version, r.deleted, r.body FROM tsync_label_changes AS c
                            JOIN \(record) AS r ON \(value) = c.label AND \(isText) AND r.updated_at <= c.at
                            WHERE c.account_name = ? AND c.kind = 'group' AND c.joined = 1 AND c.label IN \(list)
                            AND r.updated_at <= ? AND $AFTER
                            """, [account] + groupArguments + [passed], at: "c.at", id: "r.id"),
                    ]
                }
            )
        }
    }

    /// The texts of the statements `arms` made, by their template and position: a pull's every
    /// page runs the exits' statement, whose making (the position put into the template) was
    /// most of what a group's page cost more than a shared one's. As few as the statements'
    /// kinds (table, field, number of groups, kind of position); emptied past a bound all the same.
    private static let armTexts = Mutex<[String: String]>([:])

    /// `template` with its `$AFTER` replaced by `condition`, ordered by `at` and `id`, limited.
    private static func armText(_ template: String, _ condition: String, at: String, id: String) -> String {
        let key = [template, condition, at, id].joined(separator: "\u{1F}")
        if let text = armTexts.withLock({ $0[key] }) { return text }
        let text = template.replacing("$AFTER", with: condition) + " ORDER BY \(at), \(id) LIMIT ?"
        armTexts.withLock { texts in
            if texts.count >= 4096 { texts = [:] }
            texts[key] = text
        }
        return text
    }

    /// Removes `remove` and adds `add` to the account's labels of `kind`, each change written as
    /// a leave or join at one time T of every table's clock (the clocks move to T), so that no
    /// checkpoint is past it when it commits and no later write is stamped at or before it.
    func changeLabels(_ db: Database, name: String, kind: AccountLabel, add: [String], remove: [String], now: Timestamp) throws {
        var since: [String: String] = [:]
        for row in try Row.fetchAll(
            db, sql: "SELECT label, since FROM tsync_account_labels WHERE account_name = ? AND kind = ?", arguments: [name, kind.rawValue])
        {
            since[row[0]] = row[1]
        }
        let present = Set(since.keys)
        let removed = Set(remove).intersection(present)
        let added = Set(add).subtracting(present).subtracting(removed)
        guard !removed.isEmpty || !added.isEmpty else { return }
        let last = try Int64.fetchOne(db, sql: "SELECT max(last_updated_at) FROM tsync_table_clocks").map(
            Timestamp.init(millisecondsSinceEpoch:))
        let at = WriteRules.nextUpdatedAt(now: now, lastAssigned: last)
        try db.execute(
            sql: "UPDATE tsync_table_clocks SET last_updated_at = ? WHERE last_updated_at < ?",
            arguments: [at.millisecondsSinceEpoch, at.millisecondsSinceEpoch])
        for label in removed.sorted() {
            try db.execute(
                sql: "DELETE FROM tsync_account_labels WHERE account_name = ? AND kind = ? AND label = ?",
                arguments: [name, kind.rawValue, label])
            try db.execute(
                sql: """
                    INSERT INTO tsync_label_changes (account_name, kind, label, joined, at, since) VALUES (?, ?, ?, 0, ?, ?)
                    ON CONFLICT DO NOTHING
                    """,
                arguments: [name, kind.rawValue, label, at.iso8601, since[label] ?? ""])
        }
        for label in added.sorted() {
            try db.execute(
                sql: "INSERT INTO tsync_account_labels (account_name, kind, label, since) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                arguments: [name, kind.rawValue, label, at.iso8601])
            try db.execute(
                sql: """
                    INSERT INTO tsync_label_changes (account_name, kind, label, joined, at, since) VALUES (?, ?, ?, 1, ?, ?)
                    ON CONFLICT DO NOTHING
                    """,
                arguments: [name, kind.rawValue, label, at.iso8601, at.iso8601])
        }
    }
}
