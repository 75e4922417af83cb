import PostgresNIO
import TSyncModel
import TSyncQuery

/// Records that leave or come into an account's view, on PostgreSQL (docs/DESIGN.md §11.1).
extension PostgresStorage {
    public func query(table: String, _ query: RecordQuery, scope: OwnerScope, changes: ViewChanges) async throws -> RecordPage? {
        // A group's pull page that owes nothing but the group's records: one call, read ahead
        // as a shared table's (`PullPage.groupFunctionDefinition`).
        if readsPagesInOneCall, capsPulls, let walk = PullPage.walk(table: table, query, scope: scope, changes: changes) {
            let database = self.database
            if let page = try await readAhead.page(walk, read: { try await PullPage.read(database, $0) }) {
                var answer = RecordPage(written: page.written, totalCount: nil)
                answer.deletedHorizon = try await deletedHorizon(table)
                return answer
            }
        }
        let key = PostgresSchema.tableKey(table)
        let skip = query.skip ?? 0
        var widened = query
        widened.skip = 0
        widened.top = query.top.map { $0 + skip }
        // The first skip + top rows of each part: the page is found among them.
        let wide = widened
        let position = ViewChanges.position(query.filter)
        let capsPulls = capsPulls
        do {
            let read = try await database.transaction(readOnly: true) { transaction -> PostgresTransaction.Outcome<Read?> in
                // The look at the writers first, then every read after it (docs/DESIGN.md §10):
                // the records and the records' exits below its cap; the label changes need none,
                // since they are written with every table's writers kept out and are past every
                // time a page could have passed before they committed.
                let cap = try await WriteFloor.pullCap(transaction, key: key)
                var read = Read()
                if changes.readsRecords, cap != nil || !capsPulls {
                    read.main = try await transaction.rows(
                        try self.pageStatement(table: table, wide, scope: scope, below: capsPulls ? cap : nil))
                }
                let arms = Self.arms(key: key, changes, position, limit: wide.top, cap: capsPulls ? cap : nil)
                func fetch(_ statements: [PostgresStatement]) async throws {
                    for statement in statements {
                        let items = try await transaction.rows(statement).map { row -> PageRecord in
                            let (id, createdAt, updatedAt, version, deleted, body) = try row.decode(
                                (String, String, String, String, Bool, String).self)
                            return .stored(
                                id: id, createdAt: createdAt, updatedAt: updatedAt, version: version, deleted: deleted, fields: body)
                        }
                        read.arms.append(ViewChanges.Arm(items: items, full: wide.top.map { items.count >= $0 } ?? false))
                    }
                }
                try await fetch(arms.exits)
                if let position, !arms.labels.isEmpty {
                    // As on SQLite: the label changes only when the page may reach the first.
                    var first = PostgresStatement("SELECT min(at) FROM tsync_label_changes WHERE account_name = ")
                    first.append(first.bind(changes.account) + " AND at >= " + first.bind(position.at))
                    if let time = try await transaction.rows(first).first.flatMap({ try $0.decode(String?.self) }) {
                        let full = wide.top.map { (read.main?.count ?? 0) >= $0 } ?? false
                        let last = try read.main?.last.map { try $0.makeRandomAccess()[2].decode(String.self) } ?? ""
                        if !full || last >= time { try await fetch(arms.labels) }
                    }
                }
                // Last: labels that still hold held for every read before.
                guard try await Self.labelsHold(transaction, changes) else { return .commit(nil) }
                if !changes.readsRecords, !read.arms.contains(where: { !$0.items.isEmpty }) {
                    read.owed = try await Self.owesDeletions(transaction, changes)
                }
                return .commit(read)
            }
            var page = RecordPage(records: [], totalCount: query.includeTotalCount ? 0 : nil)
            guard let read else { return page }
            if !changes.readsRecords, !read.owed, !read.arms.contains(where: { !$0.items.isEmpty }) { return nil }
            page.deletedHorizon = try await deletedHorizon(table)
            var arms = read.arms
            if let main = read.main {
                let records = try Self.page(main, wide, total: nil).records().map(PageRecord.parsed)
                arms.insert(ViewChanges.Arm(items: records, full: wide.top.map { records.count >= $0 } ?? false), at: 0)
            }
            page.items = ViewChanges.merge(arms, skip: skip, top: query.top)
            if query.includeTotalCount {
                var count = PostgresStatement("SELECT count(*) FROM tsync_records WHERE ")
                try appendConditions(to: &count, table: table, query: query, scope: scope)
                page.totalCount =
                    changes.readsRecords ? try await database.rows(count).first.map { Int(try $0.decode(Int64.self)) } ?? 0 : 0
            }
            return page
        } catch let error as PostgresServerError where error.isDataException || error.isProgramLimit {
            throw TSyncError.invalidInput("the $filter or $orderby cannot be evaluated: \(error.message)")
        }
    }

