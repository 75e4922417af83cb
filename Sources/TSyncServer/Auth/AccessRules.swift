import TSyncModel
import TSyncQuery

/// What a request does to a table, as a table rule names it (`--access TABLE:OP=RULE`).
public enum AccessOperation: String, Sendable, CaseIterable {
    case read, insert, update, delete
}

/// Who may do an operation on a table's records (docs/DESIGN.md §11.1).
public enum AccessRule: Sendable, Hashable, CustomStringConvertible {
    /// No token needed.
    case anyone
    /// Any signed-in account (the default of a table that names no rule).
    case authenticated
    /// Accounts that have the role.
    case role(String)
    /// The account that inserted the record (`--per-user`).
    case owner
    /// Members of the group the record's field names.
    case group(field: String)
    case nobody

    public init(parsing text: String) throws(TSyncError) {
        switch text {
        case "anyone": self = .anyone
        case "authenticated": self = .authenticated
        case "owner": self = .owner
        case "nobody": self = .nobody
        default:
            if text.hasPrefix("role:") {
                let name = String(text.dropFirst(5))
                try AccessRules.validateLabel(name, kind: "role")
                self = .role(name)
            } else if text.hasPrefix("group:") {
                let field = String(text.dropFirst(6))
                guard Identifiers.isSimpleName(field), !SystemProperties.names.contains(field) else {
                    throw .usage(
                        "invalid rule \(Identifiers.quoted(text)): group:FIELD names a user field (letters, digits and '_') that holds the group's name"
                    )
                }
                self = .group(field: field)
            } else {
                throw .usage(
                    "invalid rule \(Identifiers.quoted(text)): use anyone, authenticated, role:ROLE, owner, group:FIELD or nobody")
            }
        }
    }

    public var description: String {
        switch self {
        case .anyone: "anyone"
        case .authenticated: "authenticated"
        case .role(let name): "role:\(name)"
        case .owner: "owner"
        case .group(let field): "group:\(field)"
        case .nobody: "nobody"
        }
    }
}

/// The table rules of a server (`--access`, `--per-user`), and the one place that decides, for
/// every route, what a caller may read and change (docs/DESIGN.md §11.1). A route asks it for a
/// `ReadView` before it reads and for a `WriteAccess` before it writes; the storage applies the
/// view as a row filter (so a page, a count and a held read never see a record outside it) and
/// checks the write against the record it finds, in the write's transaction.
public struct AccessRules: Sendable {
    /// Explicit rules by lower-case table name; an operation not named keeps the default.
    public private(set) var tables: [String: [AccessOperation: AccessRule]] = [:]
    /// Tables whose default is `owner` for every operation (`--per-user`), lower case.
    public var perUserTables: Set<String> = []
    /// Without accounts (`--no-auth`) the default is `anyone`.
    public var requiresAuthentication = true

    public init() {}

    /// Adds one `TABLE:OP=RULE[,OP=RULE]...`; a later rule for the same operation wins.
    public mutating func add(parsing text: String) throws(TSyncError) {
        let (table, rules) = try Self.parse(text)
        tables[table, default: [:]].merge(rules) { _, new in new }
    }

    /// `TABLE:OP=RULE[,OP=RULE]...`, with `write` standing for insert, update and delete.
    public static func parse(_ text: String) throws(TSyncError) -> (table: String, rules: [AccessOperation: AccessRule]) {
        guard let colon = text.firstIndex(of: ":") else {
            throw .usage(
                "invalid access rule \(Identifiers.quoted(text)): write TABLE:OP=RULE, e.g. prices:read=authenticated,write=role:admin")
        }
        let table = String(text[..<colon])
        try Identifiers.validateTableName(table)
        var rules: [AccessOperation: AccessRule] = [:]
        for part in text[text.index(after: colon)...].split(separator: ",", omittingEmptySubsequences: false) {
            guard let equals = part.firstIndex(of: "=") else {
                throw .usage("invalid access rule \(Identifiers.quoted(String(part))) in \(Identifiers.quoted(text)): write OP=RULE")
            }
            let operation = String(part[..<equals])
            let rule = try AccessRule(parsing: String(part[part.index(after: equals)...]))
            if operation == "write" {
                for op in [AccessOperation.insert, .update, .delete] { rules[op] = rule }
            } else if let op = AccessOperation(rawValue: operation) {
                rules[op] = rule
            } else {
                throw .usage(
                    "invalid operation \(Identifiers.quoted(operation)) in \(Identifiers.quoted(text)): use read, insert, update, delete or write"
                )
            }
        }
        return (table.lowercased(), rules)
    }

