import PostgresNIO
import TSyncModel
import TSyncQuery

/// A group's page of the pull walk in one round trip (a `group:` read rule, docs/DESIGN.md
/// §11.1). The general path reads such a page in a transaction of six statements (the look at
/// the writers, the page, the records' exits, the label changes, the labels read again) and
/// cannot read ahead: a group's pull took about twice a shared table's. A page that owes the
/// account nothing but its group's records is most pages; `tsync_pull_group_page` answers those,
/// and for any other says so, for the general path to answer.
///
/// It reads what the general path reads, in the same order, each statement with its own snapshot
/// (READ COMMITTED, as `tsync_pull_page`): the look at the writers, the group's page below the
/// cap, then whether anything could be owed, then the labels. Nothing is owed when no exit from a
/// group the account is in (since it joined), and no label change of the account, is at or after
/// the page's start where this page could reach it (a full page that ends before the first): a
/// superset of the rows the general path's exit and label-change statements could find, and of
/// those its merge would keep. The labels, read last, must be those the request's token gave.
extension PullPage {
    /// The view a group's walk is read under: the records whose `field` names one of `groups`,
    /// for `account`, whose labels must still be `groups` and `roles`.
    struct GroupView: Hashable, Sendable {
        var field: String
        var account: String
        /// Both in byte order, as PostgreSQL sorts `COLLATE "C"` text.
        var groups: [String]
        var roles: [String]
    }