    /// What one pull page's transaction read.
    private struct Read: Sendable {
        var main: [PostgresRow]?
        var arms: [ViewChanges.Arm] = []
        var owed = false
    }

    private static func labelsHold(_ transaction: PostgresTransaction, _ changes: ViewChanges) async throws -> Bool {
        var statement = PostgresStatement("SELECT kind, label FROM tsync_account_labels WHERE account_name = ")
        statement.append(statement.bind(changes.account))
        var groups: Set<String> = []
        var roles: Set<String> = []
        for row in try await transaction.rows(statement) {
            let (kind, label) = try row.decode((String, String).self)
            switch AccountLabel(rawValue: kind) {
            case .group?: groups.insert(label)
            case .role?: roles.insert(label)
            case nil: break
            }
        }
        return groups == changes.groups && roles == changes.roles
    }

    private static func owesDeletions(_ transaction: PostgresTransaction, _ changes: ViewChanges) async throws -> Bool {
        guard case .role(let role) = changes.rule else { return false }
        var statement = PostgresStatement("SELECT 1 FROM tsync_label_changes WHERE account_name = ")
        statement.append(
            statement.bind(changes.account) + " AND kind = 'role' AND label = " + statement.bind(role) + " AND NOT joined LIMIT 1")
        return try await !transaction.rows(statement).isEmpty
    }