    /// Role and group names: what account names may hold, so that they read unambiguously in
    /// rules, logs and `tsync user list`.
    public static func validateLabel(_ name: String, kind: String) throws(TSyncError) {
        do {
            try AccountRules.validateName(name)
        } catch {
            throw .usage(
                "invalid \(kind) \(Identifiers.quoted(name)): use 1 to \(AccountRules.maximumNameLength) letters, digits, '.', '_', '-' or '@'"
            )
        }
    }

    /// The rule of `operation` on `table`.
    public func rule(_ table: String, _ operation: AccessOperation) -> AccessRule {
        let key = table.lowercased()
        if let rule = tables[key]?[operation] { return rule }
        if perUserTables.contains(key) { return .owner }
        return requiresAuthentication ? .authenticated : .anyone
    }

    /// Whether a table's records carry their inserting account: when any of its rules is `owner`.
    func keepsOwner(_ table: String) -> Bool { AccessOperation.allCases.contains { rule(table, $0) == .owner } }

    /// Whether some operation of some table needs no token: requests without one then pass the
    /// authentication check and are decided here.
    public var admitsAnonymous: Bool {
        !requiresAuthentication || tables.values.contains { $0.values.contains(.anyone) }
    }

    /// The rules in force that are not today's default, one `TABLE:OP=RULE` each, for the
    /// start-up log.
    public var summary: [String] {
        tables.keys.sorted().map { table in
            let rules = AccessOperation.allCases.map { "\($0.rawValue)=\(rule(table, $0))" }
            return "\(table): " + rules.joined(separator: ",")
        }
    }

    /// Refuses rules the server cannot enforce.
    public func validate() throws(TSyncError) {
        guard !requiresAuthentication else { return }
        for (table, rules) in tables.sorted(by: { $0.key < $1.key }) {
            if let rule = rules.values.first(where: { $0 != .anyone && $0 != .nobody }) {
                throw .usage("the rule \(rule) of \(table) needs accounts to know who asks: it needs authentication")
            }
        }
    }

    // MARK: - Decisions

    /// What `caller` may read of `table`: every record, its own (`owner`), or those whose group
    /// field names one of its groups. Thrown: 401 for a caller that must sign in, 403 when the
    /// table is closed to it (a role it lacks, `nobody`, a token not for this table). A route
    /// that reads one record answers that 403 as 404, as for any record it may not read.
    ///
    /// With `pulling` (a pull-shaped read of the list route, `ViewChanges.applies`), an account's
    /// view of a `group:` or `role:` table carries its `ViewChanges`, and a `role:` table whose
    /// role the account lacks is not refused here: the storage answers the deletions it owes
    /// the account, and the 403 (`ReadView.refusal`) only when it owes none.
    func readView(_ table: String, _ caller: Caller, pulling: Bool = false) throws(APIError) -> ReadView {
        try caller.checkToken(table: table, writing: false)
        let rule = rule(table, .read)
        if pulling, let account = caller.account {
            switch rule {
            case .group(let field):
                var view = ReadView(scope: .shared, group: GroupFilter(field: field, groups: caller.groups))
                view.changes = ViewChanges(account: account, rule: .group(field: field), groups: caller.groups, roles: caller.roles)
                return view
            case .role(let role):
                var view = ReadView(scope: .shared)
                view.changes = ViewChanges(account: account, rule: .role(role), groups: caller.groups, roles: caller.roles)
                if !caller.roles.contains(role) { view.refusal = Self.refusal(table, .read, rule).message }
                return view
            default: break
            }
        }
        switch rule {
        case .anyone: return ReadView(scope: .shared)
        case .authenticated:
            guard caller.account != nil else { throw APIError.unauthorized }
            return ReadView(scope: .shared)
        case .role(let role):
            guard caller.account != nil else { throw APIError.unauthorized }
            guard caller.roles.contains(role) else { throw Self.refusal(table, .read, rule) }
            return ReadView(scope: .shared)
        case .owner:
            guard let account = caller.account else { throw APIError.unauthorized }
            return ReadView(scope: .owner(account))
        case .group(let field):
            guard caller.account != nil else { throw APIError.unauthorized }
            return ReadView(scope: .shared, group: GroupFilter(field: field, groups: caller.groups))
        case .nobody:
            throw Self.refusal(table, .read, rule)
        }
    }