    /// A group's pull page of `query` as a walk; nil for any other read. `query` is the view's:
    /// the group filter alone, or ANDed with tsync's checkpoint (`ReadView.narrowing`).
    static func walk(table: String, _ query: RecordQuery, scope: OwnerScope, changes: ViewChanges) -> Walk? {
        guard case .group(let field) = changes.rule, case .shared = scope, !changes.groups.isEmpty else { return nil }
        let group = GroupFilter(field: field, groups: changes.groups).expression
        var own = query
        switch query.filter {
        case group?: own.filter = nil
        case .binary(.and, group, let rest)?: own.filter = rest
        default: return nil
        }
        guard var walk = walk(table: table, own, scope: scope) else { return nil }
        func bytewise(_ labels: Set<String>) -> [String] { labels.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } }
        walk.view = GroupView(field: field, account: changes.account, groups: bytewise(changes.groups), roles: bytewise(changes.roles))
        return walk
    }

    static let groupFunctionDefinition = #"""
        CREATE FUNCTION tsync_pull_group_page(
            table_key text, table_hash integer, writers_key integer, include_deleted boolean,
            after_updated text, after_id text, page_size integer,
            field text, groups text[], account text, roles text[], OUT page text, OUT answered boolean)
        LANGUAGE plpgsql VOLATILE AS $$
        DECLARE
            newest text;
            floor_ms bigint;
            cap text;
            read_count integer;
            last_updated text;
            first_change text;
            now_groups text[];
            now_roles text[];
        BEGIN
            IF current_setting('transaction_isolation') <> 'read committed' THEN
                RAISE EXCEPTION 'tsync_pull_group_page needs READ COMMITTED, not %', current_setting('transaction_isolation');
            END IF;
            answered := false;
            IF cardinality(groups) = 0 THEN
                RETURN;
            END IF;
            -- The group's pull order is served by the (table, field, updated_at, id) index.
            PERFORM set_config('enable_sort', 'off', true);
            -- The look at the writers, as tsync_pull_page's.
            SELECT max(r.updated_at) INTO newest FROM tsync_records AS r WHERE r.table_name = table_key;
            IF newest IS NULL THEN
                RETURN;
            END IF;
            IF pg_try_advisory_lock(writers_key, table_hash) THEN
                PERFORM pg_advisory_unlock(writers_key, table_hash);
            ELSE
                SELECT min(((l.classid::bigint & 1023) << 32) | l.objid::bigint) INTO floor_ms FROM pg_locks AS l
                    WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.classid::bigint >> 10 = table_hash
                    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database());
            END IF;
            cap := to_char(timestamp '1970-01-01'
                + least((extract(epoch FROM newest::timestamptz) * 1000)::bigint + 1, floor_ms) * interval '1 millisecond',
                'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
            -- The group's page, as the renderer's `field eq 'g' or ...` selects it (the field a
            -- JSON string naming one of the groups), written as the field's index reads it. One
            -- group is an equality, which walks the index in page order. The field's text is a
            -- group's name also when it is a number, true or false, or an object or array that
            -- reads so: only then is its JSON type read too.
            EXECUTE format(
                $page$SELECT count(*)::integer, max(p.updated_at),
                    string_agg(concat_ws(E'\x1F', p.id, p.created_at, p.updated_at, p.version, p.flags, p.body), E'\x1E')
                    FROM (SELECT r.id, r.created_at, r.updated_at, r.version,
                            CASE WHEN r.deleted THEN 't' ELSE 'f' END || CASE WHEN r.body_text IS NULL THEN 'j' ELSE '' END AS flags,
                            coalesce(r.body_text, r.body::text) AS body
                        FROM tsync_records AS r
                        WHERE r.table_name = $1 AND ("body"->>%L) COLLATE "C" %s %s
                            AND ($3 OR NOT r.deleted)
                            AND (r.updated_at, r.id) > ($4 COLLATE "C", $5 COLLATE "C") AND r.updated_at < $6 COLLATE "C"
                        ORDER BY r.updated_at, r.id LIMIT $7) AS p$page$,
                field, CASE WHEN cardinality(groups) = 1 THEN '= $2[1]' ELSE '= ANY($2)' END,
                CASE WHEN EXISTS (SELECT 1 FROM unnest(groups) AS g(name)
                        WHERE g.name ~ '^[-+0-9.eE]*$' OR g.name IN ('true', 'false') OR left(g.name, 1) IN ('{', '['))
                    THEN format('AND jsonb_typeof("body"->%L) = ''string''', field) ELSE '' END)
                INTO read_count, last_updated, page
                USING table_key, groups, include_deleted, after_updated, after_id, cap, page_size;
            -- From a position only (from the start the general path reads no change either).
            IF after_updated <> '' THEN
                -- The first exit from a group the account is in (since it joined), one index
                -- probe per group: a page of page_size records that ends before it owes none.
                SELECT min(x.at) INTO first_change FROM tsync_account_labels AS l
                    CROSS JOIN LATERAL (SELECT e.at FROM tsync_record_exits AS e
                        WHERE e.table_name = table_key AND e.grp = l.label AND e.at >= after_updated COLLATE "C" AND e.at > l.since
                        ORDER BY e.at LIMIT 1) AS x
                    WHERE l.account_name = account AND l.kind = 'group';
                IF first_change IS NOT NULL AND (read_count < page_size OR last_updated >= first_change) THEN
                    RETURN;
                END IF;
                -- The same of the account's label changes.
                SELECT min(c.at) INTO first_change FROM tsync_label_changes AS c
                    WHERE c.account_name = account AND c.at >= after_updated COLLATE "C";
                IF first_change IS NOT NULL AND (read_count < page_size OR last_updated >= first_change) THEN
                    RETURN;
                END IF;
            END IF;
            -- Last: labels that still hold held for every read before.
            SELECT coalesce(array_agg(l.label ORDER BY l.label COLLATE "C") FILTER (WHERE l.kind = 'group'), '{}'),
                    coalesce(array_agg(l.label ORDER BY l.label COLLATE "C") FILTER (WHERE l.kind = 'role'), '{}')
                INTO now_groups, now_roles FROM tsync_account_labels AS l WHERE l.account_name = account;
            IF now_groups IS DISTINCT FROM groups OR now_roles IS DISTINCT FROM roles THEN
                page := NULL;
                RETURN;
            END IF;
            answered := true;
        END
        $$
        """#

    /// A group's call (`GroupView`), sent unnamed as `Call`.
    struct GroupCall: PostgresPreparedStatement {
        static let name = "tsync_pull_group_page"
        static let sql = "SELECT page, answered FROM tsync_pull_group_page($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
        typealias Row = PostgresRow

        var walk: Walk
        var view: GroupView

        func makeBindings() throws -> PostgresBindings {
            var bindings = walk.bindings(withOwner: false)
            bindings.append(view.field)
            bindings.append(view.groups)
            bindings.append(view.account)
            bindings.append(view.roles)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
    }

    /// The page of a group's `walk`; nil when the function leaves it to the general path, or
    /// its text is not in the form this reads.
    static func readGroup(_ database: PostgresDatabase, _ walk: Walk, _ view: GroupView) async throws -> Page? {
        try await database.call(GroupCall(walk: walk, view: view)) { rows in
            guard let row = rows.first else { return nil }
            let cells = Array(row)
            guard cells.count == 2, try cells[1].decode(Bool.self) else { return nil }
            return try page(of: cells[0], top: walk.top)
        }
    }
}