    /// One statement per kind of change, as on SQLite (`SQLiteStorage.arms`): rows of (id,
    /// created_at, updatedAt as placed, version, deleted, body text) in (time, id) order.
    static func arms(key: String, _ changes: ViewChanges, _ position: ViewChanges.Position?, limit: Int?, cap: Timestamp?)
        -> (exits: [PostgresStatement], labels: [PostgresStatement])
    {
        guard let position else { return ([], []) }
        /// `sql` with `$ACCOUNT`, `$TABLE`, `$GROUPS`, `$ROLE` bound, then the position and order.
        func arm(_ sql: String, at: String, id: String, capped: Bool = false) -> PostgresStatement {
            var statement = PostgresStatement()
            var text = sql
            for (name, value) in [("$ACCOUNT", changes.account), ("$TABLE", key)] where text.contains(name) {
                text = text.replacingOccurrences(of: name, with: statement.bind(value))
            }
            if text.contains("$GROUPS") { text = text.replacingOccurrences(of: "$GROUPS", with: statement.bind(changes.groups.sorted())) }
            if case .role(let role) = changes.rule, text.contains("$ROLE") {
                text = text.replacingOccurrences(of: "$ROLE", with: statement.bind(role))
            }
            if text.contains("$PASSED") { text = text.replacingOccurrences(of: "$PASSED", with: statement.bind(position.at)) }
            statement.append(text)
            let time = statement.bind(position.at)
            if let last = position.id {
                statement.append(" AND (\(at) > \(time) OR (\(at) = \(time) AND \(id) > \(statement.bind(last))))")
            } else {
                statement.append(" AND \(at) \(position.inclusive ? ">=" : ">") \(time)")
            }
            if capped, let cap { statement.append(" AND \(at) < " + statement.bind(cap.iso8601)) }
            statement.append(" ORDER BY \(at), \(id)")
            if let limit { statement.append(" LIMIT " + statement.bind(Int64(limit))) }
            return statement
        }
        let body = "coalesce(r.body_text, r.body::text)"
        switch changes.rule {
        case .role:
            if changes.readsRecords {
                return (
                    [],
                    [
                        arm(
                            """
                            SELECT r.id, r.created_at, c.at, r.version, r.deleted, \(body) FROM tsync_label_changes AS c
                            JOIN tsync_records AS r ON r.table_name = $TABLE AND r.updated_at <= c.at AND r.updated_at <= $PASSED
                            WHERE c.account_name = $ACCOUNT AND c.kind = 'role' AND c.label = $ROLE AND c.joined
                            """, at: "c.at", id: "r.id")
                    ]
                )
            }
            return (
                [],
                [
                    arm(
                        """
                        SELECT r.id, r.created_at, c.at, r.version, true, '{}' FROM tsync_label_changes AS c
                        JOIN tsync_records AS r ON r.table_name = $TABLE AND r.created_at <= c.at
                        WHERE c.account_name = $ACCOUNT AND c.kind = 'role' AND c.label = $ROLE AND NOT c.joined
                        """, at: "c.at", id: "r.id")
                ]
            )
        case .group(let field):
            let value = "(r.body->>'\(field)')"
            let isText = "jsonb_typeof(r.body->'\(field)') = 'string'"
            let readable = "coalesce(\(value) = ANY($GROUPS) AND \(isText), false)"
            let wasIn = """
                (SELECT h.body_text::jsonb->>'\(field)' FROM tsync_history AS h WHERE h.table_name = $TABLE AND h.id = r.id
                AND h.updated_at <= c.at ORDER BY h.updated_at DESC, h.seq DESC LIMIT 1) = c.label
                """
            let exit =
                arm(
                    """
                    SELECT e.id, coalesce(r.created_at, e.at), e.at, coalesce(r.version, 'gone'), true, '{}' FROM tsync_record_exits AS e
                    JOIN tsync_account_labels AS l ON l.account_name = $ACCOUNT AND l.kind = 'group' AND l.label = e.grp AND l.since < e.at
                    LEFT JOIN tsync_records AS r ON r.table_name = e.table_name AND r.id = e.id
                    WHERE e.table_name = $TABLE AND NOT \(readable) AND NOT EXISTS (
                        SELECT 1 FROM tsync_record_exits AS later JOIN tsync_account_labels AS m ON m.account_name = $ACCOUNT
                            AND m.kind = 'group' AND m.label = later.grp AND m.since < later.at
                        WHERE later.table_name = e.table_name AND later.id = e.id AND later.at > e.at)
                    """, at: "e.at", id: "e.id", capped: true)
            return (
                [exit],
                [
                    arm(
                        """
                        SELECT r.id, r.created_at, c.at, r.version, true, '{}' FROM tsync_label_changes AS c
                        JOIN tsync_records AS r ON r.table_name = $TABLE AND \(value) = c.label AND \(isText) AND r.updated_at <= c.at
                        WHERE c.account_name = $ACCOUNT AND c.kind = 'group' AND NOT c.joined AND NOT (c.label = ANY($GROUPS))
                        """, at: "c.at", id: "r.id"),
                    arm(
                        """
                        SELECT r.id, r.created_at, c.at, r.version, true, '{}' FROM tsync_label_changes AS c
                        JOIN tsync_records AS r ON r.table_name = $TABLE AND \(value) = c.label AND \(isText) AND r.updated_at > c.at
                            AND r.created_at <= c.at
                        WHERE c.account_name = $ACCOUNT AND c.kind = 'group' AND NOT c.joined AND NOT (c.label = ANY($GROUPS)) AND \(wasIn)
                        """, at: "c.at", id: "r.id"),
                    arm(
                        """
                        SELECT e.id, coalesce(r.created_at, e.at), c.at, coalesce(r.version, 'gone'), true, '{}' FROM tsync_label_changes AS c
                        JOIN tsync_record_exits AS e ON e.table_name = $TABLE AND e.grp = c.label AND e.at > c.since
                        JOIN tsync_records AS r ON r.table_name = e.table_name AND r.id = e.id
                        WHERE c.account_name = $ACCOUNT AND c.kind = 'group' AND NOT c.joined AND NOT \(readable)
                            AND (e.at <= c.at OR \(wasIn))
                        """, at: "c.at", id: "e.id"),
                    arm(
                        """
                        SELECT r.id, r.created_at, c.at, r.version, r.deleted, \(body) FROM tsync_label_changes AS c
                        JOIN tsync_records AS r ON r.table_name = $TABLE AND \(value) = c.label AND \(isText) AND r.updated_at <= c.at
                        WHERE c.account_name = $ACCOUNT AND c.kind = 'group' AND c.joined AND c.label = ANY($GROUPS)
                            AND r.updated_at <= $PASSED
                        """, at: "c.at", id: "r.id"),
                ]
            )
        }
    }