    /// What a write of `operation` on `table` by `caller` must pass, checked against the record
    /// it meets in the storage (`RecordWrite.step`). Thrown only what needs no record: 401 for a
    /// caller that must sign in, 403 for a token that may not write here.
    func writeAccess(_ table: String, _ operation: AccessOperation, _ caller: Caller) throws(APIError) -> (OwnerScope, WriteAccess) {
        try caller.checkToken(table: table, writing: true)
        let rule = rule(table, operation)
        var access = WriteAccess()
        // The read side: an update or delete of a record the caller may not read is 404.
        switch self.rule(table, .read) {
        case .group(let field): access.readGroup = GroupFilter(field: field, groups: caller.groups)
        case .role(let role) where !caller.roles.contains(role): access.unreadable = true
        case .nobody: access.unreadable = true
        default: break
        }
        var scope = OwnerScope.shared
        if self.rule(table, .read) == .owner || (operation == .insert && keepsOwner(table)) {
            guard let account = caller.account else { throw APIError.unauthorized }
            scope = .owner(account)
        }
        if keepsOwner(table), caller.account == nil { throw APIError.unauthorized }
        let message = Self.refusal(table, operation, rule).message
        switch rule {
        case .anyone: break
        case .authenticated:
            guard caller.account != nil else { throw APIError.unauthorized }
        case .role(let role):
            guard caller.account != nil else { throw APIError.unauthorized }
            if !caller.roles.contains(role) { access.check = .denied(message) }
        case .owner:
            guard let account = caller.account else { throw APIError.unauthorized }
            access.check = .owner(account, message)
        case .group(let field):
            guard caller.account != nil else { throw APIError.unauthorized }
            access.check = .group(GroupFilter(field: field, groups: caller.groups), message)
        case .nobody:
            access.check = .denied(message)
        }
        return (scope, access)
    }

    /// The 403 of an operation the rule refuses, naming the rule.
    static func refusal(_ table: String, _ operation: AccessOperation, _ rule: AccessRule) -> APIError {
        let who: String
        switch rule {
        case .anyone, .authenticated: who = "signed-in accounts"
        case .role(let role): who = "accounts with the role \(Identifiers.quoted(role))"
        case .owner: who = "the account that inserted the record"
        case .group(let field): who = "members of the group the record's \(Identifiers.quoted(field)) names"
        case .nobody: who = "nobody"
        }
        return APIError(
            .forbidden, "\(operation.rawValue) on table \(Identifiers.quoted(table)) is for \(who) (rule \(operation.rawValue)=\(rule))")
    }
}

/// Who asks: the account of the request's token, its roles and groups, and the token's scope.
public struct Caller: Sendable, Hashable {
    public var account: String?
    public var roles: Set<String> = []
    public var groups: Set<String> = []
    /// What the token may reach; nil for a login's token, which reaches what its account may.
    public var token: TokenScope?

    public init(account: String?, roles: Set<String> = [], groups: Set<String> = [], token: TokenScope? = nil) {
        self.account = account
        self.roles = roles
        self.groups = groups
        self.token = token
    }

    static let anonymous = Caller(account: nil)

    /// From the rows of a token's look-up: (account, token scope, label kind, label) each, the
    /// last two nil for an account with no label; nil for no row (no live token).
    init?(rows: [(String, String, String?, String?)]) {
        guard let first = rows.first else { return nil }
        self.init(account: first.0, token: TokenScope(stored: first.1).narrowed)
        for (_, _, kind, label) in rows {
            guard let kind, let label else { continue }
            switch AccountLabel(rawValue: kind) {
            case .role?: roles.insert(label)
            case .group?: groups.insert(label)
            case nil: break
            }
        }
    }

    /// 403 when the token may not reach `table`, or may not write and `writing`.
    func checkToken(table: String, writing: Bool) throws(APIError) {
        guard let token else { return }
        if let tables = token.tables, !tables.contains(table.lowercased()) {
            throw APIError(
                .forbidden,
                "this token may only reach the tables \(tables.sorted().joined(separator: ", ")), not \(Identifiers.quoted(table))")
        }
        if writing, token.readOnly {
            throw APIError(.forbidden, "this token may only read: it cannot write to \(Identifiers.quoted(table))")
        }
    }
}

/// What a token may do, narrower than its account (`tsync user token --read-only --table T`).
public struct TokenScope: Sendable, Hashable {
    public var readOnly: Bool
    /// Lower-case table names; nil for every table.
    public var tables: Set<String>?

    public init(readOnly: Bool = false, tables: Set<String>? = nil) {
        self.readOnly = readOnly
        self.tables = tables.map { Set($0.map { $0.lowercased() }) }
    }