    /// Written with the update that takes a record out of `group` (docs/DESIGN.md §11.1).
    static func recordExit(_ transaction: PostgresTransaction, key: String, group: String, _ record: Record) async throws {
        guard let at = record.system.updatedAt else { return }
        var statement = PostgresStatement("INSERT INTO tsync_record_exits (table_name, grp, id, at) VALUES (")
        statement.append(
            [statement.bind(key), statement.bind(group), statement.bind(record.id), statement.bind(at.iso8601)].joined(separator: ", ")
                + ") ON CONFLICT DO NOTHING")
        try await transaction.execute(statement)
    }

    /// The label changes of one `changeLabels`, as on SQLite at one time T, here with every
    /// table's writers kept out (their lock taken exclusively) until the change commits: T is
    /// past every table's newest record and the clock, so no page has passed it, and the change
    /// commits only once the clock is past T, so later writes stamp after it.
    func changeLabels(_ transaction: PostgresTransaction, name: String, kind: AccountLabel, add: [String], remove: [String]) async throws {
        var select = PostgresStatement("SELECT label, since FROM tsync_account_labels WHERE account_name = ")
        select.append(select.bind(name) + " AND kind = " + select.bind(kind.rawValue))
        let since = Dictionary(try await transaction.rows(select).map { try $0.decode((String, String).self) }) { first, _ in first }
        let present = Set(since.keys)
        let removed = Set(remove).intersection(present)
        let added = Set(add).subtracting(present).subtracting(removed)
        guard !removed.isEmpty || !added.isEmpty else { return }
        let tables = try await transaction.rows(
            PostgresStatement(
                """
                WITH RECURSIVE t(name) AS (SELECT min(table_name) FROM tsync_records
                UNION ALL SELECT (SELECT min(table_name) FROM tsync_records WHERE table_name > t.name) FROM t WHERE t.name IS NOT NULL)
                SELECT name FROM t WHERE name IS NOT NULL
                """)
        ).map { try $0.decode(String.self) }
        for hash in Set(tables.map(WriteFloor.tableHash)).sorted() {
            var lock = PostgresStatement("SELECT pg_advisory_xact_lock(")
            lock.append(lock.bind(WriteFloor.writersKey) + "::integer, " + lock.bind(hash) + "::integer)")
            try await transaction.execute(lock)
        }
        var newest = PostgresStatement(
            "SELECT max((SELECT max(updated_at) FROM tsync_records AS r WHERE r.table_name = t.name)) FROM unnest(")
        newest.append(newest.bind(tables) + "::text[]) AS t(name)")
        let last = try await transaction.rows(newest).first.flatMap { try $0.decode(String?.self) }.flatMap(Timestamp.init(iso8601:))
        let at = WriteRules.nextUpdatedAt(now: clock(), lastAssigned: last)
        // At most a second (T far ahead of this clock: a record stamped by a clock that ran
        // ahead): holding every writer longer costs more than the rare write stamped before T.
        let deadline = ContinuousClock.now + .seconds(1)
        while clock() <= at, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        for label in removed.sorted() {
            var delete = PostgresStatement("DELETE FROM tsync_account_labels WHERE account_name = ")
            delete.append(delete.bind(name) + " AND kind = " + delete.bind(kind.rawValue) + " AND label = " + delete.bind(label))
            try await transaction.execute(delete)
        }
        for label in added.sorted() {
            var insert = PostgresStatement("INSERT INTO tsync_account_labels (account_name, kind, label, since) VALUES (")
            insert.append(
                [insert.bind(name), insert.bind(kind.rawValue), insert.bind(label), insert.bind(at.iso8601)].joined(separator: ", ")
                    + ") ON CONFLICT DO NOTHING")
            try await transaction.execute(insert)
        }
        for (label, joined) in removed.sorted().map({ ($0, false) }) + added.sorted().map({ ($0, true) }) {
            var insert = PostgresStatement("INSERT INTO tsync_label_changes (account_name, kind, label, joined, at, since) VALUES (")
            insert.append(
                [
                    insert.bind(name), insert.bind(kind.rawValue), insert.bind(label), insert.bind(joined), insert.bind(at.iso8601),
                    insert.bind(joined ? at.iso8601 : since[label] ?? ""),
                ].joined(separator: ", ") + ") ON CONFLICT DO NOTHING")
            try await transaction.execute(insert)
        }
        // Held reads of every table, on every instance, read again.
        for table in tables {
            var notify = PostgresStatement("SELECT pg_notify('\(PostgresChangeListener.channel)', ")
            notify.append(notify.bind("labels \(table)") + ")")
            try await transaction.execute(notify)
        }
    }
}