    /// Nil when the scope is the whole account's.
    public var narrowed: TokenScope? { readOnly || tables != nil ? self : nil }

    /// The stored form: `read-only` and `table:NAME` words, space-separated ("" for the whole account).
    public var stored: String {
        var words: [String] = []
        if readOnly { words.append("read-only") }
        for table in (tables ?? []).sorted() { words.append("table:" + table) }
        return words.joined(separator: " ")
    }

    public init(stored: String) {
        var readOnly = false
        var tables: Set<String>?
        for word in stored.split(separator: " ") {
            if word == "read-only" {
                readOnly = true
            } else if word.hasPrefix("table:") {
                tables = (tables ?? []).union([String(word.dropFirst(6))])
            }
        }
        self.init(readOnly: readOnly, tables: tables)
    }
}

/// Records whose `field` holds (as a JSON string) one of `groups`.
public struct GroupFilter: Sendable, Hashable {
    var field: String
    var groups: Set<String>

    func admits(_ record: Record) -> Bool {
        guard case .string(let value)? = record.fields[field] else { return false }
        return groups.contains(value)
    }

    /// The filter a query is narrowed by: `field eq 'a' or field eq 'b'…`, false for no group.
    var expression: FilterExpression {
        let terms = groups.sorted().map { FilterExpression.binary(.eq, .field(field), .literal(.string($0))) }
        guard var expression = terms.first else { return .literal(.bool(false)) }
        for term in terms.dropFirst() { expression = .binary(.or, expression, term) }
        return expression
    }
}

/// What a caller may read of a table: `scope` (everything, or its own records), narrowed to a
/// group's records when `group` is set.
struct ReadView: Sendable, Hashable {
    var scope: OwnerScope
    var group: GroupFilter?
    /// What a pull of an account gets besides the records it may read now (docs/DESIGN.md §11.1).
    var changes: ViewChanges?
    /// The 403's message of a table the account may no longer read, answered when it is owed
    /// no deletions.
    var refusal: String?

    /// `query` narrowed to the view: the group filter ANDed with the query's own.
    func narrowing(_ query: RecordQuery) -> RecordQuery {
        guard let group else { return query }
        var query = query
        query.filter = query.filter.map { .binary(.and, group.expression, $0) } ?? group.expression
        return query
    }

    func admits(_ record: Record) -> Bool { group?.admits(record) ?? true }

    /// Words that tell two views apart, for the live route's shared pages (`LiveQuestion`).
    var key: [String] {
        var key: [String] = []
        if let group { key += ["$group", group.field] + group.groups.sorted() }
        // The changes are the account's own: its answer is shared with its own reads only.
        if let changes { key += ["$account", changes.account] + changes.roles.sorted().map { "$role:" + $0 } }
        return key
    }
}

/// What a write must pass besides its scope, checked in its transaction against the record it
/// meets (`RecordWrite.step`).
public struct WriteAccess: Sendable {
    public enum Check: Sendable {
        case allowed
        /// Refused whatever the record (a role the caller lacks, `nobody`).
        case denied(String)
        /// Only the record's owner, this account, may.
        case owner(String, String)
        /// The record (and the record after an update or insert) must be in one of the groups.
        case group(GroupFilter, String)
    }

    var check = Check.allowed
    /// A record outside this group is one the caller may not read: 404.
    var readGroup: GroupFilter?
    /// The caller may read no record of the table: every one is 404.
    var unreadable = false

    public init() {}

    func reads(_ record: Record) -> Bool { !unreadable && (readGroup?.admits(record) ?? true) }

    /// The group `current` leaves when stored as `next` under a `group:` read rule: its group,
    /// when it had one and `next` is in another or none. Its members who cannot read `next` get
    /// it as a deletion (`ViewChanges`).
    func exitedGroup(from current: Record, to next: Record) -> String? {
        guard let field = readGroup?.field, case .string(let old)? = current.fields[field] else { return nil }
        if case .string(let new)? = next.fields[field], new == old { return nil }
        return old
    }

    /// The 403 message when the write may not change `current` (nil for an insert) into `next`
    /// (nil for a delete or undelete, which change no field).
    func refusal(current: Record?, owner: String?, next: Record?) -> String? {
        switch check {
        case .allowed: return nil
        case .denied(let message): return message
        case .owner(let account, let message):
            guard current != nil else { return nil }
            return owner == account ? nil : message
        case .group(let group, let message):
            if let current, !group.admits(current) { return message }
            if let next, !group.admits(next) { return message }
            return nil
        }
    }
}
